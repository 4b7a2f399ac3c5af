package rules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Execution tests: sets (ExecuteSet), discovery (Execute), single rules
// (ExecuteRule), their effects (SET_FIELD, events, webhook jobs), the
// execution log and its redaction, plan caching, concurrency and tenant
// isolation. Side effects are checked in the database itself.

// Conditions used throughout: condOpen holds on openData, condNever holds
// on nothing.
const (
	condOpen  = `{"field":"status","operator":"=","value":"OPEN"}`
	condNever = `{"field":"status","operator":"=","value":"NEVER"}`
	blockAct  = `[{"type":"BLOCK_TRANSITION"}]`
	allowAct  = `[{"type":"ALLOW_TRANSITION"}]`
)

// xRule is a valid rule of type typ with condition cond and the given
// action lists ("" for none).
func xRule(id string, typ rules.Type, cond, success, failure string) rules.RuleInput {
	in := ruleInput(id)
	in.RuleType = typ
	in.ConditionExpression = raw(cond)
	if success != "" {
		in.SuccessActions = raw(success)
	}
	if failure != "" {
		in.FailureActions = raw(failure)
	}
	return in
}

func openData() map[string]any { return map[string]any{"status": "OPEN", "total": 150.0} }

// orderInput is a complete set-execution input for order o-1, beforeCreate.
func orderInput(data map[string]any) rules.Input {
	return rules.Input{EntityType: "order", EntityID: "o-1", EventType: "beforeCreate", Data: data}
}

func execSet(t *testing.T, svc *rules.Service, ctx context.Context, setID string, in rules.Input) *rules.Result {
	t.Helper()
	res, err := svc.ExecuteSet(ctx, setID, in)
	if err != nil {
		t.Fatalf("ExecuteSet(%s): %v", setID, err)
	}
	return res
}

// summary is "RULE=RESULT" per entry, with the reason of skipped ones.
func summary(res *rules.Result) []string {
	out := make([]string, len(res.ExecutedRules))
	for i, e := range res.ExecutedRules {
		s := e.RuleID + "=" + string(e.Result)
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		out[i] = s
	}
	return out
}

func wantSummary(t *testing.T, res *rules.Result, want ...string) {
	t.Helper()
	if got := summary(res); !slices.Equal(got, want) {
		t.Fatalf("executed rules:\n got  %q\n want %q", got, want)
	}
}

func entry(t *testing.T, res *rules.Result, ruleID string) rules.RuleResult {
	t.Helper()
	for _, e := range res.ExecutedRules {
		if e.RuleID == ruleID {
			return e
		}
	}
	t.Fatalf("rule %s not in executed rules %q", ruleID, summary(res))
	return rules.RuleResult{}
}

// countLogs counts the tenant's execution log rows in the database.
func countLogs(t *testing.T, db *store.DB, tenantID string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), "SELECT COALESCE(sum(rule_count), 0) FROM business_rule_executions WHERE tenant_id = $1", tenantID).Scan(&n); err != nil {
		t.Fatalf("count logs: %v", err)
	}
	return n
}

// countEvents counts the tenant's store_events rows, of type typ unless
// typ is empty.
func countEvents(t *testing.T, db *store.DB, tenantID, typ string) int {
	t.Helper()
	var n int
	var err error
	if typ == "" {
		err = db.QueryRow(t.Context(), "SELECT count(*) FROM store_events WHERE tenant_id = $1", tenantID).Scan(&n)
	} else {
		err = db.QueryRow(t.Context(), "SELECT count(*) FROM store_events WHERE tenant_id = $1 AND type = $2", tenantID, typ).Scan(&n)
	}
	if err != nil {
		t.Fatalf("count events: %v", err)
	}
	return n
}

func eventsOf(t *testing.T, db *store.DB, tenantID, typ string) []event {
	t.Helper()
	var out []event
	for _, ev := range events(t, db, tenantID) {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// toJSON round-trips v through JSON into plain maps and slices.
func toJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

// wantJSON compares v, as JSON, with the JSON text want.
func wantJSON(t *testing.T, what string, v any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	if got := toJSON(t, v); !reflect.DeepEqual(got, w) {
		b, _ := json.Marshal(v)
		t.Errorf("%s = %s\n want %s", what, b, want)
	}
}

// corruptCondition stores a condition that no longer parses, as an older
// version of the code could have left it: every run of the rule is ERROR.
func corruptCondition(t *testing.T, db *store.DB, ruleUUID string) {
	t.Helper()
	n, err := db.Exec(t.Context(), `UPDATE business_rules SET condition_expression = $1 WHERE id = $2`,
		`{"field":"status","operator":"NO_SUCH_OPERATOR","value":1}`, ruleUUID)
	if err != nil || n != 1 {
		t.Fatalf("corrupt condition: %d rows, %v", n, err)
	}
}

// ---------------------------------------------------------------------
// ExecuteSet

func TestExecuteSetOrderAndSkips(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		createSet(t, svc, ctx, "ORDERS")

		c := xRule("C_ZERO", rules.Action, condOpen,
			`[{"type":"SHOW_INFO","config":{"message":"Hi {{entityId}}"}},{"type":"LOG","config":{"message":"checked {{data.total}}"}}]`, "")
		createRule(t, svc, ctx, c)
		createRule(t, svc, ctx, xRule("B_SECOND", rules.Validation, condOpen, "", ""))
		createRule(t, svc, ctx, xRule("A_FIRST", rules.Calculation, condOpen, "", ""))
		createRule(t, svc, ctx, xRule("D_MEMBER_OFF", rules.Validation, condOpen, "", ""))
		off := xRule("E_RULE_OFF", rules.Validation, condOpen, "", "")
		off.Enabled = ptr(false)
		createRule(t, svc, ctx, off)
		future := xRule("F_FUTURE", rules.Validation, condOpen, "", "")
		future.EffectiveFrom = ptr("2999-01-01")
		createRule(t, svc, ctx, future)
		past := xRule("G_PAST", rules.Validation, condOpen, "", "")
		past.EffectiveTo = ptr("2000-01-01")
		createRule(t, svc, ctx, past)
		invoice := xRule("H_INVOICE", rules.Validation, condOpen, "", "")
		invoice.EntityType = "invoice"
		createRule(t, svc, ctx, invoice)
		after := xRule("I_AFTER", rules.Validation, condOpen, "", "")
		after.EventType = "afterCreate"
		createRule(t, svc, ctx, after)
		before := xRule("J_BEFORE", rules.Assignment, condOpen, "", "")
		before.EventType = "beforeCreate"
		createRule(t, svc, ctx, before)
		createRule(t, svc, ctx, xRule("K_ANY_EVENT", rules.Validation, condNever, "", `[{"type":"SHOW_ERROR","config":{"message":"not open"}}]`))

		addMember(t, svc, ctx, "ORDERS", "B_SECOND", 10)
		addMember(t, svc, ctx, "ORDERS", "A_FIRST", 10) // same sequence: ruleId decides
		addMember(t, svc, ctx, "ORDERS", "C_ZERO", 0)
		addMember(t, svc, ctx, "ORDERS", "D_MEMBER_OFF", 5)
		if _, err := svc.UpdateMember(ctx, "ORDERS", "D_MEMBER_OFF", rules.MemberPatch{Enabled: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"E_RULE_OFF", "F_FUTURE", "G_PAST", "H_INVOICE", "I_AFTER", "J_BEFORE", "K_ANY_EVENT"} {
			addMember(t, svc, ctx, "ORDERS", id, 20+10*i)
		}
		wantOrder := []string{"C_ZERO", "A_FIRST", "B_SECOND", "E_RULE_OFF", "F_FUTURE", "G_PAST", "H_INVOICE", "I_AFTER", "J_BEFORE", "K_ANY_EVENT"}
		wantSeq := []int{0, 10, 10, 20, 30, 40, 50, 60, 70, 80}

		check := func(t *testing.T, res *rules.Result, dry bool) {
			t.Helper()
			is := is.New(t)
			is.Equal(res.SetID, "ORDERS")
			is.Equal(res.SetName, "Set ORDERS")
			is.True(res.Allowed) // no GUARD
			is.True(res.TotalExecutionTimeMs >= 0)
			wantSummary(t, res,
				"C_ZERO=SUCCESS", "A_FIRST=SUCCESS", "B_SECOND=SUCCESS",
				"E_RULE_OFF=SKIPPED (Rule is disabled)",
				"F_FUTURE=SKIPPED (Rule is not yet effective (starts 2999-01-01T00:00:00Z))",
				"G_PAST=SKIPPED (Rule has expired (ended 2000-01-01T00:00:00Z))",
				"H_INVOICE=SKIPPED ("+entry(t, res, "H_INVOICE").Reason+")",
				"I_AFTER=SKIPPED ("+entry(t, res, "I_AFTER").Reason+")",
				"J_BEFORE=SUCCESS", "K_ANY_EVENT=FAILURE")
			for i, e := range res.ExecutedRules {
				is.Equal(e.RuleID, wantOrder[i])
				if e.Sequence == nil || *e.Sequence != wantSeq[i] {
					t.Errorf("%s sequence = %v, want %d", e.RuleID, e.Sequence, wantSeq[i])
				}
				is.Equal(e.RuleName, "Rule "+e.RuleID)
				if e.Result == rules.StatusSkipped {
					is.Equal(e.LogID, "")
					is.Equal(len(e.ActionsPlanned), 0)
					is.Equal(len(e.ActionsExecuted), 0)
					continue
				}
				is.Equal(e.Reason, "")
				is.True(e.ExecutionTimeMs >= 0)
				is.True(e.ActionsPlanned != nil) // [] rather than null
				is.Equal(e.LogID == "", dry)
				is.Equal(len(e.ActionsExecuted), map[bool]int{true: 0, false: len(e.ActionsPlanned)}[dry])
			}
			if r := entry(t, res, "H_INVOICE").Reason; !strings.Contains(r, "entity type") || !strings.Contains(r, "invoice") {
				t.Errorf("H_INVOICE reason %q does not name the entity type invoice", r)
			}
			if r := entry(t, res, "I_AFTER").Reason; !strings.Contains(r, "event") || !strings.Contains(r, "afterCreate") {
				t.Errorf("I_AFTER reason %q does not name the event afterCreate", r)
			}
			is.Equal(entry(t, res, "C_ZERO").RuleType, rules.Action)
			is.Equal(entry(t, res, "A_FIRST").RuleType, rules.Calculation)
			is.Equal(entry(t, res, "E_RULE_OFF").RuleType, rules.Validation)
			is.True(entry(t, res, "C_ZERO").ConditionResult)
			is.True(!entry(t, res, "K_ANY_EVENT").ConditionResult)
			wantJSON(t, "C_ZERO planned", entry(t, res, "C_ZERO").ActionsPlanned,
				`[{"type":"SHOW_INFO","severity":"info","message":"Hi o-1"},{"type":"LOG","level":"info","message":"checked 150"}]`)
			wantJSON(t, "K_ANY_EVENT planned (failure actions)", entry(t, res, "K_ANY_EVENT").ActionsPlanned,
				`[{"type":"SHOW_ERROR","severity":"error","message":"not open"}]`)
			wantJSON(t, "A_FIRST planned", entry(t, res, "A_FIRST").ActionsPlanned, `[]`)
		}

		t.Run("empty set", func(t *testing.T) {
			createSet(t, svc, ctx, "EMPTY")
			res := execSet(t, svc, ctx, "EMPTY", orderInput(openData()))
			is := is.New(t)
			is.True(res.Allowed)
			b, err := json.Marshal(res)
			is.NoErr(err)
			var m map[string]any
			is.NoErr(json.Unmarshal(b, &m))
			wantJSON(t, "executedRules", m["executedRules"], `[]`)
			is.Equal(m["setId"], "EMPTY")
			is.Equal(countLogs(t, db, sc.TenantID), 0)
		})
		t.Run("dry run", func(t *testing.T) {
			res := execSet(t, svc, ctx, "ORDERS", rules.Input{EntityType: "order", EntityID: "o-1", EventType: "beforeCreate",
				Data: openData(), DryRun: true})
			check(t, res, true)
			if res.LogIDs != nil || res.Data != nil {
				t.Errorf("dry run: logIds %v, data %v, want none", res.LogIDs, res.Data)
			}
			if n := countLogs(t, db, sc.TenantID); n != 0 {
				t.Errorf("dry run wrote %d log rows", n)
			}
		})
		t.Run("executed", func(t *testing.T) {
			is := is.New(t)
			res := execSet(t, svc, ctx, "ORDERS", orderInput(openData()))
			check(t, res, false)
			wantJSON(t, "C_ZERO executed", entry(t, res, "C_ZERO").ActionsExecuted,
				`[{"type":"SHOW_INFO","success":true},{"type":"LOG","success":true}]`)
			// One log row per evaluated rule: C, A, B, J, K.
			is.Equal(len(res.LogIDs), 5)
			is.Equal(countLogs(t, db, sc.TenantID), 5)
			var fromEntries []string
			for _, e := range res.ExecutedRules {
				if e.LogID != "" {
					fromEntries = append(fromEntries, e.LogID)
				}
			}
			is.Equal(fromEntries, res.LogIDs)
			wantJSON(t, "result data", res.Data, `{"status":"OPEN","total":150}`)

			// A skipped entry marshals without the evaluation's fields.
			b, err := json.Marshal(entry(t, res, "E_RULE_OFF"))
			is.NoErr(err)
			wantJSON(t, "skipped entry", json.RawMessage(b),
				`{"ruleId":"E_RULE_OFF","ruleName":"Rule E_RULE_OFF","ruleType":"VALIDATION","sequence":20,"result":"SKIPPED","reason":"Rule is disabled"}`)
		})
	}, rules.Migrations)
}

func TestExecuteSetErrors(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		createRule(t, svc, ctx, ruleInput("R1"))
		createSet(t, svc, ctx, "LIVE")
		addMember(t, svc, ctx, "LIVE", "R1", 1)
		if _, err := svc.CreateSet(ctx, rules.SetInput{ID: "OFF", Name: "Off", Enabled: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		addMember(t, svc, ctx, "OFF", "R1", 1)

		t.Run("unknown set", func(t *testing.T) {
			for _, id := range []string{"NOPE", "live", "A\x00B", ""} {
				_, err := svc.ExecuteSet(ctx, id, orderInput(openData()))
				wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
			}
		})
		t.Run("disabled set", func(t *testing.T) {
			for _, dry := range []bool{true, false} {
				in := orderInput(openData())
				in.DryRun = dry
				_, err := svc.ExecuteSet(ctx, "OFF", in)
				ce := wantCode(t, err, rules.CodeSetDisabled, store.ErrConflict)
				if ce.Message != "Rule set is disabled" {
					t.Errorf("message %q", ce.Message)
				}
			}
		})
		t.Run("required fields", func(t *testing.T) {
			_, err := svc.ExecuteSet(ctx, "LIVE", rules.Input{})
			wantFields(t, err, "entityType", "entityId", "eventType", "data")
			_, err = svc.ExecuteSet(ctx, "LIVE", rules.Input{EntityType: " ", EntityID: "\t", EventType: "  ", Data: map[string]any{}})
			wantFields(t, err, "entityType", "entityId", "eventType")
			in := orderInput(nil)
			_, err = svc.ExecuteSet(ctx, "LIVE", in)
			wantFields(t, err, "data")
			in.DryRun = true
			_, err = svc.ExecuteSet(ctx, "LIVE", in)
			wantFields(t, err, "data")
		})
		t.Run("limits and text", func(t *testing.T) {
			in := orderInput(openData())
			in.EntityID = strings.Repeat("x", 256)
			_, err := svc.ExecuteSet(ctx, "LIVE", in)
			wantFields(t, err, "entityId")
			in.EntityID = strings.Repeat("é", 255) // 255 characters is the limit
			res, err := svc.ExecuteSet(ctx, "LIVE", in)
			is.NoErr(err)
			is.Equal(len(res.LogIDs), 1)
			in = orderInput(openData())
			in.EntityType = "ord\x00er"
			in.EventType = strings.Repeat("e", 51)
			_, err = svc.ExecuteSet(ctx, "LIVE", in)
			wantFields(t, err, "entityType", "eventType")
			in = orderInput(openData())
			in.EntityID = "bad\xffutf8"
			_, err = svc.ExecuteSet(ctx, "LIVE", in)
			wantFields(t, err, "entityId")
		})
		t.Run("no scope", func(t *testing.T) {
			bg := context.Background()
			_, err := svc.ExecuteSet(bg, "LIVE", orderInput(openData()))
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.Execute(bg, orderInput(openData()))
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.ExecuteRule(bg, store.NewID(), orderInput(openData()))
			wantIs(t, err, store.ErrNoScope)
			_, _, err = svc.ListLogs(bg, rules.LogFilter{})
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.GetLog(bg, store.NewID())
			wantIs(t, err, store.ErrNoScope)
		})
		// Nothing above wrote anything but the one successful run.
		is.Equal(countLogs(t, db, sc.TenantID), 1)
	}, rules.Migrations)
}

// TestExecuteGuardTable: one subtest per row of the GUARD table, and the
// other rule types, which never block. Each row runs its rule at sequence
// 10 followed by NEXT (a VALIDATION rule that holds) at 20.
func TestExecuteGuardTable(t *testing.T) {
	t.Parallel()
	type row struct {
		name              string
		typ               rules.Type
		cond              string // condOpen holds, condNever does not
		success, failure  string
		wantResult        rules.Status
		wantAllowed       bool
		wantPlanned       string
		wantConditionHeld bool
	}
	const (
		blockPlan = `{"type":"BLOCK_TRANSITION","allowed":false,"message":"Transition blocked"}`
		allowPlan = `{"type":"ALLOW_TRANSITION","allowed":true,"message":"Transition allowed"}`
	)
	rows := []row{
		{"GUARD cond true + success BLOCK blocks", rules.Guard, condOpen, blockAct, "", rules.StatusFailure, false, "[" + blockPlan + "]", true},
		{"GUARD cond true + success ALLOW passes", rules.Guard, condOpen, allowAct, "", rules.StatusSuccess, true, "[" + allowPlan + "]", true},
		{"GUARD cond false + failure ALLOW passes", rules.Guard, condNever, blockAct, allowAct, rules.StatusSuccess, true, "[" + allowPlan + "]", false},
		{"GUARD cond false + failure BLOCK blocks", rules.Guard, condNever, allowAct,
			`[{"type":"BLOCK_TRANSITION","config":{"message":"Order {{entityId}} is {{data.status}}"}}]`, rules.StatusFailure, false,
			`[{"type":"BLOCK_TRANSITION","allowed":false,"message":"Order o-1 is OPEN"}]`, false},
		{"GUARD cond true + no actions passes", rules.Guard, condOpen, "", "", rules.StatusSuccess, true, `[]`, true},
		{"GUARD cond false + no actions blocks", rules.Guard, condNever, "", "", rules.StatusFailure, false, `[]`, false},
		{"GUARD cond true + ALLOW then BLOCK blocks", rules.Guard, condOpen, `[{"type":"ALLOW_TRANSITION"},{"type":"BLOCK_TRANSITION"}]`, "",
			rules.StatusFailure, false, "[" + allowPlan + "," + blockPlan + "]", true},
		{"GUARD cond true + BLOCK then ALLOW blocks", rules.Guard, condOpen, `[{"type":"BLOCK_TRANSITION"},{"type":"ALLOW_TRANSITION"}]`, "",
			rules.StatusFailure, false, "[" + blockPlan + "," + allowPlan + "]", true},
		{"GUARD cond true + only SHOW_INFO passes", rules.Guard, condOpen, `[{"type":"SHOW_INFO","config":{"message":"fine"}}]`, "",
			rules.StatusSuccess, true, `[{"type":"SHOW_INFO","severity":"info","message":"fine"}]`, true},
		{"GUARD cond false + only SHOW_ERROR blocks", rules.Guard, condNever, "", `[{"type":"SHOW_ERROR","config":{"message":"no"}}]`,
			rules.StatusFailure, false, `[{"type":"SHOW_ERROR","severity":"error","message":"no"}]`, false},
		{"GUARD cond false + success ALLOW only blocks", rules.Guard, condNever, allowAct, "", rules.StatusFailure, false, `[]`, false},
		{"GUARD cond true + failure BLOCK only passes", rules.Guard, condOpen, "", blockAct, rules.StatusSuccess, true, `[]`, true},
	}
	for _, typ := range []rules.Type{rules.Validation, rules.Calculation, rules.Action, rules.Assignment} {
		rows = append(rows,
			row{string(typ) + " cond true + success BLOCK is SUCCESS and allowed", typ, condOpen, blockAct, "", rules.StatusSuccess, true, "[" + blockPlan + "]", true},
			row{string(typ) + " cond false + failure BLOCK is FAILURE and allowed", typ, condNever, "", blockAct, rules.StatusFailure, true, "[" + blockPlan + "]", false},
			row{string(typ) + " cond false + success ALLOW only is FAILURE and allowed", typ, condNever, allowAct, "", rules.StatusFailure, true, `[]`, false},
		)
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				ctx, sc := storetest.NewScope(t)
				createRule(t, svc, ctx, xRule("UNDER_TEST", r.typ, r.cond, r.success, r.failure))
				createRule(t, svc, ctx, xRule("NEXT", rules.Validation, condOpen, "", ""))
				createSet(t, svc, ctx, "TABLE")
				addMember(t, svc, ctx, "TABLE", "UNDER_TEST", 10)
				addMember(t, svc, ctx, "TABLE", "NEXT", 20)
				for _, dry := range []bool{true, false} {
					in := orderInput(openData())
					in.DryRun = dry
					res := execSet(t, svc, ctx, "TABLE", in)
					is.Equal(res.Allowed, r.wantAllowed)
					e := res.ExecutedRules[0]
					is.Equal(e.RuleID, "UNDER_TEST")
					is.Equal(e.Result, r.wantResult)
					is.Equal(e.ConditionResult, r.wantConditionHeld)
					wantJSON(t, "planned", e.ActionsPlanned, r.wantPlanned)
					if r.wantAllowed {
						wantSummary(t, res, "UNDER_TEST="+string(r.wantResult), "NEXT=SUCCESS")
					} else {
						wantSummary(t, res, "UNDER_TEST=FAILURE", "NEXT=SKIPPED (Previous rule blocked execution)")
					}
				}
				// Only evaluated rules are logged (the non-dry run above).
				want := 2
				if !r.wantAllowed {
					want = 1
				}
				is.Equal(countLogs(t, db, sc.TenantID), want)
				logs, total, err := svc.ListLogs(ctx, rules.LogFilter{RuleID: "UNDER_TEST"})
				is.NoErr(err)
				is.Equal(total, 1)
				is.Equal(logs[0].Result, r.wantResult)
			})
		}
	}, rules.Migrations)
}

