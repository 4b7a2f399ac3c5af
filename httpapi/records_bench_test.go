package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkCreateRecordHTTP compares POST /entities/records (SQLite, a
// cached API key, the HTTP comparison harness's entity: five fields, two
// of them filterable, so each create also updates value counts, and one
// event per record) with a bare net/http handler answering the same body,
// in the same run, from 32 goroutines so that group commit has concurrent
// requests to batch; then the same on PostgreSQL (postgres/…), with the
// statements and the server's CPU time per request. Rate limiting is off,
// as in the harness.
func BenchmarkCreateRecordHTTP(b *testing.B) {
	benchCreateRecord(b, storetest.SQLite(b), nil)
	b.Run("postgres", func(b *testing.B) {
		db, cost := countedPostgres(b)
		benchCreateRecord(b, db, cost)
	})
}

func benchCreateRecord(b *testing.B, db *store.DB, cost *pgCost) {
	e := newTestEnv(b, db)
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
	b.Run("create", func(b *testing.B) { benchPostCost(b, cost, e.handler, path, key, body) })
}

// BenchmarkListRecordsHTTP measures the harness's records-list-total
// request, GET /entities/records, page 1 of 20 with the exact total, over
// 20,000 records of the harness's entity (TENANTKIT_BENCH_LIST_RECORDS
// changes the number), on SQLite and then on PostgreSQL (postgres/…, with
// the statements and the server's CPU time per request), each beside a
// bare net/http handler answering the same body. Rate limiting is off, as
// in the harness.
func BenchmarkListRecordsHTTP(b *testing.B) {
	benchListRecords(b, storetest.SQLite(b), nil)
	b.Run("postgres", func(b *testing.B) {
		db, cost := countedPostgres(b)
		benchListRecords(b, db, cost)
	})
}

func benchListRecords(b *testing.B, db *store.DB, cost *pgCost) {
	e := newTestEnv(b, db)
	e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)})
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "entities.definitions.manage", "entities.records.manage", "entities.records.view")
	benchRecordEntity(e, key)
	n := storetest.EnvInt("TENANTKIT_BENCH_LIST_RECORDS", 20000)
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: acme.ID, OrganizationID: acme.OrgID, OrganizationIDs: []string{acme.OrgID}})
	values := make([]map[string]any, 0, 1000)
	for i := 1; i < n; i += len(values) { // benchRecordEntity made one
		values = values[:0]
		for j := 0; j < 1000 && i+j < n; j++ {
			values = append(values, map[string]any{"title": "Bench item", "status": []string{"open", "closed", "pending"}[(i+j)%3],
				"total": float64((i+j)%1000) + 0.5, "qty": float64((i + j) % 7), "note": "seeded"})
		}
		if _, err := e.kit.Entities.CreateRecords(ctx, "bench.items", values); err != nil {
			b.Fatal(err.Error()[:min(len(err.Error()), 300)])
		}
	}
	const path = "/api/entities/records?entityId=bench.items&page=1&pageSize=20"
	answer := e.do("GET", path, key, nil).expect(200).Body
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	})
	b.Logf("result body: %d bytes", len(answer))
	b.Run("bare", func(b *testing.B) { benchGetCost(b, nil, bare, path, "") })
	b.Run("list", func(b *testing.B) { benchGetCost(b, cost, e.handler, path, key) })
}

// benchGetCost serves GET path with key (none when "") from 32 goroutines,
// reporting what benchPostCost does.
func benchGetCost(b *testing.B, cost *pgCost, h http.Handler, path, key string) {
	b.ReportAllocs()
	b.SetParallelism(16)
	cost.measure(b, func() {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if rec := serveGET(h, path, key); rec.Code != http.StatusOK {
					b.Errorf("status %d: %s", rec.Code, rec.Body)
					return
				}
			}
		})
	})
}
