package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// The outbound webhook routes. Every test makes its own tenants, so on
// PostgreSQL (one schema for the package) lists only ever show the test's
// own webhooks.

const webhooksBase = "/api/webhooks"

// allWebhookFeatures are the features of the CRUD, rotation and catalogue
// routes.
var allWebhookFeatures = []string{webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage, webhooksapi.FeatureWebhooksSecrets}

// whMasked is what reads show in place of the secret.
const whMasked = "whsec_••••••••"

// whBody returns a valid webhook body with the required fields; edits
// change it.
func whBody(name string, edits ...func(map[string]any)) map[string]any {
	b := map[string]any{"name": name, "url": "https://hooks.example.com/" + name, "subscribedEvents": []string{"business_rules.*"}}
	for _, edit := range edits {
		edit(b)
	}
	return b
}

// createWebhook creates a webhook with key and returns the 201 body.
func (e *testEnv) createWebhook(key string, body any) map[string]any {
	e.t.Helper()
	return e.do("POST", webhooksBase, key, body).expect(201).JSON()
}

// whPath is the path of webhook id, with an optional suffix.
func whPath(id string, suffix ...string) string {
	return webhooksBase + "/" + id + strings.Join(suffix, "")
}

// expectWebhookNotFound checks the exact 404 body.
func expectWebhookNotFound(t testing.TB, r *response) {
	t.Helper()
	if r.Status != http.StatusNotFound {
		t.Fatalf("status %d, want 404; body: %s", r.Status, r.Body)
	}
	if got := r.JSON(); len(got) != 1 || got["error"] != "Webhook not found" {
		t.Fatalf("404 body %s, want {\"error\":\"Webhook not found\"}", r.Body)
	}
}

// expectWebhookInvalid checks a 400 {error: "Validation failed", details}
// whose details are exactly want.
func expectWebhookInvalid(t testing.TB, r *response, want map[string]string) {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 %v; body: %s", r.Status, want, r.Body)
	}
	body := r.JSON()
	wantBody := map[string]any{"error": "Validation failed", "details": want}
	if !sameAsJSON(t, body, wantBody) {
		t.Fatalf("400 body\n got %s\nwant %s", r.Body, mustJSON(t, wantBody))
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameAsJSON reports whether got and want are equal as JSON.
func sameAsJSON(t testing.TB, got, want any) bool {
	t.Helper()
	return mustJSON(t, asJSON(t, got)) == mustJSON(t, asJSON(t, want))
}

// expectSecretShape checks a plaintext secret: "whsec_" and the standard
// base64 of 32 bytes.
func expectSecretShape(t testing.TB, v any) string {
	t.Helper()
	s, _ := v.(string)
	b64, ok := strings.CutPrefix(s, "whsec_")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(raw) != 32 {
		t.Fatalf("secret %v is not whsec_ and the standard base64 of 32 bytes", v)
	}
	return s
}

// webhookNamesOf returns the name of each item of a list body, in order.
func webhookNamesOf(t testing.TB, list map[string]any) []string {
	t.Helper()
	items, ok := list["items"].([]any)
	if !ok {
		t.Fatalf("list without items: %v", list)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)["name"].(string)
	}
	return out
}

// webhookEvents returns the tenant's webhooks.* events, oldest first.
func (e *testEnv) webhookEvents(tenantID string) []store.Event {
	e.t.Helper()
	return e.events(tenantID, "webhooks.")
}

