package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The execution routes (a set, the rules of an entity type, one rule) and
// the execution log. Like rules_test.go, every test makes its own tenants,
// so on PostgreSQL (one schema for the package) the log and the events
// tables only ever show the test's own rows for its tenants.

const (
	execBase = "/api/business_rules/execute"
	logsBase = "/api/business_rules/logs"
)

func setExecPath(setID string) string { return setsBase + "/" + setID + "/execute" }
func ruleExecPath(id string) string   { return rulesBase + "/" + id + "/execute" }

// execFeatures are every rules feature, execution and log view included.
var execFeatures = []string{rulesapi.FeatureRulesView, rulesapi.FeatureRulesCreate, rulesapi.FeatureRulesEdit, rulesapi.FeatureRulesDelete, rulesapi.FeatureRulesExecute, rulesapi.FeatureLogsView}

// act is an action {type, config}.
func act(typ string, config map[string]any) map[string]any {
	return map[string]any{"type": typ, "config": config}
}

// leaf is a one-comparison condition.
func leaf(field, op string, value any) map[string]any {
	return map[string]any{"field": field, "operator": op, "value": value}
}

// execRule is a valid rule body of a type, entity type and event type, with
// its condition and action lists; edits change it further.
func execRule(ruleID, typ, entityType, eventType string, cond any, success, failure []any, edits ...func(map[string]any)) map[string]any {
	b := ruleBody(ruleID, withField("ruleType", typ), withField("entityType", entityType), withField("eventType", eventType),
		withField("conditionExpression", cond), withField("successActions", success), withField("failureActions", failure))
	for _, edit := range edits {
		edit(b)
	}
	return b
}

// logRowCount counts the tenant's execution log rows in the database.
func (e *testEnv) logRowCount(tenantID string) int {
	e.t.Helper()
	var n int
	if err := e.kit.DB.QueryRow(e.t.Context(), `SELECT COALESCE(sum(rule_count), 0) FROM business_rule_executions WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// eventCount counts the tenant's rows in store_events.
func (e *testEnv) eventCount(tenantID string) int {
	e.t.Helper()
	var n int
	if err := e.kit.DB.QueryRow(e.t.Context(), `SELECT count(*) FROM store_events WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// keysOf returns m's keys, sorted.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// expectKeys fails unless m has exactly keys.
func expectKeys(t testing.TB, what string, m map[string]any, keys ...string) {
	t.Helper()
	if got, want := keysOf(m), sorted(keys); !slices.Equal(got, want) {
		t.Errorf("%s has keys %v, want %v", what, got, want)
	}
}

// ruleWant is one expected executedRules entry. Rule names are "Rule <id>"
// (ruleBody).
type ruleWant struct {
	id, typ string
	seq     int    // the member's sequence; 0 outside set executions
	result  string // SUCCESS, FAILURE or SKIPPED
	cond    bool
	planned []any  // the planned actions, resolved; nil is none
	reason  string // SKIPPED only
}

// execWant is an expected execution result.
type execWant struct {
	setID, setName string // set executions only
	allowed        bool
	dry            bool
	data           map[string]any // the data afterwards (not in a dry run)
	rules          []ruleWant
}

// skipped is a SKIPPED entry.
func skipped(id, typ string, seq int, reason string) ruleWant {
	return ruleWant{id: id, typ: typ, seq: seq, result: "SKIPPED", reason: reason}
}

// checkExec checks a 200 execution response exactly, field by field, and
// returns the body and the entries' log ids (in order).
func checkExec(t testing.TB, r *response, want execWant) (map[string]any, []string) {
	t.Helper()
	r.expect(200)
	body := r.JSON()
	entries, ok := body["executedRules"].([]any)
	if !ok {
		t.Fatalf("executedRules is not an array: %s", r.Body)
	}
	ids := make([]string, len(entries))
	for i, en := range entries {
		ids[i], _ = en.(map[string]any)["ruleId"].(string)
	}
	if len(entries) != len(want.rules) {
		t.Fatalf("executedRules %v, want %d entries; body: %s", ids, len(want.rules), r.Body)
	}
	var logIDs []string
	for i, en := range entries {
		got := en.(map[string]any)
		w := want.rules[i]
		exp := map[string]any{"ruleId": w.id, "ruleName": "Rule " + w.id, "ruleType": w.typ, "result": w.result}
		if w.seq != 0 {
			exp["sequence"] = w.seq
		}
		if w.result == "SKIPPED" {
			exp["reason"] = w.reason
		} else {
			if ms, isNum := got["executionTimeMs"].(float64); !isNum || ms < 0 || ms > 60_000 {
				t.Errorf("executedRules[%d].executionTimeMs %v, want a number of milliseconds", i, got["executionTimeMs"])
			}
			exp["executionTimeMs"] = got["executionTimeMs"]
			exp["conditionResult"] = w.cond
			planned := w.planned
			if planned == nil {
				planned = []any{}
			}
			exp["actionsPlanned"] = planned
			if !want.dry {
				executed := []any{}
				for _, p := range planned {
					executed = append(executed, map[string]any{"type": p.(map[string]any)["type"], "success": true})
				}
				// Without planned actions the key is left out (see
				// TestRuleExecutionEmptyFields); otherwise it is exact.
				if _, present := got["actionsExecuted"]; present || len(executed) > 0 {
					exp["actionsExecuted"] = executed
				}
				id, _ := got["logId"].(string)
				if !store.IsID(id) {
					t.Errorf("executedRules[%d].logId %v, want a UUID", i, got["logId"])
				}
				exp["logId"] = got["logId"]
				logIDs = append(logIDs, id)
			}
		}
		sameJSON(t, fmt.Sprintf("executedRules[%d] (%s)", i, w.id), got, exp)
	}
	keys := []string{"allowed", "executedRules", "totalExecutionTimeMs"}
	if want.setID != "" {
		keys = append(keys, "setId", "setName")
		sameJSON(t, "setId", body["setId"], want.setID)
		sameJSON(t, "setName", body["setName"], want.setName)
	}
	if !want.dry {
		// A non-dry result always has data and logIds, even empty.
		keys = append(keys, "data", "logIds")
		if want.data == nil {
			want.data = map[string]any{}
		}
		sameJSON(t, "data", body["data"], want.data)
		if logIDs == nil {
			logIDs = []string{}
		}
		sameJSON(t, "logIds", body["logIds"], logIDs)
	}
	expectKeys(t, "execution result", body, keys...)
	if body["allowed"] != want.allowed {
		t.Errorf("allowed %v, want %v", body["allowed"], want.allowed)
	}
	if ms, isNum := body["totalExecutionTimeMs"].(float64); !isNum || ms < 0 || ms > 60_000 {
		t.Errorf("totalExecutionTimeMs %v, want a number of milliseconds", body["totalExecutionTimeMs"])
	}
	return body, logIDs
}

// expectRulesAPIInvalid checks the rules API's 400 {error: "Validation
// failed", details} naming exactly fields.
func expectRulesAPIInvalid(t testing.TB, r *response, fields ...string) map[string]any {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 naming %v; body: %s", r.Status, fields, r.Body)
	}
	body := r.JSON()
	if body["error"] != "Validation failed" {
		t.Fatalf("error %v, want \"Validation failed\"; body: %s", body["error"], r.Body)
	}
	expectKeys(t, "400 body", body, "error", "details")
	details, _ := body["details"].(map[string]any)
	expectKeys(t, "400 details", details, fields...)
	for _, f := range fields {
		if msg, _ := details[f].(string); msg == "" {
			t.Errorf("details.%s is %v, want a message", f, details[f])
		}
	}
	return details
}

// expectForbiddenFeature checks the 403 {error, required, requiredFeatures}
// for a missing feature.
func expectForbiddenFeature(t testing.TB, r *response, feature string) {
	t.Helper()
	if r.Status != http.StatusForbidden {
		t.Fatalf("status %d, want 403 (missing %s); body: %s", r.Status, feature, r.Body)
	}
	sameJSON(t, "403 body", r.JSON(), map[string]any{"error": "Forbidden", "required": []string{feature}, "requiredFeatures": []string{feature}})
}

// expectBody checks the status and the exact JSON body.
func expectBody(t testing.TB, r *response, status int, want map[string]any) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d %v; body: %s", r.Status, status, want, r.Body)
	}
	sameJSON(t, fmt.Sprintf("%d body", status), r.JSON(), want)
}

// orderFlowRequest is a set execution request of an order.
func orderRequest(entityID string, data map[string]any, dry bool) map[string]any {
	return map[string]any{"entityType": "order", "entityId": entityID, "eventType": "beforeCreate", "data": data, "dryRun": dry}
}

