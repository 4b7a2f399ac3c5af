package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The business rules and rule-set routes. Every test makes its own
// tenants, so on PostgreSQL (one schema for the package) lists only ever
// show the test's own rules and sets. The default handler applies the
// rule-set rate limits (100 reads and 50 writes per tenant per minute):
// tests stay under them per tenant, or build a handler without limits.

const (
	setsBase  = "/api/business_rules/sets"
	rulesBase = "/api/business_rules/rules"
)

// allRuleFeatures are the four rules features.
var allRuleFeatures = []string{rulesapi.FeatureRulesView, rulesapi.FeatureRulesCreate, rulesapi.FeatureRulesEdit, rulesapi.FeatureRulesDelete}

// ruleBody returns a full, valid rule body with ruleID; edits change it.
func ruleBody(ruleID string, edits ...func(b map[string]any)) map[string]any {
	b := map[string]any{
		"ruleId":       ruleID,
		"ruleName":     "Rule " + ruleID,
		"description":  "Blocks small orders",
		"ruleType":     "GUARD",
		"ruleCategory": "orders",
		"entityType":   "order",
		"eventType":    "beforeCreate",
		"conditionExpression": map[string]any{"operator": "AND", "rules": []any{
			map[string]any{"field": "status", "operator": "=", "value": "ACTIVE"},
			map[string]any{"field": "total", "operator": ">", "value": 100},
		}},
		"successActions": []any{map[string]any{"type": "ALLOW_TRANSITION", "config": map[string]any{"message": "Order accepted"}}},
		"failureActions": []any{
			map[string]any{"type": "BLOCK_TRANSITION", "config": map[string]any{"message": "Order {{orderId}} is too small"}},
			map[string]any{"type": "SHOW_ERROR", "config": map[string]any{"message": "Minimum total is 100"}},
		},
		"enabled":       true,
		"priority":      100,
		"version":       1,
		"effectiveFrom": "2025-01-31",
	}
	for _, edit := range edits {
		edit(b)
	}
	return b
}

// withField returns an edit setting body[field] to v.
func withField(field string, v any) func(map[string]any) {
	return func(b map[string]any) { b[field] = v }
}

// withoutField returns an edit removing body[field].
func withoutField(field string) func(map[string]any) {
	return func(b map[string]any) { delete(b, field) }
}

// asJSON is v as encoding/json decodes it into an any (numbers as
// float64), for comparing with response bodies.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// createRule creates a rule with key and returns the stored rule.
func (e *testEnv) createRule(key string, body map[string]any) map[string]any {
	e.t.Helper()
	return e.do("POST", rulesBase, key, body).expect(201).JSON()
}

// createSet creates a rule set with key and returns it.
func (e *testEnv) createSet(key, id, name string) map[string]any {
	e.t.Helper()
	return e.do("POST", setsBase, key, map[string]any{"id": id, "name": name}).expect(201).JSON()
}

// addMember adds ruleID to setID at sequence and returns the member.
func (e *testEnv) addMember(key, setID, ruleID string, sequence int) map[string]any {
	e.t.Helper()
	return e.do("POST", setsBase+"/"+setID+"/members", key, map[string]any{"ruleId": ruleID, "sequence": sequence}).expect(201).JSON()
}

// expectSetError checks a rule-set error body {error, code, details?} with
// status and code, and returns it.
func expectSetError(t testing.TB, r *response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d %s; body: %s", r.Status, status, code, r.Body)
	}
	body := r.JSON()
	if msg, _ := body["error"].(string); msg == "" {
		t.Fatalf("error body without a message: %s", r.Body)
	}
	if body["code"] != code {
		t.Fatalf("code %v, want %s; body: %s", body["code"], code, r.Body)
	}
	for k := range body {
		if k != "error" && k != "code" && k != "details" {
			t.Fatalf("unexpected key %q in the rule-set error body %s", k, r.Body)
		}
	}
	return body
}

// expectSetInvalid checks a 400 VALIDATION_ERROR whose details name each
// of fields, and returns the details.
func expectSetInvalid(t testing.TB, r *response, fields ...string) map[string]any {
	t.Helper()
	body := expectSetError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	details, _ := body["details"].(map[string]any)
	for _, f := range fields {
		if msg, _ := details[f].(string); msg == "" {
			t.Fatalf("VALIDATION_ERROR details %v do not name %q; body: %s", details, f, r.Body)
		}
	}
	return details
}

// expectRuleInvalid checks the rules API's 400 {error: "Validation
// failed", details} naming field, and returns the field's message.
func expectRuleInvalid(t testing.TB, r *response, field string) string {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 naming %q; body: %s", r.Status, field, r.Body)
	}
	body := r.JSON()
	if body["error"] != "Validation failed" {
		t.Fatalf("error %v, want \"Validation failed\"; body: %s", body["error"], r.Body)
	}
	if len(body) != 2 {
		t.Fatalf("400 body has keys other than error and details: %s", r.Body)
	}
	details, _ := body["details"].(map[string]any)
	msg, _ := details[field].(string)
	if msg == "" {
		t.Fatalf("details %v do not name %q; body: %s", details, field, r.Body)
	}
	return msg
}

// expectRuleNotFound checks the rules API's exact 404 body.
func expectRuleNotFound(t testing.TB, r *response) {
	t.Helper()
	if r.Status != http.StatusNotFound {
		t.Fatalf("status %d, want 404; body: %s", r.Status, r.Body)
	}
	if got := r.JSON(); len(got) != 1 || got["error"] != "Rule not found" {
		t.Fatalf("404 body %s, want {\"error\":\"Rule not found\"}", r.Body)
	}
}

// parseTime checks that v is an RFC 3339 timestamp and returns it.
func parseTime(t testing.TB, what string, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %v is not an ISO 8601 timestamp: %v", what, v, err)
	}
	return ts
}

// ruleIDsOf returns the ruleId of each item of a rules list, in order.
func ruleIDsOf(t testing.TB, list map[string]any) []string {
	t.Helper()
	items, ok := list["data"].([]any)
	if !ok {
		t.Fatalf("list without data: %v", list)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.(map[string]any)["ruleId"].(string)
	}
	return ids
}

// setIDsOf returns the id of each item of a rule-set list, in order.
func setIDsOf(t testing.TB, list map[string]any) []string {
	t.Helper()
	items, ok := list["data"].([]any)
	if !ok {
		t.Fatalf("list without data: %v", list)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.(map[string]any)["id"].(string)
	}
	return ids
}

// memberIDsOf returns the ruleId of each member of a set detail, in order.
func memberIDsOf(t testing.TB, detail map[string]any) []string {
	t.Helper()
	members, ok := detail["members"].([]any)
	if !ok {
		t.Fatalf("set detail without members: %v", detail)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.(map[string]any)["ruleId"].(string)
	}
	return ids
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// unlimited replaces e's handler with one that limits nothing.
func (e *testEnv) unlimited() {
	e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{Enabled: false}, nil, e.kit.Logger)})
}

