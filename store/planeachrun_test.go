package store_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// PlanEachRun: a read given it answers as without it on both engines, in
// and out of transactions and through Exec; on PostgreSQL it is not kept
// as a prepared statement (so it is planned for its values at every run),
// where the same read without it is (a pool of one connection, so that
// pg_prepared_statements is the reads' session).
func TestPlanEachRun(t *testing.T) {
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		postgres := strings.HasPrefix(url, "postgres")
		if postgres {
			url += "&pool_max_conns=1"
		}
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		defer db.Close()

		marker := strings.ReplaceAll(store.NewID(), "-", "")
		each, kept := `SELECT $1 + 1 /* each `+marker+` */`, `SELECT $1 + 1 /* kept `+marker+` */`
		for range 10 {
			var n int
			is.NoErr(db.QueryRow(ctx, each, store.PlanEachRun, 41).Scan(&n))
			is.Equal(n, 42)
			rows, err := db.Query(ctx, each, store.PlanEachRun, 1)
			is.NoErr(err)
			is.True(rows.Next())
			is.NoErr(rows.Scan(&n))
			is.Equal(n, 2)
			rows.Close()
			is.NoErr(db.QueryRow(ctx, kept, 41).Scan(&n))
			is.Equal(n, 42)
		}
		if postgres {
			prepared := func(label string) int {
				var n int
				is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE $1`,
					"%"+label+" "+marker+"%").Scan(&n))
				return n
			}
			is.Equal(prepared("kept"), 1) // the check sees a statement kept
			is.Equal(prepared("each"), 0) // planned at every run, kept by none
		}
		// Where it is dropped, it changes nothing.
		_, err = db.Exec(ctx, each, store.PlanEachRun, 1)
		is.NoErr(err)
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			var n int
			if err := tx.QueryRow(ctx, each, store.PlanEachRun, 41).Scan(&n); err != nil || n != 42 {
				t.Errorf("in a transaction: %d, %v", n, err)
			}
			_, err := tx.Exec(ctx, each, store.PlanEachRun, 1)
			return err
		}))
	})
}
