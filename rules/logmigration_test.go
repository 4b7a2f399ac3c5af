package rules_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Migration 0004 moves the rule log rows of the two-table log into their
// executions' rows: every row reads back as before (its id, its own input
// or its execution's, its error), and the totals, the summary and
// retention count them.
func TestLogMigrationKeepsRuleRows(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, rules.Migrations, "0004")); err != nil {
			t.Fatal(err)
		}
		acme, other := store.NewID(), store.NewID()
		at := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
		executionOf := func(tenant, set string, at time.Time) string {
			id := store.NewIDAt(at)
			id = id[:32] + "0000"
			if _, err := db.Exec(ctx, `INSERT INTO business_rule_executions (id, tenant_id, organization_id, set_id, entity_type,
				entity_id, event_type, input_context, executed_at, executed_by) VALUES ($1, $2, NULL, $3, 'order', 'o-1', 'created',
				$4, $5, 'user-1')`, id, tenant, store.NullIfEmpty(set), `{"data":{"total":5}}`, at); err != nil {
				t.Fatal(err)
			}
			return id
		}
		ruleRow := func(tenant, execution string, i int, ruleID string, result rules.Status, input, errorMessage any) string {
			id := execution[:32] + []string{"0000", "0001", "0002"}[i]
			if _, err := db.Exec(ctx, `INSERT INTO business_rule_execution_logs (tenant_id, id, rule_uuid, rule_id, rule_name,
				rule_type, result, input_context, output_context, error_message, execution_time_ms)
				VALUES ($1, $2, $3, $4, $5, 'VALIDATION', $6, $7, $8, $9, 0.25)`, tenant, id, "uuid-"+ruleID, ruleID,
				"Rule \"quoted\" "+ruleID, string(result), input, `{"conditionResult":false}`, errorMessage); err != nil {
				t.Fatal(err)
			}
			return id
		}
		set := store.NewID()
		x := executionOf(acme, set, at)
		first := ruleRow(acme, x, 0, "R1", rules.StatusSuccess, nil, nil)
		second := ruleRow(acme, x, 1, "R2", rules.StatusFailure, `{"data":{"total":6}}`, nil)
		third := ruleRow(acme, x, 2, "R3", rules.StatusError, nil, "cannot compare \u00e9")
		y := executionOf(other, "", at.Add(time.Minute))
		otherRow := ruleRow(other, y, 0, "R1", rules.StatusSuccess, nil, nil)
		executionOf(acme, "", at.Add(2*time.Minute)) // an execution of no rules

		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		st, sc := rules.NewSQLStore(), store.Scope{TenantID: acme}
		want := map[string]struct {
			rule, input, errorMessage string
			result                    rules.Status
		}{
			first:  {"R1", `{"data":{"total":5}}`, "", rules.StatusSuccess},
			second: {"R2", `{"data":{"total":6}}`, "", rules.StatusFailure},
			third:  {"R3", `{"data":{"total":5}}`, "cannot compare \u00e9", rules.StatusError},
		}
		for id, w := range want {
			l, err := st.GetLog(ctx, db, sc, id)
			if err != nil {
				t.Fatalf("GetLog %s: %v", id, err)
			}
			if l.ID != id || l.ExecutionID != x || l.SetID != set || l.RuleID != w.rule || l.RuleUUID != "uuid-"+w.rule ||
				l.RuleName != `Rule "quoted" `+w.rule || l.RuleType != "VALIDATION" || l.Result != w.result ||
				l.ErrorMessage != w.errorMessage || l.ExecutionTimeMs != 0.25 || !l.ExecutedAt.Equal(at) || l.ExecutedBy != "user-1" {
				t.Errorf("row %s after the migration: %+v", id, l)
			}
			sameJSONText(t, "input of "+w.rule, l.InputContext, w.input)
			sameJSONText(t, "output of "+w.rule, l.OutputContext, `{"conditionResult":false}`)
		}
		if _, err := st.GetLog(ctx, db, sc, otherRow); err == nil {
			t.Error("another tenant's row is readable")
		}

		items, total, err := st.ListLogs(ctx, db, sc, rules.LogFilter{Limit: 50})
		if err != nil || total != 3 || len(items) != 3 || items[0].ID != third || items[2].ID != first {
			t.Fatalf("ListLogs: %d rows of %d, %v", len(items), total, err)
		}
		_, total, err = st.ListLogs(ctx, db, sc, rules.LogFilter{Result: rules.StatusFailure, Limit: 50})
		if err != nil || total != 1 {
			t.Errorf("ListLogs of failures: total %d, %v", total, err)
		}
		_, total, err = st.ListLogs(ctx, db, sc, rules.LogFilter{RuleID: "R1", Limit: 50})
		if err != nil || total != 1 {
			t.Errorf("ListLogs of R1: total %d, %v", total, err)
		}
		sums, err := st.ExecutionSummary(ctx, db, sc, at.Add(-time.Minute))
		if err != nil || !reflect.DeepEqual(sums, []rules.SetExecutions{{RuleSetID: set, Executions: 3, Failures: 2}}) {
			t.Errorf("ExecutionSummary: %+v, %v", sums, err)
		}
		var n int64
		err = db.Tx(ctx, func(tx *store.Tx) error {
			n, err = st.DeleteLogsBefore(ctx, tx, time.Now())
			return err
		})
		if err != nil || n != 4 {
			t.Errorf("DeleteLogsBefore: %d rule rows, %v; want 4", n, err)
		}
		_, total, err = st.ListLogs(ctx, db, sc, rules.LogFilter{RuleID: "R1", Limit: 50})
		if err != nil || total != 0 {
			t.Errorf("ListLogs of R1 after retention: total %d, %v", total, err)
		}
	})
}