// TestExecuteBlockSkipsEverythingAfter: after a block, every later member
// is SKIPPED with the blocking reason, whatever it would have been.
func TestExecuteBlockSkipsEverythingAfter(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("FIRST", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"orders.first"}}]`, ""))
		createRule(t, svc, ctx, xRule("GATE", rules.Guard, condNever, "", `[{"type":"SHOW_ERROR","config":{"message":"closed"}}]`))
		createRule(t, svc, ctx, xRule("LATER_EMIT", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"orders.later"}}]`, ""))
		off := xRule("LATER_OFF", rules.Validation, condOpen, "", "")
		off.Enabled = ptr(false)
		createRule(t, svc, ctx, off)
		createRule(t, svc, ctx, xRule("LATER_GUARD", rules.Guard, condOpen, allowAct, ""))
		createSet(t, svc, ctx, "GATED")
		for i, id := range []string{"FIRST", "GATE", "LATER_EMIT", "LATER_OFF", "LATER_GUARD"} {
			addMember(t, svc, ctx, "GATED", id, i)
		}
		res := execSet(t, svc, ctx, "GATED", orderInput(openData()))
		is.True(!res.Allowed)
		wantSummary(t, res, "FIRST=SUCCESS", "GATE=FAILURE",
			"LATER_EMIT=SKIPPED (Previous rule blocked execution)",
			"LATER_OFF=SKIPPED (Previous rule blocked execution)",
			"LATER_GUARD=SKIPPED (Previous rule blocked execution)")
		is.Equal(len(res.LogIDs), 2)
		is.Equal(countLogs(t, db, sc.TenantID), 2)
		// The rule before the block took effect; the skipped one did not.
		is.Equal(countEvents(t, db, sc.TenantID, rules.EventEmitted), 1)
		is.Equal(eventsOf(t, db, sc.TenantID, rules.EventEmitted)[0].Data["event"], "orders.first")
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Effects

func TestExecuteSetField(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("SET", rules.Action, condOpen, `[
			{"type":"SET_FIELD","config":{"field":"status","value":"APPROVED"}},
			{"type":"SET_FIELD","config":{"field":"customer.tier","value":"gold"}},
			{"type":"SET_FIELD","config":{"field":"shipping.address.city","value":"{{data.city}}"}},
			{"type":"SET_FIELD","config":{"field":"approvedTotal","value":"{{data.total}}"}}]`, ""))
		createRule(t, svc, ctx, xRule("SEES_STATUS", rules.Validation, `{"field":"status","operator":"=","value":"APPROVED"}`, "", ""))
		createRule(t, svc, ctx, xRule("SEES_NESTED", rules.Validation, `{"operator":"AND","rules":[
			{"field":"customer.tier","operator":"=","value":"gold"},
			{"field":"shipping.address.city","operator":"=","value":"Kraków"},
			{"field":"customer.name","operator":"=","value":"Ann"}]}`, "", ""))
		createRule(t, svc, ctx, xRule("BAD_PATH", rules.Action, `{"field":"total","operator":">","value":100}`,
			`[{"type":"SET_FIELD","config":{"field":"status.sub","value":1}},{"type":"SHOW_INFO","config":{"message":"still here"}}]`, ""))
		createSet(t, svc, ctx, "FIELDS")
		for i, id := range []string{"SET", "SEES_STATUS", "SEES_NESTED", "BAD_PATH"} {
			addMember(t, svc, ctx, "FIELDS", id, i)
		}
		const original = `{"status":"OPEN","city":"Kraków","total":150,"customer":{"name":"Ann","tier":"silver"},"tags":["a","b"]}`
		fresh := func() map[string]any {
			var m map[string]any
			if err := json.Unmarshal([]byte(original), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}

		t.Run("dry run changes nothing", func(t *testing.T) {
			data := fresh()
			in := orderInput(data)
			in.DryRun = true
			res := execSet(t, svc, ctx, "FIELDS", in)
			wantSummary(t, res, "SET=SUCCESS", "SEES_STATUS=FAILURE", "SEES_NESTED=FAILURE", "BAD_PATH=SUCCESS")
			if res.Data != nil {
				t.Errorf("dry run data = %v, want none", res.Data)
			}
			wantJSON(t, "caller's data", data, original)
			wantJSON(t, "SET planned", entry(t, res, "SET").ActionsPlanned, `[
				{"type":"SET_FIELD","field":"status","value":"APPROVED"},
				{"type":"SET_FIELD","field":"customer.tier","value":"gold"},
				{"type":"SET_FIELD","field":"shipping.address.city","value":"Kraków"},
				{"type":"SET_FIELD","field":"approvedTotal","value":150}]`)
		})
		t.Run("executed", func(t *testing.T) {
			data := fresh()
			customer := data["customer"].(map[string]any)
			res := execSet(t, svc, ctx, "FIELDS", orderInput(data))
			wantSummary(t, res, "SET=SUCCESS", "SEES_STATUS=SUCCESS", "SEES_NESTED=SUCCESS", "BAD_PATH=SUCCESS")
			wantJSON(t, "result data", res.Data, `{"status":"APPROVED","city":"Kraków","total":150,"approvedTotal":150,
				"customer":{"name":"Ann","tier":"gold"},"tags":["a","b"],"shipping":{"address":{"city":"Kraków"}}}`)
			// The caller's map, and the maps inside it, are untouched.
			wantJSON(t, "caller's data", data, original)
			is.Equal(customer["tier"], "silver")
			is.Equal(len(data), 5)
			wantJSON(t, "SET executed", entry(t, res, "SET").ActionsExecuted,
				`[{"type":"SET_FIELD","success":true},{"type":"SET_FIELD","success":true},{"type":"SET_FIELD","success":true},{"type":"SET_FIELD","success":true}]`)
			bad := entry(t, res, "BAD_PATH").ActionsExecuted
			is.Equal(len(bad), 2)
			is.Equal(bad[0].Type, action.SetField)
			is.True(!bad[0].Success)
			is.True(bad[0].Error != "")
			is.Equal(bad[1], rules.ActionResult{Type: action.ShowInfo, Success: true})

			// Each log row's input is the data as its rule saw it.
			seen := map[string]any{}
			for _, id := range res.LogIDs {
				l, err := svc.GetLog(ctx, id)
				is.NoErr(err)
				var in struct {
					Data map[string]any `json:"data"`
				}
				is.NoErr(json.Unmarshal(l.InputContext, &in))
				seen[l.RuleID] = in.Data["status"]
			}
			is.Equal(seen, map[string]any{"SET": "OPEN", "SEES_STATUS": "APPROVED", "SEES_NESTED": "APPROVED", "BAD_PATH": "APPROVED"})

			// A second execution starts again from the caller's data.
			res2 := execSet(t, svc, ctx, "FIELDS", orderInput(data))
			wantJSON(t, "second result data", res2.Data["customer"], `{"name":"Ann","tier":"gold"}`)
			is.Equal(customer["tier"], "silver")
		})
	}, rules.Migrations)
}

func TestExecuteEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("NOTIFY_ARRAY", rules.Action, condOpen, `[{"type":"NOTIFY","config":{
			"recipients":["a@example.com"," b@example.com "],"subject":"Order {{entityId}}","message":"Total {{data.total}}","template":"tpl"}}]`, ""))
		createRule(t, svc, ctx, xRule("NOTIFY_TEXT", rules.Action, condOpen, `[{"type":"NOTIFY","config":{
			"recipients":"c@example.com, d@example.com,","message":"for {{ruleId}}"}}]`, ""))
		createRule(t, svc, ctx, xRule("EMIT", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{
			"eventName":"orders.approved","payload":{"id":"{{entityId}}","total":"{{data.total}}","note":"t={{data.total}}"}}}]`, ""))
		createRule(t, svc, ctx, xRule("EMIT_ALT", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"event":"orders.alt_key"}}]`, ""))
		broken := createRule(t, svc, ctx, xRule("BROKEN", rules.Validation, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"never.sent"}}]`, ""))
		createRule(t, svc, ctx, xRule("AFTER_BROKEN", rules.Validation, condOpen, "", ""))
		corruptCondition(t, db, broken.ID)
		createSet(t, svc, ctx, "EFFECTS")
		for i, id := range []string{"NOTIFY_ARRAY", "NOTIFY_TEXT", "EMIT", "EMIT_ALT", "BROKEN", "AFTER_BROKEN"} {
			addMember(t, svc, ctx, "EFFECTS", id, i)
		}
		before := countEvents(t, db, sc.TenantID, "")

		res := execSet(t, svc, ctx, "EFFECTS", orderInput(openData()))
		wantSummary(t, res, "NOTIFY_ARRAY=SUCCESS", "NOTIFY_TEXT=SUCCESS", "EMIT=SUCCESS", "EMIT_ALT=SUCCESS", "BROKEN=ERROR", "AFTER_BROKEN=SUCCESS")
		is.True(res.Allowed) // a VALIDATION rule in error blocks nothing
		b := entry(t, res, "BROKEN")
		is.True(b.Error != "")
		is.True(!b.ConditionResult)
		wantJSON(t, "BROKEN planned", b.ActionsPlanned, `[]`)
		is.Equal(len(b.ActionsExecuted), 0)
		is.True(b.LogID != "")
		for _, id := range []string{"NOTIFY_ARRAY", "NOTIFY_TEXT", "EMIT"} {
			e := entry(t, res, id)
			is.Equal(len(e.ActionsExecuted), 1)
			is.True(e.ActionsExecuted[0].Success)
		}

		is.Equal(countEvents(t, db, sc.TenantID, "")-before, 5)
		notes := eventsOf(t, db, sc.TenantID, rules.EventNotificationCreated)
		is.Equal(len(notes), 2)
		byRule := map[string]event{}
		for _, ev := range notes {
			byRule[ev.Data["ruleId"].(string)] = ev
			is.Equal(ev.TenantID, sc.TenantID)
			is.Equal(ev.OrganizationID, sc.OrganizationID)
		}
		wantJSON(t, "NOTIFY_ARRAY event", byRule["NOTIFY_ARRAY"].Data, `{"ruleId":"NOTIFY_ARRAY","ruleName":"Rule NOTIFY_ARRAY",
			"entityType":"order","entityId":"o-1","eventType":"beforeCreate","recipients":["a@example.com","b@example.com"],
			"subject":"Order o-1","message":"Total 150","template":"tpl"}`)
		n2 := byRule["NOTIFY_TEXT"].Data
		wantJSON(t, "NOTIFY_TEXT recipients", n2["recipients"], `["c@example.com","d@example.com"]`)
		is.Equal(n2["message"], "for NOTIFY_TEXT")

		emitted := eventsOf(t, db, sc.TenantID, rules.EventEmitted)
		is.Equal(len(emitted), 2)
		is.Equal(emitted[1].Data["event"], "orders.alt_key")
		is.Equal(emitted[1].Data["payload"], nil)
		wantJSON(t, "emitted event", emitted[0].Data, `{"ruleId":"EMIT","ruleName":"Rule EMIT","entityType":"order","entityId":"o-1",
			"eventType":"beforeCreate","event":"orders.approved","payload":{"id":"o-1","total":150,"note":"t=150"}}`)

		failed := eventsOf(t, db, sc.TenantID, rules.EventExecutionFailed)
		is.Equal(len(failed), 1)
		is.Equal(failed[0].Data["ruleId"], "BROKEN")
		is.Equal(failed[0].Data["logId"], b.LogID)
		is.Equal(failed[0].Data["error"], b.Error)
		is.Equal(failed[0].Data["entityId"], "o-1")

		l, err := svc.GetLog(ctx, b.LogID)
		is.NoErr(err)
		is.Equal(l.Result, rules.StatusError)
		is.Equal(l.ErrorMessage, b.Error)
		is.Equal(l.RuleID, "BROKEN")
	}, rules.Migrations)
}

// TestExecuteGuardInError: a GUARD whose condition cannot be evaluated is
// ERROR and, by the implementation's documented decision, lets nothing
// through.
func TestExecuteGuardInError(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		g := createRule(t, svc, ctx, xRule("GUARD_ERR", rules.Guard, condOpen, allowAct, ""))
		createRule(t, svc, ctx, xRule("NEXT", rules.Validation, condOpen, "", ""))
		corruptCondition(t, db, g.ID)
		createSet(t, svc, ctx, "ERR")
		addMember(t, svc, ctx, "ERR", "GUARD_ERR", 1)
		addMember(t, svc, ctx, "ERR", "NEXT", 2)
		res := execSet(t, svc, ctx, "ERR", orderInput(openData()))
		wantSummary(t, res, "GUARD_ERR=ERROR", "NEXT=SKIPPED (Previous rule blocked execution)")
		is.True(!res.Allowed)
		is.Equal(countEvents(t, db, sc.TenantID, rules.EventExecutionFailed), 1)

		// ExecuteRule reports the same ERROR.
		one, err := svc.ExecuteRule(ctx, g.ID, rules.Input{Data: openData(), DryRun: true})
		is.NoErr(err)
		wantSummary(t, one, "GUARD_ERR=ERROR")
		is.Equal(countEvents(t, db, sc.TenantID, rules.EventExecutionFailed), 1) // dry: no new event
	}, rules.Migrations)
}

// TestExecuteNotifyWithoutRecipients: a NOTIFY whose recipients are empty
// when it runs fails (Success false, an Error), without a notification.
func TestExecuteNotifyWithoutRecipients(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Run("stored empty list", func(t *testing.T) {
			is := is.New(t)
			svc := must(rules.New(db, rules.Options{}))
			ctx, sc := storetest.NewScope(t)
			r := createRule(t, svc, ctx, xRule("EMPTY", rules.Action, condOpen, `[{"type":"NOTIFY","config":{"recipients":"x@example.com","message":"m"}}]`, ""))
			// Validation refuses an empty list; one stored by older code may hold it.
			_, err := db.Exec(t.Context(), `UPDATE business_rules SET success_actions = $1 WHERE id = $2`,
				`[{"type":"NOTIFY","config":{"recipients":[],"message":"m"}},{"type":"SHOW_INFO","config":{"message":"after"}}]`, r.ID)
			is.NoErr(err)
			res, err := svc.ExecuteRule(ctx, r.ID, orderInput(openData()))
			is.NoErr(err)
			wantSummary(t, res, "EMPTY=SUCCESS")
			ex := res.ExecutedRules[0].ActionsExecuted
			is.Equal(len(ex), 2)
			is.Equal(ex[0].Type, action.Notify)
			is.True(!ex[0].Success)
			is.True(ex[0].Error != "")
			is.True(ex[1].Success) // one action's failure does not stop the others
			is.Equal(countEvents(t, db, sc.TenantID, rules.EventNotificationCreated), 0)
			is.Equal(countLogs(t, db, sc.TenantID), 1)
		})
		t.Run("recipient placeholder resolving to blank", func(t *testing.T) {
			is := is.New(t)
			svc := must(rules.New(db, rules.Options{}))
			ctx, sc := storetest.NewScope(t)
			r := createRule(t, svc, ctx, xRule("BLANK", rules.Action, condOpen, `[{"type":"NOTIFY","config":{"recipients":"{{data.email}}","message":"m"}}]`, ""))
			data := openData()
			data["email"] = ""
			res, err := svc.ExecuteRule(ctx, r.ID, orderInput(data))
			is.NoErr(err)
			ex := res.ExecutedRules[0].ActionsExecuted
			is.Equal(len(ex), 1)
			if ex[0].Success || ex[0].Error == "" {
				t.Errorf("NOTIFY to blank recipient: %+v, want Success false with an Error", ex[0])
			}
			if n := countEvents(t, db, sc.TenantID, rules.EventNotificationCreated); n != 0 {
				t.Errorf("%d notifications emitted for a blank recipient: %v", n, eventsOf(t, db, sc.TenantID, rules.EventNotificationCreated))
			}
		})
	}, rules.Migrations)
}

// TestExecuteDryRunWritesNothing checks in the database that a dry run
// writes no log rows and no events, whatever its rules call for.
func TestExecuteDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{})) // no job engine: a real CALL_WEBHOOK could not even be queued
		ctx, sc := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("EVERYTHING", rules.Action, condOpen, `[
			{"type":"SET_FIELD","config":{"field":"status","value":"DONE"}},
			{"type":"NOTIFY","config":{"recipients":["a@example.com"],"message":"m"}},
			{"type":"EMIT_EVENT","config":{"eventName":"orders.done","payload":{"id":"{{entityId}}"}}},
			{"type":"CALL_WEBHOOK","config":{"url":"https://example.com/hook","body":{"id":"{{entityId}}"}}},
			{"type":"LOG","config":{"message":"logged"}}]`, ""))
		broken := createRule(t, svc, ctx, xRule("BROKEN", rules.Validation, condOpen, "", ""))
		corruptCondition(t, db, broken.ID)
		createRule(t, svc, ctx, xRule("GATE", rules.Guard, condNever, "", ""))
		createSet(t, svc, ctx, "DRY")
		addMember(t, svc, ctx, "DRY", "EVERYTHING", 1)
		addMember(t, svc, ctx, "DRY", "BROKEN", 2)
		addMember(t, svc, ctx, "DRY", "GATE", 3)
		eventsBefore := countEvents(t, db, sc.TenantID, "")

		data := openData()
		for range 3 {
			in := orderInput(data)
			in.DryRun = true
			res := execSet(t, svc, ctx, "DRY", in)
			wantSummary(t, res, "EVERYTHING=SUCCESS", "BROKEN=ERROR", "GATE=FAILURE")
			is.True(!res.Allowed)
			is.Equal(res.LogIDs, nil)
			is.Equal(res.Data, nil)
			for _, e := range res.ExecutedRules {
				is.Equal(e.LogID, "")
				is.Equal(e.ActionsExecuted, nil)
			}
			is.Equal(len(entry(t, res, "EVERYTHING").ActionsPlanned), 5)
			wantJSON(t, "planned webhook", entry(t, res, "EVERYTHING").ActionsPlanned[3],
				`{"type":"CALL_WEBHOOK","url":"https://example.com/hook","method":"POST","headers":{},"body":{"id":"o-1"}}`)
			if _, err := svc.Execute(ctx, rules.Input{EntityType: "order", Data: data, DryRun: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.ExecuteRule(ctx, broken.ID, rules.Input{Data: data, DryRun: true}); err != nil {
				t.Fatal(err)
			}
		}
		wantJSON(t, "caller's data", data, `{"status":"OPEN","total":150}`)
		is.Equal(countLogs(t, db, sc.TenantID), 0)
		is.Equal(countEvents(t, db, sc.TenantID, ""), eventsBefore)

		// Without DryRun the CALL_WEBHOOK needs a job engine: the execution
		// fails as a whole and leaves nothing behind.
		_, err := svc.ExecuteSet(ctx, "DRY", orderInput(data))
		is.True(err != nil)
		is.Equal(countLogs(t, db, sc.TenantID), 0)
		is.Equal(countEvents(t, db, sc.TenantID, ""), eventsBefore)
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// CALL_WEBHOOK through the job engine

type hookRequest struct {
	method, path, userAgent, contentType, ruleHeader string
	body                                             []byte
}

// hookReceiver is a loopback HTTP server recording what it receives.
func hookReceiver(t *testing.T) (*httptest.Server, chan hookRequest) {
	t.Helper()
	got := make(chan hookRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- hookRequest{r.Method, r.URL.Path, r.UserAgent(), r.Header.Get("Content-Type"), r.Header.Get("X-Rule"), b}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// startEngine creates a job engine with the rules workers and starts it;
// it is stopped when the test ends (before the receiver closes).
func startEngine(t *testing.T, db *store.DB, svc *rules.Service) *jobs.Engine {
	t.Helper()
	e, err := jobs.New(t.Context(), db, jobs.Config{})
	if err != nil {
		t.Fatalf("jobs.New: %v", err)
	}
	if err := svc.RegisterJobs(e); err != nil {
		t.Fatalf("RegisterJobs: %v", err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("engine stop: %v", err)
		}
	})
	return e
}

// webhookJobs lists the ids of the stored CALL_WEBHOOK jobs.
func webhookJobs(t *testing.T, db *store.DB) []int64 {
	t.Helper()
	table := "river_job"
	if db.Dialect().Name() == "postgres" {
		table = `"` + db.Schema() + `_river".river_job`
	}
	ids, err := store.Many(t.Context(), db, func(s store.Scanner) (int64, error) {
		var id int64
		return id, s.Scan(&id)
	}, "SELECT id FROM "+table+" WHERE kind = $1 ORDER BY id", rules.WebhookCall{}.Kind())
	if err != nil {
		t.Fatalf("list webhook jobs: %v", err)
	}
	return ids
}

func webhookSet(t *testing.T, svc *rules.Service, ctx context.Context, url string) {
	t.Helper()
	createRule(t, svc, ctx, xRule("HOOK", rules.Action, condOpen, `[{"type":"CALL_WEBHOOK","config":{
		"url":"`+url+`/orders/{{entityId}}","method":"put","headers":{"X-Rule":"{{ruleId}}"},
		"body":{"order":"{{entityId}}","total":"{{data.total}}","status":"{{data.status}}"}}}]`, ""))
	createRule(t, svc, ctx, xRule("BAD_HOOK", rules.Action, condOpen, `[{"type":"CALL_WEBHOOK","config":{"url":"{{data.target}}"}}]`, ""))
	createSet(t, svc, ctx, "HOOKS")
	addMember(t, svc, ctx, "HOOKS", "HOOK", 1)
	addMember(t, svc, ctx, "HOOKS", "BAD_HOOK", 2)
}

func TestExecuteWebhookDelivered(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		srv, got := hookReceiver(t)
		svc := must(rules.New(db, rules.Options{AllowPrivateURLs: true}))
		e := startEngine(t, db, svc)
		ctx, sc := storetest.NewScope(t)
		webhookSet(t, svc, ctx, srv.URL)
		data := openData()
		data["target"] = "ftp://example.com/x" // not http(s) once resolved

		dry := orderInput(data)
		dry.DryRun = true
		execSet(t, svc, ctx, "HOOKS", dry)
		is.Equal(len(webhookJobs(t, db)), 0) // a dry run queues nothing

		res := execSet(t, svc, ctx, "HOOKS", orderInput(data))
		wantSummary(t, res, "HOOK=SUCCESS", "BAD_HOOK=SUCCESS")
		is.Equal(entry(t, res, "HOOK").ActionsExecuted, []rules.ActionResult{{Type: action.CallWebhook, Success: true}})
		badEx := entry(t, res, "BAD_HOOK").ActionsExecuted
		is.Equal(len(badEx), 1)
		is.True(!badEx[0].Success)
		is.True(badEx[0].Error != "")
		wantJSON(t, "planned", entry(t, res, "HOOK").ActionsPlanned[0], `{"type":"CALL_WEBHOOK","url":"`+srv.URL+`/orders/o-1",
			"method":"PUT","headers":{"X-Rule":"HOOK"},"body":{"order":"o-1","total":150,"status":"OPEN"}}`)

		ids := webhookJobs(t, db)
		is.Equal(len(ids), 1) // the durable job exists when ExecuteSet returns
		info, err := e.Get(t.Context(), ids[0])
		is.NoErr(err)
		var args rules.WebhookCall
		is.NoErr(json.Unmarshal(info.Args, &args))
		is.Equal(args.TenantID, sc.TenantID)
		is.Equal(args.RuleID, "HOOK")
		is.Equal(args.URL, srv.URL+"/orders/o-1")

		select {
		case r := <-got:
			is.Equal(r.method, http.MethodPut)
			is.Equal(r.path, "/orders/o-1")
			is.Equal(r.ruleHeader, "HOOK")
			is.Equal(r.contentType, "application/json")
			is.Equal(r.userAgent, "tenantkit-business-rules")
			wantJSON(t, "webhook body", json.RawMessage(r.body), `{"order":"o-1","total":150,"status":"OPEN"}`)
		case <-time.After(10 * time.Second):
			t.Fatal("the webhook was not called within 10s")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err = e.Get(t.Context(), ids[0])
			is.NoErr(err)
			if info.State == jobs.StateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job state %s, errors %v; want completed", info.State, info.Errors)
			}
			time.Sleep(20 * time.Millisecond)
		}
		is.Equal(info.Attempt, 1)
	}, rules.Migrations)
}

func TestExecuteWebhookPrivateRefused(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		srv, got := hookReceiver(t)
		svc := must(rules.New(db, rules.Options{})) // private addresses refused (default)
		e := startEngine(t, db, svc)
		ctx, _ := storetest.NewScope(t)
		// A literal loopback URL is refused when the rule is saved...
		_, err := svc.CreateRule(ctx, rules.RuleInput{RuleID: "LITERAL", RuleName: "x", RuleType: rules.Action, EntityType: "order",
			ConditionExpression: json.RawMessage(`{"field":"a","operator":"=","value":1}`), Enabled: ptr(true),
			SuccessActions: json.RawMessage(`[{"type":"CALL_WEBHOOK","config":{"url":"` + srv.URL + `"}}]`)})
		wantIs(t, err, store.ErrInvalid)
		// ...and when the call connects, for rules saved where private URLs
		// were allowed (or URLs built from placeholders).
		webhookSet(t, must(rules.New(db, rules.Options{AllowPrivateURLs: true})), ctx, srv.URL)
		data := openData()
		data["target"] = srv.URL
		res := execSet(t, svc, ctx, "HOOKS", orderInput(data))
		// Accepted at execution (the address is checked when sending).
		is.True(entry(t, res, "HOOK").ActionsExecuted[0].Success)
		ids := webhookJobs(t, db)
		is.Equal(len(ids), 2)

		deadline := time.Now().Add(10 * time.Second)
		for _, id := range ids {
			for {
				info, err := e.Get(t.Context(), id)
				is.NoErr(err)
				if info.State == jobs.StateCancelled {
					// refused once, not retried
					if !strings.Contains(strings.Join(info.Errors, " "), "not public") {
						t.Errorf("job %d errors %v, want the private address refused", id, info.Errors)
					}
					is.Equal(len(info.Errors), 1)
					break
				}
				if info.State == jobs.StateCompleted {
					t.Fatalf("job %d to a loopback address completed", id)
				}
				if time.Now().After(deadline) {
					t.Fatalf("job %d: state %s, not cancelled within 10s", id, info.State)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		select {
		case r := <-got:
			t.Fatalf("loopback receiver was called: %s %s", r.method, r.path)
		default:
		}
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Execution log

func TestExecutionLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		sc := store.Scope{TenantID: store.NewID(), OrganizationID: store.NewID(), ActorID: "user-42"}
		ctx := store.WithScope(t.Context(), sc)
		gate := createRule(t, svc, ctx, xRule("GATE", rules.Guard, condOpen, allowAct, blockAct))
		createRule(t, svc, ctx, xRule("CHECK", rules.Validation, `{"field":"total","operator":">","value":100}`,
			`[{"type":"SHOW_INFO","config":{"message":"big {{data.total}}"}}]`, ""))
		createSet(t, svc, ctx, "LOGGED")
		addMember(t, svc, ctx, "LOGGED", "GATE", 1)
		addMember(t, svc, ctx, "LOGGED", "CHECK", 2)

		secret := map[string]any{"status": "OPEN", "total": 150.0, "password": "hunter2",
			"customer": map[string]any{"name": "Ann", "apiKey": "k-1", "card": "4111 1111 1111 1111"}}
		t0 := time.Now().Add(-time.Second)
		r1 := execSet(t, svc, ctx, "LOGGED", rules.Input{EntityType: "order", EntityID: "o-1", EventType: "beforeCreate", Data: secret})
		wantSummary(t, r1, "GATE=SUCCESS", "CHECK=SUCCESS")
		time.Sleep(5 * time.Millisecond)
		t1 := time.Now()
		time.Sleep(5 * time.Millisecond)
		r2 := execSet(t, svc, ctx, "LOGGED", rules.Input{EntityType: "order", EntityID: "o-2", EventType: "beforeUpdate",
			Data: map[string]any{"status": "CLOSED", "total": 5.0}})
		wantSummary(t, r2, "GATE=FAILURE", "CHECK=SKIPPED (Previous rule blocked execution)")
		r3, err := svc.Execute(ctx, rules.Input{EntityType: "order", Data: map[string]any{"status": "OPEN", "total": 1.0}})
		is.NoErr(err)
		wantSummary(t, r3, "CHECK=FAILURE", "GATE=SUCCESS") // same priority: ruleId order
		is.Equal(len(r3.LogIDs), 2)
		t2 := time.Now().Add(time.Second)

		all := func(f rules.LogFilter) ([]string, int) {
			t.Helper()
			logs, total, err := svc.ListLogs(ctx, f)
			if err != nil {
				t.Fatalf("ListLogs(%+v): %v", f, err)
			}
			ids := make([]string, len(logs))
			for i, l := range logs {
				ids[i] = l.ID
			}
			return ids, total
		}
		// inOrder checks that ids list the groups (executions) newest first;
		// the rows of one execution share its time, in any order.
		inOrder := func(ids []string, groups ...[]string) {
			t.Helper()
			rest := ids
			for _, g := range groups {
				if len(rest) < len(g) || !sameSet(rest[:len(g)], g) {
					t.Fatalf("log ids %v, want the groups %v in this order", ids, groups)
				}
				rest = rest[len(g):]
			}
			if len(rest) != 0 {
				t.Fatalf("log ids %v, want only the groups %v", ids, groups)
			}
		}
		ids, total := all(rules.LogFilter{})
		is.Equal(total, 5)
		inOrder(ids, r3.LogIDs, r2.LogIDs, r1.LogIDs)
		full := ids
		is.Equal(countLogs(t, db, sc.TenantID), 5)

		t.Run("filters", func(t *testing.T) {
			is := is.New(t)
			ids, total := all(rules.LogFilter{RuleID: "GATE"})
			is.Equal(total, 3)
			is.Equal(ids, []string{r3.LogIDs[1], r2.LogIDs[0], r1.LogIDs[0]})
			ids, total = all(rules.LogFilter{EntityID: "o-2"})
			is.Equal(total, 1)
			is.Equal(ids, r2.LogIDs)
			ids, total = all(rules.LogFilter{EntityID: "unknown"}) // Execute without an entityId
			is.Equal(total, 2)
			inOrder(ids, r3.LogIDs)
			ids, total = all(rules.LogFilter{Result: rules.StatusFailure})
			is.Equal(total, 2)
			is.Equal(ids, []string{r3.LogIDs[0], r2.LogIDs[0]})
			_, total = all(rules.LogFilter{EntityType: "order"})
			is.Equal(total, 5)
			_, total = all(rules.LogFilter{EntityType: "invoice"})
			is.Equal(total, 0)
			_, total = all(rules.LogFilter{RuleID: "GATE", Result: rules.StatusSuccess, EntityID: "o-1"})
			is.Equal(total, 1)
			ids, total = all(rules.LogFilter{From: &t1})
			is.Equal(total, 3)
			inOrder(ids, r3.LogIDs, r2.LogIDs)
			ids, total = all(rules.LogFilter{To: &t1})
			is.Equal(total, 2)
			inOrder(ids, r1.LogIDs)
			_, total = all(rules.LogFilter{From: &t0, To: &t2})
			is.Equal(total, 5)
			_, total = all(rules.LogFilter{From: &t2})
			is.Equal(total, 0)
			_, total = all(rules.LogFilter{RuleID: "GA\x00TE"})
			is.Equal(total, 0)
		})
		t.Run("paging", func(t *testing.T) {
			is := is.New(t)
			ids, total := all(rules.LogFilter{Limit: 2})
			is.Equal(total, 5)
			is.Equal(ids, full[:2]) // pages follow one stable order
			ids, total = all(rules.LogFilter{Limit: 2, Offset: 2})
			is.Equal(total, 5)
			is.Equal(ids, full[2:4])
			ids, total = all(rules.LogFilter{Limit: 2, Offset: 4})
			is.Equal(total, 5)
			is.Equal(ids, full[4:])
			ids, total = all(rules.LogFilter{Offset: 10})
			is.Equal(total, 5)
			is.Equal(len(ids), 0)
		})
		t.Run("entry", func(t *testing.T) {
			is := is.New(t)
			l, err := svc.GetLog(ctx, r1.LogIDs[0])
			is.NoErr(err)
			is.Equal(l.ID, r1.LogIDs[0])
			is.Equal(l.SetID, "LOGGED")
			is.Equal(l.RuleUUID, gate.ID)
			is.Equal(l.RuleID, "GATE")
			is.Equal(l.RuleName, "Rule GATE")
			is.Equal(l.RuleType, rules.Guard)
			is.Equal(l.EntityType, "order")
			is.Equal(l.EntityID, "o-1")
			is.Equal(l.EventType, "beforeCreate")
			is.Equal(l.Result, rules.StatusSuccess)
			is.Equal(l.ErrorMessage, "")
			is.Equal(l.TenantID, sc.TenantID)
			is.Equal(l.OrganizationID, sc.OrganizationID)
			is.Equal(l.ExecutedBy, "user-42")
			is.True(l.ExecutionTimeMs >= 0)
			is.True(!l.ExecutedAt.Before(t0) && !l.ExecutedAt.After(t1))
			wantJSON(t, "inputContext", l.InputContext, `{"data":{"status":"OPEN","total":150,"password":"[REDACTED]",
				"customer":{"name":"Ann","apiKey":"[REDACTED]","card":"[REDACTED]"}},
				"entityType":"order","entityId":"o-1","eventType":"beforeCreate","user":{"id":"user-42"}}`)
			wantJSON(t, "outputContext", l.OutputContext, `{"conditionResult":true,
				"actionsPlanned":[{"type":"ALLOW_TRANSITION","allowed":true,"message":"Transition allowed"}],
				"actionsExecuted":[{"type":"ALLOW_TRANSITION","success":true}]}`)
			// The caller's data still holds its secrets.
			is.Equal(secret["password"], "hunter2")
			is.Equal(secret["customer"].(map[string]any)["apiKey"], "k-1")

			// Both rows of one execution share its id and show its input.
			l2, err := svc.GetLog(ctx, r1.LogIDs[1])
			is.NoErr(err)
			is.Equal(l2.ExecutionID, l.ExecutionID)
			is.Equal(l2.RuleID, "CHECK")
			wantJSON(t, "second row inputContext", l2.InputContext, string(l.InputContext))
			wantJSON(t, "second row outputContext", l2.OutputContext, `{"conditionResult":true,
				"actionsPlanned":[{"type":"SHOW_INFO","severity":"info","message":"big 150"}],
				"actionsExecuted":[{"type":"SHOW_INFO","success":true}]}`)
			other, err := svc.GetLog(ctx, r2.LogIDs[0])
			is.NoErr(err)
			is.True(other.ExecutionID != l.ExecutionID)
			is.Equal(other.Result, rules.StatusFailure)
			wantJSON(t, "blocked outputContext", other.OutputContext, `{"conditionResult":false,
				"actionsPlanned":[{"type":"BLOCK_TRANSITION","allowed":false,"message":"Transition blocked"}],
				"actionsExecuted":[{"type":"BLOCK_TRANSITION","success":true}]}`)

			u, err := svc.GetLog(ctx, r3.LogIDs[0])
			is.NoErr(err)
			is.Equal(u.EntityID, "unknown")
			is.Equal(u.SetID, "")
			is.Equal(u.EventType, "")

			// Listed entries are the same as fetched ones.
			logs, _, err := svc.ListLogs(ctx, rules.LogFilter{EntityID: "o-1", RuleID: "GATE"})
			is.NoErr(err)
			is.Equal(len(logs), 1)
			wantJSON(t, "listed entry", logs[0], string(must(json.Marshal(l))))
		})
		t.Run("not found", func(t *testing.T) {
			for _, id := range []string{store.NewID(), "nope", "", "bad\x00id", r1.LogIDs[0] + "x"} {
				_, err := svc.GetLog(ctx, id)
				wantIs(t, err, store.ErrNotFound)
				if msg := store.PublicMessage(err); msg != "Log entry not found" {
					t.Errorf("GetLog(%q) message %q", id, msg)
				}
			}
		})
	}, rules.Migrations)
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDeleteLogsBefore: retention deletes the rows executed before the
// cutoff, and only those. DeleteLogsBefore works across tenants, so the
// test has a database of its own.
func TestDeleteLogsBefore(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		otherCtx, other := storetest.NewScope(t)
		for _, c := range []context.Context{ctx, otherCtx} {
			createRule(t, svc, c, xRule("ONE", rules.Validation, condOpen, "", ""))
			createRule(t, svc, c, xRule("TWO", rules.Validation, condOpen, "", ""))
			createSet(t, svc, c, "RET")
			addMember(t, svc, c, "RET", "ONE", 1)
			addMember(t, svc, c, "RET", "TWO", 2)
		}
		pause := func() time.Time {
			time.Sleep(5 * time.Millisecond)
			now := time.Now()
			time.Sleep(5 * time.Millisecond)
			return now
		}
		run0 := execSet(t, svc, ctx, "RET", orderInput(openData()))
		otherRun := execSet(t, svc, otherCtx, "RET", orderInput(openData()))
		cut1 := pause()
		run1 := execSet(t, svc, ctx, "RET", orderInput(openData()))
		cut2 := pause()
		run2 := execSet(t, svc, ctx, "RET", orderInput(openData()))
		is.Equal(countLogs(t, db, sc.TenantID), 6)

		n, err := svc.DeleteLogsBefore(t.Context(), cut1)
		is.NoErr(err)
		is.Equal(n, int64(4)) // run0 and the other tenant's run: every tenant's rows go
		is.Equal(countLogs(t, db, sc.TenantID), 4)
		is.Equal(countLogs(t, db, other.TenantID), 0)
		for _, id := range append(slices.Clone(run0.LogIDs), otherRun.LogIDs...) {
			_, err := svc.GetLog(ctx, id)
			wantIs(t, err, store.ErrNotFound)
		}
		for _, id := range append(slices.Clone(run1.LogIDs), run2.LogIDs...) {
			l, err := svc.GetLog(ctx, id)
			is.NoErr(err)
			is.True(json.Valid(l.InputContext))
			is.True(!l.ExecutedAt.Before(cut1))
		}
		n, err = svc.DeleteLogsBefore(t.Context(), cut1)
		is.NoErr(err)
		is.Equal(n, int64(0))
		n, err = svc.DeleteLogsBefore(t.Context(), cut2)
		is.NoErr(err)
		is.Equal(n, int64(2))
		logs, total, err := svc.ListLogs(ctx, rules.LogFilter{})
		is.NoErr(err)
		is.Equal(total, 2)
		for _, l := range logs {
			is.True(slices.Contains(run2.LogIDs, l.ID))
		}
	}, rules.Migrations)
}

// TestDeleteLogsBeforeStraddlingExecution: an execution whose rows were
// made over several milliseconds (big data) is deleted whole once its
// time is before the cutoff, and never leaves unreadable rows.
func TestDeleteLogsBeforeStraddlingExecution(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("ONE", rules.Validation, condOpen, "", ""))
		createRule(t, svc, ctx, xRule("TWO", rules.Validation, condOpen, "", ""))
		createSet(t, svc, ctx, "RET")
		addMember(t, svc, ctx, "RET", "ONE", 1)
		addMember(t, svc, ctx, "RET", "TWO", 2)
		// Big data makes the first rule's log input take milliseconds, so
		// an execution's rows are made over several milliseconds.
		data := openData()
		data["note"] = strings.Repeat("x", 4<<20)
		var last *rules.Result
		for range 4 {
			last = execSet(t, svc, ctx, "RET", orderInput(data))
		}
		l, err := svc.GetLog(ctx, last.LogIDs[0])
		is.NoErr(err)
		// Every row was executed before the millisecond after the last
		// execution's time.
		cut := l.ExecutedAt.Truncate(time.Millisecond).Add(time.Millisecond)
		n, err := svc.DeleteLogsBefore(t.Context(), cut)
		is.NoErr(err)
		logs, total, err := svc.ListLogs(ctx, rules.LogFilter{Limit: 100})
		is.NoErr(err) // every remaining row is readable
		for _, l := range logs {
			t.Errorf("row %s (%s) executed at %v survived a cutoff at %v", l.ID, l.RuleID, l.ExecutedAt, cut)
		}
		is.Equal(total, 0)
		is.Equal(n, int64(8))
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Redaction

// luhn appends the Luhn check digit to digits.
func luhn(digits string) string {
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if (len(digits)-1-i)%2 == 0 { // doubled once the check digit is appended
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return digits + string(rune('0'+(10-sum%10)%10))
}

func TestRedact(t *testing.T) {
	t.Parallel()
	t.Run("secret keys", func(t *testing.T) {
		keys := []string{"password", "Password", "userPassword", "passwd", "pwd", "secret", "clientSecret", "token",
			"accessToken", "refresh_token", "api_key", "apiKey", "API-KEY", "x-api-key", "auth", "Authorization", "authToken",
			"credit_card", "creditCard", "CREDIT-CARD", "card_number", "cardNumber", "cvv", "CVV", "ssn", "social_security",
			"tax_id", "taxId", "driver_license", "passport", "passportNumber"}
		data := map[string]any{}
		for _, k := range keys {
			data[k] = map[string]any{"nested": "value"} // a whole object goes
		}
		plain := map[string]any{"name": "Ann", "email": "a@example.com", "total": 150.0, "flag": true, "none": nil,
			"count": json.Number("12"), "status": "OPEN"}
		for k, v := range plain {
			data[k] = v
		}
		got := rules.Redact(data)
		if len(got) != len(data) {
			t.Fatalf("Redact kept %d keys of %d", len(got), len(data))
		}
		for _, k := range keys {
			if got[k] != rules.Redacted {
				t.Errorf("key %q: %v, want %q", k, got[k], rules.Redacted)
			}
		}
		for k, v := range plain {
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("key %q: %#v, want %#v kept", k, got[k], v)
			}
		}
		if _, ok := data["password"].(map[string]any); !ok {
			t.Error("Redact modified its input")
		}
	})
	t.Run("at any depth", func(t *testing.T) {
		data := map[string]any{"a": map[string]any{"b": map[string]any{"token": "t", "keep": 1.0}},
			"list": []any{map[string]any{"secret": "s", "id": "x"}, "plain", []any{map[string]any{"pwd": "p"}}}}
		wantJSON(t, "redacted", rules.Redact(data), `{"a":{"b":{"token":"[REDACTED]","keep":1}},
			"list":[{"secret":"[REDACTED]","id":"x"},"plain",[{"pwd":"[REDACTED]"}]]}`)
		wantJSON(t, "input", data, `{"a":{"b":{"token":"t","keep":1}},"list":[{"secret":"s","id":"x"},"plain",[{"pwd":"p"}]]}`)
	})
	t.Run("card numbers", func(t *testing.T) {
		cards := []string{"4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "378282246310005",
			"6011111111111117", "5555555555554444", luhn("123456789012"), luhn("123456789012345678")}
		notCards := []string{"4111111111111112", luhn("12345678901"), luhn("1234567890123456789"), "4111a11111111111",
			"41111111111111111111111", "phone 4111111111111111", "", "1234", "4111_1111_1111_1111"}
		data := map[string]any{"cards": []any{}, "other": []any{}}
		for _, c := range cards {
			data["cards"] = append(data["cards"].([]any), c)
		}
		for _, c := range notCards {
			data["other"] = append(data["other"].([]any), c)
		}
		got := rules.Redact(data)
		for i, v := range got["cards"].([]any) {
			if v != rules.Redacted {
				t.Errorf("card %q: %v, want redacted", cards[i], v)
			}
		}
		for i, v := range got["other"].([]any) {
			if v != notCards[i] {
				t.Errorf("not a card %q: %v, want kept", notCards[i], v)
			}
		}
		if got := rules.Redact(map[string]any{"n": json.Number("4111111111111111"), "f": 4111111111111111.0}); got["n"] != json.Number("4111111111111111") {
			t.Errorf("a number is not text: %v", got)
		}
	})
	t.Run("depth", func(t *testing.T) {
		// The data is level 1: objects down to level 5 are kept, deeper
		// ones cut off.
		five := map[string]any{"l2": map[string]any{"l3": map[string]any{"l4": map[string]any{"l5": map[string]any{"leaf": "x"}}}}}
		wantJSON(t, "five levels", rules.Redact(five), `{"l2":{"l3":{"l4":{"l5":{"leaf":"x"}}}}}`)
		six := map[string]any{"l2": map[string]any{"l3": map[string]any{"l4": map[string]any{"l5": map[string]any{"l6": map[string]any{"leaf": "x"}}}}}}
		wantJSON(t, "six levels", rules.Redact(six), `{"l2":{"l3":{"l4":{"l5":{"l6":"[Max depth exceeded]"}}}}}`)
		arrays := map[string]any{"a": []any{[]any{[]any{[]any{[]any{[]any{"deep"}}}}}}}
		wantJSON(t, "nested arrays", rules.Redact(arrays), `{"a":[[[["[Max depth exceeded]"]]]]}`)
		// Very deep data does not blow the stack.
		var deep any = "bottom"
		for range 100000 {
			deep = map[string]any{"d": deep}
		}
		got := rules.Redact(deep.(map[string]any))
		if b, _ := json.Marshal(got); !bytes.Contains(b, []byte("[Max depth exceeded]")) || bytes.Contains(b, []byte("bottom")) {
			t.Errorf("deep data redacted to %s", b)
		}
	})
	t.Run("nil and empty", func(t *testing.T) {
		if got := rules.Redact(nil); len(got) != 0 {
			t.Errorf("Redact(nil) = %v", got)
		}
		if got := rules.Redact(map[string]any{}); got == nil || len(got) != 0 {
			t.Errorf("Redact({}) = %#v", got)
		}
	})
	t.Run("in the execution log", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			is := is.New(t)
			svc := must(rules.New(db, rules.Options{}))
			ctx, _ := storetest.NewScope(t)
			r := createRule(t, svc, ctx, xRule("R", rules.Validation, condOpen, "", ""))
			data := map[string]any{"status": "OPEN", "auth": map[string]any{"user": "u", "pass": "p"},
				"payment": map[string]any{"number": "5555-5555-5555-4444", "cvv": "123", "holder": "Ann"},
				"l2":      map[string]any{"l3": map[string]any{"l4": map[string]any{"l5": map[string]any{"l6": map[string]any{"x": 1.0}}}}}}
			res, err := svc.ExecuteRule(ctx, r.ID, orderInput(data))
			is.NoErr(err)
			l, err := svc.GetLog(ctx, res.LogIDs[0])
			is.NoErr(err)
			var in map[string]any
			is.NoErr(json.Unmarshal(l.InputContext, &in))
			wantJSON(t, "logged data", in["data"], `{"status":"OPEN","auth":"[REDACTED]",
				"payment":{"number":"[REDACTED]","cvv":"[REDACTED]","holder":"Ann"},
				"l2":{"l3":{"l4":{"l5":{"l6":"[Max depth exceeded]"}}}}}`)
		}, rules.Migrations)
	})
}

// ---------------------------------------------------------------------
// Execute (discovery) and ExecuteRule

func TestExecuteDiscovery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
		scoped := func(sc store.Scope) context.Context { return store.WithScope(t.Context(), sc) }
		ctxO1 := scoped(store.Scope{TenantID: tenant, OrganizationID: o1})
		ctxO2 := scoped(store.Scope{TenantID: tenant, OrganizationID: o2})
		ctxWhole := scoped(store.Scope{TenantID: tenant})

		mk := func(ctx context.Context, id string, typ rules.Type, prio int, event string, edit func(*rules.RuleInput)) *rules.Rule {
			in := xRule(id, typ, condOpen, "", "")
			in.Priority = ptr(prio)
			in.EventType = event
			if edit != nil {
				edit(&in)
			}
			return createRule(t, svc, ctx, in)
		}
		mk(ctxO1, "P_HIGH", rules.Guard, 50, "beforeCreate", nil)
		mk(ctxO1, "P_MID_B", rules.Validation, 20, "", nil)
		mk(ctxO1, "P_MID_A", rules.Validation, 20, "beforeCreate", nil)
		mk(ctxO1, "P_LOW", rules.Validation, 1, "afterCreate", nil)
		mk(ctxO1, "X_OFF", rules.Validation, 99, "", func(in *rules.RuleInput) { in.Enabled = ptr(false) })
		del := mk(ctxO1, "X_DELETED", rules.Validation, 98, "", nil)
		is.NoErr(svc.DeleteRule(ctxO1, del.ID))
		mk(ctxO1, "X_FUTURE", rules.Validation, 97, "", func(in *rules.RuleInput) { in.EffectiveFrom = ptr("2999-01-01T00:00:00Z") })
		mk(ctxO1, "X_PAST", rules.Validation, 96, "", func(in *rules.RuleInput) { in.EffectiveTo = ptr("2000-01-01") })
		mk(ctxO1, "X_INVOICE", rules.Validation, 90, "", func(in *rules.RuleInput) { in.EntityType = "invoice" })
		mk(ctxO2, "O2_RULE", rules.Validation, 95, "", nil)
		mk(ctxWhole, "TENANT_WIDE", rules.Validation, 94, "", nil)
		mk(ctxO1, "X_OTHER_EVENT", rules.Validation, 93, "shipped", nil)

		run := func(ctx context.Context, in rules.Input) *rules.Result {
			t.Helper()
			res, err := svc.Execute(ctx, in)
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			is.Equal(res.SetID, "")
			is.Equal(res.SetName, "")
			for _, e := range res.ExecutedRules {
				if e.Sequence != nil {
					t.Errorf("%s has a sequence outside a set", e.RuleID)
				}
			}
			return res
		}
		open := rules.Input{EntityType: "order", EventType: "beforeCreate", Data: openData(), DryRun: true}
		wantSummary(t, run(ctxO1, open), "TENANT_WIDE=SUCCESS", "P_HIGH=SUCCESS", "P_MID_A=SUCCESS", "P_MID_B=SUCCESS")
		every := open
		every.EventType = ""
		wantSummary(t, run(ctxO1, every), "TENANT_WIDE=SUCCESS", "X_OTHER_EVENT=SUCCESS", "P_HIGH=SUCCESS",
			"P_MID_A=SUCCESS", "P_MID_B=SUCCESS", "P_LOW=SUCCESS")
		after := open
		after.EventType = "afterCreate"
		wantSummary(t, run(ctxO1, after), "TENANT_WIDE=SUCCESS", "P_MID_B=SUCCESS", "P_LOW=SUCCESS")
		// Another organization's rules do not apply; the tenant's do.
		wantSummary(t, run(ctxO2, open), "O2_RULE=SUCCESS", "TENANT_WIDE=SUCCESS")
		wantSummary(t, run(ctxWhole, open), "TENANT_WIDE=SUCCESS")
		wantSummary(t, run(ctxO1, rules.Input{EntityType: "invoice", Data: openData(), DryRun: true}), "X_INVOICE=SUCCESS")
		none := run(ctxO1, rules.Input{EntityType: "nothing_here", Data: map[string]any{}})
		is.Equal(len(none.ExecutedRules), 0)
		is.True(none.Allowed)
		is.Equal(len(none.LogIDs), 0)

		// A blocking GUARD skips the lower-priority rules.
		closed := open
		closed.Data = map[string]any{"status": "CLOSED"}
		res := run(ctxO1, closed)
		wantSummary(t, res, "TENANT_WIDE=FAILURE", "P_HIGH=FAILURE",
			"P_MID_A=SKIPPED (Previous rule blocked execution)", "P_MID_B=SKIPPED (Previous rule blocked execution)")
		is.True(!res.Allowed)

		// Not a dry run: one row per evaluated rule, entityId "unknown".
		closed.DryRun = false
		res = run(ctxO1, closed)
		is.Equal(len(res.LogIDs), 2)
		logs, total, err := svc.ListLogs(ctxO1, rules.LogFilter{})
		is.NoErr(err)
		is.Equal(total, 2)
		for _, l := range logs {
			is.Equal(l.EntityID, "unknown")
			is.Equal(l.EntityType, "order")
			is.Equal(l.EventType, "beforeCreate")
		}

		_, err = svc.Execute(ctxO1, rules.Input{})
		wantFields(t, err, "entityType", "data")
		_, err = svc.Execute(ctxO1, rules.Input{EntityType: "order", EntityID: strings.Repeat("x", 300), Data: map[string]any{}})
		wantFields(t, err, "entityId")
	}, rules.Migrations)
}

func TestExecuteRule(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		in := xRule("ONE", rules.Guard, condOpen, `[{"type":"SHOW_INFO","config":{"message":"ok {{ruleId}} {{entityType}}"}}]`, "")
		in.EventType = "beforeCreate"
		r := createRule(t, svc, ctx, in)

		res, err := svc.ExecuteRule(ctx, r.ID, rules.Input{Data: openData()}) // entityType defaults to the rule's
		is.NoErr(err)
		wantSummary(t, res, "ONE=SUCCESS")
		is.True(res.Allowed)
		e := res.ExecutedRules[0]
		is.Equal(e.Sequence, nil)
		is.Equal(e.RuleType, rules.Guard)
		wantJSON(t, "planned", e.ActionsPlanned, `[{"type":"SHOW_INFO","severity":"info","message":"ok ONE order"}]`)
		is.Equal(len(res.LogIDs), 1)
		l, err := svc.GetLog(ctx, res.LogIDs[0])
		is.NoErr(err)
		is.Equal(l.EntityType, "order")
		is.Equal(l.EntityID, "unknown")
		is.Equal(l.SetID, "")

		blocked, err := svc.ExecuteRule(ctx, r.ID, rules.Input{EntityID: "o-9", EventType: "beforeCreate", Data: map[string]any{"status": "X"}})
		is.NoErr(err)
		wantSummary(t, blocked, "ONE=FAILURE")
		is.True(!blocked.Allowed)

		logsBefore := countLogs(t, db, sc.TenantID)
		skipped := func(in rules.Input, want string) {
			t.Helper()
			res, err := svc.ExecuteRule(ctx, r.ID, in)
			if err != nil {
				t.Fatalf("ExecuteRule: %v", err)
			}
			if len(res.ExecutedRules) != 1 || res.ExecutedRules[0].Result != rules.StatusSkipped ||
				!strings.Contains(res.ExecutedRules[0].Reason, want) {
				t.Errorf("ExecuteRule(%+v) = %q, want one SKIPPED entry mentioning %q", in, summary(res), want)
			}
			if !res.Allowed || len(res.LogIDs) != 0 {
				t.Errorf("skipped: allowed %v, logIds %v", res.Allowed, res.LogIDs)
			}
		}
		skipped(rules.Input{EventType: "afterCreate", Data: openData()}, "afterCreate")
		skipped(rules.Input{EntityType: "invoice", Data: openData()}, "entity type")

		off := xRule("OFF", rules.Validation, condOpen, "", "")
		off.Enabled = ptr(false)
		offRule := createRule(t, svc, ctx, off)
		res, err = svc.ExecuteRule(ctx, offRule.ID, rules.Input{Data: openData()})
		is.NoErr(err)
		wantSummary(t, res, "OFF=SKIPPED (Rule is disabled)")
		future := xRule("LATER", rules.Validation, condOpen, "", "")
		future.EffectiveFrom = ptr("2999-06-30")
		fr := createRule(t, svc, ctx, future)
		res, err = svc.ExecuteRule(ctx, fr.ID, rules.Input{Data: openData()})
		is.NoErr(err)
		wantSummary(t, res, "LATER=SKIPPED (Rule is not yet effective (starts 2999-06-30T00:00:00Z))")
		is.Equal(countLogs(t, db, sc.TenantID), logsBefore)

		for _, id := range []string{store.NewID(), "not-a-uuid", "", "x\x00"} {
			_, err := svc.ExecuteRule(ctx, id, rules.Input{Data: openData()})
			wantRuleNotFound(t, err)
		}
		gone := createRule(t, svc, ctx, xRule("GONE", rules.Validation, condOpen, "", ""))
		is.NoErr(svc.DeleteRule(ctx, gone.ID))
		_, err = svc.ExecuteRule(ctx, gone.ID, rules.Input{Data: openData()})
		wantRuleNotFound(t, err)
		// A rule of an organization the scope may not read is not found.
		other := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{store.NewID()}})
		_, err = svc.ExecuteRule(other, r.ID, rules.Input{Data: openData()})
		wantRuleNotFound(t, err)

		_, err = svc.ExecuteRule(ctx, r.ID, rules.Input{})
		wantFields(t, err, "data")
		_, err = svc.ExecuteRule(ctx, r.ID, rules.Input{EntityType: "ord\x00", Data: map[string]any{}})
		wantFields(t, err, "entityType")
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Plan caching

// TestExecutePlanCacheSameProcess: every change is seen by the very next
// execution. An isolated schema keeps other tests' changes from dropping
// the cache for us.
func TestExecutePlanCacheSameProcess(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		g := createRule(t, svc, ctx, xRule("GATE", rules.Guard, condOpen, "", ""))
		v := createRule(t, svc, ctx, xRule("VALID", rules.Validation, condOpen, "", ""))
		createSet(t, svc, ctx, "CACHED")
		addMember(t, svc, ctx, "CACHED", "GATE", 10)
		addMember(t, svc, ctx, "CACHED", "VALID", 20)
		in := orderInput(openData())
		in.DryRun = true
		run := func() *rules.Result { t.Helper(); return execSet(t, svc, ctx, "CACHED", in) }
		discover := func() *rules.Result {
			t.Helper()
			res, err := svc.Execute(ctx, rules.Input{EntityType: "order", EventType: "beforeCreate", Data: openData(), DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		wantSummary(t, run(), "GATE=SUCCESS", "VALID=SUCCESS")
		wantSummary(t, run(), "GATE=SUCCESS", "VALID=SUCCESS") // now cached
		wantSummary(t, discover(), "GATE=SUCCESS", "VALID=SUCCESS")

		upd := xRule("GATE", rules.Guard, condNever, "", "")
		_, err := svc.UpdateRule(ctx, g.ID, upd)
		is.NoErr(err)
		wantSummary(t, run(), "GATE=FAILURE", "VALID=SKIPPED (Previous rule blocked execution)")
		wantSummary(t, discover(), "GATE=FAILURE", "VALID=SKIPPED (Previous rule blocked execution)")

		upd.Priority = ptr(1) // below VALID now
		upd.ConditionExpression = raw(condOpen)
		_, err = svc.UpdateRule(ctx, g.ID, upd)
		is.NoErr(err)
		wantSummary(t, discover(), "VALID=SUCCESS", "GATE=SUCCESS")
		wantSummary(t, run(), "GATE=SUCCESS", "VALID=SUCCESS")

		_, err = svc.UpdateMember(ctx, "CACHED", "GATE", rules.MemberPatch{Enabled: ptr(false)})
		is.NoErr(err)
		wantSummary(t, run(), "VALID=SUCCESS")
		_, err = svc.UpdateMember(ctx, "CACHED", "GATE", rules.MemberPatch{Enabled: ptr(true), Sequence: ptr(30)})
		is.NoErr(err)
		wantSummary(t, run(), "VALID=SUCCESS", "GATE=SUCCESS")

		off := xRule("VALID", rules.Validation, condOpen, "", "")
		off.Enabled = ptr(false)
		_, err = svc.UpdateRule(ctx, v.ID, off)
		is.NoErr(err)
		wantSummary(t, run(), "VALID=SKIPPED (Rule is disabled)", "GATE=SUCCESS")
		wantSummary(t, discover(), "GATE=SUCCESS")
		one, err := svc.ExecuteRule(ctx, v.ID, in)
		is.NoErr(err)
		wantSummary(t, one, "VALID=SKIPPED (Rule is disabled)")

		is.NoErr(svc.RemoveMember(ctx, "CACHED", "VALID"))
		wantSummary(t, run(), "GATE=SUCCESS")

		_, err = svc.UpdateSet(ctx, "CACHED", rules.SetPatch{Enabled: ptr(false)})
		is.NoErr(err)
		_, err = svc.ExecuteSet(ctx, "CACHED", in)
		wantCode(t, err, rules.CodeSetDisabled, store.ErrConflict)
		_, err = svc.UpdateSet(ctx, "CACHED", rules.SetPatch{Enabled: ptr(true)})
		is.NoErr(err)
		wantSummary(t, run(), "GATE=SUCCESS")

		is.NoErr(svc.DeleteRule(ctx, g.ID))
		wantSummary(t, run())
		wantSummary(t, discover())
		_, err = svc.ExecuteRule(ctx, g.ID, in)
		wantRuleNotFound(t, err)

		createRule(t, svc, ctx, xRule("NEWCOMER", rules.Validation, condOpen, "", ""))
		wantSummary(t, discover(), "NEWCOMER=SUCCESS")
		addMember(t, svc, ctx, "CACHED", "NEWCOMER", 1)
		wantSummary(t, run(), "NEWCOMER=SUCCESS")

		is.NoErr(svc.DeleteSet(ctx, "CACHED", true))
		_, err = svc.ExecuteSet(ctx, "CACHED", in)
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		createSet(t, svc, ctx, "CACHED")
		wantSummary(t, run())
	}, rules.Migrations)
}

// TestExecutePlanCacheTwoServices: two services on one database stand for
// two processes; a change through one shows in the other within a second.
func TestExecutePlanCacheTwoServices(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		a, b := must(rules.New(db, rules.Options{})), must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		g := createRule(t, a, ctx, xRule("GATE", rules.Guard, condOpen, "", ""))
		createRule(t, a, ctx, xRule("VALID", rules.Validation, condOpen, "", ""))
		createSet(t, a, ctx, "SHARED")
		addMember(t, a, ctx, "SHARED", "GATE", 1)
		addMember(t, a, ctx, "SHARED", "VALID", 2)
		in := orderInput(openData())
		in.DryRun = true
		discoverIn := rules.Input{EntityType: "order", Data: openData(), DryRun: true}

		// b caches both plans.
		wantSummary(t, execSet(t, b, ctx, "SHARED", in), "GATE=SUCCESS", "VALID=SUCCESS")
		res, err := b.Execute(ctx, discoverIn)
		is.NoErr(err)
		wantSummary(t, res, "GATE=SUCCESS", "VALID=SUCCESS")

		// eventually polls f until it returns "" or a second passes.
		eventually := func(what string, f func() string) {
			t.Helper()
			start := time.Now()
			deadline := start.Add(time.Second)
			for {
				got := f()
				if got == "" {
					t.Logf("%s seen after %v", what, time.Since(start).Round(time.Millisecond))
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: still %s after 1s", what, got)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		setSummary := func(want ...string) func() string {
			return func() string {
				res, err := b.ExecuteSet(ctx, "SHARED", in)
				if err != nil {
					return err.Error()
				}
				if got := summary(res); !slices.Equal(got, want) {
					return fmt.Sprint(got)
				}
				return ""
			}
		}

		upd := xRule("GATE", rules.Guard, condNever, "", "")
		_, err = a.UpdateRule(ctx, g.ID, upd)
		is.NoErr(err)
		eventually("rule update", setSummary("GATE=FAILURE", "VALID=SKIPPED (Previous rule blocked execution)"))

		_, err = a.UpdateMember(ctx, "SHARED", "GATE", rules.MemberPatch{Sequence: ptr(3)})
		is.NoErr(err)
		eventually("member update", setSummary("VALID=SUCCESS", "GATE=FAILURE"))

		is.NoErr(a.RemoveMember(ctx, "SHARED", "VALID"))
		eventually("member removal", setSummary("GATE=FAILURE"))

		_, err = a.UpdateSet(ctx, "SHARED", rules.SetPatch{Enabled: ptr(false)})
		is.NoErr(err)
		eventually("set disabled", func() string {
			_, err := b.ExecuteSet(ctx, "SHARED", in)
			var ce *rules.CodedError
			if errors.As(err, &ce) && ce.Code == rules.CodeSetDisabled {
				return ""
			}
			return fmt.Sprintf("error %v", err)
		})

		is.NoErr(a.DeleteRule(ctx, g.ID))
		eventually("rule deleted", func() string {
			res, err := b.Execute(ctx, discoverIn)
			if err != nil {
				return err.Error()
			}
			if got := summary(res); !slices.Equal(got, []string{"VALID=SUCCESS"}) {
				return fmt.Sprint(got)
			}
			return ""
		})
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Concurrency and isolation

func TestExecuteConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("GATE", rules.Guard, condOpen, allowAct, ""))
		createRule(t, svc, ctx, xRule("EMIT", rules.Action, condOpen,
			`[{"type":"EMIT_EVENT","config":{"eventName":"orders.checked","payload":{"id":"{{entityId}}"}}},{"type":"SET_FIELD","config":{"field":"checked","value":true}}]`, ""))
		off := xRule("OFF", rules.Validation, condOpen, "", "")
		off.Enabled = ptr(false)
		createRule(t, svc, ctx, off)
		createSet(t, svc, ctx, "BUSY")
		addMember(t, svc, ctx, "BUSY", "GATE", 1)
		addMember(t, svc, ctx, "BUSY", "EMIT", 2)
		addMember(t, svc, ctx, "BUSY", "OFF", 3)

		const n, dry = 50, 10
		shared := openData() // read by every execution at once
		results := make([]*rules.Result, n)
		errs := make([]error, n+dry)
		var wg sync.WaitGroup
		for i := range n + dry {
			wg.Go(func() {
				in := orderInput(shared)
				in.EntityID = fmt.Sprintf("o-%d", i)
				in.DryRun = i >= n
				res, err := svc.ExecuteSet(ctx, "BUSY", in)
				errs[i] = err
				if i < n {
					results[i] = res
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("execution %d: %v", i, err)
			}
		}
		wantJSON(t, "shared data", shared, `{"status":"OPEN","total":150}`)
		seen := map[string]bool{}
		for i, res := range results {
			if got := summary(res); !slices.Equal(got, []string{"GATE=SUCCESS", "EMIT=SUCCESS", "OFF=SKIPPED (Rule is disabled)"}) {
				t.Fatalf("execution %d: %q", i, got)
			}
			is.True(res.Allowed)
			is.Equal(res.Data["checked"], true)
			is.Equal(len(res.LogIDs), 2)
			for _, id := range res.LogIDs {
				if seen[id] {
					t.Fatalf("log id %s returned twice", id)
				}
				seen[id] = true
				l, err := svc.GetLog(ctx, id)
				if err != nil {
					t.Fatalf("GetLog(%s) of execution %d: %v", id, i, err)
				}
				is.Equal(l.EntityID, fmt.Sprintf("o-%d", i))
			}
		}
		is.Equal(countLogs(t, db, sc.TenantID), 2*n)
		is.Equal(countEvents(t, db, sc.TenantID, rules.EventEmitted), n)
		_, total, err := svc.ListLogs(ctx, rules.LogFilter{RuleID: "EMIT"})
		is.NoErr(err)
		is.Equal(total, n)
	}, rules.Migrations)
}

// TestExecuteConcurrentWithChanges: executions racing definition changes
// never fail, and once the changes are done the next execution sees them.
func TestExecuteConcurrentWithChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		r := createRule(t, svc, ctx, xRule("FLIP", rules.Validation, condOpen, "", ""))
		createSet(t, svc, ctx, "RACE")
		addMember(t, svc, ctx, "RACE", "FLIP", 1)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failures []error
		for range 8 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					in := orderInput(openData())
					in.DryRun = true
					if _, err := svc.ExecuteSet(ctx, "RACE", in); err != nil {
						mu.Lock()
						failures = append(failures, err)
						mu.Unlock()
					}
				}
			})
		}
		for i := range 10 {
			cond := condOpen
			if i%2 == 0 {
				cond = condNever
			}
			if _, err := svc.UpdateRule(ctx, r.ID, xRule("FLIP", rules.Validation, cond, "", "")); err != nil {
				t.Error(err)
			}
		}
		_, err := svc.UpdateRule(ctx, r.ID, xRule("FLIP", rules.Validation, condNever, "", ""))
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(failures) > 0 {
			t.Fatalf("%d executions failed, first: %v", len(failures), failures[0])
		}
		in := orderInput(openData())
		in.DryRun = true
		wantSummary(t, execSet(t, svc, ctx, "RACE", in), "FLIP=FAILURE")
	}, rules.Migrations)
}

func TestExecuteTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctxA, scA := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)
		ra := createRule(t, svc, ctxA, xRule("R1", rules.Validation, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"a.only"}}]`, ""))
		createSet(t, svc, ctxA, "SHARED_NAME")
		addMember(t, svc, ctxA, "SHARED_NAME", "R1", 1)
		resA := execSet(t, svc, ctxA, "SHARED_NAME", orderInput(openData()))
		is.Equal(len(resA.LogIDs), 1)

		// B has no such set, and cannot run A's rule.
		_, err := svc.ExecuteSet(ctxB, "SHARED_NAME", orderInput(openData()))
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		_, err = svc.ExecuteRule(ctxB, ra.ID, rules.Input{Data: openData()})
		wantRuleNotFound(t, err)
		res, err := svc.Execute(ctxB, rules.Input{EntityType: "order", Data: openData()})
		is.NoErr(err)
		is.Equal(len(res.ExecutedRules), 0)

		// B's own set of the same name and rule of the same ruleId are B's.
		inB := xRule("R1", rules.Validation, condNever, "", "")
		inB.RuleName = "B's rule"
		createRule(t, svc, ctxB, inB)
		createSet(t, svc, ctxB, "SHARED_NAME")
		addMember(t, svc, ctxB, "SHARED_NAME", "R1", 1)
		resB := execSet(t, svc, ctxB, "SHARED_NAME", orderInput(openData()))
		wantSummary(t, resB, "R1=FAILURE")
		is.Equal(resB.ExecutedRules[0].RuleName, "B's rule")
		res, err = svc.Execute(ctxB, rules.Input{EntityType: "order", Data: openData()})
		is.NoErr(err)
		wantSummary(t, res, "R1=FAILURE")

		logsB, total, err := svc.ListLogs(ctxB, rules.LogFilter{})
		is.NoErr(err)
		is.Equal(total, 2)
		for _, l := range logsB {
			is.Equal(l.TenantID, scB.TenantID)
			is.True(!slices.Contains(resA.LogIDs, l.ID))
		}
		_, total, err = svc.ListLogs(ctxB, rules.LogFilter{RuleID: "R1", Result: rules.StatusSuccess})
		is.NoErr(err)
		is.Equal(total, 0)
		_, err = svc.GetLog(ctxB, resA.LogIDs[0])
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.GetLog(ctxA, resB.LogIDs[0])
		wantIs(t, err, store.ErrNotFound)
		l, err := svc.GetLog(ctxA, resA.LogIDs[0])
		is.NoErr(err)
		is.Equal(l.TenantID, scA.TenantID)
		is.Equal(countEvents(t, db, scB.TenantID, rules.EventEmitted), 0)
		is.Equal(countEvents(t, db, scA.TenantID, rules.EventEmitted), 1)

		// Within A, a scope that may not read A's organization sees none
		// of its log rows.
		narrow := store.WithScope(t.Context(), store.Scope{TenantID: scA.TenantID, OrganizationIDs: []string{store.NewID()}})
		_, total, err = svc.ListLogs(narrow, rules.LogFilter{})
		is.NoErr(err)
		is.Equal(total, 0)
		_, err = svc.GetLog(narrow, resA.LogIDs[0])
		wantIs(t, err, store.ErrNotFound)
	}, rules.Migrations)
}

