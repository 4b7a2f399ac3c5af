package explorertest_test

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/internal/testing/explorertest"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestAPIExplorer opens the API's own explorer (/api/docs/api of an
// httpapi handler over a Kit on SQLite, with the built-in identity) in
// headless Chromium: picking each area in turn, every operation of the
// served OpenAPI document renders, and the page asks nothing of any host
// but this server. Without Chromium it skips.
func TestAPIExplorer(t *testing.T) {
	ctx := t.Context()
	db := storetest.SQLite(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	kit, err := full.OpenPlain(ctx, full.Config{DB: db, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close(context.Background()) })
	srv := httptest.NewServer(must(httpapi.New(kit.Kit, httpapi.Options{})))
	defer srv.Close()

	explorertest.CheckEveryOperation(t, srv.URL+"/api/docs/api", srv.URL+"/api/docs/openapi",
		"The OpenAPI 3.1 document of this API")
}

// must returns h, failing on err (the handler's options are fixed here).
func must(h *httpapi.Handler, err error) *httpapi.Handler {
	if err != nil {
		panic(err)
	}
	return h
}
