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

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The custom entity and field definition routes. Every test makes its own
// tenants and its own entity ids (entTestID), so on PostgreSQL (one schema
// for the package) nothing another test writes shows up; global
// definitions, which every tenant sees, are only made for an entity id of
// the test's own.

const entBase = "/api/entities"

// entTestID returns an entity id no other test uses, in the dotted form
// ("e<hex>.<name>").
func entTestID(name string) string {
	return "e" + randomHex(5) + "." + name
}

// colon is an entity id in the "module:name" form.
func colon(id string) string { return strings.Replace(id, ".", ":", 1) }

// entKey creates, as the super admin, a role holding features in tenantID
// and an API key with it, scoped to orgID ("" for a tenant-level key, which
// acts in no organization), and returns the key's secret.
func (e *testEnv) entKey(tenantID, orgID string, features ...string) string {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tenantID}).expect(201).JSON()["id"].(string)
	if features == nil {
		features = []string{}
	}
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": features}).expect(200)
	body := map[string]any{"name": "key", "tenantId": tenantID, "roles": []string{roleID}}
	if orgID != "" {
		body["organizationId"] = orgID
	}
	return e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()["secret"].(string)
}

// entNewOrg creates another organization in the tenant.
func (e *testEnv) entNewOrg(tenantID, name string) string {
	e.t.Helper()
	return e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": name, "tenantId": tenantID}).expect(201).JSON()["id"].(string)
}

// entDefinitions is GET /entities/definitions with the query, 200.
func (e *testEnv) entDefinitions(key, query string) map[string]any {
	e.t.Helper()
	return e.do("GET", entBase+"/definitions?"+query, key, nil).expect(200).JSON()
}

// entManage is GET /entities/definitions.manage for entityID, 200.
func (e *testEnv) entManage(key, entityID string) map[string]any {
	e.t.Helper()
	return e.do("GET", entBase+"/definitions.manage?entityId="+url.QueryEscape(entityID), key, nil).expect(200).JSON()
}

// entList is GET /entities/entities (or the sidebar list), 200.
func (e *testEnv) entList(key string, sidebar bool) []map[string]any {
	e.t.Helper()
	path := entBase + "/entities"
	if sidebar {
		path = entBase + "/sidebar-entities"
	}
	body := e.do("GET", path, key, nil).expect(200).JSON()
	expectKeys(e.t, "entity list", body, "items")
	return entItems(e.t, body)
}

// entItems returns the items of a body.
func entItems(t testing.TB, body map[string]any) []map[string]any {
	t.Helper()
	list, ok := body["items"].([]any)
	if !ok {
		t.Fatalf("body without an items list: %v", body)
	}
	out := make([]map[string]any, len(list))
	for i, it := range list {
		out[i] = it.(map[string]any)
	}
	return out
}

// entField returns field f of each item, in order.
func entField(t testing.TB, items []map[string]any, f string) []any {
	t.Helper()
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it[f]
	}
	return out
}

// entLabels maps each item's key to its label.
func entLabels(t testing.TB, items []map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, it := range items {
		out[it["key"].(string)] = it["label"]
	}
	return out
}

// entDefKeys returns the keys of the definitions of GET /entities/definitions.
func (e *testEnv) entDefKeys(key, entityID string) []any {
	e.t.Helper()
	return entField(e.t, entItems(e.t, e.entDefinitions(key, "entityId="+url.QueryEscape(entityID))), "key")
}

// entityEvents returns the tenant's entities.* events, oldest first.
func (e *testEnv) entityEvents(tenantID string) []store.Event {
	e.t.Helper()
	return e.events(tenantID, "entities.")
}

// expectEntVersion checks an {ok: true, version} body and returns the version.
func expectEntVersion(t testing.TB, r *response) float64 {
	t.Helper()
	body := r.expect(200).JSON()
	expectKeys(t, "versioned body", body, "ok", "version")
	v, ok := body["version"].(float64)
	if body["ok"] != true || !ok || v < 1 || v != float64(int64(v)) {
		t.Fatalf("body %s, want {ok: true, version: a positive integer}", r.Body)
	}
	return v
}

// expectEntInvalid checks a 400 {error: "Validation failed", details}
// whose details are exactly want.
func expectEntInvalid(t testing.TB, r *response, want map[string]string) {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 %v; body: %s", r.Status, want, r.Body)
	}
	sameJSON(t, "400 body", r.JSON(), map[string]any{"error": "Validation failed", "details": want})
}

// entSameJSON reports whether got and want marshal to the same JSON.
func entSameJSON(t testing.TB, got, want any) bool {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(g) == string(w)
}

var entNotFound = map[string]any{"error": "Not found"}

// entityIDMessage is the message for an entity id of neither form.
const entIDMessage = "must be module.name (or module:name): lowercase letters, digits and _"

func TestEntitiesEntityRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		ticket, note := entTestID("ticket"), entTestID("note")

		// Nothing yet.
		expectBody(t, e.do("GET", entBase+"/entities", key, nil), 200, map[string]any{"items": []any{}})
		expectBody(t, e.do("GET", entBase+"/sidebar-entities", key, nil), 200, map[string]any{"items": []any{}})

		// Create with every field.
		r := e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Ticket", "description": "Support tickets",
			"labelField": "title", "defaultEditor": "htmlRichText", "showInSidebar": true}).expect(200)
		is.Equal(r.Header.Get("Content-Type"), "application/json")
		created := r.JSON()
		ticketPK, _ := created["item"].(map[string]any)["id"].(string)
		is.True(store.IsID(ticketPK))
		is.Equal(created, map[string]any{"ok": true, "item": map[string]any{"id": ticketPK, "entityId": ticket, "label": "Ticket", "description": "Support tickets"}})

		// Create with the required fields only.
		r = e.do("POST", entBase+"/entities", key, map[string]any{"entityId": note, "label": "Note"}).expect(200)
		notePK, _ := r.JSON()["item"].(map[string]any)["id"].(string)
		is.True(store.IsID(notePK) && notePK != ticketPK)
		is.Equal(r.JSON(), map[string]any{"ok": true, "item": map[string]any{"id": notePK, "entityId": note, "label": "Note", "description": ""}})

		// The list: by entity id, optional fields left out when empty.
		list := e.entList(key, false)
		is.Equal(len(list), 2)
		for _, it := range list {
			ts := parseTime(t, "updatedAt", it["updatedAt"])
			is.True(time.Since(ts) < time.Minute && time.Until(ts) < time.Minute)
		}
		wantTicket := map[string]any{"entityId": ticket, "source": "custom", "label": "Ticket", "description": "Support tickets",
			"labelField": "title", "defaultEditor": "htmlRichText", "showInSidebar": true, "updatedAt": nil, "count": 0.0}
		wantNote := map[string]any{"entityId": note, "source": "custom", "label": "Note", "showInSidebar": false, "updatedAt": nil, "count": 0.0}
		want := []map[string]any{wantTicket, wantNote}
		slices.SortFunc(want, func(a, b map[string]any) int { return strings.Compare(a["entityId"].(string), b["entityId"].(string)) })
		for i := range want {
			want[i]["updatedAt"] = list[i]["updatedAt"]
		}
		is.Equal(list, want)

		// The sidebar: only the entity shown there.
		is.Equal(e.entList(key, true), []map[string]any{wantTicket})

		// Fields count toward the entity's count.
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": ticket, "key": "title", "kind": "text"}).expect(200)
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": ticket, "key": "body", "kind": "multiline"}).expect(200)
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": ticket, "key": "off", "kind": "text", "isActive": false}).expect(200)
		counts := map[any]any{}
		for _, it := range e.entList(key, false) {
			counts[it["entityId"]] = it["count"]
		}
		is.Equal(counts, map[any]any{ticket: 2.0, note: 0.0}) // the inactive field does not count

		// Upsert again: the same entity, its fields replaced; showInSidebar
		// kept when not given.
		time.Sleep(2 * time.Millisecond)
		r = e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Tickets"}).expect(200)
		is.Equal(r.JSON(), map[string]any{"ok": true, "item": map[string]any{"id": ticketPK, "entityId": ticket, "label": "Tickets", "description": ""}})
		side := e.entList(key, true)
		is.Equal(len(side), 1)
		is.Equal(side[0]["label"], "Tickets")
		is.True(parseTime(t, "updatedAt", side[0]["updatedAt"]).After(parseTime(t, "updatedAt", wantTicket["updatedAt"])))
		_, hasDesc := side[0]["description"]
		is.True(!hasDesc)
		// showInSidebar false takes it out of the sidebar; isActive false too.
		e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Tickets", "showInSidebar": false}).expect(200)
		is.Equal(len(e.entList(key, true)), 0)
		e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Tickets", "showInSidebar": true, "isActive": false}).expect(200)
		is.Equal(len(e.entList(key, true)), 0)
		is.Equal(len(e.entList(key, false)), 2) // still listed
		e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Tickets", "isActive": true}).expect(200)
		is.Equal(entField(t, e.entList(key, true), "entityId"), []any{ticket})

		// Delete: {ok: true}; gone from both lists; again 404.
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": ticket}), 200, map[string]any{"ok": true})
		is.Equal(entField(t, e.entList(key, false), "entityId"), []any{note})
		is.Equal(len(e.entList(key, true)), 0)
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": ticket}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": entTestID("never")}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": "Not An Id"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{}), 400, map[string]any{"error": "entityId is required"})
		expectBody(t, e.do("DELETE", entBase+"/entities", key, "null"), 400, map[string]any{"error": "entityId is required"})
		expectBody(t, e.do("DELETE", entBase+"/entities", key, nil), 400, map[string]any{"error": "Request body is required"})

		// Upserting a deleted id makes a new entity; its fields were kept.
		r = e.do("POST", entBase+"/entities", key, map[string]any{"entityId": ticket, "label": "Ticket again"}).expect(200)
		again := r.JSON()["item"].(map[string]any)["id"].(string)
		is.True(store.IsID(again) && again != ticketPK)
		counts = map[any]any{}
		for _, it := range e.entList(key, false) {
			counts[it["entityId"]] = it["count"]
		}
		is.Equal(counts, map[any]any{ticket: 2.0, note: 0.0})

		// The events, with the entity and its scope.
		var types []string
		for _, ev := range e.entityEvents(acme.ID) {
			if !strings.HasPrefix(ev.Type, "entities.entity.") {
				continue
			}
			types = append(types, ev.Type)
			is.Equal(ev.TenantID, acme.ID)
			is.Equal(ev.OrganizationID, acme.OrgID)
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			is.Equal(data["tenantId"], acme.ID)
			is.Equal(data["organizationId"], acme.OrgID)
			is.True(data["entityId"] == ticket || data["entityId"] == note)
		}
		is.Equal(types, []string{"entities.entity.created", "entities.entity.created", "entities.entity.updated",
			"entities.entity.updated", "entities.entity.updated", "entities.entity.updated", "entities.entity.deleted", "entities.entity.created"})
	})
}

func TestEntitiesDefinitionRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("ticket")
		q := "entityId=" + id

		// None yet: empty lists and maps, never null.
		expectBody(t, e.do("GET", entBase+"/definitions?"+q, key, nil), 200,
			map[string]any{"items": []any{}, "fieldsetsByEntity": map[string]any{}, "entitySettings": map[string]any{}})
		expectBody(t, e.do("GET", entBase+"/definitions.manage?"+q, key, nil), 200, map[string]any{"items": []any{}, "deletedKeys": []any{}})

		// Define: the normalised definition.
		define := func(body map[string]any) map[string]any {
			t.Helper()
			r := e.do("POST", entBase+"/definitions", key, body).expect(200)
			is.Equal(r.Header.Get("Content-Type"), "application/json")
			out := r.JSON()
			expectKeys(t, "define body", out, "ok", "item")
			is.Equal(out["ok"], true)
			item := out["item"].(map[string]any)
			expectKeys(t, "defined item", item, "id", "key", "kind", "configJson", "isActive")
			is.True(store.IsID(item["id"].(string)))
			return item
		}
		title := define(map[string]any{"entityId": id, "key": "title", "kind": "string", "configJson": map[string]any{"label": "Title", "filterable": true, "custom": "kept"}})
		titleID := title["id"]
		is.Equal(title, map[string]any{"id": titleID, "key": "title", "kind": "text", "isActive": true,
			"configJson": map[string]any{"label": "Title", "filterable": true, "custom": "kept", "formEditable": true, "listVisible": true}})
		body := define(map[string]any{"entityId": id, "key": "body", "kind": "multiline"})
		bodyID := body["id"]
		is.Equal(body, map[string]any{"id": bodyID, "key": "body", "kind": "multiline", "isActive": true,
			"configJson": map[string]any{"label": "body", "editor": "markdown", "formEditable": true, "listVisible": true}})
		status := define(map[string]any{"entityId": id, "key": "status", "kind": "enum",
			"configJson": map[string]any{"options": []any{"open", "closed"}, "defaultValue": "open", "priority": -1, "listVisible": false}})
		statusID := status["id"]
		is.Equal(status, map[string]any{"id": statusID, "key": "status", "kind": "select", "isActive": true,
			"configJson": map[string]any{"label": "status", "options": []any{"open", "closed"}, "defaultValue": "open", "priority": -1.0,
				"formEditable": true, "listVisible": false}})
		const dict = "0190a0b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"
		price := define(map[string]any{"entityId": id, "key": "price", "kind": "currency", "configJson": map[string]any{"options": []any{"x"}, "priority": 5}})
		is.Equal(price["configJson"], map[string]any{"label": "price", "optionsUrl": "/api/currencies/currencies/options", "priority": 5.0,
			"formEditable": true, "listVisible": true})
		define(map[string]any{"entityId": id, "key": "topic", "kind": "dictionary", "configJson": map[string]any{"dictionaryId": dict, "priority": 6}})

		// The resolved view: flattened, by priority then key.
		wantTitle := map[string]any{"label": "Title", "filterable": true, "custom": "kept", "formEditable": true, "listVisible": true,
			"key": "title", "kind": "text", "entityId": id, "multi": false, "priority": 0.0}
		wantBody := map[string]any{"label": "body", "editor": "markdown", "formEditable": true, "listVisible": true,
			"key": "body", "kind": "multiline", "entityId": id, "multi": false, "filterable": false, "priority": 0.0}
		wantStatus := map[string]any{"label": "status", "defaultValue": "open", "priority": -1.0, "formEditable": true, "listVisible": false,
			"options": []any{map[string]any{"value": "open", "label": "open"}, map[string]any{"value": "closed", "label": "closed"}},
			"key":     "status", "kind": "select", "entityId": id, "multi": false, "filterable": false}
		wantPrice := map[string]any{"label": "price", "optionsUrl": "/api/currencies/currencies/options", "priority": 5.0, "formEditable": true,
			"listVisible": true, "key": "price", "kind": "currency", "entityId": id, "multi": false, "filterable": false}
		wantTopic := map[string]any{"label": "topic", "dictionaryId": dict, "optionsUrl": "/api/dictionaries/" + dict + "/entries", "priority": 6.0,
			"formEditable": true, "listVisible": true, "key": "topic", "kind": "dictionary", "entityId": id, "multi": false, "filterable": false}
		defs := e.entDefinitions(key, q)
		expectKeys(t, "definitions body", defs, "items", "fieldsetsByEntity", "entitySettings")
		is.Equal(entItems(t, defs), []map[string]any{wantStatus, wantBody, wantTitle, wantPrice, wantTopic})
		is.Equal(defs["fieldsetsByEntity"], map[string]any{})
		is.Equal(defs["entitySettings"], map[string]any{})

		// The manage view: whole definitions at their scope.
		manage := e.entManage(key, id)
		expectKeys(t, "manage body", manage, "items", "deletedKeys")
		is.Equal(manage["deletedKeys"], []any{})
		items := entItems(t, manage)
		is.Equal(entField(t, items, "key"), []any{"status", "body", "title", "price", "topic"})
		is.Equal(entField(t, items, "id")[:4], []any{statusID, bodyID, titleID, price["id"]})
		for _, it := range items {
			expectKeys(t, "manage item", it, "id", "entityId", "key", "kind", "configJson", "isActive", "scope", "tenantId", "organizationId", "createdAt", "updatedAt")
			is.Equal(it["entityId"], id)
			is.Equal(it["isActive"], true)
			is.Equal(it["scope"], "organization")
			is.Equal(it["tenantId"], acme.ID)
			is.Equal(it["organizationId"], acme.OrgID)
			parseTime(t, "createdAt", it["createdAt"])
			parseTime(t, "updatedAt", it["updatedAt"])
		}
		is.Equal(items[2]["configJson"], title["configJson"])
		is.Equal(items[2]["kind"], "text")

		// Update: same row, new configuration.
		title2 := define(map[string]any{"entityId": id, "key": "title", "kind": "text", "configJson": map[string]any{"label": "Headline"}})
		is.Equal(title2["id"], titleID)
		is.Equal(title2["configJson"], map[string]any{"label": "Headline", "formEditable": true, "listVisible": true})
		wantTitle = map[string]any{"label": "Headline", "formEditable": true, "listVisible": true,
			"key": "title", "kind": "text", "entityId": id, "multi": false, "filterable": false, "priority": 0.0}

		// Delete: {ok, version}; hidden from the resolved view; the manage
		// view lists the key as deleted.
		v1 := expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "body"}))
		is.Equal(entItems(t, e.entDefinitions(key, q)), []map[string]any{wantStatus, wantTitle, wantPrice, wantTopic})
		manage = e.entManage(key, id)
		is.Equal(manage["deletedKeys"], []any{"body"})
		is.Equal(entField(t, entItems(t, manage), "key"), []any{"status", "title", "price", "topic"})
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "body"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "nope"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": entTestID("x"), "key": "title"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": "BAD", "key": "title"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "Not-A-Key"}), 404, entNotFound)

		// Restore: {ok: true}; back as it was; again 404.
		expectBody(t, e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": id, "key": "body"}), 200, map[string]any{"ok": true})
		is.Equal(entItems(t, e.entDefinitions(key, q)), []map[string]any{wantStatus, wantBody, wantTitle, wantPrice, wantTopic})
		manage = e.entManage(key, id)
		is.Equal(manage["deletedKeys"], []any{})
		is.Equal(entItems(t, manage)[1]["id"], bodyID)
		expectBody(t, e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": id, "key": "body"}), 404, entNotFound)
		expectBody(t, e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": id, "key": "nope"}), 404, entNotFound)

		// Defining a deleted key again lifts its tombstone (same row).
		v2 := expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "title"}))
		is.True(v2 > v1)
		is.Equal(e.entManage(key, id)["deletedKeys"], []any{"title"})
		again := define(map[string]any{"entityId": id, "key": "title", "kind": "text", "configJson": map[string]any{"label": "Headline"}})
		is.Equal(again["id"], titleID)
		is.Equal(e.entManage(key, id)["deletedKeys"], []any{})
		is.Equal(entItems(t, e.entDefinitions(key, q)), []map[string]any{wantStatus, wantBody, wantTitle, wantPrice, wantTopic})

		// isActive false: out of the resolved view, in the manage view.
		off := define(map[string]any{"entityId": id, "key": "body", "kind": "multiline", "isActive": false})
		is.Equal(off["isActive"], false)
		is.Equal(off["id"], bodyID)
		is.Equal(e.entDefKeys(key, id), []any{"status", "title", "price", "topic"})
		items = entItems(t, e.entManage(key, id))
		is.Equal(entField(t, items, "key"), []any{"status", "body", "title", "price", "topic"})
		is.Equal(items[1]["isActive"], false)
		// An inactive key can still be deleted and restored (inactive again).
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "body"}))
		e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": id, "key": "body"}).expect(200)
		is.Equal(e.entDefKeys(key, id), []any{"status", "body", "title", "price", "topic"}) // restore makes it active
		is.Equal(entItems(t, e.entManage(key, id))[1]["isActive"], true)

		// Several entities, either query form, in the order given; the
		// fieldset filter.
		other := entTestID("other")
		define(map[string]any{"entityId": other, "key": "a", "kind": "boolean", "configJson": map[string]any{"fieldset": "main", "defaultValue": true}})
		define(map[string]any{"entityId": other, "key": "b", "kind": "integer", "configJson": map[string]any{"defaultValue": 3}})
		both := []any{"a", "b", "status", "body", "title", "price", "topic"}
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityId="+other+"&entityId="+id)), "key"), both)
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityIds="+other+","+id)), "key"), both)
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityId="+other+"&entityIds=%20"+id+"%20,,")), "key"), both)
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityIds="+id+","+other)), "entityId"), []any{id, id, id, id, id, other, other})
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityIds="+other+","+id+"&fieldset=main")), "key"), []any{"a"})
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, "entityIds="+other+","+id+"&fieldset=none")), "key"), []any{})

		// Requests without an entity id.
		for _, path := range []string{"/definitions", "/definitions?entityId=", "/definitions?entityIds=,%20,", "/definitions?entityid=" + id,
			"/definitions.manage", "/definitions.manage?entityId=", "/definitions.manage?entityIds=" + id} {
			expectBody(t, e.do("GET", entBase+path, key, nil), 400, map[string]any{"error": "entityId is required"})
		}
		for _, b := range []any{map[string]any{}, map[string]any{"entityId": id}, map[string]any{"key": "title"}, "null"} {
			expectBody(t, e.do("DELETE", entBase+"/definitions", key, b), 400, map[string]any{"error": "entityId and key are required"})
			expectBody(t, e.do("POST", entBase+"/definitions.restore", key, b), 400, map[string]any{"error": "entityId and key are required"})
		}

		// The events: each with the definition and its scope.
		var types []string
		for _, ev := range e.entityEvents(acme.ID) {
			types = append(types, ev.Type)
			is.Equal(ev.TenantID, acme.ID)
			is.Equal(ev.OrganizationID, acme.OrgID)
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			is.Equal(data["tenantId"], acme.ID)
			is.Equal(data["organizationId"], acme.OrgID)
			is.Equal(data["scope"], "organization")
		}
		is.Equal(types, []string{
			"entities.definition.created", "entities.definition.created", "entities.definition.created", "entities.definition.created", "entities.definition.created",
			"entities.definition.updated", "entities.definition.deleted", "entities.definition.restored",
			"entities.definition.deleted", "entities.definition.updated",
			"entities.definition.updated", "entities.definition.deleted", "entities.definition.restored",
			"entities.definition.created", "entities.definition.created"})
	})
}

