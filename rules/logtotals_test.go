package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// logTotalsEnv writes executions of many rules for one tenant and reads
// the log's totals, kept and counted.
type logTotalsEnv struct {
	t     *testing.T
	db    *store.DB
	st    *rules.SQLStore
	sc    store.Scope
	start time.Time
	every time.Duration // between two executions
}

// write logs executions from to to (one every e.every from e.start),
// each of 3 rule rows of rules R<rule>… whose ids differ per execution,
// so that the rules executed grow with the log.
func (e *logTotalsEnv) write(from, to int) {
	e.t.Helper()
	var xs []*rules.ExecutionRecord
	for i := from; i < to; i++ {
		at := e.start.Add(time.Duration(i) * e.every).Truncate(time.Millisecond)
		x := &rules.ExecutionRecord{ID: store.NewIDAt(at)[:32] + "0000", TenantID: e.sc.TenantID, SetID: "SET",
			EntityType: []string{"order", "invoice"}[i%2], EntityID: "o", EventType: "ev", Input: `{}`, ExecutedAt: at}
		for r := range 3 {
			result := []rules.Status{rules.StatusSuccess, rules.StatusFailure, rules.StatusError}[(i+r)%3]
			x.Rules = append(x.Rules, rules.RuleRecord{RuleUUID: "u", RuleID: fmt.Sprint("R", i, "_", r), RuleName: "R",
				RuleType: rules.Validation, Result: result, Output: "{}"})
		}
		xs = append(xs, x)
	}
	if err := e.db.Tx(e.t.Context(), func(tx *store.Tx) error { return e.st.InsertExecutions(e.t.Context(), tx, xs) }); err != nil {
		e.t.Fatal(err)
	}
}

// fold moves every pending count into the whole log's, days' and hours'.
func (e *logTotalsEnv) fold() {
	e.t.Helper()
	if err := e.db.Tx(e.t.Context(), func(tx *store.Tx) error {
		return e.st.FoldLogCounts(e.t.Context(), tx, "", time.Now().Add(2*time.Hour))
	}); err != nil {
		e.t.Fatal(err)
	}
}

// filters are the totals checked: none by rule id, which read the
// totals over rules.
func (e *logTotalsEnv) filters() []rules.LogFilter {
	at := func(d time.Duration) *time.Time { v := e.start.Add(d); return &v }
	return []rules.LogFilter{{}, {Result: rules.StatusFailure}, {EntityType: "invoice"},
		{EntityType: "order", Result: rules.StatusError}, {From: at(time.Hour)}, {From: at(0), To: at(3*time.Hour - time.Nanosecond)},
		{To: at(2 * time.Hour)}}
}

// check compares each total with the rule rows counted from the log (a
// list filtered by entity id counts its rows; every execution's is "o").
func (e *logTotalsEnv) check(when string) {
	e.t.Helper()
	for _, f := range e.filters() {
		_, kept, err := e.st.ListLogs(e.t.Context(), e.db, e.sc, f)
		if err != nil {
			e.t.Fatal(err)
		}
		counted := f
		counted.EntityID = "o"
		_, want, err := e.st.ListLogs(e.t.Context(), e.db, e.sc, counted)
		if err != nil {
			e.t.Fatal(err)
		}
		if kept != want {
			e.t.Errorf("%s: total of %+v: %d, counted %d", when, f, kept, want)
		}
	}
	// The table itself: the kept counts of spans 0 to 2 summed over rules.
	var diff int
	if err := e.db.QueryRow(e.t.Context(), `SELECT count(*) FROM (
			SELECT tenant_id, span, bucket, organization_id, entity_type, result, n FROM business_rule_log_totals WHERE n <> 0
			EXCEPT
			SELECT tenant_id, span, bucket, organization_id, entity_type, result, sum(n) FROM business_rule_log_counts
			WHERE span <> 3 GROUP BY tenant_id, span, bucket, organization_id, entity_type, result HAVING sum(n) <> 0) d`).Scan(&diff); err != nil {
		e.t.Fatal(err)
	}
	if diff != 0 {
		e.t.Errorf("%s: %d rows of business_rule_log_totals differ from the kept counts summed over rules", when, diff)
	}
}

// Migration 0013 keeps, by trigger, the log's kept counts summed over
// rules, and a total not filtered by rule id reads them: the totals
// equal the rule rows counted from the log when the migration fills the
// table from counts folded before it, after more writes and a fold, and
// after retention, and the table equals the kept counts summed over
// rules at each step.
func TestLogTotalsOverRules(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		if err := db.Migrate(t.Context(), storetest.MigrationsBefore(t, rules.Migrations, "0013")); err != nil {
			t.Fatal(err)
		}
		e := &logTotalsEnv{t: t, db: db, st: rules.NewSQLStore(), sc: store.Scope{TenantID: store.NewID()},
			start: time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour), every: 20 * time.Minute}
		e.write(0, 6) // two hours' executions, folded before the migration
		e.fold()
		if err := db.Migrate(t.Context(), rules.Migrations); err != nil {
			t.Fatal(err)
		}
		e.check("after the migration")
		e.write(6, 9) // a third hour, pending
		e.check("with pending counts")
		e.fold()
		e.check("after a fold")
		if err := db.Tx(t.Context(), func(tx *store.Tx) error {
			_, err := e.st.DeleteLogsBefore(t.Context(), tx, e.start.Add(70*time.Minute))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e.check("after retention")
	})
}