// storedSecret reads the secret column of a webhook.
func (e *testEnv) storedSecret(id string) string {
	e.t.Helper()
	var s string
	if err := e.kit.DB.QueryRow(e.t.Context(), `SELECT secret FROM webhooks WHERE id = $1`, id).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func TestWebhookCRUD(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allWebhookFeatures...)

		// Create with the required fields: 201, every field, the secret.
		r := e.do("POST", webhooksBase, key, whBody("orders"))
		r.expect(201)
		created := r.JSON()
		id, _ := created["id"].(string)
		is.True(store.IsID(id))
		secret := expectSecretShape(t, created["secret"])
		createdAt := parseTime(t, "createdAt", created["createdAt"])
		is.True(time.Since(createdAt) < time.Minute && time.Until(createdAt) < time.Minute)
		want := map[string]any{
			"id": id, "name": "orders", "description": "", "url": "https://hooks.example.com/orders",
			"subscribedEvents": []any{"business_rules.*"}, "httpMethod": "POST", "customHeaders": map[string]any{},
			"maxRetries": 10.0, "timeoutMs": 15000.0, "rateLimitPerMinute": 0.0, "autoDisableThreshold": 100.0,
			"isActive": true, "consecutiveFailures": 0.0, "lastSuccessAt": nil, "lastFailureAt": nil,
			"maskedSecret": whMasked, "previousSecretSetAt": nil, "previousSecretExpiresAt": nil,
			"tenantId": acme.ID, "organizationId": acme.OrgID, "createdAt": created["createdAt"], "updatedAt": created["createdAt"],
			"secret": secret,
		}
		is.Equal(created, want)
		is.Equal(r.Header.Get("Content-Type"), "application/json")

		// The database holds it sealed.
		stored := e.storedSecret(id)
		is.True(strings.HasPrefix(stored, "v1:"))
		is.True(!strings.Contains(stored, secret))
		is.True(!strings.Contains(stored, "whsec_"))

		// Reads: the same webhook, masked, never the secret.
		delete(want, "secret")
		got := e.do("GET", whPath(id), key, nil).expect(200)
		is.Equal(got.JSON(), want)
		is.True(!strings.Contains(string(got.Body), secret))

		// Every field given; the method is upper-cased.
		full := e.createWebhook(key, map[string]any{
			"name": "Shipping", "description": "Tells the warehouse", "url": "http://8.8.8.8:8080/hook?x=1",
			"subscribedEvents": []string{"*", "feature_toggles.toggle.created"}, "httpMethod": "put",
			"customHeaders": map[string]string{"X-Tenant": "acme", "Authorization": "Bearer abc"},
			"maxRetries":    30, "timeoutMs": 1000, "rateLimitPerMinute": 60, "autoDisableThreshold": 0, "isActive": false,
		})
		fullID := full["id"].(string)
		secret2 := expectSecretShape(t, full["secret"])
		is.True(secret2 != secret)
		wantFull := map[string]any{
			"id": fullID, "name": "Shipping", "description": "Tells the warehouse", "url": "http://8.8.8.8:8080/hook?x=1",
			"subscribedEvents": []any{"*", "feature_toggles.toggle.created"}, "httpMethod": "PUT",
			"customHeaders": map[string]any{"X-Tenant": "acme", "Authorization": "Bearer abc"},
			"maxRetries":    30.0, "timeoutMs": 1000.0, "rateLimitPerMinute": 60.0, "autoDisableThreshold": 0.0,
			"isActive": false, "consecutiveFailures": 0.0, "lastSuccessAt": nil, "lastFailureAt": nil,
			"maskedSecret": whMasked, "previousSecretSetAt": nil, "previousSecretExpiresAt": nil,
			"tenantId": acme.ID, "organizationId": acme.OrgID, "createdAt": full["createdAt"], "updatedAt": full["createdAt"],
			"secret": secret2,
		}
		is.Equal(full, wantFull)
		delete(wantFull, "secret")
		is.Equal(e.do("GET", whPath(fullID), key, nil).expect(200).JSON(), wantFull)

		// PUT is partial: fields left out keep their value.
		time.Sleep(2 * time.Millisecond)
		r = e.do("PUT", whPath(id), key, map[string]any{"name": "orders v2", "isActive": false, "customHeaders": map[string]string{"X-A": "1"}})
		r.expect(200)
		updated := r.JSON()
		is.True(!strings.Contains(string(r.Body), secret))
		is.True(parseTime(t, "updatedAt", updated["updatedAt"]).After(parseTime(t, "updatedAt", want["updatedAt"])))
		want["name"], want["isActive"], want["customHeaders"], want["updatedAt"] = "orders v2", false, map[string]any{"X-A": "1"}, updated["updatedAt"]
		is.Equal(updated, want)
		is.Equal(e.do("GET", whPath(id), key, nil).expect(200).JSON(), want)

		// An empty PUT and explicit nulls keep everything.
		time.Sleep(2 * time.Millisecond)
		again := e.do("PUT", whPath(id), key, map[string]any{}).expect(200).JSON()
		is.True(!parseTime(t, "updatedAt", again["updatedAt"]).Before(parseTime(t, "updatedAt", want["updatedAt"])))
		want["updatedAt"] = again["updatedAt"]
		is.Equal(again, want)
		again = e.do("PUT", whPath(id), key, map[string]any{"name": nil, "subscribedEvents": nil, "customHeaders": nil, "maxRetries": nil}).expect(200).JSON()
		want["updatedAt"] = again["updatedAt"]
		is.Equal(again, want)

		// Every field at once.
		again = e.do("PUT", whPath(id), key, map[string]any{"name": "n", "description": "d", "url": "https://b.example.com/",
			"subscribedEvents": []string{"a.*", "b"}, "httpMethod": "patch", "customHeaders": map[string]string{},
			"maxRetries": 0, "timeoutMs": 60000, "rateLimitPerMinute": 10000, "autoDisableThreshold": 1000, "isActive": true}).expect(200).JSON()
		for k, v := range map[string]any{"name": "n", "description": "d", "url": "https://b.example.com/", "subscribedEvents": []any{"a.*", "b"},
			"httpMethod": "PATCH", "customHeaders": map[string]any{}, "maxRetries": 0.0, "timeoutMs": 60000.0, "rateLimitPerMinute": 10000.0,
			"autoDisableThreshold": 1000.0, "isActive": true, "id": id, "createdAt": want["createdAt"], "maskedSecret": whMasked} {
			if !sameAsJSON(t, again[k], v) {
				t.Errorf("after PUT %s = %v, want %v", k, again[k], v)
			}
		}

		// Unknown and malformed ids: 404 everywhere.
		for _, bad := range []string{store.NewID(), "not-a-uuid", strings.ToUpper(id), id + "0", "%00", "%ff"} {
			expectWebhookNotFound(t, e.do("GET", whPath(bad), key, nil))
			expectWebhookNotFound(t, e.do("PUT", whPath(bad), key, map[string]any{"name": "x"}))
			expectWebhookNotFound(t, e.do("DELETE", whPath(bad), key, nil))
			expectWebhookNotFound(t, e.do("POST", whPath(bad, "/rotate-secret"), key, nil))
		}

		// DELETE: 204, then gone.
		r = e.do("DELETE", whPath(id), key, nil).expect(204)
		is.Equal(len(r.Body), 0)
		expectWebhookNotFound(t, e.do("GET", whPath(id), key, nil))
		expectWebhookNotFound(t, e.do("PUT", whPath(id), key, map[string]any{"name": "x"}))
		expectWebhookNotFound(t, e.do("POST", whPath(id, "/rotate-secret"), key, nil))
		expectWebhookNotFound(t, e.do("DELETE", whPath(id), key, nil))
		list := e.do("GET", webhooksBase, key, nil).expect(200).JSON()
		is.Equal(webhookNamesOf(t, list), []string{"Shipping"})
		is.Equal(list["total"], 1.0)

		// Without a credential: 401 {error}; a made-up key too.
		for _, k := range []string{"", "tk_test" + randomHex(24)} {
			for _, rq := range []struct {
				method, path string
				body         any
			}{
				{"GET", webhooksBase, nil}, {"POST", webhooksBase, whBody("x")}, {"GET", whPath(fullID), nil},
				{"PUT", whPath(fullID), map[string]any{"name": "x"}}, {"DELETE", whPath(fullID), nil},
				{"POST", whPath(fullID, "/rotate-secret"), nil}, {"GET", webhooksBase + "/events", nil},
			} {
				r := e.do(rq.method, rq.path, k, rq.body)
				expectBody(t, r, 401, map[string]any{"error": "Unauthorized"})
			}
		}
		is.Equal(e.do("GET", whPath(fullID), key, nil).expect(200).JSON()["name"], "Shipping")
	})
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allWebhookFeatures...)
		seed := e.createWebhook(key, whBody("seed"))
		seedID := seed["id"].(string)
		delete(seed, "secret")
		eventsBefore := len(e.webhookEvents(acme.ID))

		// Every bad field at once, on create and on update.
		allBad := map[string]any{"name": "", "description": strings.Repeat("d", 1001), "url": "http://localhost:8080/",
			"subscribedEvents": []string{"Orders.*"}, "httpMethod": "GET", "customHeaders": map[string]string{"Content-Type": "text/plain"},
			"maxRetries": 31, "timeoutMs": 60001, "rateLimitPerMinute": 10001, "autoDisableThreshold": -1}
		allDetails := map[string]string{
			"name":                 "is required",
			"description":          "must be at most 1000 characters",
			"url":                  "must not target a private, loopback or link-local address",
			"subscribedEvents":     `[0] "Orders.*" is not an event pattern: "*", or dot-separated lowercase names (letters, digits, _), optionally ending in ".*"`,
			"httpMethod":           "must be POST, PUT or PATCH",
			"customHeaders":        `Header "Content-Type" is reserved for webhook signing and cannot be overridden`,
			"maxRetries":           "must be an integer from 0 to 30",
			"timeoutMs":            "must be an integer from 1000 to 60000",
			"rateLimitPerMinute":   "must be an integer from 0 to 10000",
			"autoDisableThreshold": "must be an integer from 0 to 1000",
		}
		expectWebhookInvalid(t, e.do("POST", webhooksBase, key, allBad), allDetails)
		expectWebhookInvalid(t, e.do("PUT", whPath(seedID), key, allBad), allDetails)

		// Required fields left out.
		expectWebhookInvalid(t, e.do("POST", webhooksBase, key, map[string]any{}), map[string]string{
			"name": "is required", "url": "is required", "subscribedEvents": "must list at least one event pattern"})

		// Field by field, on create (edit of a valid body) and update.
		pattern := func(i int, p string) string {
			return fmt.Sprintf("[%d] %q is not an event pattern: \"*\", or dot-separated lowercase names (letters, digits, _), optionally ending in \".*\"", i, p)
		}
		type badCase struct {
			field string
			value any
			msg   string
		}
		cases := []badCase{
			{"name", "   ", "is required"},
			{"name", strings.Repeat("n", 256), "must be at most 255 characters"},
			{"name", "a\x00b", "must be valid UTF-8 text without NUL characters"},
			{"description", strings.Repeat("é", 1001), "must be at most 1000 characters"},
			{"description", "\x00", "must be valid UTF-8 text without NUL characters"},
			{"url", "", "is required"},
			{"url", "ftp://example.com/", "must be an http or https URL with a host (and no credentials)"},
			{"url", "https://user:pass@example.com/", "must be an http or https URL with a host (and no credentials)"},
			{"url", "https:///nohost", "must be an http or https URL with a host (and no credentials)"},
			{"url", "https://example.com/" + strings.Repeat("a", 2049-len("https://example.com/")), "must be at most 2048 characters"},
			{"subscribedEvents", []string{}, "must list at least one event pattern"},
			{"httpMethod", "DELETE", "must be POST, PUT or PATCH"},
			{"httpMethod", "get", "must be POST, PUT or PATCH"},
			{"customHeaders", map[string]string{"webhook-signature": "x"}, `Header "webhook-signature" is reserved for webhook signing and cannot be overridden`},
			{"customHeaders", map[string]string{"WEBHOOK-ID": "x"}, `Header "WEBHOOK-ID" is reserved for webhook signing and cannot be overridden`},
			{"customHeaders", map[string]string{"content-TYPE": "x"}, `Header "content-TYPE" is reserved for webhook signing and cannot be overridden`},
			{"customHeaders", map[string]string{"Bad Name": "x"}, `"Bad Name" is not a valid header name`},
			{"customHeaders", map[string]string{"X-A": "a\r\nInjected: 1"}, `the value of "X-A" must be one line of at most 1000 characters`},
			{"customHeaders", map[string]string{"X-A": strings.Repeat("v", 1001)}, `the value of "X-A" must be one line of at most 1000 characters`},
			{"maxRetries", -1, "must be an integer from 0 to 30"},
			{"maxRetries", 31, "must be an integer from 0 to 30"},
			{"timeoutMs", 999, "must be an integer from 1000 to 60000"},
			{"timeoutMs", 60001, "must be an integer from 1000 to 60000"},
			{"rateLimitPerMinute", -1, "must be an integer from 0 to 10000"},
			{"rateLimitPerMinute", 10001, "must be an integer from 0 to 10000"},
			{"autoDisableThreshold", -1, "must be an integer from 0 to 1000"},
			{"autoDisableThreshold", 1001, "must be an integer from 0 to 1000"},
			// Wrong JSON types name the field.
			{"name", 5, "must be a string"},
			{"description", []any{"x"}, "must be a string"},
			{"url", map[string]any{}, "must be a string"},
			{"subscribedEvents", "orders.*", "must be an array"},
			{"subscribedEvents", []any{1}, "must be a string"},
			{"httpMethod", true, "must be a string"},
			{"customHeaders", []any{"X-A"}, "must be an object"},
			{"customHeaders", map[string]any{"X-A": 1}, "must be a string"},
			{"maxRetries", "10", "must be an integer"},
			{"timeoutMs", 1500.5, "must be an integer"},
			{"rateLimitPerMinute", true, "must be an integer"},
			{"autoDisableThreshold", map[string]any{}, "must be an integer"},
			{"maxRetries", 1e30, "must be an integer"},
			{"isActive", "yes", "must be a boolean"},
			{"isActive", 1, "must be a boolean"},
		}
		for _, p := range []string{"Orders.*", "orders.", ".x", "a..b", "a.*.b", "a*", "**", "a.b-c", ""} {
			cases = append(cases, badCase{"subscribedEvents", []string{"ok.*", p}, pattern(1, p)})
		}
		for _, c := range cases {
			what := fmt.Sprintf("%s = %.40v", c.field, c.value)
			t.Run(what, func(t *testing.T) {
				e := e.with(t)
				want := map[string]string{c.field: c.msg}
				expectWebhookInvalid(t, e.do("POST", webhooksBase, key, whBody("x", withField(c.field, c.value))), want)
				expectWebhookInvalid(t, e.do("PUT", whPath(seedID), key, map[string]any{c.field: c.value}), want)
			})
		}

		// The bounds themselves, and the good patterns, are accepted.
		for _, c := range []struct {
			field string
			value any
		}{
			{"maxRetries", 0}, {"maxRetries", 30}, {"timeoutMs", 1000}, {"timeoutMs", 60000},
			{"rateLimitPerMinute", 0}, {"rateLimitPerMinute", 10000}, {"autoDisableThreshold", 0}, {"autoDisableThreshold", 1000},
			{"subscribedEvents", []string{"*"}}, {"subscribedEvents", []string{"a"}}, {"subscribedEvents", []string{"a.b_c.d1"}},
			{"subscribedEvents", []string{"a.*"}}, {"httpMethod", "patch"}, {"name", strings.Repeat("é", 255)},
			{"customHeaders", map[string]string{"X-Webhook-Extra": strings.Repeat("v", 1000)}},
		} {
			got := e.createWebhook(key, whBody("bound", withField(c.field, c.value)))
			if c.field != "httpMethod" && !sameAsJSON(t, got[c.field], c.value) {
				t.Errorf("created %s = %v, want %v", c.field, got[c.field], c.value)
			}
			e.do("DELETE", whPath(got["id"].(string)), key, nil).expect(204)
		}

		// Nothing was written by a 400: the seed is unchanged, the only
		// webhook left, and no event but the accepted creates' and deletes'.
		is.Equal(e.do("GET", whPath(seedID), key, nil).expect(200).JSON(), seed)
		list := e.do("GET", webhooksBase, key, nil).expect(200).JSON()
		is.Equal(webhookNamesOf(t, list), []string{"seed"})
		evs := e.webhookEvents(acme.ID)
		for _, ev := range evs[eventsBefore:] {
			is.True(ev.Type == "webhooks.webhook.created" || ev.Type == "webhooks.webhook.deleted")
		}
		is.Equal(len(evs)-eventsBefore, 2*15)
	})
}