func TestEntitiesEntityIDForms(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		dotted := entTestID("thing")
		col := colon(dotted)
		is.True(strings.Contains(col, ":") && !strings.Contains(col, "."))

		// An entity made with the colon form is stored and shown dotted;
		// the dotted form updates the same one.
		r := e.do("POST", entBase+"/entities", key, map[string]any{"entityId": col, "label": "Colon"}).expect(200).JSON()
		pk := r["item"].(map[string]any)["id"]
		is.Equal(r["item"].(map[string]any)["entityId"], dotted)
		r = e.do("POST", entBase+"/entities", key, map[string]any{"entityId": dotted, "label": "Dot"}).expect(200).JSON()
		is.Equal(r["item"].(map[string]any)["id"], pk)
		list := e.entList(key, false)
		is.Equal(entField(t, list, "entityId"), []any{dotted})
		is.Equal(list[0]["label"], "Dot")

		// Definitions: written in one form, read in the other.
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": col, "key": "a", "kind": "text"}).expect(200)
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": dotted, "key": "b", "kind": "text"}).expect(200)
		upd := e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": dotted, "key": "a", "kind": "text", "configJson": map[string]any{"label": "A"}}).expect(200).JSON()
		is.Equal(upd["item"].(map[string]any)["configJson"].(map[string]any)["label"], "A")
		for _, q := range []string{"entityId=" + col, "entityId=" + dotted, "entityIds=" + col} {
			defs := e.entDefinitions(key, q)
			items := entItems(t, defs)
			is.Equal(entField(t, items, "key"), []any{"a", "b"})
			is.Equal(entField(t, items, "entityId"), []any{dotted, dotted})
			is.Equal(entLabels(t, items), map[string]any{"a": "A", "b": "b"})
		}
		for _, form := range []string{col, dotted} {
			m := e.entManage(key, form)
			is.Equal(entField(t, entItems(t, m), "entityId"), []any{dotted, dotted})
		}
		is.Equal(e.entList(key, false)[0]["count"], 2.0)

		// Batch in the colon form: settings keyed by the dotted form.
		expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", key, map[string]any{"entityId": col,
			"definitions": []any{map[string]any{"key": "c", "kind": "text"}}, "fieldsets": []any{map[string]any{"code": "main", "label": "Main"}}}))
		defs := e.entDefinitions(key, "entityId="+col)
		is.Equal(defs["fieldsetsByEntity"], map[string]any{dotted: []any{map[string]any{"code": "main", "label": "Main"}}})
		is.Equal(defs["entitySettings"], map[string]any{dotted: map[string]any{"singleFieldsetPerRecord": false}})

		// Delete in one form, restore in the other.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": col, "key": "a"}))
		is.Equal(e.entDefKeys(key, dotted), []any{"b", "c"})
		is.Equal(e.entManage(key, col)["deletedKeys"], []any{"a"})
		expectBody(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": dotted, "key": "a"}), 404, entNotFound)
		e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": dotted, "key": "a"}).expect(200)
		is.Equal(e.entDefKeys(key, col), []any{"a", "b", "c"})

		// Delete the entity in the colon form.
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": col}), 200, map[string]any{"ok": true})
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": dotted}), 404, entNotFound)
		is.Equal(len(e.entList(key, false)), 0)

		// Neither form with a second separator, a capital or a blank side.
		for _, bad := range []string{dotted + ".x", strings.Replace(dotted, ".", ".:", 1), strings.ToUpper(dotted), "." + dotted[strings.IndexByte(dotted, '.')+1:], dotted[:strings.IndexByte(dotted, '.')+1], "a-b.c", "a/b"} {
			expectEntInvalid(t, e.do("POST", entBase+"/entities", key, map[string]any{"entityId": bad, "label": "x"}), map[string]string{"entityId": entIDMessage})
			expectEntInvalid(t, e.do("GET", entBase+"/definitions?entityId="+url.QueryEscape(bad), key, nil), map[string]string{"entityId": entIDMessage})
		}
	})
}

