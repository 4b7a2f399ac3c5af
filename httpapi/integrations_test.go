package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/paymentsapi"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The integration routes, black box over HTTP on both engines: the
// catalogue with the tenant's state (exact items, order, filters,
// paging), the detail with bundles, state and version changes with their
// events, credentials (schema, validation naming the key, masking and the
// mask round trip, sealed at rest, never echoed, no-store), the payments
// area using a tenant's gateway credentials, the log (filters, order,
// paging, bad input), tenants kept apart, and 401/403 on every route.
// Every test makes its own tenants (and Kit), so on PostgreSQL (one schema
// for the package) nothing another test writes shows up.

const integBase = "/api/integrations"

// integAll are the three integration features.
var integAll = []string{integrationsapi.FeatureIntegrationsView, integrationsapi.FeatureIntegrationsManage, integrationsapi.FeatureIntegrationsCredentials}

// The exact key sets of the documented bodies.
var (
	integItemKeys   = []string{"id", "title", "category", "hub", "providerKey", "bundleId", "hasCredentials", "isEnabled", "apiVersion"}
	integDetailKeys = []string{"integration", "bundle", "bundleIntegrations", "state", "hasCredentials", "credentialsKeys"}
	integStateKeys  = []string{"isEnabled", "apiVersion", "reauthRequired", "lastHealthStatus", "lastHealthCheckedAt", "lastHealthLatencyMs",
		"enabledAt", "updatedAt", "notifyAdminsOnFailure"}
	integDefKeys    = []string{"id", "title", "description", "category", "hub", "providerKey", "bundleId", "apiVersions", "credentials"}
	integLogKeys    = []string{"id", "integrationId", "runId", "level", "message", "code", "payload", "entityType", "entityId", "createdAt"}
	integPageKeys   = []string{"items", "total", "page", "pageSize", "totalPages"}
	integSetKeys    = []string{"isEnabled", "reauthRequired", "notifyAdminsOnFailure", "apiVersion", "updatedAt"}
	integVersionKey = []string{"apiVersion", "previousVersion"}
)

// integBuiltins are the Kit's four integrations as the list shows them in
// a tenant that changed nothing, in the list's order (by title).
var integBuiltins = []map[string]any{
	{"id": "webhooks_custom", "title": "Custom webhooks", "category": "webhook", "hub": "webhook_endpoints", "providerKey": "", "bundleId": "",
		"hasCredentials": false, "isEnabled": true, "apiVersion": nil},
	{"id": "sync_http_json", "title": "HTTP JSON source", "category": "data_sync", "hub": "data_sync", "providerKey": "sync_http_json",
		"bundleId": "", "hasCredentials": false, "isEnabled": true, "apiVersion": "v1"},
	{"id": "gateway_mock", "title": "Mock payment gateway", "category": "payment", "hub": "payment_gateways", "providerKey": "mock",
		"bundleId": "", "hasCredentials": false, "isEnabled": true, "apiVersion": nil},
	{"id": "gateway_stripe", "title": "Stripe", "category": "payment", "hub": "payment_gateways", "providerKey": "stripe", "bundleId": "",
		"hasCredentials": false, "isEnabled": true, "apiVersion": nil},
}

// integStripeSchema is gateway_stripe's credential schema as GET
// /credentials shows it.
var integStripeSchema = []any{
	map[string]any{"key": "secretKey", "label": "Secret key", "type": "secret", "required": true},
	map[string]any{"key": "publishableKey", "label": "Publishable key", "type": "text", "required": true},
	map[string]any{"key": "webhookSecret", "label": "Webhook signing secret", "type": "secret", "required": false},
}

// integFixture is a tenant with a key holding every integration feature.
type integFixture struct {
	e   *testEnv
	tf  tenantFixture
	key string
}

func integSetup(e *testEnv, name string, more ...string) *integFixture {
	e.t.Helper()
	tf := e.newTenant(name + " " + randomHex(3))
	return &integFixture{e: e, tf: tf, key: e.newKey(tf, append(slices.Clone(integAll), more...)...)}
}

// get is a GET with the fixture's key.
func (f *integFixture) get(path string) *response {
	f.e.t.Helper()
	return f.e.do("GET", integBase+path, f.key, nil)
}

// put is a PUT with the fixture's key.
func (f *integFixture) put(path string, body any) *response {
	f.e.t.Helper()
	return f.e.do("PUT", integBase+path, f.key, body)
}

// list is GET /integrations?query: 200 with the page's exact keys.
func (f *integFixture) list(query string) map[string]any {
	f.e.t.Helper()
	body := f.get("?" + query).expect(200).JSON()
	expectKeys(f.e.t, "list ?"+query, body, integPageKeys...)
	for _, it := range integObjects(f.e.t, body["items"]) {
		expectKeys(f.e.t, "list item", it, integItemKeys...)
	}
	return body
}

// item is the list's item of id (nil when absent).
func (f *integFixture) item(id string) map[string]any {
	f.e.t.Helper()
	for _, it := range integObjects(f.e.t, f.list("")["items"]) {
		if it["id"] == id {
			return it
		}
	}
	return nil
}

// detail is GET /integrations/{id}: 200 with the exact keys.
func (f *integFixture) detail(id string) map[string]any {
	f.e.t.Helper()
	d := f.get("/" + id).expect(200).JSON()
	expectKeys(f.e.t, "detail of "+id, d, integDetailKeys...)
	if st, ok := d["state"].(map[string]any); ok {
		expectKeys(f.e.t, "state of "+id, st, integStateKeys...)
	} else {
		f.e.t.Errorf("detail of %s: state is %v", id, d["state"])
	}
	if def, ok := d["integration"].(map[string]any); ok {
		expectKeys(f.e.t, "integration of "+id, def, integDefKeys...)
	} else {
		f.e.t.Errorf("detail of %s: integration is %v", id, d["integration"])
	}
	return d
}

// integObjects returns a JSON array of objects.
func integObjects(t testing.TB, v any) []map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]map[string]any, len(list))
	for i, x := range list {
		if out[i], ok = x.(map[string]any); !ok {
			t.Fatalf("item %d (%v) is not an object", i, x)
		}
	}
	return out
}

// integIDs returns the "id" of each object of an array.
func integIDs(t testing.TB, v any) []string {
	t.Helper()
	var out []string
	for _, o := range integObjects(t, v) {
		id, _ := o["id"].(string)
		out = append(out, id)
	}
	return out
}

