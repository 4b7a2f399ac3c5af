//go:build unix

package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/httpjson"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// BenchmarkDataSyncImport imports syncBenchItems records through
// sync_http_json at batchSize 1000 from a local source (httptest, pages
// encoded beforehand, so the source costs little), through the real Kit:
// POST /api/data_sync/run, the durable job, the adapter's HTTP read and
// page check, the entities area's upsert (validation, value counts, one
// event a record), the run's cursor, counters and progress per batch; the
// op ends when GET /api/data_sync/runs/{id} shows it completed (polled
// every 50 ms). Beside it in the same run, the baseline: a hand-written
// multi-row INSERT (store.BatchInsert) of the same rows, the values
// marshalled to JSON, into a plain table bench_rows (id, tenant_id, data)
// in transactions of 1000 rows, through the same *store.DB; and
// source-read, the adapter reading the same pages without writing them.
// Two shapes: one text field (title), and the 10 fields (3 filterable) of
// the entities area's scale test.
//
//	go test -run '^$' -bench DataSyncImport -benchtime 3x ./httpapi
//
// PostgreSQL with TENANTKIT_TEST_POSTGRES_URL set (an isolated schema).
func BenchmarkDataSyncImport(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchDataSyncImport(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		url := storetest.IsolatedPostgresURL(b)
		db, err := store.Open(b.Context(), url, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if err := db.Migrate(b.Context()); err != nil {
			b.Fatal(err)
		}
		benchDataSyncImport(b, db)
	})
}

const (
	syncBenchItems = 20000
	syncBenchBatch = 1000
)

// syncBenchShape is a record shape: its field definitions and item n's
// values.
type syncBenchShape struct {
	name   string
	fields []map[string]any
	item   func(n int) map[string]any
}

var syncBenchShapes = []syncBenchShape{
	{name: "1-field", fields: []map[string]any{{"key": "title", "kind": "text"}},
		item: func(n int) map[string]any { return map[string]any{"title": fmt.Sprintf("Item %d", n)} }},
	{name: "10-fields", fields: []map[string]any{
		{"key": "category", "kind": "text", "configJson": map[string]any{"filterable": true}},
		{"key": "code", "kind": "text", "configJson": map[string]any{"filterable": true}},
		{"key": "amount", "kind": "integer", "configJson": map[string]any{"filterable": true}},
		{"key": "title", "kind": "text"}, {"key": "notes", "kind": "multiline"}, {"key": "price", "kind": "float"},
		{"key": "active", "kind": "boolean"}, {"key": "due", "kind": "date"}, {"key": "phone", "kind": "phone"}, {"key": "owner", "kind": "text"},
	}, item: func(n int) map[string]any {
		return map[string]any{"category": fmt.Sprintf("cat-%02d", n%100), "code": fmt.Sprintf("C%08d", n),
			"amount": n % 100000, "title": fmt.Sprintf("Item %d", n), "notes": "Some notes about this item",
			"price": 12.5, "active": n%2 == 0, "due": "2026-11-22", "phone": "+48 600 000 000", "owner": "user-1"}
	}},
}

