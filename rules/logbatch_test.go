package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A batch of executions of several tenants, organizations, entity types,
// days and hours, sharing rules and results, keeps every total exact on
// both engines (InsertExecutions sums the batch's count deltas per key
// before writing them), and so does retention cutting through it.
func TestInsertExecutionsBatchKeepsTotals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := rules.NewSQLStore()
		tenants := []string{store.NewID(), store.NewID()}
		// Two days before the last midnight, 22:30 UTC: the executions
		// span that day's last hours and the next day's first.
		start := time.Now().UTC().Truncate(24 * time.Hour).Add(-2*24*time.Hour + 22*time.Hour + 30*time.Minute)
		var all []*rules.ExecutionRecord
		for i := range 60 {
			all = append(all, mixedExecution(i, start.Add(time.Duration(i)*3*time.Minute), tenants, []string{"", "org-a"}, 4))
		}
		// Batches of 1, 7, 20 and 32 executions, each spanning hours.
		for _, b := range [][2]int{{0, 1}, {1, 8}, {8, 28}, {28, 60}} {
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, all[b[0]:b[1]]) }); err != nil {
				t.Fatal(err)
			}
		}
		at := func(d time.Duration) *time.Time { v := start.Add(d); return &v }
		filters := []rules.LogFilter{{}, {RuleID: "R1"}, {Result: rules.StatusFailure}, {RuleID: "R0", Result: rules.StatusError},
			{EntityType: "invoice"}, {EntityType: "order", RuleID: "R2", Result: rules.StatusSuccess},
			{From: at(90 * time.Minute)}, {To: at(90*time.Minute - time.Nanosecond)}, {From: at(30 * time.Minute), To: at(150 * time.Minute)},
			{From: at(-30 * time.Minute), To: at(5 * time.Hour), Result: rules.StatusFailure}}
		check := func(cut time.Time) {
			t.Helper()
			for _, tenant := range tenants {
				sc := store.Scope{TenantID: tenant}
				for _, f := range filters {
					want := ruleRowsSelected(all, sc, f, cut)
					f.Limit = 1
					_, total, err := st.ListLogs(ctx, db, sc, f)
					if err != nil || total != want {
						t.Errorf("%+v: total %d, want %d (%v)", f, total, want, err)
					}
				}
			}
		}
		check(time.Time{})
		cut := start.Add(100 * time.Minute) // within the second day's first hour
		if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.DeleteLogsBefore(ctx, tx, cut); return err }); err != nil {
			t.Fatal(err)
		}
		check(cut)
	}, rules.Migrations)
}

// mixedExecution is the i-th execution of a log of several tenants,
// organizations, entity types, rules and results, begun at at (to the
// millisecond): of tenants[i%2], of the organization orgs[i/2%len(orgs)]
// ("" for none), of entity type order or invoice by turns of typeRun
// executions, with 1 to 4 rule rows of rules R0 to R2, each SUCCESS,
// FAILURE or ERROR by turns.
func mixedExecution(i int, at time.Time, tenants, orgs []string, typeRun int) *rules.ExecutionRecord {
	at = at.Truncate(time.Millisecond)
	x := &rules.ExecutionRecord{ID: store.NewIDAt(at)[:32] + "0000", TenantID: tenants[i%2], OrganizationID: orgs[i/2%len(orgs)],
		EntityType: []string{"order", "invoice"}[i/typeRun%2], EntityID: fmt.Sprint("e-", i%5), EventType: "ev",
		Input: `{"data":{}}`, ExecutedAt: at}
	for r := range 1 + i%4 {
		result := []rules.Status{rules.StatusSuccess, rules.StatusFailure, rules.StatusError}[(i+r)%3]
		x.Rules = append(x.Rules, rules.RuleRecord{RuleUUID: "u", RuleID: fmt.Sprint("R", r%3), RuleName: "R",
			RuleType: rules.Validation, Result: result, Output: "{}"})
	}
	return x
}

