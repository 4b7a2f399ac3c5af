package entities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/internal/testing/cputime"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// benchFields are the fields of the benchmarks' and the scale test's
// entity: 10, 3 of them filterable.
var benchFields = []entities.DefinitionInput{
	{Key: "category", Kind: "text", ConfigJSON: map[string]any{"filterable": true}},
	{Key: "code", Kind: "text", ConfigJSON: map[string]any{"filterable": true}},
	{Key: "amount", Kind: "integer", ConfigJSON: map[string]any{"filterable": true}},
	{Key: "title", Kind: "text"}, {Key: "notes", Kind: "multiline"}, {Key: "price", Kind: "float"},
	{Key: "active", Kind: "boolean"}, {Key: "due", Kind: "date"}, {Key: "phone", Kind: "phone"}, {Key: "owner", Kind: "text"},
}

// defineBenchEntity defines benchFields on "bench.items".
func defineBenchEntity(t testing.TB, svc *entities.Service, ctx context.Context) {
	t.Helper()
	if _, err := svc.Batch(ctx, entities.BatchInput{EntityID: "bench.items", Definitions: benchFields}); err != nil {
		t.Fatal(err)
	}
}

// benchItem is record n of the benchmarks' entity, with the amount given.
func benchItem(n int, amount float64) map[string]any {
	return map[string]any{"category": fmt.Sprintf("cat-%02d", n%100), "code": fmt.Sprintf("C%08d", n),
		"amount": amount, "title": fmt.Sprintf("Item %d", n), "notes": "Some notes about this item",
		"price": 12.5, "active": n%2 == 0, "due": "2026-11-22", "phone": "+48 600 000 000", "owner": "user-1"}
}

