package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The dashboard routes, black box over HTTP on both engines: the caller's
// layout (seeding on first read, round trip, items, validation naming the
// field, ETag and If-Match, concurrent writers), owners and tenants, the
// widget catalog and its data, role and user visibility through real
// roles, users and sessions, the events, and bad input. Every test makes
// its own tenants, so on PostgreSQL (one schema for the package) nothing
// another test writes shows up.

const dashBase = "/api/dashboards"

// The built-in widgets (widgets.go).
const (
	dashWH       = dashboardsapi.WidgetWebhookHealth
	dashRules    = dashboardsapi.WidgetRuleExecutions
	dashStorage  = dashboardsapi.WidgetStorageUse
	dashPayments = dashboardsapi.WidgetPayments
	dashSync     = dashboardsapi.WidgetDataSync
)

var (
	dashUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	dashETag = regexp.MustCompile(`^"[0-9]+"$`)
)

// dashWith is the dashboard features plus more.
func dashWith(more ...string) []string {
	return append([]string{dashboardsapi.FeatureWidgetsView, dashboardsapi.FeatureWidgetsManage}, more...)
}

// dashAs authenticates a request (an API key or a session).
type dashAs func(*http.Request)

func dashAsKey(secret string) dashAs {
	return func(r *http.Request) { r.Header.Set("X-Api-Key", secret) }
}

func dashAsSession(token string) dashAs {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// ifMatch adds an If-Match header.
func (c dashAs) ifMatch(tag string) dashAs {
	return func(r *http.Request) {
		c(r)
		r.Header.Set("If-Match", tag)
	}
}

// dashKey is an API key of a role of its own.
type dashKey struct {
	secret, id, roleID string
	as                 dashAs
}

// dashNewRole creates, as the super admin, a tenant role holding features.
func dashNewRole(e *testEnv, tf tenantFixture, features ...string) string {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "dash-" + randomHex(4), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	if features == nil {
		features = []string{}
	}
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": features}).expect(200)
	return roleID
}

// dashKeyOf creates an API key with the role.
func dashKeyOf(e *testEnv, tf tenantFixture, roleID string) dashKey {
	e.t.Helper()
	body := map[string]any{"name": "dash-key", "tenantId": tf.ID, "organizationId": tf.OrgID, "roles": []string{roleID}}
	k := e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()
	secret := k["secret"].(string)
	return dashKey{secret: secret, id: k["id"].(string), roleID: roleID, as: dashAsKey(secret)}
}

// dashNewKey creates a role holding features and a key with it.
func dashNewKey(e *testEnv, tf tenantFixture, features ...string) dashKey {
	e.t.Helper()
	return dashKeyOf(e, tf, dashNewRole(e, tf, features...))
}

// dashSuperKey is a key of the tenant with a super-admin role.
func dashSuperKey(e *testEnv, tf tenantFixture) dashKey {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "dash-sa-" + randomHex(4), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": []string{}, "isSuperAdmin": true}).expect(200)
	return dashKeyOf(e, tf, roleID)
}

// dashUser is a user of the tenant with one role, signed in.
type dashUser struct {
	id, token string
	as        dashAs
}

func dashNewUser(e *testEnv, tf tenantFixture, roleID string) dashUser {
	e.t.Helper()
	email := "dash." + randomHex(6) + "@dash.test"
	id := e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "dash-password",
		"organizationId": tf.OrgID, "roles": []string{roleID}}).expect(201).JSON()["id"].(string)
	token := e.postForm("/api/login", map[string]string{"email": email, "password": "dash-password"}).expect(200).JSON()["token"].(string)
	return dashUser{id: id, token: token, as: dashAsSession(token)}
}

// dashReq sends a dashboards request as c.
func dashReq(e *testEnv, c dashAs, method, path string, body any) *response {
	e.t.Helper()
	return e.send(method, dashBase+path, body, c)
}

// dashLayout reads the caller's layout: its widgets and ETag.
func dashLayout(t testing.TB, e *testEnv, c dashAs) ([]any, string) {
	t.Helper()
	r := dashReq(e, c, "GET", "/layout", nil).expect(200)
	body := r.JSON()
	expectKeys(t, "layout body", body, "widgets")
	ws, ok := body["widgets"].([]any)
	if !ok {
		t.Fatalf("widgets is not an array: %s", r.Body)
	}
	etag := r.Header.Get("ETag")
	if !dashETag.MatchString(etag) {
		t.Fatalf("ETag %q is not a quoted version", etag)
	}
	return ws, etag
}

// dashW is a widget as PUT sends it.
func dashW(id, def string, x, y, w, h int) map[string]any {
	return map[string]any{"id": id, "definitionId": def, "grid": map[string]any{"x": x, "y": y, "w": w, "h": h}, "config": map[string]any{}}
}

// dashOK checks a 200 {"ok": true} and returns the response.
func dashOK(t testing.TB, what string, r *response) *response {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%s: status %d, want 200; body: %s", what, r.Status, r.Body)
	}
	sameJSON(t, what+" body", r.JSON(), map[string]any{"ok": true})
	return r
}

// dashError checks the status and that the body is exactly {error: msg}.
func dashError(t testing.TB, what string, r *response, status int, msg string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d; body: %s", what, r.Status, status, r.Body)
		return
	}
	sameJSON(t, what+" body", r.JSON(), map[string]any{"error": msg})
}

// dashInvalid checks a 400 {error: "Validation failed", details} whose
// details name exactly fields.
func dashInvalid(t testing.TB, what string, r *response, fields ...string) {
	t.Helper()
	if r.Status != 400 {
		t.Errorf("%s: status %d, want 400 naming %v; body: %s", what, r.Status, fields, r.Body)
		return
	}
	body := r.JSON()
	expectKeys(t, what+": 400 body", body, "error", "details")
	if body["error"] != "Validation failed" {
		t.Errorf("%s: error %v, want Validation failed", what, body["error"])
	}
	details, _ := body["details"].(map[string]any)
	expectKeys(t, what+": 400 details", details, fields...)
}

// dashIDs returns the "id" (or key) of each object in list.
func dashIDs(t testing.TB, list any, key string) []string {
	t.Helper()
	items, ok := list.([]any)
	if !ok {
		t.Fatalf("%v is not an array", list)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}

// dashItems are the visibility routes' items for ids.
func dashItems(e *testEnv, ids ...string) []map[string]any {
	defs := map[string]dashboards.WidgetDefinition{}
	for _, d := range e.kit.Dashboards.Definitions() {
		defs[d.ID] = d
	}
	out := []map[string]any{}
	for _, id := range ids {
		d, ok := defs[id]
		if !ok {
			e.t.Fatalf("no definition %s", id)
		}
		out = append(out, map[string]any{"definitionId": id, "title": d.Title, "description": d.Description})
	}
	return out
}

// dashRegister registers a test widget with a unique id.
func dashRegister(t testing.TB, e *testEnv, def dashboards.WidgetDefinition) string {
	t.Helper()
	def.ID += "." + randomHex(4)
	if def.Title == "" {
		def.Title = "Test " + def.ID
	}
	if err := e.kit.Dashboards.Register(def); err != nil {
		t.Fatal(err)
	}
	return def.ID
}

func TestDashboardLayoutRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash round trip " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view")...)

		// The first read seeds exactly the default widgets the key sees.
		ws, etag := dashLayout(t, e, k.as)
		is.Equal(etag, `"1"`)
		is.Equal(len(ws), 1)
		seeded := ws[0].(map[string]any)
		expectKeys(t, "seeded widget", seeded, "id", "definitionId", "grid", "config")
		is.True(dashUUID.MatchString(seeded["id"].(string)))
		is.Equal(seeded["definitionId"], dashWH)
		sameJSON(t, "seeded grid", seeded["grid"], map[string]any{"x": 0, "y": 0, "w": 6, "h": 4})
		sameJSON(t, "seeded config", seeded["config"], map[string]any{})
		// A second read returns the same layout and ETag.
		again, etag2 := dashLayout(t, e, k.as)
		sameJSON(t, "second read", again, ws)
		is.Equal(etag2, etag)

		// PUT replaces it; the same definition may be placed twice; ids
		// are stored lower-case, a null or absent config is {}.
		a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
		wa := dashW(strings.ToUpper(a), dashWH, 0, 0, 6, 4)
		wa["config"] = map[string]any{"range": "24h", "nested": map[string]any{"n": 1.5, "list": []any{1, "two"}}}
		wb := dashW(b, dashWH, 6, 0, 3, 2)
		wb["config"] = nil
		wc := dashW(c, dashWH, 10000, 10000, 1000, 1000)
		delete(wc, "config")
		put := dashOK(t, "PUT layout", dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": []any{wa, wb, wc}}))
		is.Equal(put.Header.Get("ETag"), `"2"`)
		want := []any{dashW(a, dashWH, 0, 0, 6, 4), dashW(b, dashWH, 6, 0, 3, 2), dashW(c, dashWH, 10000, 10000, 1000, 1000)}
		want[0].(map[string]any)["config"] = wa["config"]
		ws, etag = dashLayout(t, e, k.as)
		sameJSON(t, "layout after PUT", ws, want)
		is.Equal(etag, `"2"`)

		// One item, by its id in any case.
		for _, id := range []string{a, strings.ToUpper(a)} {
			item := dashReq(e, k.as, "GET", "/layout/"+id, nil).expect(200).JSON()
			expectKeys(t, "item", item, "id", "definitionId", "grid", "config")
			expectKeys(t, "item grid", item["grid"].(map[string]any), "x", "y", "w", "h")
			sameJSON(t, "item", item, want[0])
		}

		// DELETE removes it; then it is 404, and so is an unknown id.
		del := dashOK(t, "DELETE item", dashReq(e, k.as, "DELETE", "/layout/"+a, nil))
		is.Equal(del.Header.Get("ETag"), `"3"`)
		dashError(t, "GET deleted item", dashReq(e, k.as, "GET", "/layout/"+a, nil), 404, "Layout item not found")
		dashError(t, "DELETE deleted item", dashReq(e, k.as, "DELETE", "/layout/"+a, nil), 404, "Layout item not found")
		unknown := uuid.NewString()
		dashError(t, "GET unknown item", dashReq(e, k.as, "GET", "/layout/"+unknown, nil), 404, "Layout item not found")
		dashError(t, "DELETE unknown item", dashReq(e, k.as, "DELETE", "/layout/"+unknown, nil), 404, "Layout item not found")
		dashError(t, "GET non-UUID item", dashReq(e, k.as, "GET", "/layout/not-a-uuid", nil), 404, "Layout item not found")
		ws, etag = dashLayout(t, e, k.as)
		sameJSON(t, "layout after DELETE", ws, want[1:])
		is.Equal(etag, `"3"`) // the 404s changed nothing

		// An empty layout is a layout: it stays empty (no re-seeding).
		dashOK(t, "PUT empty", dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": []any{}}))
		ws, etag = dashLayout(t, e, k.as)
		sameJSON(t, "empty layout", ws, []any{})
		is.Equal(etag, `"4"`)
	})
}

func TestDashboardLayoutValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash validation " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view")...)
		dashLayout(t, e, k.as) // seed

		id := uuid.NewString()
		good := func() map[string]any { return dashW(id, dashWH, 1, 2, 3, 4) }
		with := func(edit func(w map[string]any)) map[string]any {
			w := good()
			edit(w)
			return map[string]any{"widgets": []any{w}}
		}
		grid := func(field string, v any) map[string]any {
			return with(func(w map[string]any) { w["grid"].(map[string]any)[field] = v })
		}
		many := make([]any, 101)
		for i := range many {
			many[i] = dashW(uuid.NewString(), dashWH, 0, 0, 1, 1)
		}
		hundred := make([]any, 100)
		for i := range hundred {
			hundred[i] = dashW(uuid.NewString(), dashWH, 0, 0, 1, 1)
		}
		bigConfig := map[string]any{"blob": strings.Repeat("x", 16<<10)}
		rawGrid := func(x string) string {
			return `{"widgets":[{"id":"` + id + `","definitionId":"` + dashWH + `","grid":{"x":` + x + `,"y":0,"w":1,"h":1}}]}`
		}

		cases := []struct {
			name  string
			body  any
			field []string // the details' fields; nil: a 400 without details
		}{
			{"widgets an object", map[string]any{"widgets": map[string]any{}}, []string{"widgets"}},
			{"widgets a string", map[string]any{"widgets": "x"}, []string{"widgets"}},
			{"widgets missing", map[string]any{}, []string{"widgets"}},
			{"widgets null", `{"widgets":null}`, []string{"widgets"}},
			{"101 widgets", map[string]any{"widgets": many}, []string{"widgets"}},
			{"element not an object", map[string]any{"widgets": []any{good(), 1}}, []string{"widgets[1]"}},
			{"duplicate ids", map[string]any{"widgets": []any{good(), dashW(strings.ToUpper(id), dashWH, 0, 0, 1, 1)}}, []string{"widgets[1].id"}},
			{"non-UUID id", with(func(w map[string]any) { w["id"] = "not-a-uuid" }), []string{"widgets[0].id"}},
			{"braced UUID id", with(func(w map[string]any) { w["id"] = "{" + uuid.NewString() + "}" }), []string{"widgets[0].id"}},
			{"missing id", with(func(w map[string]any) { delete(w, "id") }), []string{"widgets[0].id"}},
			{"numeric id", with(func(w map[string]any) { w["id"] = 5 }), []string{"widgets[0].id"}},
			{"unknown definitionId", map[string]any{"widgets": []any{good(), dashW(uuid.NewString(), "no.such.widget", 0, 0, 1, 1)}}, []string{"widgets[1].definitionId"}},
			{"missing definitionId", with(func(w map[string]any) { delete(w, "definitionId") }), []string{"widgets[0].definitionId"}},
			{"definition the caller may not see", with(func(w map[string]any) { w["definitionId"] = dashPayments }), []string{"widgets[0].definitionId"}},
			{"grid missing", with(func(w map[string]any) { delete(w, "grid") }), []string{"widgets[0].grid"}},
			{"grid an array", with(func(w map[string]any) { w["grid"] = []any{1, 2, 3, 4} }), []string{"widgets[0].grid"}},
			{"grid.x missing", with(func(w map[string]any) { delete(w["grid"].(map[string]any), "x") }), []string{"widgets[0].grid.x"}},
			{"grid.h null", grid("h", nil), []string{"widgets[0].grid.h"}},
			{"x -1", grid("x", -1), []string{"widgets[0].grid.x"}},
			{"y -1", grid("y", -1), []string{"widgets[0].grid.y"}},
			{"w 0", grid("w", 0), []string{"widgets[0].grid.w"}},
			{"h 0", grid("h", 0), []string{"widgets[0].grid.h"}},
			{"x 10001", grid("x", 10001), []string{"widgets[0].grid.x"}},
			{"w 1001", grid("w", 1001), []string{"widgets[0].grid.w"}},
			{"x 1.5", grid("x", 1.5), []string{"widgets[0].grid.x"}},
			{`x "1"`, grid("x", "1"), []string{"widgets[0].grid.x"}},
			{`w "2.0"`, grid("w", "2.0"), []string{"widgets[0].grid.w"}},
			{"x true", grid("x", true), []string{"widgets[0].grid.x"}},
			{"x 1e20", rawGrid("1e20"), []string{"widgets[0].grid.x"}},
			{"config an array", with(func(w map[string]any) { w["config"] = []any{} }), []string{"widgets[0].config"}},
			{"config a string", with(func(w map[string]any) { w["config"] = "{}" }), []string{"widgets[0].config"}},
			{"config a number", with(func(w map[string]any) { w["config"] = 1 }), []string{"widgets[0].config"}},
			{"config over 16 KiB", with(func(w map[string]any) { w["config"] = bigConfig }), []string{"widgets[0].config"}},
			{"two bad fields", map[string]any{"widgets": []any{map[string]any{"id": "x", "definitionId": dashWH, "grid": map[string]any{"x": 0, "y": 0, "w": 0, "h": 1}}}},
				[]string{"widgets[0].id", "widgets[0].grid.w"}},
			{"missing body", nil, nil},
			{"malformed JSON", `{"widgets": [`, nil},
			{"body an array", `[]`, nil},
			{"trailing data", `{"widgets": []} {}`, nil},
		}
		for _, c := range cases {
			before, etag := dashLayout(t, e, k.as)
			r := dashReq(e, k.as, "PUT", "/layout", c.body)
			if c.field == nil {
				if r.Status != 400 {
					t.Errorf("%s: status %d, want 400; body: %s", c.name, r.Status, r.Body)
				} else {
					expectKeys(t, c.name+": 400 body", r.JSON(), "error")
				}
			} else {
				dashInvalid(t, c.name, r, c.field...)
			}
			after, etag2 := dashLayout(t, e, k.as)
			sameJSON(t, c.name+": layout after the refused PUT", after, before)
			if etag2 != etag {
				t.Errorf("%s: ETag %s after the refused PUT, was %s", c.name, etag2, etag)
			}
		}

		// The bounds themselves are accepted: 100 widgets, a config of
		// 16 KiB, 2.0 as 2.
		dashOK(t, "100 widgets", dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": hundred}))
		ws, _ := dashLayout(t, e, k.as)
		if len(ws) != 100 {
			t.Errorf("%d widgets stored, want 100", len(ws))
		}
		exact := map[string]any{"blob": strings.Repeat("x", 16<<10-len(`{"blob":""}`))}
		dashOK(t, "16 KiB config", dashReq(e, k.as, "PUT", "/layout", with(func(w map[string]any) { w["config"] = exact })))
		dashOK(t, "x 2.0", dashReq(e, k.as, "PUT", "/layout", rawGrid("2.0")))
		ws, _ = dashLayout(t, e, k.as)
		sameJSON(t, "2.0 stored as 2", ws, []any{dashW(id, dashWH, 2, 0, 1, 1)})
	})
}

func TestDashboardIfMatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash if-match " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view")...)
		_, etag := dashLayout(t, e, k.as)
		is.Equal(etag, `"1"`)
		body := func(ids ...string) map[string]any {
			ws := []any{}
			for i, id := range ids {
				ws = append(ws, dashW(id, dashWH, i, 0, 1, 1))
			}
			return map[string]any{"widgets": ws}
		}
		a, b := uuid.NewString(), uuid.NewString()

		r := dashOK(t, "PUT with the current ETag", dashReq(e, k.as.ifMatch(`"1"`), "PUT", "/layout", body(a, b)))
		is.Equal(r.Header.Get("ETag"), `"2"`)

		stale := func(what string, tag string) {
			t.Helper()
			before, etag := dashLayout(t, e, k.as)
			dashError(t, what, dashReq(e, k.as.ifMatch(tag), "PUT", "/layout", body(uuid.NewString())), 412,
				"The layout changed since it was read (If-Match)")
			after, etag2 := dashLayout(t, e, k.as)
			sameJSON(t, what+": layout after 412", after, before)
			is.Equal(etag2, etag)
		}
		stale("PUT with a stale ETag", `"1"`)
		stale("PUT with a list of stale ETags", `"1", "0"`)
		stale("PUT with a weak stale ETag", `W/"1"`)
		stale("PUT with an ETag of no version", `"999"`)
		stale("PUT with an unquoted version", `2`)

		r = dashOK(t, "PUT with *", dashReq(e, k.as.ifMatch("*"), "PUT", "/layout", body(a, b)))
		is.Equal(r.Header.Get("ETag"), `"3"`)
		r = dashOK(t, "PUT with a weak current ETag", dashReq(e, k.as.ifMatch(`W/"3"`), "PUT", "/layout", body(a, b)))
		is.Equal(r.Header.Get("ETag"), `"4"`)
		r = dashOK(t, "PUT with a list naming the current ETag", dashReq(e, k.as.ifMatch(`"1", "4"`), "PUT", "/layout", body(a, b)))
		is.Equal(r.Header.Get("ETag"), `"5"`)

		// DELETE of an item: a stale If-Match is 412 and the item stays.
		dashError(t, "DELETE with a stale ETag", dashReq(e, k.as.ifMatch(`"4"`), "DELETE", "/layout/"+a, nil), 412,
			"The layout changed since it was read (If-Match)")
		dashReq(e, k.as, "GET", "/layout/"+a, nil).expect(200)
		_, etag = dashLayout(t, e, k.as)
		is.Equal(etag, `"5"`)
		r = dashOK(t, "DELETE with the current ETag", dashReq(e, k.as.ifMatch(`"5"`), "DELETE", "/layout/"+a, nil))
		is.Equal(r.Header.Get("ETag"), `"6"`)
		dashReq(e, k.as, "GET", "/layout/"+a, nil).expect(404)
		// An unknown item with a current If-Match is still 404.
		dashReq(e, k.as.ifMatch(`"6"`), "DELETE", "/layout/"+uuid.NewString(), nil).expect(404)

		// Without If-Match the last write wins, whatever the writer read.
		x, y := uuid.NewString(), uuid.NewString()
		dashOK(t, "PUT x without If-Match", dashReq(e, k.as, "PUT", "/layout", body(x)))
		dashOK(t, "PUT y without If-Match", dashReq(e, k.as, "PUT", "/layout", body(y)))
		ws, etag := dashLayout(t, e, k.as)
		sameJSON(t, "last write wins", ws, body(y)["widgets"])
		is.Equal(etag, `"8"`)
		r = dashOK(t, "DELETE without If-Match", dashReq(e, k.as, "DELETE", "/layout/"+y, nil))
		is.Equal(r.Header.Get("ETag"), `"9"`)
	})
}