// integError checks the status and that the body is exactly {error: msg}.
func integError(t testing.TB, what string, r *response, status int, msg string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d; body: %s", what, r.Status, status, r.Body)
		return
	}
	sameJSON(t, what+" body", r.JSON(), map[string]any{"error": msg})
}

// integInvalid checks a {error: "Validation failed", details} answer of
// status whose details name exactly fields.
func integInvalid(t testing.TB, what string, r *response, status int, fields ...string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d naming %v; body: %s", what, r.Status, status, fields, r.Body)
		return
	}
	body := r.JSON()
	expectKeys(t, what+": body", body, "error", "details")
	if body["error"] != "Validation failed" {
		t.Errorf("%s: error %v, want Validation failed", what, body["error"])
	}
	details, _ := body["details"].(map[string]any)
	expectKeys(t, what+": details", details, fields...)
}

// integTime parses an RFC 3339 timestamp.
func integTime(t testing.TB, what string, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %v is not an RFC 3339 timestamp: %v", what, v, err)
	}
	return ts
}

func TestIntegrationList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		f := integSetup(e, "Acme")

		body := f.list("")
		sameJSON(t, "the catalogue", body, map[string]any{"items": integBuiltins, "total": 4, "page": 1, "pageSize": 100, "totalPages": 1})

		ids := func(query string) []string {
			t.Helper()
			return integIDs(t, f.list(query)["items"])
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"q=stripe", []string{"gateway_stripe"}},
			{"q=STRIPE", []string{"gateway_stripe"}},                         // case-insensitive
			{"q=payment", []string{"gateway_mock", "gateway_stripe"}},        // title, description
			{"q=sync_http", []string{"sync_http_json"}},                      // id
			{"q=outbound", []string{"webhooks_custom"}},                      // description only
			{"q=" + url.QueryEscape("Ü%_"), nil},                             // matches nothing, no error
			{"category=payment", []string{"gateway_mock", "gateway_stripe"}}, // by title
			{"category=data_sync", []string{"sync_http_json"}},
			{"category=Payment", nil},
			{"category=payment&q=card", []string{"gateway_stripe"}},
			{"isEnabled=true", []string{"webhooks_custom", "sync_http_json", "gateway_mock", "gateway_stripe"}},
			{"isEnabled=1", []string{"webhooks_custom", "sync_http_json", "gateway_mock", "gateway_stripe"}},
			{"isEnabled=false", nil},
			{"isEnabled=0", nil},
			{"isEnabled=", []string{"webhooks_custom", "sync_http_json", "gateway_mock", "gateway_stripe"}},
		} {
			if got := ids(c.query); !slices.Equal(got, c.want) {
				t.Errorf("?%s: %v, want %v", c.query, got, c.want)
			}
		}
		sameJSON(t, "a filtered page's totals", f.list("category=payment"), map[string]any{"items": integBuiltins[2:], "total": 2,
			"page": 1, "pageSize": 100, "totalPages": 1})

		// Paging.
		sameJSON(t, "page 1 of 2", f.list("pageSize=3"), map[string]any{"items": integBuiltins[:3], "total": 4, "page": 1, "pageSize": 3, "totalPages": 2})
		sameJSON(t, "page 2 of 2", f.list("pageSize=3&page=2"), map[string]any{"items": integBuiltins[3:], "total": 4, "page": 2, "pageSize": 3, "totalPages": 2})
		sameJSON(t, "past the end", f.list("pageSize=2&page=5"), map[string]any{"items": []any{}, "total": 4, "page": 5, "pageSize": 2, "totalPages": 2})
		sameJSON(t, "pageSize 100", f.list("pageSize=100"), map[string]any{"items": integBuiltins, "total": 4, "page": 1, "pageSize": 100, "totalPages": 1})
		sameJSON(t, "no match", f.list("q=zzz"), map[string]any{"items": []any{}, "total": 0, "page": 1, "pageSize": 100, "totalPages": 0})

		// NUL in q: no field holds one, so nothing matches (or the filter
		// is refused); never a 5xx, never everything.
		for _, q := range []string{"%00", "mock%00mock", "gateway_mock%00Mock"} {
			r := f.get("?q=" + q)
			switch {
			case r.Status == 400:
				integInvalid(t, "?q="+q, r, 400, "q")
			case r.Status != 200:
				t.Errorf("?q=%s: status %d, want 200 (or 400); body: %s", q, r.Status, r.Body)
			default:
				if got := integIDs(t, r.JSON()["items"]); len(got) != 0 {
					t.Errorf("?q=%s matches %v, want nothing (no id, title or description holds a NUL)", q, got)
				}
			}
		}

		// Refusals.
		for _, c := range []struct{ query, field string }{
			{"isEnabled=yes", "isEnabled"},
			{"isEnabled=TRUE", "isEnabled"},
			{"isEnabled=t", "isEnabled"},
			{"pageSize=101", "pageSize"},
			{"pageSize=0", "pageSize"},
			{"pageSize=x", "pageSize"},
			{"page=0", "page"},
			{"page=-1", "page"},
		} {
			integInvalid(t, "?"+c.query, f.get("?"+c.query), 400, c.field)
		}
		// No credential.
		integError(t, "the list without a credential", e.do("GET", integBase, "", nil), 401, "Unauthorized")
	})
}

