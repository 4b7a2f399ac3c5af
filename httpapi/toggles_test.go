package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// Feature toggles are global, and on PostgreSQL every test of the package
// shares one schema: each test names its toggles (identifier, category)
// after a fresh random prefix and filters on it, so that lists only ever
// show its own toggles.

const togglesBase = "/api/feature_toggles"

// toggleTimePattern is the spec's database-style timestamp text.
var toggleTimePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\+00$`)

// togglePrefix returns a fresh identifier prefix (a lowercase letter, then
// hex digits).
func togglePrefix() string { return "t" + randomHex(5) }

// createToggle creates a toggle as the super admin and returns its id.
func (e *testEnv) createToggle(body map[string]any) string {
	e.t.Helper()
	r := e.do("POST", togglesBase+"/global", e.superKey, body).expect(201).JSON()
	id, _ := r["id"].(string)
	if !store.IsID(id) || len(r) != 1 {
		e.t.Fatalf("create toggle: body %v, want {id}", r)
	}
	return id
}

// superIn sends a request as the super admin acting in tenantID (the
// selected-tenant cookie).
func (e *testEnv) superIn(tenantID, method, path string, body any) *response {
	e.t.Helper()
	return e.send(method, path, body, func(r *http.Request) {
		r.Header.Set("X-Api-Key", e.superKey)
		r.AddCookie(&http.Cookie{Name: identity.SelectedTenantCookie, Value: tenantID})
	})
}

// checkToggle asks a typed check endpoint with key.
func (e *testEnv) checkToggle(typ, identifier, key string) *response {
	e.t.Helper()
	return e.do("GET", togglesBase+"/check/"+typ+"?identifier="+identifier, key, nil)
}

// expectInvalid checks a 400 {error, details} whose details name field, and
// returns the body.
func expectInvalid(t testing.TB, r *response, field string) map[string]any {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 naming %q; body: %s", r.Status, field, r.Body)
	}
	body := r.JSON()
	if msg, _ := body["error"].(string); msg == "" {
		t.Fatalf("400 without an error message: %s", r.Body)
	}
	details, _ := body["details"].(map[string]any)
	if msg, _ := details[field].(string); msg == "" {
		t.Fatalf("400 details %v do not name %q; body: %s", details, field, r.Body)
	}
	return body
}

// toggleIDs returns the ids of a list response's items, in order.
func toggleIDs(t testing.TB, list map[string]any) []string {
	t.Helper()
	items, ok := list["items"].([]any)
	if !ok {
		t.Fatalf("list without items: %v", list)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.(map[string]any)["id"].(string)
	}
	return ids
}

func TestToggleCRUD(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()

		id := e.createToggle(map[string]any{"identifier": p + ".crud", "name": "Crud toggle", "description": "Made by the CRUD test",
			"category": p, "type": "boolean", "defaultValue": true})
		got := e.do("GET", togglesBase+"/global/"+id, e.superKey, nil).expect(200).JSON()
		created, updated := got["created_at"].(string), got["updated_at"].(string)
		is.True(toggleTimePattern.MatchString(created)) // created_at is database-style text
		is.True(toggleTimePattern.MatchString(updated)) // updated_at is database-style text
		is.Equal(created, updated)
		is.Equal(got, map[string]any{"id": id, "identifier": p + ".crud", "name": "Crud toggle", "description": "Made by the CRUD test",
			"category": p, "type": "boolean", "defaultValue": true, "created_at": created, "updated_at": updated})

		// Optional fields default to "" and null.
		bare := e.createToggle(map[string]any{"identifier": p + ".bare", "name": "Bare", "type": "json"})
		got = e.do("GET", togglesBase+"/global/"+bare, e.superKey, nil).expect(200).JSON()
		is.Equal(got["description"], "")
		is.Equal(got["category"], "")
		v, ok := got["defaultValue"]
		is.True(ok) // defaultValue is present
		is.Equal(v, nil)

		// PUT changes only what it carries.
		r := e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": id, "name": "Renamed", "defaultValue": false}).expect(200).JSON()
		is.Equal(r, map[string]any{"id": id})
		got = e.do("GET", togglesBase+"/global/"+id, e.superKey, nil).expect(200).JSON()
		is.Equal(got["name"], "Renamed")
		is.Equal(got["defaultValue"], false)
		is.Equal(got["identifier"], p+".crud")
		is.Equal(got["description"], "Made by the CRUD test")
		is.Equal(got["category"], p)
		is.Equal(got["type"], "boolean")
		is.Equal(got["created_at"], created)
		is.True(toggleTimePattern.MatchString(got["updated_at"].(string)))
		is.True(got["updated_at"].(string) >= created)

		// Repeating the type is allowed; an explicit null default sets null.
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": id, "type": "boolean", "defaultValue": nil,
			"identifier": p + ".crud2", "description": "", "category": p + "-c"}).expect(200)
		got = e.do("GET", togglesBase+"/global/"+id, e.superKey, nil).expect(200).JSON()
		is.Equal(got["defaultValue"], nil)
		is.Equal(got["identifier"], p+".crud2")
		is.Equal(got["description"], "")
		is.Equal(got["category"], p+"-c")
		is.Equal(got["name"], "Renamed")

		// DELETE with a body, then with ?id=.
		is.Equal(e.do("DELETE", togglesBase+"/global", e.superKey, map[string]string{"id": id}).expect(200).JSON(), map[string]any{"id": id})
		e.do("GET", togglesBase+"/global/"+id, e.superKey, nil).expect(404)
		is.Equal(e.do("DELETE", togglesBase+"/global?id="+bare, e.superKey, nil).expect(200).JSON(), map[string]any{"id": bare})
		e.do("GET", togglesBase+"/global/"+bare, e.superKey, nil).expect(404)

		// A deleted toggle is gone for every route.
		e.do("DELETE", togglesBase+"/global?id="+id, e.superKey, nil).expect(404)
		e.do("DELETE", togglesBase+"/global", e.superKey, map[string]string{"id": bare}).expect(404)
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": id, "name": "zombie"}).expect(404)
		e.do("GET", togglesBase+"/global/"+id+"/override", e.superKey, nil).expect(404)
		e.do("PUT", togglesBase+"/overrides", e.superKey, map[string]any{"toggleId": id, "isOverride": true, "overrideValue": true}).expect(404)
		list := e.do("GET", togglesBase+"/global?search="+p, e.superKey, nil).expect(200).JSON()
		is.Equal(list["total"], float64(0))
		is.Equal(list["items"], []any{})

		// Unknown and malformed ids.
		unknown := store.NewID()
		e.do("GET", togglesBase+"/global/"+unknown, e.superKey, nil).expect(404)
		e.do("DELETE", togglesBase+"/global?id="+unknown, e.superKey, nil).expect(404)
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": unknown, "name": "x"}).expect(404)
		expectInvalid(t, e.do("DELETE", togglesBase+"/global", e.superKey, nil), "id")
		expectInvalid(t, e.do("DELETE", togglesBase+"/global", e.superKey, map[string]string{}), "id")
		expectInvalid(t, e.do("DELETE", togglesBase+"/global?id=not-a-uuid", e.superKey, nil), "id")
		expectInvalid(t, e.do("DELETE", togglesBase+"/global", e.superKey, map[string]string{"id": "not-a-uuid"}), "id")
		expectInvalid(t, e.do("DELETE", togglesBase+"/global", e.superKey, `{"id": 5}`), "id")
	})
}

func TestToggleList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		sortCat := p + "-sort"

		// Four toggles whose fields each sort in another order. In creation
		// order (so also createdAt order):
		specs := []map[string]any{
			{"identifier": p + ".c", "name": "Delta", "category": sortCat + "-z", "type": "boolean", "defaultValue": true},
			{"identifier": p + ".a", "name": "Charlie", "category": sortCat + "-x", "type": "string", "defaultValue": "s", "description": "Needle in a Haystack"},
			{"identifier": p + ".d", "name": "Bravo", "category": sortCat + "-y", "type": "number", "defaultValue": 3},
			{"identifier": p + ".b", "name": "Alpha", "category": sortCat + "-w", "type": "json", "defaultValue": map[string]any{"k": "v"}},
		}
		ids := make([]string, len(specs))
		for i, s := range specs {
			ids[i] = e.createToggle(s)
		}
		// updatedAt order: 2, 0, 3, 1.
		for _, i := range []int{2, 0, 3, 1} {
			e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": ids[i], "name": specs[i]["name"]}).expect(200)
		}
		umlaut := e.createToggle(map[string]any{"identifier": p + ".umlaut", "name": "Ärger im Büro", "category": p + "-misc", "type": "string"})

		list := func(query string) map[string]any {
			t.Helper()
			return e.do("GET", togglesBase+"/global?"+query, e.superKey, nil).expect(200).JSON()
		}

		// Envelope and paging (default pageSize 50).
		all := list("category=" + sortCat)
		is.Equal(all["total"], float64(4))
		is.Equal(all["totalPages"], float64(1))
		is.Equal(all["page"], float64(1))
		is.Equal(all["pageSize"], float64(50))
		is.Equal(toggleIDs(t, all), ids) // default order: createdAt ascending
		first := all["items"].([]any)[0].(map[string]any)
		for _, f := range []string{"id", "identifier", "name", "description", "category", "type", "defaultValue", "created_at", "updated_at"} {
			if _, ok := first[f]; !ok {
				t.Errorf("list item lacks %q: %v", f, first)
			}
		}
		is.Equal(first["defaultValue"], true)
		is.True(toggleTimePattern.MatchString(first["created_at"].(string)))
		is.True(toggleTimePattern.MatchString(first["updated_at"].(string)))

		page1 := list("category=" + sortCat + "&pageSize=3")
		is.Equal(page1["total"], float64(4))
		is.Equal(page1["totalPages"], float64(2))
		is.Equal(page1["pageSize"], float64(3))
		is.Equal(toggleIDs(t, page1), ids[:3])
		page2 := list("category=" + sortCat + "&pageSize=3&page=2")
		is.Equal(page2["page"], float64(2))
		is.Equal(toggleIDs(t, page2), ids[3:])
		page3 := list("category=" + sortCat + "&pageSize=3&page=3")
		is.Equal(page3["items"], []any{})
		is.Equal(page3["total"], float64(4))
		is.Equal(list("category=" + sortCat + "&pageSize=1000")["pageSize"], float64(200)) // clamped

		// Search: case-insensitive over identifier, name, description and
		// category, non-ASCII included.
		search := func(q string, want ...string) {
			t.Helper()
			got := toggleIDs(t, list("search="+q+"&category="+p))
			if !slices.Equal(got, want) {
				t.Errorf("search=%s: got %v, want %v", q, got, want)
			}
		}
		search("ärger", umlaut)
		search("ÄRGER", umlaut)
		search("%C3%A4RGER%20IM%20b%C3%9CRO", umlaut) // percent-encoded, mixed case
		search("büro", umlaut)
		search(strings.ToUpper(p)+".A", ids[1])       // identifier
		search("CHARLIE", ids[1])                     // name
		search("haystack", ids[1])                    // description
		search(strings.ToUpper(sortCat)+"-W", ids[3]) // category
		search("nothing-like-this")
		search("%25") // a literal %, not a wildcard
		search("_")   // a literal _, not a wildcard
		is.Equal(list("search=ärger&category=" + sortCat)["total"], float64(0))

		// Filters.
		filter := func(q string, want ...string) {
			t.Helper()
			got := toggleIDs(t, list(q))
			if !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", q, got, want)
			}
		}
		filter("category="+sortCat+"-y", ids[2])
		filter("category="+strings.ToUpper(sortCat)+"-Y", ids[2])
		filter("name=charlie&category="+p, ids[1])
		filter("name=ärger&category="+p, umlaut)
		filter("identifier="+p+".d", ids[2])
		filter("identifier="+p+"&type=json", ids[3])
		for i, typ := range []string{"boolean", "string", "number", "json"} {
			filter("type="+typ+"&category="+sortCat, ids[i])
		}
		filter("type=string&category="+p, ids[1], umlaut)

		// Sorting by every field, both ways.
		orders := map[string][]int{
			"createdAt":  {0, 1, 2, 3},
			"updatedAt":  {2, 0, 3, 1},
			"identifier": {1, 3, 0, 2}, // a b c d
			"name":       {3, 2, 1, 0}, // Alpha Bravo Charlie Delta
			"category":   {3, 1, 2, 0}, // w x y z
			"type":       {0, 3, 2, 1}, // boolean json number string
		}
		byID := slices.Clone(ids)
		slices.Sort(byID)
		for field, order := range orders {
			want := make([]string, len(order))
			for i, j := range order {
				want[i] = ids[j]
			}
			for _, dir := range []string{"asc", "desc", "DESC"} {
				exp := want
				if strings.EqualFold(dir, "desc") {
					exp = slices.Clone(want)
					slices.Reverse(exp)
				}
				filter("category="+sortCat+"&sortField="+field+"&sortDir="+dir, exp...)
			}
			filter("category="+sortCat+"&sortField="+field, want...) // asc by default
		}
		filter("category="+sortCat+"&sortField=id&sortDir=asc", byID...)
		rev := slices.Clone(byID)
		slices.Reverse(rev)
		filter("category="+sortCat+"&sortField=id&sortDir=desc", rev...)

		// Bad parameters name the field.
		for q, field := range map[string]string{
			"sortField=created_at": "sortField",
			"sortField=bogus":      "sortField",
			"sortDir=up":           "sortDir",
			"type=flag":            "type",
			"type=Boolean":         "type",
			"page=0":               "page",
			"page=abc":             "page",
			"page=-1":              "page",
			"pageSize=0":           "pageSize",
			"pageSize=many":        "pageSize",
		} {
			expectInvalid(t, e.do("GET", togglesBase+"/global?"+q, e.superKey, nil), field)
		}
	})
}

func TestToggleBadInput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		valid := func(extra map[string]any) map[string]any {
			body := map[string]any{"identifier": p + "." + randomHex(4), "name": "N", "type": "boolean"}
			for k, v := range extra {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			return body
		}
		create := func(body any) *response {
			t.Helper()
			return e.do("POST", togglesBase+"/global", e.superKey, body)
		}

		// Identifiers.
		for _, bad := range []string{"BadKey-123", "9invalid", "bad key", "bad/key", "_lead", "-lead", ".lead", "ünïcode", "upperCase",
			"a" + strings.Repeat("b", 100)} {
			expectInvalid(t, create(valid(map[string]any{"identifier": bad})), "identifier")
		}
		expectInvalid(t, create(valid(map[string]any{"identifier": nil})), "identifier")
		expectInvalid(t, create(valid(map[string]any{"identifier": ""})), "identifier")
		longest := p + "." + strings.Repeat("x", 100-len(p)-1)
		is.Equal(len(longest), 100)
		e.createToggle(valid(map[string]any{"identifier": longest}))
		// The identifier seen in the field: dots, dashes and digits. Tests
		// share one schema per test binary on PostgreSQL, so a repeated run
		// (-count) there needs its own copy.
		legacy := "qa.lock-round6.legacy-adapters-1"
		if db.Dialect().Name() != "sqlite" {
			legacy += "-" + p
		}
		legacyID := e.createToggle(valid(map[string]any{"identifier": legacy}))
		is.Equal(e.do("GET", togglesBase+"/global/"+legacyID, e.superKey, nil).expect(200).JSON()["identifier"], legacy)
		e.createToggle(valid(map[string]any{"identifier": p + "_under.score-9"}))

		// Required fields, types and lengths.
		expectInvalid(t, create(valid(map[string]any{"name": nil})), "name")
		expectInvalid(t, create(valid(map[string]any{"name": ""})), "name")
		expectInvalid(t, create(valid(map[string]any{"type": nil})), "type")
		expectInvalid(t, create(valid(map[string]any{"type": "flag"})), "type")
		expectInvalid(t, create(valid(map[string]any{"type": "BOOLEAN"})), "type")
		both := expectInvalid(t, create(map[string]any{"identifier": p + ".both"}), "name")
		is.True(both["details"].(map[string]any)["type"] != nil) // every problem at once
		expectInvalid(t, create(valid(map[string]any{"name": strings.Repeat("n", 201)})), "name")
		expectInvalid(t, create(valid(map[string]any{"description": strings.Repeat("d", 2001)})), "description")
		expectInvalid(t, create(valid(map[string]any{"category": strings.Repeat("c", 101)})), "category")

		// defaultValue must be of the type (null always is; json takes anything).
		for _, tc := range []struct {
			typ string
			bad []any
			ok  []any
		}{
			{"boolean", []any{"yes", 1, "true", []any{true}}, []any{true, false}},
			{"number", []any{"5", true, map[string]any{"n": 5}}, []any{5, -1.5, 0}},
			{"string", []any{5, true, []any{"a"}}, []any{"", "five"}},
		} {
			for _, v := range tc.bad {
				r := expectInvalid(t, create(valid(map[string]any{"type": tc.typ, "defaultValue": v})), "defaultValue")
				if len(r["details"].(map[string]any)) != 1 {
					t.Errorf("%s default %v: details %v name more than defaultValue", tc.typ, v, r["details"])
				}
			}
			for _, v := range append(tc.ok, nil) {
				body := valid(map[string]any{"type": tc.typ})
				body["defaultValue"] = v
				e.createToggle(body)
			}
		}
		for _, v := range []any{"text", 5, true, []any{1, "a"}, map[string]any{"a": map[string]any{"b": nil}}, nil} {
			body := valid(map[string]any{"type": "json"})
			body["defaultValue"] = v
			e.createToggle(body)
		}

		// Malformed bodies and wrong JSON types.
		for name, body := range map[string]string{
			"malformed":     `{"identifier": `,
			"syntax":        `{"identifier": "x",}`,
			"not an object": `[1, 2]`,
			"empty":         ``,
			"trailing data": `{"identifier":"` + p + `.trail","name":"N","type":"boolean"} {}`,
		} {
			r := create(body)
			if r.Status != 400 {
				t.Errorf("%s: status %d, want 400: %s", name, r.Status, r.Body)
				continue
			}
			if msg, _ := r.JSON()["error"].(string); msg == "" {
				t.Errorf("%s: no error message: %s", name, r.Body)
			}
		}
		expectInvalid(t, create(`{"identifier":"`+p+`.wrongtype","name":5,"type":"boolean"}`), "name")
		expectInvalid(t, create(`{"identifier":"`+p+`.wrongtype","name":"N","type":5}`), "type")
		expectInvalid(t, create(`{"identifier":7,"name":"N","type":"boolean"}`), "identifier")
		expectInvalid(t, create(`{"identifier":"`+p+`.wrongtype","name":"N","type":"boolean","description":["d"]}`), "description")
		is.Equal(e.do("GET", togglesBase+"/global?identifier="+p+".wrongtype", e.superKey, nil).expect(200).JSON()["total"], float64(0)) // nothing half-made
		is.Equal(e.do("GET", togglesBase+"/global?identifier="+p+".trail", e.superKey, nil).expect(200).JSON()["total"], float64(0))

		// Duplicate identifiers, also of a deleted toggle.
		dup := p + ".dup"
		dupID := e.createToggle(valid(map[string]any{"identifier": dup}))
		expectInvalid(t, create(valid(map[string]any{"identifier": dup})), "identifier")
		other := e.createToggle(valid(map[string]any{"identifier": p + ".other"}))
		expectInvalid(t, e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": other, "identifier": dup}), "identifier")
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": dupID, "identifier": dup}).expect(200) // its own is fine
		e.do("DELETE", togglesBase+"/global?id="+dupID, e.superKey, nil).expect(200)
		expectInvalid(t, create(valid(map[string]any{"identifier": dup})), "identifier")
		expectInvalid(t, e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": other, "identifier": dup}), "identifier")

		// Updates.
		put := func(body any) *response {
			t.Helper()
			return e.do("PUT", togglesBase+"/global", e.superKey, body)
		}
		expectInvalid(t, put(map[string]any{"type": "string", "name": "x"}), "id")
		expectInvalid(t, put(map[string]any{"id": "", "name": "x"}), "id")
		expectInvalid(t, put(map[string]any{"id": "not-a-uuid", "name": "x"}), "id")
		expectInvalid(t, put(`{"id": 12}`), "id")
		expectInvalid(t, put(map[string]any{"id": other, "type": "string"}), "type")
		expectInvalid(t, put(map[string]any{"id": other, "type": "flag"}), "type")
		expectInvalid(t, put(map[string]any{"id": other, "defaultValue": "yes"}), "defaultValue")
		expectInvalid(t, put(map[string]any{"id": other, "name": ""}), "name")
		expectInvalid(t, put(map[string]any{"id": other, "identifier": "Bad"}), "identifier")
		expectInvalid(t, put(`{"id":"`+other+`","name":5}`), "name")
		r := put(`{"id":"` + other + `",`)
		r.expect(400)
		got := e.do("GET", togglesBase+"/global/"+other, e.superKey, nil).expect(200).JSON()
		is.Equal(got["type"], "boolean") // nothing changed
		is.Equal(got["name"], "N")
		is.Equal(got["identifier"], p+".other")

		// Ids in the path.
		expectInvalid(t, e.do("GET", togglesBase+"/global/not-a-uuid", e.superKey, nil), "id")
		expectInvalid(t, e.do("GET", togglesBase+"/global/not-a-uuid/override", e.superKey, nil), "id")
	})
}

func TestToggleAuthorization(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		acme, other := e.newTenant("Acme "+p), e.newTenant("Other "+p)
		admin := e.newKey(acme, "*") // every feature, but no super admin
		id := e.createToggle(map[string]any{"identifier": p + ".bool", "name": "B", "type": "boolean", "defaultValue": true})
		for typ, v := range map[string]any{"string": "s", "number": 1, "json": []any{}} {
			e.createToggle(map[string]any{"identifier": p + "." + typ, "name": typ, "type": typ, "defaultValue": v})
		}

		admins := []struct {
			method, path string
			body         any
		}{
			{"GET", "/global", nil},
			{"GET", "/global/" + id, nil},
			{"POST", "/global", map[string]any{"identifier": p + ".evil", "name": "E", "type": "boolean"}},
			{"PUT", "/global", map[string]any{"id": id, "name": "hacked"}},
			{"DELETE", "/global", map[string]any{"id": id}},
			{"DELETE", "/global?id=" + id, nil},
			{"GET", "/global/" + id + "/override", nil},
			{"GET", "/overrides", nil},
			{"PUT", "/overrides", map[string]any{"toggleId": id, "isOverride": true, "overrideValue": false}},
		}
		checks := []string{"/check/boolean?identifier=" + p + ".bool", "/check/string?identifier=" + p + ".string",
			"/check/number?identifier=" + p + ".number", "/check/json?identifier=" + p + ".json"}

		for _, rt := range admins {
			r := e.do(rt.method, togglesBase+rt.path, "", rt.body)
			if r.Status != 401 {
				t.Errorf("%s %s without a key: status %d, want 401", rt.method, rt.path, r.Status)
			} else {
				is.Equal(r.JSON(), map[string]any{"error": "Unauthorized"})
			}
			r = e.do(rt.method, togglesBase+rt.path, admin, rt.body)
			if r.Status != 403 {
				t.Errorf("%s %s as a tenant admin: status %d, want 403: %s", rt.method, rt.path, r.Status, r.Body)
				continue
			}
			body := r.JSON()
			is.Equal(body["error"], "Forbidden")
			is.Equal(body["requiredRoles"], []any{identity.SuperAdminRole})
		}
		for _, path := range checks {
			e.do("GET", togglesBase+path, "", nil).expect(401)
			e.do("GET", togglesBase+path, "tk_00000000.nope", nil).expect(401)
			is.Equal(e.do("GET", togglesBase+path, admin, nil).expect(200).JSON()["tenantId"], acme.ID)
		}

		// Nothing the tenant admin sent took effect.
		got := e.do("GET", togglesBase+"/global/"+id, e.superKey, nil).expect(200).JSON()
		is.Equal(got["name"], "B")
		is.Equal(e.do("GET", togglesBase+"/global?identifier="+p+".evil", e.superKey, nil).expect(200).JSON()["total"], float64(0))
		is.Equal(e.checkToggle("boolean", p+".bool", admin).expect(200).JSON()["source"], "default")

		// The selected-tenant cookie is a super-admin privilege: a tenant
		// key still checks in its own tenant.
		r := e.send("GET", togglesBase+checks[0], nil, func(r *http.Request) {
			r.Header.Set("X-Api-Key", admin)
			r.AddCookie(&http.Cookie{Name: identity.SelectedTenantCookie, Value: other.ID})
		}).expect(200).JSON()
		is.Equal(r["tenantId"], acme.ID)
		// The super admin may check too, in its own or a selected tenant.
		is.Equal(e.superIn(other.ID, "GET", togglesBase+checks[0], nil).expect(200).JSON()["tenantId"], other.ID)
	})
}

func TestToggleOverridesAcrossTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		nameA, nameB := "Tenant A "+p, "Tenant B "+p
		a, b := e.newTenant(nameA), e.newTenant(nameB)
		keyA, keyB := e.newKey(a), e.newKey(b) // no features: checks need authentication only
		home := e.do("GET", "/api/auth/me", e.superKey, nil).expect(200).JSON()["tenantId"].(string)

		flag := p + ".flag"
		flagID := e.createToggle(map[string]any{"identifier": flag, "name": "Flag", "category": "cat-" + p, "type": "boolean", "defaultValue": true})
		text := p + ".text"
		textID := e.createToggle(map[string]any{"identifier": text, "name": "Text", "category": "cat-" + p, "type": "string", "defaultValue": "plain"})

		boolCheck := func(key, tenant string, enabled bool, source string) {
			t.Helper()
			got := e.checkToggle("boolean", flag, key).expect(200).JSON()
			want := map[string]any{"enabled": enabled, "source": source, "toggleId": flagID, "identifier": flag, "tenantId": tenant}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("check as tenant %s: got %v, want %v", tenant, got, want)
			}
		}
		setOverride := func(tenant string, body map[string]any) map[string]any {
			t.Helper()
			return e.superIn(tenant, "PUT", togglesBase+"/overrides", body).expect(200).JSON()
		}
		boolCheck(keyA, a.ID, true, "default")
		boolCheck(keyB, b.ID, true, "default")

		// A's override.
		r := setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": false})
		overrideID, _ := r["overrideToggleId"].(string)
		is.True(store.IsID(overrideID))
		is.Equal(r, map[string]any{"ok": true, "overrideToggleId": overrideID})
		boolCheck(keyA, a.ID, false, "override")
		boolCheck(keyB, b.ID, true, "default")
		is.Equal(e.checkToggle("boolean", flag, e.superKey).expect(200).JSON()["source"], "default") // the super admin's own tenant
		is.Equal(e.checkToggle("boolean", flag, e.superKey).JSON()["tenantId"], home)
		sel := e.superIn(a.ID, "GET", togglesBase+"/check/boolean?identifier="+flag, nil).expect(200).JSON()
		is.Equal(sel["enabled"], false)
		is.Equal(sel["tenantId"], a.ID)

		// The override as each tenant sees it.
		ov := e.superIn(a.ID, "GET", togglesBase+"/global/"+flagID+"/override", nil).expect(200).JSON()
		is.Equal(ov["id"], overrideID)
		is.Equal(ov["value"], false)
		is.Equal(ov["tenantName"], nameA)
		is.Equal(ov["tenantId"], a.ID)
		is.Equal(ov["toggleType"], "boolean")
		ov = e.superIn(b.ID, "GET", togglesBase+"/global/"+flagID+"/override", nil).expect(200).JSON()
		is.Equal(ov["id"], "") // B inherits the default
		is.Equal(ov["value"], true)
		is.Equal(ov["tenantName"], nameB)
		is.Equal(ov["tenantId"], b.ID)
		is.Equal(ov["toggleType"], "boolean")
		e.superIn(a.ID, "GET", togglesBase+"/global/"+store.NewID()+"/override", nil).expect(404)

		// The overrides list: one row per toggle for the selected tenant.
		overrides := func(tenant, query string) (map[string]any, []map[string]any) {
			t.Helper()
			body := e.superIn(tenant, "GET", togglesBase+"/overrides?"+query, nil).expect(200).JSON()
			var items []map[string]any
			for _, it := range body["items"].([]any) {
				items = append(items, it.(map[string]any))
			}
			return body, items
		}
		body, items := overrides(a.ID, "identifier="+p)
		is.Equal(body["total"], float64(2))
		is.Equal(body["page"], float64(1))
		is.Equal(body["pageSize"], float64(25))
		is.Equal(body["totalPages"], float64(1))
		is.Equal(body["isSuperAdmin"], true)
		is.Equal(len(items), 2)
		for k, v := range map[string]any{"id": overrideID, "toggleId": flagID, "tenantId": a.ID, "identifier": flag, "name": "Flag",
			"category": "cat-" + p, "tenantName": nameA, "isOverride": true, "value": false, "type": "boolean"} {
			if items[0][k] != v {
				t.Errorf("A's override row: %s = %v, want %v", k, items[0][k], v)
			}
		}
		for k, v := range map[string]any{"id": "", "toggleId": textID, "tenantId": a.ID, "identifier": text, "name": "Text",
			"category": "cat-" + p, "tenantName": nameA, "isOverride": false, "value": "plain", "type": "string"} {
			if items[1][k] != v {
				t.Errorf("A's inherited row: %s = %v, want %v", k, items[1][k], v)
			}
		}
		_, items = overrides(b.ID, "identifier="+p)
		is.Equal(len(items), 2)
		is.Equal(items[0]["toggleId"], flagID)
		is.Equal(items[0]["isOverride"], false)
		is.Equal(items[0]["value"], true)
		is.Equal(items[0]["tenantId"], b.ID)
		is.Equal(items[0]["tenantName"], nameB)
		_, items = overrides(a.ID, "identifier="+p+"&sortField=name&sortDir=desc")
		is.Equal([]any{items[0]["toggleId"], items[1]["toggleId"]}, []any{textID, flagID})
		_, items = overrides(a.ID, "name=FLAG&category=cat-"+p)
		is.Equal(len(items), 1)
		body, items = overrides(a.ID, "identifier="+p+"&pageSize=1&page=2")
		is.Equal(body["totalPages"], float64(2))
		is.Equal(items[0]["toggleId"], textID)
		expectInvalid(t, e.superIn(a.ID, "GET", togglesBase+"/overrides?sortField=type", nil), "sortField")
		expectInvalid(t, e.superIn(a.ID, "GET", togglesBase+"/overrides?page=0", nil), "page")

		// Changing the value keeps the override; null is a value too.
		r = setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": true})
		is.Equal(r["overrideToggleId"], overrideID)
		boolCheck(keyA, a.ID, true, "override")
		r = setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": true})
		is.Equal(r["overrideToggleId"], overrideID)
		boolCheck(keyA, a.ID, false, "override") // null counts as false
		ov = e.superIn(a.ID, "GET", togglesBase+"/global/"+flagID+"/override", nil).expect(200).JSON()
		v, ok := ov["value"]
		is.True(ok)
		is.Equal(v, nil)
		boolCheck(keyB, b.ID, true, "default")

		// B's own override does not touch A's.
		rb := setOverride(b.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": false})
		is.True(rb["overrideToggleId"] != overrideID)
		boolCheck(keyB, b.ID, false, "override")
		setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": true})
		boolCheck(keyA, a.ID, true, "override")
		boolCheck(keyB, b.ID, false, "override")

		// Removing A's override: back to the default, B keeps its own.
		r = setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": false})
		is.Equal(r, map[string]any{"ok": true, "overrideToggleId": nil})
		boolCheck(keyA, a.ID, true, "default")
		boolCheck(keyB, b.ID, false, "override")
		_, items = overrides(a.ID, "identifier="+flag)
		is.Equal(items[0]["isOverride"], false)
		is.Equal(items[0]["id"], "")
		is.Equal(setOverride(a.ID, map[string]any{"toggleId": flagID, "isOverride": false}), map[string]any{"ok": true, "overrideToggleId": nil})
		// A new default reaches A, not B.
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": flagID, "defaultValue": false}).expect(200)
		boolCheck(keyA, a.ID, false, "default")
		boolCheck(keyB, b.ID, false, "override")

		// A string override, through a tenant's check.
		setOverride(a.ID, map[string]any{"toggleId": textID, "isOverride": true, "overrideValue": "special"})
		is.Equal(e.checkToggle("string", text, keyA).expect(200).JSON()["value"], "special")
		is.Equal(e.checkToggle("string", text, keyB).expect(200).JSON()["value"], "plain")

		// Bad override requests.
		put := func(tenant string, body any) *response {
			t.Helper()
			return e.superIn(tenant, "PUT", togglesBase+"/overrides", body)
		}
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": "no"}), "overrideValue")
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": flagID, "isOverride": true, "overrideValue": 0}), "overrideValue")
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": textID, "isOverride": true, "overrideValue": 5}), "overrideValue")
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": flagID, "overrideValue": true}), "isOverride")
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": flagID, "isOverride": "yes"}), "isOverride")
		expectInvalid(t, put(a.ID, map[string]any{"isOverride": true}), "toggleId")
		expectInvalid(t, put(a.ID, map[string]any{"toggleId": "nope", "isOverride": true}), "toggleId")
		put(a.ID, `{"toggleId": `).expect(400)
		put(a.ID, map[string]any{"toggleId": store.NewID(), "isOverride": true, "overrideValue": true}).expect(404)
		put(a.ID, map[string]any{"toggleId": store.NewID(), "isOverride": false}).expect(404)
		boolCheck(keyA, a.ID, false, "default") // none of them took effect
		is.Equal(e.checkToggle("string", text, keyA).expect(200).JSON()["value"], "special")

		// A deleted toggle resolves for nobody, override or not.
		e.do("DELETE", togglesBase+"/global?id="+flagID, e.superKey, nil).expect(200)
		for _, key := range []string{keyA, keyB} {
			is.Equal(e.checkToggle("boolean", flag, key).expect(404).JSON()["code"], "MISSING_TOGGLE")
		}
		_, items = overrides(b.ID, "identifier="+p)
		is.Equal(len(items), 1) // only the text toggle is left
	})
}

func TestToggleChecks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		acme := e.newTenant("Acme " + p)
		key := e.newKey(acme)

		nullBool := e.createToggle(map[string]any{"identifier": p + ".null-bool", "name": "N", "type": "boolean"})
		onBool := e.createToggle(map[string]any{"identifier": p + ".on-bool", "name": "N", "type": "boolean", "defaultValue": true})
		str := e.createToggle(map[string]any{"identifier": p + ".str", "name": "N", "type": "string", "defaultValue": "hello <world> & \"you\""})
		num := e.createToggle(map[string]any{"identifier": p + ".num", "name": "N", "type": "number", "defaultValue": 42.5})
		js := e.createToggle(map[string]any{"identifier": p + ".json", "name": "N", "type": "json",
			"defaultValue": json.RawMessage(`{ "a" : [1, 2], "b": null, "c": {"d": "e"} }`)})
		nullStr := e.createToggle(map[string]any{"identifier": p + ".null-str", "name": "N", "type": "string"})
		nullJSON := e.createToggle(map[string]any{"identifier": p + ".null-json", "name": "N", "type": "json"})

		check := func(typ, identifier string) map[string]any {
			t.Helper()
			r := e.checkToggle(typ, identifier, key).expect(200)
			is.True(strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"))
			return r.JSON()
		}
		is.Equal(check("boolean", p+".null-bool"), map[string]any{"enabled": false, "source": "default", "toggleId": nullBool,
			"identifier": p + ".null-bool", "tenantId": acme.ID})
		is.Equal(check("boolean", p+".on-bool"), map[string]any{"enabled": true, "source": "default", "toggleId": onBool,
			"identifier": p + ".on-bool", "tenantId": acme.ID})
		is.Equal(check("string", p+".str"), map[string]any{"valueType": "string", "value": "hello <world> & \"you\"", "source": "default",
			"toggleId": str, "identifier": p + ".str", "tenantId": acme.ID})
		is.Equal(check("number", p+".num"), map[string]any{"valueType": "number", "value": 42.5, "source": "default",
			"toggleId": num, "identifier": p + ".num", "tenantId": acme.ID})
		is.Equal(check("json", p+".json"), map[string]any{"valueType": "json",
			"value":  map[string]any{"a": []any{1.0, 2.0}, "b": nil, "c": map[string]any{"d": "e"}},
			"source": "default", "toggleId": js, "identifier": p + ".json", "tenantId": acme.ID})
		is.Equal(check("string", p+".null-str"), map[string]any{"valueType": "string", "value": nil, "source": "default",
			"toggleId": nullStr, "identifier": p + ".null-str", "tenantId": acme.ID})
		is.Equal(check("json", p+".null-json"), map[string]any{"valueType": "json", "value": nil, "source": "default",
			"toggleId": nullJSON, "identifier": p + ".null-json", "tenantId": acme.ID})

		// Errors.
		for _, typ := range []string{"boolean", "string", "number", "json"} {
			for _, path := range []string{"/check/" + typ, "/check/" + typ + "?identifier=", "/check/" + typ + "?other=x"} {
				is.Equal(e.do("GET", togglesBase+path, key, nil).expect(400).JSON(), map[string]any{"error": "Missing required parameter: identifier"})
			}
			missing := e.checkToggle(typ, p+".nope", key).expect(404).JSON()
			is.Equal(missing["code"], "MISSING_TOGGLE")
			is.True(strings.Contains(missing["error"].(string), p+".nope"))
			is.Equal(len(missing), 2)
		}
		for _, tc := range []struct{ ask, identifier string }{
			{"boolean", p + ".str"}, {"string", p + ".on-bool"}, {"number", p + ".json"}, {"json", p + ".num"}, {"boolean", p + ".null-json"},
		} {
			r := e.checkToggle(tc.ask, tc.identifier, key).expect(400).JSON()
			is.Equal(r["code"], "TYPE_MISMATCH")
			is.True(r["error"].(string) != "")
			is.Equal(len(r), 2)
		}
		e.do("GET", togglesBase+"/check/float?identifier="+p+".num", key, nil).expect(404)
		// Identifiers are exact: no case folding, no prefix match.
		e.checkToggle("boolean", strings.ToUpper(p)+".ON-BOOL", key).expect(404)
		e.checkToggle("boolean", p+".on", key).expect(404)

		// Every change made through the API shows in the very next check.
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": str, "defaultValue": "bye"}).expect(200)
		is.Equal(check("string", p+".str")["value"], "bye")
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": num, "defaultValue": -1e3}).expect(200)
		is.Equal(check("number", p+".num")["value"], -1000.0)
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": onBool, "defaultValue": false}).expect(200)
		is.Equal(check("boolean", p+".on-bool")["enabled"], false)
		e.superIn(acme.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": onBool, "isOverride": true, "overrideValue": true}).expect(200)
		got := check("boolean", p+".on-bool")
		is.Equal(got["enabled"], true)
		is.Equal(got["source"], "override")
		e.superIn(acme.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": js, "isOverride": true, "overrideValue": []any{"x"}}).expect(200)
		got = check("json", p+".json")
		is.Equal(got["value"], []any{"x"})
		is.Equal(got["source"], "override")
		e.superIn(acme.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": onBool, "isOverride": false}).expect(200)
		got = check("boolean", p+".on-bool")
		is.Equal(got["enabled"], false)
		is.Equal(got["source"], "default")
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": onBool, "identifier": p + ".renamed"}).expect(200)
		e.checkToggle("boolean", p+".on-bool", key).expect(404)
		is.Equal(check("boolean", p+".renamed")["toggleId"], onBool)
		fresh := e.createToggle(map[string]any{"identifier": p + ".fresh", "name": "N", "type": "number", "defaultValue": 7})
		is.Equal(check("number", p+".fresh")["toggleId"], fresh)
		e.do("DELETE", togglesBase+"/global", e.superKey, map[string]string{"id": fresh}).expect(200)
		is.Equal(e.checkToggle("number", p+".fresh", key).expect(404).JSON()["code"], "MISSING_TOGGLE")
	})
}

func TestToggleEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		ctx := t.Context()
		p := togglePrefix()
		a, b := e.newTenant("A "+p), e.newTenant("B "+p)

		id := e.createToggle(map[string]any{"identifier": p + ".ev", "name": "Ev", "type": "boolean", "defaultValue": true})
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": id, "name": "Ev2"}).expect(200)
		e.superIn(a.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": true, "overrideValue": false}).expect(200)
		e.superIn(a.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": false}).expect(200)
		e.do("DELETE", togglesBase+"/global?id="+id, e.superKey, nil).expect(200)
		// A refused change emits nothing.
		e.do("PUT", togglesBase+"/global", e.superKey, map[string]any{"id": id, "name": "Ev3"}).expect(404)
		e.superIn(a.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": true}).expect(404)

		// Toggle events are global (no tenant), the toggle as data.
		rows, err := db.Query(ctx, `SELECT type, tenant_id, data FROM store_events WHERE type LIKE 'feature_toggles.toggle.%' ORDER BY id`)
		is.NoErr(err)
		var types []string
		var names []any
		for rows.Next() {
			var typ string
			var tenant *string
			var data []byte
			is.NoErr(rows.Scan(&typ, &tenant, &data))
			var d map[string]any
			is.NoErr(json.Unmarshal(data, &d))
			if d["id"] != id {
				continue // another test's toggle
			}
			is.Equal(tenant, (*string)(nil))
			is.Equal(d["identifier"], p+".ev")
			types = append(types, typ)
			names = append(names, d["name"])
		}
		is.NoErr(rows.Err())
		is.NoErr(rows.Close())
		is.Equal(types, []string{toggles.EventToggleCreated, toggles.EventToggleUpdated, toggles.EventToggleDeleted})
		is.Equal(types, []string{"feature_toggles.toggle.created", "feature_toggles.toggle.updated", "feature_toggles.toggle.deleted"})
		is.Equal(names, []any{"Ev", "Ev2", "Ev2"})

		// Override events are the tenant's.
		evs, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: a.ID, Type: "feature_toggles.override.updated"})
		is.NoErr(err)
		is.Equal(len(evs), 2)
		var set, removed map[string]any
		is.NoErr(json.Unmarshal(evs[0].Data, &set))
		is.NoErr(json.Unmarshal(evs[1].Data, &removed))
		is.Equal(evs[0].TenantID, a.ID)
		is.Equal(set, map[string]any{"toggleId": id, "identifier": p + ".ev", "tenantId": a.ID, "isOverride": true, "value": false})
		is.Equal(removed, map[string]any{"toggleId": id, "identifier": p + ".ev", "tenantId": a.ID, "isOverride": false})
		evs, err = store.ListEvents(ctx, db, store.EventFilter{TenantID: b.ID})
		is.NoErr(err)
		for _, ev := range evs {
			if strings.HasPrefix(ev.Type, "feature_toggles.") {
				t.Errorf("tenant B got toggle event %s", ev.Type)
			}
		}
	})
}

// TestToggleOverrideIsolationUnderLoad checks tenants A and B in parallel
// while the super admin flips A's override: B never sees A's value, every
// answer names the caller's tenant, and the flipping request's next check
// already shows the flip.
func TestToggleOverrideIsolationUnderLoad(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		p := togglePrefix()
		a, b := e.newTenant("A "+p), e.newTenant("B "+p)
		keyA, keyB := e.newKey(a), e.newKey(b)
		flag := p + ".flag"
		id := e.createToggle(map[string]any{"identifier": flag, "name": "F", "type": "boolean", "defaultValue": true})

		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan string, 100)
		for _, c := range []struct{ key, tenant string }{{keyA, a.ID}, {keyB, b.ID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					r := e.checkToggle("boolean", flag, c.key)
					var got map[string]any
					if r.Status != 200 || json.Unmarshal(r.Body, &got) != nil {
						errs <- fmt.Sprintf("tenant %s: status %d %s", c.tenant, r.Status, r.Body)
						return
					}
					switch {
					case got["tenantId"] != c.tenant:
						errs <- fmt.Sprintf("tenant %s got %v", c.tenant, got)
					case c.tenant == b.ID && (got["source"] != "default" || got["enabled"] != true):
						errs <- fmt.Sprintf("B saw A's override: %v", got)
					case c.tenant == a.ID && got["source"] == "override" && got["enabled"] != false:
						errs <- fmt.Sprintf("A's override has the wrong value: %v", got)
					default:
						continue
					}
					return
				}
			}()
		}
		for i := range 20 {
			on := i%2 == 0
			e.superIn(a.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": on, "overrideValue": false}).expect(200)
			got := e.checkToggle("boolean", flag, keyA).expect(200).JSON()
			if want := map[bool]string{true: "override", false: "default"}[on]; got["source"] != want {
				t.Errorf("flip %d: the next check shows %v, want source %s", i, got, want)
			}
		}
		stop.Store(true)
		wg.Wait()
		close(errs)
		for msg := range errs {
			t.Error(msg)
		}
	})
}
