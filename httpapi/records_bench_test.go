package httpapi

import (
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkCreateRecordHTTP compares POST /entities/records (SQLite, a
// cached API key, the HTTP comparison harness's entity: five fields, two
// of them filterable, so each create also updates value counts, and one
// event per record) with a bare net/http handler answering the same body,
// in the same run, from 32 goroutines so that group commit has concurrent
// requests to batch. Rate limiting is off, as in the harness.
func BenchmarkCreateRecordHTTP(b *testing.B) {
	e := newTestEnv(b, storetest.SQLite(b))
	e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)})
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "entities.definitions.manage", "entities.records.manage")
	body, answer := benchRecordEntity(e, key)
	const path = "/api/entities/records"
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	})
	b.Logf("result body: %d bytes", len(answer))
	b.Run("bare", func(b *testing.B) { benchPost(b, bare, path, "", body) })
	b.Run("create", func(b *testing.B) { benchPost(b, e.handler, path, key, body) })
}
