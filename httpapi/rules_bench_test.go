package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/rulebench"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkExecuteSetHTTP compares POST /business_rules/sets/{id}/execute
// (SQLite, a cached API key, rulebench's set of ten rules, its 20-field
// data map) with a bare net/http handler that encodes the same result body
// the same way, in the same run; then the same on PostgreSQL (postgres/…),
// with the statements and the server's CPU time per request. The targets:
// a dry run reaches 40% of bare's requests per second; a logged run (ten
// log rows durable before each response, group-committed) 15%. Rate limiting is off, so
// that the set execution limit (200 a minute) does not end the run.
func BenchmarkExecuteSetHTTP(b *testing.B) {
	benchExecuteSet(b, storetest.SQLite(b), nil)
	b.Run("postgres", func(b *testing.B) {
		db, cost := countedPostgres(b)
		benchExecuteSet(b, db, cost)
	})
}

// benchExecuteSet is BenchmarkExecuteSetHTTP on db; cost counts its
// statements on PostgreSQL (nil on SQLite).
func benchExecuteSet(b *testing.B, db *store.DB, cost *pgCost) {
	e := newTestEnv(b, db)
	e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)})
	acme := e.newTenant("Acme")
	key := e.newKey(acme)
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: acme.ID})
	if err := rulebench.CreateSet(ctx, e.kit.Rules); err != nil {
		b.Fatal(err)
	}
	body := func(dry bool) []byte {
		return fmt.Appendf(nil, `{"entityType":"order","entityId":"order-1","eventType":"beforeUpdate","dryRun":%t,"data":%s}`, dry, rulebench.Data)
	}
	const path = "/api/business_rules/sets/BENCH/execute"

	// The bare handler encodes the dry run's result, decoded from a real
	// response, as the real handler does.
	real := e.do("POST", path, key, json.RawMessage(body(true))).expect(200)
	var result rules.Result
	if err := json.Unmarshal(real.Body, &result); err != nil {
		b.Fatal(err)
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(&result)
	})
	rec := httptest.NewRecorder()
	bare.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
	if rec.Body.Len() < len(real.Body)*9/10 || rec.Body.Len() > len(real.Body)*11/10 {
		b.Fatalf("bare body is %d bytes, the real one %d", rec.Body.Len(), len(real.Body))
	}

	b.Logf("result body: %d bytes", len(real.Body))
	b.Run("bare", func(b *testing.B) { benchPost(b, bare, path, "", body(true)) })
	b.Run("dryRun", func(b *testing.B) { benchPostCost(b, cost, e.handler, path, key, body(true)) })
	b.Run("logged", func(b *testing.B) { benchPostCost(b, cost, e.handler, path, key, body(false)) })
}

// benchPost serves POST path with body and key (none when "") from 32
// goroutines (16 per CPU), so that group commit has concurrent requests to
// batch, as a loaded server has.
func benchPost(b *testing.B, h http.Handler, path, key string, body []byte) {
	benchPostCost(b, nil, h, path, key, body)
}

// benchPostCost is benchPost reporting the CPU time per request, and on
// PostgreSQL (cost not nil) the statements and the server's CPU time
// (pgCost.measure).
func benchPostCost(b *testing.B, cost *pgCost, h http.Handler, path, key string, body []byte) {
	b.ReportAllocs()
	b.SetParallelism(16)
	cost.measure(b, func() {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("POST", path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set("X-Api-Key", key)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Errorf("status %d: %s", rec.Code, rec.Body)
					return
				}
			}
		})
	})
}
