//go:build !tenantkit_nopostgres

package toggles_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// TestReadsSkipDeletedToggles: the cache's load of every toggle with its
// overrides, and the toggles list with its count, read the live toggles,
// however many deleted ones the table keeps (it keeps them all; migration
// 0003). The work is counted in rows read and left out
// (storetest.RowsSkipped), not timed.
func TestReadsSkipDeletedToggles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, toggles.Migrations)
	ctx := t.Context()
	now := time.Now().UTC()
	seed := func(n int, deleted bool) []string {
		var deletedAt *time.Time
		if deleted {
			deletedAt = &now
		}
		ids := make([]string, 0, n)
		storetest.SeedRows(t, db, "feature_toggles", "id, identifier, name, type, created_at, updated_at, deleted_at", 0, n,
			func(int) []any {
				id := store.NewID()
				ids = append(ids, id)
				return []any{id, "flag_" + id, "Flag", "boolean", now, now, deletedAt}
			})
		return ids
	}
	live := seed(2, false)
	seed(3000, true)
	_, err := db.Exec(ctx, `INSERT INTO feature_toggle_overrides (id, toggle_id, tenant_id, value, created_at, updated_at)
		VALUES ($1, $2, $3, 'true', $4, $4)`, store.NewID(), live[0], store.NewID(), now)
	is.NoErr(err)
	_, err = db.Exec(ctx, `VACUUM (ANALYZE) feature_toggles`)
	is.NoErr(err)
	_, err = db.Exec(ctx, `VACUUM (ANALYZE) feature_toggle_overrides`)
	is.NoErr(err)

	st := toggles.NewSQLStore()
	marked := trips.Mark(ctx)
	ts, os, err := st.LoadAll(marked, db)
	is.NoErr(err)
	is.Equal(len(ts), 2)
	is.Equal(len(os), 1)
	list, total, err := st.ListToggles(marked, db, toggles.ListFilter{Limit: 20})
	is.NoErr(err)
	is.Equal(total, 2)
	is.Equal(len(list), 2)
	statements := storetest.CheckRowsSkipped(t, db, trips, "feature_toggles", "feature_toggles", 100)
	is.Equal(statements, 4) // the load's toggles and overrides, the list's count and page
}
