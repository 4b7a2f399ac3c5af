package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Security headers: every response carries X-Content-Type-Options:
// nosniff, and the routes marked NoStore (those whose responses may carry
// a secret) answer with Cache-Control: no-store, errors included.

// wildcardPattern finds the {name} wildcards of a route path.
var wildcardPattern = regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)

// routeRequest builds a request that reaches rt: its wildcards get a
// made-up id or, for routes sharing a pattern (Match), the first of a few
// words that Match accepts. It returns nil when none does.
func routeRequest(t *testing.T, rt apikit.Route) *http.Request {
	t.Helper()
	names := wildcardPattern.FindAllStringSubmatch(rt.Path, -1)
	candidates := []string{store.NewID(), "inbound", "rotate-secret", "test"}
	choice := make([]int, len(names))
	for {
		values := map[string]string{}
		for i, n := range names {
			values[n[1]] = candidates[choice[i]]
		}
		path := wildcardPattern.ReplaceAllStringFunc(rt.Path, func(w string) string {
			return values[wildcardPattern.FindStringSubmatch(w)[1]]
		})
		var body io.Reader
		if rt.Method != "GET" && rt.Method != "HEAD" {
			body = strings.NewReader("{}")
		}
		ctx := t.Context()
		if rt.Path == "/events/stream" {
			// The stream answers until the client leaves: leave soon.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
			t.Cleanup(cancel)
		}
		req := httptest.NewRequestWithContext(ctx, rt.Method, "/api"+path, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for name, v := range values {
			req.SetPathValue(name, v)
		}
		if rt.Match == nil || rt.Match(req) {
			return req
		}
		// Next combination.
		i := 0
		for ; i < len(choice); i++ {
			choice[i]++
			if choice[i] < len(candidates) {
				break
			}
			choice[i] = 0
		}
		if i == len(choice) {
			return nil
		}
	}
}

func TestSecurityHeadersEveryRoute(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		routes := (&api{kit: e.kit.Kit, opts: Options{Auth: e.auth}}).routes()
		noStore := 0
		for _, rt := range routes {
			t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
				if rt.NoStore {
					noStore++
				}
				for _, key := range []string{"", "tk_garbage" + randomHex(8), e.superKey} {
					req := routeRequest(t, rt)
					if req == nil {
						t.Fatalf("no request reaches %s %s (Match accepts none of the tried words)", rt.Method, rt.Path)
					}
					if key != "" {
						req.Header.Set("X-Api-Key", key)
					}
					rec := httptest.NewRecorder()
					e.handler.ServeHTTP(rec, req)
					if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
						t.Errorf("%s %s (key %v): status %d, X-Content-Type-Options %q, want nosniff", req.Method, req.URL.Path, key != "", rec.Code, got)
					}
					if rt.NoStore {
						if got := rec.Header().Get("Cache-Control"); got != "no-store" {
							t.Errorf("%s %s (key %v): status %d, Cache-Control %q, want no-store (route marked NoStore)", req.Method, req.URL.Path, key != "", rec.Code, got)
						}
					}
				}
			})
		}
		if noStore == 0 {
			t.Error("no route is marked NoStore")
		}

		// Paths no route serves: 404, and 405 for another method.
		for _, c := range []struct {
			method, path string
			status       int
		}{
			{"GET", "/api/no/such/path", 404},
			{"GET", "/elsewhere", 404},
			{"DELETE", "/api/health", 405},
			{"PATCH", "/api/webhooks", 405},
		} {
			r := e.do(c.method, c.path, e.superKey, nil).expect(c.status)
			if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s %s: %d with X-Content-Type-Options %q, want nosniff", c.method, c.path, r.Status, got)
			}
			if got := r.Header.Get("Cache-Control"); got != "" {
				t.Errorf("%s %s: Cache-Control %q, want none", c.method, c.path, got)
			}
		}
	})
}

// The webhook routes that show a secret (create, rotate-secret) or
// customHeaders in full (reads, update) answer no-store on success; an
// ordinary list answers without Cache-Control.
func TestNoStoreRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		key := e.newKey(e.newTenant("Headers "+randomHex(3)), allWebhookFeatures...)
		noStore := func(r *response) {
			t.Helper()
			is.Equal(r.Header.Get("Cache-Control"), "no-store")
			is.Equal(r.Header.Get("X-Content-Type-Options"), "nosniff")
		}
		created := e.do("POST", webhooksBase, key, whBody("headers", func(b map[string]any) {
			b["customHeaders"] = map[string]string{"Authorization": "Bearer receiver-token"}
		})).expect(201)
		noStore(created)
		body := created.JSON()
		is.True(strings.HasPrefix(body["secret"].(string), "whsec_"))
		id := body["id"].(string)
		noStore(e.do("POST", whPath(id, "/rotate-secret"), key, nil).expect(200))
		noStore(e.do("GET", whPath(id), key, nil).expect(200))
		noStore(e.do("GET", webhooksBase, key, nil).expect(200))
		noStore(e.do("PUT", whPath(id), key, map[string]any{"name": "renamed"}).expect(200))
		// Errors of a marked route too.
		noStore(e.do("POST", whPath(store.NewID(), "/rotate-secret"), key, nil).expect(404))
		noStore(e.do("POST", webhooksBase, "", whBody("x")).expect(401))

		// Ordinary routes: no Cache-Control, nosniff all the same.
		for _, path := range []string{"/api/feature_toggles/global", "/api/entities/entities", "/api/webhooks/events", "/api/health"} {
			r := e.do("GET", path, e.superKey, nil).expect(200)
			is.Equal(r.Header.Get("Cache-Control"), "")
			is.Equal(r.Header.Get("X-Content-Type-Options"), "nosniff")
		}
	})
}

// A panic turned into a 500 carries the headers too, as does a 401.
func TestSecurityHeadersPanic(t *testing.T) {
	t.Parallel()
	a := &api{opts: Options{MaxBodyBytes: defaultMaxBody}, logger: slog.New(slog.DiscardHandler), base: "/api"}
	h := a.serve([]apikit.Route{
		{Method: "GET", Path: "/boom", Handler: func(http.ResponseWriter, *http.Request) error { panic("boom") },
			Access: apikit.Access{Public: true}},
		{Method: "GET", Path: "/secret-boom", Handler: func(http.ResponseWriter, *http.Request) error { panic("boom") },
			NoStore: true,
			Access:  apikit.Access{Public: true}},
		{Method: "GET", Path: "/private", NoStore: true, Handler: func(http.ResponseWriter, *http.Request) error { return nil }},
	})
	for _, c := range []struct {
		path    string
		status  int
		noStore bool
	}{{"/api/boom", 500, false}, {"/api/secret-boom", 500, true}, {"/api/private", 401, true}, {"/api/none", 404, false}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "GET", c.path, nil))
		if rec.Code != c.status {
			t.Errorf("GET %s: status %d, want %d", c.path, rec.Code, c.status)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", c.path, got)
		}
		want := ""
		if c.noStore {
			want = "no-store"
		}
		if got := rec.Header().Get("Cache-Control"); got != want {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.path, got, want)
		}
	}
}