func TestIntegrationDetail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		// A bundle of two, registered by the host: a has no fields of its
		// own (it takes the bundle's), b has its own.
		k := e.kit.Integrations
		bundleFields := []integrations.Field{
			{Key: "instanceUrl", Label: "Instance URL", Type: integrations.FieldURL, Required: true},
			{Key: "region", Label: "Region", Type: integrations.FieldSelect, Options: []integrations.Option{{Value: "eu", Label: "Europe"}}},
		}
		if err := k.RegisterBundle(integrations.Bundle{ID: "office", Title: "Office suite", Description: "One login for both", Credentials: bundleFields}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []integrations.Definition{
			{ID: "office_mail", Title: "Office mail", Description: "Mail", Category: "messaging", Hub: "office", ProviderKey: "office", BundleID: "office"},
			{ID: "office_files", Title: "Office files", Description: "Files", Category: "storage", Hub: "office", ProviderKey: "office", BundleID: "office",
				APIVersions: []integrations.APIVersion{{ID: "v1", Label: "One", Status: "deprecated"}, {ID: "v2", Label: "Two", Status: "stable", Default: true}},
				Credentials: []integrations.Field{{Key: "apiToken", Label: "API token", Type: integrations.FieldSecret, Required: true}}},
		} {
			if err := k.Register(d); err != nil {
				t.Fatal(err)
			}
		}
		f := integSetup(e, "Acme")

		// A built-in without a bundle.
		d := f.detail("sync_http_json")
		sameJSON(t, "sync_http_json's definition", d["integration"], map[string]any{"id": "sync_http_json", "title": "HTTP JSON source",
			"description": "Imports and exports custom entity records from and to an HTTP API speaking JSON.", "category": "data_sync",
			"hub": "data_sync", "providerKey": "sync_http_json", "bundleId": "",
			"apiVersions": []any{map[string]any{"id": "v1", "label": "v1", "status": "stable", "default": true}},
			"credentials": []any{map[string]any{"key": "baseUrl", "label": "Base URL", "type": "url", "required": true},
				map[string]any{"key": "token", "label": "Bearer token", "type": "secret", "required": false}}})
		sameJSON(t, "sync_http_json's default state", d["state"], map[string]any{"isEnabled": true, "apiVersion": "v1", "reauthRequired": false,
			"lastHealthStatus": nil, "lastHealthCheckedAt": nil, "lastHealthLatencyMs": nil, "enabledAt": nil, "updatedAt": nil,
			"notifyAdminsOnFailure": false})
		sameJSON(t, "sync_http_json's bundle and credentials", map[string]any{"bundle": d["bundle"], "bundleIntegrations": d["bundleIntegrations"],
			"hasCredentials": d["hasCredentials"], "credentialsKeys": d["credentialsKeys"]},
			map[string]any{"bundle": nil, "bundleIntegrations": []any{}, "hasCredentials": false, "credentialsKeys": []any{}})
		if d := f.detail("gateway_stripe"); d["state"].(map[string]any)["apiVersion"] != nil {
			t.Errorf("an unversioned integration's apiVersion is %v, want null", d["state"].(map[string]any)["apiVersion"])
		}

		// A bundle member: the bundle and both members with their states.
		f.put("/office_files/state", map[string]any{"isEnabled": false}).expect(200)
		d = f.detail("office_mail")
		sameJSON(t, "office_mail's bundle", d["bundle"], map[string]any{"id": "office", "title": "Office suite", "description": "One login for both",
			"credentials": []any{map[string]any{"key": "instanceUrl", "label": "Instance URL", "type": "url", "required": true},
				map[string]any{"key": "region", "label": "Region", "type": "select", "required": false,
					"options": []any{map[string]any{"value": "eu", "label": "Europe"}}}}})
		members := integObjects(t, d["bundleIntegrations"])
		if got := integIDs(t, d["bundleIntegrations"]); !slices.Equal(got, []string{"office_mail", "office_files"}) {
			t.Fatalf("bundleIntegrations %v, want office_mail, office_files", got)
		}
		for _, m := range members {
			expectKeys(t, "bundle member", m, append(slices.Clone(integDefKeys), "isEnabled", "state")...)
			expectKeys(t, "bundle member's state", m["state"].(map[string]any), integStateKeys...)
		}
		if members[0]["isEnabled"] != true || members[1]["isEnabled"] != false || members[1]["state"].(map[string]any)["isEnabled"] != false {
			t.Errorf("bundle members' isEnabled: mail %v, files %v (state %v); want true, false", members[0]["isEnabled"], members[1]["isEnabled"], members[1]["state"])
		}
		if v := members[1]["state"].(map[string]any)["apiVersion"]; v != "v2" {
			t.Errorf("office_files's apiVersion %v, want the default v2", v)
		}
		if d := f.detail("office_files"); !slices.Equal(integIDs(t, d["bundleIntegrations"]), []string{"office_mail", "office_files"}) ||
			d["bundle"].(map[string]any)["id"] != "office" {
			t.Errorf("office_files's detail: bundle %v, members %v", d["bundle"], d["bundleIntegrations"])
		}
		// The member without fields takes the bundle's schema, for GET and
		// PUT; the other keeps its own.
		cr := f.get("/office_mail/credentials").expect(200).JSON()
		sameJSON(t, "office_mail's credentials", cr, map[string]any{"integrationId": "office_mail", "schema": d["bundle"].(map[string]any)["credentials"],
			"credentials": map[string]any{}})
		integInvalid(t, "office_mail with office_files's field", f.put("/office_mail/credentials", map[string]any{"credentials": map[string]any{"apiToken": "x"}}),
			422, "credentials.apiToken", "credentials.instanceUrl")
		integInvalid(t, "office_mail's select outside its options", f.put("/office_mail/credentials",
			map[string]any{"credentials": map[string]any{"instanceUrl": "https://office.test", "region": "us"}}), 422, "credentials.region")
		sameJSON(t, "office_mail's PUT", f.put("/office_mail/credentials",
			map[string]any{"credentials": map[string]any{"instanceUrl": "https://office.test", "region": "eu"}}).expect(200).JSON(), map[string]any{"ok": true})
		sameJSON(t, "office_files's schema", f.get("/office_files/credentials").expect(200).JSON()["schema"],
			[]any{map[string]any{"key": "apiToken", "label": "API token", "type": "secret", "required": true}})
		if d := f.detail("office_mail"); d["hasCredentials"] != true || !slices.Equal(integStrings(d["credentialsKeys"]), []string{"instanceUrl", "region"}) {
			t.Errorf("office_mail after its PUT: hasCredentials %v, keys %v", d["hasCredentials"], d["credentialsKeys"])
		}
		// The bundle's members in the list, with their bundle.
		if it := f.item("office_mail"); it == nil || it["bundleId"] != "office" || it["hasCredentials"] != true {
			t.Errorf("office_mail in the list: %v", it)
		}

		// Unknown ids.
		for _, p := range []string{"/nope", "/nope/credentials", "/GATEWAY_MOCK"} {
			integError(t, "GET "+p, f.get(p), 404, "Integration not found")
		}
	})
}