// dashServe serves one request without a testing.TB, for goroutines.
func dashServe(ctx context.Context, e *testEnv, method, path, key, ifMatch string, body []byte) (int, http.Header, []byte) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequestWithContext(ctx, method, dashBase+path, rd)
	req.Header.Set("X-Api-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

func TestDashboardConcurrentWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		def := dashRegister(t, e, dashboards.WidgetDefinition{ID: "test.dash.concurrent"}) // no features: every caller sees it
		tf := e.newTenant("Dash concurrency " + randomHex(3))
		k := dashNewKey(e, tf, dashWith()...)
		ws, etag := dashLayout(t, e, k.as)
		is.Equal(len(ws), 0) // not DefaultEnabled: nothing seeded
		is.Equal(etag, `"1"`)
		ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
		defer cancel()
		const n = 100

		// 100 writers with the same ETag: exactly one commits.
		bodies := make([][]byte, n)
		for i := range bodies {
			bodies[i], _ = json.Marshal(map[string]any{"widgets": []any{dashW(uuid.NewString(), def, i, i, 1, 1)}})
		}
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { codes[i], _, _ = dashServe(ctx, e, "PUT", "/layout", k.secret, `"1"`, bodies[i]) })
		}
		wg.Wait()
		count := map[int]int{}
		winner := -1
		for i, c := range codes {
			count[c]++
			if c == 200 {
				winner = i
			}
		}
		is.Equal(count, map[int]int{200: 1, 412: n - 1})
		if winner >= 0 {
			ws, etag = dashLayout(t, e, k.as)
			var want map[string]any
			_ = json.Unmarshal(bodies[winner], &want)
			sameJSON(t, "layout after the race", ws, want["widgets"])
			is.Equal(etag, `"2"`)
		}
		is.Equal(len(e.events(tf.ID, dashboards.EventLayoutUpdated)), 1) // the 412s wrote nothing

		// No lost update: 100 writers each add their widget with
		// read-modify-write under If-Match, retrying on 412.
		dashOK(t, "reset", dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": []any{}}))
		ids := make([]string, n)
		for i := range ids {
			ids[i] = uuid.NewString()
		}
		errs := make(chan error, n)
		var attempts sync.Map
		for i := range n {
			wg.Go(func() {
				mine := dashW(ids[i], def, i%10, i/10, 1, 1)
				for attempt := 1; attempt <= 500; attempt++ {
					code, hdr, body := dashServe(ctx, e, "GET", "/layout", k.secret, "", nil)
					if code != 200 {
						errs <- fmt.Errorf("writer %d: GET %d %s", i, code, body)
						return
					}
					var l struct {
						Widgets []json.RawMessage `json:"widgets"`
					}
					if err := json.Unmarshal(body, &l); err != nil {
						errs <- fmt.Errorf("writer %d: %v", i, err)
						return
					}
					w, _ := json.Marshal(mine)
					put, _ := json.Marshal(map[string]any{"widgets": append(l.Widgets, w)})
					code, _, body = dashServe(ctx, e, "PUT", "/layout", k.secret, hdr.Get("ETag"), put)
					switch code {
					case 200:
						attempts.Store(i, attempt)
						return
					case 412:
						time.Sleep(time.Duration(rand.IntN(2000*min(attempt, 10))) * time.Microsecond)
					default:
						errs <- fmt.Errorf("writer %d: PUT %d %s", i, code, body)
						return
					}
				}
				errs <- fmt.Errorf("writer %d: no 200 in 500 attempts", i)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		most := 0
		attempts.Range(func(_, v any) bool { most = max(most, v.(int)); return true })
		t.Logf("no lost update: the unluckiest writer needed %d attempts", most)
		ws, etag = dashLayout(t, e, k.as)
		got := dashIDs(t, ws, "id")
		slices.Sort(got)
		want := slices.Clone(ids)
		slices.Sort(want)
		is.Equal(got, want) // each writer's widget exactly once
		is.Equal(etag, fmt.Sprintf(`"%d"`, 3+n))
		is.Equal(len(e.events(tf.ID, dashboards.EventLayoutUpdated)), 2+n)

		// Without If-Match every concurrent writer succeeds (the last
		// write wins) and each write counts as one change.
		const m = 100
		for i := range m {
			wg.Go(func() { codes[i], _, _ = dashServe(ctx, e, "PUT", "/layout", k.secret, "", bodies[i]) })
		}
		wg.Wait()
		count = map[int]int{}
		for _, c := range codes[:m] {
			count[c]++
		}
		is.Equal(count, map[int]int{200: m})
		ws, etag = dashLayout(t, e, k.as)
		is.Equal(len(ws), 1)
		is.Equal(etag, fmt.Sprintf(`"%d"`, 3+n+m))
	})
}

func TestDashboardOwnersAndTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tfA := e.newTenant("Dash owners A " + randomHex(3))
		tfB := e.newTenant("Dash owners B " + randomHex(3))
		role := dashNewRole(e, tfA, dashWith("webhooks.view")...)
		k1, k2 := dashKeyOf(e, tfA, role), dashKeyOf(e, tfA, role) // same role, two owners
		user := dashNewUser(e, tfA, role)
		kB := dashNewKey(e, tfB, dashWith("webhooks.view")...)

		// Each owner gets its own seeded layout.
		l1, _ := dashLayout(t, e, k1.as)
		l2, e2 := dashLayout(t, e, k2.as)
		lu, eu := dashLayout(t, e, user.as)
		lb, eb := dashLayout(t, e, kB.as)
		id1 := dashIDs(t, l1, "id")
		for what, l := range map[string][]any{"key 2": l2, "user": lu, "tenant B": lb} {
			is.Equal(dashIDs(t, l, "definitionId"), []string{dashWH}) // seeded
			if ids := dashIDs(t, l, "id"); slices.Equal(ids, id1) {
				t.Errorf("%s shares key 1's layout item ids %v", what, ids)
			}
		}

		// A PUT by key 1 changes neither key 2's nor the user's layout.
		mine := uuid.NewString()
		dashOK(t, "key 1 PUT", dashReq(e, k1.as, "PUT", "/layout", map[string]any{"widgets": []any{dashW(mine, dashWH, 1, 1, 2, 2)}}))
		after2, e2b := dashLayout(t, e, k2.as)
		sameJSON(t, "key 2's layout", after2, l2)
		is.Equal(e2b, e2)
		afterU, eub := dashLayout(t, e, user.as)
		sameJSON(t, "user's layout", afterU, lu)
		is.Equal(eub, eu)
		dashReq(e, k2.as, "GET", "/layout/"+mine, nil).expect(404)
		dashReq(e, user.as, "GET", "/layout/"+mine, nil).expect(404)
		dashReq(e, k2.as, "DELETE", "/layout/"+mine, nil).expect(404)

		// The user's PUT changes only the user's layout.
		theirs := uuid.NewString()
		dashOK(t, "user PUT", dashReq(e, user.as, "PUT", "/layout", map[string]any{"widgets": []any{dashW(theirs, dashWH, 0, 0, 1, 1)}}))
		ws, _ := dashLayout(t, e, user.as)
		is.Equal(dashIDs(t, ws, "id"), []string{theirs})
		ws, _ = dashLayout(t, e, k1.as)
		is.Equal(dashIDs(t, ws, "id"), []string{mine})
		dashReq(e, k1.as, "GET", "/layout/"+theirs, nil).expect(404)

		// Tenant B sees nothing of tenant A's, and A's layout is intact.
		for _, id := range []string{mine, theirs, id1[0]} {
			dashError(t, "tenant B GET A's item", dashReq(e, kB.as, "GET", "/layout/"+id, nil), 404, "Layout item not found")
			dashError(t, "tenant B DELETE A's item", dashReq(e, kB.as, "DELETE", "/layout/"+id, nil), 404, "Layout item not found")
		}
		lb2, eb2 := dashLayout(t, e, kB.as)
		sameJSON(t, "tenant B's layout", lb2, lb)
		is.Equal(eb2, eb)
		ws, _ = dashLayout(t, e, k1.as)
		is.Equal(dashIDs(t, ws, "id"), []string{mine})
	})
}

func TestDashboardFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash features " + randomHex(3))
		none := dashNewKey(e, tf, "webhooks.view")
		viewer := dashNewKey(e, tf, dashboardsapi.FeatureWidgetsView, "webhooks.view")
		item := uuid.NewString()
		put := map[string]any{"widgets": []any{}}
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/layout", nil}, {"GET", "/layout/" + item, nil}, {"GET", "/widgets", nil},
			{"GET", "/widgets/" + dashWH + "/data", nil}, {"GET", "/roles/widgets?roleId=x", nil}, {"GET", "/users/widgets?userId=x", nil},
		} {
			r := dashReq(e, none.as, c.method, c.path, c.body)
			if r.Status != 403 {
				t.Errorf("%s %s without %s: status %d, want 403", c.method, c.path, dashboardsapi.FeatureWidgetsView, r.Status)
			}
		}
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"PUT", "/layout", put}, {"DELETE", "/layout/" + item, nil},
			{"PUT", "/roles/widgets", map[string]any{"roleId": viewer.roleID, "widgetIds": []string{}}},
			{"PUT", "/users/widgets", map[string]any{"userId": "x", "mode": "inherit"}},
		} {
			for _, k := range []dashKey{none, viewer} {
				r := dashReq(e, k.as, c.method, c.path, c.body)
				if r.Status != 403 {
					t.Errorf("%s %s without %s: status %d, want 403", c.method, c.path, dashboardsapi.FeatureWidgetsManage, r.Status)
				}
			}
		}
		// A reader reads (and seeding on the first read needs no manage).
		ws, _ := dashLayout(t, e, viewer.as)
		if got := dashIDs(t, ws, "definitionId"); !slices.Equal(got, []string{dashWH}) {
			t.Errorf("viewer's seeded layout %v", got)
		}
		dashReq(e, none.as, "GET", "/layout", nil).expect(403)
		dashReq(e, viewer.as, "GET", "/layout", nil).expect(200)
		// No credential: 401.
		e.do("GET", dashBase+"/layout", "", nil).expect(401)
		e.do("GET", dashBase+"/widgets", "", nil).expect(401)
	})
}