func TestRuleSetCRUD(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme) // no features: the rule-set routes need authentication only

		created := e.do("POST", setsBase, key, map[string]any{"id": "ORDER_CHECKS", "name": "Order checks",
			"description": "Run before an order is created"}).expect(201).JSON()
		createdAt := parseTime(t, "createdAt", created["createdAt"])
		is.Equal(created["updatedAt"], created["createdAt"])
		is.True(time.Since(createdAt) < time.Hour && time.Until(createdAt) < time.Minute) // createdAt is now
		is.Equal(created, map[string]any{"id": "ORDER_CHECKS", "name": "Order checks", "description": "Run before an order is created",
			"enabled": true, "memberCount": float64(0), "createdAt": created["createdAt"], "updatedAt": created["updatedAt"]})

		// enabled may be given; description is optional.
		bare := e.do("POST", setsBase, key, map[string]any{"id": "BARE", "name": "Bare", "enabled": false}).expect(201).JSON()
		is.Equal(bare["enabled"], false)
		is.Equal(bare["description"], "")
		is.Equal(bare["memberCount"], float64(0))
		is.Equal(e.do("POST", setsBase, key, map[string]any{"id": "ON", "name": "On", "enabled": true}).expect(201).JSON()["enabled"], true)

		// The detail carries members, [] when there are none.
		got := e.do("GET", setsBase+"/ORDER_CHECKS", key, nil).expect(200).JSON()
		want := map[string]any{"members": []any{}}
		for k, v := range created {
			want[k] = v
		}
		is.Equal(got, want)

		// PATCH changes only what it carries.
		p := e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"description": "Changed"}).expect(200).JSON()
		is.Equal(p["id"], "ORDER_CHECKS")
		is.Equal(p["name"], "Order checks")
		is.Equal(p["description"], "Changed")
		is.Equal(p["enabled"], true)
		is.Equal(p["memberCount"], float64(0))
		is.Equal(p["createdAt"], created["createdAt"])
		is.True(!parseTime(t, "updatedAt", p["updatedAt"]).Before(createdAt))
		p = e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"enabled": false, "name": "Order gate"}).expect(200).JSON()
		is.Equal(p["enabled"], false)
		is.Equal(p["name"], "Order gate")
		is.Equal(p["description"], "Changed")
		p = e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"description": ""}).expect(200).JSON()
		is.Equal(p["description"], "")
		is.Equal(p["name"], "Order gate")
		is.Equal(e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{}).expect(200).JSON()["name"], "Order gate")
		got = e.do("GET", setsBase+"/ORDER_CHECKS", key, nil).expect(200).JSON()
		is.Equal(got["name"], "Order gate")
		is.Equal(got["description"], "")
		is.Equal(got["enabled"], false)
		is.Equal(got["createdAt"], created["createdAt"])

		// Invalid patches change nothing.
		expectSetInvalid(t, e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"name": ""}), "name")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"name": "   "}), "name")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"name": strings.Repeat("n", 201)}), "name")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"description": strings.Repeat("d", 2001)}), "description")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"enabled": "yes"}), "enabled")
		is.Equal(e.do("GET", setsBase+"/ORDER_CHECKS", key, nil).expect(200).JSON()["name"], "Order gate")
		// The limits themselves are allowed.
		p = e.do("PATCH", setsBase+"/ORDER_CHECKS", key, map[string]any{"name": strings.Repeat("ü", 200), "description": strings.Repeat("é", 2000)}).expect(200).JSON()
		is.Equal(p["name"], strings.Repeat("ü", 200))

		// Unknown sets.
		expectSetError(t, e.do("GET", setsBase+"/NO_SUCH_SET", key, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/NO_SUCH_SET", key, map[string]any{"name": "x"}), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("DELETE", setsBase+"/NO_SUCH_SET", key, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("GET", setsBase+"/order_checks", key, nil), 404, "SET_NOT_FOUND") // ids are case-sensitive

		// DELETE of an empty set: 204 without a body, then it is gone.
		r := e.do("DELETE", setsBase+"/BARE", key, nil).expect(204)
		is.Equal(len(r.Body), 0)
		expectSetError(t, e.do("GET", setsBase+"/BARE", key, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("DELETE", setsBase+"/BARE", key, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/BARE", key, map[string]any{"name": "x"}), 404, "SET_NOT_FOUND")
		// Its id is free again.
		is.Equal(e.createSet(key, "BARE", "Bare again")["memberCount"], float64(0))

		// Other credential forms: the spec documents Authorization: Bearer.
		e.send("GET", setsBase+"/ORDER_CHECKS", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }).expect(200)
		e.send("GET", setsBase+"/ORDER_CHECKS", nil, func(r *http.Request) { r.Header.Set("Authorization", "ApiKey "+key) }).expect(200)

		// Without a valid credential every route answers 401 UNAUTHORIZED.
		for _, rq := range []struct {
			method, path string
			body         any
		}{
			{"GET", setsBase, nil},
			{"POST", setsBase, map[string]any{"id": "NEW", "name": "New"}},
			{"GET", setsBase + "/ORDER_CHECKS", nil},
			{"PATCH", setsBase + "/ORDER_CHECKS", map[string]any{"name": "x"}},
			{"DELETE", setsBase + "/ORDER_CHECKS", nil},
			{"POST", setsBase + "/ORDER_CHECKS/members", map[string]any{"ruleId": "R", "sequence": 1}},
			{"PATCH", setsBase + "/ORDER_CHECKS/members/R", map[string]any{"sequence": 1}},
			{"DELETE", setsBase + "/ORDER_CHECKS/members/R", nil},
		} {
			body := expectSetError(t, e.do(rq.method, rq.path, "", rq.body), 401, "UNAUTHORIZED")
			is.Equal(len(body), 2) // {error, code}
			expectSetError(t, e.do(rq.method, rq.path, "tk_test"+randomHex(24), rq.body), 401, "UNAUTHORIZED")
			expectSetError(t, e.send(rq.method, rq.path, rq.body, func(r *http.Request) { r.Header.Set("Authorization", "Bearer nonsense") }), 401, "UNAUTHORIZED")
		}
		// Nothing was changed by the refused requests.
		got = e.do("GET", setsBase+"/ORDER_CHECKS", key, nil).expect(200).JSON()
		is.Equal(got["name"], strings.Repeat("ü", 200))
		expectSetError(t, e.do("GET", setsBase+"/NEW", key, nil), 404, "SET_NOT_FOUND")

	})
}

func TestRuleSetValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		key, globexKey := e.newKey(acme), e.newKey(globex)

		create := func(body any) *response { return e.do("POST", setsBase, key, body) }
		for _, id := range []string{"order_checks", "Order_Checks", "ORDER-CHECKS", "ORDER CHECKS", "ORDER1", "ÄRGER", strings.Repeat("A", 51), ""} {
			details := expectSetInvalid(t, create(map[string]any{"id": id, "name": "Checks"}), "id")
			is.Equal(len(details), 1) // only id is wrong
		}
		expectSetInvalid(t, create(map[string]any{"name": "Checks"}), "id") // missing id
		expectSetInvalid(t, create(map[string]any{"id": 5, "name": "Checks"}), "id")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS"}), "name")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS", "name": " "}), "name")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS", "name": strings.Repeat("n", 201)}), "name")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS", "name": "Checks", "description": strings.Repeat("d", 2001)}), "description")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS", "name": "Checks", "enabled": "yes"}), "enabled")
		expectSetInvalid(t, create(map[string]any{"id": "CHECKS", "name": "Nul\x00name"}), "name")
		// Every problem is reported at once.
		details := expectSetInvalid(t, create(map[string]any{"id": "lower", "description": strings.Repeat("d", 2001)}), "id", "name", "description")
		is.Equal(len(details), 3)
		// The spec's sample: details.id says what an id must be.
		details = expectSetInvalid(t, create(map[string]any{"id": "lower", "name": "x"}), "id")
		is.True(strings.Contains(strings.ToLower(details["id"].(string)), "uppercase"))
		// Malformed bodies are VALIDATION_ERROR too.
		expectSetError(t, create("{"), 400, "VALIDATION_ERROR")
		expectSetError(t, create(""), 400, "VALIDATION_ERROR")
		// None of them was stored.
		list := e.do("GET", setsBase, key, nil).expect(200).JSON()
		is.Equal(list["data"], []any{})

		// The limits are allowed: 50 characters of id, underscores alone.
		long := strings.Repeat("A", 49) + "_"
		is.Equal(e.do("POST", setsBase, key, map[string]any{"id": long, "name": strings.Repeat("n", 200),
			"description": strings.Repeat("d", 2000)}).expect(201).JSON()["id"], long)
		e.createSet(key, "_", "Underscore")

		// A duplicate id is SET_ALREADY_EXISTS, even with other fields.
		e.createSet(key, "CHECKS", "Checks")
		body := expectSetError(t, create(map[string]any{"id": "CHECKS", "name": "Other", "enabled": false}), 409, "SET_ALREADY_EXISTS")
		is.Equal(len(body), 2) // {error, code}
		got := e.do("GET", setsBase+"/CHECKS", key, nil).expect(200).JSON()
		is.Equal(got["name"], "Checks")
		is.Equal(got["enabled"], true)
		// Set ids are unique per tenant only.
		is.Equal(e.createSet(globexKey, "CHECKS", "Globex checks")["name"], "Globex checks")
		is.Equal(e.do("GET", setsBase+"/CHECKS", key, nil).expect(200).JSON()["name"], "Checks")
	})
}

func TestRuleSetList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme)
		rulesKey := e.newKey(acme, allRuleFeatures...)

		// An empty list.
		list := e.do("GET", setsBase, key, nil).expect(200).JSON()
		is.Equal(list, map[string]any{"data": []any{}, "pagination": map[string]any{"total": float64(0), "limit": float64(50), "offset": float64(0)}})

		for _, s := range []map[string]any{
			{"id": "ALPHA", "name": "Alpha checks", "description": "Runs on ORDERS"},
			{"id": "BETA", "name": "Beta", "description": "Shipping 100% guaranteed", "enabled": false},
			{"id": "GAMMA", "name": "Gamma"},
			{"id": "DELTA", "name": "Delta order_rules", "enabled": false},
			{"id": "HIDDEN_WORD", "name": "Misc", "description": "Nothing to see"},
		} {
			e.do("POST", setsBase, key, s).expect(201)
		}
		rule := e.createRule(rulesKey, ruleBody("LIST-1"))
		e.addMember(key, "ALPHA", rule["ruleId"].(string), 10)

		all := e.do("GET", setsBase, key, nil).expect(200).JSON()
		is.Equal(all["pagination"], map[string]any{"total": float64(5), "limit": float64(50), "offset": float64(0)})
		allIDs := setIDsOf(t, all)
		is.Equal(sorted(allIDs), []string{"ALPHA", "BETA", "DELTA", "GAMMA", "HIDDEN_WORD"})
		for _, it := range all["data"].([]any) {
			item := it.(map[string]any)
			_, hasMembers := item["members"]
			is.True(!hasMembers) // list items carry no members
			for _, f := range []string{"id", "name", "description", "enabled", "memberCount", "createdAt", "updatedAt"} {
				_, ok := item[f]
				is.True(ok) // every RuleSet field is listed
			}
			want := float64(0)
			if item["id"] == "ALPHA" {
				want = 1
			}
			is.Equal(item["memberCount"], want)
		}

		ids := func(query string) []string {
			t.Helper()
			return sorted(setIDsOf(t, e.do("GET", setsBase+"?"+query, key, nil).expect(200).JSON()))
		}
		// search: name or description, case-insensitive, wildcards literal,
		// not the id.
		is.Equal(ids("search=order"), []string{"ALPHA", "DELTA"})
		is.Equal(ids("search=ALPHA"), []string{"ALPHA"})
		is.Equal(ids("search=100%25"), []string{"BETA"})
		is.Equal(ids("search=%25"), []string{"BETA"})
		is.Equal(ids("search=_"), []string{"DELTA"})
		is.Equal(ids("search=hidden"), []string{})
		is.Equal(ids("search=see"), []string{"HIDDEN_WORD"})
		searched := e.do("GET", setsBase+"?search=order", key, nil).expect(200).JSON()
		is.Equal(searched["pagination"].(map[string]any)["total"], float64(2))
		// enabled
		is.Equal(ids("enabled=false"), []string{"BETA", "DELTA"})
		is.Equal(ids("enabled=true"), []string{"ALPHA", "GAMMA", "HIDDEN_WORD"})
		is.Equal(ids("enabled=false&search=ship"), []string{"BETA"})
		// limit and offset page through the same order.
		page := e.do("GET", setsBase+"?limit=2&offset=1", key, nil).expect(200).JSON()
		is.Equal(page["pagination"], map[string]any{"total": float64(5), "limit": float64(2), "offset": float64(1)})
		is.Equal(setIDsOf(t, page), allIDs[1:3])
		page = e.do("GET", setsBase+"?limit=2&offset=4", key, nil).expect(200).JSON()
		is.Equal(setIDsOf(t, page), allIDs[4:])
		page = e.do("GET", setsBase+"?offset=50", key, nil).expect(200).JSON()
		is.Equal(page["data"], []any{})
		is.Equal(page["pagination"], map[string]any{"total": float64(5), "limit": float64(50), "offset": float64(50)})
		// Empty values count as absent.
		is.Equal(e.do("GET", setsBase+"?limit=&offset=&enabled=&search=", key, nil).expect(200).JSON()["pagination"],
			map[string]any{"total": float64(5), "limit": float64(50), "offset": float64(0)})

		// Bad parameters.
		for q, field := range map[string]string{
			"limit=0": "limit", "limit=-1": "limit", "limit=abc": "limit", "limit=1.5": "limit",
			"offset=-1": "offset", "offset=x": "offset", "enabled=maybe": "enabled", "enabled=yes": "enabled",
		} {
			expectSetInvalid(t, e.do("GET", setsBase+"?"+q, key, nil), field)
		}

		// Default limit 50, maximum 100: a tenant with more sets than that
		// (made through the service, beneath the write limit).
		bulk := e.newTenant("Bulk")
		bulkKey := e.newKey(bulk)
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: bulk.ID})
		for i := range 105 {
			id := fmt.Sprintf("BULK_%c%c", 'A'+i/26, 'A'+i%26)
			if _, err := e.kit.Rules.CreateSet(ctx, rules.SetInput{ID: id, Name: "Bulk " + id}); err != nil {
				t.Fatal(err)
			}
		}
		list = e.do("GET", setsBase, bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 50)
		is.Equal(list["pagination"], map[string]any{"total": float64(105), "limit": float64(50), "offset": float64(0)})
		list = e.do("GET", setsBase+"?limit=500", bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 100)
		is.Equal(list["pagination"], map[string]any{"total": float64(105), "limit": float64(100), "offset": float64(0)})
		list = e.do("GET", setsBase+"?limit=100&offset=100", bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 5)
		list = e.do("GET", setsBase+"?limit=100", bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 100)
		// Acme's list does not see them.
		is.Equal(e.do("GET", setsBase, key, nil).expect(200).JSON()["pagination"].(map[string]any)["total"], float64(5))
	})
}

func TestRuleSetDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme)
		rulesKey := e.newKey(acme, allRuleFeatures...)
		r1 := e.createRule(rulesKey, ruleBody("DEL-1"))
		r2 := e.createRule(rulesKey, ruleBody("DEL-2", withField("ruleType", "VALIDATION")))

		e.createSet(key, "FULL", "Full")
		e.addMember(key, "FULL", "DEL-1", 10)
		e.addMember(key, "FULL", "DEL-2", 20)

		// A set with members needs force=true.
		body := expectSetError(t, e.do("DELETE", setsBase+"/FULL", key, nil), 409, "SET_HAS_MEMBERS")
		is.Equal(body["details"], map[string]any{"memberCount": float64(2)})
		expectSetError(t, e.do("DELETE", setsBase+"/FULL?force=false", key, nil), 409, "SET_HAS_MEMBERS")
		expectSetInvalid(t, e.do("DELETE", setsBase+"/FULL?force=yes-please", key, nil), "force")
		got := e.do("GET", setsBase+"/FULL", key, nil).expect(200).JSON()
		is.Equal(memberIDsOf(t, got), []string{"DEL-1", "DEL-2"})
		is.Equal(got["memberCount"], float64(2))
		// The update response counts the members too.
		is.Equal(e.do("PATCH", setsBase+"/FULL", key, map[string]any{"enabled": false}).expect(200).JSON()["memberCount"], float64(2))

		// force=true detaches the members and keeps the rules.
		r := e.do("DELETE", setsBase+"/FULL?force=true", key, nil).expect(204)
		is.Equal(len(r.Body), 0)
		expectSetError(t, e.do("GET", setsBase+"/FULL", key, nil), 404, "SET_NOT_FOUND")
		for _, rule := range []map[string]any{r1, r2} {
			got := e.do("GET", rulesBase+"/"+rule["id"].(string), rulesKey, nil).expect(200).JSON()
			is.Equal(got["ruleId"], rule["ruleId"])
		}
		is.Equal(e.do("GET", rulesBase, rulesKey, nil).expect(200).JSON()["pagination"].(map[string]any)["total"], float64(2))
		// A set made again with that id starts empty, and the rules can join it.
		is.Equal(e.createSet(key, "FULL", "Full again")["memberCount"], float64(0))
		is.Equal(e.do("GET", setsBase+"/FULL", key, nil).expect(200).JSON()["members"], []any{})
		e.addMember(key, "FULL", "DEL-1", 10)
		is.Equal(e.do("GET", setsBase+"/FULL", key, nil).expect(200).JSON()["memberCount"], float64(1))

		// force=true on an empty set is fine too.
		e.createSet(key, "EMPTY", "Empty")
		e.do("DELETE", setsBase+"/EMPTY?force=true", key, nil).expect(204)

		// A set whose only member rule was deleted has no members left.
		e.createSet(key, "ORPHAN", "Orphan")
		e.addMember(key, "ORPHAN", "DEL-2", 10)
		e.do("DELETE", rulesBase+"?id="+r2["id"].(string), rulesKey, nil).expect(204)
		got = e.do("GET", setsBase+"/ORPHAN", key, nil).expect(200).JSON()
		is.Equal(got["memberCount"], float64(0))
		is.Equal(got["members"], []any{})
		e.do("DELETE", setsBase+"/ORPHAN", key, nil).expect(204)
	})
}

func TestRuleSetMembers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme)
		rulesKey := e.newKey(acme, allRuleFeatures...)
		guard := e.createRule(rulesKey, ruleBody("MEM-GUARD"))
		e.createRule(rulesKey, ruleBody("MEM-VALID", withField("ruleType", "VALIDATION"), withField("ruleName", "Validate order")))
		calc := e.createRule(rulesKey, ruleBody("MEM-CALC", withField("ruleType", "CALCULATION")))
		e.createRule(rulesKey, ruleBody("MEM-OUT", withField("ruleType", "ACTION")))
		e.createSet(key, "FLOW", "Flow")
		e.createSet(key, "OTHER", "Other")

		// POST answers the SetMember with its set.
		m := e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-GUARD", "sequence": 20, "enabled": true}).expect(201).JSON()
		parseTime(t, "addedAt", m["addedAt"])
		is.Equal(m, map[string]any{"setId": "FLOW", "ruleId": "MEM-GUARD", "ruleName": "Rule MEM-GUARD", "ruleType": "GUARD",
			"sequence": float64(20), "enabled": true, "addedAt": m["addedAt"]})
		m = e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-VALID", "sequence": 10, "enabled": false}).expect(201).JSON()
		is.Equal(m["enabled"], false)
		is.Equal(m["ruleName"], "Validate order")
		is.Equal(m["ruleType"], "VALIDATION")
		m = e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-CALC", "sequence": 30}).expect(201).JSON()
		is.Equal(m["enabled"], true) // enabled defaults to true
		is.Equal(m["setId"], "FLOW")
		// A rule may be in several sets; sequence 0 is allowed.
		is.Equal(e.addMember(key, "OTHER", "MEM-GUARD", 0)["sequence"], float64(0))

		// Errors.
		expectSetError(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-GUARD", "sequence": 40}), 409, "RULE_ALREADY_IN_SET")
		expectSetError(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "NO-SUCH-RULE", "sequence": 40}), 404, "RULE_NOT_FOUND")
		expectSetError(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": guard["id"], "sequence": 40}), 404, "RULE_NOT_FOUND") // by business id, not UUID
		expectSetError(t, e.do("POST", setsBase+"/NO_SET/members", key, map[string]any{"ruleId": "MEM-OUT", "sequence": 40}), 404, "SET_NOT_FOUND")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"sequence": 40}), "ruleId")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-OUT"}), "sequence")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-OUT", "sequence": -1}), "sequence")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-OUT", "sequence": "10"}), "sequence")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-OUT", "sequence": 1.5}), "sequence")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-OUT", "sequence": 1, "enabled": "no"}), "enabled")
		expectSetInvalid(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": 7, "sequence": 1}), "ruleId")

		// The detail lists every member, disabled ones included, by sequence.
		detail := e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()
		is.Equal(detail["memberCount"], float64(3))
		is.Equal(memberIDsOf(t, detail), []string{"MEM-VALID", "MEM-GUARD", "MEM-CALC"})
		first := detail["members"].([]any)[0].(map[string]any)
		is.Equal(first["ruleName"], "Validate order")
		is.Equal(first["ruleType"], "VALIDATION")
		is.Equal(first["sequence"], float64(10))
		is.Equal(first["enabled"], false)
		parseTime(t, "addedAt", first["addedAt"])
		is.Equal(e.do("GET", setsBase, key, nil).expect(200).JSON()["data"].([]any)[0].(map[string]any)["memberCount"], float64(3))

		// PATCH changes sequence or enabled and answers with setId and updatedAt.
		u := e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"sequence": 5}).expect(200).JSON()
		parseTime(t, "updatedAt", u["updatedAt"])
		is.Equal(u, map[string]any{"setId": "FLOW", "ruleId": "MEM-CALC", "ruleName": "Rule MEM-CALC", "ruleType": "CALCULATION",
			"sequence": float64(5), "enabled": true, "addedAt": m["addedAt"], "updatedAt": u["updatedAt"]})
		is.True(!parseTime(t, "updatedAt", u["updatedAt"]).Before(parseTime(t, "addedAt", u["addedAt"])))
		u = e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"enabled": false}).expect(200).JSON()
		is.Equal(u["enabled"], false)
		is.Equal(u["sequence"], float64(5))
		is.Equal(u["setId"], "FLOW")
		parseTime(t, "updatedAt", u["updatedAt"])
		u = e.do("PATCH", setsBase+"/FLOW/members/MEM-VALID", key, map[string]any{"enabled": true, "sequence": 50}).expect(200).JSON()
		is.Equal(u["enabled"], true)
		is.Equal(u["sequence"], float64(50))
		detail = e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()
		is.Equal(memberIDsOf(t, detail), []string{"MEM-CALC", "MEM-GUARD", "MEM-VALID"})
		is.Equal(detail["members"].([]any)[0].(map[string]any)["enabled"], false)
		_, hasUpdated := detail["members"].([]any)[0].(map[string]any)["updatedAt"]
		is.True(hasUpdated) // a changed membership shows when it changed
		// The other set is not affected.
		is.Equal(memberIDsOf(t, e.do("GET", setsBase+"/OTHER", key, nil).expect(200).JSON()), []string{"MEM-GUARD"})

		// PATCH errors.
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{}), 400, "VALIDATION_ERROR")
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"sequence": nil, "enabled": nil}), 400, "VALIDATION_ERROR")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"sequence": -5}), "sequence")
		expectSetInvalid(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"enabled": "false"}), "enabled")
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-OUT", key, map[string]any{"sequence": 1}), 404, "MEMBER_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/NO-SUCH-RULE", key, map[string]any{"sequence": 1}), 404, "MEMBER_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/NO_SET/members/MEM-CALC", key, map[string]any{"sequence": 1}), 404, "SET_NOT_FOUND")
		is.Equal(e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()["members"].([]any)[0].(map[string]any)["sequence"], float64(5))

		// DELETE removes the membership; the rule stays.
		r := e.do("DELETE", setsBase+"/FLOW/members/MEM-CALC", key, nil).expect(204)
		is.Equal(len(r.Body), 0)
		expectSetError(t, e.do("DELETE", setsBase+"/FLOW/members/MEM-CALC", key, nil), 404, "MEMBER_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-CALC", key, map[string]any{"sequence": 1}), 404, "MEMBER_NOT_FOUND")
		expectSetError(t, e.do("DELETE", setsBase+"/NO_SET/members/MEM-CALC", key, nil), 404, "SET_NOT_FOUND")
		is.Equal(e.do("GET", rulesBase+"/"+calc["id"].(string), rulesKey, nil).expect(200).JSON()["ruleId"], "MEM-CALC")
		detail = e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()
		is.Equal(memberIDsOf(t, detail), []string{"MEM-GUARD", "MEM-VALID"})
		is.Equal(detail["memberCount"], float64(2))
		// It may join again.
		is.Equal(e.addMember(key, "FLOW", "MEM-CALC", 99)["sequence"], float64(99))

		// Members follow their rule: a renamed rule shows its new name, a
		// deleted one leaves every set.
		e.do("PUT", rulesBase, rulesKey, ruleBody("MEM-GUARD", withField("id", guard["id"]), withField("ruleName", "Renamed guard"))).expect(200)
		detail = e.do("GET", setsBase+"/OTHER", key, nil).expect(200).JSON()
		is.Equal(detail["members"].([]any)[0].(map[string]any)["ruleName"], "Renamed guard")
		e.do("DELETE", rulesBase+"?id="+guard["id"].(string), rulesKey, nil).expect(204)
		detail = e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()
		is.Equal(memberIDsOf(t, detail), []string{"MEM-VALID", "MEM-CALC"})
		is.Equal(detail["memberCount"], float64(2))
		is.Equal(e.do("GET", setsBase+"/OTHER", key, nil).expect(200).JSON()["memberCount"], float64(0))
		expectSetError(t, e.do("PATCH", setsBase+"/FLOW/members/MEM-GUARD", key, map[string]any{"sequence": 1}), 404, "MEMBER_NOT_FOUND")
		expectSetError(t, e.do("POST", setsBase+"/FLOW/members", key, map[string]any{"ruleId": "MEM-GUARD", "sequence": 1}), 404, "RULE_NOT_FOUND")
		// A new rule with the freed ruleId can join.
		e.createRule(rulesKey, ruleBody("MEM-GUARD", withField("ruleName", "Guard reborn")))
		is.Equal(e.addMember(key, "FLOW", "MEM-GUARD", 1)["ruleName"], "Guard reborn")
		is.Equal(memberIDsOf(t, e.do("GET", setsBase+"/FLOW", key, nil).expect(200).JSON()), []string{"MEM-GUARD", "MEM-VALID", "MEM-CALC"})

		// A sequence beyond 32 bits is either kept or refused naming the
		// field, the same on both engines; never a 5xx.
		t.Run("sequence beyond 32 bits", func(t *testing.T) {
			e := e.with(t)
			big := int64(1) << 31
			var problems []string
			for _, c := range []struct {
				method, path string
				body         map[string]any
				ok           int
			}{
				{"POST", setsBase + "/OTHER/members", map[string]any{"ruleId": "MEM-OUT", "sequence": big}, 201},
				{"PATCH", setsBase + "/FLOW/members/MEM-VALID", map[string]any{"sequence": big}, 200},
			} {
				r := e.do(c.method, c.path, key, c.body)
				var body map[string]any
				_ = json.Unmarshal(r.Body, &body)
				details, _ := body["details"].(map[string]any)
				switch {
				case r.Status == c.ok && body["sequence"] == float64(big):
				case r.Status == 400 && body["code"] == "VALIDATION_ERROR" && details["sequence"] != nil:
				default:
					problems = append(problems, fmt.Sprintf("%s %s: %d %s", c.method, c.path, r.Status, bytes.TrimSpace(r.Body)))
				}
			}
			if len(problems) > 0 {
				t.Errorf("sequence 2147483648 is neither kept nor refused with details.sequence:\n%s", strings.Join(problems, "\n"))
			}
		})
	})
}