// integStrings returns a JSON array of strings.
func integStrings(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestIntegrationStateAndVersion(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		a := integSetup(e, "Acme")
		b := integSetup(e, "Globex")

		// Refusals.
		integError(t, "PUT state {}", a.put("/gateway_mock/state", map[string]any{}), 422,
			"Invalid state payload: give isEnabled, reauthRequired or notifyAdminsOnFailure")
		integError(t, "PUT state of an unknown integration", a.put("/nope/state", map[string]any{"isEnabled": false}), 404, "Integration not found")
		if len(e.events(a.tf.ID, "integrations.")) != 0 {
			t.Fatal("a refused change emitted an event")
		}

		// Disable, then enable: the answer, the detail, the list.
		r := a.put("/sync_http_json/state", map[string]any{"isEnabled": false}).expect(200).JSON()
		expectKeys(t, "PUT state answer", r, integSetKeys...)
		off := integTime(t, "updatedAt", r["updatedAt"])
		sameJSON(t, "PUT state answer", r, map[string]any{"isEnabled": false, "reauthRequired": false, "notifyAdminsOnFailure": false, "apiVersion": "v1", "updatedAt": r["updatedAt"]})
		st := a.detail("sync_http_json")["state"].(map[string]any)
		if st["isEnabled"] != false || st["enabledAt"] != nil || st["updatedAt"] == nil || st["apiVersion"] != "v1" {
			t.Errorf("state after disabling: %v", st)
		}
		if it := a.item("sync_http_json"); it == nil || it["isEnabled"] != false || it["apiVersion"] != "v1" {
			t.Errorf("list item after disabling: %v", it)
		}
		if got := integIDs(t, a.list("isEnabled=false")["items"]); !slices.Equal(got, []string{"sync_http_json"}) {
			t.Errorf("?isEnabled=false after disabling: %v", got)
		}
		if got := integIDs(t, a.list("isEnabled=1")["items"]); !slices.Equal(got, []string{"webhooks_custom", "gateway_mock", "gateway_stripe"}) {
			t.Errorf("?isEnabled=1 after disabling: %v", got)
		}
		r = a.put("/sync_http_json/state", map[string]any{"isEnabled": true}).expect(200).JSON()
		sameJSON(t, "enabling answer", r, map[string]any{"isEnabled": true, "reauthRequired": false, "notifyAdminsOnFailure": false, "apiVersion": "v1", "updatedAt": r["updatedAt"]})
		on := integTime(t, "updatedAt", r["updatedAt"])
		if on.Before(off) {
			t.Errorf("updatedAt went back from %v to %v", off, on)
		}
		st = a.detail("sync_http_json")["state"].(map[string]any)
		if st["enabledAt"] == nil || !integTime(t, "enabledAt", st["enabledAt"]).Equal(on) || st["isEnabled"] != true {
			t.Errorf("state after enabling: %v; want enabledAt stamped %v", st, on)
		}
		// reauthRequired alone leaves isEnabled and enabledAt.
		r = a.put("/sync_http_json/state", map[string]any{"reauthRequired": true}).expect(200).JSON()
		if r["isEnabled"] != true || r["reauthRequired"] != true {
			t.Errorf("reauthRequired alone: %v", r)
		}
		if st := a.detail("sync_http_json")["state"].(map[string]any); st["enabledAt"] == nil || !integTime(t, "enabledAt", st["enabledAt"]).Equal(on) || st["reauthRequired"] != true {
			t.Errorf("state after reauthRequired: %v", st)
		}
		// notifyAdminsOnFailure alone switches the admins' notifications
		// on and leaves the rest.
		r = a.put("/sync_http_json/state", map[string]any{"notifyAdminsOnFailure": true}).expect(200).JSON()
		if r["notifyAdminsOnFailure"] != true || r["isEnabled"] != true || r["reauthRequired"] != true {
			t.Errorf("notifyAdminsOnFailure alone: %v", r)
		}
		if st := a.detail("sync_http_json")["state"].(map[string]any); st["notifyAdminsOnFailure"] != true {
			t.Errorf("state after notifyAdminsOnFailure: %v", st)
		}
		a.put("/sync_http_json/state", map[string]any{"notifyAdminsOnFailure": "yes"}).expect(422)
		// An unversioned integration answers apiVersion null.
		sameJSON(t, "gateway_mock disabled", a.put("/gateway_mock/state", map[string]any{"isEnabled": false}).expect(200).JSON()["apiVersion"], nil)

		// Versions.
		r = a.put("/sync_http_json/version", map[string]any{"apiVersion": "v1"}).expect(200).JSON()
		sameJSON(t, "PUT version v1", r, map[string]any{"apiVersion": "v1", "previousVersion": "v1"})
		expectKeys(t, "PUT version answer", r, integVersionKey...)
		integError(t, "unknown version", a.put("/sync_http_json/version", map[string]any{"apiVersion": "v9"}), 422, "Unknown integration version")
		integError(t, "no version", a.put("/sync_http_json/version", map[string]any{}), 422, "Unknown integration version")
		integError(t, "an unversioned integration", a.put("/gateway_mock/version", map[string]any{"apiVersion": "v1"}), 422, "This integration is not versioned")
		integError(t, "version of an unknown integration", a.put("/nope/version", map[string]any{"apiVersion": "v1"}), 404, "Integration not found")
		if st := a.detail("sync_http_json")["state"].(map[string]any); st["apiVersion"] != "v1" || st["isEnabled"] != true {
			t.Errorf("state after the version changes: %v", st)
		}

		// The events: one per change, with the integration and its state.
		evs := e.events(a.tf.ID, "integrations.")
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		want := []string{integrations.EventStateUpdated, integrations.EventStateUpdated, integrations.EventStateUpdated,
			integrations.EventStateUpdated, integrations.EventStateUpdated, integrations.EventVersionUpdated}
		if !slices.Equal(types, want) {
			t.Fatalf("events %v, want %v", types, want)
		}
		var data map[string]any
		if err := json.Unmarshal(evs[0].Data, &data); err != nil {
			t.Fatal(err)
		}
		expectKeys(t, "state event data", data, append(slices.Clone(integStateKeys), "integrationId")...)
		if data["integrationId"] != "sync_http_json" || data["isEnabled"] != false || data["apiVersion"] != "v1" {
			t.Errorf("first state event %s", evs[0].Data)
		}
		if err := json.Unmarshal(evs[5].Data, &data); err != nil || data["integrationId"] != "sync_http_json" || data["apiVersion"] != "v1" {
			t.Errorf("version event %s", evs[5].Data)
		}

		// The other tenant is untouched.
		sameJSON(t, "tenant B's catalogue", b.list(""), map[string]any{"items": integBuiltins, "total": 4, "page": 1, "pageSize": 100, "totalPages": 1})
		if st := b.detail("sync_http_json")["state"].(map[string]any); st["updatedAt"] != nil || st["reauthRequired"] != false {
			t.Errorf("tenant B's state: %v", st)
		}
		if n := len(e.events(b.tf.ID, "integrations.")); n != 0 {
			t.Errorf("tenant B has %d integration events", n)
		}
	})
}

