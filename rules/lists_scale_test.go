package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListLogsAtScale measures the execution log's first page (20 rows)
// with its exact total as a tenant's log grows: unfiltered, filtered by a
// rule's id and filtered by result, on each engine. It is a measurement,
// not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS lists the rule
// row counts to measure at (for example "100000,1000000"); the rows are
// inserted through the Store (multi-row INSERTs of executions of ten
// rules each) into a fresh database, grown from one count to the next
// (PostgreSQL's statistics gathered after each, storetest.Analyze).
// TENANTKIT_BENCH_LIST_CALLS is the number of timed calls per case (200
// when unset). Each line it logs is a row of BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListLogsAtScale -v -timeout 2h
func TestListLogsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListLogs(t, db, engine, sizes, calls) },
		rules.Migrations)
}

func scaleListLogs(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	tenant := store.NewID()
	sc := store.Scope{TenantID: tenant}
	const perExecution = 10
	at := time.Now().UTC().Add(-24 * time.Hour)
	executions := 0
	for _, rows := range sizes {
		start := time.Now()
		batch := make([]*rules.ExecutionRecord, 0, 500)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, batch) }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		for ; executions*perExecution < rows; executions++ {
			i := executions
			when := at.Add(time.Duration(i) * time.Millisecond)
			id := store.NewIDAt(when)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: tenant, EntityType: "order", EntityID: fmt.Sprint("order-", i%100),
				EventType: "beforeUpdate", Input: `{"data":{"total":5}}`, ExecutedAt: when}
			for r := range perExecution {
				result := rules.StatusSuccess
				if (i+r)%7 == 0 {
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
		storetest.Analyze(t, db)
		t.Logf("seeded %d rule rows in %s", executions*perExecution, time.Since(start).Round(time.Second))
		failures := 0
		for i := range executions {
			for r := range perExecution {
				if (i+r)%7 == 0 {
					failures++
				}
			}
		}
		for _, c := range []struct {
			name   string
			filter rules.LogFilter
			total  int
		}{
			{"unfiltered", rules.LogFilter{}, executions * perExecution},
			{"ruleId", rules.LogFilter{RuleID: "RULE_3"}, executions},
			{"result", rules.LogFilter{Result: rules.StatusFailure}, failures},
		} {
			f := c.filter
			f.Limit = 20
			p50, p95 := storetest.Percentiles(t, calls, func() error {
				items, total, err := st.ListLogs(ctx, db, sc, f)
				if err == nil && (len(items) != 20 || total != c.total) {
					err = fmt.Errorf("%s: %d rows of %d, want 20 of %d", c.name, len(items), total, c.total)
				}
				return err
			})
			t.Logf("| rule execution logs, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, executions*perExecution,
				storetest.Milliseconds(p50), storetest.Milliseconds(p95))
		}
	}
}
