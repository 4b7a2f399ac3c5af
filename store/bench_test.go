package store_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// eachEngine runs a benchmark on SQLite and, when configured, PostgreSQL.
func eachEngine(b *testing.B, fn func(b *testing.B, db *store.DB)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, storetest.SQLite(b, widgets)) })
	b.Run("postgres", func(b *testing.B) { fn(b, storetest.Postgres(b, widgets)) })
}

// BenchmarkTxInsert is one write transaction inserting one row and
// emitting one event, the shape of every area's create.
func BenchmarkTxInsert(b *testing.B) {
	eachEngine(b, func(b *testing.B, db *store.DB) {
		ctx, sc := storetest.NewScope(b)
		b.ReportAllocs()
		for b.Loop() {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if _, err := insertWidget(ctx, tx, sc, store.NewID(), nil); err != nil {
					return err
				}
				_, err := tx.EmitData(ctx, "bench.widget.created", sc, map[string]int{"n": 1})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGetByID reads one row by primary key from the reader pool,
// from parallel goroutines.
func BenchmarkGetByID(b *testing.B) {
	eachEngine(b, func(b *testing.B, db *store.DB) {
		ctx, sc := storetest.NewScope(b)
		id, err := insertWidget(ctx, db, sc, "one", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := store.One(ctx, db, scanWidget, `SELECT id, name, enabled, data, note, created_at FROM widgets WHERE tenant_id = $1 AND id = $2`, sc.TenantID, id); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
