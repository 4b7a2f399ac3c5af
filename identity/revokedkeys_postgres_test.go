//go:build !tenantkit_nopostgres

package identity_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestKeysListSkipsRevokedKeys: the API keys list and its count read the
// tenant's live keys, however many revoked keys the table keeps (it keeps
// them all; migration 0004). Before it they were read through every
// revoked key of the tenant: 1,622 for 2 live ones after a 30-minute soak.
// The work is counted in rows read and left out (storetest.RowsSkipped),
// not timed.
func TestKeysListSkipsRevokedKeys(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, identity.Migrations)
	ctx := t.Context()
	tenant, other := store.NewID(), store.NewID()
	now := time.Now().UTC()
	for _, id := range []string{tenant, other} {
		_, err := db.Exec(ctx, `INSERT INTO auth_tenants (id, name, created_at) VALUES ($1, 'Tenant', $2)`, id, now)
		is.NoErr(err)
	}
	// 3,000 revoked keys of the tenant, 1,000 live ones of another, then
	// the tenant's 2 live keys.
	seed := func(tenantID string, n int, revoked bool) {
		var deletedAt *time.Time
		if revoked {
			deletedAt = &now
		}
		storetest.SeedRows(t, db, "auth_api_keys", "id, tenant_id, name, key_prefix, secret_hash, created_at, deleted_at", 0, n,
			func(int) []any {
				id := store.NewID()
				return []any{id, tenantID, "Key", "tk_" + id, "hash", now, deletedAt}
			})
	}
	seed(tenant, 3000, true)
	seed(other, 1000, false)
	seed(tenant, 2, false)
	_, err := db.Exec(ctx, `VACUUM (ANALYZE) auth_api_keys`)
	is.NoErr(err)

	keys, total, err := identity.SQLStore{}.ListAPIKeys(trips.Mark(ctx), db, store.Scope{TenantID: tenant}, 0, 20)
	is.NoErr(err)
	is.Equal(total, 2)
	is.Equal(len(keys), 2)
	statements := storetest.CheckRowsSkipped(t, db, trips, "FROM auth_api_keys", "auth_api_keys", 100)
	is.Equal(statements, 2) // the count and the page
}
