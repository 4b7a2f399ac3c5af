package httpapi

import (
	"encoding/json"
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
	e.do("POST", "/api/entities/entities", key, map[string]any{"entityId": "bench.items", "label": "Bench items"}).expect(200)
	e.do("POST", "/api/entities/definitions.batch", key, json.RawMessage(`{"entityId":"bench.items","definitions":[
		{"key":"title","kind":"text","configJson":{"label":"Title","listVisible":true}},
		{"key":"status","kind":"select","configJson":{"label":"Status","options":["open","closed","pending"],"filterable":true,"listVisible":true}},
		{"key":"total","kind":"float","configJson":{"label":"Total","filterable":true,"listVisible":true}},
		{"key":"qty","kind":"integer","configJson":{"label":"Quantity","listVisible":true}},
		{"key":"note","kind":"text","configJson":{"label":"Note"}}]}`)).expect(200)
	body := []byte(`{"entityId":"bench.items","values":{"title":"Bench item","status":"open","total":1234.56,"qty":3,"note":"created by the records-create scenario"}}`)
	const path = "/api/entities/records"
	real := e.do("POST", path, key, json.RawMessage(body)).expect(200)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(real.Body)
	})
	b.Logf("result body: %d bytes", len(real.Body))
	b.Run("bare", func(b *testing.B) { benchPost(b, bare, path, "", body) })
	b.Run("create", func(b *testing.B) { benchPost(b, e.handler, path, key, body) })
}