func TestEntitiesScopes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		o1, o2 := acme.OrgID, e.entNewOrg(acme.ID, "Acme West")
		m := entitiesapi.FeatureEntitiesDefinitionsManage
		kT, k1, k2 := e.entKey(acme.ID, "", m), e.entKey(acme.ID, o1, m), e.entKey(acme.ID, o2, m)
		// The tenant-level key acts in no organization.
		me := e.do("GET", "/api/auth/me", kT, nil).expect(200).JSON()
		is.Equal(me["tenantId"], acme.ID)
		is.Equal(me["organizationId"], nil)
		is.Equal(e.do("GET", "/api/auth/me", k1, nil).expect(200).JSON()["organizationId"], o1)

		id := entTestID("deal")
		def := func(k, key, label string, extra ...func(map[string]any)) map[string]any {
			t.Helper()
			b := map[string]any{"entityId": id, "key": key, "kind": "text", "configJson": map[string]any{"label": label}}
			for _, f := range extra {
				f(b)
			}
			return e.do("POST", entBase+"/definitions", k, b).expect(200).JSON()["item"].(map[string]any)
		}
		labels := func(k string) map[string]any {
			t.Helper()
			return entLabels(t, entItems(t, e.entDefinitions(k, "entityId="+id)))
		}

		// An organization's definition is its own.
		def(k1, "o1_only", "O1")
		is.Equal(labels(k1), map[string]any{"o1_only": "O1"})
		is.Equal(labels(k2), map[string]any{})
		is.Equal(labels(kT), map[string]any{})
		is.Equal(len(entItems(t, e.entManage(k2, id))), 0)
		is.Equal(len(entItems(t, e.entManage(kT, id))), 0)
		expectBody(t, e.do("DELETE", entBase+"/definitions", k2, map[string]any{"entityId": id, "key": "o1_only"}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/definitions", kT, map[string]any{"entityId": id, "key": "o1_only"}), 404, entNotFound)
		is.Equal(labels(k1), map[string]any{"o1_only": "O1"})

		// The tenant's definition reaches every organization.
		tenantShared := def(kT, "shared", "Tenant")
		is.Equal(tenantShared["isActive"], true)
		is.Equal(labels(kT), map[string]any{"shared": "Tenant"})
		is.Equal(labels(k1), map[string]any{"o1_only": "O1", "shared": "Tenant"})
		is.Equal(labels(k2), map[string]any{"shared": "Tenant"})
		mT := entItems(t, e.entManage(kT, id))
		is.Equal(entField(t, mT, "scope"), []any{"tenant"})
		_, hasOrg := mT[0]["organizationId"]
		is.True(!hasOrg)

		// An organization's own definition of the key wins there only.
		o1Shared := def(k1, "shared", "O1 shared")
		is.True(o1Shared["id"] != tenantShared["id"])
		is.Equal(labels(k1), map[string]any{"o1_only": "O1", "shared": "O1 shared"})
		is.Equal(labels(k2), map[string]any{"shared": "Tenant"})
		is.Equal(labels(kT), map[string]any{"shared": "Tenant"})
		m1 := entItems(t, e.entManage(k1, id))
		is.Equal(entField(t, m1, "key"), []any{"o1_only", "shared"})
		is.Equal(entField(t, m1, "scope"), []any{"organization", "organization"})
		is.Equal(m1[1]["id"], o1Shared["id"])
		// The tenant changing its own does not touch O1's.
		def(kT, "shared", "Tenant v2")
		is.Equal(labels(k1)["shared"], "O1 shared")
		is.Equal(labels(k2)["shared"], "Tenant v2")

		// Disabling O1's lets the tenant's show in O1; the manage view keeps
		// O1's inactive one.
		def(k1, "shared", "O1 shared", func(b map[string]any) { b["isActive"] = false })
		is.Equal(labels(k1)["shared"], "Tenant v2")
		m1 = entItems(t, e.entManage(k1, id))
		is.Equal(m1[1]["id"], o1Shared["id"])
		is.Equal(m1[1]["isActive"], false)
		def(k1, "shared", "O1 shared")
		is.Equal(labels(k1)["shared"], "O1 shared")

		// Batch settings at a scope: O1's win in O1, the tenant's elsewhere.
		batch := func(k, code string, single bool) {
			t.Helper()
			expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", k, map[string]any{"entityId": id, "definitions": []any{},
				"fieldsets": []any{map[string]any{"code": code, "label": code}}, "singleFieldsetPerRecord": single}))
		}
		batch(kT, "tenant_set", false)
		batch(k1, "o1_set", true)
		settings := func(k string) (any, any) {
			d := e.entDefinitions(k, "entityId="+id)
			return d["fieldsetsByEntity"], d["entitySettings"]
		}
		fs, es := settings(k1)
		is.Equal(fs, map[string]any{id: []any{map[string]any{"code": "o1_set", "label": "o1_set"}}})
		is.Equal(es, map[string]any{id: map[string]any{"singleFieldsetPerRecord": true}})
		for _, k := range []string{k2, kT} {
			fs, es = settings(k)
			is.Equal(fs, map[string]any{id: []any{map[string]any{"code": "tenant_set", "label": "tenant_set"}}})
			is.Equal(es, map[string]any{id: map[string]any{"singleFieldsetPerRecord": false}})
		}

		// Entities: the tenant's is seen everywhere; an organization's own
		// of the same id wins there; deletes act at the caller's scope.
		ent := entTestID("board")
		upsert := func(k, label string) {
			t.Helper()
			e.do("POST", entBase+"/entities", k, map[string]any{"entityId": ent, "label": label}).expect(200)
		}
		entLabel := func(k string) []any {
			t.Helper()
			var out []any
			for _, it := range e.entList(k, false) {
				if it["entityId"] == ent {
					out = append(out, it["label"])
				}
			}
			return out
		}
		upsert(k1, "O1 board")
		is.Equal(entLabel(k1), []any{"O1 board"})
		is.Equal(entLabel(k2), []any(nil))
		is.Equal(entLabel(kT), []any(nil))
		upsert(kT, "Tenant board")
		is.Equal(entLabel(k1), []any{"O1 board"})
		is.Equal(entLabel(k2), []any{"Tenant board"})
		is.Equal(entLabel(kT), []any{"Tenant board"})
		expectBody(t, e.do("DELETE", entBase+"/entities", k2, map[string]any{"entityId": ent}), 404, entNotFound)
		expectBody(t, e.do("DELETE", entBase+"/entities", k1, map[string]any{"entityId": ent}), 200, map[string]any{"ok": true})
		is.Equal(entLabel(k1), []any{"Tenant board"})
		// The count is of the fields the caller sees.
		e.do("POST", entBase+"/entities", kT, map[string]any{"entityId": id, "label": "Deal"}).expect(200)
		count := func(k string) any {
			for _, it := range e.entList(k, false) {
				if it["entityId"] == id {
					return it["count"]
				}
			}
			return nil
		}
		is.Equal(count(kT), 1.0) // shared
		is.Equal(count(k1), 2.0) // o1_only, shared
		is.Equal(count(k2), 1.0)

		// The tenant deleting its key hides it in O2 (which does not define
		// it) but not in O1 (which does).
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", kT, map[string]any{"entityId": id, "key": "shared"}))
		is.Equal(labels(kT), map[string]any{})
		is.Equal(labels(k2), map[string]any{})
		is.Equal(labels(k1), map[string]any{"o1_only": "O1", "shared": "O1 shared"})
		is.Equal(e.entManage(kT, id)["deletedKeys"], []any{"shared"})
		e.do("POST", entBase+"/definitions.restore", kT, map[string]any{"entityId": id, "key": "shared"}).expect(200)
		is.Equal(labels(k2), map[string]any{"shared": "Tenant v2"})

		// O2 deleting the tenant's key hides it for O2 only (a tombstone at
		// O2); restore lifts it.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", k2, map[string]any{"entityId": id, "key": "shared"}))
		is.Equal(labels(k2), map[string]any{})
		is.Equal(labels(kT), map[string]any{"shared": "Tenant v2"})
		is.Equal(labels(k1)["shared"], "O1 shared")
		is.Equal(e.entManage(k2, id)["deletedKeys"], []any{"shared"})
		is.Equal(e.entManage(kT, id)["deletedKeys"], []any{})
		is.Equal(e.entManage(k1, id)["deletedKeys"], []any{})
		expectBody(t, e.do("DELETE", entBase+"/definitions", k2, map[string]any{"entityId": id, "key": "shared"}), 404, entNotFound)
		expectBody(t, e.do("POST", entBase+"/definitions.restore", kT, map[string]any{"entityId": id, "key": "shared"}), 404, entNotFound)
		expectBody(t, e.do("POST", entBase+"/definitions.restore", k1, map[string]any{"entityId": id, "key": "shared"}), 404, entNotFound)
		e.do("POST", entBase+"/definitions.restore", k2, map[string]any{"entityId": id, "key": "shared"}).expect(200)
		is.Equal(labels(k2), map[string]any{"shared": "Tenant v2"})
		is.Equal(e.entManage(k2, id)["deletedKeys"], []any{})

	})
}

func TestEntitiesGlobalDefinitions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		m := entitiesapi.FeatureEntitiesDefinitionsManage
		kA, kAT, kB := e.newKey(acme, m), e.entKey(acme.ID, "", m), e.newKey(globex, m)
		id := entTestID("global") // global definitions are seen by every tenant: this id is the test's own
		g, err := e.kit.Entities.DefineGlobal(t.Context(), entities.DefinitionInput{EntityID: colon(id), Key: "sku", Kind: "text",
			ConfigJSON: map[string]any{"label": "SKU"}})
		is.NoErr(err)
		is.Equal(g.Scope, "global")
		labels := func(k string) map[string]any {
			t.Helper()
			return entLabels(t, entItems(t, e.entDefinitions(k, "entityId="+id)))
		}
		for _, k := range []string{kA, kAT, kB} {
			is.Equal(labels(k), map[string]any{"sku": "SKU"})
			items := entItems(t, e.entManage(k, id))
			is.Equal(entField(t, items, "scope"), []any{"global"})
			_, hasTenant := items[0]["tenantId"]
			is.True(!hasTenant)
		}

		// A tenant deleting a global field hides it for itself (and its
		// organizations) only.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", kAT, map[string]any{"entityId": id, "key": "sku"}))
		is.Equal(labels(kAT), map[string]any{})
		is.Equal(labels(kA), map[string]any{})
		is.Equal(labels(kB), map[string]any{"sku": "SKU"})
		is.Equal(e.entManage(kAT, id)["deletedKeys"], []any{"sku"})
		is.Equal(e.entManage(kA, id)["deletedKeys"], []any{})
		is.Equal(len(entItems(t, e.entManage(kA, id))), 0)
		// The organization overrides the tombstone by defining the key.
		e.do("POST", entBase+"/definitions", kA, map[string]any{"entityId": id, "key": "sku", "kind": "text", "configJson": map[string]any{"label": "Acme SKU"}}).expect(200)
		is.Equal(labels(kA), map[string]any{"sku": "Acme SKU"})
		is.Equal(labels(kAT), map[string]any{})
		// Restore lifts the tombstone-only row.
		expectBody(t, e.do("POST", entBase+"/definitions.restore", kAT, map[string]any{"entityId": id, "key": "sku"}), 200, map[string]any{"ok": true})
		is.Equal(labels(kAT), map[string]any{"sku": "SKU"})
		is.Equal(entField(t, entItems(t, e.entManage(kAT, id)), "scope"), []any{"global"})
		expectBody(t, e.do("POST", entBase+"/definitions.restore", kAT, map[string]any{"entityId": id, "key": "sku"}), 404, entNotFound)

		// An organization deleting the global field: Globex's own hides it
		// there only.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", kB, map[string]any{"entityId": id, "key": "sku"}))
		is.Equal(labels(kB), map[string]any{})
		is.Equal(labels(kAT), map[string]any{"sku": "SKU"})

		// Global definitions' events reach no tenant.
		for _, ev := range e.entityEvents(globex.ID) {
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			is.Equal(data["tenantId"], globex.ID)
		}
	})
}

func TestEntitiesBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("order")
		q := "entityId=" + id
		batchPath := entBase + "/definitions.batch"

		fieldsets := []any{
			map[string]any{"code": "main", "label": "Main"},
			map[string]any{"code": "extra-1", "label": "Extra", "icon": "star", "description": "More",
				"groups": []any{map[string]any{"code": "g1", "title": "Group", "hint": "Hint"}, map[string]any{"code": "g2"}}},
		}
		v1 := expectEntVersion(t, e.do("POST", batchPath, key, map[string]any{"entityId": id,
			"definitions": []any{
				map[string]any{"key": "zeta", "kind": "text", "configJson": map[string]any{"priority": 99, "fieldset": "main"}},
				map[string]any{"key": "alpha", "kind": "integer", "configJson": map[string]any{"fieldset": "extra-1", "group": map[string]any{"code": "g1"}}},
				map[string]any{"key": "mid", "kind": "enum", "configJson": map[string]any{"options": []any{"a", 2}, "defaultValue": 2.0}},
			},
			"fieldsets": fieldsets, "singleFieldsetPerRecord": true}))

		// Order is priority (the index; a given priority is replaced).
		defs := e.entDefinitions(key, q)
		items := entItems(t, defs)
		is.Equal(entField(t, items, "key"), []any{"zeta", "alpha", "mid"})
		is.Equal(entField(t, items, "priority"), []any{0.0, 1.0, 2.0})
		is.Equal(entField(t, items, "kind"), []any{"text", "integer", "select"})
		is.Equal(items[2]["options"], []any{map[string]any{"value": "a", "label": "a"}, map[string]any{"value": 2.0, "label": 2.0}})
		is.Equal(items[1]["group"], map[string]any{"code": "g1"})
		is.Equal(defs["fieldsetsByEntity"], map[string]any{id: fieldsets})
		is.Equal(defs["entitySettings"], map[string]any{id: map[string]any{"singleFieldsetPerRecord": true}})
		is.Equal(entField(t, entItems(t, e.entManage(key, id)), "key"), []any{"zeta", "alpha", "mid"})
		for _, it := range entItems(t, e.entManage(key, id)) {
			is.Equal(it["configJson"].(map[string]any)["priority"], it["configJson"].(map[string]any)["priority"].(float64))
		}
		// The fieldset filter.
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, q+"&fieldset=extra-1")), "key"), []any{"alpha"})
		is.Equal(entField(t, entItems(t, e.entDefinitions(key, q+"&fieldset=main")), "key"), []any{"zeta"})

		// A second batch reorders the keys it names and keeps the others;
		// without fieldsets or singleFieldsetPerRecord the settings stay.
		v2 := expectEntVersion(t, e.do("POST", batchPath, key, map[string]any{"entityId": colon(id),
			"definitions": []any{map[string]any{"key": "mid", "kind": "select"}, map[string]any{"key": "zeta", "kind": "text"}, map[string]any{"key": "new", "kind": "float"}}}))
		is.True(v2 > v1)
		defs = e.entDefinitions(key, q)
		items = entItems(t, defs)
		is.Equal(entField(t, items, "key"), []any{"mid", "alpha", "zeta", "new"}) // alpha kept at 1, zeta now 1: by key
		is.Equal(entField(t, items, "priority"), []any{0.0, 1.0, 1.0, 2.0})
		_, midHasOptions := items[0]["options"]
		is.True(!midHasOptions) // the batch replaced mid's configuration
		is.Equal(defs["fieldsetsByEntity"], map[string]any{id: fieldsets})
		is.Equal(defs["entitySettings"], map[string]any{id: map[string]any{"singleFieldsetPerRecord": true}})

		// An empty batch with settings only changes the settings.
		expectEntVersion(t, e.do("POST", batchPath, key, map[string]any{"entityId": id, "definitions": []any{},
			"fieldsets": []any{map[string]any{"code": "only", "label": "Only"}}, "singleFieldsetPerRecord": false}))
		defs = e.entDefinitions(key, q)
		is.Equal(entField(t, entItems(t, defs), "key"), []any{"mid", "alpha", "zeta", "new"})
		is.Equal(defs["fieldsetsByEntity"], map[string]any{id: []any{map[string]any{"code": "only", "label": "Only"}}})
		is.Equal(defs["entitySettings"], map[string]any{id: map[string]any{"singleFieldsetPerRecord": false}})
		before := string(e.do("GET", entBase+"/definitions?"+q, key, nil).expect(200).Body)
		beforeManage := string(e.do("GET", entBase+"/definitions.manage?"+q, key, nil).expect(200).Body)
		eventsBefore := len(e.entityEvents(acme.ID))

		// An invalid batch writes nothing: not its valid definitions, not
		// its settings.
		good := map[string]any{"key": "fresh", "kind": "text"}
		newSets := []any{map[string]any{"code": "x", "label": "X"}}
		for _, c := range []struct {
			name string
			body map[string]any
			want map[string]string
		}{
			{"bad kind", map[string]any{"entityId": id, "definitions": []any{good, map[string]any{"key": "bad", "kind": "nope"}}, "fieldsets": newSets},
				map[string]string{"definitions[1].kind": "must be one of " + strings.Join(entities.Kinds, ", ")}},
			{"bad key", map[string]any{"entityId": id, "definitions": []any{map[string]any{"key": "Bad Key", "kind": "text"}, good}},
				map[string]string{"definitions[0].key": "must be snake_case: lowercase letters, digits and _, at most 100 characters"}},
			{"missing key and kind", map[string]any{"entityId": id, "definitions": []any{good, map[string]any{}}},
				map[string]string{"definitions[1].key": "is required", "definitions[1].kind": "is required"}},
			{"twice", map[string]any{"entityId": id, "definitions": []any{good, map[string]any{"key": "fresh", "kind": "integer"}}},
				map[string]string{"definitions[1].key": "is given twice"}},
			{"bad config", map[string]any{"entityId": id, "definitions": []any{good, map[string]any{"key": "n", "kind": "integer",
				"configJson": map[string]any{"defaultValue": "x", "validation": []any{map[string]any{"rule": "nope"}}}}}},
				map[string]string{"definitions[1].configJson.defaultValue": "must be a whole number for an integer field",
					"definitions[1].configJson.validation[0].rule": "must be one of " + strings.Join(entities.ValidationRules, ", ")}},
			{"bad fieldset label", map[string]any{"entityId": id, "definitions": []any{good}, "fieldsets": []any{map[string]any{"code": "ok", "label": ""}}},
				map[string]string{"fieldsets[0].label": "is required"}},
			{"long fieldset label", map[string]any{"entityId": id, "definitions": []any{good}, "fieldsets": []any{map[string]any{"code": "ok", "label": "X"}, map[string]any{"code": "ok2", "label": strings.Repeat("é", 256)}}},
				map[string]string{"fieldsets[1].label": "must be at most 255 characters"}},
			{"bad fieldset code", map[string]any{"entityId": id, "definitions": []any{good}, "fieldsets": []any{map[string]any{"code": "Bad Code", "label": "B"}}},
				map[string]string{"fieldsets[0].code": "must be lowercase letters, digits, _ and -"}},
			{"group without code", map[string]any{"entityId": id, "definitions": []any{good}, "fieldsets": []any{map[string]any{"code": "c", "label": "C", "groups": []any{map[string]any{"title": "T"}}}}},
				map[string]string{"fieldsets[0].groups[0].code": "is required"}},
			{"too many fieldsets", map[string]any{"entityId": id, "definitions": []any{good}, "fieldsets": slices.Repeat([]any{map[string]any{"code": "c", "label": "C"}}, 21)},
				map[string]string{"fieldsets": "must have at most 20 field sets"}},
			{"bad entity", map[string]any{"entityId": "Nope", "definitions": []any{good}},
				map[string]string{"entityId": entIDMessage}},
			{"no entity", map[string]any{"definitions": []any{good}},
				map[string]string{"entityId": entIDMessage}},
		} {
			r := e.do("POST", batchPath, key, c.body)
			if r.Status != 400 {
				t.Errorf("%s: status %d, want 400; body: %s", c.name, r.Status, r.Body)
				continue
			}
			if !entSameJSON(t, r.JSON(), map[string]any{"error": "Validation failed", "details": c.want}) {
				t.Errorf("%s: body %s, want details %v", c.name, r.Body, c.want)
			}
		}
		// 501 definitions is too many.
		many := make([]any, 501)
		for i := range many {
			many[i] = map[string]any{"key": fmt.Sprintf("k%d", i), "kind": "text"}
		}
		r := e.do("POST", batchPath, key, map[string]any{"entityId": id, "definitions": many})
		expectEntInvalid(t, r, map[string]string{"definitions": "must have at most 500 definitions"})
		is.Equal(string(e.do("GET", entBase+"/definitions?"+q, key, nil).expect(200).Body), before)
		is.Equal(string(e.do("GET", entBase+"/definitions.manage?"+q, key, nil).expect(200).Body), beforeManage)
		is.Equal(len(e.entityEvents(acme.ID)), eventsBefore)

	})
}

func TestEntitiesValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("valid")
		const dict = "0190a0b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"
		ent := func(edits ...func(map[string]any)) map[string]any {
			b := map[string]any{"entityId": id, "label": "Valid"}
			for _, f := range edits {
				f(b)
			}
			return b
		}
		def := func(edits ...func(map[string]any)) map[string]any {
			b := map[string]any{"entityId": id, "key": "field", "kind": "text"}
			for _, f := range edits {
				f(b)
			}
			return b
		}
		cfg := func(c map[string]any) func(map[string]any) { return withField("configJson", c) }
		rule := func(r ...any) func(map[string]any) { return cfg(map[string]any{"validation": r}) }
		kinds := "must be one of " + strings.Join(entities.Kinds, ", ")
		rules := "must be one of " + strings.Join(entities.ValidationRules, ", ")
		const keyMsg = "must be snake_case: lowercase letters, digits and _, at most 100 characters"
		const labelFieldMsg = "must be a field name (letters, digits and _, not starting with a digit), at most 100 characters"

		for _, c := range []struct {
			name, path string
			body       any
			want       map[string]string
		}{
			// Entities.
			{"entityId pattern", "/entities", ent(withField("entityId", "Sales.Deal")), map[string]string{"entityId": entIDMessage}},
			{"entityId no module", "/entities", ent(withField("entityId", "deal")), map[string]string{"entityId": entIDMessage}},
			{"entityId missing", "/entities", ent(withoutField("entityId")), map[string]string{"entityId": entIDMessage}},
			{"entityId too long", "/entities", ent(withField("entityId", "m."+strings.Repeat("a", 199))), map[string]string{"entityId": entIDMessage}},
			{"label missing", "/entities", ent(withoutField("label")), map[string]string{"label": "is required"}},
			{"label too long", "/entities", ent(withField("label", strings.Repeat("ü", 201))), map[string]string{"label": "must be at most 200 characters"}},
			{"description too long", "/entities", ent(withField("description", strings.Repeat("d", 2001))), map[string]string{"description": "must be at most 2000 characters"}},
			{"labelField digit", "/entities", ent(withField("labelField", "1name")), map[string]string{"labelField": labelFieldMsg}},
			{"labelField dash", "/entities", ent(withField("labelField", "first-name")), map[string]string{"labelField": labelFieldMsg}},
			{"labelField too long", "/entities", ent(withField("labelField", strings.Repeat("a", 101))), map[string]string{"labelField": labelFieldMsg}},
			{"defaultEditor", "/entities", ent(withField("defaultEditor", "wysiwyg")), map[string]string{"defaultEditor": "must be one of " + strings.Join(entities.Editors, ", ")}},
			{"several", "/entities", map[string]any{"entityId": "x", "label": "", "defaultEditor": "x"},
				map[string]string{"entityId": entIDMessage, "label": "is required", "defaultEditor": "must be one of " + strings.Join(entities.Editors, ", ")}},
			{"label NUL", "/entities", ent(withField("label", "a\x00b")), map[string]string{"label": "must be valid text"}},
			{"description NUL", "/entities", ent(withField("description", "\x00")), map[string]string{"description": "must be valid text"}},
			{"entityId NUL", "/entities", ent(withField("entityId", id+"\x00")), map[string]string{"entityId": entIDMessage}},
			{"entity wrong type", "/entities", ent(withField("entityId", 5)), map[string]string{"entityId": "must be a string"}},
			{"showInSidebar wrong type", "/entities", ent(withField("showInSidebar", "yes")), map[string]string{"showInSidebar": "must be a boolean"}},
			{"label wrong type", "/entities", ent(withField("label", []string{"a"})), map[string]string{"label": "must be a string"}},
			// Definitions.
			{"def entityId", "/definitions", def(withField("entityId", "no")), map[string]string{"entityId": entIDMessage}},
			{"key pattern", "/definitions", def(withField("key", "Field")), map[string]string{"key": keyMsg}},
			{"key dash", "/definitions", def(withField("key", "a-b")), map[string]string{"key": keyMsg}},
			{"key too long", "/definitions", def(withField("key", strings.Repeat("k", 101))), map[string]string{"key": keyMsg}},
			{"key reserved", "/definitions", def(withField("key", "id")), map[string]string{"key": "is reserved for the record's own columns"}},
			{"key reserved created_at", "/definitions", def(withField("key", "created_at")), map[string]string{"key": "is reserved for the record's own columns"}},
			{"key missing", "/definitions", def(withoutField("key")), map[string]string{"key": "is required"}},
			{"key NUL", "/definitions", def(withField("key", "a\x00")), map[string]string{"key": keyMsg}},
			{"kind", "/definitions", def(withField("kind", "blob")), map[string]string{"kind": kinds}},
			{"kind case", "/definitions", def(withField("kind", "Text")), map[string]string{"kind": kinds}},
			{"kind missing", "/definitions", def(withoutField("kind")), map[string]string{"kind": "is required"}},
			{"rule unknown", "/definitions", def(rule(map[string]any{"rule": "between", "message": "m"})), map[string]string{"configJson.validation[0].rule": rules}},
			{"rule missing", "/definitions", def(rule(map[string]any{"message": "m"})), map[string]string{"configJson.validation[0].rule": rules}},
			{"rule not an object", "/definitions", def(rule("required")), map[string]string{"configJson.validation[0]": "must be {rule, message, param?}"}},
			{"rule lt param", "/definitions", def(rule(map[string]any{"rule": "required"}, map[string]any{"rule": "lt", "param": "3"})), map[string]string{"configJson.validation[1].param": "must be a number"}},
			{"rule eq param", "/definitions", def(rule(map[string]any{"rule": "eq"})), map[string]string{"configJson.validation[0].param": "is required"}},
			{"rule regex", "/definitions", def(rule(map[string]any{"rule": "regex", "param": "("})), map[string]string{"configJson.validation[0].param": "must be a valid regular expression"}},
			{"rule regex long", "/definitions", def(rule(map[string]any{"rule": "regex", "param": strings.Repeat("a", 501)})), map[string]string{"configJson.validation[0].param": "must be a pattern of at most 500 characters"}},
			{"rule message", "/definitions", def(rule(map[string]any{"rule": "required", "message": 1})), map[string]string{"configJson.validation[0].message": "must be text"}},
			{"rules too many", "/definitions", def(rule(slices.Repeat([]any{map[string]any{"rule": "required"}}, 33)...)), map[string]string{"configJson.validation": "must be a list of at most 32 rules"}},
			{"rules not a list", "/definitions", def(cfg(map[string]any{"validation": "required"})), map[string]string{"configJson.validation": "must be a list of at most 32 rules"}},
			{"default integer", "/definitions", def(withField("kind", "integer"), cfg(map[string]any{"defaultValue": 1.5})), map[string]string{"configJson.defaultValue": "must be a whole number for an integer field"}},
			{"default boolean", "/definitions", def(withField("kind", "boolean"), cfg(map[string]any{"defaultValue": "true"})), map[string]string{"configJson.defaultValue": "must be true or false for a boolean field"}},
			{"default text", "/definitions", def(cfg(map[string]any{"defaultValue": 1})), map[string]string{"configJson.defaultValue": "must be text"}},
			{"default float", "/definitions", def(withField("kind", "float"), cfg(map[string]any{"defaultValue": "1"})), map[string]string{"configJson.defaultValue": "must be a number"}},
			{"default select", "/definitions", def(withField("kind", "select"), cfg(map[string]any{"options": []any{"a"}, "defaultValue": "b"})), map[string]string{"configJson.defaultValue": "must be one of the options"}},
			{"default relation", "/definitions", def(withField("kind", "relation"), cfg(map[string]any{"defaultValue": "x"})), map[string]string{"configJson.defaultValue": "is not supported for relation fields"}},
			{"dictionary without id", "/definitions", def(withField("kind", "dictionary")), map[string]string{"configJson.dictionaryId": "is required for dictionary custom fields"}},
			{"dictionary bad id", "/definitions", def(withField("kind", "dictionary"), cfg(map[string]any{"dictionaryId": "nope"})), map[string]string{"configJson.dictionaryId": "must be a UUID"}},
			{"dictionaryId on text", "/definitions", def(cfg(map[string]any{"dictionaryId": 7})), map[string]string{"configJson.dictionaryId": "must be a UUID"}},
			{"config label", "/definitions", def(cfg(map[string]any{"label": strings.Repeat("l", 201)})), map[string]string{"configJson.label": "must be text of at most 200 characters"}},
			{"config label type", "/definitions", def(cfg(map[string]any{"label": 1})), map[string]string{"configJson.label": "must be text of at most 200 characters"}},
			{"config multi", "/definitions", def(cfg(map[string]any{"multi": "yes"})), map[string]string{"configJson.multi": "must be true or false"}},
			{"config priority", "/definitions", def(cfg(map[string]any{"priority": "1"})), map[string]string{"configJson.priority": "must be a number"}},
			{"config options", "/definitions", def(cfg(map[string]any{"options": []any{true}})), map[string]string{"configJson.options": "must be a list of strings or numbers"}},
			{"config optionsUrl", "/definitions", def(cfg(map[string]any{"optionsUrl": ""})), map[string]string{"configJson.optionsUrl": "must be a URL"}},
			{"config fieldset", "/definitions", def(cfg(map[string]any{"fieldset": "Main Set"})), map[string]string{"configJson.fieldset": "must be a field set code: lowercase letters, digits, _ and -"}},
			{"config group", "/definitions", def(cfg(map[string]any{"group": map[string]any{"title": "no code"}})), map[string]string{"configJson.group": "must be {code, title (at most 200 characters), hint (at most 500)}"}},
			{"config NUL value", "/definitions", def(cfg(map[string]any{"custom": "a\x00"})), map[string]string{"configJson.custom": "must be valid text"}},
			{"config NUL key", "/definitions", def(cfg(map[string]any{"x\x00": 1})), map[string]string{"configJson": "must be valid text"}},
			{"config NUL nested", "/definitions", def(cfg(map[string]any{"label": "ok", "deep": []any{map[string]any{"a": "\x00"}}})), map[string]string{"configJson.deep[0].a": "must be valid text"}},
			{"config wrong type", "/definitions", def(withField("configJson", "x")), map[string]string{"configJson": "must be an object"}},
			{"config list", "/definitions", def(withField("configJson", []any{})), map[string]string{"configJson": "must be an object"}},
			{"isActive wrong type", "/definitions", def(withField("isActive", 1)), map[string]string{"isActive": "must be a boolean"}},
			// Batch.
			{"batch fieldset label", "/definitions.batch", map[string]any{"entityId": id, "fieldsets": []any{map[string]any{"code": "a", "label": ""}}}, map[string]string{"fieldsets[0].label": "is required"}},
			{"batch fieldset NUL", "/definitions.batch", map[string]any{"entityId": id, "fieldsets": []any{map[string]any{"code": "a", "label": "\x00"}}}, map[string]string{"fieldsets[0].label": "must be valid text"}},
			{"batch fieldset icon", "/definitions.batch", map[string]any{"entityId": id, "fieldsets": []any{map[string]any{"code": "a", "label": "A", "icon": strings.Repeat("i", 101)}}}, map[string]string{"fieldsets[0].icon": "must be at most 100 characters"}},
			{"batch definitions type", "/definitions.batch", map[string]any{"entityId": id, "definitions": map[string]any{}}, map[string]string{"definitions": "must be an array"}},
			{"batch single type", "/definitions.batch", map[string]any{"entityId": id, "singleFieldsetPerRecord": "yes"}, map[string]string{"singleFieldsetPerRecord": "must be a boolean"}},
		} {
			r := e.do("POST", entBase+c.path, key, c.body)
			if r.Status != 400 {
				t.Errorf("%s: status %d, want 400; body: %.300s", c.name, r.Status, r.Body)
				continue
			}
			if !entSameJSON(t, r.JSON(), map[string]any{"error": "Validation failed", "details": c.want}) {
				t.Errorf("%s: body %.500s, want details %v", c.name, r.Body, c.want)
			}
		}

		// Nothing was written.
		is.Equal(len(e.entList(key, false)), 0)
		is.Equal(len(entItems(t, e.entManage(key, id))), 0)
		is.Equal(len(e.entityEvents(acme.ID)), 0)

		// The limits themselves pass.
		e.do("POST", entBase+"/entities", key, ent(withField("entityId", "m."+strings.Repeat("a", 198)), withField("label", strings.Repeat("ü", 200)),
			withField("description", strings.Repeat("d", 2000)), withField("labelField", "_"+strings.Repeat("A", 99)), withField("defaultEditor", "plain"))).expect(200)
		for i, b := range []map[string]any{
			def(withField("key", strings.Repeat("k", 100))),
			def(withField("key", "k2"), withField("kind", "dictionary"), cfg(map[string]any{"dictionaryId": dict, "dictionaryInlineCreate": true})),
			def(withField("key", "k3"), rule(map[string]any{"rule": "regex", "param": "^[a-z]+$", "message": "letters"}, map[string]any{"rule": "gte", "param": 0},
				map[string]any{"rule": "ne", "param": nil}, map[string]any{"rule": "required"})),
			def(withField("key", "k4"), withField("kind", "integer"), cfg(map[string]any{"defaultValue": 3, "validation": slices.Repeat([]any{map[string]any{"rule": "integer"}}, 32)})),
			def(withField("key", "k5"), withField("kind", "select"), cfg(map[string]any{"options": []any{"a", 1}, "defaultValue": 1, "multi": true})),
			def(withField("key", "k6"), withField("kind", "relation"), cfg(map[string]any{"relatedEntityId": "x.y", "defaultValue": nil})),
			def(withField("key", "k7"), cfg(map[string]any{"unknownKey": map[string]any{"nested": []any{1, "two"}}})),
		} {
			r := e.do("POST", entBase+"/definitions", key, b)
			if r.Status != 200 {
				t.Errorf("valid definition %d: status %d; body: %.300s", i, r.Status, r.Body)
			}
		}
		is.Equal(len(entItems(t, e.entManage(key, id))), 7)
		defs := entItems(t, e.entDefinitions(key, "entityId="+id))
		for _, d := range defs {
			if d["key"] == "k7" {
				is.Equal(d["unknownKey"], map[string]any{"nested": []any{1.0, "two"}}) // passed through
			}
		}

		// Query parameters.
		for _, bad := range []string{"%FF", "%00", "a.b%00", "a.b%FFc", "A.B", url.QueryEscape(strings.Repeat("a", 200) + ".b")} {
			for _, path := range []string{"/definitions?entityId=", "/definitions?entityIds=a.b,", "/definitions.manage?entityId="} {
				expectEntInvalid(t, e.do("GET", entBase+path+bad, key, nil), map[string]string{"entityId": entIDMessage})
			}
		}
		for _, f := range []string{"%00", "%FF", url.QueryEscape(strings.Repeat("x", 5000))} {
			is.Equal(entItems(t, e.entDefinitions(key, "entityId="+id+"&fieldset="+f)), []map[string]any{})
		}
	})
}