// syncBenchSource serves the shape's items in pages of syncBenchBatch,
// encoded once: GET /{entityType}?cursor=&limit= (the limit must be
// syncBenchBatch).
func syncBenchSource(b *testing.B, items []map[string]any) *httptest.Server {
	pages := map[string][]byte{}
	for from := 0; from < len(items); from += syncBenchBatch {
		to := min(from+syncBenchBatch, len(items))
		page := make([]map[string]any, 0, to-from)
		for i := from; i < to; i++ {
			page = append(page, map[string]any{"externalId": fmt.Sprintf("ext-%d", i), "data": items[i]})
		}
		var next any
		if to < len(items) {
			next = strconv.Itoa(to)
		}
		body, err := json.Marshal(map[string]any{"items": page, "nextCursor": next, "totalEstimate": len(items)})
		if err != nil {
			b.Fatal(err)
		}
		cursor := strconv.Itoa(from)
		if from == 0 {
			cursor = ""
		}
		pages[cursor] = body
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Query().Get("cursor")]
		if !ok || r.URL.Query().Get("limit") != strconv.Itoa(syncBenchBatch) {
			http.Error(w, "no such page", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchDataSyncImport(b *testing.B, db *store.DB) {
	e := newTestEnvConfig(b, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
	e.start()
	tf := e.newTenant("Sync bench " + randomHex(3))
	key := e.newKey(tf, slices.Concat(recAllFeatures, []string{integrationsapi.FeatureIntegrationsView, integrationsapi.FeatureIntegrationsCredentials, datasyncapi.FeatureSyncRun, datasyncapi.FeatureSyncView})...)
	ctx := store.WithScope(b.Context(), store.Scope{TenantID: tf.ID, OrganizationID: tf.OrgID})
	err := db.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE bench_rows (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, data TEXT NOT NULL)`)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	ins := store.NewBatchInsert("bench_rows", "id, tenant_id, data", "")
	ins.Prepare(ctx, db)

	for _, shape := range syncBenchShapes {
		items := make([]map[string]any, syncBenchItems)
		for i := range items {
			items[i] = shape.item(i)
		}
		src := syncBenchSource(b, items)
		e.do("PUT", "/api/integrations/sync_http_json/credentials", key, map[string]any{"credentials": map[string]any{"baseUrl": src.URL}}).expect(200)

		b.Run(shape.name+"/sync_http_json", func(b *testing.B) {
			e := e.with(b)
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				eid := recEntity() // a new entity each op: every record is created
				e.do("POST", "/api/entities/entities", key, map[string]any{"entityId": eid, "label": "Bench"}).expect(200)
				e.do("POST", "/api/entities/definitions.batch", key, map[string]any{"entityId": eid, "definitions": shape.fields}).expect(200)
				b.StartTimer()
				c0 := cpuTime()
				id := e.do("POST", "/api/data_sync/run", key, map[string]any{"integrationId": "sync_http_json", "entityType": eid,
					"direction": "import", "batchSize": syncBenchBatch}).expect(201).JSON()["id"].(string)
				run := syncBenchWait(b, e, key, id)
				cpu += cpuTime() - c0
				if run["status"] != "completed" || run["createdCount"] != float64(syncBenchItems) || run["failedCount"] != 0.0 {
					b.Fatalf("run: %v", run)
				}
			}
			reportSyncBench(b, cpu, "records/s")
		})

		b.Run(shape.name+"/baseline", func(b *testing.B) {
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				prefix := store.NewID()
				for from := 0; from < len(items); from += syncBenchBatch {
					err := db.Tx(ctx, func(tx *store.Tx) error {
						to := min(from+syncBenchBatch, len(items))
						rows := make([][]any, 0, to-from)
						for j := from; j < to; j++ {
							data, err := json.Marshal(items[j])
							if err != nil {
								return err
							}
							rows = append(rows, []any{prefix + "-" + strconv.Itoa(j), tf.ID, string(data)})
						}
						_, err := ins.Insert(ctx, tx, rows)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			reportSyncBench(b, cpuTime()-c0, "rows/s")
		})

		// The adapter's share: reading and checking the pages, no writes.
		b.Run(shape.name+"/source-read", func(b *testing.B) {
			a := httpjson.New(httpjson.Options{AllowPrivate: true})
			call := datasync.Call{IntegrationID: "sync_http_json", Credentials: map[string]any{"baseUrl": src.URL}, EntityType: "bench"}
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				n, cursor := 0, ""
				for {
					page, err := a.Import(context.Background(), call, cursor, syncBenchBatch)
					if err != nil {
						b.Fatal(err)
					}
					n += len(page.Items)
					if cursor = page.NextCursor; cursor == "" {
						break
					}
				}
				if n != syncBenchItems {
					b.Fatalf("%d items read", n)
				}
			}
			reportSyncBench(b, cpuTime()-c0, "items/s")
		})
	}
}

// reportSyncBench reports the rate (unit) per wall-clock second, and the
// CPU time the process spent per op (all its goroutines: the job, the
// source, the polling; on PostgreSQL the server's own CPU is not in it),
// with the rate per CPU second: on a shared machine the wall-clock rate
// measures the load as much as the code.
func reportSyncBench(b *testing.B, cpu time.Duration, unit string) {
	n := float64(b.N * syncBenchItems)
	b.ReportMetric(n/b.Elapsed().Seconds(), unit)
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(n/cpu.Seconds(), unit[:len(unit)-2]+"/cpu-s")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncBenchWait polls the run every 50 ms until it is final (a poll
// costs about 0.3 ms of CPU: polling every 5 ms took an eighth of the
// process's CPU on a loaded machine).
func syncBenchWait(b *testing.B, e *testEnv, key, id string) map[string]any {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		run := e.do("GET", "/api/data_sync/runs/"+id, key, nil).expect(200).JSON()
		switch run["status"] {
		case "completed", "failed", "cancelled":
			return run
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s still %v after 5 minutes: %v", id, run["status"], run)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
