package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// docOperation is the part of an operation the tests read.
type docOperation struct {
	Summary          string                     `json:"summary"`
	Tags             []string                   `json:"tags"`
	Security         []map[string][]string      `json:"security"`
	RequiredFeatures []string                   `json:"x-required-features"`
	Responses        map[string]json.RawMessage `json:"responses"`
	Parameters       []struct {
		Name, In string
	} `json:"parameters"`
}

func fetchDocument(t *testing.T, e *testEnv) map[string]map[string]docOperation {
	t.Helper()
	r := e.do("GET", "/api/docs/openapi", "", nil).expect(200)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	var doc struct {
		OpenAPI string                             `json:"openapi"`
		Servers []struct{ URL string }             `json:"servers"`
		Paths   map[string]map[string]docOperation `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	// The paths are relative to the one server, the handler's base path.
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/api" {
		t.Fatalf("servers %+v, want one: /api", doc.Servers)
	}
	paths := map[string]map[string]docOperation{}
	for p, item := range doc.Paths {
		paths[doc.Servers[0].URL+p] = item
	}
	return paths
}

// TestOpenAPIDocumentIsValid: the served document validates as OpenAPI
// 3.1 against the specification's schema (libopenapi-validator) and
// builds into a model (libopenapi).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newTestEnv(t, storetest.SQLite(t))
	body := e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body
	doc, err := libopenapi.NewDocument(body)
	is.NoErr(err)
	is.Equal(doc.GetVersion(), "3.1.0")
	_, err = doc.BuildV3Model()
	is.NoErr(err)
	v, errs := validator.NewValidator(doc)
	is.Equal(len(errs), 0)
	ok, verrs := v.ValidateDocument()
	for _, ve := range verrs {
		t.Errorf("%s: %s", ve.Message, ve.Reason)
		for _, f := range ve.SchemaValidationErrors {
			t.Errorf("  %s: %s", f.FieldPath, f.Reason)
		}
	}
	is.True(ok)
}

// TestOpenAPIListsExactlyTheRouteTable: every route of the table is in
// the document with its method, path parameters, credentials and
// features, and the document lists nothing that is not served.
func TestOpenAPIListsExactlyTheRouteTable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		paths := fetchDocument(t, e)
		a := &api{kit: e.kit.Kit, opts: Options{Auth: e.auth}, base: "/api"}
		want := map[string]apikit.Route{}
		for _, rt := range a.routes() {
			want[strings.ToLower(rt.Method)+" /api"+rt.DocPath()] = rt
		}
		var got []string
		for p, item := range paths {
			for method, op := range item {
				key := method + " " + p
				got = append(got, key)
				rt, ok := want[key]
				if !ok {
					t.Errorf("the document lists %s, which is not served", key)
					continue
				}
				is.Equal(op.Summary, rt.Doc.Summary)
				is.Equal(op.Tags, []string{rt.Doc.Area})
				if rt.Access.Public {
					is.Equal(len(op.Security), 0)         // public: no security requirement
					is.Equal(len(op.RequiredFeatures), 0) // and no features
				} else {
					is.True(len(op.Security) >= 3)
					is.Equal(op.RequiredFeatures, rt.Access.Features)
					is.True(op.Responses["401"] != nil)
					is.True(op.Responses["403"] != nil)
				}
				for _, name := range apikit.PathParams(rt.DocPath()) {
					is.True(slices.ContainsFunc(op.Parameters, func(p struct{ Name, In string }) bool {
						return p.Name == name && p.In == "path"
					}))
				}
				if rt.Limits.RateLimit != nil {
					is.True(op.Responses["429"] != nil)
				}
			}
		}
		sort.Strings(got)
		for key := range want {
			if !slices.Contains(got, key) {
				t.Errorf("route %s is served but not in the document", key)
			}
		}
		is.Equal(len(got), len(want))
	})
}

// TestDocsRoutes: the three documentation routes answer with their types
// without a credential; DocsRequireAuth makes them need one.
func TestDocsRoutes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newTestEnv(t, storetest.SQLite(t))
	md := e.do("GET", "/api/docs/markdown", "", nil).expect(200)
	is.True(strings.HasPrefix(md.Header.Get("Content-Type"), "text/markdown"))
	text := string(md.Body)
	for _, want := range []string{"## Feature toggles", "## Business rules", "## Custom entities", "## Data sync",
		"### POST /api/business_rules/rules", "`business_rules.rules.create`", "cf_<key>In=a,b", "curl -X POST 'http://localhost:8080/api/business_rules/rules'"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}

	a := &api{kit: e.kit.Kit, opts: Options{Auth: e.auth}, base: "/api"}
	for _, rt := range a.routes() { // every route, with its features and an example request
		i := strings.Index(text, "\n### "+rt.Method+" /api"+rt.DocPath()+"\n")
		if i < 0 {
			t.Errorf("the Markdown has no section for %s %s", rt.Method, rt.DocPath())
			continue
		}
		section := text[i+1:]
		if j := strings.Index(section[4:], "\n### "); j >= 0 {
			section = section[:j+4]
		}
		if !strings.Contains(section, "curl -X "+rt.Method+" 'http://localhost:8080/api") {
			t.Errorf("the Markdown's %s %s has no example request", rt.Method, rt.DocPath())
		}
		for _, f := range rt.Access.Features {
			if !strings.Contains(section, "`"+f+"`") {
				t.Errorf("the Markdown's %s %s does not name feature %s", rt.Method, rt.DocPath(), f)
			}
		}
	}

	// Another document (its docs routes need a credential): sent without
	// the contract check, which reads the default one.
	locked := mustNew(e.kit, Options{Auth: e.auth, DocsRequireAuth: true})
	for _, p := range []string{"/api/docs/openapi", "/api/docs/markdown", "/api/docs/api"} {
		for key, want := range map[string]int{"": http.StatusUnauthorized, e.superKey: http.StatusOK} {
			req := httptest.NewRequest("GET", p, nil)
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			rec := httptest.NewRecorder()
			locked.ServeHTTP(rec, req)
			is.Equal(rec.Code, want)
		}
	}
}

// TestHostRoutes: a route the host adds through Options.Routes is served
// behind the chain (credential, features) and is in the document.
func TestHostRoutes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newTestEnv(t, storetest.SQLite(t))
	type report struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	e.handler = mustNew(e.kit, Options{Auth: e.auth, Routes: []Route{{
		Method: "GET", Path: "/reports/{name}", Summary: "A report", Area: "Reports", Features: []string{"reports.view"},
		Query: []apikit.Param{{Name: "limit", Type: "integer"}}, Response: report{},
		Handler: func(w http.ResponseWriter, r *http.Request) error {
			if r.PathValue("name") == "missing" {
				return store.ErrNotFound
			}
			return json.NewEncoder(w).Encode(report{Name: r.PathValue("name"), Count: 3})
		},
	}}})
	e.do("GET", "/api/reports/sales", "", nil).expect(http.StatusUnauthorized)
	tn := e.newTenant("Host")
	e.do("GET", "/api/reports/sales", e.newKey(tn, "other.feature"), nil).expect(http.StatusForbidden)
	key := e.newKey(tn, "reports.view")
	is.Equal(e.do("GET", "/api/reports/sales", key, nil).expect(200).JSON()["count"], 3.0)
	e.do("GET", "/api/reports/missing", key, nil).expect(404)

	op := fetchDocument(t, e)["/api/reports/{name}"]["get"]
	is.Equal(op.Summary, "A report")
	is.Equal(op.Tags, []string{"Reports"})
	is.Equal(op.RequiredFeatures, []string{"reports.view"})
}

// TestDocsExplorerAssets: the page and its files answer with their types;
// an unknown file is a 404.
func TestDocsExplorerAssets(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newTestEnv(t, storetest.SQLite(t))
	page := e.do("GET", "/api/docs/api", "", nil).expect(200)
	is.True(strings.HasPrefix(page.Header.Get("Content-Type"), "text/html"))
	is.True(page.Header.Get("Content-Security-Policy") != "")
	is.True(strings.Contains(string(page.Body), "/api/docs/openapi"))
	is.True(len(explorer.Assets()) >= 2) // Swagger UI's script and style at least
	for _, name := range explorer.Assets() {
		r := e.do("GET", "/api/docs/api/assets/"+name, "", nil).expect(200)
		is.True(r.Header.Get("Content-Type") != "")
	}
	e.do("GET", "/api/docs/api/assets/nope.js", "", nil).expect(404)
}

// TestRequestExamplesSucceed: the documented example bodies, sent in
// order to a fresh server by its super admin, all succeed, and each is in
// the document as its route's request example (the contract check
// validates each request and answer against the document).
func TestRequestExamplesSucceed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		paths := map[string]map[string]json.RawMessage{}
		if err := json.Unmarshal(e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body, &struct {
			Paths *map[string]map[string]json.RawMessage `json:"paths"`
		}{&paths}); err != nil {
			t.Fatal(err)
		}
		for _, ex := range requestExamples {
			method, path, _ := strings.Cut(ex.route, " ")
			if r := e.do(method, "/api"+path, e.superKey, ex.body); r.Status >= 300 {
				t.Errorf("the example of %s answered %d: %s", ex.route, r.Status, r.Body)
			}
			var op struct {
				RequestBody struct {
					Content map[string]struct {
						Example any `json:"example"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			// The document's paths are relative to its server, /api.
			if err := json.Unmarshal(paths[path][strings.ToLower(method)], &op); err != nil {
				t.Fatal(err)
			}
			if op.RequestBody.Content["application/json"].Example == nil {
				t.Errorf("the document has no request example for %s", ex.route)
			}
		}
	})
}
