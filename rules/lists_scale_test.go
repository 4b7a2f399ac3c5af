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
// with its exact total as a tenant's log grows, unfiltered and with each
// filter the list takes (rule id, result, entity type, entity id, a time
// range) and their combinations, on each engine. It is a measurement,
// not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS lists the rule
// row counts to measure at (for example "100000,1000000"); the rows are
// inserted through the Store (multi-row INSERTs of executions of ten
// rules each, RULE_0…RULE_9, one rule row in seven a FAILURE) into a
// fresh database, grown from one count to the next (PostgreSQL's
// statistics gathered after each, storetest.Analyze). An execution runs
// every 10 seconds (at 1,000,000 rule rows the log spans 11.6 days), on
// an order, or an invoice for one in ten, each entity run 10 times in a
// row. The time ranges are relative to the newest execution: whole days
// (as a date filter gives them), or instants off the hour, whose total
// counts the rows of the partial hours at each end (up to 360
// executions an hour here). TENANTKIT_BENCH_LIST_CALLS is the number of
// timed calls per case (200 when unset). Each line it logs is a row of
// BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListLogsAtScale -v -timeout 2h
func TestListLogsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListLogs(t, db, engine, sizes, calls) },
		rules.Migrations)
}

// scaleExecution is what TestListLogsAtScale writes of execution i.
type scaleExecution struct {
	at                   time.Time
	entityType, entityID string
}

func scaleListLogs(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	tenant := store.NewID()
	sc := store.Scope{TenantID: tenant}
	const perExecution, every = 10, 10 * time.Second
	last := sizes[len(sizes)-1] / perExecution
	first := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Duration(last) * every)
	result := func(i, r int) rules.Status {
		if (i+r)%7 == 0 {
			return rules.StatusFailure
		}
		return rules.StatusSuccess
	}
	execution := func(i int) scaleExecution {
		x := scaleExecution{at: first.Add(time.Duration(i)*every + time.Duration(i%1000)*time.Millisecond), entityType: "order"}
		if i%10 == 4 {
			x.entityType = "invoice"
		}
		x.entityID = fmt.Sprint(x.entityType, "-", i/100, "-", i%10)
		return x
	}
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
			e := execution(i)
			id := store.NewIDAt(e.at)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: tenant, EntityType: e.entityType, EntityID: e.entityID,
				EventType: "beforeUpdate", Input: `{"data":{"total":5}}`, ExecutedAt: e.at}
			for r := range perExecution {
				x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:32] + fmt.Sprintf("%04x", r), RuleUUID: "r",
					RuleID: fmt.Sprint("RULE_", r), RuleName: "R", RuleType: rules.Validation, Result: result(i, r),
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
		newest := execution(executions - 1).at
		day := func(d time.Time) time.Time { return d.Truncate(24 * time.Hour) }
		ptr := func(t time.Time) *time.Time { return &t }
		yesterday, yesterdayEnd := day(newest).Add(-24*time.Hour), day(newest).Add(-time.Nanosecond)
		dayAgo := newest.Add(-24*time.Hour + 17*time.Minute + 3*time.Second)
		windowFrom := newest.Add(-30*time.Hour - 13*time.Minute)
		windowTo := windowFrom.Add(6*time.Hour + 29*time.Minute)
		recentEntity := execution(executions - 25).entityID
		// want counts the rule rows f selects, as the list must.
		want := func(f rules.LogFilter) int {
			n := 0
			for i := range executions {
				e := execution(i)
				if f.EntityType != "" && e.entityType != f.EntityType || f.EntityID != "" && e.entityID != f.EntityID ||
					f.From != nil && e.at.Before(*f.From) || f.To != nil && e.at.After(*f.To) {
					continue
				}
				for r := range perExecution {
					if (f.RuleID == "" || f.RuleID == fmt.Sprint("RULE_", r)) && (f.Result == "" || f.Result == result(i, r)) {
						n++
					}
				}
			}
			return n
		}
		for _, c := range []struct {
			name   string
			filter rules.LogFilter
		}{
			{"unfiltered", rules.LogFilter{}},
			{"ruleId", rules.LogFilter{RuleID: "RULE_3"}},
			{"result", rules.LogFilter{Result: rules.StatusFailure}},
			{"ruleId + result", rules.LogFilter{RuleID: "RULE_3", Result: rules.StatusFailure}},
			{"entityType (90%)", rules.LogFilter{EntityType: "order"}},
			{"entityType (10%)", rules.LogFilter{EntityType: "invoice"}},
			{"entityType + ruleId + result", rules.LogFilter{EntityType: "invoice", RuleID: "RULE_3", Result: rules.StatusFailure}},
			{"entityId", rules.LogFilter{EntityID: recentEntity}},
			{"entityType + entityId + result", rules.LogFilter{EntityType: "order", EntityID: recentEntity,
				Result: rules.StatusFailure}},
			{"from, whole day (yesterday on)", rules.LogFilter{From: &yesterday}},
			{"to, whole days (before today)", rules.LogFilter{To: &yesterdayEnd}},
			{"from + to, whole day (yesterday)", rules.LogFilter{From: &yesterday, To: &yesterdayEnd}},
			{"from, an instant (the last 24 h)", rules.LogFilter{From: &dayAgo}},
			{"to, an instant (all but the last 24 h)", rules.LogFilter{To: &dayAgo}},
			{"from + to, instants (6.5 h)", rules.LogFilter{From: &windowFrom, To: &windowTo}},
			{"from + to, instants + ruleId + result", rules.LogFilter{From: &windowFrom, To: &windowTo, RuleID: "RULE_3",
				Result: rules.StatusFailure}},
			{"from, whole day + entityType + result", rules.LogFilter{From: ptr(yesterday), EntityType: "invoice",
				Result: rules.StatusFailure}},
		} {
			f := c.filter
			total := want(f)
			f.Limit = 20
			p50, p95 := storetest.Percentiles(t, calls, func() error {
				items, got, err := st.ListLogs(ctx, db, sc, f)
				if err == nil && (len(items) != min(20, total) || got != total) {
					err = fmt.Errorf("%s: %d rows of %d, want %d of %d", c.name, len(items), got, min(20, total), total)
				}
				return err
			})
			t.Logf("| rule execution logs, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, executions*perExecution,
				storetest.Milliseconds(p50), storetest.Milliseconds(p95))
		}
	}
}

