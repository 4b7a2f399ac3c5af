package apikit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// JSON answers say their length, also above the 2 KB net/http sends
// chunked otherwise; a HEAD request gets the length and no body; a 204
// says none.
func TestEncodeSaysContentLength(t *testing.T) {
	t.Parallel()
	big := map[string]string{"text": strings.Repeat("x", 10_000)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_ = apikit.Encode(w, http.StatusOK, big)
		case "/raw":
			_ = apikit.EncodeJSON(w, http.StatusCreated, []byte(`{"a":1}`+"\n"))
		case "/none":
			_ = apikit.Encode(w, http.StatusNoContent, nil)
		}
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		method, path string
		status       int
		length       int
		body         int
	}{
		{http.MethodGet, "/big", 200, 10_000 + len(`{"text":""}`) + 1, 10_000 + len(`{"text":""}`) + 1},
		{http.MethodHead, "/big", 200, 10_000 + len(`{"text":""}`) + 1, 0},
		{http.MethodPost, "/raw", 201, 8, 8},
		{http.MethodDelete, "/none", 204, 0, 0},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.ContentLength != int64(c.length) || len(body) != c.body || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s %s: status %d, Content-Length %d, %d bytes, Transfer-Encoding %v; want %d, %d, %d bytes, none",
				c.method, c.path, resp.StatusCode, resp.ContentLength, len(body), resp.TransferEncoding, c.status, c.length, c.body)
		}
	}
}
