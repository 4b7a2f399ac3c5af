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
// with its exact total at several sizes of a tenant's log, unfiltered and
// with each filter the list takes (rule id, result, entity type, entity
// id, a time range) and their combinations, on each engine. It is a
// measurement, not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the rule row counts to measure at (for example
// "100000,1000000"). Each size is a tenant of its own in one fresh
// database, its log inserted through the Store (multi-row INSERTs of
// executions of ten rules each, RULE_0…RULE_9, one rule row in seven a
// FAILURE; PostgreSQL's statistics gathered after, storetest.Analyze),
// and each case's timed calls alternate between the sizes, so that every
// size is timed under the same load of a shared machine. An execution
// runs every 10 seconds up to now (at 1,000,000 rule rows the log spans
// 11.6 days), on an order, or an invoice for one in ten, each entity run
// 10 times in a row. The time ranges are relative to the newest
// execution: whole days (as a date filter gives them), or instants off
// the hour, whose total counts the rows of the partial hours at each end
// (up to 360 executions an hour here). TENANTKIT_BENCH_LIST_CALLS is the
// number of timed calls per case and size (200 when unset). Each line it
// logs is a row of BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListLogsAtScale -v -timeout 2h
func TestListLogsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListLogs(t, db, engine, sizes, calls) },
		rules.Migrations)
}

// scaleExecution is what TestListLogsAtScale writes of an execution.
type scaleExecution struct {
	at                   time.Time
	entityType, entityID string
}

// scaleLog is a tenant's log of TestListLogsAtScale.
type scaleLog struct {
	tenant     string
	executions int
	first      time.Time
	every      time.Duration // between executions
}

const scalePerExecution, scaleEvery = 10, 10 * time.Second

func (l scaleLog) execution(i int) scaleExecution {
	x := scaleExecution{at: l.first.Add(time.Duration(i)*l.every + time.Duration(i%1000)*time.Millisecond), entityType: "order"}
	if i%10 == 4 {
		x.entityType = "invoice"
	}
	x.entityID = fmt.Sprint(x.entityType, "-", i/100, "-", i%10)
	return x
}

func scaleResult(i, r int) rules.Status {
	if (i+r)%7 == 0 {
		return rules.StatusFailure
	}
	return rules.StatusSuccess
}

// TestListLogsStayFlat runs TestListLogsAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListLogsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListLogs, rules.Migrations)
}