// TestListRulesAtScale measures the rules list's first page (20 rows)
// with its exact total as a tenant's rules grow: unfiltered in each of
// its orders, and by each filter but the search (whose total counts its
// matches), on each engine. Like TestListLogsAtScale it runs only when
// TENANTKIT_BENCH_LIST_ROWS lists the rule counts to measure at; the
// rules are inserted with multi-row INSERTs (the kept counts maintained
// by the table's trigger, as for every write) into a fresh database: one
// in ten on invoices (the others on orders), one in ten disabled, one in
// five of each type, categories "a" to "e", priorities 0 to 999.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListRulesAtScale -v -timeout 2h
func TestListRulesAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListRules(t, db, engine, sizes, calls) },
		rules.Migrations)
}

func scaleListRules(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	tenant := store.NewID()
	sc := store.Scope{TenantID: tenant}
	now := time.Now().UTC().Truncate(time.Microsecond)
	inserts := store.NewBatchInsert("business_rules", "id, tenant_id, rule_id, rule_name, rule_type, rule_category, entity_type, "+
		"event_type, condition_expression, enabled, priority, version, created_at, updated_at", "")
	entityType := func(i int) string {
		if i%10 == 4 {
			return "invoice"
		}
		return "order"
	}
	category := func(i int) string { return string(rune('a' + i%5)) }
	seeded := 0
	for _, rows := range sizes {
		start := time.Now()
		values := make([]any, 0, 1000*inserts.Columns())
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := inserts.InsertValues(ctx, tx, values); return err }); err != nil {
				t.Fatal(err)
			}
			values = values[:0]
		}
		for ; seeded < rows; seeded++ {
			at := now.Add(-time.Duration(rows-seeded) * time.Millisecond)
			values = append(values, store.NewIDAt(at), tenant, fmt.Sprint("RULE_", seeded), fmt.Sprintf("Rule %08x", seeded*2654435761%(1<<32)),
				string(rules.Types[seeded%5]), category(seeded/5), entityType(seeded), "beforeUpdate",
				`{"field":"total","operator":">","value":5}`, seeded%10 != 7, seeded*7919%1000, 1, at,
				at.Add(time.Duration(seeded*7%1000)*time.Second))
			if len(values) == cap(values) {
				flush()
			}
		}
		if len(values) > 0 {
			flush()
		}
		storetest.Analyze(t, db)
		t.Logf("seeded %d rules in %s", seeded, time.Since(start).Round(time.Second))
		yes, no := true, false
		want := func(f rules.RuleFilter) int {
			n := 0
			for i := range seeded {
				if (f.EntityType == "" || f.EntityType == entityType(i)) && (f.Enabled == nil || *f.Enabled == (i%10 != 7)) &&
					(f.RuleType == "" || f.RuleType == rules.Types[i%5]) && (f.RuleCategory == "" || f.RuleCategory == category(i/5)) &&
					(f.RuleID == "" || f.RuleID == fmt.Sprint("RULE_", i)) {
					n++
				}
			}
			return n
		}
		for _, c := range []struct {
			name   string
			filter rules.RuleFilter
		}{
			{"unfiltered (createdAt)", rules.RuleFilter{}},
			{"createdAt desc", rules.RuleFilter{SortField: "createdAt", SortDesc: true}},
			{"ruleName", rules.RuleFilter{SortField: "ruleName"}},
			{"priority desc", rules.RuleFilter{SortField: "priority", SortDesc: true}},
			{"updatedAt desc", rules.RuleFilter{SortField: "updatedAt", SortDesc: true}},
			{"enabled false (10%)", rules.RuleFilter{Enabled: &no}},
			{"entityType (10%)", rules.RuleFilter{EntityType: "invoice"}},
			{"ruleType (20%)", rules.RuleFilter{RuleType: rules.Calculation}},
			{"ruleCategory (20%)", rules.RuleFilter{RuleCategory: "c"}},
			{"eventType + enabled", rules.RuleFilter{EventType: "beforeUpdate", Enabled: &yes}},
			{"entityType + ruleType + enabled", rules.RuleFilter{EntityType: "invoice", RuleType: rules.Assignment, Enabled: &yes}},
			{"entityType (10%), ruleName", rules.RuleFilter{EntityType: "invoice", SortField: "ruleName"}},
			{"ruleId", rules.RuleFilter{RuleID: fmt.Sprint("RULE_", seeded/2)}},
		} {
			f := c.filter
			total := want(f)
			if f.EventType != "" {
				total = want(rules.RuleFilter{Enabled: f.Enabled})
			}
			f.Limit = 20
			p50, p95 := storetest.Percentiles(t, calls, func() error {
				items, got, err := st.ListRules(ctx, db, sc, f)
				if err == nil && (len(items) != min(20, total) || got != total) {
					err = fmt.Errorf("%s: %d rows of %d, want %d of %d", c.name, len(items), got, min(20, total), total)
				}
				return err
			})
			t.Logf("| business rules, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, seeded,
				storetest.Milliseconds(p50), storetest.Milliseconds(p95))
		}
	}
}