func TestRuleSetExecute(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, execFeatures...)
		none := e.newKey(acme) // executing a set needs authentication only

		e.createRule(admin, execRule("CALC-1", "CALCULATION", "order", "beforeCreate", leaf("total", ">", 0),
			[]any{act("SET_FIELD", map[string]any{"field": "discount", "value": 10}),
				act("SHOW_INFO", map[string]any{"message": "Discount for {{orderId}} via {{channel}}"})},
			[]any{}))
		guard := e.createRule(admin, ruleBody("GUARD-1")) // the spec's GUARD: BLOCK_TRANSITION and SHOW_ERROR on failure
		e.createRule(admin, execRule("VAL-1", "VALIDATION", "order", "beforeCreate", leaf("discount", "=", 10),
			[]any{}, []any{act("SHOW_ERROR", map[string]any{"message": "No discount on {{orderId}}"})}))
		e.createRule(admin, execRule("OFF-1", "VALIDATION", "order", "beforeCreate", leaf("total", ">", 0), []any{}, []any{}))
		e.createRule(admin, ruleBody("DISABLED-1", withField("ruleType", "VALIDATION"), withField("enabled", false)))
		e.createRule(admin, ruleBody("INVOICE-1", withField("ruleType", "VALIDATION"), withField("entityType", "invoice")))
		e.createSet(admin, "ORDER_FLOW", "Order flow")
		// Added out of order: the execution follows the sequence.
		e.addMember(admin, "ORDER_FLOW", "VAL-1", 30)
		e.addMember(admin, "ORDER_FLOW", "INVOICE-1", 50)
		e.addMember(admin, "ORDER_FLOW", "GUARD-1", 20)
		e.addMember(admin, "ORDER_FLOW", "DISABLED-1", 40)
		e.addMember(admin, "ORDER_FLOW", "CALC-1", 10)
		// A disabled member is not run and not listed.
		e.do("POST", setsBase+"/ORDER_FLOW/members", admin, map[string]any{"ruleId": "OFF-1", "sequence": 5, "enabled": false}).expect(201)

		flow := func(dry bool, data map[string]any, rules ...ruleWant) execWant {
			return execWant{setID: "ORDER_FLOW", setName: "Order flow", allowed: true, dry: dry, data: data, rules: rules}
		}
		calcPlanned := func(msg string) []any {
			return []any{map[string]any{"type": "SET_FIELD", "field": "discount", "value": 10},
				map[string]any{"type": "SHOW_INFO", "severity": "info", "message": msg}}
		}
		allowPlanned := []any{map[string]any{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Order accepted"}}
		blockPlanned := func(orderID string) []any {
			return []any{map[string]any{"type": "BLOCK_TRANSITION", "allowed": false, "message": "Order " + orderID + " is too small"},
				map[string]any{"type": "SHOW_ERROR", "severity": "error", "message": "Minimum total is 100"}}
		}
		disabledSkip := skipped("DISABLED-1", "VALIDATION", 40, "Rule is disabled")
		invoiceSkip := skipped("INVOICE-1", "VALIDATION", 50, "Rule applies to entity type invoice, not order")
		blocked := "Previous rule blocked execution"
		logsBefore := e.logRowCount(acme.ID)
		if logsBefore != 0 {
			t.Fatalf("%d log rows before any execution", logsBefore)
		}

		t.Run("passing guard, SET_FIELD feeds later rules", func(t *testing.T) {
			e := e.with(t)
			req := orderRequest("o-1", map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1"}, false)
			req["context"] = map[string]any{"channel": "web"}
			_, logIDs := checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), flow(false,
				map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1", "discount": 10},
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "SUCCESS", cond: true, planned: calcPlanned("Discount for o-1 via web")},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "SUCCESS", cond: true, planned: allowPlanned},
				ruleWant{id: "VAL-1", typ: "VALIDATION", seq: 30, result: "SUCCESS", cond: true},
				disabledSkip, invoiceSkip))
			if n := e.logRowCount(acme.ID); n != 3 {
				t.Errorf("%d log rows after the execution, want 3 (one per evaluated rule)", n)
			}
			if len(logIDs) != 3 {
				t.Fatalf("log ids %v", logIDs)
			}
			// Each row's input is the data as its rule saw it.
			calc := e.do("GET", logsBase+"/"+logIDs[0], admin, nil).expect(200).JSON()
			sameJSON(t, "CALC-1 input data", calc["inputContext"].(map[string]any)["data"], map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1"})
			sameJSON(t, "CALC-1 setId", calc["setId"], "ORDER_FLOW")
			g := e.do("GET", logsBase+"/"+logIDs[1], admin, nil).expect(200).JSON()
			sameJSON(t, "GUARD-1 input data", g["inputContext"].(map[string]any)["data"], map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1", "discount": 10})
			sameJSON(t, "GUARD-1 rule", []any{g["ruleId"], g["ruleUuid"], g["result"]}, []any{"GUARD-1", guard["id"], "SUCCESS"})
		})

		t.Run("dry run plans, changes nothing", func(t *testing.T) {
			e := e.with(t)
			logs, events := e.logRowCount(acme.ID), e.eventCount(acme.ID)
			req := orderRequest("o-1", map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1"}, true)
			req["context"] = map[string]any{"channel": "web"}
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), flow(true, nil,
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "SUCCESS", cond: true, planned: calcPlanned("Discount for o-1 via web")},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "SUCCESS", cond: true, planned: allowPlanned},
				// The SET_FIELD was only planned: VAL-1 sees no discount.
				ruleWant{id: "VAL-1", typ: "VALIDATION", seq: 30, result: "FAILURE", cond: false,
					planned: []any{map[string]any{"type": "SHOW_ERROR", "severity": "error", "message": "No discount on o-1"}}},
				disabledSkip, invoiceSkip))
			if l, ev := e.logRowCount(acme.ID), e.eventCount(acme.ID); l != logs || ev != events {
				t.Errorf("a dry run wrote to the database: log rows %d -> %d, events %d -> %d", logs, l, events, ev)
			}
		})

		t.Run("blocking guard skips the rest", func(t *testing.T) {
			e := e.with(t)
			logs := e.logRowCount(acme.ID)
			data := map[string]any{"status": "DRAFT", "total": 0, "orderId": "o-2"}
			w := flow(false, data,
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "FAILURE", cond: false},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "FAILURE", cond: false, planned: blockPlanned("o-2")},
				skipped("VAL-1", "VALIDATION", 30, blocked),
				skipped("DISABLED-1", "VALIDATION", 40, blocked),
				skipped("INVOICE-1", "VALIDATION", 50, blocked))
			w.allowed = false
			_, logIDs := checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, orderRequest("o-2", data, false)), w)
			if n := e.logRowCount(acme.ID); n != logs+2 || len(logIDs) != 2 {
				t.Errorf("log rows %d -> %d and log ids %v, want 2 more (skipped rules are not logged)", logs, n, logIDs)
			}
		})

		t.Run("blocking guard in a dry run", func(t *testing.T) {
			e := e.with(t)
			logs := e.logRowCount(acme.ID)
			// Without context, {{channel}} stays as written.
			w := flow(true, nil,
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "SUCCESS", cond: true, planned: calcPlanned("Discount for o-3 via {{channel}}")},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "FAILURE", cond: false, planned: blockPlanned("o-3")},
				skipped("VAL-1", "VALIDATION", 30, blocked),
				skipped("DISABLED-1", "VALIDATION", 40, blocked),
				skipped("INVOICE-1", "VALIDATION", 50, blocked))
			w.allowed = false
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, orderRequest("o-3", map[string]any{"status": "DRAFT", "total": 150, "orderId": "o-3"}, true)), w)
			if n := e.logRowCount(acme.ID); n != logs {
				t.Errorf("a dry run wrote log rows: %d -> %d", logs, n)
			}
		})

		t.Run("errors", func(t *testing.T) {
			e := e.with(t)
			is := is.New(t)
			ok := orderRequest("o-1", map[string]any{"total": 1}, true)
			// Unknown set, ids are case-sensitive.
			body := expectSetError(t, e.do("POST", setExecPath("NO_SUCH_SET"), none, ok), 404, "SET_NOT_FOUND")
			is.Equal(len(body), 2) // {error, code}
			body = expectSetError(t, e.do("POST", setExecPath("order_flow"), none, ok), 404, "SET_NOT_FOUND")
			is.Equal(len(body), 2)

			// Validation: every missing field is named.
			details := expectSetInvalid(t, e.do("POST", setExecPath("ORDER_FLOW"), none, map[string]any{}), "entityType", "entityId", "eventType", "data")
			is.Equal(len(details), 4)
			for _, field := range []string{"entityType", "entityId", "eventType", "data"} {
				req := orderRequest("o-1", map[string]any{"total": 1}, true)
				delete(req, field)
				details := expectSetInvalid(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), field)
				is.Equal(keysOf(details), []string{field})
				if field != "data" {
					req[field] = "   "
					details = expectSetInvalid(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), field)
					is.Equal(keysOf(details), []string{field})
				}
			}
			req := orderRequest("o-1", nil, true) // data: null
			is.Equal(keysOf(expectSetInvalid(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), "data")), []string{"data"})
			// An empty object is data.
			w := flow(true, nil,
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "FAILURE", cond: false},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "FAILURE", cond: false, planned: blockPlanned("{{orderId}}")},
				skipped("VAL-1", "VALIDATION", 30, blocked), skipped("DISABLED-1", "VALIDATION", 40, blocked), skipped("INVOICE-1", "VALIDATION", 50, blocked))
			w.allowed = false
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, orderRequest("o-1", map[string]any{}, true)), w)

			// Without a valid credential: 401 UNAUTHORIZED.
			is.Equal(len(expectSetError(t, e.do("POST", setExecPath("ORDER_FLOW"), "", ok), 401, "UNAUTHORIZED")), 2)
			expectSetError(t, e.do("POST", setExecPath("ORDER_FLOW"), "tk_test"+randomHex(24), ok), 401, "UNAUTHORIZED")
			// The documented credential form.
			e.send("POST", setExecPath("ORDER_FLOW"), ok, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+none) }).expect(200)

			// A disabled set cannot be executed, dry or not.
			e.do("PATCH", setsBase+"/ORDER_FLOW", admin, map[string]any{"enabled": false}).expect(200)
			expectBody(t, e.do("POST", setExecPath("ORDER_FLOW"), none, ok), 409, map[string]any{"error": "Rule set is disabled", "code": "SET_DISABLED"})
			expectBody(t, e.do("POST", setExecPath("ORDER_FLOW"), none, orderRequest("o-1", map[string]any{"total": 1}, false)), 409,
				map[string]any{"error": "Rule set is disabled", "code": "SET_DISABLED"})
			e.do("PATCH", setsBase+"/ORDER_FLOW", admin, map[string]any{"enabled": true}).expect(200)
			e.do("POST", setExecPath("ORDER_FLOW"), none, ok).expect(200)

			// An empty set runs nothing and allows.
			e.createSet(admin, "EMPTY", "Empty")
			checkExec(t, e.do("POST", setExecPath("EMPTY"), none, ok), execWant{setID: "EMPTY", setName: "Empty", allowed: true, dry: true})
		})

		t.Run("changes show in the next execution", func(t *testing.T) {
			e := e.with(t)
			req := orderRequest("o-4", map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-4"}, true)
			// A member disabled, a rule's actions changed, a member moved.
			e.do("PATCH", setsBase+"/ORDER_FLOW/members/VAL-1", admin, map[string]any{"enabled": false}).expect(200)
			e.do("PUT", rulesBase, admin, ruleBody("GUARD-1", withField("id", guard["id"]),
				withField("successActions", []any{act("ALLOW_TRANSITION", map[string]any{"message": "Welcome {{orderId}}"})}))).expect(200)
			e.do("PATCH", setsBase+"/ORDER_FLOW/members/INVOICE-1", admin, map[string]any{"sequence": 1}).expect(200)
			e.do("PATCH", setsBase+"/ORDER_FLOW", admin, map[string]any{"name": "Order flow v2"}).expect(200)
			w := flow(true, nil,
				skipped("INVOICE-1", "VALIDATION", 1, "Rule applies to entity type invoice, not order"),
				ruleWant{id: "CALC-1", typ: "CALCULATION", seq: 10, result: "SUCCESS", cond: true, planned: calcPlanned("Discount for o-4 via {{channel}}")},
				ruleWant{id: "GUARD-1", typ: "GUARD", seq: 20, result: "SUCCESS", cond: true,
					planned: []any{map[string]any{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Welcome o-4"}}},
				disabledSkip)
			w.setName = "Order flow v2"
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), w)
			// A removed member is gone; the rule stays.
			e.do("DELETE", setsBase+"/ORDER_FLOW/members/DISABLED-1", admin, nil).expect(204)
			e.do("DELETE", setsBase+"/ORDER_FLOW/members/INVOICE-1", admin, nil).expect(204)
			w.rules = w.rules[1:3]
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), w)
			// A deleted rule leaves its sets.
			e.do("DELETE", rulesBase+"?id="+guard["id"].(string), admin, nil).expect(204)
			w.rules = w.rules[:1]
			checkExec(t, e.do("POST", setExecPath("ORDER_FLOW"), none, req), w)
		})
	})
}