func TestWebhookList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage)
		var secrets []string
		for _, b := range []map[string]any{
			whBody("Orders", withField("url", "https://erp.example.com/orders")),
			whBody("Shipping", withField("url", "https://ORDERS.example.org/ship"), withField("isActive", false)),
			whBody("Billing"),
		} {
			secrets = append(secrets, e.createWebhook(key, b)["secret"].(string))
		}

		r := e.do("GET", webhooksBase, key, nil).expect(200)
		list := r.JSON()
		expectKeys(t, "list", list, "items", "total", "page", "pageSize", "totalPages")
		is.Equal(webhookNamesOf(t, list), []string{"Billing", "Shipping", "Orders"}) // newest first
		is.Equal(list["total"], 3.0)
		is.Equal(list["page"], 1.0)
		is.Equal(list["pageSize"], 50.0)
		is.Equal(list["totalPages"], 1.0)
		for _, s := range secrets {
			is.True(!strings.Contains(string(r.Body), s))
		}
		for _, it := range list["items"].([]any) {
			item := it.(map[string]any)
			is.Equal(item["maskedSecret"], whMasked)
			_, has := item["secret"]
			is.True(!has)
			is.Equal(item["tenantId"], acme.ID)
		}

		page := func(query string) map[string]any {
			t.Helper()
			return e.do("GET", webhooksBase+"?"+query, key, nil).expect(200).JSON()
		}
		p := page("pageSize=2")
		is.Equal(webhookNamesOf(t, p), []string{"Billing", "Shipping"})
		is.Equal(p["totalPages"], 2.0)
		is.Equal(p["pageSize"], 2.0)
		p = page("pageSize=2&page=2")
		is.Equal(webhookNamesOf(t, p), []string{"Orders"})
		is.Equal(p["page"], 2.0)
		is.Equal(p["total"], 3.0)
		p = page("pageSize=2&page=3")
		is.Equal(len(webhookNamesOf(t, p)), 0)
		is.Equal(p["total"], 3.0)
		p = page("pageSize=1000")
		is.Equal(p["pageSize"], 100.0)
		is.Equal(len(webhookNamesOf(t, p)), 3)
		expectWebhookInvalid(t, e.do("GET", webhooksBase+"?pageSize=0", key, nil), map[string]string{"pageSize": "must be a positive integer"})
		expectWebhookInvalid(t, e.do("GET", webhooksBase+"?page=0", key, nil), map[string]string{"page": "must be a positive integer"})
		expectWebhookInvalid(t, e.do("GET", webhooksBase+"?page=x", key, nil), map[string]string{"page": "must be a positive integer"})

		for q, want := range map[string][]string{
			"search=orders":                {"Shipping", "Orders"}, // the name of one, the url of the other
			"search=ORDERS":                {"Shipping", "Orders"},
			"search=bill":                  {"Billing"},
			"search=ERP.example":           {"Orders"},
			"search=%25":                   {},
			"search=_":                     {},
			"search=nothing":               {},
			"search=%00":                   {},
			"isActive=true":                {"Billing", "Orders"},
			"isActive=TRUE":                {"Billing", "Orders"},
			"isActive=1":                   {"Billing", "Orders"},
			"isActive=false":               {"Shipping"},
			"isActive=0":                   {"Shipping"},
			"isActive=":                    {"Billing", "Shipping", "Orders"},
			"isActive=true&search=erp":     {"Orders"},
			"isActive=false&search=orders": {"Shipping"},
		} {
			p := page(q)
			got := webhookNamesOf(t, p)
			if !slices.Equal(got, want) || p["total"] != float64(len(want)) {
				t.Errorf("%s: %q (total %v), want %q", q, got, p["total"], want)
			}
		}
		for _, q := range []string{"isActive=maybe", "isActive=yes", "isActive=%00", "isActive=truee"} {
			expectWebhookInvalid(t, e.do("GET", webhooksBase+"?"+q, key, nil), map[string]string{"isActive": "must be true or false"})
		}
	})
}

