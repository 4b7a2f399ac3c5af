package rules_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Migration 0011 keeps the log's kept counts written before it (on SQLite
// it moves them into WITHOUT ROWID tables): the totals and the summary
// answer as before, writes after it add to the same rows, and retention
// takes from them.
func TestCountsMigrationKeepsTotals(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, rules.Migrations, "0011")); err != nil {
			t.Fatal(err)
		}
		st := rules.NewSQLStore()
		tenant := store.NewID()
		sc := store.Scope{TenantID: tenant}
		start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
		write := func(from, to int) {
			t.Helper()
			var xs []*rules.ExecutionRecord
			for i := from; i < to; i++ {
				at := start.Add(time.Duration(i) * 20 * time.Minute).Truncate(time.Millisecond)
				x := &rules.ExecutionRecord{ID: store.NewIDAt(at)[:32] + "0000", TenantID: tenant, SetID: "SET_" + fmt.Sprint(i%2),
					EntityType: "order", EntityID: "o", EventType: "ev", Input: `{}`, ExecutedAt: at}
				for r := range 3 {
					result := []rules.Status{rules.StatusSuccess, rules.StatusFailure}[(i+r)%2]
					x.Rules = append(x.Rules, rules.RuleRecord{RuleUUID: "u", RuleID: fmt.Sprint("R", r), RuleName: "R",
						RuleType: rules.Validation, Result: result, Output: "{}"})
				}
				xs = append(xs, x)
			}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, xs) }); err != nil {
				t.Fatal(err)
			}
		}
		write(0, 6) // before the migration: two hours' executions
		at := func(d time.Duration) *time.Time { v := start.Add(d); return &v }
		filters := []rules.LogFilter{{}, {RuleID: "R1"}, {Result: rules.StatusFailure}, {From: at(time.Hour)},
			{From: at(0), To: at(2*time.Hour - time.Nanosecond), RuleID: "R2"}}
		// counted reads each total from the log's rows rather than the
		// kept counts (every execution's entity is "o": a list filtered by
		// entity counts its rows).
		list := func(counted bool) []int {
			t.Helper()
			var out []int
			for _, f := range filters {
				if counted {
					f.EntityID = "o"
				}
				_, total, err := st.ListLogs(ctx, db, sc, f)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, total)
			}
			return out
		}
		summary := func() []int {
			t.Helper()
			sum, err := st.ExecutionSummary(ctx, db, sc, start)
			if err != nil {
				t.Fatal(err)
			}
			var out []int
			for _, s := range sum {
				out = append(out, s.Executions, s.Failures)
			}
			return out
		}
		totals := func() []int { return append(list(false), summary()...) }
		// The lists' totals need the tables of later migrations (0013's
		// totals over rules): before the migration, the summary alone.
		before := summary()
		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		if after := totals(); fmt.Sprint(after) != fmt.Sprint(append(list(true), before...)) {
			t.Errorf("totals after the migration: %v, counted from the log and the summary before: %v %v", after, list(true), before)
		}
		if db.Dialect().Name() == "sqlite" {
			for _, table := range []string{"business_rule_log_counts", "business_rule_execution_counts"} {
				var sql string
				if err := db.QueryRow(ctx, `SELECT sql FROM sqlite_schema WHERE name = $1`, table).Scan(&sql); err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(sql, "WITHOUT ROWID") {
					t.Errorf("%s: %s", table, sql)
				}
			}
		}
		write(6, 9) // after it: a third hour, adding to the rows kept before
		if got := totals(); got[0] != 27 || got[1] != 9 || got[len(got)-4]+got[len(got)-2] != 27 {
			t.Errorf("totals after more writes: %v", got)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			_, err := st.DeleteLogsBefore(ctx, tx, start.Add(time.Hour))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, total, err := st.ListLogs(ctx, db, sc, rules.LogFilter{}); err != nil || total != 18 {
			t.Errorf("after retention: %d rule rows, %v; want 18", total, err)
		}
	})
}