// ---------------------------------------------------------------------
// Odd input

func TestExecuteWeirdData(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		// weirdSet stores the set in a fresh tenant.
		weirdSet := func(t *testing.T) context.Context {
			ctx, _ := storetest.NewScope(t)
			createRule(t, svc, ctx, xRule("NESTED", rules.Validation, `{"field":"items[1].qty","operator":">","value":1}`, "", ""))
			createRule(t, svc, ctx, xRule("NUMBER", rules.Calculation, `{"field":"total","operator":">=","value":100.5}`,
				`[{"type":"SET_FIELD","config":{"field":"copy","value":"{{data.total}}"}},{"type":"SHOW_INFO","config":{"message":"total {{data.total}}"}}]`, ""))
			createRule(t, svc, ctx, xRule("HUGE", rules.Validation, `{"field":"note","operator":"CONTAINS","value":"needle"}`, "", ""))
			createRule(t, svc, ctx, xRule("MISSING", rules.Validation, `{"field":"a.b.c[3].d","operator":"IS_EMPTY"}`, "", ""))
			createSet(t, svc, ctx, "WEIRD")
			for i, id := range []string{"NESTED", "NUMBER", "HUGE", "MISSING"} {
				addMember(t, svc, ctx, "WEIRD", id, i)
			}
			return ctx
		}
		huge := strings.Repeat("hay ", 256<<10) + "needle"
		// logsReadable checks that every log row of the tenant can be read.
		logsReadable := func(t *testing.T, ctx context.Context, res *rules.Result) {
			t.Helper()
			if _, _, err := svc.ListLogs(ctx, rules.LogFilter{Limit: 100}); err != nil {
				t.Errorf("ListLogs: %v", err)
			}
			for _, id := range res.LogIDs {
				if _, err := svc.GetLog(ctx, id); err != nil {
					t.Errorf("GetLog(%s): %v", id, err)
				}
			}
		}

		t.Run("decoded with UseNumber", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx := weirdSet(t)
			dec := json.NewDecoder(strings.NewReader(`{"items":[{"qty":1},{"qty":2}],"total":100.50,
				"matrix":[[1,[2,[3,{"k":[[]]}]]],[]],"a":{"b":"not an object"},"":"empty key","emoji":"🙂"}`))
			dec.UseNumber()
			var data map[string]any
			is.NoErr(dec.Decode(&data))
			data["note"] = huge
			res := execSet(t, svc, ctx, "WEIRD", orderInput(data))
			wantSummary(t, res, "NESTED=SUCCESS", "NUMBER=SUCCESS", "HUGE=SUCCESS", "MISSING=SUCCESS")
			is.Equal(res.Data["copy"], json.Number("100.50"))
			wantJSON(t, "planned", entry(t, res, "NUMBER").ActionsPlanned[1], `{"type":"SHOW_INFO","severity":"info","message":"total 100.50"}`)
			l, err := svc.GetLog(ctx, res.LogIDs[2])
			is.NoErr(err)
			var in struct {
				Data map[string]any `json:"data"`
			}
			is.NoErr(json.Unmarshal(l.InputContext, &in))
			is.Equal(in.Data["note"], huge) // logged whole
			is.Equal(in.Data["emoji"], "🙂")
			is.Equal(in.Data[""], "empty key")
		})
		t.Run("plain float64 and odd shapes", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx := weirdSet(t)
			data := map[string]any{"items": []any{nil, map[string]any{"qty": 5.0}}, "total": 1e300, "note": huge,
				"list": []any{[]any{[]any{}}, map[string]any{}, nil, true, -0.0}, "a": nil}
			res := execSet(t, svc, ctx, "WEIRD", orderInput(data))
			wantSummary(t, res, "NESTED=SUCCESS", "NUMBER=SUCCESS", "HUGE=SUCCESS", "MISSING=SUCCESS")
			is.Equal(res.Data["copy"], 1e300)
			logsReadable(t, ctx, res)
		})
		t.Run("Go values that encode as JSON", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx := weirdSet(t)
			data := map[string]any{"items": []map[string]any{{"qty": 1}, {"qty": 2}}, "total": 200, "note": []byte("needle"),
				"a": struct{ B int }{1}, "when": time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "ints": map[string]int{"x": 1}}
			res, err := svc.ExecuteSet(ctx, "WEIRD", orderInput(data))
			is.NoErr(err)
			is.Equal(len(res.ExecutedRules), 4)
			is.Equal(len(res.LogIDs), 4)
			logsReadable(t, ctx, res)
		})
		// Data the log cannot hold: values JSON has no form for, and NUL
		// characters (which PostgreSQL refuses). A dry run writes no log
		// and runs; otherwise the input is refused up front, naming data,
		// the same on both engines, and nothing is written.
		odd := map[string]func() any{"NaN": func() any { return math.NaN() }, "Inf": func() any { return math.Inf(-1) },
			"channel": func() any { return make(chan int) }, "func": func() any { return func() {} },
			"NUL in text": func() any { return "a\x00b" }, "NUL in a key": func() any { return map[string]any{"k\x00": 1.0} },
			"NUL deep": func() any { return []any{map[string]any{"x": []any{"\x00"}}} }}
		for name, mk := range odd {
			t.Run("data the log cannot hold: "+name, func(t *testing.T) {
				t.Parallel()
				ctx, sc := storetest.NewScope(t)
				createRule(t, svc, ctx, xRule("NUMBER", rules.Calculation, `{"field":"total","operator":">=","value":100.5}`, "", ""))
				createRule(t, svc, ctx, xRule("EMIT", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"odd.data","payload":"{{data.note}}"}}]`, ""))
				createSet(t, svc, ctx, "ODD")
				addMember(t, svc, ctx, "ODD", "NUMBER", 1)
				addMember(t, svc, ctx, "ODD", "EMIT", 2)
				v := mk()
				data := map[string]any{"status": "OPEN", "total": v, "items": []any{v}, "note": v}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("panic %v", p)
						}
					}()
					in := orderInput(data)
					in.DryRun = true
					res, err := svc.ExecuteSet(ctx, "ODD", in)
					if err != nil {
						t.Fatalf("dry run: %v", err)
					}
					if len(res.ExecutedRules) != 2 {
						t.Errorf("dry run: %q", summary(res))
					}
					for _, run := range []func(rules.Input) error{
						func(in rules.Input) error { _, err := svc.ExecuteSet(ctx, "ODD", in); return err },
						func(in rules.Input) error { _, err := svc.Execute(ctx, in); return err },
					} {
						err := run(orderInput(data))
						wantInvalid(t, err, "data")
					}
				}()
				if n := countLogs(t, db, sc.TenantID); n != 0 {
					t.Errorf("%d log rows written", n)
				}
				if n := countEvents(t, db, sc.TenantID, rules.EventEmitted); n != 0 {
					t.Errorf("%d events written", n)
				}
			})
		}
		// Input.Context is read by placeholders, so what it holds reaches
		// the log and the events as well.
		for name, v := range map[string]any{"NaN": math.NaN(), "NUL": "a\x00b"} {
			t.Run("context the log cannot hold: "+name, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				ctx, sc := storetest.NewScope(t)
				createRule(t, svc, ctx, xRule("COPY", rules.Action, condOpen, `[{"type":"SET_FIELD","config":{"field":"copy","value":"{{bad}}"}}]`, ""))
				createRule(t, svc, ctx, xRule("EMIT", rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"odd.context","payload":{"v":"{{bad}}"}}}]`, ""))
				in := rules.Input{EntityType: "order", Data: openData(), Context: map[string]any{"bad": v}}
				res, err := svc.Execute(ctx, in)
				if err != nil {
					// Refusing it is fine, as a validation error and without
					// writing anything.
					var ve *store.ValidationError
					if !errors.As(err, &ve) {
						t.Fatalf("Execute: %v (%T), want success or a validation error", err, err)
					}
					is.Equal(countLogs(t, db, sc.TenantID), 0)
					return
				}
				is.Equal(len(res.LogIDs), 2)
				logsReadable(t, ctx, res)
				logs, _, err := svc.ListLogs(ctx, rules.LogFilter{})
				is.NoErr(err)
				for _, l := range logs {
					_, err := json.Marshal(l)
					is.NoErr(err) // an entry the API can send
				}
			})
		}
	}, rules.Migrations)
}

