package explorertest_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/internal/testing/explorertest"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestAPIExplorer opens the API's own explorer (/api/docs/api of an
// httpapi handler over a Kit on SQLite, with the built-in identity) in
// headless Chromium: every operation of the served OpenAPI document
// renders, and the page asks nothing of any host but this server. Without
// Chromium it still serves and counts the document, then skips.
func TestAPIExplorer(t *testing.T) {
	ctx := t.Context()
	db := storetest.SQLite(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	kit, err := tenantkit.Open(ctx, tenantkit.Config{DB: db, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close(context.Background()) })
	srv := httptest.NewServer(must(httpapi.New(kit, httpapi.Options{})))
	defer srv.Close()

	explorertest.CheckPage(t, srv.URL+"/api/docs/api", countOperations(t, srv.URL+"/api/docs/openapi"),
		"The OpenAPI 3.1 document of this API")
}

// countOperations fetches the OpenAPI document at url and counts its
// operations: the blocks Swagger UI renders, one per path and method.
func countOperations(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s answered %d", url, resp.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	n := 0
	for _, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				n++
			}
		}
	}
	if n == 0 {
		t.Fatalf("GET %s: the document has no operations", url)
	}
	return n
}

// must returns h, failing on err (the handler's options are fixed here).
func must(h *httpapi.Handler, err error) *httpapi.Handler {
	if err != nil {
		panic(err)
	}
	return h
}
