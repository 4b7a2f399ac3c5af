package store_test

import (
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Counts.Add sums a key's deltas (merged within one call, spread over
// slots across calls, concurrent calls included), Sum adds up the rows a
// predicate selects, and ReadableCounted selects the counts of no
// organization (the empty text) and of the organizations a scope reads.
func TestCounts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS test_kept_counts (tenant_id TEXT NOT NULL, organization_id TEXT NOT NULL,
			kind TEXT NOT NULL, slot INTEGER NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tenant_id, organization_id, kind, slot))`)
		is.NoErr(err)
		counts := store.NewCounts("test_kept_counts", "tenant_id", "organization_id", "kind")
		key := func(org, kind string) []string { return []string{sc.TenantID, org, kind} }
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			return counts.Add(ctx, tx, store.CountDelta{Key: key("", "a"), N: 2}, store.CountDelta{Key: key("o1", "a"), N: 1},
				store.CountDelta{Key: key("", "a"), N: 1}, store.CountDelta{Key: key("o2", "b"), N: 0})
		}))
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if err := db.Tx(ctx, func(tx *store.Tx) error {
					return counts.Add(ctx, tx, store.CountDelta{Key: key("o2", "b"), N: 2}, store.CountDelta{Key: key("", "a"), N: -1},
						store.CountDelta{Key: key("", "a"), N: 1})
				}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		sum := func(where *store.Conds) int {
			n, err := counts.Sum(ctx, db, where)
			is.NoErr(err)
			return n
		}
		is.Equal(sum(store.Where("tenant_id = ?", sc.TenantID)), 44)
		is.Equal(sum(store.Where("tenant_id = ?", sc.TenantID).And("kind = ?", "a")), 4)
		is.Equal(sum(store.Where("tenant_id = ?", sc.TenantID).And("kind = ?", "c")), 0)
		blind := store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{}}
		is.Equal(sum(blind.ReadableCounted("tenant_id", "organization_id")), 3)
		o1 := store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{"o1"}}
		is.Equal(sum(o1.ReadableCounted("tenant_id", "organization_id")), 4)
		is.Equal(sum(store.Scope{TenantID: sc.TenantID}.ReadableCounted("tenant_id", "organization_id")), 44)
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error { return counts.Add(ctx, tx) }))
	})
}

// The Adds of one transaction write to one slot: a transaction that adds
// to a key and, in a later Add, takes from it writes a single count row,
// so that concurrent transactions doing the same never hold each other's
// rows in opposite orders (on PostgreSQL such a deadlock would be waited
// for, then retried). Every key's count is exact after them.
func TestCountsOneSlotPerTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS test_slot_counts (tenant_id TEXT NOT NULL, kind TEXT NOT NULL,
			slot INTEGER NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tenant_id, kind, slot))`)
		is.NoErr(err)
		counts := store.NewCounts("test_slot_counts", "tenant_id", "kind")
		add := func(tx *store.Tx, kind string, n int64) error {
			return counts.Add(ctx, tx, store.CountDelta{Key: []string{sc.TenantID, kind}, N: n})
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 5 {
					if err := db.Tx(ctx, func(tx *store.Tx) error {
						if err := add(tx, "pending", 1); err != nil {
							return err
						}
						if err := add(tx, "pending", -1); err != nil {
							return err
						}
						return add(tx, "settled", 1)
					}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		var rows, zeros int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*), COALESCE(SUM(CASE WHEN n = 0 THEN 1 ELSE 0 END), 0) FROM test_slot_counts
			WHERE tenant_id = $1 AND kind = 'pending'`, sc.TenantID).Scan(&rows, &zeros))
		is.Equal(rows, zeros) // each transaction's +1 and −1 met in one row
		settled, err := counts.Sum(ctx, db, store.Where("tenant_id = ? AND kind = ?", sc.TenantID, "settled"))
		is.NoErr(err)
		is.Equal(settled, 80)
	})
}