func scaleListLogs(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Executions every 10 seconds, or, for FlatLists' smaller logs, as
	// far apart as makes the smaller span 50 hours: every time range
	// below (the day before the newest execution's, at most) then holds
	// the same executions in both logs, and only what lies outside it
	// grows, as a range of a log of 100,000 rows and one of 1,000,000
	// does when timed.
	every := scaleEvery
	if storetest.FlatGuarded(db) {
		every = max(every, 50*time.Hour/time.Duration(sizes[0]/scalePerExecution))
	}
	var logs []scaleLog
	for _, rows := range sizes {
		start := time.Now()
		l := scaleLog{tenant: store.NewID(), executions: rows / scalePerExecution, every: every}
		l.first = now.Add(-time.Duration(l.executions) * every)
		batch := make([]*rules.ExecutionRecord, 0, 500)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, batch) }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		for i := range l.executions {
			e := l.execution(i)
			id := store.NewIDAt(e.at)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: l.tenant, EntityType: e.entityType, EntityID: e.entityID,
				EventType: "beforeUpdate", Input: `{"data":{"total":5}}`, ExecutedAt: e.at}
			for r := range scalePerExecution {
				x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:32] + fmt.Sprintf("%04x", r), RuleUUID: "r",
					RuleID: fmt.Sprint("RULE_", r), RuleName: "R", RuleType: rules.Validation, Result: scaleResult(i, r),
					Output: `{}`, ExecutionTimeMs: 0.01})
			}
			if batch = append(batch, x); len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		// The service's log writer folds a tenant's pending counts once a
		// minute, its current hour's too: leaving the last hour's pending
		// reads more pending rows than a served log holds.
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.FoldLogCounts(ctx, tx, l.tenant, now.Truncate(time.Hour)) }); err != nil {
			t.Fatal(err)
		}
		t.Logf("seeded %d rule rows in %s", l.executions*scalePerExecution, time.Since(start).Round(time.Second))
		logs = append(logs, l)
	}
	// The writes and the fold left versions of the kept counts that a
	// live server's autovacuum clears.
	storetest.Vacuum(t, db, "business_rule_log_counts", "business_rule_log_totals")
	storetest.Analyze(t, db)
	// want counts the rule rows f selects in l, as the list must.
	want := func(l scaleLog, f rules.LogFilter) int {
		n := 0
		for i := range l.executions {
			e := l.execution(i)
			if f.EntityType != "" && e.entityType != f.EntityType || f.EntityID != "" && e.entityID != f.EntityID ||
				f.From != nil && e.at.Before(*f.From) || f.To != nil && e.at.After(*f.To) {
				continue
			}
			for r := range scalePerExecution {
				if (f.RuleID == "" || f.RuleID == fmt.Sprint("RULE_", r)) && (f.Result == "" || f.Result == scaleResult(i, r)) {
					n++
				}
			}
		}
		return n
	}
	ptr := func(t time.Time) *time.Time { return &t }
	for _, c := range []struct {
		name   string
		filter func(l scaleLog, newest time.Time) rules.LogFilter
	}{
		{"unfiltered", func(scaleLog, time.Time) rules.LogFilter { return rules.LogFilter{} }},
		{"ruleId", func(scaleLog, time.Time) rules.LogFilter { return rules.LogFilter{RuleID: "RULE_3"} }},
		{"result", func(scaleLog, time.Time) rules.LogFilter { return rules.LogFilter{Result: rules.StatusFailure} }},
		{"ruleId + result", func(scaleLog, time.Time) rules.LogFilter {
			return rules.LogFilter{RuleID: "RULE_3", Result: rules.StatusFailure}
		}},
		{"entityType (90%)", func(scaleLog, time.Time) rules.LogFilter { return rules.LogFilter{EntityType: "order"} }},
		{"entityType (10%)", func(scaleLog, time.Time) rules.LogFilter { return rules.LogFilter{EntityType: "invoice"} }},
		{"entityType + ruleId + result", func(scaleLog, time.Time) rules.LogFilter {
			return rules.LogFilter{EntityType: "invoice", RuleID: "RULE_3", Result: rules.StatusFailure}
		}},
		{"entityId", func(l scaleLog, _ time.Time) rules.LogFilter {
			return rules.LogFilter{EntityID: l.execution(l.executions - 25).entityID}
		}},
		{"entityType + entityId + result", func(l scaleLog, _ time.Time) rules.LogFilter {
			return rules.LogFilter{EntityType: "order", EntityID: l.execution(l.executions - 25).entityID, Result: rules.StatusFailure}
		}},
		{"from, whole day (yesterday on)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{From: ptr(newest.Truncate(24 * time.Hour).Add(-24 * time.Hour))}
		}},
		{"to, whole days (before today)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{To: ptr(newest.Truncate(24 * time.Hour).Add(-time.Nanosecond))}
		}},
		{"from + to, whole day (yesterday)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{From: ptr(newest.Truncate(24 * time.Hour).Add(-24 * time.Hour)),
				To: ptr(newest.Truncate(24 * time.Hour).Add(-time.Nanosecond))}
		}},
		{"from, an instant (the last 24 h)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{From: ptr(newest.Add(-24*time.Hour + 17*time.Minute + 3*time.Second))}
		}},
		{"to, an instant (all but the last 24 h)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{To: ptr(newest.Add(-24*time.Hour + 17*time.Minute + 3*time.Second))}
		}},
		{"from + to, instants (6.5 h)", func(_ scaleLog, newest time.Time) rules.LogFilter {
			from := newest.Add(-20*time.Hour - 13*time.Minute)
			return rules.LogFilter{From: &from, To: ptr(from.Add(6*time.Hour + 29*time.Minute))}
		}},
		{"from + to, instants + ruleId + result", func(_ scaleLog, newest time.Time) rules.LogFilter {
			from := newest.Add(-20*time.Hour - 13*time.Minute)
			return rules.LogFilter{From: &from, To: ptr(from.Add(6*time.Hour + 29*time.Minute)), RuleID: "RULE_3",
				Result: rules.StatusFailure}
		}},
		{"from, whole day + entityType + result", func(_ scaleLog, newest time.Time) rules.LogFilter {
			return rules.LogFilter{From: ptr(newest.Truncate(24 * time.Hour).Add(-24 * time.Hour)), EntityType: "invoice",
				Result: rules.StatusFailure}
		}},
	} {
		var fns []func() error
		for _, l := range logs {
			f := c.filter(l, l.execution(l.executions-1).at)
			total := want(l, f)
			f.Limit = 20
			sc := store.Scope{TenantID: l.tenant}
			fns = append(fns, func() error {
				items, got, err := st.ListLogs(ctx, db, sc, f)
				if err == nil {
					err = storetest.CheckPage(c.name, len(items), got, min(20, total), total)
				}
				return err
			})
		}
		// A time range's page: at these sizes the generic plan reads the
		// range's executions and sorts them; a large log's walks the index
		// newest first (flat in time at 1,000,000 rows).
		if storetest.FlatCheck(t, db, "rule execution logs, "+c.name, sizes, fns, "enable_sort = off") {
			continue
		}
		p50, p95 := storetest.Interleaved(t, calls, fns)
		for i, l := range logs {
			t.Logf("| rule execution logs, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, l.executions*scalePerExecution,
				storetest.Milliseconds(p50[i]), storetest.Milliseconds(p95[i]))
		}
	}
}