// BenchmarkCreateRecords inserts batches of 1,000 records of the scale
// test's entity (10 fields, 3 filterable) through CreateRecords, against
// a hand-written baseline writing the same rows with one multi-row INSERT
// per 50 (no validation, no events) in the same run:
//
//	go test ./entities -run '^$' -bench CreateRecords -benchtime 20x
//
// Records per second = 1000 / (s/op).
func BenchmarkCreateRecords(b *testing.B) {
	db := storetest.SQLite(b, entities.Migrations)
	svc := must(entities.New(db, entities.Options{}))
	ctx, sc := storetest.NewScope(b)
	defineBenchEntity(b, svc, ctx)
	n := 0
	batch := func() []map[string]any {
		out := make([]map[string]any, 1000)
		for i := range out {
			n++
			out[i] = benchItem(n, float64(n%100000))
		}
		return out
	}
	b.Run("CreateRecords", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.CreateRecords(ctx, "bench.items", batch()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		ins := store.NewBatchInsert("custom_entity_records", "id, tenant_id, organization_id, entity_id, data, created_at, updated_at", "")
		for b.Loop() {
			values := batch()
			err := db.Tx(ctx, func(tx *store.Tx) error {
				rows := make([][]any, len(values))
				for i, v := range values {
					data, err := json.Marshal(v)
					if err != nil {
						return err
					}
					rows[i] = []any{store.NewID(), sc.TenantID, sc.OrganizationID, "bench.items", string(data), tx.Now(), tx.Now()}
				}
				_, err := ins.Insert(ctx, tx, rows)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListRecords lists page 1 of the scale test's entity, on SQLite
// with 20,000 records: unfiltered (by id, and by createdAt descending),
// and filtered by equality on a filterable field ("amount" matches 10
// records a value, "category" 200, a full page of 50):
//
//	go test ./entities -run '^$' -bench ListRecords -benchmem
func BenchmarkListRecords(b *testing.B) {
	db := storetest.SQLite(b, entities.Migrations)
	svc := must(entities.New(db, entities.Options{}))
	ctx, _ := storetest.NewScope(b)
	defineBenchEntity(b, svc, ctx)
	for n := 0; n < 20000; n += 1000 {
		batch := make([]map[string]any, 1000)
		for i := range batch {
			k := n + i
			batch[i] = benchItem(k, float64(k%2000))
		}
		if _, err := svc.CreateRecords(ctx, "bench.items", batch); err != nil {
			b.Fatal(err)
		}
	}
	// Page 1 of the whole entity with its exact total: the list every
	// client makes first, in the default order and newest first.
	for _, c := range []struct{ name, field, dir string }{{"unfiltered", "", ""}, {"unfiltered-createdAt-desc", "createdAt", "desc"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				items, total, err := svc.ListRecords(ctx, entities.RecordQuery{EntityID: "bench.items", PageSize: 50,
					SortField: c.field, SortDir: c.dir})
				if err != nil || len(items) != 50 || total != 20000 {
					b.Fatal(err, len(items), total)
				}
			}
		})
	}
	for _, c := range []struct{ field, value string }{{"amount", "1234"}, {"category", "cat-42"}} {
		b.Run(c.field, func(b *testing.B) {
			for b.Loop() {
				items, _, err := svc.ListRecords(ctx, entities.RecordQuery{EntityID: "bench.items", PageSize: 50,
					Filters: []entities.Filter{{Key: c.field, Op: entities.OpEq, Values: []string{c.value}}}})
				if err != nil || len(items) == 0 {
					b.Fatal(err, len(items))
				}
			}
		})
	}
}

// BenchmarkUpsertRecords writes batches of 1,000 records of the scale
// test's entity through UpsertRecordsTx (the data sync's import), each
// batch in a transaction of its own: "create", every id new; "update",
// the same 1,000 records again with a changed filterable value (a
// re-import). PostgreSQL with TENANTKIT_TEST_POSTGRES_URL:
//
//	go test ./entities -run '^$' -bench UpsertRecords -benchtime 20x
//
// Records per second = 1000 / (s/op).
func BenchmarkUpsertRecords(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchUpsertRecords(b, storetest.SQLite(b, entities.Migrations)) })
	b.Run("postgres", func(b *testing.B) { benchUpsertRecords(b, storetest.Postgres(b, entities.Migrations)) })
}

func benchUpsertRecords(b *testing.B, db *store.DB) {
	svc := must(entities.New(db, entities.Options{}))
	ctx, _ := storetest.NewScope(b)
	eid := recEntityID()
	defs := make([]entities.DefinitionInput, len(benchFields))
	for i, d := range benchFields {
		d.EntityID = eid
		defs[i] = d
	}
	if _, err := svc.Batch(ctx, entities.BatchInput{EntityID: eid, Definitions: defs}); err != nil {
		b.Fatal(err)
	}
	upsert := func(items []entities.RecordUpsert, created bool) {
		var out []entities.UpsertOutcome
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			out, err = svc.UpsertRecordsTx(ctx, tx, eid, items)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			if o.Err != nil || o.Skipped || o.Created != created {
				b.Fatalf("outcome %+v", o)
			}
		}
	}
	n := 0
	var last []entities.RecordUpsert
	create := func(b *testing.B, id func(n int) string) {
		cpu := cputime.Process()
		for b.Loop() {
			items := make([]entities.RecordUpsert, 1000)
			for i := range items {
				n++
				items[i] = entities.RecordUpsert{RecordID: id(n), Values: benchItem(n, float64(n%100000))}
			}
			upsert(items, true)
			last = items
		}
		if cpu := cputime.Process() - cpu; cpu > 0 {
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		}
	}
	// create-derived-ids: ids derived from an external id as the data
	// sync's import derives them (UUIDv5: no order between them), where
	// create's are time-ordered (store.NewID).
	b.Run("create-derived-ids", func(b *testing.B) {
		create(b, func(n int) string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte("ext-"+strconv.Itoa(n))).String() })
	})
	b.Run("create", func(b *testing.B) { create(b, func(int) string { return store.NewID() }) })
	b.Run("update", func(b *testing.B) {
		round := 0
		for b.Loop() {
			round++
			items := make([]entities.RecordUpsert, len(last))
			for i, it := range last {
				items[i] = entities.RecordUpsert{RecordID: it.RecordID, Values: map[string]any{"amount": float64(round*7 + i%100)}}
			}
			upsert(items, false)
		}
	})
}