func TestIntegrationCredentials(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		if err := e.kit.Integrations.Register(integrations.Definition{ID: "flags_test", Title: "Flags", Category: "test",
			Credentials: []integrations.Field{{Key: "sandbox", Label: "Sandbox", Type: integrations.FieldBoolean}}}); err != nil {
			t.Fatal(err)
		}
		a := integSetup(e, "Acme")
		b := integSetup(e, "Globex")
		const secretKey, hookSecret, token = "sk_test_SUPERSECRET_a1b2c3", "whsec_HOOKSECRET_d4e5f6", "tok_BEARERSECRET_789"
		secrets := []string{secretKey, hookSecret, token}
		var bodies []string // every response body, checked for the secrets at the end
		record := func(r *response) *response {
			bodies = append(bodies, string(r.Body))
			return r
		}
		noStore := func(what string, r *response) {
			t.Helper()
			if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store", what, cc)
			}
		}
		creds := func(f *integFixture, id string) map[string]any {
			t.Helper()
			r := record(f.get("/" + id + "/credentials")).expect(200)
			noStore("GET "+id+"/credentials", r)
			body := r.JSON()
			expectKeys(t, "credentials body", body, "integrationId", "schema", "credentials")
			return body
		}
		putCreds := func(f *integFixture, id string, values any) *response {
			t.Helper()
			r := record(f.put("/"+id+"/credentials", map[string]any{"credentials": values}))
			noStore("PUT "+id+"/credentials", r)
			return r
		}

		// None stored.
		sameJSON(t, "stripe's credentials before any", creds(a, "gateway_stripe"),
			map[string]any{"integrationId": "gateway_stripe", "schema": integStripeSchema, "credentials": map[string]any{}})
		sameJSON(t, "webhooks_custom's credentials", creds(a, "webhooks_custom"),
			map[string]any{"integrationId": "webhooks_custom", "schema": []any{}, "credentials": map[string]any{}})

		// Stored, then shown masked.
		sameJSON(t, "PUT stripe", putCreds(a, "gateway_stripe", map[string]any{"secretKey": secretKey, "publishableKey": "pk_test_123",
			"webhookSecret": hookSecret}).expect(200).JSON(), map[string]any{"ok": true})
		sameJSON(t, "stripe's credentials", creds(a, "gateway_stripe")["credentials"],
			map[string]any{"secretKey": integrations.Mask, "publishableKey": "pk_test_123", "webhookSecret": integrations.Mask})
		if integrations.Mask != "••••••••" {
			t.Errorf("the mask is %q", integrations.Mask)
		}
		d := record(a.get("/gateway_stripe")).expect(200).JSON()
		if d["hasCredentials"] != true || !slices.Equal(integStrings(d["credentialsKeys"]), []string{"publishableKey", "secretKey", "webhookSecret"}) {
			t.Errorf("detail: hasCredentials %v, credentialsKeys %v", d["hasCredentials"], d["credentialsKeys"])
		}
		if it := a.item("gateway_stripe"); it == nil || it["hasCredentials"] != true {
			t.Errorf("list item: %v", it)
		}
		if it := a.item("gateway_mock"); it == nil || it["hasCredentials"] != false {
			t.Errorf("gateway_mock's list item: %v", it)
		}

		// Refusals name the key; nothing changes.
		long := strings.Repeat("x", integrations.MaxValueLength+1)
		for _, c := range []struct {
			what, id string
			values   any
			fields   []string
		}{
			{"unknown key", "gateway_stripe", map[string]any{"secretKey": "sk", "publishableKey": "pk", "apiKey": "x"}, []string{"credentials.apiKey"}},
			{"number for text", "gateway_stripe", map[string]any{"secretKey": "sk", "publishableKey": 5}, []string{"credentials.publishableKey"}},
			{"object for a secret", "gateway_stripe", map[string]any{"secretKey": map[string]any{}, "publishableKey": "pk"}, []string{"credentials.secretKey"}},
			{"missing required", "gateway_stripe", map[string]any{"publishableKey": "pk", "webhookSecret": "wh"}, []string{"credentials.secretKey"}},
			{"required null", "gateway_stripe", map[string]any{"secretKey": nil, "publishableKey": "pk"}, []string{"credentials.secretKey"}},
			{"nothing", "gateway_stripe", map[string]any{}, []string{"credentials.publishableKey", "credentials.secretKey"}},
			{"over 20,000 bytes", "gateway_stripe", map[string]any{"secretKey": long, "publishableKey": "pk"}, []string{"credentials.secretKey"}},
			{"NUL", "gateway_stripe", map[string]any{"secretKey": "sk", "publishableKey": "p\x00k"}, []string{"credentials.publishableKey"}},
			{"string for boolean", "flags_test", map[string]any{"sandbox": "true"}, []string{"credentials.sandbox"}},
			{"number for boolean", "flags_test", map[string]any{"sandbox": 0}, []string{"credentials.sandbox"}},
			{"ftp url", "sync_http_json", map[string]any{"baseUrl": "ftp://x"}, []string{"credentials.baseUrl"}},
			{"not a url", "sync_http_json", map[string]any{"baseUrl": "not a url"}, []string{"credentials.baseUrl"}},
			{"url without host", "sync_http_json", map[string]any{"baseUrl": "https:///path"}, []string{"credentials.baseUrl"}},
			{"url missing", "sync_http_json", map[string]any{"token": "t"}, []string{"credentials.baseUrl"}},
			{"a secret as a number", "sync_http_json", map[string]any{"baseUrl": "https://a.test", "token": 12}, []string{"credentials.token"}},
			{"credentials null", "gateway_stripe", nil, []string{"credentials"}},
			{"credentials an array", "gateway_stripe", []any{"x"}, nil}, // malformed: a 422 without details
		} {
			r := putCreds(a, c.id, c.values)
			if c.fields == nil {
				if r.Status != 422 {
					t.Errorf("%s: status %d, want 422; body: %s", c.what, r.Status, r.Body)
				}
				continue
			}
			integInvalid(t, c.what, r, 422, c.fields...)
		}
		// A body without the credentials key.
		r := record(e.do("PUT", integBase+"/gateway_stripe/credentials", a.key, map[string]any{"secretKey": "sk"}))
		noStore("PUT without credentials", r)
		integInvalid(t, "a body without credentials", r, 422, "credentials")
		// An unknown integration.
		integError(t, "PUT credentials of an unknown integration", putCreds(a, "nope", map[string]any{"x": "y"}), 404, "Integration not found")
		r = record(a.get("/nope/credentials"))
		noStore("GET unknown credentials", r)
		integError(t, "GET credentials of an unknown integration", r, 404, "Integration not found")

		stored := func(f *integFixture, id string) map[string]any {
			t.Helper()
			v, err := e.kit.Integrations.Values(t.Context(), f.tf.ID, id)
			if err != nil {
				t.Fatalf("Values(%s): %v", id, err)
			}
			return v
		}
		sameJSON(t, "stored after the refusals", stored(a, "gateway_stripe"),
			map[string]any{"secretKey": secretKey, "publishableKey": "pk_test_123", "webhookSecret": hookSecret})

		// The mask round trip keeps the stored secrets; a change of the
		// clear field is taken.
		shown := creds(a, "gateway_stripe")["credentials"].(map[string]any)
		shown["publishableKey"] = "pk_test_456"
		putCreds(a, "gateway_stripe", shown).expect(200)
		sameJSON(t, "stored after the round trip", stored(a, "gateway_stripe"),
			map[string]any{"secretKey": secretKey, "publishableKey": "pk_test_456", "webhookSecret": hookSecret})
		// Leaving the optional secret out drops it (PUT replaces).
		putCreds(a, "gateway_stripe", map[string]any{"secretKey": integrations.Mask, "publishableKey": "pk_test_456"}).expect(200)
		sameJSON(t, "stored without webhookSecret", stored(a, "gateway_stripe"),
			map[string]any{"secretKey": secretKey, "publishableKey": "pk_test_456"})
		sameJSON(t, "shown without webhookSecret", creds(a, "gateway_stripe")["credentials"],
			map[string]any{"secretKey": integrations.Mask, "publishableKey": "pk_test_456"})
		putCreds(a, "gateway_stripe", map[string]any{"secretKey": integrations.Mask, "publishableKey": "pk_test_456", "webhookSecret": hookSecret}).expect(200)

		// The HTTP JSON source and the boolean field.
		putCreds(a, "sync_http_json", map[string]any{"baseUrl": "https://api.example.test/v1", "token": token}).expect(200)
		sameJSON(t, "sync_http_json shown", creds(a, "sync_http_json")["credentials"],
			map[string]any{"baseUrl": "https://api.example.test/v1", "token": integrations.Mask})
		putCreds(a, "flags_test", map[string]any{"sandbox": false}).expect(200)
		sameJSON(t, "flags shown", creds(a, "flags_test")["credentials"], map[string]any{"sandbox": false})
		if got := integIDs(t, a.list("q=s&category=payment")["items"]); len(got) == 0 {
			t.Error("list filtered: no items")
		}
		var withCreds []string
		for _, it := range integObjects(t, record(a.get("")).expect(200).JSON()["items"]) {
			if it["hasCredentials"] == true {
				withCreds = append(withCreds, it["id"].(string))
			}
		}
		if !slices.Equal(withCreds, []string{"flags_test", "sync_http_json", "gateway_stripe"}) {
			t.Errorf("items with credentials %v", withCreds)
		}

		// Sealed at rest: the stored row holds no secret, nor any value.
		var sealed string
		if err := e.kit.DB.QueryRow(t.Context(), `SELECT sealed FROM integration_credentials WHERE tenant_id = $1 AND integration_id = $2`,
			a.tf.ID, "gateway_stripe").Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		for _, v := range append(slices.Clone(secrets), "pk_test_456", "secretKey") {
			if strings.Contains(sealed, v) {
				t.Errorf("the stored row holds %q in clear: %s", v, sealed)
			}
		}
		if !strings.HasPrefix(sealed, "v1:") {
			t.Errorf("the stored row %.20q… is not sealed", sealed)
		}

		// Tenant B sees nothing of A's.
		sameJSON(t, "tenant B's stripe credentials", creds(b, "gateway_stripe"),
			map[string]any{"integrationId": "gateway_stripe", "schema": integStripeSchema, "credentials": map[string]any{}})
		if d := record(b.get("/gateway_stripe")).expect(200).JSON(); d["hasCredentials"] != false || len(integStrings(d["credentialsKeys"])) != 0 {
			t.Errorf("tenant B's detail: %v", d)
		}
		if it := b.item("gateway_stripe"); it["hasCredentials"] != false {
			t.Errorf("tenant B's list item: %v", it)
		}
		// B cannot take A's secret by sending the mask.
		integInvalid(t, "tenant B sending the mask", putCreds(b, "gateway_stripe", map[string]any{"secretKey": integrations.Mask, "publishableKey": "pk_b"}),
			422, "credentials.secretKey")
		putCreds(b, "gateway_stripe", map[string]any{"secretKey": "sk_b", "publishableKey": "pk_b"}).expect(200)
		sameJSON(t, "A's after B's write", stored(a, "gateway_stripe")["secretKey"], secretKey)

		// The events name the keys, never a value.
		evs := e.events(a.tf.ID, "integrations.")
		n := 0
		for _, ev := range evs {
			if ev.Type != integrations.EventCredentialsUpdated {
				continue
			}
			n++
			var data map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			expectKeys(t, "credentials event data", data, "integrationId", "keys")
			for _, s := range append(slices.Clone(secrets), "pk_test") {
				if strings.Contains(string(ev.Data), s) {
					t.Errorf("event %s carries %q", ev.Data, s)
				}
			}
		}
		if n != 6 {
			t.Errorf("%d credentials events for A, want 6 (one per accepted PUT)", n)
		}
		var first map[string]any
		_ = json.Unmarshal(evs[0].Data, &first)
		sameJSON(t, "the first credentials event", first, map[string]any{"integrationId": "gateway_stripe",
			"keys": []any{"publishableKey", "secretKey", "webhookSecret"}})

		// No response carried a secret.
		for _, body := range bodies {
			for _, s := range secrets {
				if strings.Contains(body, s) {
					t.Errorf("a response carries %q: %s", s, body)
				}
			}
		}
		t.Logf("%d responses checked for the secrets", len(bodies))
	})
}

