package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The authenticated-request benchmarks run in-process (httptest), in
// parallel, against a bare net/http handler writing a JSON body of the
// same size: the difference is what routing, authentication (a cached API
// key), authorization and scoping cost per request.

func benchServe(b *testing.B, h http.Handler, key string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/api/auth/me", nil)
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Errorf("status %d", rec.Code)
				return
			}
		}
	})
}

func BenchmarkAuthenticatedRequest(b *testing.B) {
	e := newTestEnv(b, storetest.SQLite(b))
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "api_keys.view", "auth.roles.view")
	me := e.do("GET", "/api/auth/me", key, nil).expect(200).Body

	b.Run("bare-net-http", func(b *testing.B) {
		bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_ = json.NewEncoder(w).Encode(json.RawMessage(me))
		})
		benchServe(b, bare, "")
	})
	b.Run("httpapi-auth-me", func(b *testing.B) { benchServe(b, e.handler, key) })
	b.Run("httpapi-auth-me-access-log", func(b *testing.B) {
		// The standalone server's setting: one text line per request (to
		// a discarding writer here: the formatting is measured, not the
		// disk).
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		benchServe(b, mustNew(e.kit, Options{Auth: e.auth, Logger: logger, AccessLog: true}), key)
	})
	b.Run("httpapi-auth-me-uncached", func(b *testing.B) {
		uncached, err := openIdentity(b.Context(), e.kit.DB, identity.Options{SecretKey: e.kit.SecretKey, CacheTTL: -1})
		if err != nil {
			b.Fatal(err)
		}
		benchServe(b, mustNew(e.kit, Options{Auth: uncached}), key)
	})
	// On PostgreSQL, where a cache hit reads the credentials' version
	// counter (identity's package doc, "Revocation").
	b.Run("postgres", func(b *testing.B) {
		e := newTestEnv(b, storetest.Postgres(b))
		acme := e.newTenant("Acme " + randomHex(3))
		key := e.newKey(acme, "api_keys.view", "auth.roles.view")
		e.do("GET", "/api/auth/me", key, nil).expect(200)
		b.Run("httpapi-auth-me", func(b *testing.B) { benchServe(b, e.handler, key) })
		b.Run("httpapi-auth-me-uncached", func(b *testing.B) {
			uncached, err := openIdentity(b.Context(), e.kit.DB, identity.Options{SecretKey: e.kit.SecretKey, CacheTTL: -1})
			if err != nil {
				b.Fatal(err)
			}
			benchServe(b, mustNew(e.kit, Options{Auth: uncached}), key)
		})
	})
}
