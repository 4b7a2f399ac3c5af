package rules_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A rule row whose output is a default one (no actions planned) is stored
// without that output's text, and one without an error or execution time
// without those: the rules column is about a third shorter for a set of
// such rules. Every row reads back exactly as written, through GetLog and
// ListLogs, and so do rows stored in the earlier, full form.
func TestLogRulesColumnCompact(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := rules.NewSQLStore()
		tenant := store.NewID()
		sc := store.Scope{TenantID: tenant}
		const held = `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`
		const notHeld = `{"conditionResult":false,"actionsPlanned":[],"actionsExecuted":[]}`
		const planned = `{"conditionResult":true,"actionsPlanned":[{"type":"SHOW_INFO"}],"actionsExecuted":[]}`
		at := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
		id := store.NewIDAt(at)[:32] + "0000"
		rows := []rules.RuleRecord{
			{RuleUUID: "u0", RuleID: "R0", RuleName: "Zero", RuleType: rules.Validation, Result: rules.StatusSuccess, Output: held},
			{RuleUUID: "u1", RuleID: "R1", RuleName: "One", RuleType: rules.Guard, Result: rules.StatusFailure, Output: notHeld,
				ExecutionTimeMs: 0.25},
			{RuleUUID: "u2", RuleID: "R2", RuleName: "Two", RuleType: rules.Validation, Result: rules.StatusError, Output: notHeld,
				ErrorMessage: "cannot compare"},
			{RuleUUID: "u3", RuleID: "R3", RuleName: "Three", RuleType: rules.Validation, Result: rules.StatusSuccess, Output: planned,
				Input: `{"data":{"total":6}}`},
		}
		x := &rules.ExecutionRecord{ID: id, TenantID: tenant, EntityType: "order", EntityID: "o-1", EventType: "ev",
			Input: `{"data":{"total":5}}`, ExecutedAt: at, Rules: rows}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, []*rules.ExecutionRecord{x}) }); err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := db.QueryRow(ctx, `SELECT rules FROM business_rule_executions WHERE id = $1`, id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(stored, "conditionResult"); n != 1 {
			t.Errorf("the rules column holds %d outputs' text, want only the one with actions: %s", n, stored)
		}
		if strings.Count(stored, "null") != 4 { // R0's input; R1's input and error; R2's input
			t.Errorf("the rules column writes defaults it need not: %s", stored)
		}

		// The same rule rows in the earlier form, every element whole
		// (written here without their kept counts: the lists below filter
		// by entity, whose totals are counted from the log).
		oldAt := at.Add(-time.Minute)
		oldID := store.NewIDAt(oldAt)[:32] + "0000"
		if _, err := db.Exec(ctx, `INSERT INTO business_rule_executions (id, tenant_id, entity_type, entity_id, event_type,
			input_context, executed_at, rules, rule_count, failure_count, rule_results)
			VALUES ($1, $2, 'order', 'o-1', 'ev', $3, $4, $5, 4, 2, '|R0:SUCCESS||R1:FAILURE||R2:ERROR||R3:SUCCESS|')`,
			oldID, tenant, `{"data":{"total":5}}`, oldAt,
			`[["u0","R0","Zero","VALIDATION","SUCCESS",null,"`+strings.ReplaceAll(held, `"`, `\"`)+`",null,0],`+
				`["u1","R1","One","GUARD","FAILURE",null,"`+strings.ReplaceAll(notHeld, `"`, `\"`)+`",null,0.25],`+
				`["u2","R2","Two","VALIDATION","ERROR",null,"`+strings.ReplaceAll(notHeld, `"`, `\"`)+`","cannot compare",0],`+
				`["u3","R3","Three","VALIDATION","SUCCESS","{\"data\":{\"total\":6}}","`+strings.ReplaceAll(planned, `"`, `\"`)+`",null,0]]`,
		); err != nil {
			t.Fatal(err)
		}

		list, total, err := st.ListLogs(ctx, db, sc, rules.LogFilter{EntityID: "o-1", Limit: 20})
		if err != nil || total != 8 || len(list) != 8 {
			t.Fatalf("ListLogs: %d rows of %d, %v", len(list), total, err)
		}
		for _, execution := range []string{id, oldID} {
			for i, r := range rows {
				rowID := execution[:32] + "000" + string(rune('0'+i))
				got, err := st.GetLog(ctx, db, sc, rowID)
				if err != nil {
					t.Fatalf("GetLog %s: %v", rowID, err)
				}
				var listed *rules.LogEntry
				for _, l := range list {
					if l.ID == rowID {
						listed = l
					}
				}
				wantInput := r.Input
				if wantInput == "" {
					wantInput = x.Input
				}
				for what, l := range map[string]*rules.LogEntry{"GetLog": got, "ListLogs": listed} {
					if l == nil {
						t.Fatalf("%s: no row %s", what, rowID)
					}
					if l.RuleUUID != r.RuleUUID || l.RuleID != r.RuleID || l.RuleName != r.RuleName || l.RuleType != r.RuleType ||
						l.Result != r.Result || string(l.OutputContext) != r.Output || string(l.InputContext) != wantInput ||
						l.ErrorMessage != r.ErrorMessage || l.ExecutionTimeMs != r.ExecutionTimeMs {
						t.Errorf("%s %s: %+v (output %s, input %s), want %+v", what, rowID, l, l.OutputContext, l.InputContext, r)
					}
				}
			}
		}
		if _, total, err := st.ListLogs(ctx, db, sc, rules.LogFilter{EntityID: "o-1", Result: rules.StatusFailure, Limit: 20}); err != nil || total != 2 {
			t.Errorf("FAILURE rows: %d, %v", total, err)
		}
	}, rules.Migrations)
}