// The payments area verifies a tenant's mock webhooks with the
// webhookSecret stored in its gateway_mock integration.
func TestIntegrationPaymentCredentials(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		pay := []string{paymentsapi.FeaturePaymentsView, paymentsapi.FeaturePaymentsManage}
		a := integSetup(e, "Acme", pay...)
		b := integSetup(e, "Globex", pay...)
		session := func(f *integFixture, provider string) string {
			t.Helper()
			r := e.do("POST", "/api/payment_gateways/sessions", f.key, map[string]any{"providerKey": provider, "amount": 10,
				"currencyCode": "USD", "captureMethod": "manual"}).expect(201).JSON()
			return r["sessionId"].(string)
		}
		webhook := func(provider, sessionID, secret string) *response {
			t.Helper()
			body, _ := json.Marshal(map[string]any{"id": "evt_integ_" + randomHex(4), "type": "payment.captured",
				"data": map[string]any{"id": sessionID, "status": "captured"}})
			return e.send("POST", "/api/payment_gateways/webhook/"+provider, body, func(r *http.Request) {
				r.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
			})
		}
		accepted := map[string]any{"received": true, "queued": true}
		sa := session(a, "mock")
		// No secret stored: nothing verifies.
		integError(t, "before any credentials", webhook("mock", sa, "tenant-secret"), 401, "Webhook verification failed")

		a.put("/gateway_mock/credentials", map[string]any{"credentials": map[string]any{"webhookSecret": "tenant-secret"}}).expect(200)
		r := webhook("mock", sa, "tenant-secret")
		if r.Status != 202 {
			t.Fatalf("a webhook signed with the stored secret: status %d, want 202; body: %s", r.Status, r.Body)
		}
		sameJSON(t, "accepted", r.JSON(), accepted)
		integError(t, "another secret", webhook("mock", sa, "other-secret"), 401, "Webhook verification failed")
		// The processing mock shares gateway_mock's credentials.
		sp := session(a, "mock_processing")
		if r := webhook("mock_processing", sp, "tenant-secret"); r.Status != 202 {
			t.Errorf("mock_processing with gateway_mock's secret: status %d, want 202; body: %s", r.Status, r.Body)
		}
		// The mask round trip keeps the secret working.
		a.put("/gateway_mock/credentials", map[string]any{"credentials": map[string]any{"webhookSecret": integrations.Mask}}).expect(200)
		if r := webhook("mock", sa, "tenant-secret"); r.Status != 202 {
			t.Errorf("after the mask round trip: status %d, want 202; body: %s", r.Status, r.Body)
		}
		// Tenant B: A's secret does not verify B's session; B's own does.
		sb := session(b, "mock")
		integError(t, "A's secret on B's session", webhook("mock", sb, "tenant-secret"), 401, "Webhook verification failed")
		b.put("/gateway_mock/credentials", map[string]any{"credentials": map[string]any{"webhookSecret": "b-secret"}}).expect(200)
		if r := webhook("mock", sb, "b-secret"); r.Status != 202 {
			t.Errorf("B's secret on B's session: status %d; body: %s", r.Status, r.Body)
		}
		integError(t, "B's secret on A's session", webhook("mock", sa, "b-secret"), 401, "Webhook verification failed")
		// A new secret replaces the old one.
		a.put("/gateway_mock/credentials", map[string]any{"credentials": map[string]any{"webhookSecret": "rotated"}}).expect(200)
		integError(t, "the old secret after rotation", webhook("mock", sa, "tenant-secret"), 401, "Webhook verification failed")
		if r := webhook("mock", sa, "rotated"); r.Status != 202 {
			t.Errorf("the rotated secret: status %d; body: %s", r.Status, r.Body)
		}
	})
}

func TestIntegrationLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		a := integSetup(e, "Acme")
		b := integSetup(e, "Globex")
		ptr := func(s string) *string { return &s }
		log := func(f *integFixture, l integrations.LogEntry) {
			t.Helper()
			if err := e.kit.Integrations.Log(store.WithScope(t.Context(), store.Scope{TenantID: f.tf.ID}), l); err != nil {
				t.Fatal(err)
			}
		}
		log(a, integrations.LogEntry{IntegrationID: "sync_http_json", Level: integrations.LevelInfo, Message: "import started", RunID: ptr("r1"),
			EntityType: ptr("contact"), EntityID: ptr("c1"), Payload: json.RawMessage(`{"n":1,"list":["a"]}`)})
		log(a, integrations.LogEntry{IntegrationID: "sync_http_json", Level: integrations.LevelError, Message: "upstream 502", RunID: ptr("r1"),
			Code: ptr("E_HTTP"), EntityType: ptr("contact"), EntityID: ptr("c2")})
		log(a, integrations.LogEntry{IntegrationID: "gateway_mock", Level: integrations.LevelWarn, Message: "slow", RunID: ptr("r2"),
			EntityType: ptr("payment"), EntityID: ptr("c1"), Payload: json.RawMessage(`<not json>`)})
		log(a, integrations.LogEntry{IntegrationID: "gateway_stripe", Level: integrations.LevelError, Message: "declined"})
		log(b, integrations.LogEntry{IntegrationID: "sync_http_json", Level: integrations.LevelInfo, Message: "B's entry", RunID: ptr("r1")})

		page := func(f *integFixture, query string) map[string]any {
			t.Helper()
			body := f.get("/logs?" + query).expect(200).JSON()
			expectKeys(t, "logs ?"+query, body, integPageKeys...)
			for _, it := range integObjects(t, body["items"]) {
				expectKeys(t, "log item", it, integLogKeys...)
			}
			return body
		}
		messages := func(body map[string]any) []string {
			var out []string
			for _, it := range integObjects(t, body["items"]) {
				out = append(out, it["message"].(string))
			}
			return out
		}
		all := page(a, "")
		if got := messages(all); !slices.Equal(got, []string{"declined", "slow", "upstream 502", "import started"}) {
			t.Fatalf("the log, newest first: %v", got)
		}
		if all["total"] != 4.0 || all["page"] != 1.0 || all["pageSize"] != 20.0 || all["totalPages"] != 1.0 {
			t.Errorf("totals %v", all)
		}
		items := integObjects(t, all["items"])
		integTime(t, "createdAt", items[0]["createdAt"])
		want := map[string]any{"id": items[2]["id"], "integrationId": "sync_http_json", "runId": "r1", "level": "error", "message": "upstream 502",
			"code": "E_HTTP", "payload": nil, "entityType": "contact", "entityId": "c2", "createdAt": items[2]["createdAt"]}
		sameJSON(t, "an entry without a payload", items[2], want)
		sameJSON(t, "an entry with a payload", items[3]["payload"], map[string]any{"n": 1, "list": []any{"a"}})
		sameJSON(t, "a payload that was not JSON", items[1]["payload"], map[string]any{"omitted": "payload not JSON or larger than 64 KiB", "bytes": 10})
		sameJSON(t, "an entry without run, code or entity", []any{items[0]["runId"], items[0]["code"], items[0]["entityType"], items[0]["entityId"]},
			[]any{nil, nil, nil, nil})
		if id, _ := items[0]["id"].(string); len(id) != 36 {
			t.Errorf("entry id %q", id)
		}

		for _, c := range []struct {
			query string
			want  []string
		}{
			{"integrationId=sync_http_json", []string{"upstream 502", "import started"}},
			{"level=error", []string{"declined", "upstream 502"}},
			{"level=warn", []string{"slow"}},
			{"runId=r1", []string{"upstream 502", "import started"}},
			{"entityType=payment", []string{"slow"}},
			{"entityId=c1", []string{"slow", "import started"}},
			{"integrationId=sync_http_json&level=info&runId=r1&entityType=contact&entityId=c1", []string{"import started"}},
			{"integrationId=nope", nil},
			{"level=", []string{"declined", "slow", "upstream 502", "import started"}},
		} {
			if got := messages(page(a, c.query)); !slices.Equal(got, c.want) {
				t.Errorf("?%s: %v, want %v", c.query, got, c.want)
			}
		}
		// Paging.
		p := page(a, "pageSize=3&page=2")
		if got := messages(p); !slices.Equal(got, []string{"import started"}) || p["total"] != 4.0 || p["totalPages"] != 2.0 || p["pageSize"] != 3.0 {
			t.Errorf("page 2 of 3: %v %v", got, p)
		}
		if p := page(a, "pageSize=100&level=error"); p["total"] != 2.0 || p["pageSize"] != 100.0 {
			t.Errorf("pageSize=100: %v", p)
		}
		// Refusals: 400 naming the parameter, never a 5xx.
		for _, c := range []struct{ query, field string }{
			{"level=debug", "level"},
			{"level=ERROR", "level"},
			{"pageSize=101", "pageSize"},
			{"pageSize=0", "pageSize"},
			{"page=0", "page"},
			{"integrationId=%00", "integrationId"},
			{"runId=a%00b", "runId"},
			{"entityType=%00", "entityType"},
			{"entityId=%00", "entityId"},
			{"entityId=%FF", "entityId"},
		} {
			integInvalid(t, "logs ?"+c.query, a.get("/logs?"+c.query), 400, c.field)
		}

		// Tenants: B sees its one entry, A none of B's.
		if got := messages(page(b, "")); !slices.Equal(got, []string{"B's entry"}) {
			t.Errorf("tenant B's log: %v", got)
		}
		if got := messages(page(b, "runId=r1&integrationId=sync_http_json")); !slices.Equal(got, []string{"B's entry"}) {
			t.Errorf("tenant B's log by run: %v", got)
		}
		if got := messages(page(a, "runId=r1&level=info")); !slices.Equal(got, []string{"import started"}) {
			t.Errorf("tenant A's info entries of r1: %v", got)
		}
	})
}