func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage, webhooksapi.FeatureWebhooksSecrets)
		manager := e.newKey(acme, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage)
		secretsOnly := e.newKey(acme, webhooksapi.FeatureWebhooksSecrets)
		created := e.createWebhook(key, whBody("rotating"))
		id, s0 := created["id"].(string), created["secret"].(string)

		expectForbiddenFeature(t, e.do("POST", whPath(id, "/rotate-secret"), manager, nil), webhooksapi.FeatureWebhooksSecrets)

		time.Sleep(2 * time.Millisecond)
		r := e.do("POST", whPath(id, "/rotate-secret"), secretsOnly, nil).expect(200)
		rot := r.JSON()
		expectKeys(t, "rotation", rot, "secret", "previousSecretSetAt", "previousSecretExpiresAt")
		s1 := expectSecretShape(t, rot["secret"])
		is.True(s1 != s0)
		setAt := parseTime(t, "previousSecretSetAt", rot["previousSecretSetAt"])
		expires := parseTime(t, "previousSecretExpiresAt", rot["previousSecretExpiresAt"])
		is.Equal(expires.Sub(setAt), 24*time.Hour)
		is.True(time.Since(setAt) < time.Minute && time.Until(setAt) < time.Minute)
		is.True(setAt.After(parseTime(t, "createdAt", created["createdAt"])))

		// Reads show the period, masked, never a secret.
		got := e.do("GET", whPath(id), key, nil).expect(200)
		w := got.JSON()
		is.True(parseTime(t, "previousSecretSetAt", w["previousSecretSetAt"]).Equal(setAt))
		is.True(parseTime(t, "previousSecretExpiresAt", w["previousSecretExpiresAt"]).Equal(expires))
		is.True(parseTime(t, "updatedAt", w["updatedAt"]).Equal(setAt))
		is.Equal(w["maskedSecret"], whMasked)
		is.True(!strings.Contains(string(got.Body), s0) && !strings.Contains(string(got.Body), s1))
		listBody := e.do("GET", webhooksBase, key, nil).expect(200).Body
		is.True(!strings.Contains(string(listBody), s0) && !strings.Contains(string(listBody), s1))
		stored := e.storedSecret(id)
		is.True(strings.HasPrefix(stored, "v1:") && !strings.Contains(stored, s1))

		// Both sign during the period, the new one first.
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: acme.ID})
		secrets, err := e.kit.Webhooks.Secrets(ctx, id)
		is.NoErr(err)
		is.Equal(secrets, []string{s1, s0})

		// Rotating again: the previous secret is the one rotated out.
		time.Sleep(2 * time.Millisecond)
		rot2 := e.do("POST", whPath(id, "/rotate-secret"), key, nil).expect(200).JSON()
		s2 := expectSecretShape(t, rot2["secret"])
		is.True(s2 != s1 && s2 != s0)
		is.True(parseTime(t, "previousSecretSetAt", rot2["previousSecretSetAt"]).After(setAt))
		secrets, err = e.kit.Webhooks.Secrets(ctx, id)
		is.NoErr(err)
		is.Equal(secrets, []string{s2, s1})

		expectWebhookNotFound(t, e.do("POST", whPath(store.NewID(), "/rotate-secret"), key, nil))
		// Rotation needs no body, and ignores one.
		e.do("POST", whPath(id, "/rotate-secret"), key, map[string]any{"secret": "whsec_mine"}).expect(200)
		secrets, err = e.kit.Webhooks.Secrets(ctx, id)
		is.NoErr(err)
		is.True(!slices.Contains(secrets, "whsec_mine"))
	})
}