// TestExecuteGroupCommitIsolatesFailures: executions commit their writes
// together; one whose writes cannot be committed (a CALL_WEBHOOK without a
// job engine) fails alone, the others racing it succeed in full.
func TestExecuteGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		for _, id := range []string{"G1", "G2", "G3"} {
			createRule(t, svc, ctx, xRule(id, rules.Action, condOpen, `[{"type":"EMIT_EVENT","config":{"eventName":"orders.good"}}]`, ""))
		}
		createRule(t, svc, ctx, xRule("HOOK", rules.Action, condOpen, `[{"type":"CALL_WEBHOOK","config":{"url":"https://example.com/h"}}]`, ""))
		createSet(t, svc, ctx, "GOOD")
		createSet(t, svc, ctx, "BAD")
		for i, id := range []string{"G1", "G2", "G3"} {
			addMember(t, svc, ctx, "GOOD", id, i)
		}
		addMember(t, svc, ctx, "BAD", "G1", 1)
		addMember(t, svc, ctx, "BAD", "HOOK", 2)

		const good, bad = 100, 20 // up to 300 log rows in one commit: more than one INSERT
		errs := make([]error, good+bad)
		logIDs := make([][]string, good+bad)
		var wg sync.WaitGroup
		for i := range good + bad {
			wg.Go(func() {
				set := "GOOD"
				if i%6 == 5 && i/6 < bad {
					set = "BAD"
				}
				in := orderInput(openData())
				in.EntityID = set + fmt.Sprint(i)
				res, err := svc.ExecuteSet(ctx, set, in)
				errs[i] = err
				if err == nil {
					logIDs[i] = res.LogIDs
				}
			})
		}
		wg.Wait()
		okCount, failed := 0, 0
		for i, err := range errs {
			isBad := i%6 == 5 && i/6 < bad
			switch {
			case isBad && err == nil:
				t.Errorf("execution %d of BAD succeeded", i)
			case isBad:
				failed++
			case err != nil:
				t.Errorf("execution %d of GOOD failed: %v", i, err)
			default:
				okCount++
				is.Equal(len(logIDs[i]), 3)
			}
		}
		is.Equal(okCount, good)
		is.Equal(failed, bad)
		is.Equal(countLogs(t, db, sc.TenantID), 3*good)
		is.Equal(countEvents(t, db, sc.TenantID, rules.EventEmitted), 3*good)
		_, total, err := svc.ListLogs(ctx, rules.LogFilter{RuleID: "HOOK"})
		is.NoErr(err)
		is.Equal(total, 0)
	}, rules.Migrations)
}

