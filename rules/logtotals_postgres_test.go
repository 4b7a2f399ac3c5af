//go:build !tenantkit_nopostgres

package rules_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// foldedRules is a traced database (its own schema) whose log holds 300
// executions of 3 rules each, all different, over 2.5 hours, folded:
// 900 rules' kept counts.
func foldedRules(t *testing.T) (*logTotalsEnv, *store.DB, *storetest.RoundTrips) {
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, rules.Migrations)
	e := &logTotalsEnv{t: t, db: db, st: rules.NewSQLStore(), sc: store.Scope{TenantID: store.NewID()},
		start: time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour), every: 30 * time.Second}
	e.write(0, 300)
	e.fold()
	return e, db, trips
}

// The log's totals not filtered by rule id read the kept counts summed
// over rules (migration 0013), whose rows do not grow with the rules
// executed: with 900 rules' counts folded, the unfiltered total and one
// by result read a few rows of each table. (Summing the kept counts by
// rule, they read the 900 rules' rows: checked.)
func TestLogTotalsReadNoRuleRows(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e, db, trips := foldedRules(t)
	storetest.Vacuum(t, db, "business_rule_log_counts", "business_rule_log_totals")
	for _, f := range []rules.LogFilter{{}, {Result: rules.StatusFailure}} {
		_, total, err := e.st.ListLogs(trips.Mark(t.Context()), db, e.sc, f)
		is.NoErr(err)
		is.True(total > 0)
	}
	// The tables are small enough here that the plan would read them
	// whole: the plan a large table gets, through the primary keys.
	const byKey = "enable_seqscan = off"
	is.True(storetest.CheckRowsRead(t, db, trips, "business_rule_log_totals", "business_rule_log_counts", 10, byKey) > 0)
	is.True(storetest.CheckRowsRead(t, db, trips, "business_rule_log_totals", "business_rule_log_totals", 10, byKey) > 0)
}

// A total filtered by rule id reads that rule's kept counts only, however
// many other rules the log holds: with 900 rules' counts folded, and
// pending counts beside them, a total by rule id (with a result, a time
// range) reads at most a few rows. (By the primary key, led by the span,
// it read every rule's rows of the span: 20 → 86 buffers a call over a
// 30-minute soak that executed 17,000 new rules.)
func TestLogTotalsByRuleReadItsRows(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e, db, trips := foldedRules(t)
	e.write(300, 330) // pending
	storetest.Vacuum(t, db, "business_rule_log_counts")
	from, to := e.start.Add(time.Hour), e.start.Add(3*time.Hour)
	for _, f := range []rules.LogFilter{{RuleID: "R7_1"}, {RuleID: "R7_1", Result: rules.StatusError},
		{RuleID: "R310_2"}, {RuleID: "R200_0", From: &from, To: &to}} {
		_, total, err := e.st.ListLogs(trips.Mark(t.Context()), db, e.sc, f)
		is.NoErr(err)
		is.True(total > 0)
	}
	// The table is small enough here that the plan would read it whole:
	// the plan a large table gets, through its indexes.
	is.True(storetest.CheckPagesRead(t, db, trips, "business_rule_log_counts", "business_rule_log_counts", 8, "enable_seqscan = off") > 0)
}
