package httpapi

import (
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestDocsAreas: the explorer page offers one document per area of the
// API (GET /docs/openapi?tag=<area>); together they hold every operation
// of the whole document, each area only its own, each part is a valid
// OpenAPI 3.1 document, and each is small enough for Swagger UI to render
// (explorer.MaxOperations) even though the whole is not. An unknown area
// answers 400 naming tag; the whole document is unchanged by the parts.
func TestDocsAreas(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, storetest.SQLite(t))
	whole := e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body
	all := docOperations(t, whole)
	t.Logf("the document has %d operations", len(all))

	page := string(e.do("GET", "/api/docs/api", "", nil).expect(200).Body)
	options := regexp.MustCompile(`<option value="([^"]*)" data-area="([^"]*)">`).FindAllStringSubmatch(page, -1)
	areas, err := explorer.Areas(whole)
	if err != nil {
		t.Fatal(err)
	}
	if len(options) != len(areas) || len(areas) < 2 {
		t.Fatalf("the page offers %d areas, the document has %d: %v", len(options), len(areas), areas)
	}
	seen := map[string]bool{}
	for i, o := range options {
		link, name := html.UnescapeString(o[1]), html.UnescapeString(o[2])
		if name != areas[i] || link != "/api/docs/openapi?tag="+url.QueryEscape(name) {
			t.Errorf("option %d: %q at %q, want %q", i, name, link, areas[i])
		}
		r := e.do("GET", link, "", nil).expect(200)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", link, ct)
		}
		part := docOperations(t, r.Body)
		if len(part) == 0 || len(part) > explorer.MaxOperations {
			t.Errorf("%s has %d operations, want 1 to %d", link, len(part), explorer.MaxOperations)
		}
		for key, tags := range part {
			if !slices.Contains(tags, name) {
				t.Errorf("%s lists %s, tagged %v", link, key, tags)
			}
			if _, ok := all[key]; !ok {
				t.Errorf("%s lists %s, which the whole document does not", link, key)
			}
			seen[key] = true
		}
		validDocument(t, link, r.Body)
		// Served twice (the second from the cache): the same bytes.
		if again := e.do("GET", link, "", nil).expect(200).Body; string(again) != string(r.Body) {
			t.Errorf("%s answered other bytes the second time", link)
		}
	}
	for key := range all {
		if !seen[key] {
			t.Errorf("no area of the explorer shows %s", key)
		}
	}
	if len(all) > explorer.MaxOperations && len(seen) != len(all) {
		t.Errorf("the areas show %d of %d operations", len(seen), len(all))
	}

	for _, bad := range []string{"/api/docs/openapi?tag=", "/api/docs/openapi?tag=Nope", "/api/docs/openapi?tag=identity"} {
		r := e.do("GET", bad, "", nil).expect(400)
		if !strings.Contains(string(r.Body), `"tag"`) {
			t.Errorf("%s: %s does not name tag", bad, r.Body)
		}
	}
	if again := e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body; string(again) != string(whole) {
		t.Error("the whole document changed after its parts were served")
	}
}

// docOperations maps each operation of an OpenAPI document ("get
// /toggles") to its tags.
func docOperations(t *testing.T, body []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for p, item := range doc.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				var op struct{ Tags []string }
				if err := json.Unmarshal(raw, &op); err != nil {
					t.Fatal(err)
				}
				ops[method+" "+p] = op.Tags
			}
		}
	}
	return ops
}

// validDocument fails t unless body is a valid OpenAPI 3.1 document.
func validDocument(t *testing.T, name string, body []byte) {
	t.Helper()
	doc, err := libopenapi.NewDocument(body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", name, errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, ve := range verrs {
			t.Errorf("%s: %s: %s", name, ve.Message, ve.Reason)
		}
	}
}
