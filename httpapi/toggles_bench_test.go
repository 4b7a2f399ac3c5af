package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/togglesapi"
	"github.com/tenantkit/tenantkit/internal/testing/cputime"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// BenchmarkToggleCheck compares GET /feature_toggles/check/boolean through
// the real handler (SQLite, a tenant API key whose credential is cached, a
// boolean toggle with an override for that tenant) with a bare net/http
// handler that encodes the same body the same way, in the same run; then
// the same on PostgreSQL (postgres/bare, postgres/check), where a cached
// credential is served without a query while the process's lease of the
// credentials' counter holds (identity's package doc, "Revocation"). The
// target: check reaches at least half of bare's requests per second.
func BenchmarkToggleCheck(b *testing.B) {
	benchToggleCheck(b, newTestEnv(b, storetest.SQLite(b)))
	b.Run("postgres", func(b *testing.B) { benchToggleCheck(b, newTestEnv(b, storetest.Postgres(b))) })
}

func benchToggleCheck(b *testing.B, e *testEnv) {
	acme := e.newTenant("Acme " + randomHex(3))
	key := e.newKey(acme) // checks need authentication only
	identifier := "bench.checkout-v2-" + randomHex(3)
	id := e.do("POST", togglesBase+"/global", e.superKey, map[string]any{"identifier": identifier, "name": "Checkout v2",
		"type": "boolean", "defaultValue": false}).expect(201).JSON()["id"].(string)
	e.superIn(acme.ID, "PUT", togglesBase+"/overrides", map[string]any{"toggleId": id, "isOverride": true, "overrideValue": true}).expect(200)
	path := togglesBase + "/check/boolean?identifier=" + identifier

	// Warm the credential cache (and, on PostgreSQL, let the first beat
	// give the process its lease) and check that both handlers answer the
	// same bytes.
	real := e.do("GET", path, key, nil).expect(200)
	time.Sleep(100 * time.Millisecond)
	body := togglesapi.BooleanCheck{Enabled: true, Source: toggles.FromOverride, ToggleID: id, Identifier: identifier, TenantID: acme.ID}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(body)
	})
	rec := httptest.NewRecorder()
	bare.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if !bytes.Equal(rec.Body.Bytes(), real.Body) {
		b.Fatalf("bare body %s differs from the real one %s", rec.Body.Bytes(), real.Body)
	}

	b.Run("bare", func(b *testing.B) { benchCheck(b, bare, path, "") })
	b.Run("check", func(b *testing.B) { benchCheck(b, e.handler, path, key) })
	// The standalone server's setting: an access line per request (text,
	// to a discarding writer: the formatting is measured, not the disk).
	b.Run("check-access-log", func(b *testing.B) {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		benchCheck(b, mustNew(e.kit, Options{Auth: e.auth, Logger: logger, AccessLog: true}), path, key)
	})
}

// benchCheck serves GET path with key (none when "") in parallel, and
// reports the process's CPU time per request (cpu-µs/op: every goroutine's,
// the collector's and the database driver's included; on PostgreSQL the
// server's own CPU is not).
func benchCheck(b *testing.B, h http.Handler, path, key string) {
	b.ReportAllocs()
	cpu := cputime.Process()
	defer func() {
		if cpu != 0 {
			b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		}
	}()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if rec := serveGET(h, path, key); rec.Code != http.StatusOK {
				b.Errorf("status %d: %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// serveGET serves GET path from h, with key as the X-Api-Key (none when
// ""), and returns the recorded answer.
func serveGET(h http.Handler, path, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