// sameJSONText fails unless got and want are the same JSON value
// (PostgreSQL's jsonb wrote the old rows' contexts in its own spacing).
func sameJSONText(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: %s: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: %s, want %s", what, got, want)
	}
}

// A rule row's id holds its index in four hex digits: InsertExecutions
// refuses an execution of more rules than that, and writes nothing.
func TestInsertExecutionsRefusesMoreRulesThanIDsHold(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, rules.Migrations)
	ctx, sc := storetest.NewScope(t)
	id := store.NewID()
	x := &rules.ExecutionRecord{ID: id[:32] + "0000", TenantID: sc.TenantID, EntityType: "order", EntityID: "o", EventType: "e",
		Input: "{}", ExecutedAt: time.Now(), Rules: make([]rules.RuleRecord, 1<<16+1)}
	for i := range x.Rules {
		x.Rules[i] = rules.RuleRecord{RuleUUID: "u", RuleID: "R", RuleName: "R", RuleType: rules.Validation, Result: rules.StatusSuccess, Output: "{}"}
	}
	if err := db.Tx(ctx, func(tx *store.Tx) error {
		return rules.NewSQLStore().InsertExecutions(ctx, tx, []*rules.ExecutionRecord{x})
	}); err == nil {
		t.Fatal("an execution of 65,537 rules was written")
	}
	x.Rules = x.Rules[:1<<16]
	if err := db.Tx(ctx, func(tx *store.Tx) error {
		return rules.NewSQLStore().InsertExecutions(ctx, tx, []*rules.ExecutionRecord{x})
	}); err != nil {
		t.Fatalf("an execution of 65,536 rules: %v", err)
	}
	items, total, err := rules.NewSQLStore().ListLogs(ctx, db, sc, rules.LogFilter{Limit: 1})
	if err != nil || total != 1<<16 || items[0].ID != x.ID[:32]+"ffff" {
		t.Fatalf("ListLogs: total %d, %v, %v", total, items, err)
	}
}