func TestRuleCRUD(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allRuleFeatures...)

		// createdBy is left out of the comparisons (TestRuleCreatedBy).
		noCreatedBy := func(m map[string]any) map[string]any { delete(m, "createdBy"); return m }
		in := ruleBody("ORD-001")
		created := noCreatedBy(e.createRule(key, in))
		id, _ := created["id"].(string)
		is.True(store.IsID(id)) // id is a UUID
		createdAt := parseTime(t, "createdAt", created["createdAt"])
		is.Equal(created["updatedAt"], created["createdAt"])
		is.True(time.Since(createdAt) < time.Hour)
		want := map[string]any{
			"id": id, "ruleId": "ORD-001", "ruleName": "Rule ORD-001", "description": "Blocks small orders", "ruleType": "GUARD",
			"ruleCategory": "orders", "entityType": "order", "eventType": "beforeCreate",
			"conditionExpression": asJSON(t, in["conditionExpression"]),
			"successActions":      asJSON(t, in["successActions"]),
			"failureActions":      asJSON(t, in["failureActions"]),
			"enabled":             true, "priority": float64(100), "version": float64(1),
			"effectiveFrom": "2025-01-31T00:00:00Z", "effectiveTo": nil,
			"tenantId": acme.ID, "organizationId": acme.OrgID,
			"createdAt": created["createdAt"], "updatedAt": created["updatedAt"],
		}
		is.Equal(created, want)
		is.Equal(noCreatedBy(e.do("GET", rulesBase+"/"+id, key, nil).expect(200).JSON()), want)

		// PUT replaces every field.
		upd := ruleBody("ORD-001-B", withField("id", id), withField("ruleName", "Renamed"), withField("ruleType", "VALIDATION"),
			withoutField("description"), withoutField("ruleCategory"), withoutField("eventType"), withoutField("failureActions"),
			withField("successActions", nil), withField("enabled", false), withField("priority", 0), withField("version", 2),
			withField("conditionExpression", map[string]any{"field": "total", "operator": "IS_EMPTY"}),
			withField("effectiveFrom", "2025-02-01T08:30:00+02:00"), withField("effectiveTo", "2025-12-31"))
		updated := noCreatedBy(e.do("PUT", rulesBase, key, upd).expect(200).JSON())
		is.True(!parseTime(t, "updatedAt", updated["updatedAt"]).Before(createdAt))
		want = map[string]any{
			"id": id, "ruleId": "ORD-001-B", "ruleName": "Renamed", "description": "", "ruleType": "VALIDATION",
			"ruleCategory": "", "entityType": "order", "eventType": "",
			"conditionExpression": map[string]any{"field": "total", "operator": "IS_EMPTY"},
			"successActions":      nil, "failureActions": nil,
			"enabled": false, "priority": float64(0), "version": float64(2),
			"effectiveFrom": "2025-02-01T06:30:00Z", "effectiveTo": "2025-12-31T00:00:00Z",
			"tenantId": acme.ID, "organizationId": acme.OrgID,
			"createdAt": created["createdAt"], "updatedAt": updated["updatedAt"],
		}
		is.Equal(updated, want)
		is.Equal(noCreatedBy(e.do("GET", rulesBase+"/"+id, key, nil).expect(200).JSON()), want)
		// The old ruleId is free, the new one taken.
		list := e.do("GET", rulesBase+"?ruleId=ORD-001", key, nil).expect(200).JSON()
		is.Equal(list["data"], []any{})
		is.Equal(len(e.do("GET", rulesBase+"?ruleId=ORD-001-B", key, nil).expect(200).JSON()["data"].([]any)), 1)

		// Duplicate ruleIds: 409 {error} on create and on update.
		other := e.createRule(key, ruleBody("ORD-002"))
		for _, r := range []*response{
			e.do("POST", rulesBase, key, ruleBody("ORD-002")),
			e.do("POST", rulesBase, key, ruleBody("ORD-001-B", withField("entityType", "invoice"))),
			e.do("PUT", rulesBase, key, ruleBody("ORD-002", withField("id", id))),
		} {
			r.expect(409)
			body := r.JSON()
			msg, _ := body["error"].(string)
			is.True(msg != "")
			is.Equal(len(body), 1) // {error}, no code
		}
		is.Equal(e.do("GET", rulesBase+"/"+id, key, nil).expect(200).JSON()["ruleId"], "ORD-001-B")
		// PUT keeping its own ruleId is no conflict.
		e.do("PUT", rulesBase, key, ruleBody("ORD-002", withField("id", other["id"]), withField("priority", 7))).expect(200)

		// PUT: id required; unknown and malformed ids are not found.
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("ORD-009")), "id")
		expectRuleNotFound(t, e.do("PUT", rulesBase, key, ruleBody("ORD-009", withField("id", store.NewID()))))
		expectRuleNotFound(t, e.do("PUT", rulesBase, key, ruleBody("ORD-009", withField("id", "not-a-uuid"))))

		// DELETE: 204, then gone for every route; the ruleId is free again.
		r := e.do("DELETE", rulesBase+"?id="+id, key, nil).expect(204)
		is.Equal(len(r.Body), 0)
		expectRuleNotFound(t, e.do("GET", rulesBase+"/"+id, key, nil))
		expectRuleNotFound(t, e.do("DELETE", rulesBase+"?id="+id, key, nil))
		expectRuleNotFound(t, e.do("PUT", rulesBase, key, ruleBody("ORD-001-B", withField("id", id))))
		list = e.do("GET", rulesBase, key, nil).expect(200).JSON()
		is.Equal(ruleIDsOf(t, list), []string{"ORD-002"})
		again := e.createRule(key, ruleBody("ORD-001-B"))
		is.True(again["id"] != id)

		// Unknown and malformed ids.
		expectRuleNotFound(t, e.do("GET", rulesBase+"/"+store.NewID(), key, nil))
		expectRuleNotFound(t, e.do("GET", rulesBase+"/not-a-uuid", key, nil))
		expectRuleNotFound(t, e.do("DELETE", rulesBase+"?id="+store.NewID(), key, nil))
		expectRuleNotFound(t, e.do("DELETE", rulesBase+"?id=not-a-uuid", key, nil))
		expectRuleInvalid(t, e.do("DELETE", rulesBase, key, nil), "id")

		// Without a credential: 401 {error}.
		for _, r := range []*response{
			e.do("GET", rulesBase, "", nil), e.do("POST", rulesBase, "", ruleBody("X")), e.do("GET", rulesBase+"/"+id, "", nil),
			e.do("PUT", rulesBase, "", ruleBody("X", withField("id", id))), e.do("DELETE", rulesBase+"?id="+id, "", nil),
		} {
			r.expect(401)
			msg, _ := r.JSON()["error"].(string)
			is.True(msg != "")
		}
	})
}

// TestRuleCreatedBy checks that a rule records who created it (spec:
// "createdBy: Identifier of the creating user") when a signed-in user
// creates it.
func TestRuleCreatedBy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		role := "rule-author-" + randomHex(3)
		roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": role, "tenantId": acme.ID}).expect(201).JSON()["id"].(string)
		e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": []string{rulesapi.FeatureRulesCreate, rulesapi.FeatureRulesView}}).expect(200)
		admin := e.newKey(acme, "auth.users.manage", rulesapi.FeatureRulesCreate, rulesapi.FeatureRulesView) // a caller grants only what it holds
		email := "author." + randomHex(4) + "@acme.test"
		userID := e.do("POST", "/api/auth/users", admin, map[string]any{"email": email, "password": "author-password",
			"organizationId": acme.OrgID, "roles": []string{role}}).expect(201).JSON()["id"].(string)
		token := e.postForm("/api/login", map[string]string{"email": email, "password": "author-password"}).expect(200).JSON()["token"].(string)
		bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }

		created := e.send("POST", rulesBase, ruleBody("BY-USER"), bearer).expect(201).JSON()
		got := e.send("GET", rulesBase+"/"+created["id"].(string), nil, bearer).expect(200).JSON()
		t.Run("createdBy is the creating user", func(t *testing.T) {
			if created["createdBy"] != userID || got["createdBy"] != userID {
				t.Errorf("createdBy is %v on create and %v on get, want the user id %s",
					created["createdBy"], got["createdBy"], userID)
			}
		})
	})
}

func TestRuleValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allRuleFeatures...)

		nested := func(depth int) map[string]any {
			c := map[string]any{"field": "a", "operator": "=", "value": 1}
			for range depth {
				c = map[string]any{"operator": "AND", "rules": []any{c}}
			}
			return c
		}
		many := make([]any, 51)
		for i := range many {
			many[i] = map[string]any{"field": "a", "operator": "=", "value": i}
		}
		fiftyOne := make([]any, 51)
		for i := range fiftyOne {
			fiftyOne[i] = map[string]any{"type": "LOG", "config": map[string]any{"message": "m"}}
		}
		for _, tc := range []struct {
			name, field string
			edit        func(map[string]any)
			mentions    []string // words the field's message must contain
		}{
			{"missing ruleId", "ruleId", withoutField("ruleId"), nil},
			{"blank ruleId", "ruleId", withField("ruleId", "   "), nil},
			{"ruleId over 50", "ruleId", withField("ruleId", strings.Repeat("r", 51)), []string{"50"}},
			{"ruleId not text", "ruleId", withField("ruleId", 5), nil},
			{"missing ruleName", "ruleName", withoutField("ruleName"), nil},
			{"ruleName over 200", "ruleName", withField("ruleName", strings.Repeat("n", 201)), []string{"200"}},
			{"ruleName with NUL", "ruleName", withField("ruleName", "a\x00b"), nil},
			{"description over 5000", "description", withField("description", strings.Repeat("d", 5001)), []string{"5000"}},
			{"ruleCategory over 50", "ruleCategory", withField("ruleCategory", strings.Repeat("c", 51)), nil},
			{"missing entityType", "entityType", withoutField("entityType"), nil},
			{"entityType over 50", "entityType", withField("entityType", strings.Repeat("e", 51)), nil},
			{"eventType over 50", "eventType", withField("eventType", strings.Repeat("e", 51)), nil},
			{"missing ruleType", "ruleType", withoutField("ruleType"), nil},
			{"invalid ruleType", "ruleType", withField("ruleType", "BOGUS"), []string{"GUARD"}},
			{"lowercase ruleType", "ruleType", withField("ruleType", "guard"), nil},
			{"missing conditionExpression", "conditionExpression", withoutField("conditionExpression"), nil},
			{"null conditionExpression", "conditionExpression", withField("conditionExpression", nil), nil},
			{"unknown operator", "conditionExpression", withField("conditionExpression", map[string]any{"field": "status", "operator": "LIKE", "value": "x"}),
				[]string{"condition expression", "operator"}},
			{"unknown operator in a group", "conditionExpression", withField("conditionExpression", map[string]any{"operator": "OR", "rules": []any{
				map[string]any{"field": "a", "operator": "=", "value": 1}, map[string]any{"field": "b", "operator": "~=", "value": 2}}}),
				[]string{"condition expression", "rules[1].operator"}},
			{"unknown group operator", "conditionExpression", withField("conditionExpression", map[string]any{"operator": "XOR", "rules": []any{
				map[string]any{"field": "a", "operator": "=", "value": 1}}}), []string{"operator"}},
			{"empty group", "conditionExpression", withField("conditionExpression", map[string]any{"operator": "AND", "rules": []any{}}), []string{"rules"}},
			{"missing value", "conditionExpression", withField("conditionExpression", map[string]any{"field": "a", "operator": "="}), []string{"value"}},
			{"bad field path", "conditionExpression", withField("conditionExpression", map[string]any{"field": "1abc", "operator": "=", "value": 1}), []string{"field"}},
			{"neither shape", "conditionExpression", withField("conditionExpression", map[string]any{"foo": "bar"}), nil},
			{"condition as text", "conditionExpression", withField("conditionExpression", "status = 1"), nil},
			{"too deep", "conditionExpression", withField("conditionExpression", nested(11)), []string{"safety limits"}},
			{"too many rules in a group", "conditionExpression", withField("conditionExpression", map[string]any{"operator": "AND", "rules": many}), []string{"safety limits"}},
			{"field path over 200", "conditionExpression", withField("conditionExpression", map[string]any{"field": strings.Repeat("f", 201), "operator": "=", "value": 1}),
				[]string{"safety limits"}},
			{"unknown action type", "successActions", withField("successActions", []any{map[string]any{"type": "EXPLODE"}}), []string{"type"}},
			{"actions not a list", "successActions", withField("successActions", map[string]any{"type": "LOG", "config": map[string]any{"message": "m"}}), nil},
			{"LOG without message", "successActions", withField("successActions", []any{map[string]any{"type": "LOG", "config": map[string]any{}}}), []string{"message"}},
			{"over 50 actions", "successActions", withField("successActions", fiftyOne), nil},
			{"invalid failureActions", "failureActions", withField("failureActions", []any{map[string]any{"type": "SET_FIELD", "config": map[string]any{"value": 1}}}), []string{"field"}},
			{"missing enabled", "enabled", withoutField("enabled"), nil},
			{"null enabled", "enabled", withField("enabled", nil), nil},
			{"enabled as text", "enabled", withField("enabled", "true"), nil},
			{"missing priority", "priority", withoutField("priority"), nil},
			{"priority 10000", "priority", withField("priority", 10000), nil},
			{"priority -1", "priority", withField("priority", -1), nil},
			{"priority as text", "priority", withField("priority", "5"), nil},
			{"priority 1.5", "priority", withField("priority", 1.5), nil},
			{"priority 1e400", "priority", withField("priority", json.RawMessage("1e400")), nil},
			{"missing version", "version", withoutField("version"), nil},
			{"version 0", "version", withField("version", 0), nil},
			{"version -3", "version", withField("version", -3), nil},
			{"version as text", "version", withField("version", "1"), nil},
			{"effectiveFrom not a date", "effectiveFrom", withField("effectiveFrom", "tomorrow"), nil},
			{"effectiveFrom impossible date", "effectiveFrom", withField("effectiveFrom", "2025-13-45"), nil},
			{"effectiveFrom as number", "effectiveFrom", withField("effectiveFrom", 20250131), nil},
			{"effectiveTo before effectiveFrom", "effectiveTo", withField("effectiveTo", "2025-01-30"), nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				msg := expectRuleInvalid(t, e.do("POST", rulesBase, key, ruleBody("VAL-1", tc.edit)), tc.field)
				for _, w := range tc.mentions {
					if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
						t.Errorf("details.%s %q does not mention %q", tc.field, msg, w)
					}
				}
			})
		}
		// None of them was stored.
		is.Equal(e.do("GET", rulesBase, key, nil).expect(200).JSON()["data"], []any{})

		// Several problems are reported together.
		r := e.do("POST", rulesBase, key, map[string]any{"ruleName": "x", "priority": 10000})
		expectRuleInvalid(t, r, "ruleId")
		details := r.JSON()["details"].(map[string]any)
		for _, f := range []string{"ruleId", "ruleType", "entityType", "conditionExpression", "enabled", "priority", "version"} {
			_, ok := details[f]
			is.True(ok) // every missing or wrong field is named
		}

		// The boundaries are accepted.
		for i, edit := range []func(map[string]any){
			withField("priority", 0), withField("priority", 9999), withField("version", 1), withField("ruleId", strings.Repeat("r", 50)),
			withField("ruleName", strings.Repeat("ñ", 200)), withField("description", strings.Repeat("d", 5000)),
			withField("ruleCategory", strings.Repeat("c", 50)), withField("entityType", strings.Repeat("e", 50)), withField("eventType", strings.Repeat("v", 50)),
			withField("successActions", nil), withoutField("successActions"), withField("effectiveTo", "2025-01-31"), withField("conditionExpression", nested(10)),
			withField("conditionExpression", map[string]any{"field": "a", "operator": "=", "value": nil}),
			withField("conditionExpression", map[string]any{"field": "total", "operator": ">", "compareToField": "limit"}),
			withField("ruleType", "ASSIGNMENT"),
		} {
			body := ruleBody(fmt.Sprintf("OK-%02d", i), edit)
			if i == 3 {
				body = ruleBody(strings.Repeat("r", 50))
			}
			got := e.createRule(key, body)
			is.Equal(got["ruleId"], body["ruleId"])
		}

		// PUT validates the same way and leaves the rule as it was.
		rule := e.createRule(key, ruleBody("PUT-1"))
		id := rule["id"].(string)
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("PUT-1", withField("id", id), withField("priority", 10000))), "priority")
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("PUT-1", withField("id", id), withoutField("enabled"))), "enabled")
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("PUT-1", withField("id", id), withField("conditionExpression",
			map[string]any{"field": "a", "operator": "NOPE", "value": 1}))), "conditionExpression")
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("PUT-1", withField("id", id), withField("version", 0))), "version")
		expectRuleInvalid(t, e.do("PUT", rulesBase, key, ruleBody("PUT-1", withField("id", 5))), "id")
		is.Equal(e.do("GET", rulesBase+"/"+id, key, nil).expect(200).JSON(), rule)

		// Numbers beyond 32 bits: either stored as sent or refused with a
		// 400 naming the field, the same on both engines.
		t.Run("version beyond 32 bits", func(t *testing.T) {
			e := e.with(t)
			r := e.do("POST", rulesBase, key, ruleBody("BIG-VERSION", withField("version", int64(1)<<31)))
			switch {
			case r.Status == 201 && r.JSON()["version"] == float64(int64(1)<<31):
			case r.Status == 400 && r.JSON()["error"] == "Validation failed":
				expectRuleInvalid(t, r, "version")
			default:
				t.Errorf("version 2147483648 answers %d %s, want 201 or a 400 naming version",
					r.Status, bytes.TrimSpace(r.Body))
			}
		})
	})
}

