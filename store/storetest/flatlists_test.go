package storetest

import (
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// flatItems makes a table of tenants' items in db, seeds tenant "small"
// and tenant "large" with their numbers of rows, and returns the two
// reads the FollowTheTable tests count for a tenant: a count of its rows,
// and a page of 20 of them in their index's order.
func flatItems(t *testing.T, db *store.DB, small, large int) (count, page func(tenant string) func() error) {
	t.Helper()
	ctx := t.Context()
	if _, err := db.Exec(ctx, `CREATE TABLE flat_items (tenant_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (tenant_id, id))`); err != nil {
		t.Fatal(err)
	}
	for tenant, n := range map[string]int{"small": small, "large": large} {
		SeedRows(t, db, "flat_items", "tenant_id, id", 0, n, func(i int) []any { return []any{tenant, fmt.Sprintf("%06d", i)} })
	}
	Analyze(t, db)
	count = func(tenant string) func() error {
		return func() error {
			var n int
			return db.QueryRow(ctx, `SELECT count(*) FROM flat_items WHERE tenant_id = $1`, tenant).Scan(&n)
		}
	}
	page = func(tenant string) func() error {
		return func() error {
			_, err := store.Many(ctx, db, func(s store.Scanner) (string, error) {
				var id string
				return id, s.Scan(&id)
			}, `SELECT id FROM flat_items WHERE tenant_id = $1 ORDER BY id LIMIT 20`, tenant)
			return err
		}
	}
	return count, page
}
