package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExecutionSummaryAtScale measures the execution summary (the
// dashboard widget "business_rules.executions": each rule set's rule
// executions and failures of a window) at several sizes of a tenant's
// execution log, on each engine. It is a measurement, not a test, and
// runs only when TENANTKIT_BENCH_LIST_ROWS lists the execution counts to
// measure at (for example "100000,1000000"). Each size is a tenant of its
// own in one fresh database, its executions (two rule rows each, one in
// five a FAILURE) spread evenly over the last 30 hours (so the widget's
// window holds about 80% of them: the log grows within the window, as in
// a soak), run by two sets, a set deleted since (no row) and no set, in
// turn, inserted through the Store (500 per transaction; PostgreSQL's
// statistics gathered after, storetest.Analyze). The cases, each checked
// against a count of the seeded executions on every call, and timed
// alternately between the sizes:
//
//   - the widget's window, from the start of the hour 24 hours ago;
//   - exactly the last 24 hours (the executions of the first, partial
//     hour counted from the log);
//   - the statement the store ran before the counts by set and hour
//     (every execution of the window read), for comparison (20 calls at
//     most).
//
// TENANTKIT_BENCH_LIST_CALLS is the number of timed calls per case and
// size (200 when unset). Each line it logs is a row of BENCHMARKS.md's
// tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestExecutionSummaryAtScale -v -timeout 2h
func TestExecutionSummaryAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleExecutionSummary(t, db, engine, sizes, calls) },
		rules.Migrations)
}

// summarySpan is how far back TestExecutionSummaryAtScale's executions go.
const summarySpan = 30 * time.Hour

// summarySets are the sets of TestExecutionSummaryAtScale's executions, in
// turn: two live sets, one deleted since and none.
var summarySets = []string{"ORDERS", "INVOICES", "GONE", ""}

// scaleSummary is a tenant's log of TestExecutionSummaryAtScale.
type scaleSummary struct {
	tenant string
	at     []time.Time // each execution's time
}

// summaryFailure reports whether the r-th rule row of the i-th execution
// is a FAILURE.
func summaryFailure(i, r int) bool { return (2*i+r)%5 == 0 }

// want is what ExecutionSummary must return for ss from since.
func (ss scaleSummary) want(since time.Time) []rules.SetExecutions {
	names := map[string]string{"ORDERS": "Orders", "INVOICES": "Invoices"}
	sums := make([]rules.SetExecutions, len(summarySets))
	for i, id := range summarySets {
		sums[i] = rules.SetExecutions{RuleSetID: id, Name: names[id]}
	}
	for i, at := range ss.at {
		if at.Before(since) {
			continue
		}
		s := &sums[i%len(summarySets)]
		for r := range 2 {
			s.Executions++
			if summaryFailure(i, r) {
				s.Failures++
			}
		}
	}
	var out []rules.SetExecutions
	for _, s := range sums {
		if s.Executions > 0 {
			out = append(out, s)
		}
	}
	sortSummary(out)
	return out
}

// summaryBefore is the statement ExecutionSummary ran before the counts
// by set and hour: every execution of the window read.
const summaryBefore = `SELECT COALESCE(x.set_id, ''), COALESCE(s.name, ''), sum(x.rule_count), sum(x.failure_count)
		FROM business_rule_executions x
		LEFT JOIN business_rule_sets s ON s.tenant_id = x.tenant_id AND s.id = x.set_id
		WHERE x.tenant_id = $1 AND x.id >= $2 AND x.executed_at >= $3 GROUP BY x.set_id, s.name HAVING sum(x.rule_count) > 0`

func scaleExecutionSummary(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Millisecond)
	var logs []scaleSummary
	for _, rows := range sizes {
		start := time.Now()
		ss := scaleSummary{tenant: store.NewID()}
		for _, s := range []*rules.RuleSet{{ID: "ORDERS", Name: "Orders", Enabled: true}, {ID: "INVOICES", Name: "Invoices", Enabled: true}} {
			if err := st.InsertSet(ctx, db, ss.tenant, s); err != nil {
				t.Fatal(err)
			}
		}
		batch := make([]*rules.ExecutionRecord, 0, 500)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, batch) }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		step := summarySpan / time.Duration(rows)
		for i := range rows {
			at := now.Add(-step * time.Duration(rows-i)).Truncate(time.Millisecond)
			ss.at = append(ss.at, at)
			id := store.NewIDAt(at)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: ss.tenant, SetID: summarySets[i%len(summarySets)], EntityType: "order",
				EntityID: fmt.Sprint("order-", i%1000), EventType: "beforeUpdate", Input: `{"data":{"total":5}}`, ExecutedAt: at}
			for r := range 2 {
				result := rules.StatusSuccess
				if summaryFailure(i, r) {
					result = rules.StatusFailure
				}
				x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:32] + fmt.Sprintf("%04x", r), RuleUUID: "r",
					RuleID: fmt.Sprint("RULE_", r), RuleName: "R", RuleType: rules.Validation, Result: result,
					Output: `{}`, ExecutionTimeMs: 0.01})
			}
			if batch = append(batch, x); len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		t.Logf("seeded %d executions in %s", rows, time.Since(start).Round(time.Second))
		logs = append(logs, ss)
	}
	storetest.Analyze(t, db)
	widget := now.Add(-24 * time.Hour).Truncate(time.Hour) // the dashboards' window
	cases := []struct {
		name   string
		since  time.Time
		before bool // the statement of before the counts by set and hour
	}{
		{"widget window", widget, false},
		{"exactly 24 hours", now.Add(-24 * time.Hour), false},
		{"widget window, the statement before", widget, true},
	}
	for _, c := range cases {
		var fns []func() error
		for _, ss := range logs {
			want := fmt.Sprint(ss.want(c.since)) // counted before the timed calls
			fns = append(fns, func() error {
				var got []rules.SetExecutions
				var err error
				if c.before {
					got, err = store.Many(ctx, db, func(s store.Scanner) (rules.SetExecutions, error) {
						var e rules.SetExecutions
						return e, s.Scan(&e.RuleSetID, &e.Name, &e.Executions, &e.Failures)
					}, summaryBefore, ss.tenant, store.IDTimeBound(c.since.Add(-time.Second)), c.since)
					sortSummary(got)
				} else {
					got, err = st.ExecutionSummary(ctx, db, store.Scope{TenantID: ss.tenant}, c.since)
				}
				if err != nil {
					return err
				}
				if fmt.Sprint(got) != want {
					return fmt.Errorf("%s: got %v, want %v", c.name, got, want)
				}
				return nil
			})
		}
		n := calls
		if c.before {
			n = min(n, 20) // the log's window read on each call
		}
		p50, p95 := storetest.Interleaved(t, n, fns)
		for j, ss := range logs {
			t.Logf("| rule executions, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, len(ss.at),
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}

// sortSummary orders sums as ExecutionSummary does.
func sortSummary(sums []rules.SetExecutions) {
	for i := 1; i < len(sums); i++ {
		for j := i; j > 0 && summaryLess(sums[j], sums[j-1]); j-- {
			sums[j], sums[j-1] = sums[j-1], sums[j]
		}
	}
}

func summaryLess(a, b rules.SetExecutions) bool {
	if a.Executions != b.Executions {
		return a.Executions > b.Executions
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.RuleSetID < b.RuleSetID
}