func TestDashboardWidgetCatalog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash catalog " + randomHex(3))
		titles := map[string][2]string{}
		for _, d := range e.kit.Dashboards.Definitions() {
			titles[d.ID] = [2]string{d.Title, d.Description}
		}
		builtin := func(id, feature string, x, y, w, h int) map[string]any {
			return map[string]any{"id": id, "title": titles[id][0], "description": titles[id][1], "features": []string{feature},
				"defaultEnabled": true, "defaultGrid": map[string]any{"x": x, "y": y, "w": w, "h": h}, "defaultConfig": map[string]any{}, "hasData": true}
		}
		wh := builtin(dashWH, "webhooks.view", 0, 0, 6, 4)
		rules := builtin(dashRules, "business_rules.rules.view", 6, 0, 6, 4)
		storage := builtin(dashStorage, "attachments.view", 0, 4, 4, 3)
		pay := builtin(dashPayments, "payment_gateways.view", 4, 4, 8, 3)
		sync := builtin(dashSync, "data_sync.view", 0, 7, 12, 3)
		for _, d := range []map[string]any{wh, rules, storage, pay, sync} {
			is.True(d["title"] != "") // registered
		}

		sa := dashSuperKey(e, tf)
		r := dashReq(e, sa.as, "GET", "/widgets", nil).expect(200)
		body := r.JSON()
		expectKeys(t, "catalog body", body, "items")
		for _, it := range body["items"].([]any) {
			expectKeys(t, "catalog item", it.(map[string]any), "id", "title", "description", "features", "defaultEnabled",
				"defaultGrid", "defaultConfig", "hasData")
		}
		sameJSON(t, "super admin's catalog", body, map[string]any{"items": []any{wh, rules, storage, pay, sync}})

		// Only what the caller's features allow.
		k := dashNewKey(e, tf, dashWith("webhooks.view", "payment_gateways.*")...)
		sameJSON(t, "webhooks+payments catalog", dashReq(e, k.as, "GET", "/widgets", nil).expect(200).JSON(),
			map[string]any{"items": []any{wh, pay}})
		bare := dashNewKey(e, tf, dashWith()...)
		sameJSON(t, "bare catalog", dashReq(e, bare.as, "GET", "/widgets", nil).expect(200).JSON(), map[string]any{"items": []any{}})
		all := dashNewKey(e, tf, "*")
		sameJSON(t, "wildcard catalog", dashReq(e, all.as, "GET", "/widgets", nil).expect(200).JSON(),
			map[string]any{"items": []any{wh, rules, storage, pay, sync}})

		// A registered widget shows with its defaults filled in.
		plain := dashRegister(t, e, dashboards.WidgetDefinition{ID: "test.dash.plain", Title: "Plain", Description: "No data"})
		multi := dashRegister(t, e, dashboards.WidgetDefinition{ID: "test.dash.multi", Title: "Multi", Features: []string{"webhooks.view", "attachments.view"},
			DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 1, Y: 2, W: 3, H: 4}, DefaultConfig: json.RawMessage(`{"a": [1]}`),
			Data: func(context.Context) (any, error) { return map[string]any{}, nil }})
		plainItem := map[string]any{"id": plain, "title": "Plain", "description": "No data", "features": []string{}, "defaultEnabled": false,
			"defaultGrid": map[string]any{"x": 0, "y": 0, "w": 4, "h": 3}, "defaultConfig": map[string]any{}, "hasData": false}
		multiItem := map[string]any{"id": multi, "title": "Multi", "description": "", "features": []string{"webhooks.view", "attachments.view"},
			"defaultEnabled": true, "defaultGrid": map[string]any{"x": 1, "y": 2, "w": 3, "h": 4}, "defaultConfig": map[string]any{"a": []any{1}}, "hasData": true}
		sameJSON(t, "bare catalog with a featureless widget", dashReq(e, bare.as, "GET", "/widgets", nil).expect(200).JSON(),
			map[string]any{"items": []any{plainItem}})
		// Both features are needed for multi.
		sameJSON(t, "catalog needing both features", dashReq(e, k.as, "GET", "/widgets", nil).expect(200).JSON(),
			map[string]any{"items": []any{wh, pay, plainItem}})
		both := dashNewKey(e, tf, dashWith("webhooks.view", "attachments.view")...)
		sameJSON(t, "catalog with both features", dashReq(e, both.as, "GET", "/widgets", nil).expect(200).JSON(),
			map[string]any{"items": []any{wh, storage, plainItem, multiItem}})
		// Its seeded widget has its default grid and config.
		ws, _ := dashLayout(t, e, both.as)
		is.Equal(dashIDs(t, ws, "definitionId"), []string{dashWH, dashStorage, multi})
		sameJSON(t, "seeded multi grid", ws[2].(map[string]any)["grid"], multiItem["defaultGrid"])
		sameJSON(t, "seeded multi config", ws[2].(map[string]any)["config"], multiItem["defaultConfig"])
	})
}

func TestDashboardWidgetData(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tfA := e.newTenant("Dash data A " + randomHex(3))
		tfB := e.newTenant("Dash data B " + randomHex(3))
		echo := dashRegister(t, e, dashboards.WidgetDefinition{ID: "test.dash.echo", Features: []string{"webhooks.view"},
			Data: func(ctx context.Context) (any, error) {
				sc, err := store.ScopeFrom(ctx)
				return map[string]any{"tenantId": sc.TenantID, "organizationId": sc.OrganizationID}, err
			}})
		nodata := dashRegister(t, e, dashboards.WidgetDefinition{ID: "test.dash.nodata"})
		kA := dashNewKey(e, tfA, dashWith("webhooks.view")...)
		kB := dashNewKey(e, tfB, dashWith("webhooks.view")...)
		bare := dashNewKey(e, tfA, dashWith()...)

		sameJSON(t, "tenant A's data", dashReq(e, kA.as, "GET", "/widgets/"+echo+"/data", nil).expect(200).JSON(),
			map[string]any{"tenantId": tfA.ID, "organizationId": tfA.OrgID})
		sameJSON(t, "tenant B's data", dashReq(e, kB.as, "GET", "/widgets/"+echo+"/data", nil).expect(200).JSON(),
			map[string]any{"tenantId": tfB.ID, "organizationId": tfB.OrgID})
		dashError(t, "unknown widget", dashReq(e, kA.as, "GET", "/widgets/no.such.widget/data", nil), 404, "Widget not found")
		dashError(t, "widget without data", dashReq(e, kA.as, "GET", "/widgets/"+nodata+"/data", nil), 404, "This widget has no data")
		dashError(t, "widget the caller may not see", dashReq(e, bare.as, "GET", "/widgets/"+echo+"/data", nil), 403,
			"This widget is not available to the caller")
		dashError(t, "built-in the caller may not see", dashReq(e, kA.as, "GET", "/widgets/"+dashPayments+"/data", nil), 403,
			"This widget is not available to the caller")
		// A widget hidden from the caller's role is 403 too.
		dashReq(e, kA.as, "PUT", "/roles/widgets", map[string]any{"roleId": kA.roleID, "widgetIds": []string{dashWH}}).expect(200)
		dashReq(e, kA.as, "GET", "/widgets/"+echo+"/data", nil).expect(403)
		dashReq(e, kB.as, "GET", "/widgets/"+echo+"/data", nil).expect(200) // tenant B's roles are its own

		// The built-ins answer for a fresh tenant.
		sa := dashSuperKey(e, tfB)
		for _, id := range []string{dashWH, dashRules, dashStorage, dashPayments} {
			r := dashReq(e, sa.as, "GET", "/widgets/"+id+"/data", nil)
			if r.Status != 200 {
				t.Errorf("%s data: status %d, want 200; body %s", id, r.Status, r.Body)
				continue
			}
			r.JSON()
		}
	})
}

func TestDashboardRoleVisibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash roles " + randomHex(3))
		other := e.newTenant("Dash roles other " + randomHex(3))
		admin := dashNewKey(e, tf, dashWith()...)
		role := dashNewRole(e, tf, "webhooks.view", "payment_gateways.view")
		otherRole := dashNewRole(e, other, "webhooks.view")
		get := func(roleID string) *response {
			return dashReq(e, admin.as, "GET", "/roles/widgets?roleId="+roleID, nil)
		}
		put := func(body any) *response { return dashReq(e, admin.as, "PUT", "/roles/widgets", body) }

		// Without a record: every widget whose features the role holds.
		body := get(role).expect(200).JSON()
		expectKeys(t, "role preview", body, "items")
		for _, it := range body["items"].([]any) {
			expectKeys(t, "role preview item", it.(map[string]any), "definitionId", "title", "description")
		}
		sameJSON(t, "role preview", body, map[string]any{"items": dashItems(e, dashWH, dashPayments)})
		// A role without features previews nothing; a super-admin role
		// every widget.
		sameJSON(t, "featureless role", get(admin.roleID).expect(200).JSON(), map[string]any{"items": []any{}})
		sa := dashSuperKey(e, tf)
		sameJSON(t, "super-admin role", get(sa.roleID).expect(200).JSON(),
			map[string]any{"items": dashItems(e, dashWH, dashRules, dashStorage, dashPayments, dashSync)})
		put(map[string]any{"roleId": sa.roleID, "widgetIds": []string{dashStorage}}).expect(200)
		sameJSON(t, "restricted super-admin role", get(sa.roleID).expect(200).JSON(), map[string]any{"items": dashItems(e, dashStorage)})
		is.Equal(dashIDs(t, dashReq(e, sa.as, "GET", "/widgets", nil).expect(200).JSON()["items"], "id"), []string{dashStorage})

		// PUT stores the record, duplicates removed, order kept.
		r := put(map[string]any{"roleId": role, "widgetIds": []string{dashPayments, dashRules, dashPayments}}).expect(200)
		sameJSON(t, "PUT role widgets", r.JSON(), map[string]any{"ok": true, "widgetIds": []string{dashPayments, dashRules}})
		// The preview: the record's widgets the role holds the features of
		// (not rules), in registration order.
		sameJSON(t, "restricted preview", get(role).expect(200).JSON(), map[string]any{"items": dashItems(e, dashPayments)})

		// Refusals.
		dashInvalid(t, "unknown widget id", put(map[string]any{"roleId": role, "widgetIds": []string{dashWH, "no.such.widget"}}), "widgetIds[1]")
		dashInvalid(t, "empty widget id", put(map[string]any{"roleId": role, "widgetIds": []string{""}}), "widgetIds[0]")
		dashInvalid(t, "missing roleId (PUT)", put(map[string]any{"widgetIds": []string{dashWH}}), "roleId")
		dashInvalid(t, "missing roleId (GET)", get(""), "roleId")
		dashInvalid(t, "no roleId parameter", dashReq(e, admin.as, "GET", "/roles/widgets", nil), "roleId")
		dashError(t, "unknown role (GET)", get(uuid.NewString()), 404, "Role not found")
		dashError(t, "unknown role (PUT)", put(map[string]any{"roleId": uuid.NewString(), "widgetIds": []string{dashWH}}), 404, "Role not found")
		dashError(t, "other tenant's role (GET)", get(otherRole), 404, "Role not found")
		dashError(t, "other tenant's role (PUT)", put(map[string]any{"roleId": otherRole, "widgetIds": []string{dashWH}}), 404, "Role not found")
		r = put(map[string]any{"roleId": role, "widgetIds": "x"})
		is.Equal(r.Status, 400)
		// None of the refusals changed the record.
		sameJSON(t, "preview after refusals", get(role).expect(200).JSON(), map[string]any{"items": dashItems(e, dashPayments)})
		// The other tenant's role has no record either.
		otherAdmin := dashNewKey(e, other, dashWith()...)
		sameJSON(t, "other tenant's preview", dashReq(e, otherAdmin.as, "GET", "/roles/widgets?roleId="+otherRole, nil).expect(200).JSON(),
			map[string]any{"items": dashItems(e, dashWH)})

		// An empty list is a record of no widget: the role makes none
		// available. An absent or null list is refused, naming it.
		sameJSON(t, "PUT empty", put(map[string]any{"roleId": role, "widgetIds": []string{}}).expect(200).JSON(),
			map[string]any{"ok": true, "widgetIds": []string{}})
		sameJSON(t, "preview after emptying", get(role).expect(200).JSON(), map[string]any{"items": []any{}})
		dashInvalid(t, "PUT absent list", put(map[string]any{"roleId": role}), "widgetIds")
		dashInvalid(t, "PUT null list", put(map[string]any{"roleId": role, "widgetIds": nil}), "widgetIds")
		sameJSON(t, "preview after refused PUTs", get(role).expect(200).JSON(), map[string]any{"items": []any{}})
		// DELETE removes the record: the role restricts nothing again.
		del := func(roleID string) *response {
			return dashReq(e, admin.as, "DELETE", "/roles/widgets?roleId="+roleID, nil)
		}
		sameJSON(t, "DELETE", del(role).expect(200).JSON(), map[string]any{"ok": true})
		sameJSON(t, "preview after clearing", get(role).expect(200).JSON(), map[string]any{"items": dashItems(e, dashWH, dashPayments)})
		del(role).expect(200) // nothing to remove: still fine
		dashInvalid(t, "DELETE without roleId", del(""), "roleId")
		dashError(t, "DELETE of another tenant's role", del(otherRole), 404, "Role not found")
	})
}

func TestDashboardUserVisibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash users " + randomHex(3))
		other := e.newTenant("Dash users other " + randomHex(3))
		admin := dashNewKey(e, tf, dashWith()...)
		role := dashNewRole(e, tf, dashWith("webhooks.view", "attachments.view", "payment_gateways.view")...)
		u := dashNewUser(e, tf, role)
		otherUser := dashNewUser(e, other, dashNewRole(e, other, dashWith("webhooks.view")...))
		get := func(userID string) *response {
			return dashReq(e, admin.as, "GET", "/users/widgets?userId="+userID, nil)
		}
		put := func(body any) *response { return dashReq(e, admin.as, "PUT", "/users/widgets", body) }
		catalog := func(c dashAs) []string {
			return dashIDs(t, dashReq(e, c, "GET", "/widgets", nil).expect(200).JSON()["items"], "id")
		}

		// Nothing set: inherit, and what the user's roles allow.
		body := get(u.id).expect(200).JSON()
		expectKeys(t, "user widgets", body, "mode", "items")
		sameJSON(t, "inherit", body, map[string]any{"mode": "inherit", "items": dashItems(e, dashWH, dashStorage, dashPayments)})
		is.Equal(catalog(u.as), []string{dashWH, dashStorage, dashPayments})

		// Override: exactly these, filtered by the user's features.
		r := put(map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{dashPayments, dashWH, dashRules, dashWH}}).expect(200)
		sameJSON(t, "PUT override", r.JSON(), map[string]any{"ok": true, "mode": "override", "widgetIds": []string{dashPayments, dashWH, dashRules}})
		sameJSON(t, "override", get(u.id).expect(200).JSON(), map[string]any{"mode": "override", "items": dashItems(e, dashWH, dashPayments)})
		// The user's session sees its override.
		is.Equal(catalog(u.as), []string{dashWH, dashPayments})
		ws, _ := dashLayout(t, e, u.as)
		is.Equal(dashIDs(t, ws, "definitionId"), []string{dashWH, dashPayments}) // seeded with what it sees
		dashReq(e, u.as, "GET", "/widgets/"+dashStorage+"/data", nil).expect(403)
		dashInvalid(t, "user PUT of a widget its override hides",
			dashReq(e, u.as, "PUT", "/layout", map[string]any{"widgets": []any{dashW(uuid.NewString(), dashStorage, 0, 0, 1, 1)}}),
			"widgets[0].definitionId")
		// A key of the same role has no override.
		is.Equal(catalog(dashKeyOf(e, tf, role).as), []string{dashWH, dashStorage, dashPayments})

		// Override with nothing hides everything.
		sameJSON(t, "PUT empty override", put(map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{}}).expect(200).JSON(),
			map[string]any{"ok": true, "mode": "override", "widgetIds": []string{}})
		sameJSON(t, "empty override", get(u.id).expect(200).JSON(), map[string]any{"mode": "override", "items": []any{}})
		is.Equal(catalog(u.as), []string{})
		ws, _ = dashLayout(t, e, u.as)
		is.Equal(len(ws), 0) // hidden, not deleted

		// Back to inherit (widgetIds ignored).
		sameJSON(t, "PUT inherit", put(map[string]any{"userId": u.id, "mode": "inherit", "widgetIds": []string{dashWH}}).expect(200).JSON(),
			map[string]any{"ok": true, "mode": "inherit", "widgetIds": []string{}})
		sameJSON(t, "inherit again", get(u.id).expect(200).JSON(), map[string]any{"mode": "inherit", "items": dashItems(e, dashWH, dashStorage, dashPayments)})
		is.Equal(catalog(u.as), []string{dashWH, dashStorage, dashPayments})
		ws, _ = dashLayout(t, e, u.as)
		is.Equal(dashIDs(t, ws, "definitionId"), []string{dashWH, dashPayments}) // the hidden widgets are back

		// An override replaces the roles' records rather than narrowing them.
		dashReq(e, admin.as, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{dashWH}}).expect(200)
		sameJSON(t, "inherit from a restricted role", get(u.id).expect(200).JSON(), map[string]any{"mode": "inherit", "items": dashItems(e, dashWH)})
		put(map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{dashStorage}}).expect(200)
		sameJSON(t, "override over a restricted role", get(u.id).expect(200).JSON(), map[string]any{"mode": "override", "items": dashItems(e, dashStorage)})
		is.Equal(catalog(u.as), []string{dashStorage})

		// Refusals.
		before := get(u.id).expect(200).JSON()
		dashInvalid(t, "bad mode", put(map[string]any{"userId": u.id, "mode": "replace", "widgetIds": []string{}}), "mode")
		dashInvalid(t, "missing mode", put(map[string]any{"userId": u.id, "widgetIds": []string{}}), "mode")
		dashInvalid(t, "unknown widget", put(map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{"nope"}}), "widgetIds[0]")
		dashInvalid(t, "missing userId (PUT)", put(map[string]any{"mode": "inherit"}), "userId")
		dashInvalid(t, "missing userId (GET)", get(""), "userId")
		dashError(t, "unknown user (GET)", get(uuid.NewString()), 404, "User not found")
		dashError(t, "unknown user (PUT)", put(map[string]any{"userId": uuid.NewString(), "mode": "inherit"}), 404, "User not found")
		dashError(t, "other tenant's user (GET)", get(otherUser.id), 404, "User not found")
		dashError(t, "other tenant's user (PUT)", put(map[string]any{"userId": otherUser.id, "mode": "override", "widgetIds": []string{}}), 404, "User not found")
		dashError(t, "a role id is no user", get(role), 404, "User not found")
		sameJSON(t, "after refusals", get(u.id).expect(200).JSON(), before)
		// The other tenant's user still sees its widgets.
		is.Equal(catalog(otherUser.as), []string{dashWH})
	})
}

