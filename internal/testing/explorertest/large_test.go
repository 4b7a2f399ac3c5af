package explorertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
	"github.com/tenantkit/tenantkit/internal/testing/explorertest"
)

// largeDocument is an OpenAPI 3.1 document of tags × perTag operations,
// each tag's operations on their own paths, get and post on each.
func largeDocument(tags, perTag int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.1.0","info":{"title":"Large sample","version":"1"},"servers":[{"url":"/api"}],"tags":[`)
	for k := range tags {
		fmt.Fprintf(&b, `%s{"name":"Area %d","description":"Operations of area %d."}`, map[bool]string{true: ",", false: ""}[k > 0], k, k)
	}
	b.WriteString(`],"paths":{`)
	sep := ""
	for k := range tags {
		for i := 0; i < perTag; i += 2 {
			fmt.Fprintf(&b, `%s"/area%d/things%03d":{`, sep, k, i)
			sep = ","
			for j, m := range []string{"get", "post"} {
				if i+j >= perTag {
					break
				}
				fmt.Fprintf(&b, `%s"%s":{"tags":["Area %d"],"operationId":"a%dt%dm%s","summary":"Thing %d of area %d",`+
					`"responses":{"200":{"description":"The thing","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing%d"}}}}}}`,
					map[bool]string{true: ",", false: ""}[j > 0], m, k, k, i, m, i+j, k, k)
			}
			b.WriteString("}")
		}
	}
	b.WriteString(`},"components":{"schemas":{`)
	for k := range tags {
		fmt.Fprintf(&b, `%s"Thing%d":{"type":"object","properties":{"id":{"type":"string"}}}`, map[bool]string{true: ",", false: ""}[k > 0], k)
	}
	b.WriteString(`}}}`)
	return []byte(b.String())
}

// newDocsServer serves the explorer over an OpenAPI document as the API
// does: the page at /api/docs/api (with a picker of doc's areas when
// byArea), its assets under /api/docs/api/assets/, the whole document at
// /api/docs/openapi and each area's at ?tag=.
func newDocsServer(t *testing.T, doc []byte, byArea bool) *httptest.Server {
	t.Helper()
	names, err := explorer.Areas(doc)
	if err != nil {
		t.Fatal(err)
	}
	var areas []explorer.Area
	if byArea {
		for _, name := range names {
			areas = append(areas, explorer.Area{Name: name, URL: "/api/docs/openapi?tag=" + url.QueryEscape(name)})
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/docs/api", func(w http.ResponseWriter, r *http.Request) {
		explorer.ServePage(w, r, "/api/docs/openapi", "/api/docs/api/assets/", areas...)
	})
	mux.HandleFunc("GET /api/docs/api/assets/{name}", func(w http.ResponseWriter, r *http.Request) {
		if !explorer.ServeAsset(w, r, r.PathValue("name")) {
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("GET /api/docs/openapi", func(w http.ResponseWriter, r *http.Request) {
		body := doc
		if r.URL.Query().Has("tag") {
			part, ok, err := explorer.AreaDocument(doc, r.URL.Query().Get("tag"))
			if err != nil || !ok {
				http.Error(w, "no such area", http.StatusBadRequest)
				return
			}
			body = part
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserLargeDocument: a document of 240 operations in 8 areas, far
// past what Swagger UI renders at once (explorer.MaxOperations), is shown
// whole, one area at a time.
func TestBrowserLargeDocument(t *testing.T) {
	srv := newDocsServer(t, largeDocument(8, 30), true)
	explorertest.CheckEveryOperation(t, srv.URL+"/api/docs/api", srv.URL+"/api/docs/openapi", "Thing 29 of area 7")
}

// TestBrowserLargeDocumentWhole shows why the explorer shows areas: the
// same 240 operations as one document (a page without a picker) do not
// all render, and CheckEveryOperation says so.
func TestBrowserLargeDocumentWhole(t *testing.T) {
	if explorertest.ChromiumPath() == "" {
		t.Skip("no Chromium (apt-get install chromium): the browser check is skipped")
	}
	srv := newDocsServer(t, largeDocument(8, 30), false)
	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		explorertest.CheckEveryOperation(ft, srv.URL+"/api/docs/api", srv.URL+"/api/docs/openapi", "")
	}()
	<-done
	got := ft.messages()
	if !strings.Contains(got, "the explorer shows") || !strings.Contains(got, "of the 240 operations") {
		t.Fatalf("the check did not fail the whole document for unshown operations; its failures:\n%s", got)
	}
	t.Logf("the check failed the whole document, as it should: %.300s", got)
}

// TestBrowserDeepLink: a deep link to an operation (#/<tag>/<operationId>,
// spaces as %20, as Swagger UI writes them) opens its area.
func TestBrowserDeepLink(t *testing.T) {
	srv := newDocsServer(t, largeDocument(8, 30), true)
	explorertest.CheckPage(t, srv.URL+"/api/docs/api#/Area%203/a3t4mget", 30, "Operations of area 3.")
}
