package rules_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// pendingCountRows counts a tenant's pending log count rows (span 3:
// written by InsertExecutions, not yet folded) of hours starting before
// before.
func pendingCountRows(t *testing.T, db *store.DB, tenant string, before time.Time) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM business_rule_log_counts WHERE tenant_id = $1 AND span = 3 AND bucket < $2`,
		tenant, before.Unix()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The log's totals stay exact through every fold of the pending counts
// (FoldLogCounts): of one tenant up to an hour, of every tenant, again
// with nothing to fold, after a late write into an hour already folded,
// and through retention; for two tenants, executions of two organizations
// and of none, and an organization-limited scope, on both engines. A fold moves exactly the
// pending rows it is asked to: the other tenant's and the later hours'
// stay pending.
func TestFoldLogCountsKeepsTotals(t *testing.T) {
	t.Parallel()
	// A schema of its own: folding every tenant and retention act on the
	// whole database, other tests' logs included.
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := rules.NewSQLStore()
		tenants := []string{store.NewID(), store.NewID()}
		// Two days before the last midnight, 21:10 UTC: the executions
		// span that day's last hours and the next day's first.
		start := time.Now().UTC().Truncate(24 * time.Hour).Add(-2*24*time.Hour + 21*time.Hour + 10*time.Minute)
		var all []*rules.ExecutionRecord
		orgs := []string{"", "org-a", "org-b"}
		execution := func(i int, at time.Time) *rules.ExecutionRecord { return mixedExecution(i, at, tenants, orgs, 6) }
		write := func(xs ...*rules.ExecutionRecord) {
			t.Helper()
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, xs) }); err != nil {
				t.Fatal(err)
			}
			all = append(all, xs...)
		}
		for b := range 6 { // six batches of 12 executions, one every 7 minutes: 8 hours 24 minutes
			var xs []*rules.ExecutionRecord
			for i := 12 * b; i < 12*(b+1); i++ {
				xs = append(xs, execution(i, start.Add(time.Duration(i)*7*time.Minute)))
			}
			write(xs...)
		}
		at := func(d time.Duration) *time.Time { v := start.Add(d); return &v }
		filters := []rules.LogFilter{{}, {RuleID: "R1"}, {Result: rules.StatusFailure}, {RuleID: "R0", Result: rules.StatusError},
			{EntityType: "invoice"}, {From: at(-time.Hour)}, {From: at(110 * time.Minute)}, {To: at(5*time.Hour - time.Nanosecond)},
			{From: at(50 * time.Minute), To: at(7 * time.Hour)}, {From: at(-time.Hour), To: at(30 * time.Hour), Result: rules.StatusSuccess},
			{From: at(3 * time.Hour), To: at(3*time.Hour + 20*time.Minute)}}
		cut := time.Time{}
		check := func(step string) {
			t.Helper()
			for i, tenant := range tenants {
				for _, orgs := range [][]string{nil, {"org-a"}} {
					sc := store.Scope{TenantID: tenant, OrganizationIDs: orgs}
					for _, f := range filters {
						want := ruleRowsSelected(all, sc, f, cut)
						f.Limit = 1
						_, total, err := st.ListLogs(ctx, db, sc, f)
						if err != nil || total != want {
							t.Errorf("%s: tenant %d, organizations %v, %+v: total %d, want %d (%v)", step, i, orgs, f, total, want, err)
						}
					}
				}
			}
		}
		fold := func(tenant string, before time.Time) {
			t.Helper()
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.FoldLogCounts(ctx, tx, tenant, before) }); err != nil {
				t.Fatal(err)
			}
		}
		end := start.Add(24 * time.Hour)
		check("written")
		if pendingCountRows(t, db, tenants[0], end) == 0 {
			t.Fatal("no pending count rows after InsertExecutions")
		}
		// What keeps a batch's write short: it adds to the pending counts
		// alone (a row per rule, result, organization, entity type and
		// hour), not to the whole log's, days' and hours' rows as well.
		var kept int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM business_rule_log_counts WHERE tenant_id IN ($1, $2) AND span <> 3`,
			tenants[0], tenants[1]).Scan(&kept); err != nil || kept != 0 {
			t.Errorf("InsertExecutions wrote %d count rows of the whole log, days or hours (%v), want 0: only pending ones", kept, err)
		}

		mid := start.Truncate(time.Hour).Add(4 * time.Hour)
		otherBefore := pendingCountRows(t, db, tenants[1], end)
		laterBefore := pendingCountRows(t, db, tenants[0], end) - pendingCountRows(t, db, tenants[0], mid)
		fold(tenants[0], mid)
		check("first tenant folded up to the fifth hour")
		if n := pendingCountRows(t, db, tenants[0], mid); n != 0 {
			t.Errorf("pending rows before the fold's hour: %d, want 0", n)
		}
		if n := pendingCountRows(t, db, tenants[0], end) - pendingCountRows(t, db, tenants[0], mid); n != laterBefore || n == 0 {
			t.Errorf("pending rows from the fold's hour on: %d, want %d (not folded)", n, laterBefore)
		}
		if n := pendingCountRows(t, db, tenants[1], end); n != otherBefore {
			t.Errorf("the other tenant's pending rows: %d, want %d", n, otherBefore)
		}

		fold("", end)
		check("every tenant folded")
		fold("", end)
		check("folded again, nothing pending")
		for _, tenant := range tenants {
			if n := pendingCountRows(t, db, tenant, end); n != 0 {
				t.Errorf("pending rows after folding all: %d", n)
			}
		}

		// A late write into folded hours (executions that began in them
		// but committed after the fold) stays pending and counted.
		write(execution(0, start.Add(time.Minute)), execution(3, start.Add(3*time.Hour)))
		check("late write into folded hours")
		fold(tenants[0], mid)
		check("late write folded")

		// Retention with pending counts on both sides of the cut: of a day
		// before the cut's (a late write), of the cut's hour and after it.
		cut = start.Add(3*time.Hour + 5*time.Minute) // inside the fourth hour, the next day's first
		write(execution(1, start.Add(30*time.Minute)), execution(5, start.Add(3*time.Hour+time.Minute)), execution(1, start.Add(4*time.Hour+time.Minute)))
		if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.DeleteLogsBefore(ctx, tx, cut); return err }); err != nil {
			t.Fatal(err)
		}
		check("retention")
	}, rules.Migrations)
}

