//go:build !tenantkit_nosqlite

package rules_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// On SQLite too, a total filtered by rule id reads the counts through
// their index by rule id (migration 0014), not through the primary key,
// which would walk every rule's rows of the span: the plans of the
// statements the totals by rule id run (recorded as they run).
func TestLogTotalsByRulePlanOnSQLite(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, rules.Migrations)
	e := &logTotalsEnv{t: t, db: db, st: rules.NewSQLStore(), sc: store.Scope{TenantID: store.NewID()},
		start: time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour), every: 30 * time.Second}
	e.write(0, 30)
	e.fold()
	rec := &storetest.Recorder{Querier: db}
	from, to := e.start.Add(time.Hour), e.start.Add(3*time.Hour)
	for _, f := range []rules.LogFilter{{RuleID: "R7_1"}, {RuleID: "R7_1", Result: rules.StatusError}, {RuleID: "R20_0", From: &from, To: &to}} {
		if _, _, err := e.st.ListLogs(t.Context(), rec, e.sc, f); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, st := range rec.Reads() {
		if !strings.Contains(st.SQL, "FROM business_rule_log_counts") {
			continue
		}
		checked++
		plan := strings.Join(storetest.SQLitePlan(t, db, st.SQL, st.Args...), "\n")
		if !strings.Contains(plan, "business_rule_log_counts_rule_idx") {
			t.Errorf("plan of\n%s\ndoes not use business_rule_log_counts_rule_idx:\n%s", st.SQL, plan)
		}
	}
	if checked < 3 {
		t.Fatalf("%d statements on the counts recorded, want 3 or more", checked)
	}
}