func TestRulesExecuteByEntity(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, execFeatures...)
		runner := e.newKey(acme, rulesapi.FeatureRulesExecute)

		plain := func(id string, priority int, event string, edits ...func(map[string]any)) {
			e.createRule(admin, execRule(id, "VALIDATION", "invoice", event, leaf("amount", ">", 0), []any{}, []any{},
				append([]func(map[string]any){withField("priority", priority)}, edits...)...))
		}
		plain("INV-TIE-B", 100, "afterUpdate")
		plain("INV-LOW", 10, "")
		plain("INV-HIGH", 500, "afterUpdate")
		plain("INV-TIE-A", 100, "afterUpdate")
		plain("INV-CREATE", 900, "beforeCreate")
		plain("INV-OFF", 999, "afterUpdate", withField("enabled", false))
		plain("INV-FUTURE", 800, "", withField("effectiveFrom", "2999-01-01"))
		plain("INV-EXPIRED", 700, "", withField("effectiveFrom", "2019-01-01"), withField("effectiveTo", "2020-01-01"))
		e.createRule(admin, execRule("INV-GUARD", "GUARD", "invoice", "afterUpdate", leaf("amount", ">", 100),
			[]any{act("ALLOW_TRANSITION", map[string]any{})},
			[]any{act("BLOCK_TRANSITION", map[string]any{"message": "Amount {{amount}} of {{entityId}} needs approval"})},
			withField("priority", 300)))
		e.createRule(admin, ruleBody("ORDER-1", withField("priority", 999))) // another entity type

		evaluated := func(id string) ruleWant {
			return ruleWant{id: id, typ: "VALIDATION", result: "SUCCESS", cond: true}
		}
		blocked := "Previous rule blocked execution"
		allow := ruleWant{id: "INV-GUARD", typ: "GUARD", result: "SUCCESS", cond: true,
			planned: []any{map[string]any{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Transition allowed"}}}
		block := func(amount, entity string) ruleWant {
			return ruleWant{id: "INV-GUARD", typ: "GUARD", result: "FAILURE", cond: false,
				planned: []any{map[string]any{"type": "BLOCK_TRANSITION", "allowed": false, "message": "Amount " + amount + " of " + entity + " needs approval"}}}
		}

		// Highest priority first, ties by ruleId; the event's rules and
		// those of every event; no disabled, other-entity or out-of-window
		// rules; no set fields or sequences.
		req := map[string]any{"entityType": "invoice", "entityId": "inv-1", "eventType": "afterUpdate", "data": map[string]any{"amount": 500}}
		logs := e.logRowCount(acme.ID)
		_, logIDs := checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: true, data: map[string]any{"amount": 500}, rules: []ruleWant{
			evaluated("INV-HIGH"), allow, evaluated("INV-TIE-A"), evaluated("INV-TIE-B"), evaluated("INV-LOW")}})
		is.Equal(len(logIDs), 5)
		is.Equal(e.logRowCount(acme.ID), logs+5)
		row := e.do("GET", logsBase+"/"+logIDs[4], admin, nil).expect(200).JSON()
		_, hasSet := row["setId"]
		is.True(!hasSet) // not a set execution
		sameJSON(t, "log row entity", []any{row["ruleId"], row["entityType"], row["entityId"], row["eventType"]}, []any{"INV-LOW", "invoice", "inv-1", "afterUpdate"})

		// A GUARD that blocks skips the rest, which carry no sequence.
		req["data"], req["dryRun"] = map[string]any{"amount": 5}, true
		checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: false, dry: true, rules: []ruleWant{
			evaluated("INV-HIGH"), block("5", "inv-1"), skipped("INV-TIE-A", "VALIDATION", 0, blocked),
			skipped("INV-TIE-B", "VALIDATION", 0, blocked), skipped("INV-LOW", "VALIDATION", 0, blocked)}})
		// Without an event type every enabled rule of the entity type runs.
		delete(req, "eventType")
		delete(req, "entityId")
		checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: false, dry: true, rules: []ruleWant{
			evaluated("INV-CREATE"), evaluated("INV-HIGH"), block("5", "{{entityId}}"), skipped("INV-TIE-A", "VALIDATION", 0, blocked),
			skipped("INV-TIE-B", "VALIDATION", 0, blocked), skipped("INV-LOW", "VALIDATION", 0, blocked)}})
		// Another event: its rules and those of every event.
		req["eventType"] = "beforeCreate"
		checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: true, dry: true, rules: []ruleWant{
			evaluated("INV-CREATE"), evaluated("INV-LOW")}})
		// An entity type without rules.
		req["entityType"] = "nothing"
		checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: true, dry: true})
		// A changed priority shows in the next execution.
		e.do("PUT", rulesBase, admin, execRule("INV-LOW", "VALIDATION", "invoice", "", leaf("amount", ">", 0), []any{}, []any{},
			withField("id", e.do("GET", rulesBase+"?ruleId=INV-LOW", admin, nil).expect(200).JSON()["data"].([]any)[0].(map[string]any)["id"]),
			withField("priority", 9999))).expect(200)
		req["entityType"] = "invoice"
		checkExec(t, e.do("POST", execBase, runner, req), execWant{allowed: true, dry: true, rules: []ruleWant{
			evaluated("INV-LOW"), evaluated("INV-CREATE")}})

		// Validation: entityType and data are required, nothing else.
		is.Equal(len(expectRulesAPIInvalid(t, e.do("POST", execBase, runner, map[string]any{}), "entityType", "data")), 2)
		expectRulesAPIInvalid(t, e.do("POST", execBase, runner, map[string]any{"data": map[string]any{}}), "entityType")
		expectRulesAPIInvalid(t, e.do("POST", execBase, runner, map[string]any{"entityType": " ", "data": map[string]any{}}), "entityType")
		expectRulesAPIInvalid(t, e.do("POST", execBase, runner, map[string]any{"entityType": "invoice"}), "data")
		expectRulesAPIInvalid(t, e.do("POST", execBase, runner, map[string]any{"entityType": "invoice", "data": nil}), "data")
		checkExec(t, e.do("POST", execBase, runner, map[string]any{"entityType": "nothing", "data": map[string]any{}}), execWant{allowed: true, data: map[string]any{}})
		// Without a credential: 401.
		if r := e.do("POST", execBase, "", req); r.Status != 401 {
			t.Errorf("no credential: %d %s, want 401", r.Status, r.Body)
		}
	})
}

func TestRuleExecuteOne(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, execFeatures...)
		runner := e.newKey(acme, rulesapi.FeatureRulesExecute)
		rule := e.createRule(admin, ruleBody("ONE-1")) // GUARD, order, beforeCreate
		id := rule["id"].(string)

		allow := ruleWant{id: "ONE-1", typ: "GUARD", result: "SUCCESS", cond: true,
			planned: []any{map[string]any{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Order accepted"}}}
		good := map[string]any{"status": "ACTIVE", "total": 150, "orderId": "o-1"}

		// Only data is needed: the entity type is the rule's.
		_, logIDs := checkExec(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good}),
			execWant{allowed: true, data: good, rules: []ruleWant{allow}})
		is.Equal(len(logIDs), 1)
		row := e.do("GET", logsBase+"/"+logIDs[0], admin, nil).expect(200).JSON()
		sameJSON(t, "log row", []any{row["ruleUuid"], row["entityType"], row["entityId"], row["eventType"], row["result"]},
			[]any{id, "order", "unknown", "", "SUCCESS"})

		// A GUARD that blocks, in a dry run.
		w := execWant{allowed: false, dry: true, rules: []ruleWant{{id: "ONE-1", typ: "GUARD", result: "FAILURE", cond: false,
			planned: []any{map[string]any{"type": "BLOCK_TRANSITION", "allowed": false, "message": "Order o-2 is too small"},
				map[string]any{"type": "SHOW_ERROR", "severity": "error", "message": "Minimum total is 100"}}}}}
		checkExec(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": map[string]any{"status": "DRAFT", "total": 5, "orderId": "o-2"},
			"dryRun": true, "entityType": "order", "entityId": "o-2", "eventType": "beforeCreate"}), w)

		// Another event or entity type: SKIPPED with the reason, nothing logged.
		logs := e.logRowCount(acme.ID)
		checkExec(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good, "eventType": "afterUpdate"}),
			execWant{allowed: true, data: good, rules: []ruleWant{skipped("ONE-1", "GUARD", 0, "Rule applies to event beforeCreate, not afterUpdate")}})
		checkExec(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good, "entityType": "invoice", "dryRun": true}),
			execWant{allowed: true, dry: true, rules: []ruleWant{skipped("ONE-1", "GUARD", 0, "Rule applies to entity type order, not invoice")}})
		is.Equal(e.logRowCount(acme.ID), logs)

		// Outside the effective window.
		future := e.createRule(admin, ruleBody("ONE-FUTURE", withField("effectiveFrom", "2999-01-01")))
		checkExec(t, e.do("POST", ruleExecPath(future["id"].(string)), runner, map[string]any{"data": good, "dryRun": true}),
			execWant{allowed: true, dry: true, rules: []ruleWant{skipped("ONE-FUTURE", "GUARD", 0, "Rule is not yet effective (starts 2999-01-01T00:00:00Z)")}})
		expired := e.createRule(admin, ruleBody("ONE-EXPIRED", withField("effectiveFrom", "2019-01-01"), withField("effectiveTo", "2020-01-01")))
		checkExec(t, e.do("POST", ruleExecPath(expired["id"].(string)), runner, map[string]any{"data": good, "dryRun": true}),
			execWant{allowed: true, dry: true, rules: []ruleWant{skipped("ONE-EXPIRED", "GUARD", 0, "Rule has expired (ended 2020-01-01T00:00:00Z)")}})

		// A disabled rule is reported, not run.
		e.do("PUT", rulesBase, admin, ruleBody("ONE-1", withField("id", id), withField("enabled", false))).expect(200)
		checkExec(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good, "dryRun": true}),
			execWant{allowed: true, dry: true, rules: []ruleWant{skipped("ONE-1", "GUARD", 0, "Rule is disabled")}})

		// data is required.
		expectRulesAPIInvalid(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"dryRun": true}), "data")
		expectRulesAPIInvalid(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": "x"}), "data")
		expectRulesAPIInvalid(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good, "entityId": strings.Repeat("i", 256)}), "entityId")

		// Unknown, malformed and deleted ids: 404 {error: "Rule not found"}.
		for _, bad := range []string{"nope", store.NewID(), strings.ToUpper(store.NewID()), "%00", "%FF", id + "x", id[:35]} {
			expectRuleNotFound(t, e.do("POST", ruleExecPath(bad), runner, map[string]any{"data": good}))
			if !store.IsID(bad) {
				expectRuleNotFound(t, e.do("POST", ruleExecPath(bad), runner, "{")) // a malformed id is not found before the body is read
			}
		}
		e.do("DELETE", rulesBase+"?id="+id, admin, nil).expect(204)
		expectRuleNotFound(t, e.do("POST", ruleExecPath(id), runner, map[string]any{"data": good}))
		if r := e.do("POST", ruleExecPath(id), "", map[string]any{"data": good}); r.Status != 401 {
			t.Errorf("no credential: %d %s, want 401", r.Status, r.Body)
		}
	})
}

func TestRuleExecutionFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, execFeatures...)
		rule := e.createRule(admin, ruleBody("FEAT-1"))
		id := rule["id"].(string)
		e.createSet(admin, "FEATS", "Features")
		e.addMember(admin, "FEATS", "FEAT-1", 1)
		good := map[string]any{"status": "ACTIVE", "total": 150}
		logID := e.do("POST", ruleExecPath(id), admin, map[string]any{"data": good}).expect(200).JSON()["logIds"].([]any)[0].(string)
		entityReq := map[string]any{"entityType": "order", "data": good, "dryRun": true}
		setReq := orderRequest("o-1", good, true)

		none := e.newKey(acme)
		viewRules := e.newKey(acme, rulesapi.FeatureRulesView, rulesapi.FeatureRulesCreate, rulesapi.FeatureRulesEdit)
		execOnly := e.newKey(acme, rulesapi.FeatureRulesExecute)
		logsOnly := e.newKey(acme, rulesapi.FeatureLogsView)
		for _, key := range []string{none, viewRules, logsOnly} {
			expectForbiddenFeature(t, e.do("POST", execBase, key, entityReq), rulesapi.FeatureRulesExecute)
			expectForbiddenFeature(t, e.do("POST", ruleExecPath(id), key, map[string]any{"data": good}), rulesapi.FeatureRulesExecute)
			// The feature is checked before the id and the body.
			expectForbiddenFeature(t, e.do("POST", ruleExecPath("nope"), key, "{"), rulesapi.FeatureRulesExecute)
			expectForbiddenFeature(t, e.do("POST", execBase, key, "{"), rulesapi.FeatureRulesExecute)
		}
		for _, key := range []string{none, viewRules, execOnly} {
			expectForbiddenFeature(t, e.do("GET", logsBase, key, nil), rulesapi.FeatureLogsView)
			expectForbiddenFeature(t, e.do("GET", logsBase+"/"+logID, key, nil), rulesapi.FeatureLogsView)
			expectForbiddenFeature(t, e.do("GET", logsBase+"?result=bogus", key, nil), rulesapi.FeatureLogsView)
		}
		// Each feature is enough for its routes.
		e.do("POST", execBase, execOnly, entityReq).expect(200)
		e.do("POST", ruleExecPath(id), execOnly, map[string]any{"data": good, "dryRun": true}).expect(200)
		e.do("GET", logsBase, logsOnly, nil).expect(200)
		e.do("GET", logsBase+"/"+logID, logsOnly, nil).expect(200)
		// Executing a set needs none.
		for _, key := range []string{none, viewRules, execOnly, logsOnly} {
			e.do("POST", setExecPath("FEATS"), key, setReq).expect(200)
		}
		// A wildcard grant covers them all.
		wild := e.newKey(acme, "business_rules.*")
		e.do("POST", execBase, wild, entityReq).expect(200)
		e.do("POST", ruleExecPath(id), wild, map[string]any{"data": good, "dryRun": true}).expect(200)
		e.do("GET", logsBase+"/"+logID, wild, nil).expect(200)
		// Without a credential: 401 everywhere.
		for _, rq := range []struct {
			method, path string
			body         any
		}{{"POST", execBase, entityReq}, {"POST", ruleExecPath(id), map[string]any{"data": good}}, {"GET", logsBase, nil}, {"GET", logsBase + "/" + logID, nil}} {
			if r := e.do(rq.method, rq.path, "", rq.body); r.Status != 401 {
				t.Errorf("%s %s without a credential: %d %s, want 401", rq.method, rq.path, r.Status, r.Body)
			}
		}
	})
}

// logIDsOf returns the id of each row of a log list, in order.
func logIDsOf(t testing.TB, list map[string]any) []string {
	t.Helper()
	items, ok := list["data"].([]any)
	if !ok {
		t.Fatalf("log list without data: %v", list)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.(map[string]any)["id"].(string)
	}
	return ids
}

func TestRuleExecutionLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key, keyID := e.newKeyWithID(acme, execFeatures...)
		actor := "api_key:" + keyID
		ruleA := e.createRule(key, execRule("LOG-A", "VALIDATION", "ticket", "", leaf("priority", ">", 5),
			[]any{act("SHOW_INFO", map[string]any{"message": "Urgent {{entityId}}"})},
			[]any{act("SHOW_WARNING", map[string]any{"message": "Routine {{entityId}}"})}))
		ruleB := e.createRule(key, execRule("LOG-B", "GUARD", "ticket", "", leaf("priority", ">", 1),
			[]any{}, []any{act("BLOCK_TRANSITION", map[string]any{"message": "Too low"})}))
		e.createSet(key, "TICKETS", "Tickets")
		e.addMember(key, "TICKETS", "LOG-A", 1)
		e.addMember(key, "TICKETS", "LOG-B", 2)

		// Three executions, one row per evaluated rule, and a dry run.
		before := time.Now()
		set := e.do("POST", setExecPath("TICKETS"), key, map[string]any{"entityType": "ticket", "entityId": "T-1", "eventType": "created",
			"data": map[string]any{"priority": 9}}).expect(200).JSON()
		entity := e.do("POST", execBase, key, map[string]any{"entityType": "ticket", "entityId": "T-2", "eventType": "updated",
			"data": map[string]any{"priority": 3}}).expect(200).JSON()
		one := e.do("POST", ruleExecPath(ruleB["id"].(string)), key, map[string]any{"entityId": "T-3", "data": map[string]any{"priority": 0}}).expect(200).JSON()
		e.do("POST", setExecPath("TICKETS"), key, map[string]any{"entityType": "ticket", "entityId": "T-4", "eventType": "created",
			"data": map[string]any{"priority": 9}, "dryRun": true}).expect(200)
		after := time.Now()
		ids := func(res map[string]any) []string {
			var out []string
			for _, id := range res["logIds"].([]any) {
				out = append(out, id.(string))
			}
			return out
		}
		setIDs, entityIDs, oneIDs := ids(set), ids(entity), ids(one)
		is.Equal(len(setIDs), 2)
		is.Equal(len(entityIDs), 2)
		is.Equal(len(oneIDs), 1)
		// Newest first; the rows of one execution share executedAt, the
		// later rule first.
		newestFirst := []string{oneIDs[0], entityIDs[1], entityIDs[0], setIDs[1], setIDs[0]}

		list := e.do("GET", logsBase, key, nil).expect(200).JSON()
		expectKeys(t, "log list", list, "data", "pagination")
		is.Equal(logIDsOf(t, list), newestFirst)
		sameJSON(t, "pagination", list["pagination"], map[string]any{"page": 1, "pageSize": 20, "total": 5, "totalPages": 1})

		t.Run("row fields", func(t *testing.T) {
			rows := list["data"].([]any)
			first := rows[4].(map[string]any) // LOG-A of the set execution
			at := parseTime(t, "executedAt", first["executedAt"])
			if at.Before(before.Add(-time.Second)) || at.After(after.Add(time.Second)) {
				t.Errorf("executedAt %v, not during the execution (%v to %v)", at, before, after)
			}
			execID, _ := first["executionId"].(string)
			if !store.IsID(execID) {
				t.Errorf("executionId %v, want a UUID", first["executionId"])
			}
			entry := set["executedRules"].([]any)[0].(map[string]any)
			sameJSON(t, "set execution LOG-A row", first, map[string]any{
				"id": setIDs[0], "executionId": execID, "setId": "TICKETS", "ruleUuid": ruleA["id"], "ruleId": "LOG-A", "ruleName": "Rule LOG-A",
				"ruleType": "VALIDATION", "entityType": "ticket", "entityId": "T-1", "eventType": "created", "result": "SUCCESS",
				"inputContext": map[string]any{"data": map[string]any{"priority": 9}, "entityType": "ticket", "entityId": "T-1",
					"eventType": "created", "user": map[string]any{"id": actor}},
				"outputContext": map[string]any{"conditionResult": true,
					"actionsPlanned":  []any{map[string]any{"type": "SHOW_INFO", "severity": "info", "message": "Urgent T-1"}},
					"actionsExecuted": []any{map[string]any{"type": "SHOW_INFO", "success": true}}},
				"executionTimeMs": entry["executionTimeMs"], "executedAt": first["executedAt"],
				"tenantId": acme.ID, "organizationId": acme.OrgID, "executedBy": actor,
			})
			// The set's second row: same execution, same time.
			second := rows[3].(map[string]any)
			sameJSON(t, "LOG-B row of the set execution", []any{second["executionId"], second["executedAt"], second["ruleId"], second["result"], second["setId"]},
				[]any{execID, first["executedAt"], "LOG-B", "SUCCESS", "TICKETS"})
			sameJSON(t, "LOG-B output", second["outputContext"], map[string]any{"conditionResult": true, "actionsPlanned": []any{}, "actionsExecuted": []any{}})
			// The entity execution: another execution id, no setId.
			ent := rows[2].(map[string]any)
			if ent["executionId"] == execID || ent["executionId"] != rows[1].(map[string]any)["executionId"] {
				t.Errorf("execution ids %v %v %v: one per execution", execID, ent["executionId"], rows[1].(map[string]any)["executionId"])
			}
			expectKeys(t, "entity execution row", ent, "id", "executionId", "ruleUuid", "ruleId", "ruleName", "ruleType", "entityType", "entityId",
				"eventType", "result", "inputContext", "outputContext", "executionTimeMs", "executedAt", "tenantId", "organizationId", "executedBy")
			sameJSON(t, "entity execution LOG-A", []any{ent["ruleId"], ent["result"], ent["entityId"], ent["eventType"], ent["outputContext"]},
				[]any{"LOG-A", "FAILURE", "T-2", "updated", map[string]any{"conditionResult": false,
					"actionsPlanned":  []any{map[string]any{"type": "SHOW_WARNING", "severity": "warning", "message": "Routine T-2"}},
					"actionsExecuted": []any{map[string]any{"type": "SHOW_WARNING", "success": true}}}})
			// The single-rule execution: no event type given.
			last := rows[0].(map[string]any)
			sameJSON(t, "rule execution row", []any{last["ruleUuid"], last["ruleId"], last["ruleType"], last["result"], last["entityType"], last["entityId"], last["eventType"], last["inputContext"]},
				[]any{ruleB["id"], "LOG-B", "GUARD", "FAILURE", "ticket", "T-3", "", map[string]any{"data": map[string]any{"priority": 0},
					"entityType": "ticket", "entityId": "T-3", "eventType": "", "user": map[string]any{"id": actor}}})
			// GET by id is the list's row.
			for i, id := range newestFirst {
				sameJSON(t, "GET "+id, e.do("GET", logsBase+"/"+id, key, nil).expect(200).JSON(), rows[i])
			}
		})

		t.Run("filters", func(t *testing.T) {
			e := e.with(t)
			get := func(q string) []string {
				t.Helper()
				return logIDsOf(t, e.do("GET", logsBase+"?"+q, key, nil).expect(200).JSON())
			}
			pick := func(idx ...int) []string {
				out := []string{}
				for _, i := range idx {
					out = append(out, newestFirst[i])
				}
				return out
			}
			for _, c := range []struct {
				query string
				want  []string
			}{
				{"ruleId=LOG-A", pick(2, 4)},
				{"ruleId=LOG-B", pick(0, 1, 3)},
				{"ruleId=log-a", pick()},
				{"ruleId=" + ruleA["id"].(string), pick()}, // the business id, not the UUID
				{"entityType=ticket", pick(0, 1, 2, 3, 4)},
				{"entityType=order", pick()},
				{"entityId=T-2", pick(1, 2)},
				{"entityId=T-4", pick()}, // the dry run
				{"result=FAILURE", pick(0, 2)},
				{"result=SUCCESS", pick(1, 3, 4)},
				{"result=ERROR", pick()},
				{"ruleId=LOG-B&result=SUCCESS", pick(1, 3)},
				{"ruleId=LOG-A&entityId=T-1&entityType=ticket&result=SUCCESS", pick(4)},
				{"ruleId=%00", pick()},
				{"entityId=%FF", pick()},
			} {
				if got := get(c.query); !slices.Equal(got, c.want) {
					t.Errorf("?%s: %v, want %v", c.query, got, c.want)
				}
			}
			// executedAt bounds are inclusive, instants or whole days.
			rows := list["data"].([]any)
			atOf := func(i int) string { return rows[i].(map[string]any)["executedAt"].(string) }
			q := url.QueryEscape
			// day is the UTC date of row i's executedAt, shifted by days.
			day := func(i, days int) string {
				return parseTime(t, "executedAt", atOf(i)).UTC().AddDate(0, 0, days).Format("2006-01-02")
			}
			for _, c := range []struct {
				query string
				want  []string
			}{
				{"executedAtFrom=" + q(atOf(2)), pick(0, 1, 2)},
				{"executedAtTo=" + q(atOf(2)), pick(1, 2, 3, 4)},
				{"executedAtFrom=" + q(atOf(2)) + "&executedAtTo=" + q(atOf(1)), pick(1, 2)},
				{"executedAtFrom=" + q(atOf(0)) + "&executedAtTo=" + q(atOf(4)), pick()},
				{"executedAtFrom=" + day(4, 0) + "&executedAtTo=" + day(0, 0), pick(0, 1, 2, 3, 4)},
				{"executedAtTo=" + day(4, -1), pick()},
				{"executedAtFrom=" + day(0, 1), pick()},
				{"executedAtFrom=2020-01-01T00:00:00%2B02:00&ruleId=LOG-A", pick(2, 4)},
			} {
				if got := get(c.query); !slices.Equal(got, c.want) {
					t.Errorf("?%s: %v, want %v", c.query, got, c.want)
				}
			}
			// Bad filter values: 400 naming the parameter.
			msgResult := "must be SUCCESS, FAILURE or ERROR"
			msgDate := "must be an ISO 8601 date (2025-01-31) or date-time"
			for _, c := range []struct{ query, field, msg string }{
				{"result=SKIPPED", "result", msgResult},
				{"result=failure", "result", msgResult},
				{"result=%00", "result", msgResult},
				{"executedAtFrom=yesterday", "executedAtFrom", msgDate},
				{"executedAtFrom=2025-02-30", "executedAtFrom", msgDate},
				{"executedAtTo=2025-13-01", "executedAtTo", msgDate},
				{"executedAtTo=1700000000", "executedAtTo", msgDate},
				{"executedAtTo=%00", "executedAtTo", msgDate},
				{"page=0", "page", "must be a positive integer"},
				{"pageSize=abc", "pageSize", "must be a positive integer"},
			} {
				details := expectRulesAPIInvalid(t, e.do("GET", logsBase+"?"+c.query, key, nil), c.field)
				if details[c.field] != c.msg {
					t.Errorf("?%s: details.%s %q, want %q", c.query, c.field, details[c.field], c.msg)
				}
			}
		})

		t.Run("pagination", func(t *testing.T) {
			e := e.with(t)
			page := func(q string) (map[string]any, []string) {
				t.Helper()
				l := e.do("GET", logsBase+"?"+q, key, nil).expect(200).JSON()
				return l["pagination"].(map[string]any), logIDsOf(t, l)
			}
			for _, c := range []struct {
				query string
				want  []string
				pages map[string]any
			}{
				{"pageSize=2", newestFirst[:2], map[string]any{"page": 1, "pageSize": 2, "total": 5, "totalPages": 3}},
				{"pageSize=2&page=2", newestFirst[2:4], map[string]any{"page": 2, "pageSize": 2, "total": 5, "totalPages": 3}},
				{"pageSize=2&page=3", newestFirst[4:], map[string]any{"page": 3, "pageSize": 2, "total": 5, "totalPages": 3}},
				{"pageSize=2&page=4", []string{}, map[string]any{"page": 4, "pageSize": 2, "total": 5, "totalPages": 3}},
				{"pageSize=1000", newestFirst, map[string]any{"page": 1, "pageSize": 100, "total": 5, "totalPages": 1}},
				{"ruleId=LOG-B&pageSize=1&page=2", newestFirst[1:2], map[string]any{"page": 2, "pageSize": 1, "total": 3, "totalPages": 3}},
				{"ruleId=NONE", []string{}, map[string]any{"page": 1, "pageSize": 20, "total": 0, "totalPages": 0}},
			} {
				p, ids := page(c.query)
				sameJSON(t, "?"+c.query+" pagination", p, c.pages)
				if !slices.Equal(ids, c.want) {
					t.Errorf("?%s: %v, want %v", c.query, ids, c.want)
				}
			}
			// More than a default page: 11 executions of two rules.
			for i := range 11 {
				e.do("POST", execBase, key, map[string]any{"entityType": "ticket", "entityId": fmt.Sprintf("B-%d", i), "data": map[string]any{"priority": 9}}).expect(200)
			}
			p, ids := page("")
			sameJSON(t, "default page", p, map[string]any{"page": 1, "pageSize": 20, "total": 27, "totalPages": 2})
			is.Equal(len(ids), 20)
			p, ids2 := page("page=2")
			sameJSON(t, "second page", p, map[string]any{"page": 2, "pageSize": 20, "total": 27, "totalPages": 2})
			is.Equal(ids2[2:], newestFirst)
			all := append(slices.Clone(ids), ids2...)
			is.Equal(len(all), 27)
			// The newest row is the last execution's later rule.
			newest := e.do("GET", logsBase+"?pageSize=1", key, nil).expect(200).JSON()["data"].([]any)[0].(map[string]any)
			sameJSON(t, "newest row", []any{newest["entityId"], newest["eventType"], newest["ruleId"]}, []any{"B-10", "", "LOG-B"})
		})

		t.Run("unknown ids", func(t *testing.T) {
			e := e.with(t)
			for _, bad := range []string{store.NewID(), "nope", "%00", "%FF", strings.Repeat("a", 1000), setIDs[0] + "x", strings.ToUpper(setIDs[0])} {
				expectBody(t, e.do("GET", logsBase+"/"+bad, key, nil), 404, map[string]any{"error": "Log entry not found"})
			}
		})
	})
}

func TestRuleExecutionLogRedaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, execFeatures...)
		e.createRule(key, execRule("REDACT-1", "VALIDATION", "account", "updated", leaf("plan", "=", "pro"),
			[]any{act("SET_FIELD", map[string]any{"field": "profile.sessionToken", "value": "new-session-secret"})}, []any{}))
		e.createRule(key, execRule("REDACT-2", "VALIDATION", "account", "updated", leaf("plan", "=", "pro"), []any{}, []any{},
			withField("priority", 1)))
		data := map[string]any{
			"plan":       "pro",
			"password":   "hunter2",
			"token":      "tok-123",
			"apiKey":     "key-123",
			"cardNumber": "4111 1111 1111 1111",
			"card":       "4111111111111111", // a card number by its value
			"phone":      "+1 555 0100",
			"ref":        "1234 5678",
			"profile":    map[string]any{"name": "Ann", "api_key": "k2", "Password": "p2"},
			"items":      []any{map[string]any{"sku": "A-1", "secret": "s1"}},
		}
		redacted := map[string]any{
			"plan": "pro", "password": "[REDACTED]", "token": "[REDACTED]", "apiKey": "[REDACTED]", "cardNumber": "[REDACTED]",
			"card": "[REDACTED]", "phone": "+1 555 0100", "ref": "1234 5678",
			"profile": map[string]any{"name": "Ann", "api_key": "[REDACTED]", "Password": "[REDACTED]"},
			"items":   []any{map[string]any{"sku": "A-1", "secret": "[REDACTED]"}},
		}
		res := e.do("POST", execBase, key, map[string]any{"entityType": "account", "entityId": "acc-1", "eventType": "updated", "data": data}).expect(200).JSON()
		logIDs := res["logIds"].([]any)
		if len(logIDs) != 2 {
			t.Fatalf("logIds %v", res["logIds"])
		}
		// The caller gets its own data back, with the SET_FIELD applied.
		want := asJSON(t, data).(map[string]any)
		want["profile"].(map[string]any)["sessionToken"] = "new-session-secret"
		sameJSON(t, "response data", res["data"], want)

		row := e.do("GET", logsBase+"/"+logIDs[0].(string), key, nil).expect(200).JSON()
		sameJSON(t, "REDACT-1 inputContext", row["inputContext"], map[string]any{"data": redacted, "entityType": "account", "entityId": "acc-1",
			"eventType": "updated", "user": row["inputContext"].(map[string]any)["user"]})
		// The second rule saw the SET_FIELD: the new secret is redacted too.
		redacted["profile"].(map[string]any)["sessionToken"] = "[REDACTED]"
		row2 := e.do("GET", logsBase+"/"+logIDs[1].(string), key, nil).expect(200).JSON()
		sameJSON(t, "REDACT-2 input data", row2["inputContext"].(map[string]any)["data"], redacted)
		// The list shows the same.
		list := e.do("GET", logsBase+"?ruleId=REDACT-1", key, nil).expect(200).JSON()["data"].([]any)
		sameJSON(t, "listed REDACT-1 row", list, []any{row})

		// No secret is stored at all: not in the execution's input, nor in
		// the inputs its rule rows hold (the elements of its rules column;
		// REDACT-2 saw the SET_FIELD and has its own).
		var input, ruleRows string
		if err := e.kit.DB.QueryRow(t.Context(), `SELECT CAST(input_context AS TEXT), CAST(rules AS TEXT)
			FROM business_rule_executions WHERE tenant_id = $1`, acme.ID).Scan(&input, &ruleRows); err != nil {
			t.Fatal(err)
		}
		var elements [][]any
		if err := json.Unmarshal([]byte(ruleRows), &elements); err != nil || len(elements) != 2 {
			t.Fatalf("rules column %s: %v", ruleRows, err)
		}
		own, _ := elements[1][5].(string)
		if elements[0][5] != nil || !strings.Contains(own, "sessionToken") {
			t.Errorf("want only REDACT-2 with an input of its own: %s", ruleRows)
		}
		for _, stored := range []string{input, own} {
			for _, secret := range []string{"hunter2", "tok-123", "key-123", "4111", "k2", "p2", "s1", "new-session-secret"} {
				if strings.Contains(stored, secret) {
					t.Errorf("a stored input holds %q: %s", secret, stored)
				}
			}
		}
	})
}

func TestRuleExecutionDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, execFeatures...)
		ship := e.createRule(key, execRule("SHIP-1", "ACTION", "shipment", "packed", leaf("weight", ">", 10), []any{
			act("NOTIFY", map[string]any{"recipients": "ops@acme.test, {{owner}}", "subject": "Shipment {{entityId}}", "message": "Heavy: {{weight}} kg"}),
			act("EMIT_EVENT", map[string]any{"eventName": "shipment.heavy", "payload": map[string]any{"weight": "{{weight}}", "id": "{{entityId}}"}}),
			act("SET_FIELD", map[string]any{"field": "handling.heavy", "value": true}),
			act("LOG", map[string]any{"message": "heavy shipment", "level": "warn"}),
		}, []any{}))
		hook := e.createRule(key, execRule("HOOK-1", "ACTION", "shipment", "packed", leaf("weight", ">", 10), []any{
			act("CALL_WEBHOOK", map[string]any{"url": "https://hooks.acme.test/ship/{{entityId}}", "body": map[string]any{"id": "{{entityId}}"}}),
		}, []any{}))
		e.createSet(key, "SHIPPING", "Shipping")
		e.addMember(key, "SHIPPING", "SHIP-1", 1)
		data := map[string]any{"weight": 12, "owner": "ann@acme.test"}
		planned := []any{
			map[string]any{"type": "NOTIFY", "recipients": []any{"ops@acme.test", "ann@acme.test"}, "subject": "Shipment S-1", "message": "Heavy: 12 kg"},
			map[string]any{"type": "EMIT_EVENT", "event": "shipment.heavy", "payload": map[string]any{"weight": 12, "id": "S-1"}},
			map[string]any{"type": "SET_FIELD", "field": "handling.heavy", "value": true},
			map[string]any{"type": "LOG", "level": "warn", "message": "heavy shipment"},
		}
		shipWant := ruleWant{id: "SHIP-1", typ: "ACTION", result: "SUCCESS", cond: true, planned: planned}
		req := map[string]any{"entityType": "shipment", "entityId": "S-1", "eventType": "packed", "data": data, "dryRun": true}

		logs, events := e.logRowCount(acme.ID), e.eventCount(acme.ID)
		is.Equal(logs, 0)
		setWant := shipWant
		setWant.seq = 1
		checkExec(t, e.do("POST", setExecPath("SHIPPING"), key, req), execWant{setID: "SHIPPING", setName: "Shipping", allowed: true, dry: true, rules: []ruleWant{setWant}})
		checkExec(t, e.do("POST", ruleExecPath(ship["id"].(string)), key, req), execWant{allowed: true, dry: true, rules: []ruleWant{shipWant}})
		checkExec(t, e.do("POST", ruleExecPath(hook["id"].(string)), key, req), execWant{allowed: true, dry: true, rules: []ruleWant{{id: "HOOK-1", typ: "ACTION",
			result: "SUCCESS", cond: true, planned: []any{map[string]any{"type": "CALL_WEBHOOK", "url": "https://hooks.acme.test/ship/S-1", "method": "POST",
				"headers": map[string]any{}, "body": map[string]any{"id": "S-1"}}}}}})
		res, _ := checkExec(t, e.do("POST", execBase, key, req), execWant{allowed: true, dry: true, rules: []ruleWant{
			{id: "HOOK-1", typ: "ACTION", result: "SUCCESS", cond: true, planned: []any{map[string]any{"type": "CALL_WEBHOOK",
				"url": "https://hooks.acme.test/ship/S-1", "method": "POST", "headers": map[string]any{}, "body": map[string]any{"id": "S-1"}}}},
			shipWant}})
		_ = res
		if l, ev := e.logRowCount(acme.ID), e.eventCount(acme.ID); l != logs || ev != events {
			t.Fatalf("dry runs wrote to the database: log rows %d -> %d, events %d -> %d", logs, l, events, ev)
		}

		// The same without dryRun: one log row, the two events, the field set.
		req["dryRun"] = false
		wantData := map[string]any{"weight": 12, "owner": "ann@acme.test", "handling": map[string]any{"heavy": true}}
		_, logIDs := checkExec(t, e.do("POST", setExecPath("SHIPPING"), key, req), execWant{setID: "SHIPPING", setName: "Shipping", allowed: true, data: wantData, rules: []ruleWant{setWant}})
		is.Equal(e.logRowCount(acme.ID), logs+1)
		is.Equal(e.eventCount(acme.ID), events+2)
		evs, err := store.ListEvents(t.Context(), e.kit.DB, store.EventFilter{TenantID: acme.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]any{}
		for _, ev := range evs[len(evs)-2:] {
			var d any
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			got[ev.Type] = d
			is.Equal(ev.OrganizationID, acme.OrgID)
		}
		ruleEvent := func(extra map[string]any) map[string]any {
			m := map[string]any{"ruleId": "SHIP-1", "ruleName": "Rule SHIP-1", "entityType": "shipment", "entityId": "S-1", "eventType": "packed"}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
		sameJSON(t, "events", got, map[string]any{
			"business_rules.notification.created": ruleEvent(map[string]any{"recipients": []any{"ops@acme.test", "ann@acme.test"},
				"subject": "Shipment S-1", "message": "Heavy: 12 kg"}),
			"business_rules.event.emitted": ruleEvent(map[string]any{"event": "shipment.heavy", "payload": map[string]any{"weight": 12, "id": "S-1"}}),
		})
		row := e.do("GET", logsBase+"/"+logIDs[0], key, nil).expect(200).JSON()
		sameJSON(t, "log input data (before its own SET_FIELD)", row["inputContext"].(map[string]any)["data"], data)
	})
}

func TestRuleSetExecuteRateLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		// A policy with the spec's defaults, fresh so that nothing has
		// counted yet.
		e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.DefaultConfig(), nil, e.kit.Logger)})
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		// Two keys of one tenant share its bucket.
		acmeKey, acmeKey2 := e.newKey(acme), e.newKey(acme, execFeatures...)
		globexKey := e.newKey(globex, execFeatures...)
		e.createRule(acmeKey2, ruleBody("RL-1"))
		e.createSet(acmeKey, "RUNS", "Runs")
		e.addMember(acmeKey, "RUNS", "RL-1", 1)
		e.createSet(globexKey, "RUNS", "Globex runs")
		req := orderRequest("o-1", map[string]any{"status": "ACTIVE", "total": 150}, true)

		// Refused credentials use no points.
		for range 5 {
			expectSetError(t, e.do("POST", setExecPath("RUNS"), "", req), 401, "UNAUTHORIZED")
		}
		// 200 per minute, whatever the outcome: executions, dry or not,
		// validation errors, unknown sets.
		for i := 1; i <= 200; i++ {
			key := acmeKey
			if i%2 == 0 {
				key = acmeKey2
			}
			var r *response
			switch {
			case i%50 == 0:
				r = e.do("POST", setExecPath("RUNS"), key, orderRequest("o-1", map[string]any{"status": "ACTIVE", "total": 150}, false)).expect(200)
			case i%20 == 0:
				expectSetInvalid(t, e.do("POST", setExecPath("RUNS"), key, map[string]any{}), "data")
				continue
			case i%30 == 0:
				expectSetError(t, e.do("POST", setExecPath("NO_SUCH_SET"), key, req), 404, "SET_NOT_FOUND")
				continue
			default:
				r = e.do("POST", setExecPath("RUNS"), key, req).expect(200)
			}
			if i == 1 || i == 200 {
				expectNoLimitHeaders(t, r)
			}
		}
		logs := e.logRowCount(acme.ID)
		expectSetLimited(t, e.do("POST", setExecPath("RUNS"), acmeKey, req), 200)
		expectSetLimited(t, e.do("POST", setExecPath("RUNS"), acmeKey2, orderRequest("o-1", map[string]any{"total": 1}, false)), 200)
		expectSetLimited(t, e.do("POST", setExecPath("NO_SUCH_SET"), acmeKey, req), 200) // refused before the lookup
		expectSetLimited(t, e.do("POST", setExecPath("RUNS"), acmeKey, "{"), 200)        // and before the body
		if n := e.logRowCount(acme.ID); n != logs {
			t.Errorf("a refused execution wrote log rows: %d -> %d", logs, n)
		}

		// The set reads and writes have their own buckets; the other
		// execution routes have no limit.
		e.do("GET", setsBase+"/RUNS", acmeKey, nil).expect(200)
		e.do("PATCH", setsBase+"/RUNS", acmeKey, map[string]any{"description": "still writable"}).expect(200)
		e.do("POST", execBase, acmeKey2, map[string]any{"entityType": "order", "data": map[string]any{}, "dryRun": true}).expect(200)
		ruleID := e.do("GET", rulesBase+"?ruleId=RL-1", acmeKey2, nil).expect(200).JSON()["data"].([]any)[0].(map[string]any)["id"].(string)
		e.do("POST", ruleExecPath(ruleID), acmeKey2, map[string]any{"data": map[string]any{}, "dryRun": true}).expect(200)

		// Another tenant is not limited by the first.
		for range 3 {
			r := e.do("POST", setExecPath("RUNS"), globexKey, req).expect(200)
			expectNoLimitHeaders(t, r)
		}
		expectSetError(t, e.do("POST", setExecPath("NO_SUCH_SET"), globexKey, req), 404, "SET_NOT_FOUND")
		// And the first stays limited.
		expectSetLimited(t, e.do("POST", setExecPath("RUNS"), acmeKey2, req), 200)
	})
}

func TestRulesExecuteTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		acmeKey, globexKey := e.newKey(acme, execFeatures...), e.newKey(globex, execFeatures...)
		rule := e.createRule(acmeKey, ruleBody("SHARED-ID"))
		id := rule["id"].(string)
		e.createSet(acmeKey, "SHARED_SET", "Acme set")
		e.addMember(acmeKey, "SHARED_SET", "SHARED-ID", 1)
		good := map[string]any{"status": "ACTIVE", "total": 150}
		acmeRun := e.do("POST", setExecPath("SHARED_SET"), acmeKey, orderRequest("o-1", good, false)).expect(200).JSON()
		acmeLog := acmeRun["logIds"].([]any)[0].(string)
		acmeLogs, globexLogs := e.logRowCount(acme.ID), e.logRowCount(globex.ID)
		is.Equal(acmeLogs, 1)
		is.Equal(globexLogs, 0)

		// Globex cannot execute Acme's set or rule, nor read Acme's log.
		expectSetError(t, e.do("POST", setExecPath("SHARED_SET"), globexKey, orderRequest("o-1", good, false)), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("POST", setExecPath("SHARED_SET"), globexKey, orderRequest("o-1", good, true)), 404, "SET_NOT_FOUND")
		expectRuleNotFound(t, e.do("POST", ruleExecPath(id), globexKey, map[string]any{"data": good}))
		expectRuleNotFound(t, e.do("POST", ruleExecPath(id), globexKey, map[string]any{"data": good, "dryRun": true}))
		expectBody(t, e.do("GET", logsBase+"/"+acmeLog, globexKey, nil), 404, map[string]any{"error": "Log entry not found"})
		for _, q := range []string{"", "?ruleId=SHARED-ID", "?entityType=order", "?entityId=o-1", "?result=SUCCESS"} {
			l := e.do("GET", logsBase+q, globexKey, nil).expect(200).JSON()
			sameJSON(t, "Globex list "+q, l, map[string]any{"data": []any{}, "pagination": map[string]any{"page": 1, "pageSize": 20, "total": 0, "totalPages": 0}})
		}
		// Acme's rules do not run for Globex's entities.
		checkExec(t, e.do("POST", execBase, globexKey, map[string]any{"entityType": "order", "data": good}), execWant{allowed: true, data: good})
		is.Equal(e.logRowCount(globex.ID), 0)

		// Globex's own set and rule of the same ids run its own rule.
		own := e.createRule(globexKey, ruleBody("SHARED-ID", withField("ruleType", "VALIDATION"), withField("successActions", []any{})))
		e.createSet(globexKey, "SHARED_SET", "Globex set")
		e.addMember(globexKey, "SHARED_SET", "SHARED-ID", 7)
		_, globexLogIDs := checkExec(t, e.do("POST", setExecPath("SHARED_SET"), globexKey, orderRequest("o-1", good, false)),
			execWant{setID: "SHARED_SET", setName: "Globex set", allowed: true, data: good, rules: []ruleWant{{id: "SHARED-ID", typ: "VALIDATION", seq: 7, result: "SUCCESS", cond: true}}})
		row := e.do("GET", logsBase+"/"+globexLogIDs[0], globexKey, nil).expect(200).JSON()
		sameJSON(t, "Globex row", []any{row["ruleUuid"], row["tenantId"], row["organizationId"]}, []any{own["id"], globex.ID, globex.OrgID})
		is.Equal(logIDsOf(t, e.do("GET", logsBase, globexKey, nil).expect(200).JSON()), globexLogIDs)
		// Acme sees only its own row, and not Globex's.
		is.Equal(logIDsOf(t, e.do("GET", logsBase, acmeKey, nil).expect(200).JSON()), []string{acmeLog})
		expectBody(t, e.do("GET", logsBase+"/"+globexLogIDs[0], acmeKey, nil), 404, map[string]any{"error": "Log entry not found"})
		expectRuleNotFound(t, e.do("POST", ruleExecPath(own["id"].(string)), acmeKey, map[string]any{"data": good}))
		is.Equal(e.logRowCount(acme.ID), acmeLogs)
	})
}

func TestRulesExecuteBadInputNever5xx(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.unlimited() // many requests: 429s would hide the handlers
		acme := e.newTenant("Acme")
		key := e.newKey(acme, execFeatures...)
		rule := e.createRule(key, ruleBody("BAD-1", withField("ruleType", "VALIDATION")))
		id := rule["id"].(string)
		e.createSet(key, "BAD_INPUT", "Bad input")
		e.addMember(key, "BAD_INPUT", "BAD-1", 1)

		type target struct {
			name, path string
			full       bool // the set execution: entityId and eventType required too
		}
		targets := []target{{"set", setExecPath("BAD_INPUT"), true}, {"entity", execBase, false}, {"rule", ruleExecPath(id), false}}
		valid := func() map[string]any {
			return map[string]any{"entityType": "order", "entityId": "o-1", "eventType": "beforeCreate", "data": map[string]any{"total": 150, "status": "ACTIVE"}}
		}
		with := func(field string, v any) map[string]any {
			b := valid()
			b[field] = v
			return b
		}
		// check fails unless r is a 4xx with a JSON error body naming field
		// (if any) in its details; for the set route the body has the
		// rule-set code.
		check := func(what string, tg target, r *response, status int, field string) {
			t.Helper()
			if r.Status >= 500 {
				t.Errorf("%s on %s: status %d; body: %.300s", what, tg.name, r.Status, r.Body)
				return
			}
			if r.Status != status {
				t.Errorf("%s on %s: status %d, want %d; body: %.300s", what, tg.name, r.Status, status, r.Body)
				return
			}
			if status < 400 {
				return
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Errorf("%s on %s: %d without a JSON body: %.300s", what, tg.name, r.Status, r.Body)
				return
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Errorf("%s on %s: no error message: %.300s", what, tg.name, r.Body)
			}
			if tg.name == "set" {
				code := map[int]string{400: "VALIDATION_ERROR", 413: "PAYLOAD_TOO_LARGE"}[status]
				if body["code"] != code {
					t.Errorf("%s on %s: code %v, want %s", what, tg.name, body["code"], code)
				}
			} else if _, hasCode := body["code"]; hasCode {
				t.Errorf("%s on %s: the rules API has no code: %.300s", what, tg.name, r.Body)
			}
			if field != "" {
				details, _ := body["details"].(map[string]any)
				if msg, _ := details[field].(string); msg == "" || len(details) != 1 {
					t.Errorf("%s on %s: details %v, want only %q; body: %.300s", what, tg.name, details, field, r.Body)
				}
			}
		}

		// Not JSON, not an object, empty: 400.
		deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
		deepData := `{"entityType":"order","entityId":"o","eventType":"e","data":` + strings.Repeat(`{"a":`, 20_000) + "1" + strings.Repeat("}", 20_000) + "}"
		for _, body := range []string{"", " ", "{", "}", "not json", "\xff\xfe", "{'entityType': 'order'}", `{"entityType":"order",}`,
			`{"data":{}} trailing`, `{"data":{}}{"data":{}}`, "NaN", "[1,2", deep, deepData, "\x00", "[]", `"text"`, "42", "true", "[{\"data\":{}}]"} {
			for _, tg := range targets {
				check(fmt.Sprintf("body %.20q", body), tg, e.do("POST", tg.path, key, body), 400, "")
			}
		}
		// null is an empty request: the required fields are named.
		for _, tg := range targets {
			r := e.do("POST", tg.path, key, "null")
			check("body null", tg, r, 400, "")
			if details, _ := r.JSON()["details"].(map[string]any); details["data"] == nil {
				t.Errorf("body null on %s: details %v do not name data", tg.name, details)
			}
		}
		// A body over the 1 MiB limit: 413.
		for _, tg := range targets {
			check("2 MiB body", tg, e.do("POST", tg.path, key, with("entityId", strings.Repeat("x", 2<<20))), 413, "")
		}

		// Field by field: wrong types, over the limits, NUL characters.
		huge := strings.Repeat("x", 300_000)
		for _, c := range []struct {
			what  string
			body  any
			field string
		}{
			{"data as a string", with("data", "x"), "data"},
			{"data as an array", with("data", []any{1}), "data"},
			{"data as a number", with("data", 42), "data"},
			{"data as a boolean", with("data", true), "data"},
			{"data null", with("data", nil), "data"},
			{"entityType as a number", with("entityType", 5), "entityType"},
			{"entityType as an object", with("entityType", map[string]any{}), "entityType"},
			{"entityId as a number", with("entityId", 5), "entityId"},
			{"eventType as an array", with("eventType", []any{"x"}), "eventType"},
			{"dryRun as a string", with("dryRun", "yes"), "dryRun"},
			{"dryRun as a number", with("dryRun", 1), "dryRun"},
			{"context as a string", with("context", "x"), "context"},
			{"context as an array", with("context", []any{}), "context"},
			{"entityType over 50", with("entityType", strings.Repeat("t", 51)), "entityType"},
			{"entityType huge", with("entityType", huge), "entityType"},
			{"entityId over 255", with("entityId", strings.Repeat("i", 256)), "entityId"},
			{"entityId huge", with("entityId", huge), "entityId"},
			{"eventType over 50", with("eventType", strings.Repeat("v", 51)), "eventType"},
			{"NUL in entityType", with("entityType", "ord\x00er"), "entityType"},
			{"NUL alone in entityType", with("entityType", "\x00"), "entityType"},
			{"NUL in entityId", with("entityId", "o-1\x00"), "entityId"},
			{"NUL in eventType", with("eventType", "\x00before"), "eventType"},
		} {
			for _, tg := range targets {
				check(c.what, tg, e.do("POST", tg.path, key, c.body), 400, c.field)
			}
		}
		// Every missing or bad field is named at once.
		r := e.do("POST", targets[0].path, key, map[string]any{"entityType": strings.Repeat("t", 51), "entityId": "o\x00"})
		details := expectSetInvalid(t, r, "entityType", "entityId", "eventType", "data")
		if len(details) != 4 {
			t.Errorf("details %v, want 4 fields", details)
		}
		// The limits themselves are allowed (in characters).
		atLimits := with("entityType", strings.Repeat("ü", 50))
		atLimits["entityId"], atLimits["eventType"] = strings.Repeat("é", 255), strings.Repeat("v", 50)
		for _, tg := range targets {
			check("fields at their limits", tg, e.do("POST", tg.path, key, atLimits), 200, "")
		}
		// Unknown fields are ignored (the API's decoding rule), but they do
		// not stand in for required ones.
		for _, tg := range targets {
			b := valid()
			b["unexpected"], b["entity_type"], b["dry_run"] = 1, "x", true
			check("unknown extra fields", tg, e.do("POST", tg.path, key, b), 200, "")
			check("only unknown fields", tg, e.do("POST", tg.path, key, map[string]any{"unexpected": 1, "Data ": map[string]any{}}), 400, "")
		}

		// Odd ids in the paths, odd log query values.
		for _, odd := range []string{"%00", "%FF", "%FF%FE", "A%00B", "lower", strings.Repeat("A", 10_000), "%27%3B%20DROP%20TABLE%20business_rule_execution_logs%3B--"} {
			r := e.do("POST", setExecPath(odd), key, valid())
			if r.Status != 404 {
				t.Errorf("set %.40s: %d %.200s, want 404", odd, r.Status, r.Body)
			} else if r.JSON()["code"] != "SET_NOT_FOUND" {
				t.Errorf("set %.40s: %s, want SET_NOT_FOUND", odd, r.Body)
			}
			if r := e.do("POST", ruleExecPath(odd), key, valid()); r.Status != 404 {
				t.Errorf("rule %.40s: %d %.200s, want 404", odd, r.Status, r.Body)
			}
			if r := e.do("GET", logsBase+"/"+odd, key, nil); r.Status != 404 {
				t.Errorf("log %.40s: %d %.200s, want 404", odd, r.Status, r.Body)
			}
			for _, p := range []string{"ruleId", "entityType", "entityId"} {
				r := e.do("GET", logsBase+"?"+p+"="+odd, key, nil)
				if r.Status != 200 {
					t.Errorf("logs ?%s=%.40s: %d %.200s, want 200", p, odd, r.Status, r.Body)
				} else if data := r.JSON()["data"].([]any); len(data) != 0 {
					t.Errorf("logs ?%s=%.40s matched %d rows", p, odd, len(data))
				}
			}
		}
		for _, q := range []string{"page=99999999999999999999", "pageSize=99999999999999999999", "page=-1", "pageSize=1e3",
			"executedAtFrom=%FF", "executedAtTo=9999999999-01-01", "executedAtFrom=2025-01-01T25:00:00Z", "result=%FF"} {
			if r := e.do("GET", logsBase+"?"+q, key, nil); r.Status != 400 {
				t.Errorf("logs ?%s: %d %.200s, want 400", q, r.Status, r.Body)
			}
		}
		if r := e.do("GET", logsBase+"?page=9999999999&pageSize=100", key, nil); r.Status >= 500 {
			t.Errorf("a far page: %d %s", r.Status, r.Body)
		}

		// Nothing above wrote a log row except the valid requests with
		// unknown fields (one evaluated rule on each route); at the limits
		// the entity type is another, so nothing was evaluated.
		if n := e.logRowCount(acme.ID); n != 3 {
			t.Errorf("%d log rows, want 3", n)
		}

		// Invalid UTF-8 inside data never fails the request.
		for _, tg := range targets {
			body := "{\"entityType\":\"order\",\"entityId\":\"o-1\",\"eventType\":\"beforeCreate\",\"data\":{\"k\xff\":\"v\xfe\"}}"
			if r := e.do("POST", tg.path, key, body); r.Status >= 500 {
				t.Errorf("invalid UTF-8 in data on %s: status %d; body: %.300s", tg.name, r.Status, r.Body)
			}
		}

		// Invalid UTF-8 in the text fields is refused naming the field, like
		// a NUL (the JSON text is not valid UTF-8; the fields could not be
		// stored or matched as sent).
		t.Run("invalid UTF-8 in entityType, entityId and eventType is refused", func(t *testing.T) {
			e := e.with(t)
			for _, field := range []string{"entityType", "entityId", "eventType"} {
				body := strings.Replace(`{"entityType":"order","entityId":"o-1","eventType":"beforeCreate","data":{"k":"v"}}`,
					`"`+field+`":"`, `"`+field+`":"ab`+"\xfe", 1)
				for _, tg := range targets {
					check("invalid UTF-8 in "+field, tg, e.do("POST", tg.path, key, body), 400, field)
				}
			}
		})

		// NUL characters inside data never fail the request with a 5xx.
		nulData := []map[string]any{
			{"total": 150, "status": "ACTIVE", "note": "a\x00b"},
			{"total": 150, "status": "ACTIVE", "k\x00ey": 1},
			{"total": 150, "status": "ACTIVE", "nested": map[string]any{"list": []any{"\x00"}}},
		}
		for _, dry := range []bool{true, false} {
			for _, data := range nulData {
				for _, tg := range targets {
					b := with("data", data)
					b["dryRun"] = dry
					if r := e.do("POST", tg.path, key, b); r.Status >= 500 {
						t.Errorf("data %v (dryRun %v) on %s: status %d; body: %.300s", data, dry, tg.name, r.Status, r.Body)
					}
				}
			}
		}

		// Data the log cannot hold is refused up front, naming data, the
		// same on both engines (as rule creation refuses NUL characters in
		// its JSON fields).
		t.Run("NUL characters inside data are refused naming data", func(t *testing.T) {
			e := e.with(t)
			for _, data := range nulData {
				for _, tg := range targets {
					check(fmt.Sprintf("data %v", data), tg, e.do("POST", tg.path, key, with("data", data)), 400, "data")
				}
			}
		})
	})
}