// A tenant's first logged execution of a minute folds the tenant's
// pending counts of the hours before and of its own (the service's log
// writer does it once its write is committed), and no other tenant's; the
// totals read the same.
func TestExecutionFoldsPendingCounts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		st := rules.NewSQLStore()
		ctx, sc := storetest.NewScope(t)
		other := store.NewID()
		earlier := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
		for i, tenant := range []string{sc.TenantID, other, sc.TenantID} {
			at := earlier.Add(time.Duration(i) * time.Hour).Truncate(time.Millisecond)
			x := &rules.ExecutionRecord{ID: store.NewIDAt(at)[:32] + "0000", TenantID: tenant, EntityType: "order", EntityID: "o",
				EventType: "ev", Input: `{"data":{}}`, ExecutedAt: at,
				Rules: []rules.RuleRecord{{RuleUUID: "u", RuleID: "R0", RuleName: "R", RuleType: rules.Validation,
					Result: rules.StatusSuccess, Output: "{}"}}}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, []*rules.ExecutionRecord{x}) }); err != nil {
				t.Fatal(err)
			}
		}
		createRule(t, svc, ctx, xRule("R0", rules.Validation, condOpen, "", ""))
		hour := time.Now().UTC().Truncate(time.Hour)
		if _, err := svc.Execute(ctx, rules.Input{EntityType: "order", EntityID: "o", Data: map[string]any{"status": "OPEN"}}); err != nil {
			t.Fatal(err)
		}
		// The execution's hour is hour unless the clock turned an hour
		// meanwhile; its fold took its own hour too.
		if n := pendingCountRows(t, db, sc.TenantID, hour.Add(2*time.Hour)); n != 0 {
			t.Errorf("the tenant's pending rows after its first execution of a minute: %d, want 0", n)
		}
		if n := pendingCountRows(t, db, other, hour.Add(time.Hour)); n != 1 {
			t.Errorf("the other tenant's pending rows: %d, want 1", n)
		}
		if _, total, err := st.ListLogs(ctx, db, sc, rules.LogFilter{Limit: 1}); err != nil || total != 3 {
			t.Errorf("total: %d, %v; want 3", total, err)
		}
	}, rules.Migrations)
}

// Folds of the current hour while executions of that hour are written
// at once (as the log writer's once-a-minute folds do, and two processes'
// folds of one tenant): every count ends folded or pending, none lost or
// counted twice, on both engines.
func TestFoldWhileWriting(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := rules.NewSQLStore()
		tenants := []string{store.NewID(), store.NewID()}
		orgs := []string{"", "org-a"}
		hour := time.Now().UTC().Truncate(time.Hour)
		const writers, batches, size = 3, 15, 4
		written := make([][]*rules.ExecutionRecord, writers)
		var wg sync.WaitGroup
		errs := make(chan error, writers+2)
		for w := range writers {
			wg.Go(func() {
				for b := range batches {
					var xs []*rules.ExecutionRecord
					for i := range size {
						n := (w*batches+b)*size + i
						xs = append(xs, mixedExecution(n, hour.Add(time.Duration(n)*time.Second), tenants, orgs, 3))
					}
					if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, xs) }); err != nil {
						errs <- err
						return
					}
					written[w] = append(written[w], xs...)
				}
			})
		}
		done := make(chan struct{})
		var folders sync.WaitGroup
		for range 2 {
			folders.Go(func() {
				for {
					err := db.Tx(ctx, func(tx *store.Tx) error { return st.FoldLogCounts(ctx, tx, tenants[0], hour.Add(time.Hour)) })
					if err != nil {
						errs <- err
						return
					}
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
		}
		wg.Wait()
		close(done)
		folders.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all := slices.Concat(written...)
		if len(all) != writers*batches*size {
			t.Fatalf("%d executions written, want %d", len(all), writers*batches*size)
		}
		check := func(step string) {
			t.Helper()
			for i, tenant := range tenants {
				for _, f := range []rules.LogFilter{{}, {RuleID: "R1"}, {Result: rules.StatusFailure}, {EntityType: "invoice"}} {
					sc := store.Scope{TenantID: tenant}
					want := ruleRowsSelected(all, sc, f, time.Time{})
					f.Limit = 1
					if _, total, err := st.ListLogs(ctx, db, sc, f); err != nil || total != want {
						t.Errorf("%s: tenant %d, %+v: total %d, want %d (%v)", step, i, f, total, want, err)
					}
				}
			}
		}
		check("folded while writing")
		for _, tenant := range tenants {
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.FoldLogCounts(ctx, tx, tenant, hour.Add(time.Hour)) }); err != nil {
				t.Fatal(err)
			}
		}
		check("all folded")
		if n := pendingCountRows(t, db, tenants[0], hour.Add(time.Hour)); n != 0 {
			t.Errorf("pending rows after the last fold: %d", n)
		}
	}, rules.Migrations)
}