func TestRuleList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allRuleFeatures...)

		empty := e.do("GET", rulesBase, key, nil).expect(200).JSON()
		is.Equal(empty, map[string]any{"data": []any{}, "pagination": map[string]any{"page": float64(1), "pageSize": float64(20),
			"total": float64(0), "totalPages": float64(0)}})

		// Five rules whose fields sort in different orders; in creation order:
		specs := []map[string]any{
			ruleBody("ORD-001", withField("ruleName", "Block big orders"), withField("ruleCategory", "limits"), withField("priority", 50)),
			ruleBody("ORD-002", withField("ruleName", "Validate address"), withField("ruleType", "VALIDATION"), withField("eventType", "beforeUpdate"),
				withField("ruleCategory", "quality"), withField("enabled", false), withField("priority", 10)),
			ruleBody("INV-001", withField("ruleName", "Compute tax"), withField("ruleType", "CALCULATION"), withField("entityType", "invoice"),
				withoutField("eventType"), withoutField("ruleCategory"), withField("priority", 900)),
			ruleBody("SHIP-BIG", withField("ruleName", "Notify shipping"), withField("ruleType", "ACTION"), withField("entityType", "shipment"),
				withField("eventType", "afterCreate"), withField("ruleCategory", "limits"), withField("priority", 500)),
			ruleBody("ASSIGN-1", withField("ruleName", "Assign owner"), withField("ruleType", "ASSIGNMENT"), withField("ruleCategory", "people"),
				withField("enabled", false), withField("priority", 300)),
		}
		ids := make([]string, len(specs))
		for i, s := range specs {
			ids[i] = e.createRule(key, s)["id"].(string)
		}
		// updatedAt order: INV-001, ORD-001, ASSIGN-1, ORD-002, SHIP-BIG.
		for _, i := range []int{2, 0, 4, 1, 3} {
			body := maps.Clone(specs[i])
			body["id"] = ids[i]
			e.do("PUT", rulesBase, key, body).expect(200)
		}
		// A deleted rule and another tenant's rule are never listed.
		gone := e.createRule(key, ruleBody("GONE-BIG"))
		e.do("DELETE", rulesBase+"?id="+gone["id"].(string), key, nil).expect(204)
		globex := e.newTenant("Globex")
		e.createRule(e.newKey(globex, rulesapi.FeatureRulesCreate), ruleBody("ORD-003", withField("ruleName", "Block big orders")))

		list := e.do("GET", rulesBase, key, nil).expect(200).JSON()
		is.Equal(list["pagination"], map[string]any{"page": float64(1), "pageSize": float64(20), "total": float64(5), "totalPages": float64(1)})
		is.Equal(sorted(ruleIDsOf(t, list)), []string{"ASSIGN-1", "INV-001", "ORD-001", "ORD-002", "SHIP-BIG"})
		// Items are whole rules.
		for _, it := range list["data"].([]any) {
			item := it.(map[string]any)
			for _, f := range []string{"id", "ruleId", "ruleName", "ruleType", "entityType", "conditionExpression", "successActions",
				"failureActions", "enabled", "priority", "version", "tenantId", "organizationId", "createdAt", "updatedAt"} {
				if _, ok := item[f]; !ok {
					t.Fatalf("list item without %s: %v", f, item)
				}
			}
		}

		query := func(q string) []string {
			t.Helper()
			return ruleIDsOf(t, e.do("GET", rulesBase+"?"+q, key, nil).expect(200).JSON())
		}
		filtered := func(q string) []string { t.Helper(); return sorted(query(q)) }
		// Filters.
		is.Equal(filtered("search=big"), []string{"ORD-001", "SHIP-BIG"}) // names and ids
		is.Equal(filtered("search=BLOCK%20BIG"), []string{"ORD-001"})     // case-insensitive
		is.Equal(filtered("search=inv-"), []string{"INV-001"})            // ids
		is.Equal(filtered("search=%25"), []string{})                      // % is literal
		is.Equal(filtered("search=_"), []string{})                        // _ is literal
		is.Equal(filtered("search=orders"), []string{"ORD-001"})          // not the description ("Blocks small orders")
		is.Equal(filtered("ruleId=ORD-001"), []string{"ORD-001"})         // exact
		is.Equal(filtered("ruleId=ORD"), []string{})                      // not a prefix
		is.Equal(filtered("ruleType=VALIDATION"), []string{"ORD-002"})
		is.Equal(filtered("ruleType=GUARD"), []string{"ORD-001"})
		is.Equal(filtered("entityType=order"), []string{"ASSIGN-1", "ORD-001", "ORD-002"})
		is.Equal(filtered("eventType=beforeCreate"), []string{"ASSIGN-1", "ORD-001"})
		is.Equal(filtered("enabled=false"), []string{"ASSIGN-1", "ORD-002"})
		is.Equal(filtered("enabled=true"), []string{"INV-001", "ORD-001", "SHIP-BIG"})
		is.Equal(filtered("ruleCategory=limits"), []string{"ORD-001", "SHIP-BIG"})
		is.Equal(filtered("entityType=order&enabled=true"), []string{"ORD-001"})
		is.Equal(filtered("ruleCategory=limits&search=ship&ruleType=ACTION&eventType=afterCreate"), []string{"SHIP-BIG"})
		is.Equal(e.do("GET", rulesBase+"?entityType=order", key, nil).expect(200).JSON()["pagination"],
			map[string]any{"page": float64(1), "pageSize": float64(20), "total": float64(3), "totalPages": float64(1)})

		// Sorting.
		reversed := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
		for field, asc := range map[string][]string{
			"ruleName":  {"ASSIGN-1", "ORD-001", "INV-001", "SHIP-BIG", "ORD-002"},
			"priority":  {"ORD-002", "ORD-001", "ASSIGN-1", "SHIP-BIG", "INV-001"},
			"createdAt": {"ORD-001", "ORD-002", "INV-001", "SHIP-BIG", "ASSIGN-1"},
			"updatedAt": {"INV-001", "ORD-001", "ASSIGN-1", "ORD-002", "SHIP-BIG"},
		} {
			is.Equal(query("sortField="+field), asc)
			is.Equal(query("sortField="+field+"&sortDir=asc"), asc)
			is.Equal(query("sortField="+field+"&sortDir=desc"), reversed(asc))
			is.Equal(query("sortField="+field+"&sortDir=DESC"), reversed(asc))
		}
		is.Equal(query("sortField=priority&sortDir=desc&enabled=true"), []string{"INV-001", "SHIP-BIG", "ORD-001"})
		expectRuleInvalid(t, e.do("GET", rulesBase+"?sortField=ruleId", key, nil), "sortField")
		expectRuleInvalid(t, e.do("GET", rulesBase+"?sortField=rule_name", key, nil), "sortField")
		expectRuleInvalid(t, e.do("GET", rulesBase+"?sortField=priority%3BDROP", key, nil), "sortField")
		expectRuleInvalid(t, e.do("GET", rulesBase+"?sortDir=sideways", key, nil), "sortDir")

		// Paging.
		page := e.do("GET", rulesBase+"?sortField=priority&pageSize=2", key, nil).expect(200).JSON()
		is.Equal(page["pagination"], map[string]any{"page": float64(1), "pageSize": float64(2), "total": float64(5), "totalPages": float64(3)})
		is.Equal(ruleIDsOf(t, page), []string{"ORD-002", "ORD-001"})
		page = e.do("GET", rulesBase+"?sortField=priority&pageSize=2&page=3", key, nil).expect(200).JSON()
		is.Equal(ruleIDsOf(t, page), []string{"INV-001"})
		is.Equal(page["pagination"], map[string]any{"page": float64(3), "pageSize": float64(2), "total": float64(5), "totalPages": float64(3)})
		page = e.do("GET", rulesBase+"?pageSize=2&page=4", key, nil).expect(200).JSON()
		is.Equal(page["data"], []any{})
		is.Equal(e.do("GET", rulesBase+"?pageSize=500", key, nil).expect(200).JSON()["pagination"].(map[string]any)["pageSize"], float64(100))
		is.Equal(e.do("GET", rulesBase+"?page=&pageSize=", key, nil).expect(200).JSON()["pagination"].(map[string]any)["pageSize"], float64(20))
		for q, field := range map[string]string{
			"page=0": "page", "page=-1": "page", "page=x": "page", "pageSize=0": "pageSize", "pageSize=-5": "pageSize",
			"pageSize=1.5": "pageSize", "enabled=maybe": "enabled",
		} {
			expectRuleInvalid(t, e.do("GET", rulesBase+"?"+q, key, nil), field)
		}
		// Beyond the data: an empty page, never an error.
		is.Equal(e.do("GET", rulesBase+"?page=9223372036854775807&pageSize=1", key, nil).expect(200).JSON()["data"], []any{})

		// Default pageSize 20, maximum 100, over 105 rules (made through the
		// service).
		bulk := e.newTenant("Bulk")
		bulkKey := e.newKey(bulk, rulesapi.FeatureRulesView)
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: bulk.ID, OrganizationID: bulk.OrgID})
		for i := range 105 {
			var in rules.RuleInput
			data, _ := json.Marshal(ruleBody(fmt.Sprintf("BULK-%03d", i)))
			if err := json.Unmarshal(data, &in); err != nil {
				t.Fatal(err)
			}
			if _, err := e.kit.Rules.CreateRule(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		list = e.do("GET", rulesBase, bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 20)
		is.Equal(list["pagination"], map[string]any{"page": float64(1), "pageSize": float64(20), "total": float64(105), "totalPages": float64(6)})
		list = e.do("GET", rulesBase+"?pageSize=1000", bulkKey, nil).expect(200).JSON()
		is.Equal(len(list["data"].([]any)), 100)
		is.Equal(list["pagination"], map[string]any{"page": float64(1), "pageSize": float64(100), "total": float64(105), "totalPages": float64(2)})
		list = e.do("GET", rulesBase+"?pageSize=100&page=2&sortField=ruleName", bulkKey, nil).expect(200).JSON()
		is.Equal(ruleIDsOf(t, list), []string{"BULK-100", "BULK-101", "BULK-102", "BULK-103", "BULK-104"})
	})
}

func TestRuleFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		full := e.newKey(acme, allRuleFeatures...)
		rule := e.createRule(full, ruleBody("FEAT-1"))
		id := rule["id"].(string)

		// expectForbidden checks the rules API's 403 {error, required}.
		expectForbidden := func(r *response, feature string) {
			t.Helper()
			r.expect(403)
			body := r.JSON()
			msg, _ := body["error"].(string)
			is.True(msg != "")
			is.Equal(body["required"], []any{feature})
			_, hasCode := body["code"]
			is.True(!hasCode) // the rules API has no code field
		}
		none := e.newKey(acme)
		viewOnly := e.newKey(acme, rulesapi.FeatureRulesView)
		createOnly := e.newKey(acme, rulesapi.FeatureRulesCreate)
		editOnly := e.newKey(acme, rulesapi.FeatureRulesEdit)
		deleteOnly := e.newKey(acme, rulesapi.FeatureRulesDelete)

		expectForbidden(e.do("GET", rulesBase, none, nil), rulesapi.FeatureRulesView)
		expectForbidden(e.do("GET", rulesBase+"/"+id, none, nil), rulesapi.FeatureRulesView)
		expectForbidden(e.do("GET", rulesBase, createOnly, nil), rulesapi.FeatureRulesView)
		expectForbidden(e.do("GET", rulesBase+"/"+id, editOnly, nil), rulesapi.FeatureRulesView)
		expectForbidden(e.do("POST", rulesBase, none, ruleBody("FEAT-2")), rulesapi.FeatureRulesCreate)
		expectForbidden(e.do("POST", rulesBase, viewOnly, ruleBody("FEAT-2")), rulesapi.FeatureRulesCreate)
		expectForbidden(e.do("PUT", rulesBase, viewOnly, ruleBody("FEAT-1", withField("id", id))), rulesapi.FeatureRulesEdit)
		expectForbidden(e.do("PUT", rulesBase, createOnly, ruleBody("FEAT-1", withField("id", id))), rulesapi.FeatureRulesEdit)
		expectForbidden(e.do("DELETE", rulesBase+"?id="+id, viewOnly, nil), rulesapi.FeatureRulesDelete)
		expectForbidden(e.do("DELETE", rulesBase+"?id="+id, editOnly, nil), rulesapi.FeatureRulesDelete)
		// The feature check comes first, even for bad input.
		expectForbidden(e.do("POST", rulesBase, viewOnly, "{"), rulesapi.FeatureRulesCreate)
		is.Equal(e.do("GET", rulesBase+"/"+id, full, nil).expect(200).JSON(), rule) // nothing changed

		// Each feature is enough for its route.
		is.Equal(e.do("GET", rulesBase+"/"+id, viewOnly, nil).expect(200).JSON()["ruleId"], "FEAT-1")
		e.do("GET", rulesBase, viewOnly, nil).expect(200)
		created := e.createRule(createOnly, ruleBody("FEAT-2"))
		is.Equal(e.do("PUT", rulesBase, editOnly, ruleBody("FEAT-2", withField("id", created["id"]), withField("priority", 1))).expect(200).JSON()["priority"], float64(1))
		e.do("DELETE", rulesBase+"?id="+created["id"].(string), deleteOnly, nil).expect(204)
		// A wildcard grant covers them all.
		wild := e.newKey(acme, "business_rules.*")
		e.do("GET", rulesBase, wild, nil).expect(200)
		e.createRule(wild, ruleBody("FEAT-3"))

		// Rule-set routes need no feature at all.
		e.createSet(none, "NO_FEATURES", "No features")
		e.addMember(none, "NO_FEATURES", "FEAT-1", 1)
		e.do("GET", setsBase+"/NO_FEATURES", none, nil).expect(200)
	})
}

func TestRulesTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		acmeKey, globexKey := e.newKey(acme, allRuleFeatures...), e.newKey(globex, allRuleFeatures...)

		rule := e.createRule(acmeKey, ruleBody("SHARED-ID"))
		id := rule["id"].(string)
		e.createSet(acmeKey, "SHARED_SET", "Acme set")
		e.addMember(acmeKey, "SHARED_SET", "SHARED-ID", 10)

		// Globex cannot see, change or delete Acme's rule.
		expectRuleNotFound(t, e.do("GET", rulesBase+"/"+id, globexKey, nil))
		expectRuleNotFound(t, e.do("PUT", rulesBase, globexKey, ruleBody("HIJACKED", withField("id", id))))
		expectRuleNotFound(t, e.do("DELETE", rulesBase+"?id="+id, globexKey, nil))
		list := e.do("GET", rulesBase, globexKey, nil).expect(200).JSON()
		is.Equal(list["data"], []any{})
		is.Equal(list["pagination"].(map[string]any)["total"], float64(0))
		is.Equal(e.do("GET", rulesBase+"?ruleId=SHARED-ID", globexKey, nil).expect(200).JSON()["data"], []any{})
		is.Equal(e.do("GET", rulesBase+"?search=shared", globexKey, nil).expect(200).JSON()["data"], []any{})

		// Nor Acme's set.
		expectSetError(t, e.do("GET", setsBase+"/SHARED_SET", globexKey, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/SHARED_SET", globexKey, map[string]any{"name": "Hijacked"}), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("DELETE", setsBase+"/SHARED_SET?force=true", globexKey, nil), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("POST", setsBase+"/SHARED_SET/members", globexKey, map[string]any{"ruleId": "SHARED-ID", "sequence": 1}), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("PATCH", setsBase+"/SHARED_SET/members/SHARED-ID", globexKey, map[string]any{"enabled": false}), 404, "SET_NOT_FOUND")
		expectSetError(t, e.do("DELETE", setsBase+"/SHARED_SET/members/SHARED-ID", globexKey, nil), 404, "SET_NOT_FOUND")
		is.Equal(e.do("GET", setsBase, globexKey, nil).expect(200).JSON()["data"], []any{})

		// Acme's rule cannot join Globex's set.
		e.createSet(globexKey, "GLOBEX_SET", "Globex set")
		expectSetError(t, e.do("POST", setsBase+"/GLOBEX_SET/members", globexKey, map[string]any{"ruleId": "SHARED-ID", "sequence": 1}), 404, "RULE_NOT_FOUND")

		// Globex may use the same ruleId and set id for its own.
		own := e.createRule(globexKey, ruleBody("SHARED-ID", withField("ruleName", "Globex rule")))
		is.True(own["id"] != id)
		is.Equal(own["tenantId"], globex.ID)
		e.createSet(globexKey, "SHARED_SET", "Globex shared")
		m := e.addMember(globexKey, "SHARED_SET", "SHARED-ID", 5)
		is.Equal(m["ruleName"], "Globex rule")
		is.Equal(ruleIDsOf(t, e.do("GET", rulesBase, globexKey, nil).expect(200).JSON()), []string{"SHARED-ID"})
		is.Equal(sorted(setIDsOf(t, e.do("GET", setsBase, globexKey, nil).expect(200).JSON())), []string{"GLOBEX_SET", "SHARED_SET"})

		// Acme's rule and set are untouched.
		is.Equal(e.do("GET", rulesBase+"/"+id, acmeKey, nil).expect(200).JSON(), rule)
		detail := e.do("GET", setsBase+"/SHARED_SET", acmeKey, nil).expect(200).JSON()
		is.Equal(detail["name"], "Acme set")
		is.Equal(memberIDsOf(t, detail), []string{"SHARED-ID"})
		is.Equal(detail["members"].([]any)[0].(map[string]any)["ruleName"], "Rule SHARED-ID")
		is.Equal(detail["members"].([]any)[0].(map[string]any)["sequence"], float64(10))
		is.Equal(e.do("GET", rulesBase, acmeKey, nil).expect(200).JSON()["pagination"].(map[string]any)["total"], float64(1))
		// And Acme cannot reach Globex's rule either.
		expectRuleNotFound(t, e.do("GET", rulesBase+"/"+own["id"].(string), acmeKey, nil))
	})
}