// TestRuleExecutionEmptyFields checks the keys a non-dry execution always
// carries, even when empty: actionsExecuted of an evaluated rule that
// planned no action (the log row's outputContext has it as []), and data
// when the caller sent an empty object.
func TestRuleExecutionEmptyFields(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, execFeatures...)
		rule := e.createRule(key, execRule("EMPTY-1", "VALIDATION", "order", "beforeCreate", leaf("total", ">", 0), []any{}, []any{}))
		e.createSet(key, "EMPTY_ACTIONS", "Empty actions")
		e.addMember(key, "EMPTY_ACTIONS", "EMPTY-1", 1)
		requests := []struct {
			name, path string
			body       map[string]any
		}{
			{"set", setExecPath("EMPTY_ACTIONS"), orderRequest("o-1", map[string]any{"total": 5}, false)},
			{"entity", execBase, map[string]any{"entityType": "order", "data": map[string]any{"total": 5}}},
			{"rule", ruleExecPath(rule["id"].(string)), map[string]any{"data": map[string]any{"total": 5}}},
		}

		t.Run("actionsExecuted is [] when nothing was planned", func(t *testing.T) {
			e := e.with(t)
			for _, rq := range requests {
				body := e.do("POST", rq.path, key, rq.body).expect(200).JSON()
				entry := body["executedRules"].([]any)[0].(map[string]any)
				logID, _ := entry["logId"].(string)
				if !store.IsID(logID) {
					t.Fatalf("%s: no logId in %v", rq.name, entry)
				}
				got, present := entry["actionsExecuted"]
				if !present {
					t.Errorf("%s: evaluated non-dry entry without actionsExecuted: %v", rq.name, entry)
				} else {
					sameJSON(t, rq.name+" actionsExecuted", got, []any{})
				}
				// The log row has it.
				row := e.do("GET", logsBase+"/"+logID, key, nil).expect(200).JSON()
				sameJSON(t, rq.name+" log actionsExecuted", row["outputContext"].(map[string]any)["actionsExecuted"], []any{})
			}
		})

		t.Run("data is returned when it is an empty object", func(t *testing.T) {
			e := e.with(t)
			for _, rq := range requests {
				b := map[string]any{}
				for k, v := range rq.body {
					b[k] = v
				}
				b["data"] = map[string]any{}
				body := e.do("POST", rq.path, key, b).expect(200).JSON()
				got, present := body["data"]
				if !present {
					t.Errorf("%s: non-dry result without data: %v", rq.name, body)
				} else {
					sameJSON(t, rq.name+" data", got, map[string]any{})
				}
			}
		})
	})
}

// TestRuleExecutionConcurrentLogs runs executions of two tenants at once:
// every execution's rows are written (the writes of concurrent executions
// are committed together), each under its own tenant and execution.
func TestRuleExecutionConcurrentLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		type tenant struct {
			tf  tenantFixture
			key string
		}
		var tenants []tenant
		for _, name := range []string{"Acme", "Globex"} {
			tf := e.newTenant(name)
			key := e.newKey(tf, execFeatures...)
			e.createRule(key, execRule("CC-1", "VALIDATION", "order", "", leaf("total", ">", 0), []any{}, []any{}))
			e.createRule(key, execRule("CC-2", "CALCULATION", "order", "", leaf("total", ">", 0),
				[]any{act("SET_FIELD", map[string]any{"field": "seen", "value": true})}, []any{}))
			e.createSet(key, "CONCURRENT", name)
			e.addMember(key, "CONCURRENT", "CC-1", 1)
			e.addMember(key, "CONCURRENT", "CC-2", 2)
			tenants = append(tenants, tenant{tf, key})
		}
		const perTenant = 20
		type outcome struct {
			tenant int
			status int
			body   []byte
		}
		out := make(chan outcome, 2*perTenant)
		var wg sync.WaitGroup
		for ti, tn := range tenants {
			for i := range perTenant {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := e.do("POST", setExecPath("CONCURRENT"), tn.key, orderRequest(fmt.Sprintf("o-%d", i), map[string]any{"total": i + 1}, false))
					out <- outcome{ti, r.Status, r.Body}
				}()
			}
		}
		wg.Wait()
		close(out)
		logIDs := map[int][]string{}
		for o := range out {
			if o.status != 200 {
				t.Fatalf("tenant %d: status %d; body: %s", o.tenant, o.status, o.body)
			}
			var res struct {
				SetName string   `json:"setName"`
				LogIDs  []string `json:"logIds"`
				Data    map[string]any
			}
			if err := json.Unmarshal(o.body, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.LogIDs) != 2 || res.SetName != []string{"Acme", "Globex"}[o.tenant] || res.Data["seen"] != true {
				t.Errorf("tenant %d: result %s", o.tenant, o.body)
			}
			logIDs[o.tenant] = append(logIDs[o.tenant], res.LogIDs...)
		}
		for ti, tn := range tenants {
			if n := e.logRowCount(tn.tf.ID); n != 2*perTenant {
				t.Errorf("tenant %d: %d log rows, want %d", ti, n, 2*perTenant)
			}
			list := e.do("GET", logsBase+"?pageSize=100", tn.key, nil).expect(200).JSON()
			listed := logIDsOf(t, list)
			if !slices.Equal(sorted(listed), sorted(logIDs[ti])) {
				t.Errorf("tenant %d: listed %d rows, not the %d its executions returned", ti, len(listed), len(logIDs[ti]))
			}
			executions := map[any]int{}
			for _, row := range list["data"].([]any) {
				r := row.(map[string]any)
				if r["tenantId"] != tn.tf.ID || r["setId"] != "CONCURRENT" {
					t.Errorf("tenant %d lists row %v", ti, r)
				}
				executions[r["executionId"]]++
			}
			if len(executions) != perTenant {
				t.Errorf("tenant %d: %d execution ids, want %d", ti, len(executions), perTenant)
			}
			for id, n := range executions {
				if n != 2 {
					t.Errorf("execution %v has %d rows, want 2", id, n)
				}
			}
		}
	})
}