// Migration 0006 fills each execution's rule_results as InsertExecutions
// writes it, for rule ids holding the characters it escapes (and LIKE's),
// so the lists filtered by rule id or result find and count them.
func TestLogMigrationFillsRuleResults(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, rules.Migrations, "0006")); err != nil {
			t.Fatal(err)
		}
		before, after := store.NewID(), store.NewID()
		ids := []string{`a|b:c`, `x\y`, `100%_off`, `Mixed`, `mixed`, `a`}
		at := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Millisecond)
		var xs []*rules.ExecutionRecord
		for i := range 4 {
			when := at.Add(time.Duration(i) * 37 * time.Minute)
			id := store.NewIDAt(when)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: before, EntityType: "order", EntityID: "o-1", EventType: "e",
				Input: `{}`, ExecutedAt: when}
			for r, ruleID := range ids[i%2:] {
				result := rules.StatusSuccess
				if (i+r)%3 == 0 {
					result = rules.StatusFailure
				}
				x.Rules = append(x.Rules, rules.RuleRecord{RuleUUID: "u", RuleID: ruleID, RuleName: "n", RuleType: rules.Validation,
					Result: result, Output: `{}`})
			}
			xs = append(xs, x)
			var rows []any
			failures := 0
			for _, r := range x.Rules {
				rows = append(rows, []any{r.RuleUUID, r.RuleID, r.RuleName, r.RuleType, r.Result, nil, r.Output, nil, 0.5})
				if r.Result == rules.StatusFailure {
					failures++
				}
			}
			b, err := json.Marshal(rows)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, `INSERT INTO business_rule_executions (id, tenant_id, entity_type, entity_id, event_type,
				input_context, executed_at, rules, rule_count, failure_count) VALUES ($1, $2, 'order', 'o-1', 'e', '{}', $3, $4, $5, $6)`,
				x.ID, before, when, string(b), len(x.Rules), failures); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		st := rules.NewSQLStore()
		again := make([]*rules.ExecutionRecord, len(xs))
		for i, x := range xs {
			c := *x
			c.TenantID, c.ID = after, store.NewIDAt(x.ExecutedAt)[:32]+"0000"
			again[i] = &c
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, again) }); err != nil {
			t.Fatal(err)
		}
		texts := func(tenant string) []string {
			got, err := store.Many(ctx, db, func(s store.Scanner) (string, error) {
				var r string
				return r, s.Scan(&r)
			}, `SELECT rule_results FROM business_rule_executions WHERE tenant_id = $1 ORDER BY executed_at`, tenant)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if m, w := texts(before), texts(after); !reflect.DeepEqual(m, w) {
			t.Errorf("rule_results filled by the migration %q, written by InsertExecutions %q", m, w)
		}
		from, to := at.Add(10*time.Minute), at.Add(100*time.Minute)
		for _, ruleID := range append(ids, "b", "y") {
			for _, result := range []rules.Status{"", rules.StatusSuccess, rules.StatusFailure} {
				for _, window := range [][2]*time.Time{{nil, nil}, {&from, &to}} {
					want := 0
					for _, x := range xs {
						if window[0] != nil && (x.ExecutedAt.Before(from) || x.ExecutedAt.After(to)) {
							continue
						}
						for _, r := range x.Rules {
							if r.RuleID == ruleID && (result == "" || r.Result == result) {
								want++
							}
						}
					}
					f := rules.LogFilter{RuleID: ruleID, Result: result, From: window[0], To: window[1], Limit: 100}
					items, total, err := st.ListLogs(ctx, db, store.Scope{TenantID: before}, f)
					if err != nil {
						t.Fatal(err)
					}
					if len(items) != want || total != want {
						t.Errorf("rule %q, result %q, window %v: %d rows of %d, want %d", ruleID, result, window[0] != nil, len(items),
							total, want)
					}
				}
			}
		}
	}, storetest.MigrationsBefore(t, rules.Migrations, "0006"))
}