// TestExecuteResultsAreTheCallers: a result belongs to its caller;
// changing it does not change later executions.
func TestExecuteResultsAreTheCallers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("R", rules.Action, condOpen,
			`[{"type":"SET_FIELD","config":{"field":"meta","value":{"tags":["a"],"n":1}}},{"type":"EMIT_EVENT","config":{"eventName":"x.y","payload":{"list":[1,2]}}}]`, ""))
		createSet(t, svc, ctx, "MINE")
		addMember(t, svc, ctx, "MINE", "R", 7)
		in := orderInput(openData())
		in.DryRun = true

		t.Run("planned actions", func(t *testing.T) {
			res := execSet(t, svc, ctx, "MINE", in)
			planned := res.ExecutedRules[0].ActionsPlanned
			planned[0]["value"].(map[string]any)["tags"].([]any)[0] = "changed"
			planned[1]["payload"].(map[string]any)["list"] = nil
			res2 := execSet(t, svc, ctx, "MINE", in)
			wantJSON(t, "planned", res2.ExecutedRules[0].ActionsPlanned, `[{"type":"SET_FIELD","field":"meta","value":{"tags":["a"],"n":1}},
				{"type":"EMIT_EVENT","event":"x.y","payload":{"list":[1,2]}}]`)
		})
		t.Run("sequence", func(t *testing.T) {
			res := execSet(t, svc, ctx, "MINE", in)
			is.Equal(*res.ExecutedRules[0].Sequence, 7)
			*res.ExecutedRules[0].Sequence = 999
			res2 := execSet(t, svc, ctx, "MINE", in)
			if got := *res2.ExecutedRules[0].Sequence; got != 7 {
				t.Errorf("sequence of a later execution = %d, want 7", got)
			}
		})
	}, rules.Migrations)
}