func TestWebhookEventCatalogue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, webhooksapi.FeatureWebhooksView)
		body := e.do("GET", webhooksBase+"/events", key, nil).expect(200).JSON()
		expectKeys(t, "catalogue", body, "data", "total")
		data, ok := body["data"].([]any)
		is.True(ok)
		is.Equal(body["total"], float64(len(data)))

		byID := map[string]map[string]any{}
		var ids []string
		for _, it := range data {
			ev := it.(map[string]any)
			expectKeys(t, "catalogue entry", ev, "id", "label", "description", "category", "module", "clientBroadcast")
			id := ev["id"].(string)
			ids = append(ids, id)
			byID[id] = ev
			is.True(!strings.HasPrefix(id, "webhooks."))
			is.Equal(ev["module"], id[:strings.IndexByte(id, '.')])
			action := id[strings.LastIndexByte(id, '.')+1:]
			wantCategory := "lifecycle"
			if action == "created" || action == "updated" || action == "deleted" {
				wantCategory = "crud"
			}
			is.Equal(ev["category"], wantCategory)
			is.True(ev["label"] != "" && ev["description"] != "")
		}
		is.True(slices.IsSorted(ids))
		is.Equal(len(slices.Compact(slices.Clone(ids))), len(ids))

		// Every event the other areas declare can be subscribed to.
		for _, list := range [][]store.EventType{identity.EventTypes, toggles.EventTypes, rules.EventTypes, entities.EventTypes} {
			for _, et := range list {
				ev, ok := byID[et.ID]
				if !ok {
					t.Errorf("catalogue lacks %s", et.ID)
					continue
				}
				is.Equal(ev["label"], et.Label)
				is.Equal(ev["description"], et.Description)
			}
		}
		for id, want := range map[string]map[string]any{
			"business_rules.rule.created":     {"id": "business_rules.rule.created", "label": "Business rule created", "description": "A business rule was created.", "category": "crud", "module": "business_rules", "clientBroadcast": false},
			"business_rules.event.emitted":    {"id": "business_rules.event.emitted", "label": "Rule event", "description": "A rule's EMIT_EVENT action emitted the event named in data.event.", "category": "lifecycle", "module": "business_rules", "clientBroadcast": false},
			"feature_toggles.toggle.created":  {"id": "feature_toggles.toggle.created", "label": "Feature toggle created", "description": "A global feature toggle was created.", "category": "crud", "module": "feature_toggles", "clientBroadcast": false},
			"directory.tenant.created":        {"id": "directory.tenant.created", "label": "Tenant created", "description": "A tenant was created.", "category": "crud", "module": "directory", "clientBroadcast": false},
			"auth.role.created":               {"id": "auth.role.created", "label": "Role created", "description": "A role was created.", "category": "crud", "module": "auth", "clientBroadcast": false},
			"auth.user.password_reset":        {"id": "auth.user.password_reset", "label": "Password reset", "description": "A user's password was reset.", "category": "lifecycle", "module": "auth", "clientBroadcast": false},
			"business_rules.set_member.added": {"id": "business_rules.set_member.added", "label": "Rule added to set", "description": "A rule became a member of a rule set.", "category": "lifecycle", "module": "business_rules", "clientBroadcast": false},
		} {
			is.Equal(byID[id], want)
		}
		for _, id := range []string{"webhooks.webhook.created", "webhooks.webhook.updated", "webhooks.webhook.deleted", "webhooks.webhook.secret_rotated"} {
			_, has := byID[id]
			is.True(!has)
		}

		// webhooks.view is needed.
		expectForbiddenFeature(t, e.do("GET", webhooksBase+"/events", e.newKey(acme, webhooksapi.FeatureWebhooksManage), nil), webhooksapi.FeatureWebhooksView)
	})
}

func TestWebhookDomainEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allWebhookFeatures...)
		created := e.createWebhook(key, whBody("evented"))
		id, s0 := created["id"].(string), created["secret"].(string)
		e.do("PUT", whPath(id), key, map[string]any{"name": "renamed"}).expect(200)
		s1 := e.do("POST", whPath(id, "/rotate-secret"), key, nil).expect(200).JSON()["secret"].(string)
		e.do("DELETE", whPath(id), key, nil).expect(204)

		evs := e.webhookEvents(acme.ID)
		types := make([]string, len(evs))
		for i, ev := range evs {
			types[i] = ev.Type
			raw := string(ev.Data)
			is.True(!strings.Contains(raw, s0) && !strings.Contains(raw, s1))
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			_, has := data["secret"]
			is.True(!has)
			is.Equal(data["id"], id)
			is.Equal(ev.TenantID, acme.ID)
			is.Equal(ev.OrganizationID, acme.OrgID)
		}
		is.Equal(types, []string{"webhooks.webhook.created", "webhooks.webhook.updated", "webhooks.webhook.secret_rotated", "webhooks.webhook.deleted"})
	})
}

func TestWebhookFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, allWebhookFeatures...)
		keys := map[string]string{
			"none":    e.newKey(acme),
			"view":    e.newKey(acme, webhooksapi.FeatureWebhooksView),
			"manage":  e.newKey(acme, webhooksapi.FeatureWebhooksManage),
			"secrets": e.newKey(acme, webhooksapi.FeatureWebhooksSecrets),
			"rules":   e.newKey(acme, allRuleFeatures...),
		}
		features := map[string][]string{"none": nil, "view": {webhooksapi.FeatureWebhooksView}, "manage": {webhooksapi.FeatureWebhooksManage},
			"secrets": {webhooksapi.FeatureWebhooksSecrets}, "rules": nil}
		fresh := func() string { return e.createWebhook(admin, whBody("f"))["id"].(string) }
		id := fresh()
		type call struct {
			method  string
			path    func(allowed bool) string
			body    any
			feature string
			ok      int
		}
		calls := []call{
			{"GET", func(bool) string { return webhooksBase }, nil, webhooksapi.FeatureWebhooksView, 200},
			{"GET", func(bool) string { return whPath(id) }, nil, webhooksapi.FeatureWebhooksView, 200},
			{"GET", func(bool) string { return webhooksBase + "/events" }, nil, webhooksapi.FeatureWebhooksView, 200},
			{"POST", func(bool) string { return webhooksBase }, whBody("new"), webhooksapi.FeatureWebhooksManage, 201},
			{"PUT", func(bool) string { return whPath(id) }, map[string]any{"description": "x"}, webhooksapi.FeatureWebhooksManage, 200},
			{"DELETE", func(allowed bool) string {
				if allowed {
					return whPath(fresh())
				}
				return whPath(id)
			}, nil, webhooksapi.FeatureWebhooksManage, 204},
			{"POST", func(bool) string { return whPath(id, "/rotate-secret") }, nil, webhooksapi.FeatureWebhooksSecrets, 200},
		}
		for name, k := range keys {
			for _, c := range calls {
				allowed := slices.Contains(features[name], c.feature)
				path := c.path(allowed)
				r := e.do(c.method, path, k, c.body)
				if allowed {
					if r.Status != c.ok {
						t.Errorf("%s key, %s %s: status %d, want %d; body: %s", name, c.method, path, r.Status, c.ok, r.Body)
					}
					continue
				}
				if r.Status != 403 {
					t.Errorf("%s key, %s: status %d, want 403; body: %s", name, c.method, r.Status, r.Body)
					continue
				}
				expectForbiddenFeature(t, r, c.feature)
			}
		}
		// A forbidden call wrote nothing: the shared webhook and the manage
		// key's create are all that is left (its DELETE removed the fresh
		// one it made), and the description is the manage key's.
		list := e.do("GET", webhooksBase+"?pageSize=100", admin, nil).expect(200).JSON()
		names := sorted(webhookNamesOf(t, list))
		is.New(t).Equal(names, []string{"f", "new"})
		is.New(t).Equal(e.do("GET", whPath(id), admin, nil).expect(200).JSON()["description"], "x")
	})
}

func TestWebhookTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		keyA := e.newKey(acme, allWebhookFeatures...)
		keyB := e.newKey(globex, allWebhookFeatures...)
		a := e.createWebhook(keyA, whBody("acme-hook"))
		idA, secretA := a["id"].(string), a["secret"].(string)
		delete(a, "secret")
		e.createWebhook(keyB, whBody("globex-hook"))

		expectWebhookNotFound(t, e.do("GET", whPath(idA), keyB, nil))
		expectWebhookNotFound(t, e.do("PUT", whPath(idA), keyB, map[string]any{"name": "stolen"}))
		expectWebhookNotFound(t, e.do("PUT", whPath(idA), keyB, map[string]any{"name": ""})) // not found before validation
		expectWebhookNotFound(t, e.do("POST", whPath(idA, "/rotate-secret"), keyB, nil))
		expectWebhookNotFound(t, e.do("DELETE", whPath(idA), keyB, nil))
		listB := e.do("GET", webhooksBase, keyB, nil).expect(200).JSON()
		is.Equal(webhookNamesOf(t, listB), []string{"globex-hook"})
		is.Equal(listB["total"], 1.0)
		listB = e.do("GET", webhooksBase+"?search=acme", keyB, nil).expect(200).JSON()
		is.Equal(len(webhookNamesOf(t, listB)), 0)

		// A's webhook is untouched.
		is.Equal(e.do("GET", whPath(idA), keyA, nil).expect(200).JSON(), a)
		listA := e.do("GET", webhooksBase, keyA, nil).expect(200).JSON()
		is.Equal(webhookNamesOf(t, listA), []string{"acme-hook"})
		secrets, err := e.kit.Webhooks.Secrets(store.WithScope(t.Context(), store.Scope{TenantID: acme.ID}), idA)
		is.NoErr(err)
		is.Equal(secrets, []string{secretA})
		is.Equal(len(e.webhookEvents(globex.ID)), 1) // B's own create only
	})
}