// Migration 0007: on PostgreSQL an execution's rules column, ten rules'
// JSON above the size the server compresses, is compressed with lz4
// (cheaper to write than the default pglz), and reads back whole.
func TestLogRulesCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t, rules.Migrations)
	ctx, sc := storetest.NewScope(t)
	if err := db.Tx(ctx, func(tx *store.Tx) error { // SET LOCAL: the connection's default stays pglz
		_, err := tx.Exec(ctx, `SET LOCAL default_toast_compression = lz4`)
		return err
	}); err != nil {
		t.Skipf("this server has no lz4: %v", err)
	}
	id := store.NewID()
	x := &rules.ExecutionRecord{ID: id[:32] + "0000", TenantID: sc.TenantID, EntityType: "order", EntityID: "o", EventType: "e",
		Input: "{}", ExecutedAt: time.Now(), Rules: make([]rules.RuleRecord, 10)}
	for i := range x.Rules {
		x.Rules[i] = rules.RuleRecord{RuleUUID: store.NewID(), RuleID: "R", RuleName: "Rule", RuleType: rules.Validation,
			Result: rules.StatusSuccess, Output: `{"conditionResult":true,"actionsPlanned":[{"type":"SHOW_INFO","message":"Order checked"}],` +
				`"actionsExecuted":[{"type":"SHOW_INFO","success":true}]}`}
	}
	if err := rules.NewSQLStore().InsertExecutions(ctx, db, []*rules.ExecutionRecord{x}); err != nil {
		t.Fatal(err)
	}
	var method string
	if err := db.QueryRow(ctx, `SELECT COALESCE(pg_column_compression(rules), 'none') FROM business_rule_executions WHERE id = $1`,
		x.ID).Scan(&method); err != nil {
		t.Fatal(err)
	}
	if method != "lz4" {
		t.Errorf("the rules column is compressed with %s, want lz4", method)
	}
	got, err := rules.NewSQLStore().GetLog(ctx, db, sc, x.ID[:32]+"0009")
	if err != nil || got.RuleID != "R" || string(got.OutputContext) != x.Rules[9].Output {
		t.Errorf("the tenth rule row reads back as %+v, %v", got, err)
	}
}

// Migration 0009 makes the log's input_context json on PostgreSQL: an
// execution's input reads back as it was written, byte for byte, on both
// engines (jsonb sorted the keys by length and added spaces), and a row
// written before the migration reads back as the same JSON value.
func TestLogInputReadBackAsWritten(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, rules.Migrations, "0009")); err != nil {
			t.Fatal(err)
		}
		const input = `{"data":{"amount":1,"b":{"zz":true,"a":[1,"x<y"]},"currency":"EUR","é":null},` +
			`"entityId":"o-1","entityType":"order","eventType":"created","user":{"id":"user-1"}}`
		st, sc := rules.NewSQLStore(), store.Scope{TenantID: store.NewID()}
		at := time.Now().UTC().Truncate(time.Microsecond)
		before := store.NewIDAt(at.Add(-time.Minute))[:32] + "0000"
		if _, err := db.Exec(ctx, `INSERT INTO business_rule_executions (id, tenant_id, entity_type, entity_id, event_type,
			input_context, executed_at, rules, rule_count) VALUES ($1, $2, 'order', 'o-1', 'created', $3, $4, $5, 1)`,
			before, sc.TenantID, input, at.Add(-time.Minute),
			`[["uuid-R1","R1","Rule R1","VALIDATION","SUCCESS",null,"{\"conditionResult\":true}",null,0.25]]`); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		id := store.NewIDAt(at)[:32] + "0000"
		if err := st.InsertExecutions(ctx, db, []*rules.ExecutionRecord{{ID: id, TenantID: sc.TenantID, EntityType: "order",
			EntityID: "o-1", EventType: "created", Input: input, ExecutedAt: at,
			Rules: []rules.RuleRecord{{RuleUUID: "uuid-R1", RuleID: "R1", RuleName: "Rule R1", RuleType: rules.Validation,
				Result: rules.StatusSuccess, Output: `{"conditionResult":true}`}}}}); err != nil {
			t.Fatal(err)
		}
		l, err := st.GetLog(ctx, db, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		if string(l.InputContext) != input {
			t.Errorf("input read back as\n%s\nwant it as written\n%s", l.InputContext, input)
		}
		old, err := st.GetLog(ctx, db, sc, before)
		if err != nil {
			t.Fatal(err)
		}
		sameJSONText(t, "input written before the migration", old.InputContext, input)
	})
}