func TestEntitiesBadInputNever5xx(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("robust")
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": id, "key": "seed", "kind": "text"}).expect(200)

		check := func(what string, r *response, want int) {
			t.Helper()
			if r.Status != want {
				t.Errorf("%s: status %d, want %d; body: %.300s", what, r.Status, want, r.Body)
				return
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil || body["error"] == nil {
				t.Errorf("%s: %d without a JSON error body: %.300s", what, r.Status, r.Body)
			}
		}
		routes := []struct{ method, path string }{
			{"POST", "/entities"}, {"DELETE", "/entities"}, {"POST", "/definitions"}, {"POST", "/definitions.batch"},
			{"DELETE", "/definitions"}, {"POST", "/definitions.restore"},
		}
		// Malformed JSON, raw NUL and non-UTF-8 bytes: 400.
		deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)
		deepCfg := `{"entityId":"` + id + `","key":"k","kind":"text","configJson":{"a":` + strings.Repeat(`{"a":`, 20_000) + "1" + strings.Repeat("}", 20_000) + "}}"
		for _, body := range []string{"", "{", "}", `{"entityId":`, `{"entityId":"a.b"} trailing`, `{"a":1}{"b":2}`, "\xff\xfe",
			"{'entityId': 'a.b'}", `{"entityId": "a.b",}`, "NaN", "[1,2", deep, deepCfg, "\x00", `{"entityId":"a.b"` + "\x00}",
			`{"entityId":"a.b","label":"` + "\xff" + `"}`, "[]", `"text"`, "42", "true", `[{"entityId":"a.b"}]`} {
			for _, rt := range routes {
				check(fmt.Sprintf("%s %s with %.20q", rt.method, rt.path, body), e.do(rt.method, entBase+rt.path, key, body), 400)
			}
		}
		// Invalid UTF-8 in a field names the field.
		for path, c := range map[string]struct{ raw, field string }{
			"/entities":          {`{"entityId":"` + id + `","label":"a` + "\xff" + `b"}`, "label"},
			"/definitions":       {`{"entityId":"` + id + `","key":"k","kind":"text","configJson":{"label":"` + "\xc3" + `"}}`, "configJson"},
			"/definitions.batch": {`{"entityId":"` + id + `","definitions":[{"key":"k","kind":"text","configJson":{"x":"` + "\xed\xa0\x80" + `"}}]}`, "definitions"},
		} {
			expectEntInvalid(t, e.do("POST", entBase+path, key, c.raw), map[string]string{c.field: "must be valid UTF-8 text"})
		}
		// Wrong types anywhere: 400.
		for _, body := range []string{`{"entityId":1}`, `{"entityId":null,"key":{}}`, `{"key":["a"]}`, `{"definitions":[1]}`,
			`{"definitions":[{"configJson":[]}]}`, `{"fieldsets":{}}`, `{"fieldsets":[{"code":1}]}`, `{"fieldsets":[{"groups":"x"}]}`,
			`{"entityId":"a.b","label":1e999,"key":1e999,"definitions":1e999}`, `{"isActive":"false"}`, `{"configJson":{"priority":1e400}}`} {
			for _, rt := range routes {
				r := e.do(rt.method, entBase+rt.path, key, body)
				if r.Status < 400 || r.Status >= 500 {
					t.Errorf("%s %s with %s: status %d, want 4xx; body: %.300s", rt.method, rt.path, body, r.Status, r.Body)
				}
			}
		}
		// A body over the limit: 413.
		big := map[string]any{"entityId": id, "label": "x", "description": strings.Repeat("x", 2<<20)}
		for _, rt := range routes {
			check(rt.method+" "+rt.path+" 2 MiB", e.do(rt.method, entBase+rt.path, key, big), 413)
		}
		// The seed is untouched.
		is.New(t).Equal(e.entDefKeys(key, id), []any{"seed"})
	})
}

func TestEntitiesFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("guarded")
		e.do("POST", entBase+"/entities", admin, map[string]any{"entityId": id, "label": "Seed", "showInSidebar": true}).expect(200)
		e.do("POST", entBase+"/definitions", admin, map[string]any{"entityId": id, "key": "seed", "kind": "text"}).expect(200)
		e.do("POST", entBase+"/definitions", admin, map[string]any{"entityId": id, "key": "gone", "kind": "text"}).expect(200)
		e.do("DELETE", entBase+"/definitions", admin, map[string]any{"entityId": id, "key": "gone"}).expect(200)
		before := string(e.do("GET", entBase+"/definitions.manage?entityId="+id, admin, nil).expect(200).Body)

		type call struct {
			method, path string
			body         any
		}
		open := []call{
			{"GET", "/entities", nil},
			{"GET", "/sidebar-entities", nil},
			{"GET", "/definitions?entityId=" + id, nil},
			{"GET", "/definitions?entityIds=" + id, nil},
		}
		guarded := []call{
			{"POST", "/entities", map[string]any{"entityId": id, "label": "Stolen"}},
			{"DELETE", "/entities", map[string]any{"entityId": id}},
			{"GET", "/definitions.manage?entityId=" + id, nil},
			{"POST", "/definitions", map[string]any{"entityId": id, "key": "seed", "kind": "integer"}},
			{"POST", "/definitions.batch", map[string]any{"entityId": id, "definitions": []any{map[string]any{"key": "x", "kind": "text"}}}},
			{"DELETE", "/definitions", map[string]any{"entityId": id, "key": "seed"}},
			{"POST", "/definitions.restore", map[string]any{"entityId": id, "key": "gone"}},
		}
		for name, k := range map[string]string{
			"none":     e.newKey(acme),
			"webhooks": e.newKey(acme, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage),
			"similar":  e.newKey(acme, "entities.definitions.view", "entities.records.manage", "entities.definitions"),
		} {
			for _, c := range open {
				r := e.do(c.method, entBase+c.path, k, c.body)
				if r.Status != 200 {
					t.Errorf("%s key, %s %s: status %d, want 200; body: %s", name, c.method, c.path, r.Status, r.Body)
				}
			}
			for _, c := range guarded {
				r := e.do(c.method, entBase+c.path, k, c.body)
				if r.Status != 403 {
					t.Errorf("%s key, %s %s: status %d, want 403; body: %s", name, c.method, c.path, r.Status, r.Body)
					continue
				}
				expectForbiddenFeature(t, r, entitiesapi.FeatureEntitiesDefinitionsManage)
			}
			// Invalid bodies are forbidden before they are read.
			expectForbiddenFeature(t, e.do("POST", entBase+"/entities", k, "{"), entitiesapi.FeatureEntitiesDefinitionsManage)
			expectForbiddenFeature(t, e.do("GET", entBase+"/definitions.manage", k, nil), entitiesapi.FeatureEntitiesDefinitionsManage)
		}
		// The open routes show the same to any key.
		none := e.newKey(acme)
		is.Equal(e.do("GET", entBase+"/definitions?entityId="+id, none, nil).Body, e.do("GET", entBase+"/definitions?entityId="+id, admin, nil).Body)
		is.Equal(entField(t, e.entList(none, true), "entityId"), []any{id})

		// Nothing was written.
		list := e.entList(admin, false)
		is.Equal(len(list), 1)
		is.Equal(list[0]["label"], "Seed")
		is.Equal(string(e.do("GET", entBase+"/definitions.manage?entityId="+id, admin, nil).expect(200).Body), before)

		// Wildcards grant the feature.
		for _, f := range []string{"entities.*", "entities.definitions.*", "*"} {
			k := e.newKey(acme, f)
			e.do("GET", entBase+"/definitions.manage?entityId="+id, k, nil).expect(200)
			e.do("POST", entBase+"/definitions", k, map[string]any{"entityId": id, "key": "wild", "kind": "text"}).expect(200)
			expectEntVersion(t, e.do("DELETE", entBase+"/definitions", k, map[string]any{"entityId": id, "key": "wild"}))
			e.do("POST", entBase+"/definitions.restore", k, map[string]any{"entityId": id, "key": "wild"}).expect(200)
			expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", k, map[string]any{"entityId": id, "definitions": []any{}}))
			e.do("POST", entBase+"/entities", k, map[string]any{"entityId": id, "label": "Seed"}).expect(200)
		}
		e.do("DELETE", entBase+"/entities", e.newKey(acme, "entities.*"), map[string]any{"entityId": id}).expect(200)

		// No key, or a wrong one: 401 everywhere.
		for _, c := range append(open, guarded...) {
			for _, k := range []string{"", "tk_00000000.nope", admin + "x"} {
				r := e.do(c.method, entBase+c.path, k, c.body)
				if r.Status != 401 {
					t.Errorf("key %q, %s %s: status %d, want 401; body: %s", k, c.method, c.path, r.Status, r.Body)
					continue
				}
				is.Equal(r.JSON(), map[string]any{"error": "Unauthorized"})
			}
		}
	})
}

func TestEntitiesTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		m := entitiesapi.FeatureEntitiesDefinitionsManage
		keyA, keyAT := e.newKey(acme, m), e.entKey(acme.ID, "", m)
		keyB, keyBT := e.newKey(globex, m), e.entKey(globex.ID, "", m)
		id := entTestID("secret")

		// A: an entity at each scope, definitions at each scope, settings,
		// a deleted key.
		e.do("POST", entBase+"/entities", keyA, map[string]any{"entityId": id, "label": "A org", "showInSidebar": true}).expect(200)
		e.do("POST", entBase+"/entities", keyAT, map[string]any{"entityId": colon(id), "label": "A tenant", "showInSidebar": true}).expect(200)
		e.do("POST", entBase+"/definitions", keyA, map[string]any{"entityId": id, "key": "org_field", "kind": "text"}).expect(200)
		e.do("POST", entBase+"/definitions", keyAT, map[string]any{"entityId": id, "key": "tenant_field", "kind": "text"}).expect(200)
		expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", keyA, map[string]any{"entityId": id,
			"definitions": []any{map[string]any{"key": "batched", "kind": "text"}, map[string]any{"key": "doomed", "kind": "text"}},
			"fieldsets":   []any{map[string]any{"code": "a", "label": "A"}}, "singleFieldsetPerRecord": true}))
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", keyA, map[string]any{"entityId": id, "key": "doomed"}))
		snapshot := func() []string {
			t.Helper()
			var out []string
			for _, k := range []string{keyA, keyAT} {
				for _, p := range []string{"/entities", "/sidebar-entities", "/definitions?entityId=" + id, "/definitions.manage?entityId=" + id} {
					out = append(out, string(e.do("GET", entBase+p, k, nil).expect(200).Body))
				}
			}
			return out
		}
		aBefore := snapshot()
		is.Equal(e.entDefKeys(keyA, id), []any{"batched", "org_field", "tenant_field"})

		// B sees none of it, with either key.
		for _, k := range []string{keyB, keyBT} {
			is.Equal(len(e.entList(k, false)), 0)
			is.Equal(len(e.entList(k, true)), 0)
			expectBody(t, e.do("GET", entBase+"/definitions?entityIds="+id+","+colon(id), k, nil), 200,
				map[string]any{"items": []any{}, "fieldsetsByEntity": map[string]any{}, "entitySettings": map[string]any{}})
			expectBody(t, e.do("GET", entBase+"/definitions.manage?entityId="+id, k, nil), 200, map[string]any{"items": []any{}, "deletedKeys": []any{}})
			// B's changes to A's things: 404.
			for _, key := range []string{"org_field", "tenant_field", "batched"} {
				expectBody(t, e.do("DELETE", entBase+"/definitions", k, map[string]any{"entityId": id, "key": key}), 404, entNotFound)
			}
			expectBody(t, e.do("POST", entBase+"/definitions.restore", k, map[string]any{"entityId": id, "key": "doomed"}), 404, entNotFound)
			expectBody(t, e.do("DELETE", entBase+"/entities", k, map[string]any{"entityId": id}), 404, entNotFound)
		}
		is.Equal(snapshot(), aBefore)

		// B's own entity and definitions of the same id are B's alone.
		e.do("POST", entBase+"/entities", keyB, map[string]any{"entityId": id, "label": "B"}).expect(200)
		e.do("POST", entBase+"/definitions", keyB, map[string]any{"entityId": id, "key": "org_field", "kind": "integer"}).expect(200)
		expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", keyBT, map[string]any{"entityId": id, "definitions": []any{},
			"fieldsets": []any{map[string]any{"code": "b", "label": "B"}}}))
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", keyB, map[string]any{"entityId": id, "key": "org_field"}))
		e.do("POST", entBase+"/definitions.restore", keyB, map[string]any{"entityId": id, "key": "org_field"}).expect(200)
		expectBody(t, e.do("DELETE", entBase+"/entities", keyB, map[string]any{"entityId": id}), 200, map[string]any{"ok": true})
		defsB := e.entDefinitions(keyB, "entityId="+id)
		is.Equal(entField(t, entItems(t, defsB), "kind"), []any{"integer"})
		is.Equal(defsB["fieldsetsByEntity"], map[string]any{id: []any{map[string]any{"code": "b", "label": "B"}}})
		is.Equal(snapshot(), aBefore)

		// Each tenant's events are its own.
		for _, tf := range []tenantFixture{acme, globex} {
			evs := e.entityEvents(tf.ID)
			is.True(len(evs) > 0)
			for _, ev := range evs {
				is.Equal(ev.TenantID, tf.ID)
				var data map[string]any
				is.NoErr(json.Unmarshal(ev.Data, &data))
				is.Equal(data["tenantId"], tf.ID)
			}
		}
		is.Equal(len(e.entityEvents(globex.ID)), 5) // entity created, definition created, deleted, restored, entity deleted
	})
}

func TestEntitiesConcurrentUpserts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, entitiesapi.FeatureEntitiesDefinitionsManage)
		id := entTestID("race")
		const n = 8
		calls := []struct {
			path string
			body func(i int) map[string]any
		}{
			{"/entities", func(i int) map[string]any { return map[string]any{"entityId": id, "label": fmt.Sprint("L", i)} }},
			{"/definitions", func(i int) map[string]any {
				return map[string]any{"entityId": id, "key": "k", "kind": "text", "configJson": map[string]any{"label": fmt.Sprint("L", i)}}
			}},
			{"/definitions.batch", func(i int) map[string]any {
				return map[string]any{"entityId": id, "definitions": []any{map[string]any{"key": "b", "kind": "text"}},
					"fieldsets": []any{map[string]any{"code": "c", "label": fmt.Sprint("L", i)}}}
			}},
		}
		// (A first save that loses the race on the unique index is retried
		// and updates the winner's row: every caller gets 200.)
		for _, c := range calls {
			rs := make([]*response, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { rs[i] = e.do("POST", entBase+c.path, key, c.body(i)) })
			}
			wg.Wait()
			for _, r := range rs {
				if r.Status != http.StatusOK {
					t.Errorf("concurrent POST %s: %d %s", c.path, r.Status, r.Body)
				}
			}
		}
		list := e.entList(key, false)
		is.New(t).Equal(len(list), 1)
		is.New(t).Equal(e.entDefKeys(key, id), []any{"b", "k"})
	})
}

func TestEntitiesEventCatalogue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		body := e.do("GET", "/api/webhooks/events", e.newKey(acme, webhooksapi.FeatureWebhooksView), nil).expect(200).JSON()
		byID := map[string]any{}
		for _, it := range body["data"].([]any) {
			ev := it.(map[string]any)
			byID[ev["id"].(string)] = ev
		}
		entry := func(id, label, description, category string) map[string]any {
			return map[string]any{"id": id, "label": label, "description": description, "category": category, "module": "entities", "clientBroadcast": false}
		}
		for id, want := range map[string]any{
			"entities.entity.created":      entry("entities.entity.created", "Custom entity created", "A custom entity was registered.", "crud"),
			"entities.entity.updated":      entry("entities.entity.updated", "Custom entity updated", "A custom entity's settings changed.", "crud"),
			"entities.entity.deleted":      entry("entities.entity.deleted", "Custom entity deleted", "A custom entity was deleted (its records stay).", "crud"),
			"entities.definition.created":  entry("entities.definition.created", "Custom field defined", "A custom field definition was created at a scope.", "crud"),
			"entities.definition.updated":  entry("entities.definition.updated", "Custom field updated", "A custom field definition changed.", "crud"),
			"entities.definition.deleted":  entry("entities.definition.deleted", "Custom field deleted", "A custom field was deleted (tombstoned) at a scope.", "crud"),
			"entities.definition.restored": entry("entities.definition.restored", "Custom field restored", "A deleted custom field was restored at a scope.", "lifecycle"),
		} {
			is.Equal(byID[id], want)
		}
		// Every event type the area declares is listed (the area may grow).
		for _, et := range entities.EventTypes {
			ev, ok := byID[et.ID].(map[string]any)
			if !ok {
				t.Errorf("catalogue lacks %s", et.ID)
				continue
			}
			is.Equal(ev["label"], et.Label)
			is.Equal(ev["description"], et.Description)
			is.Equal(ev["module"], "entities")
		}
		// A webhook may subscribe to them.
		key := e.newKey(acme, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage)
		e.do("POST", "/api/webhooks", key, map[string]any{"name": "ent", "url": "https://hooks.example.com/ent",
			"subscribedEvents": []string{"entities.*", "entities.definition.restored"}}).expect(201)
	})
}
