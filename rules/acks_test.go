//go:build !tenantkit_nopostgres

package rules_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/ackstest"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExecutionsWithoutVersionReads: on PostgreSQL, a process whose lease
// holds runs logged executions without reading the definitions' version
// counter, and yet a rule changed through another process returns only
// once this one has acknowledged the change, so its next execution runs
// the changed rule, even with its notifications cut off.
func TestExecutionsWithoutVersionReads(t *testing.T) {
	t.Parallel()
	url := storetest.IsolatedPostgresURL(t)
	readsB := &storetest.VersionReads{}
	a := must(rules.New(storetest.PostgresTraced(t, url, nil, rules.Migrations), rules.Options{}))
	b := must(rules.New(storetest.PostgresTraced(t, url, readsB, rules.Migrations), rules.Options{}))
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: store.NewID()})

	yes, priority, version := true, 1, 1
	rule := func(op string) rules.RuleInput {
		return rules.RuleInput{RuleID: "R1", RuleName: "Rule R1", RuleType: rules.Validation, EntityType: "order",
			EventType: "created", ConditionExpression: json.RawMessage(`{"field":"total","operator":"` + op + `","value":100}`),
			SuccessActions: json.RawMessage(`[]`), FailureActions: json.RawMessage(`[]`), Enabled: &yes, Priority: &priority,
			Version: &version}
	}
	r := must(a.CreateRule(ctx, rule(">")))
	must(a.CreateSet(ctx, rules.SetInput{ID: "FLOW", Name: "Flow"}))
	sequence := 1
	must(a.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "R1", Sequence: &sequence}))
	in := rules.Input{EntityType: "order", EntityID: "o-1", EventType: "created", Data: map[string]any{"total": 150.0}}
	execute := func() rules.Status {
		t.Helper()
		res, err := b.ExecuteSet(ctx, "FLOW", in)
		if err != nil {
			t.Fatal(err)
		}
		return res.ExecutedRules[0].Result
	}
	trusted := func() {
		t.Helper()
		ackstest.AwaitTrusted(t, rules.AcksOf(b), "B")
	}
	if got := execute(); got != rules.StatusSuccess {
		t.Fatalf("first execution through B: %s", got)
	}
	trusted()

	const calls = 100
	before := readsB.N.Load()
	for range calls {
		execute()
	}
	// An execution reads nothing; the caches' own check (every 250 ms)
	// and the process's beat (every second) may read a few times
	// meanwhile.
	if n := readsB.N.Load() - before; n > calls/10 {
		t.Errorf("%d logged executions read the version counter %d times, want at most %d", calls, n, calls/10)
	}

	for i, deaf := range []bool{false, true, false} {
		rules.AcksOf(b).Deaf.Store(deaf)
		op, want := []string{"<", ">", "<"}[i], []rules.Status{rules.StatusFailure, rules.StatusSuccess, rules.StatusFailure}[i]
		if _, err := a.UpdateRule(ctx, r.ID, rule(op)); err != nil {
			t.Fatal(err)
		}
		if got := execute(); got != want {
			t.Fatalf("deaf %v: B's execution after the rule changed to %q through A: %s, want %s", deaf, op, got, want)
		}
		trusted()
	}
}
