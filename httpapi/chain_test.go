package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExactRoutesAsServeMux serves requests through the chain's routing
// (a route without wildcards is looked up by its method and path before
// the ServeMux) and through a plain ServeMux holding the same patterns:
// each request reaches the same route, with the same Pattern, or gets the
// same status from both (404, 405, a redirect to the clean path).
func TestExactRoutesAsServeMux(t *testing.T) {
	paths := []struct{ method, path string }{
		{"GET", "/x/boolean"}, {"GET", "/x/{id}"}, {"POST", "/x/boolean"}, {"DELETE", "/x/{id}"},
		{"GET", "/y/"}, {"GET", "/y/{$}"}, {"GET", "/z"}, {"PUT", "/z"}, {"GET", "/x/boolean/more"},
	}
	a := &api{opts: Options{MaxBodyBytes: defaultMaxBody, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)},
		base: "/api", logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ref := http.NewServeMux()
	var routes []apikit.Route
	for _, p := range paths {
		pattern := p.method + " /api" + p.path
		answer := func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s|%s|%s", pattern, r.Pattern, r.PathValue("id"))
		}
		routes = append(routes, apikit.Route{Method: p.method, Path: p.path, Access: apikit.Access{Public: true},
			Handler: func(w http.ResponseWriter, r *http.Request) error { answer(w, r); return nil }})
		ref.HandleFunc(pattern, answer)
	}
	h := a.serve(routes)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "DELETE"} {
		for _, target := range []string{"/api/x/boolean", "/api/x/%62oolean", "/api/x/bool%20ean", "/api/x//boolean",
			"/api/x/./boolean", "/api/x/boolean/", "/api/x/7", "/api/y/", "/api/y/q", "/api/y", "/api/z", "/api/z/",
			"/api/Z", "/api/x/boolean/more", "/api/x/boolean?identifier=a", "/x/boolean", "http://other.example/api/z"} {
			want := httptest.NewRecorder()
			ref.ServeHTTP(want, httptest.NewRequest(method, target, nil))
			got := httptest.NewRecorder()
			h.ServeHTTP(got, httptest.NewRequest(method, target, nil))
			if got.Code != want.Code {
				t.Errorf("%s %s: status %d, the ServeMux answers %d", method, target, got.Code, want.Code)
				continue
			}
			if want.Code == http.StatusOK && got.Body.String() != want.Body.String() {
				t.Errorf("%s %s: served %q, the ServeMux serves %q", method, target, got.Body, want.Body)
			}
			if loc := want.Header().Get("Location"); loc != got.Header().Get("Location") {
				t.Errorf("%s %s: redirected to %q, the ServeMux to %q", method, target, got.Header().Get("Location"), loc)
			}
		}
	}
}

// TestChainHeadersOwnValues: the headers every answer carries are the
// answer's own values; a handler adding to one of them adds a value and
// leaves the others, and the next answer, as they were.
func TestChainHeadersOwnValues(t *testing.T) {
	h := withRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("X-Request-Id", "second")
		w.Header().Add("X-Content-Type-Options", "other")
		_ = apikit.EncodeJSON(w, http.StatusOK, []byte("{}\n"))
		w.Header().Add("Content-Type", "text/plain")
	}))
	for i := range 2 {
		r := httptest.NewRequest("GET", "/api/health", nil)
		r.Header.Set("X-Request-Id", fmt.Sprint("caller-", i))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		hdr := rec.Result().Header
		if got, want := strings.Join(hdr["X-Request-Id"], ","), fmt.Sprint("caller-", i, ",second"); got != want {
			t.Errorf("X-Request-Id %q, want %q", got, want)
		}
		if got := strings.Join(hdr["X-Content-Type-Options"], ","); got != "nosniff,other" {
			t.Errorf("X-Content-Type-Options %q, want nosniff,other", got)
		}
		if got := hdr.Get("Content-Type"); got != apikit.JSONContentType {
			t.Errorf("Content-Type %q, want %q", got, apikit.JSONContentType)
		}
	}
	rec := httptest.NewRecorder()
	_ = apikit.EncodeJSON(rec, http.StatusOK, []byte("{}\n"))
	if got := rec.Header()["Content-Type"]; len(got) != 1 || got[0] != apikit.JSONContentType {
		t.Errorf("the next JSON answer's Content-Type is %q", got)
	}
}

// TestToggleCheckAllocations counts the heap allocations of a boolean
// toggle check with a cached API key through the whole chain, over those
// of a bare handler answering the same body to the same request: the
// chain adds at most its request state and one copy of the request, and
// with the access line that line's record (its attributes past
// slog.Record's inline five). The headers every answer carries, the
// request id and the credential's digest cost none of their own. It is
// the API's most frequent request.
func TestToggleCheckAllocations(t *testing.T) {
	e := newTestEnv(t, storetest.SQLite(t))
	acme := e.newTenant("Acme " + randomHex(3))
	key := e.newKey(acme)
	identifier := "allocs.flag-" + randomHex(3)
	id := e.do("POST", togglesBase+"/global", e.superKey, map[string]any{"identifier": identifier, "name": "Allocs",
		"type": "boolean", "defaultValue": false}).expect(201).JSON()["id"].(string)
	e.superIn(acme.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": true, "overrideValue": true}).expect(200)
	path := togglesBase + "/check/boolean?identifier=" + identifier
	body := e.do("GET", path, key, nil).expect(200).Body
	time.Sleep(50 * time.Millisecond) // the credential's cache entry settled

	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", apikit.JSONContentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	allocs := func(h http.Handler, key string) float64 {
		serve := func() {
			if rec := serveGET(h, path, key); rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
		serve()
		return testing.AllocsPerRun(2000, serve)
	}
	base := allocs(bare, key) // the same request, X-Api-Key included
	logged := mustNew(e.kit, Options{Auth: e.auth, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AccessLog: true})
	for _, c := range []struct {
		name string
		h    http.Handler
		max  float64
	}{{"check", e.handler, 2}, {"check with the access line", logged, 3}} {
		if extra := allocs(c.h, key) - base; extra > c.max {
			t.Errorf("%s: %.0f allocations over the bare handler's %.0f, want at most %.0f", c.name, extra, base, c.max)
		}
	}
	var check map[string]any
	if err := json.Unmarshal(body, &check); err != nil || check["enabled"] != true {
		t.Fatalf("check answered %s", body)
	}
}