// Every route answers 403 naming its feature to a key holding the two
// others, lets a key holding only its feature through, and answers 401
// without a credential.
func TestIntegrationPermissions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Perm " + randomHex(3))
		routes := []struct {
			method, path, feature string
			body                  any
			status                int // with only the feature
		}{
			{"GET", integBase, integrationsapi.FeatureIntegrationsView, nil, 200},
			{"GET", integBase + "/logs", integrationsapi.FeatureIntegrationsView, nil, 200},
			{"GET", integBase + "/gateway_mock", integrationsapi.FeatureIntegrationsView, nil, 200},
			{"GET", integBase + "/gateway_mock/credentials", integrationsapi.FeatureIntegrationsView, nil, 200},
			{"PUT", integBase + "/gateway_mock/state", integrationsapi.FeatureIntegrationsManage, map[string]any{"reauthRequired": false}, 200},
			{"PUT", integBase + "/sync_http_json/version", integrationsapi.FeatureIntegrationsManage, map[string]any{"apiVersion": "v1"}, 200},
			{"PUT", integBase + "/gateway_mock/credentials", integrationsapi.FeatureIntegrationsCredentials, map[string]any{"credentials": map[string]any{}}, 200},
		}
		without := map[string]string{}
		only := map[string]string{}
		for _, f := range integAll {
			others := slices.DeleteFunc(slices.Clone(integAll), func(g string) bool { return g == f })
			without[f] = e.newKey(tf, others...)
			only[f] = e.newKey(tf, f)
		}
		for _, rt := range routes {
			name := rt.method + " " + rt.path
			r := e.do(rt.method, rt.path, without[rt.feature], rt.body)
			if r.Status != 403 {
				t.Errorf("%s without %s: status %d, want 403; body: %s", name, rt.feature, r.Status, r.Body)
			} else {
				sameJSON(t, name+" 403 body", r.JSON(), map[string]any{"error": "Forbidden", "required": []string{rt.feature},
					"requiredFeatures": []string{rt.feature}})
			}
			if r := e.do(rt.method, rt.path, only[rt.feature], rt.body); r.Status != rt.status {
				t.Errorf("%s with only %s: status %d, want %d; body: %s", name, rt.feature, r.Status, rt.status, r.Body)
			}
			integError(t, name+" without a credential", e.do(rt.method, rt.path, "", rt.body), 401, "Unauthorized")
			integError(t, name+" with a garbage key", e.do(rt.method, rt.path, "tk_"+randomHex(24), rt.body), 401, "Unauthorized")
		}
		// The credential routes' refusals are not cached either.
		r := e.do("GET", integBase+"/gateway_mock/credentials", without[integrationsapi.FeatureIntegrationsView], nil)
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the 403 of GET credentials: Cache-Control %q, want no-store", cc)
		}
	})
}