func TestDashboardVisibilityEffect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash effect " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view", "attachments.view")...)
		catalog := func() []string {
			return dashIDs(t, dashReq(e, k.as, "GET", "/widgets", nil).expect(200).JSON()["items"], "id")
		}
		is.Equal(catalog(), []string{dashWH, dashStorage})
		ws, etag := dashLayout(t, e, k.as)
		is.Equal(dashIDs(t, ws, "definitionId"), []string{dashWH, dashStorage})
		storageItem := ws[1].(map[string]any)["id"].(string)
		whItem := ws[0].(map[string]any)["id"].(string)

		// The key's own role restricted to the webhook widget.
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": []string{dashWH}}).expect(200)
		is.Equal(catalog(), []string{dashWH})
		hidden, etag2 := dashLayout(t, e, k.as)
		sameJSON(t, "layout without the hidden widget", hidden, ws[:1])
		is.Equal(etag2, etag) // hiding is not a change of the layout
		dashReq(e, k.as, "GET", "/layout/"+storageItem, nil).expect(404)
		dashReq(e, k.as, "DELETE", "/layout/"+storageItem, nil).expect(404) // as GET: hidden items are not there
		dashReq(e, k.as, "GET", "/layout/"+whItem, nil).expect(200)
		dashReq(e, k.as, "GET", "/widgets/"+dashStorage+"/data", nil).expect(403)
		dashInvalid(t, "PUT of a widget hidden from the role",
			dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": []any{ws[0], dashW(uuid.NewString(), dashStorage, 0, 0, 1, 1)}}),
			"widgets[1].definitionId")

		// An empty record hides every widget.
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": []string{}}).expect(200)
		is.Equal(catalog(), []string{})

		// Restored: the hidden widget comes back, as it was.
		dashReq(e, k.as, "DELETE", "/roles/widgets?roleId="+k.roleID, nil).expect(200)
		is.Equal(catalog(), []string{dashWH, dashStorage})
		back, _ := dashLayout(t, e, k.as)
		sameJSON(t, "layout after restoring", back, ws)

		// A PUT of what GET returned while hidden drops the hidden widget.
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": []string{dashWH}}).expect(200)
		dashOK(t, "PUT what GET returned", dashReq(e, k.as.ifMatch(etag), "PUT", "/layout", map[string]any{"widgets": hidden}))
		dashReq(e, k.as, "DELETE", "/roles/widgets?roleId="+k.roleID, nil).expect(200)
		after, _ := dashLayout(t, e, k.as)
		sameJSON(t, "layout after the PUT", after, ws[:1])

		// A role's record applies to every key of the role; with two
		// roles the records are united.
		second := dashNewRole(e, tf, dashWith("attachments.view", "webhooks.view")...)
		body := map[string]any{"name": "two roles", "tenantId": tf.ID, "organizationId": tf.OrgID, "roles": []string{k.roleID, second}}
		two := dashAsKey(e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()["secret"].(string))
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": []string{dashWH}}).expect(200)
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": second, "widgetIds": []string{dashStorage}}).expect(200)
		is.Equal(dashIDs(t, dashReq(e, two, "GET", "/widgets", nil).expect(200).JSON()["items"], "id"), []string{dashWH, dashStorage})
		is.Equal(catalog(), []string{dashWH})
	})
}

func TestDashboardEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash events " + randomHex(3))
		other := e.newTenant("Dash events other " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view")...)
		kOther := dashNewKey(e, other, dashWith("webhooks.view")...)
		events := func(typ string) []map[string]any {
			var out []map[string]any
			for _, ev := range e.events(tf.ID, typ) {
				is.Equal(ev.Type, typ)
				var m map[string]any
				if err := json.Unmarshal(ev.Data, &m); err != nil {
					t.Fatal(err)
				}
				out = append(out, m)
			}
			return out
		}

		dashLayout(t, e, k.as) // seeding emits nothing
		is.Equal(len(events("dashboards.")), 0)

		a, b := uuid.NewString(), uuid.NewString()
		widgets := []any{dashW(a, dashWH, 0, 0, 2, 2), dashW(b, dashWH, 2, 0, 2, 2)}
		dashOK(t, "PUT", dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": widgets}))
		evs := events(dashboards.EventLayoutUpdated)
		is.Equal(len(evs), 1)
		if len(evs) == 1 {
			expectKeys(t, "layout event", evs[0], "ownerId", "widgets", "version")
			sameJSON(t, "layout event", evs[0], map[string]any{"ownerId": "api_key:" + k.id, "widgets": widgets, "version": 2})
		}

		// A 412 and a 400 write none.
		dashReq(e, k.as.ifMatch(`"1"`), "PUT", "/layout", map[string]any{"widgets": []any{}}).expect(412)
		dashReq(e, k.as.ifMatch(`"1"`), "DELETE", "/layout/"+a, nil).expect(412)
		dashReq(e, k.as, "PUT", "/layout", map[string]any{"widgets": []any{dashW("x", dashWH, 0, 0, 1, 1)}}).expect(400)
		dashReq(e, k.as, "DELETE", "/layout/"+uuid.NewString(), nil).expect(404)
		is.Equal(len(events(dashboards.EventLayoutUpdated)), 1)

		// Removing an item is a change.
		dashOK(t, "DELETE", dashReq(e, k.as, "DELETE", "/layout/"+a, nil))
		evs = events(dashboards.EventLayoutUpdated)
		is.Equal(len(evs), 2)
		if len(evs) == 2 {
			sameJSON(t, "removal event", evs[1], map[string]any{"ownerId": "api_key:" + k.id, "widgets": widgets[1:], "version": 3})
		}

		// A user's layout event names the user.
		role := dashNewRole(e, tf, dashWith("webhooks.view")...)
		u := dashNewUser(e, tf, role)
		dashOK(t, "user PUT", dashReq(e, u.as, "PUT", "/layout", map[string]any{"widgets": []any{}}))
		evs = events(dashboards.EventLayoutUpdated)
		is.Equal(len(evs), 3)
		if len(evs) == 3 {
			sameJSON(t, "user's layout event", evs[2], map[string]any{"ownerId": u.id, "widgets": []any{}, "version": 2})
		}

		// Visibility: one event per PUT; refused PUTs write none.
		is.Equal(len(events(dashboards.EventVisibilityUpdated)), 0)
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{dashWH, dashWH}}).expect(200)
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{}}).expect(200)
		dashReq(e, k.as, "PUT", "/users/widgets", map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{dashPayments}}).expect(200)
		dashReq(e, k.as, "PUT", "/users/widgets", map[string]any{"userId": u.id, "mode": "inherit", "widgetIds": []string{dashPayments}}).expect(200)
		dashReq(e, k.as, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{"nope"}}).expect(400)
		dashReq(e, k.as, "PUT", "/users/widgets", map[string]any{"userId": u.id, "mode": "bad"}).expect(400)
		dashReq(e, k.as, "PUT", "/users/widgets", map[string]any{"userId": uuid.NewString(), "mode": "inherit"}).expect(404)
		sameJSON(t, "visibility events", events(dashboards.EventVisibilityUpdated), []any{
			map[string]any{"roleId": role, "widgetIds": []string{dashWH}},
			map[string]any{"roleId": role, "widgetIds": []string{}},
			map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{dashPayments}},
			map[string]any{"userId": u.id, "mode": "inherit", "widgetIds": []string{}},
		})

		// The other tenant saw none of it, and its own change is its own.
		is.Equal(len(e.events(other.ID, "dashboards.")), 0)
		dashOK(t, "other tenant PUT", dashReq(e, kOther.as, "PUT", "/layout", map[string]any{"widgets": []any{}}))
		is.Equal(len(e.events(other.ID, dashboards.EventLayoutUpdated)), 1)
		is.Equal(len(events(dashboards.EventLayoutUpdated)), 3)
	})
}