// TestListSetsAtScale measures the rule sets list's first page (20 rows)
// with its exact total as a tenant's sets grow: unfiltered and by enabled
// (the disabled 10%), on each engine; a search's total counts its
// matches and is not measured. Like TestListLogsAtScale it runs only when
// TENANTKIT_BENCH_LIST_ROWS lists the set counts to measure at; the sets
// are inserted with multi-row INSERTs (the kept counts maintained by the
// table's trigger) into a fresh database.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListSetsAtScale -v -timeout 2h
func TestListSetsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListSets(t, db, engine, sizes, calls) },
		rules.Migrations)
}

func scaleListSets(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	inserts := store.NewBatchInsert("business_rule_sets", "tenant_id, id, name, enabled, created_at, updated_at", "")
	seeded := 0
	for _, rows := range sizes {
		start := time.Now()
		values := make([]any, 0, 1000*inserts.Columns())
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := inserts.InsertValues(ctx, tx, values); return err }); err != nil {
				t.Fatal(err)
			}
			values = values[:0]
		}
		for ; seeded < rows; seeded++ {
			at := now.Add(-time.Duration(rows-seeded) * time.Millisecond)
			values = append(values, tenant, fmt.Sprintf("SET_%08d", seeded), fmt.Sprint("Set ", seeded), seeded%10 != 7, at, at)
			if len(values) == cap(values) {
				flush()
			}
		}
		if len(values) > 0 {
			flush()
		}
		storetest.Analyze(t, db)
		t.Logf("seeded %d rule sets in %s", seeded, time.Since(start).Round(time.Second))
		yes, no := true, false
		disabled := (seeded + 2) / 10
		for _, c := range []struct {
			name   string
			filter rules.SetFilter
			total  int
		}{
			{"unfiltered", rules.SetFilter{}, seeded},
			{"enabled true", rules.SetFilter{Enabled: &yes}, seeded - disabled},
			{"enabled false (10%)", rules.SetFilter{Enabled: &no}, disabled},
		} {
			f := c.filter
			f.Limit = 20
			p50, p95 := storetest.Percentiles(t, calls, func() error {
				items, total, err := st.ListSets(ctx, db, tenant, f)
				if err == nil && (len(items) != 20 || total != c.total) {
					err = fmt.Errorf("%s: %d rows of %d, want 20 of %d", c.name, len(items), total, c.total)
				}
				return err
			})
			t.Logf("| business rule sets, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, seeded,
				storetest.Milliseconds(p50), storetest.Milliseconds(p95))
		}
	}
}