// TestListRulesAtScale measures the rules list's first page (20 rows)
// with its exact total at several sizes of a tenant's rules: unfiltered
// in each of its orders, and by each filter but the search (whose total
// counts its matches), on each engine. Like TestListLogsAtScale it runs
// only when TENANTKIT_BENCH_LIST_ROWS lists the rule counts to measure
// at, each size a tenant of its own in one fresh database, the calls of
// each case alternating between the sizes; the rules are inserted with
// multi-row INSERTs (the kept counts maintained by the table's trigger,
// as for every write): one in ten on invoices (the others on orders),
// one in ten disabled, one in five of each type, categories "a" to "e",
// priorities 0 to 999.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListRulesAtScale -v -timeout 2h
func TestListRulesAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListRules(t, db, engine, sizes, calls) },
		rules.Migrations)
}

// TestListRulesStayFlat runs TestListRulesAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListRulesStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListRules, rules.Migrations)
}

func scaleListRules(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
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
	var tenants []string
	for _, rows := range sizes {
		start := time.Now()
		tenant := store.NewID()
		values := make([]any, 0, 1000*inserts.Columns())
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := inserts.InsertValues(ctx, tx, values); return err }); err != nil {
				t.Fatal(err)
			}
			values = values[:0]
		}
		for i := range rows {
			at := now.Add(-time.Duration(rows-i) * time.Millisecond)
			values = append(values, store.NewIDAt(at), tenant, fmt.Sprint("RULE_", i), fmt.Sprintf("Rule %08x", i*2654435761%(1<<32)),
				string(rules.Types[i%5]), category(i/5), entityType(i), "beforeUpdate",
				`{"field":"total","operator":">","value":5}`, i%10 != 7, i*7919%1000, 1, at, at.Add(time.Duration(i*7%1000)*time.Second))
			if len(values) == cap(values) {
				flush()
			}
		}
		if len(values) > 0 {
			flush()
		}
		t.Logf("seeded %d rules in %s", rows, time.Since(start).Round(time.Second))
		tenants = append(tenants, tenant)
	}
	// The kept counts were updated once per rule seeded; a live server's
	// autovacuum clears the versions that leaves.
	storetest.Vacuum(t, db, "business_rule_list_counts")
	storetest.Analyze(t, db)
	yes, no := true, false
	want := func(rows int, f rules.RuleFilter) int {
		n := 0
		for i := range rows {
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
		{"ruleId", rules.RuleFilter{RuleID: "RULE_50000"}},
	} {
		var fns []func() error
		for j, tenant := range tenants {
			f := c.filter
			total := want(sizes[j], f)
			if f.EventType != "" {
				total = want(sizes[j], rules.RuleFilter{Enabled: f.Enabled})
			}
			f.Limit = 20
			sc := store.Scope{TenantID: tenant}
			fns = append(fns, func() error {
				items, got, err := st.ListRules(ctx, db, sc, f)
				if err == nil {
					err = storetest.CheckPage(c.name, len(items), got, min(20, total), total)
				}
				return err
			})
		}
		if storetest.FlatCheck(t, db, "business rules, "+c.name, sizes, fns) {
			continue
		}
		p50, p95 := storetest.Interleaved(t, calls, fns)
		for j := range tenants {
			t.Logf("| business rules, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, sizes[j],
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}

// TestListSetsAtScale measures the rule sets list's first page (20 rows)
// with its exact total at several sizes of a tenant's sets: unfiltered
// and by enabled (the disabled 10%), on each engine; a search's total
// counts its matches and is not measured. Like TestListLogsAtScale it
// runs only when TENANTKIT_BENCH_LIST_ROWS lists the set counts to
// measure at, each size a tenant of its own in one fresh database, the
// calls of each case alternating between the sizes; the sets are
// inserted with multi-row INSERTs (the kept counts maintained by the
// table's trigger).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./rules -run TestListSetsAtScale -v -timeout 2h
func TestListSetsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListSets(t, db, engine, sizes, calls) },
		rules.Migrations)
}