// expectSetLimited checks a rule-set 429: the shared limit body and
// headers, the wait within the minute.
func expectSetLimited(t testing.TB, r *response, limit int) {
	t.Helper()
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429 (limit %d); body: %s", r.Status, limit, r.Body)
	}
	if got := r.JSON(); len(got) != 1 || got["error"] != "Too many requests. Please try again later." {
		t.Errorf("429 body %s", r.Body)
	}
	if got := r.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
		t.Errorf("X-RateLimit-Limit %q, want %d", got, limit)
	}
	if got := r.Header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining %q, want 0", got)
	}
	for _, h := range []string{"Retry-After", "X-RateLimit-Reset"} {
		if n, err := strconv.Atoi(r.Header.Get(h)); err != nil || n < 1 || n > 60 {
			t.Errorf("%s %q, want 1 to 60 seconds", h, r.Header.Get(h))
		}
	}
}

func TestRuleSetRateLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		// A policy with the spec's defaults (what Options applies when
		// RateLimit is nil), fresh so that nothing has counted yet.
		e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.DefaultConfig(), nil, e.kit.Logger)})
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		// Two keys of one tenant share its buckets.
		acmeKey, acmeKey2 := e.newKey(acme), e.newKey(acme, allRuleFeatures...)
		globexKey := e.newKey(globex)
		e.createRule(acmeKey2, ruleBody("RL-1")) // the rules routes have no limit

		// Refused credentials use no points.
		for range 5 {
			expectSetError(t, e.do("GET", setsBase, "", nil), 401, "UNAUTHORIZED")
			expectSetError(t, e.do("POST", setsBase, "", map[string]any{"id": "NOPE", "name": "Nope"}), 401, "UNAUTHORIZED")
		}

		// Writes: 50 per minute, create, update and delete of sets and
		// members alike.
		keyOf := func(i int) string {
			if i%2 == 0 {
				return acmeKey
			}
			return acmeKey2
		}
		e.createSet(acmeKey, "LIMITED", "Limited")                                                           // 1
		e.addMember(acmeKey2, "LIMITED", "RL-1", 10)                                                         // 2
		e.do("PATCH", setsBase+"/LIMITED/members/RL-1", acmeKey, map[string]any{"sequence": 20}).expect(200) // 3
		e.do("DELETE", setsBase+"/LIMITED/members/RL-1", acmeKey2, nil).expect(204)                          // 4
		e.createSet(acmeKey, "TEMP", "Temp")                                                                 // 5
		e.do("DELETE", setsBase+"/TEMP", acmeKey2, nil).expect(204)                                          // 6
		for i := 7; i <= 50; i++ {
			e.do("PATCH", setsBase+"/LIMITED", keyOf(i), map[string]any{"description": fmt.Sprint(i)}).expect(200)
		}
		expectSetLimited(t, e.do("POST", setsBase, acmeKey, map[string]any{"id": "ONE_TOO_MANY", "name": "x"}), 50)
		expectSetLimited(t, e.do("PATCH", setsBase+"/LIMITED", acmeKey2, map[string]any{"description": "51"}), 50)
		expectSetLimited(t, e.do("DELETE", setsBase+"/LIMITED?force=true", acmeKey, nil), 50)
		expectSetLimited(t, e.do("POST", setsBase+"/LIMITED/members", acmeKey, map[string]any{"ruleId": "RL-1", "sequence": 1}), 50)
		expectSetLimited(t, e.do("PATCH", setsBase+"/LIMITED/members/RL-1", acmeKey, map[string]any{"sequence": 1}), 50)
		expectSetLimited(t, e.do("DELETE", setsBase+"/LIMITED/members/RL-1", acmeKey, nil), 50)
		// Refused writes changed nothing; reads have their own bucket.
		got := e.do("GET", setsBase+"/LIMITED", acmeKey, nil).expect(200).JSON() // read 1
		if got["description"] != "50" {
			t.Fatalf("description %v after the refused writes, want 50", got["description"])
		}
		expectSetError(t, e.do("GET", setsBase+"/ONE_TOO_MANY", acmeKey2, nil), 404, "SET_NOT_FOUND") // read 2

		// Reads: 100 per minute, list and get alike.
		for i := 3; i <= 100; i++ {
			switch i % 3 {
			case 0:
				e.do("GET", setsBase, keyOf(i), nil).expect(200)
			case 1:
				e.do("GET", setsBase+"/LIMITED", keyOf(i), nil).expect(200)
			default:
				e.do("GET", setsBase+"?search=lim&limit=5", keyOf(i), nil).expect(200)
			}
		}
		expectSetLimited(t, e.do("GET", setsBase+"/LIMITED", acmeKey, nil), 100)
		expectSetLimited(t, e.do("GET", setsBase, acmeKey2, nil), 100)
		expectSetLimited(t, e.do("GET", setsBase+"/NO_SUCH_SET", acmeKey, nil), 100) // refused before the lookup
		expectSetLimited(t, e.do("GET", setsBase+"?limit=abc", acmeKey, nil), 100)

		// The rules routes are not limited.
		e.do("GET", rulesBase, acmeKey2, nil).expect(200)
		e.createRule(acmeKey2, ruleBody("RL-2"))

		// Another tenant is not affected.
		e.do("GET", setsBase, globexKey, nil).expect(200)
		e.createSet(globexKey, "LIMITED", "Globex limited")
		e.do("GET", setsBase+"/LIMITED", globexKey, nil).expect(200)
		e.do("PATCH", setsBase+"/LIMITED", globexKey, map[string]any{"enabled": false}).expect(200)
	})
}