// TestExecuteContextNames: Input.Context adds names for placeholders and
// "{{name}}" condition values, but cannot replace the execution's own.
func TestExecuteContextNames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		sc := store.Scope{TenantID: store.NewID(), OrganizationID: store.NewID(), ActorID: "user-7"}
		ctx := store.WithScope(t.Context(), sc)
		createRule(t, svc, ctx, xRule("CTX", rules.Validation, `{"operator":"AND","rules":[
			{"field":"channel","operator":"=","value":"{{channel}}"},
			{"field":"owner","operator":"=","value":"{{user.id}}"}]}`,
			`[{"type":"SHOW_INFO","config":{"message":"{{channel}} {{user.id}} {{tenant.id}} {{entityId}} {{eventType}}"}}]`, ""))
		createSet(t, svc, ctx, "CTX")
		addMember(t, svc, ctx, "CTX", "CTX", 1)
		in := orderInput(map[string]any{"channel": "web", "owner": "user-7"})
		in.Context = map[string]any{"channel": "web", "user": map[string]any{"id": "intruder"}, "entityId": "forged"}
		in.DryRun = true
		res := execSet(t, svc, ctx, "CTX", in)
		wantSummary(t, res, "CTX=SUCCESS")
		is.Equal(res.ExecutedRules[0].ActionsPlanned[0]["message"], "web user-7 "+sc.TenantID+" o-1 beforeCreate")
		in.Data = map[string]any{"channel": "web", "owner": "intruder"}
		wantSummary(t, execSet(t, svc, ctx, "CTX", in), "CTX=FAILURE")
	}, rules.Migrations)
}

