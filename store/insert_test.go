package store_test

import (
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BatchInsert writes any number of rows through its 50/20/10/5/2/1-row
// statements, and its suffix applies to each of them (here: conflicting
// rows are skipped and not counted).
func TestBatchInsert(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		ins := store.NewBatchInsert("widgets", "tenant_id, id, name, created_at", "ON CONFLICT (tenant_id, name) DO NOTHING")
		ins.Prepare(ctx, db)
		row := func(i int) []any { return []any{sc.TenantID, store.NewID(), fmt.Sprint("w", i), db.Now()} }
		var rows [][]any
		for i := range 88 { // 50 + 20 + 10 + 5 + 2 + 1
			rows = append(rows, row(i))
		}
		n, err := ins.Insert(ctx, db, rows)
		is.NoErr(err)
		is.Equal(n, int64(88))
		// Again, with 5 names already taken among 12.
		rows = rows[:0]
		for i := 83; i < 95; i++ {
			rows = append(rows, row(i))
		}
		n, err = ins.Insert(ctx, db, rows)
		is.NoErr(err)
		is.Equal(n, int64(7))
		var count int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&count))
		is.Equal(count, 95)
	}, widgets)
}