func TestRulesBadInputNever5xx(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.unlimited() // hundreds of requests: 429s would hide the handlers
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allRuleFeatures...)
		rule := e.createRule(key, ruleBody("BAD-1"))
		id := rule["id"].(string)
		e.createSet(key, "BAD_INPUT", "Bad input")
		e.addMember(key, "BAD_INPUT", "BAD-1", 10)

		// check4xx fails unless r is a 4xx with a JSON error body.
		check4xx := func(what string, r *response) {
			t.Helper()
			if r.Status < 400 || r.Status >= 500 {
				t.Errorf("%s: status %d, want 4xx; body: %.300s", what, r.Status, r.Body)
				return
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil || body["error"] == nil {
				t.Errorf("%s: %d without a JSON error body: %.300s", what, r.Status, r.Body)
			}
		}
		type target struct{ method, path string }
		bodyRoutes := []target{
			{"POST", setsBase}, {"PATCH", setsBase + "/BAD_INPUT"}, {"POST", setsBase + "/BAD_INPUT/members"},
			{"PATCH", setsBase + "/BAD_INPUT/members/BAD-1"}, {"POST", rulesBase}, {"PUT", rulesBase},
		}

		// Malformed JSON: 400 everywhere.
		deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
		for _, body := range []string{"", "{", "}", "{\"id\":", "{\"id\": \"A\"} trailing", "{\"a\":1}{\"b\":2}", "\xff\xfe",
			"{'id': 'X'}", "{\"id\": \"X\",}", "NaN", "[1,2", deep, "\x00"} {
			for _, rt := range bodyRoutes {
				r := e.do(rt.method, rt.path, key, body)
				check4xx(fmt.Sprintf("%s %s with %.20q", rt.method, rt.path, body), r)
				if r.Status != 400 {
					t.Errorf("%s %s with %.20q: status %d, want 400", rt.method, rt.path, body, r.Status)
				}
			}
		}
		// JSON that is not an object.
		for _, body := range []string{"[]", "\"text\"", "42", "true", "[{\"id\":\"X\"}]"} {
			for _, rt := range bodyRoutes {
				check4xx(fmt.Sprintf("%s %s with %s", rt.method, rt.path, body), e.do(rt.method, rt.path, key, body))
			}
		}
		// A body over the 1 MiB limit: 413.
		tooBig := map[string]any{"id": "BIG", "name": strings.Repeat("x", 2<<20)}
		for _, rt := range bodyRoutes {
			r := e.do(rt.method, rt.path, key, tooBig)
			check4xx(rt.method+" "+rt.path+" with 2 MiB", r)
			if r.Status != 413 {
				t.Errorf("%s %s with 2 MiB: status %d, want 413", rt.method, rt.path, r.Status)
			}
		}
		expectSetError(t, e.do("POST", setsBase, key, tooBig), 413, "PAYLOAD_TOO_LARGE")

		// Wrong JSON types, huge strings and odd values, field by field.
		huge := strings.Repeat("x", 300_000)
		for _, c := range []struct {
			target
			body any
		}{
			{bodyRoutes[0], map[string]any{"id": 5, "name": "x"}},
			{bodyRoutes[0], map[string]any{"id": "X", "name": []any{"x"}}},
			{bodyRoutes[0], map[string]any{"id": "X", "name": "x", "description": map[string]any{}}},
			{bodyRoutes[0], map[string]any{"id": "X", "name": "x", "enabled": "yes"}},
			{bodyRoutes[0], map[string]any{"id": "X", "name": "x", "enabled": 1}},
			{bodyRoutes[0], map[string]any{"id": huge, "name": "x"}},
			{bodyRoutes[0], map[string]any{"id": "HUGE", "name": huge}},
			{bodyRoutes[0], map[string]any{"id": "HUGE", "name": "x", "description": huge}},
			{bodyRoutes[0], map[string]any{"id": "X\x00", "name": "x"}},
			{bodyRoutes[0], map[string]any{"id": "X", "name": "x\x00"}},
			{bodyRoutes[1], map[string]any{"name": 5}},
			{bodyRoutes[1], map[string]any{"enabled": "no"}},
			{bodyRoutes[1], map[string]any{"description": []any{1}}},
			{bodyRoutes[1], map[string]any{"name": huge}},
			{bodyRoutes[1], map[string]any{"description": huge}},
			{bodyRoutes[1], map[string]any{"description": "nul\x00"}},
			{bodyRoutes[2], map[string]any{"ruleId": 5, "sequence": 1}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD-1", "sequence": "1"}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD-1", "sequence": 1.5}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD-1", "sequence": json.RawMessage("1e99")}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD-1", "sequence": json.RawMessage("99999999999999999999")}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD-1", "sequence": 1, "enabled": "true"}},
			{bodyRoutes[2], map[string]any{"ruleId": huge, "sequence": 1}},
			{bodyRoutes[2], map[string]any{"ruleId": "BAD\x00", "sequence": 1}},
			{bodyRoutes[2], map[string]any{"ruleId": "\xff\xfe", "sequence": 1}},
			{bodyRoutes[2], map[string]any{"ruleId": []any{"BAD-1"}, "sequence": 1}},
			{bodyRoutes[3], map[string]any{"sequence": "1"}},
			{bodyRoutes[3], map[string]any{"enabled": 1}},
			{bodyRoutes[3], map[string]any{"sequence": json.RawMessage("99999999999999999999")}},
			{bodyRoutes[3], map[string]any{"sequence": -1}},
			{bodyRoutes[3], map[string]any{"sequence": nil}},
			{bodyRoutes[4], ruleBody("BAD-2", withField("ruleId", 5))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("ruleId", huge))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("ruleName", huge))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("description", huge))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("ruleType", 1))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("ruleType", huge))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", "x"))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", []any{}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", 42))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", map[string]any{"field": huge, "operator": "=", "value": 1}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", map[string]any{"field": "a", "operator": huge, "value": 1}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", map[string]any{"field": 5, "operator": "=", "value": 1}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", map[string]any{"operator": "AND", "rules": "all"}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", map[string]any{"operator": "AND", "rules": []any{5, nil}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("conditionExpression", json.RawMessage(strings.Repeat(`{"operator":"AND","rules":[`, 3000)+
				`{"field":"a","operator":"=","value":1}`+strings.Repeat("]}", 3000))))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", "LOG"))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{5}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{nil}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{map[string]any{"type": 5}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{map[string]any{"type": "LOG", "config": "x"}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{map[string]any{"type": "LOG", "config": map[string]any{"message": huge}}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("successActions", []any{map[string]any{"type": "CALL_WEBHOOK", "config": map[string]any{"url": "javascript:alert(1)"}}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("failureActions", []any{map[string]any{"type": "NOTIFY", "config": map[string]any{"message": "m", "recipients": 5}}}))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("enabled", "yes"))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("priority", json.RawMessage("1e99")))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("priority", json.RawMessage("-99999999999999999999")))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("version", true))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("effectiveFrom", 20250131))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("effectiveFrom", "2025-02-30"))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("effectiveFrom", huge))},
			{bodyRoutes[4], ruleBody("BAD-2", withField("effectiveTo", "0000-00-00"))},
			{bodyRoutes[5], ruleBody("BAD-1", withField("id", 5))},
			{bodyRoutes[5], ruleBody("BAD-1", withField("id", huge))},
			{bodyRoutes[5], ruleBody("BAD-1", withField("id", "\x00"))},
			{bodyRoutes[5], ruleBody("BAD-1", withField("id", id), withField("priority", "high"))},
			{bodyRoutes[5], ruleBody("BAD-1", withField("id", id), withField("conditionExpression", nil))},
			{bodyRoutes[5], map[string]any{"id": id}},
		} {
			check4xx(fmt.Sprintf("%s %s with %.120v", c.method, c.path, c.body), e.do(c.method, c.path, key, c.body))
		}

		// Odd set and rule ids in paths (URL-encoded) and as filter values.
		// Each probe reports what differs from the expectation.
		pathProblems := func(t testing.TB, e *testEnv, odd string) []string {
			var problems []string
			for _, c := range []struct {
				method, path string
				body         any
				status       int
				code         string // the rule-set code, or "" for the rules API's {error: "Rule not found"}
			}{
				{"GET", setsBase + "/" + odd, nil, 404, "SET_NOT_FOUND"},
				{"PATCH", setsBase + "/" + odd, map[string]any{"name": "x"}, 404, "SET_NOT_FOUND"},
				{"DELETE", setsBase + "/" + odd + "?force=true", nil, 404, "SET_NOT_FOUND"},
				{"POST", setsBase + "/" + odd + "/members", map[string]any{"ruleId": "BAD-1", "sequence": 1}, 404, "SET_NOT_FOUND"},
				{"PATCH", setsBase + "/" + odd + "/members/BAD-1", map[string]any{"sequence": 1}, 404, "SET_NOT_FOUND"},
				{"DELETE", setsBase + "/" + odd + "/members/BAD-1", nil, 404, "SET_NOT_FOUND"},
				{"PATCH", setsBase + "/BAD_INPUT/members/" + odd, map[string]any{"sequence": 1}, 404, "MEMBER_NOT_FOUND"},
				{"DELETE", setsBase + "/BAD_INPUT/members/" + odd, nil, 404, "MEMBER_NOT_FOUND"},
				{"GET", rulesBase + "/" + odd, nil, 404, ""},
				{"DELETE", rulesBase + "?id=" + odd, nil, 404, ""},
			} {
				r := e.do(c.method, c.path, key, c.body)
				if r.Status < 400 || r.Status >= 500 {
					t.Errorf("%s %.60s: status %d, want 4xx; body: %.200s", c.method, c.path, r.Status, r.Body)
				}
				var body map[string]any
				_ = json.Unmarshal(r.Body, &body)
				switch {
				case r.Status != c.status:
					problems = append(problems, fmt.Sprintf("%s %.60s: %d %.120s, want %d", c.method, c.path, r.Status, bytes.TrimSpace(r.Body), c.status))
				case c.code == "" && (len(body) != 1 || body["error"] != "Rule not found"),
					c.code != "" && body["code"] != c.code:
					problems = append(problems, fmt.Sprintf("%s %.60s: body %.120s, want code %q", c.method, c.path, bytes.TrimSpace(r.Body), c.code))
				}
			}
			return problems
		}
		filters := []string{rulesBase + "?ruleId=", rulesBase + "?entityType=", rulesBase + "?eventType=", rulesBase + "?ruleCategory=",
			rulesBase + "?ruleType="}
		searches := []string{setsBase + "?search=", rulesBase + "?search="}
		queryProblems := func(t testing.TB, e *testEnv, paths []string, odd string) []string {
			var problems []string
			for _, q := range paths {
				r := e.do("GET", q+odd, key, nil)
				if r.Status >= 500 {
					t.Errorf("GET %.60s: status %d; body: %.200s", q+odd, r.Status, r.Body)
				}
				var body map[string]any
				_ = json.Unmarshal(r.Body, &body)
				if r.Status != 200 {
					problems = append(problems, fmt.Sprintf("GET %.60s: %d %.120s, want 200", q+odd, r.Status, bytes.TrimSpace(r.Body)))
				} else if data, _ := body["data"].([]any); len(data) != 0 {
					problems = append(problems, fmt.Sprintf("GET %.60s matched %d items, want none", q+odd, len(data)))
				}
			}
			return problems
		}
		for _, odd := range []string{
			"lower", "A%2FB", "%25", "%20", "A%20B", "%3F", "%23", "%5C", "%C3%A9", "%E2%80%AE",
			"%27%3B%20DROP%20TABLE%20business_rule_sets%3B--", "%22%20OR%201%3D1", strings.Repeat("A", 10_000),
			strings.Repeat("%F0%9F%92%A9", 100), "A%0AB", "%7B%7BruleId%7D%7D", "%FF", "%FF%FE",
		} {
			problems := pathProblems(t, e, odd)
			if odd == "%FF" || odd == "%FF%FE" {
				problems = nil // see the subtest below; search folds invalid UTF-8 and works
			}
			if odd != "%20" { // a space is in the fixtures' names
				problems = append(problems, queryProblems(t, e, searches, odd)...)
			}
			if odd != "%FF" && odd != "%FF%FE" {
				problems = append(problems, queryProblems(t, e, filters, odd)...)
			}
			for _, p := range problems {
				t.Error(p)
			}
		}
		// A lone %2F leaves an empty segment: the router answers 404 before
		// any route.
		for _, p := range []string{setsBase + "/%2F", setsBase + "/%2F/members/BAD-1", setsBase + "/BAD_INPUT/members/%2F", rulesBase + "/%2F"} {
			check4xx("GET "+p, e.do("GET", p, key, nil))
			check4xx("PATCH "+p, e.do("PATCH", p, key, map[string]any{"sequence": 1}))
			check4xx("DELETE "+p, e.do("DELETE", p, key, nil))
		}
		// Text PostgreSQL cannot hold (NUL, invalid UTF-8) can name no set,
		// member or rule.
		t.Run("ids and filters with NUL or invalid UTF-8 are not found", func(t *testing.T) {
			e := e.with(t)
			var problems []string
			for _, odd := range []string{"%00", "%FF", "%FF%FE", "A%00B"} {
				problems = append(problems, pathProblems(t, e, odd)...)
				problems = append(problems, queryProblems(t, e, filters, odd)...)
			}
			if len(problems) > 0 {
				t.Errorf("a NUL or invalid UTF-8 in a set id, member rule id or list filter must match nothing "+
					"(404 SET_NOT_FOUND / MEMBER_NOT_FOUND or an empty list):\n%s", strings.Join(problems, "\n"))
			}
		})
		t.Run("a NUL in search matches nothing", func(t *testing.T) {
			e := e.with(t)
			var problems []string
			for _, odd := range []string{"%00", "A%00B", "%00%25"} {
				problems = append(problems, queryProblems(t, e, searches, odd)...)
			}
			if len(problems) > 0 {
				t.Errorf("search text with a NUL character must match nothing:\n%s", strings.Join(problems, "\n"))
			}
		})

		// Odd values for the list parameters.
		for _, q := range []string{"limit=99999999999999999999", "offset=99999999999999999999",
			"limit=%00", "enabled=%00", "limit=1e3", "offset=0x10"} {
			check4xx("GET sets?"+q, e.do("GET", setsBase+"?"+q, key, nil))
		}
		for _, q := range []string{"page=99999999999999999999", "pageSize=99999999999999999999", "sortField=%00", "sortDir=%FF",
			"enabled=%00", "page=1e3"} {
			check4xx("GET rules?"+q, e.do("GET", rulesBase+"?"+q, key, nil))
		}
		r := e.do("GET", setsBase+"?offset=9223372036854775807&limit=100", key, nil)
		if r.Status >= 500 {
			t.Errorf("huge offset: %d %s", r.Status, r.Body)
		}

		// After all that, the fixtures are intact.
		detail := e.do("GET", setsBase+"/BAD_INPUT", key, nil).expect(200).JSON()
		if ids := memberIDsOf(t, detail); !slices.Equal(ids, []string{"BAD-1"}) || detail["name"] != "Bad input" {
			t.Errorf("set changed by bad input: %v", detail)
		}
		if got := e.do("GET", rulesBase+"/"+id, key, nil).expect(200).JSON(); got["ruleName"] != rule["ruleName"] || got["priority"] != rule["priority"] {
			t.Errorf("rule changed by bad input: %v", got)
		}
		if total := e.do("GET", setsBase, key, nil).expect(200).JSON()["pagination"].(map[string]any)["total"]; total != float64(1) {
			t.Errorf("bad input created sets: total %v", total)
		}
		if total := e.do("GET", rulesBase, key, nil).expect(200).JSON()["pagination"].(map[string]any)["total"]; total != float64(1) {
			t.Errorf("bad input created rules: total %v", total)
		}
	})
}