// TestExecuteContextNamesForConditionsOnly: the context names are made
// for the first rule that reads them, here one without actions after one
// that reads none.
func TestExecuteContextNamesForConditionsOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		sc := store.Scope{TenantID: store.NewID(), ActorID: "user-7"}
		ctx := store.WithScope(t.Context(), sc)
		createRule(t, svc, ctx, xRule("PLAIN", rules.Validation, `{"field":"channel","operator":"=","value":"web"}`, "", ""))
		createRule(t, svc, ctx, xRule("OWNER", rules.Validation, `{"operator":"AND","rules":[
			{"field":"owner","operator":"=","value":"{{user.id}}"},
			{"field":"kind","operator":"=","value":"{{entityType}}"},
			{"field":"extra","operator":"=","value":"{{campaign}}"}]}`, "", ""))
		createSet(t, svc, ctx, "LAZY")
		addMember(t, svc, ctx, "LAZY", "PLAIN", 1)
		addMember(t, svc, ctx, "LAZY", "OWNER", 2)
		in := orderInput(map[string]any{"channel": "web", "owner": "user-7", "kind": "order", "extra": "spring"})
		in.Context = map[string]any{"campaign": "spring"}
		wantSummary(t, execSet(t, svc, ctx, "LAZY", in), "PLAIN=SUCCESS", "OWNER=SUCCESS")
		in.Data = map[string]any{"channel": "web", "owner": "user-8", "kind": "order", "extra": "spring"}
		wantSummary(t, execSet(t, svc, ctx, "LAZY", in), "PLAIN=SUCCESS", "OWNER=FAILURE")
	}, rules.Migrations)
}

// TestExecuteRuleCountLimit: Execute refuses more than 100 applicable
// rules rather than run some of them.
func TestExecuteRuleCountLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		for i := range 101 {
			in := xRule(fmt.Sprintf("MANY_%03d", i), rules.Validation, condOpen, "", "")
			if i == 100 {
				in.EventType = "rare"
			}
			createRule(t, svc, ctx, in)
		}
		res, err := svc.Execute(ctx, rules.Input{EntityType: "order", EventType: "common", Data: openData()})
		is.NoErr(err)
		is.Equal(len(res.ExecutedRules), 100)
		is.Equal(len(res.LogIDs), 100)
		_, err = svc.Execute(ctx, rules.Input{EntityType: "order", Data: openData()})
		wantIs(t, err, store.ErrInvalid)
		is.True(store.PublicMessage(err) != "")
		is.Equal(countLogs(t, db, sc.TenantID), 100) // the refused one wrote nothing
	}, rules.Migrations)
}
