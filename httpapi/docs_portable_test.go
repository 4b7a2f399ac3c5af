package httpapi

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestOpenAPIDocumentIsPortable: the served document uses only the forms
// that client generators (oapi-codegen, ogen, openapi-typescript) and
// linters (Redocly, Spectral) read: no boolean schemas, no numeric
// exclusive bounds, one concrete media type per request form, security
// on every operation ([] on public ones), a description on every
// operation, and one server, the base path, that the paths are relative
// to. With TENANTKIT_OPENAPI_OUT set it also writes the document there,
// for scripts/openapi-check.sh to run the generators and linters on.
func TestOpenAPIDocumentIsPortable(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, storetest.SQLite(t))
	body := e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body
	if out := os.Getenv("TENANTKIT_OPENAPI_OUT"); out != "" {
		if err := os.WriteFile(out, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var doc struct {
		Servers    []struct{ URL string }               `json:"servers"`
		Tags       []struct{ Name, Description string } `json:"tags"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/api" {
		t.Errorf("servers %+v, want one: /api", doc.Servers)
	}
	for _, tag := range doc.Tags {
		if strings.TrimSpace(tag.Description) == "" {
			t.Errorf("tag %q has no description (areaDescriptions)", tag.Name)
		}
	}
	for name, s := range doc.Components.Schemas {
		checkPortableSchema(t, "components/schemas/"+name, s)
	}
	a := &api{kit: e.kit.Kit, opts: Options{Auth: e.auth}, base: "/api"}
	public := map[string]bool{}
	for _, rt := range a.routes() {
		public[strings.ToLower(rt.Method)+" "+rt.DocPath()] = rt.Access.Public
	}
	for p, item := range doc.Paths {
		if strings.HasPrefix(p, "/api/") {
			t.Errorf("path %s repeats the server's base path", p)
		}
		for method, op := range item {
			where := method + " " + p
			if d, _ := op["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s has no description", where)
			}
			sec, ok := op["security"].([]any)
			if !ok {
				t.Errorf("%s declares no security", where)
			} else if public[where] != (len(sec) == 0) {
				t.Errorf("%s: public %v but security %v", where, public[where], sec)
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				for ct, mt := range rb["content"].(map[string]any) {
					if strings.Contains(ct, "*") {
						t.Errorf("%s: request media type %s is a range", where, ct)
					}
					checkPortableSchema(t, where+" request "+ct, mt.(map[string]any)["schema"])
				}
			}
			for status, r := range op["responses"].(map[string]any) {
				content, _ := r.(map[string]any)["content"].(map[string]any)
				for ct, mt := range content {
					checkPortableSchema(t, where+" "+status+" "+ct, mt.(map[string]any)["schema"])
				}
			}
		}
	}

	// Mounted elsewhere, the server is that base path.
	h := mustNew(e.kit, Options{Auth: e.auth, BasePath: "/tenantkit/v1/"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/tenantkit/v1/docs/openapi", nil))
	var other struct {
		Servers []struct{ URL string }    `json:"servers"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &other); err != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(other.Servers) != 1 || other.Servers[0].URL != "/tenantkit/v1" || other.Paths["/docs/openapi"] == nil {
		t.Errorf("under /tenantkit/v1: servers %+v, /docs/openapi documented: %v", other.Servers, other.Paths["/docs/openapi"] != nil)
	}
}

// checkPortableSchema fails on a boolean schema (additionalProperties:
// false aside) or an exclusive bound anywhere in s.
func checkPortableSchema(t *testing.T, where string, s any) {
	t.Helper()
	switch v := s.(type) {
	case bool:
		t.Errorf("%s: boolean schema %v", where, v)
	case map[string]any:
		for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			if _, ok := v[k]; ok {
				t.Errorf("%s: %s", where, k)
			}
		}
		for k, sub := range v {
			switch k {
			case "properties", "patternProperties":
				for name, p := range sub.(map[string]any) {
					checkPortableSchema(t, where+"/"+name, p)
				}
			case "items", "not", "contains", "propertyNames":
				checkPortableSchema(t, where+"/"+k, sub)
			case "additionalProperties":
				if sub != false {
					checkPortableSchema(t, where+"/"+k, sub)
				}
			case "anyOf", "oneOf", "allOf", "prefixItems":
				for _, b := range sub.([]any) {
					checkPortableSchema(t, where+"/"+k, b)
				}
			}
		}
	}
}

// TestOpenAPIServerBehindStripPrefix: a host that mounts the handler
// under a prefix with http.StripPrefix gets a document whose server is
// that prefix followed by the base path; requested directly, the server
// is the base path.
func TestOpenAPIServerBehindStripPrefix(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, storetest.SQLite(t))
	server := func(h http.Handler, target string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		var doc struct {
			Servers []struct{ URL string } `json:"servers"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Servers) != 1 {
			t.Fatalf("GET %s: %d %.200s", target, rec.Code, rec.Body)
		}
		return doc.Servers[0].URL
	}
	for _, c := range []struct{ base, prefix, want string }{
		{"/", "/tenantkit", "/tenantkit"},
		{"/api", "/tenantkit", "/tenantkit/api"},
		{"/api", "/a/b", "/a/b/api"},
	} {
		h := mustNew(e.kit, Options{Auth: e.auth, BasePath: c.base})
		docPath := strings.TrimSuffix(c.base, "/") + "/docs/openapi"
		if got := server(http.StripPrefix(c.prefix, h), c.prefix+docPath); got != c.want {
			t.Errorf("base %s under %s: server %s, want %s", c.base, c.prefix, got, c.want)
		}
		if got, want := server(h, docPath), cmp.Or(strings.TrimSuffix(c.base, "/"), "/"); got != want {
			t.Errorf("base %s unmounted: server %s, want %s", c.base, got, want)
		}
	}
}

// TestOpenAPILicense: Options.DocsLicense is the document's
// info.license (an SPDX identifier winning over a URL); without a name
// the document states none.
func TestOpenAPILicense(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, storetest.SQLite(t))
	license := func(l DocsLicense) map[string]any {
		t.Helper()
		rec := httptest.NewRecorder()
		mustNew(e.kit, Options{Auth: e.auth, DocsLicense: l}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/docs/openapi", nil))
		var doc struct {
			Info struct {
				License map[string]any `json:"license"`
			} `json:"info"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%d %.200s", rec.Code, rec.Body)
		}
		return doc.Info.License
	}
	if got := license(DocsLicense{}); got != nil {
		t.Errorf("no license set: %v", got)
	}
	if got := license(DocsLicense{Name: "Apache 2.0", Identifier: "Apache-2.0", URL: "https://example.com/l"}); !maps.Equal(got, map[string]any{"name": "Apache 2.0", "identifier": "Apache-2.0"}) {
		t.Errorf("identifier and URL: %v", got)
	}
	if got := license(DocsLicense{Name: "Ours", URL: "https://example.com/l"}); !maps.Equal(got, map[string]any{"name": "Ours", "url": "https://example.com/l"}) {
		t.Errorf("URL: %v", got)
	}
}