func TestWebhookBadInputNever5xx(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allWebhookFeatures...)
		seed := e.createWebhook(key, whBody("seed"))
		id := seed["id"].(string)
		delete(seed, "secret")

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
		bodyRoutes := []struct{ method, path string }{{"POST", webhooksBase}, {"PUT", whPath(id)}}

		// Malformed JSON: 400.
		deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
		for _, body := range []string{"", "{", "}", `{"name":`, `{"name":"a"} trailing`, `{"a":1}{"b":2}`, "\xff\xfe",
			"{'name': 'x'}", `{"name": "x",}`, "NaN", "[1,2", deep, "\x00", `{"name":"a\u0000"` + "\x00}"} {
			for _, rt := range bodyRoutes {
				r := e.do(rt.method, rt.path, key, body)
				check4xx(fmt.Sprintf("%s %s with %.20q", rt.method, rt.path, body), r)
				if r.Status != 400 {
					t.Errorf("%s %s with %.20q: status %d, want 400", rt.method, rt.path, body, r.Status)
				}
			}
		}
		// JSON that is not an object: arrays, strings, numbers.
		for _, body := range []string{"[]", `"text"`, "42", "true", `[{"name":"x"}]`} {
			for _, rt := range bodyRoutes {
				check4xx(fmt.Sprintf("%s %s with %s", rt.method, rt.path, body), e.do(rt.method, rt.path, key, body))
			}
		}
		// null is an empty create: 400 naming the required fields. (On PUT
		// it is an empty patch, which decode allows.)
		expectWebhookInvalid(t, e.do("POST", webhooksBase, key, "null"), map[string]string{
			"name": "is required", "url": "is required", "subscribedEvents": "must list at least one event pattern"})
		// Invalid UTF-8 bytes in a field: 400 naming it.
		for field, raw := range map[string]string{
			"name":             `{"name":"a` + "\xff" + `","url":"https://a.example.com/","subscribedEvents":["*"]}`,
			"url":              `{"name":"a","url":"https://a.example.com/` + "\xc3" + `","subscribedEvents":["*"]}`,
			"description":      `{"name":"a","description":"` + "\xed\xa0\x80" + `","url":"https://a.example.com/","subscribedEvents":["*"]}`,
			"customHeaders":    `{"name":"a","url":"https://a.example.com/","subscribedEvents":["*"],"customHeaders":{"X-A":"` + "\xff" + `"}}`,
			"subscribedEvents": `{"name":"a","url":"https://a.example.com/","subscribedEvents":["` + "\xfe" + `"]}`,
		} {
			for _, rt := range bodyRoutes {
				r := e.do(rt.method, rt.path, key, raw)
				check4xx(rt.method+" invalid UTF-8 in "+field, r)
				if r.Status == 400 {
					details, _ := r.JSON()["details"].(map[string]any)
					if _, ok := details[field]; !ok {
						t.Errorf("%s invalid UTF-8 in %s: details %v do not name it", rt.method, field, details)
					}
				}
			}
		}
		// A body over the 1 MiB limit: 413.
		tooBig := whBody("big", withField("description", strings.Repeat("x", 2<<20)))
		for _, rt := range bodyRoutes {
			r := e.do(rt.method, rt.path, key, tooBig)
			check4xx(rt.method+" 2 MiB", r)
			is.Equal(r.Status, 413)
		}
		// Odd values field by field: NUL characters, huge strings, arrays
		// where objects are expected.
		huge := strings.Repeat("x", 300_000)
		for _, edit := range []func(map[string]any){
			withField("name", "\x00"), withField("description", "a\x00"), withField("url", "https://a.example.com/\x00"),
			withField("url", "https://a.example.com\x00.evil/"), withField("subscribedEvents", []string{"a\x00"}),
			withField("httpMethod", "POST\x00"), withField("customHeaders", map[string]string{"X-\x00": "v"}),
			withField("customHeaders", map[string]string{"X-A": "\x00"}),
			withField("name", huge), withField("description", huge), withField("url", "https://a.example.com/"+huge),
			withField("subscribedEvents", []string{huge}), withField("httpMethod", huge),
			withField("customHeaders", map[string]string{huge: "v"}), withField("customHeaders", map[string]string{"X-A": huge}),
			withField("subscribedEvents", map[string]any{"a": "b"}), withField("customHeaders", []any{map[string]any{"X-A": "1"}}),
			withField("name", map[string]any{"x": 1}), withField("maxRetries", []any{1}), withField("isActive", map[string]any{}),
			withField("maxRetries", 9.3e18), withField("timeoutMs", -9.3e18), withField("subscribedEvents", []any{nil}),
			withField("subscribedEvents", []any{[]any{"a"}}),
		} {
			b := whBody("odd", edit)
			for _, rt := range bodyRoutes {
				r := e.do(rt.method, rt.path, key, b)
				check4xx(fmt.Sprintf("%s with %.60v", rt.method, b), r)
				if r.Status != 400 {
					t.Errorf("%s with %.60v: status %d, want 400", rt.method, b, r.Status)
				}
			}
		}
		// Odd ids and query strings.
		for _, p := range []string{"%00", "%ff", strings.Repeat("a", 5000), "..%2f..%2fetc", id + "%00"} {
			for _, m := range []string{"GET", "PUT", "DELETE"} {
				r := e.do(m, whPath(p), key, map[string]any{"name": "x"})
				check4xx(m+" id "+p[:min(len(p), 20)], r)
			}
			check4xx("rotate id "+p[:min(len(p), 20)], e.do("POST", whPath(p, "/rotate-secret"), key, nil))
		}
		for _, q := range []string{"search=%00", "search=%ff", "search=" + url.QueryEscape(huge[:20000]), "search=%25%5F%5C",
			"page=99999999999999999999", "page=9223372036854775807", "pageSize=-1", "pageSize=9223372036854775807",
			"isActive=%00", "isActive=%ff",
			"page=x&page=1"} { // repeated: the handler reads the first value, the document has one value per parameter
			r := e.do("GET", webhooksBase+"?"+q, key, nil)
			if r.Status >= 500 {
				t.Errorf("GET ?%.40s: status %d; body: %.300s", q, r.Status, r.Body)
			}
		}

		// Nothing was written: the seed is unchanged and alone.
		is.Equal(e.do("GET", whPath(id), key, nil).expect(200).JSON(), seed)
		list := e.do("GET", webhooksBase, key, nil).expect(200).JSON()
		is.Equal(webhookNamesOf(t, list), []string{"seed"})
		is.Equal(len(e.webhookEvents(acme.ID)), 1)
	})
}
