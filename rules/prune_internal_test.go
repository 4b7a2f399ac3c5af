package rules

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The retention job deletes the rows older than the retention and keeps
// the rest.
func TestPruneWorker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		svc := must(New(db, Options{}))
		now := time.Now().UTC()
		// An execution with one rule row, made at time at.
		execution := func(at time.Time) *writes {
			id := rowID(store.NewIDAt(at), 0)
			return &writes{
				execution: ExecutionRecord{ID: id, TenantID: sc.TenantID, EntityType: "order", EntityID: "o", EventType: "e", Input: "{}",
					ExecutedAt: at, Rules: []RuleRecord{{ID: rowID(id, 0), RuleUUID: store.NewID(), RuleID: "R", RuleName: "R",
						RuleType: Guard, Result: StatusSuccess, Output: "{}"}}},
			}
		}
		old, recent := execution(now.Add(-49*time.Hour)), execution(now.Add(-47*time.Hour))
		g := newLogWriter(db, NewSQLStore())
		if err := db.Tx(ctx, func(tx *store.Tx) error { return g.writeAll(ctx, tx, []*writes{old, recent}) }); err != nil {
			t.Fatal(err)
		}
		w := &pruneWorker{svc: svc, retention: 48 * time.Hour}
		if err := w.Work(ctx, &jobs.Job[PruneLogs]{}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.GetLog(ctx, old.execution.Rules[0].ID); err == nil {
			t.Error("a row older than the retention is still there")
		}
		if _, err := svc.GetLog(ctx, recent.execution.Rules[0].ID); err != nil {
			t.Errorf("a row within the retention is gone: %v", err)
		}
		var executions int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM business_rule_executions WHERE tenant_id = $1`, sc.TenantID).Scan(&executions); err != nil {
			t.Fatal(err)
		}
		if executions != 1 {
			t.Errorf("%d executions left, want 1 (the recent one)", executions)
		}
	}, Migrations)
}