// ruleRowsSelected counts the rule rows of xs that f selects for sc (its
// tenant, the organizations it may read) among the executions begun at
// or after cut: what a log list's total must be.
func ruleRowsSelected(xs []*rules.ExecutionRecord, sc store.Scope, f rules.LogFilter, cut time.Time) int {
	n := 0
	for _, x := range xs {
		if x.TenantID != sc.TenantID || !sc.AllowsOrganization(x.OrganizationID) || x.ExecutedAt.Before(cut) ||
			f.EntityType != "" && x.EntityType != f.EntityType ||
			f.From != nil && x.ExecutedAt.Before(*f.From) || f.To != nil && x.ExecutedAt.After(*f.To) {
			continue
		}
		for _, r := range x.Rules {
			if (f.RuleID == "" || r.RuleID == f.RuleID) && (f.Result == "" || r.Result == f.Result) {
				n++
			}
		}
	}
	return n
}

// Every text of a batch of executions reads back as written on both
// engines, whatever characters it holds: quotes, backslashes, commas,
// braces, "NULL", separators of rule_results, non-ASCII letters, and
// JSON holding escaped control characters (PostgreSQL's write passes the
// batch's columns as array literals and its JSON texts as one text each).
func TestInsertExecutionsKeepsTexts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := rules.NewSQLStore()
		tenant := store.NewID()
		odd := []string{`a"b`, `c\d`, `e,f`, `{g}`, `NULL`, ` h `, `|i:j\`, `é中`, `""`, `\"`}
		at := time.Now().UTC().Truncate(time.Millisecond)
		var xs []*rules.ExecutionRecord
		for i, s := range odd {
			x := &rules.ExecutionRecord{ID: store.NewIDAt(at.Add(time.Duration(i) * time.Millisecond))[:32] + "0000", TenantID: tenant,
				OrganizationID: "org" + s, SetID: "SET" + s, EntityType: "type" + s, EntityID: "entity" + s, EventType: "event" + s,
				Input: fmt.Sprintf(`{"data":{"k":%q,"c":"\u001f\u0001"},"n":%d}`, s, i), ExecutedAt: at.Add(time.Duration(i) * time.Millisecond),
				ExecutedBy: "user" + s}
			for r := range 2 {
				x.Rules = append(x.Rules, rules.RuleRecord{RuleUUID: "uuid" + s, RuleID: fmt.Sprint("rule", s, r), RuleName: "name" + s,
					RuleType: rules.Validation, Result: rules.StatusError, Output: fmt.Sprintf(`{"o":%q}`, s), ErrorMessage: "error" + s,
					Input: map[bool]string{true: fmt.Sprintf(`{"own":%q}`, s)}[r == 1]})
			}
			xs = append(xs, x)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, xs) }); err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			sc := store.Scope{TenantID: tenant, OrganizationID: x.OrganizationID}
			for r, want := range x.Rules {
				got, err := st.GetLog(ctx, db, sc, x.ID[:32]+fmt.Sprintf("%04x", r))
				if err != nil {
					t.Fatalf("%s rule %d: %v", x.EntityID, r, err)
				}
				input := x.Input
				if want.Input != "" {
					input = want.Input
				}
				if got.SetID != x.SetID || got.EntityType != x.EntityType || got.EntityID != x.EntityID || got.EventType != x.EventType ||
					got.RuleUUID != want.RuleUUID || got.RuleID != want.RuleID || got.RuleName != want.RuleName ||
					got.ErrorMessage != want.ErrorMessage || string(got.OutputContext) != want.Output ||
					string(got.InputContext) != input || got.OrganizationID != x.OrganizationID || got.ExecutedBy != x.ExecutedBy {
					t.Errorf("%s rule %d: read back %+v", x.EntityID, r, got)
				}
			}
			_, total, err := st.ListLogs(ctx, db, store.Scope{TenantID: tenant, OrganizationID: x.OrganizationID},
				rules.LogFilter{RuleID: x.Rules[1].RuleID, Result: rules.StatusError, Limit: 1})
			if err != nil || total != 1 {
				t.Errorf("rule id %q: total %d, want 1 (%v)", x.Rules[1].RuleID, total, err)
			}
		}
	}, rules.Migrations)
}