// TestListSetsStayFlat runs TestListSetsAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListSetsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListSets, rules.Migrations)
}

func scaleListSets(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := rules.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	inserts := store.NewBatchInsert("business_rule_sets", "tenant_id, id, name, enabled, created_at, updated_at", "")
	var tenants []string
	for _, rows := range sizes {
		start := time.Now()
		tenant := store.NewID()
		values := make([]any, 0, 1000*inserts.Columns())
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := inserts.InsertValues(ctx, tx, values); return err }); err != nil {
				t.Fatal(err)
			}
			values = values[:0]
		}
		for i := range rows {
			at := now.Add(-time.Duration(rows-i) * time.Millisecond)
			values = append(values, tenant, fmt.Sprintf("SET_%08d", i), fmt.Sprint("Set ", i), i%10 != 7, at, at)
			if len(values) == cap(values) {
				flush()
			}
		}
		if len(values) > 0 {
			flush()
		}
		t.Logf("seeded %d rule sets in %s", rows, time.Since(start).Round(time.Second))
		tenants = append(tenants, tenant)
	}
	storetest.Analyze(t, db)
	yes, no := true, false
	for _, c := range []struct {
		name   string
		filter rules.SetFilter
	}{
		{"unfiltered", rules.SetFilter{}},
		{"enabled true", rules.SetFilter{Enabled: &yes}},
		{"enabled false (10%)", rules.SetFilter{Enabled: &no}},
	} {
		var fns []func() error
		for j, tenant := range tenants {
			disabled := (sizes[j] + 2) / 10
			total := map[*bool]int{nil: sizes[j], &yes: sizes[j] - disabled, &no: disabled}[c.filter.Enabled]
			f := c.filter
			f.Limit = 20
			fns = append(fns, func() error {
				items, got, err := st.ListSets(ctx, db, tenant, f)
				if err == nil {
					err = storetest.CheckPage(c.name, len(items), got, 20, total)
				}
				return err
			})
		}
		if storetest.FlatCheck(t, db, "business rule sets, "+c.name, sizes, fns) {
			continue
		}
		p50, p95 := storetest.Interleaved(t, calls, fns)
		for j := range tenants {
			t.Logf("| business rule sets, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, sizes[j],
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}
