package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkListLogs reads the first page (20 rows) of a tenant's execution
// log of 10,000 executions of ten rules each (100,000 rule rows; another
// tenant has as many): unfiltered with its exact total, filtered by a
// rule's id, and filtered by result, through the Store on each engine
// (PostgreSQL when TENANTKIT_TEST_POSTGRES_URL is set).
func BenchmarkListLogs(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchListLogs(b, storetest.SQLite(b, rules.Migrations)) })
	b.Run("postgres", func(b *testing.B) { benchListLogs(b, storetest.Postgres(b, rules.Migrations)) })
}

func benchListLogs(b *testing.B, db *store.DB) {
	ctx := b.Context()
	st := rules.NewSQLStore()
	acme, other := store.NewID(), store.NewID()
	const executions, perExecution = 10_000, 10
	at := time.Now().UTC().Add(-time.Hour)
	for _, tenant := range []string{acme, other} {
		batch := make([]*rules.ExecutionRecord, 0, 100)
		for i := range executions {
			id := store.NewIDAt(at.Add(time.Duration(i) * time.Millisecond))
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: tenant, EntityType: "order", EntityID: fmt.Sprint("order-", i%100),
				EventType: "beforeUpdate", Input: `{"data":{"total":5}}`, ExecutedAt: at.Add(time.Duration(i) * time.Millisecond)}
			for r := range perExecution {
				result := rules.StatusSuccess
				if (i+r)%7 == 0 {
					result = rules.StatusFailure
				}
				x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:32] + fmt.Sprintf("%04x", r), RuleUUID: store.NewID(),
					RuleID: fmt.Sprint("RULE_", r), RuleName: fmt.Sprint("Rule ", r), RuleType: rules.Validation, Result: result,
					Output: `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`, ExecutionTimeMs: 0.01})
			}
			if batch = append(batch, x); len(batch) == cap(batch) {
				if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, batch) }); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	sc := store.Scope{TenantID: acme}
	for _, c := range []struct {
		name   string
		filter rules.LogFilter
		total  int
	}{
		{"all", rules.LogFilter{}, executions * perExecution},
		{"ruleId", rules.LogFilter{RuleID: "RULE_3"}, executions},
		{"result", rules.LogFilter{Result: rules.StatusFailure}, 14_285},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := c.filter
			f.Limit = 20
			for b.Loop() {
				items, total, err := st.ListLogs(ctx, db, sc, f)
				if err != nil || len(items) != 20 || total != c.total {
					b.Fatalf("%d rows of %d, want 20 of %d: %v", len(items), total, c.total, err)
				}
			}
		})
	}
}
