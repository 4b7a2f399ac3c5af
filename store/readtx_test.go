package store_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestReadTxOneSnapshot: the reads of one ReadTx see one snapshot: a
// write committed between two of them is not seen by the second, so a
// page and its total read in two statements agree.
func TestReadTxOneSnapshot(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		if _, err := insertWidget(ctx, db, sc, "before", nil); err != nil {
			t.Fatal(err)
		}
		count := func(q store.Querier) int {
			t.Helper()
			var n int
			if err := q.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		var first, second int
		err := db.ReadTx(ctx, func(tx *store.Tx) error {
			first = count(tx)
			if _, err := insertWidget(ctx, db, sc, "meanwhile", nil); err != nil { // committed outside
				return err
			}
			second = count(tx)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if first != 1 || second != 1 {
			t.Errorf("a ReadTx read %d widgets, then %d after a commit outside it; want 1 and 1 (one snapshot)", first, second)
		}
		if n := count(db); n != 2 {
			t.Errorf("%d widgets after the ReadTx, want 2", n)
		}
	}, widgets)
}