func TestDashboardBadInput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash bad input " + randomHex(3))
		k := dashNewKey(e, tf, dashWith("webhooks.view")...)
		u := dashNewUser(e, tf, k.roleID)
		_, etag := dashLayout(t, e, k.as)
		id := uuid.NewString()
		raw := func(widget string) string { return `{"widgets":[` + widget + `]}` }
		grid := `"grid":{"x":0,"y":0,"w":1,"h":1}`

		cases := []struct {
			name, method, path string
			body               any
			status             int      // 0: any 4xx
			fields             []string // the details' fields, when status is 400
		}{
			{"garbage", "PUT", "/layout", "\x00\xff garbage", 400, nil},
			{"invalid UTF-8 in a string", "PUT", "/layout", raw(`{"id":"` + id + "\xff" + `","definitionId":"` + dashWH + `",` + grid + `}`), 400, nil},
			{"NUL in id", "PUT", "/layout", raw(`{"id":"` + id[:35] + `\u0000","definitionId":"` + dashWH + `",` + grid + `}`), 400, []string{"widgets[0].id"}},
			{"NUL-only id", "PUT", "/layout", raw(`{"id":"\u0000","definitionId":"` + dashWH + `",` + grid + `}`), 400, []string{"widgets[0].id"}},
			{"NUL in definitionId", "PUT", "/layout", raw(`{"id":"` + id + `","definitionId":"` + dashWH + `\u0000",` + grid + `}`), 400, []string{"widgets[0].definitionId"}},
			{"NUL in a config value", "PUT", "/layout", raw(`{"id":"` + id + `","definitionId":"` + dashWH + `",` + grid + `,"config":{"a":"x\u0000y"}}`), 400, []string{"widgets[0].config"}},
			{"NUL in a config key", "PUT", "/layout", raw(`{"id":"` + id + `","definitionId":"` + dashWH + `",` + grid + `,"config":{"\u0000":1}}`), 400, []string{"widgets[0].config"}},
			{"huge config", "PUT", "/layout", map[string]any{"widgets": []any{map[string]any{"id": id, "definitionId": dashWH,
				"grid": map[string]any{"x": 0, "y": 0, "w": 1, "h": 1}, "config": map[string]any{"a": strings.Repeat("y", 20<<10)}}}}, 400, []string{"widgets[0].config"}},
			{"body over the limit", "PUT", "/layout", `{"widgets":[],"pad":"` + strings.Repeat("z", 2<<20) + `"}`, 413, nil},
			{"huge grid number", "PUT", "/layout", raw(`{"id":"` + id + `","definitionId":"` + dashWH + `","grid":{"x":1` + strings.Repeat("0", 400) + `,"y":0,"w":1,"h":1}}`), 400, []string{"widgets[0].grid.x"}},
			{"NUL item id (GET)", "GET", "/layout/%00", nil, 404, nil},
			{"NUL item id (DELETE)", "DELETE", "/layout/" + id[:10] + "%00", nil, 404, nil},
			{"invalid UTF-8 item id", "GET", "/layout/%ff", nil, 404, nil},
			{"NUL definition id (data)", "GET", "/widgets/%00/data", nil, 404, nil},
			{"NUL roleId (GET)", "GET", "/roles/widgets?roleId=%00", nil, 0, nil},
			{"invalid UTF-8 roleId (GET)", "GET", "/roles/widgets?roleId=%ff", nil, 0, nil},
			{"NUL roleId (PUT)", "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID + "\x00", "widgetIds": []string{dashWH}}, 0, nil},
			{"NUL widget id (role)", "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": []string{dashWH + "\x00"}}, 400, []string{"widgetIds[0]"}},
			{"NUL userId (GET)", "GET", "/users/widgets?userId=" + u.id + "%00", nil, 0, nil},
			{"invalid UTF-8 userId (GET)", "GET", "/users/widgets?userId=%ff%fe", nil, 0, nil},
			{"NUL userId (PUT)", "PUT", "/users/widgets", map[string]any{"userId": "\x00", "mode": "inherit"}, 0, nil},
			{"NUL widget id (user)", "PUT", "/users/widgets", map[string]any{"userId": u.id, "mode": "override", "widgetIds": []string{"\x00"}}, 400, []string{"widgetIds[0]"}},
			{"NUL mode", "PUT", "/users/widgets", map[string]any{"userId": u.id, "mode": "override\x00"}, 400, []string{"mode"}},
			{"widgetIds not a list", "PUT", "/roles/widgets", `{"roleId":"` + k.roleID + `","widgetIds":{"a":1}}`, 400, nil},
			{"1001 widget ids", "PUT", "/roles/widgets", map[string]any{"roleId": k.roleID, "widgetIds": slices.Repeat([]string{dashWH}, 1001)}, 400, []string{"widgetIds"}},
			{"garbage (roles)", "PUT", "/roles/widgets", `{"roleId":`, 400, nil},
			{"garbage (users)", "PUT", "/users/widgets", `nope`, 400, nil},
		}
		for _, c := range cases {
			r := dashReq(e, k.as, c.method, c.path, c.body)
			switch {
			case r.Status >= 500:
				t.Errorf("%s: status %d, want 4xx; body: %s", c.name, r.Status, r.Body)
			case c.status == 0 && (r.Status < 400 || r.Status >= 500):
				t.Errorf("%s: status %d, want 4xx; body: %s", c.name, r.Status, r.Body)
			case c.status != 0 && c.fields != nil:
				dashInvalid(t, c.name, r, c.fields...)
			case c.status != 0 && r.Status != c.status:
				t.Errorf("%s: status %d, want %d; body: %s", c.name, r.Status, c.status, r.Body)
			}
		}
		// None of it changed the layout, the role's or the user's widgets.
		ws, etag2 := dashLayout(t, e, k.as)
		if got := dashIDs(t, ws, "definitionId"); etag2 != etag || !slices.Equal(got, []string{dashWH}) {
			t.Errorf("the bad input changed the layout: ETag %s (was %s), widgets %v", etag2, etag, got)
		}
		sameJSON(t, "role preview", dashReq(e, k.as, "GET", "/roles/widgets?roleId="+k.roleID, nil).expect(200).JSON(),
			map[string]any{"items": dashItems(e, dashWH)})
		sameJSON(t, "user widgets", dashReq(e, k.as, "GET", "/users/widgets?userId="+u.id, nil).expect(200).JSON(),
			map[string]any{"mode": "inherit", "items": dashItems(e, dashWH)})
		if evs := e.events(tf.ID, "dashboards."); len(evs) != 0 {
			t.Errorf("the bad input wrote %d events", len(evs))
		}
	})
}

// TestDashboardVisibilityOrganizations: a caller limited to one
// organization reaches the widget visibility of that organization's users
// only (another organization's user answers 404, as another tenant's
// does), and cannot change a role's (roles hold for the whole tenant: 403
// requiredScope tenant), though it may read it.
func TestDashboardVisibilityOrganizations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Dash orgs " + randomHex(3))
		org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Org2 " + randomHex(3), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
		role := dashNewRole(e, tf, dashWith("webhooks.view")...)
		newUser := func(org string) string {
			return e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": "dash." + randomHex(6) + "@dash.test",
				"password": "dash-password", "organizationId": org, "roles": []string{role}}).expect(201).JSON()["id"].(string)
		}
		inOrg1, inOrg2 := newUser(tf.OrgID), newUser(org2)
		limited := dashAsKey(permOrgKey(e, tf.ID, tf.OrgID, "dashboard.widgets.*"))
		whole := dashNewKey(e, tf, "dashboard.widgets.*").as
		set := func(userID string) map[string]any {
			return map[string]any{"userId": userID, "mode": "override", "widgetIds": []string{dashWH}}
		}

		// Its own organization's user: read and written.
		dashReq(e, limited, "GET", "/users/widgets?userId="+inOrg1, nil).expect(200)
		dashReq(e, limited, "PUT", "/users/widgets", set(inOrg1)).expect(200)
		// Another organization's user: not found, and left as it was.
		dashError(t, "org2 user GET", dashReq(e, limited, "GET", "/users/widgets?userId="+inOrg2, nil), 404, "User not found")
		dashError(t, "org2 user PUT", dashReq(e, limited, "PUT", "/users/widgets", set(inOrg2)), 404, "User not found")
		if mode := dashReq(e, whole, "GET", "/users/widgets?userId="+inOrg2, nil).expect(200).JSON()["mode"]; mode != "inherit" {
			t.Errorf("org2's user is in mode %v after the refused PUT, want inherit", mode)
		}
		// The whole tenant's caller reaches both.
		dashReq(e, whole, "PUT", "/users/widgets", set(inOrg2)).expect(200)

		// A role: readable, not writable by the limited caller.
		role = dashNewRole(e, tf, dashWith("webhooks.view", "attachments.view", "payment_gateways.view")...)
		before := string(dashReq(e, limited, "GET", "/roles/widgets?roleId="+role, nil).expect(200).Body)
		r := dashReq(e, limited, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{dashWH}})
		if problem := permTenantScope(r); problem != "" {
			t.Errorf("limited PUT /roles/widgets: %s", problem)
		}
		if after := string(dashReq(e, whole, "GET", "/roles/widgets?roleId="+role, nil).expect(200).Body); after != before {
			t.Errorf("the role's widgets changed by a refused PUT: %s, were %s", after, before)
		}
		dashReq(e, whole, "PUT", "/roles/widgets", map[string]any{"roleId": role, "widgetIds": []string{dashWH}}).expect(200)
		if after := string(dashReq(e, whole, "GET", "/roles/widgets?roleId="+role, nil).expect(200).Body); after == before {
			t.Errorf("the whole tenant's PUT left the role's widgets as they were: %s", after)
		}
	})
}
