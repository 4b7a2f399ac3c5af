//go:build !tenantkit_nopostgres

package identity_test

import (
	"strings"
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
		ids := make([]string, n)
		for i := range ids {
			ids[i] = store.NewID()
		}
		var deletedAt *time.Time
		if revoked {
			deletedAt = &now
		}
		_, err := db.Exec(ctx, `INSERT INTO auth_api_keys (id, tenant_id, name, key_prefix, secret_hash, created_at, deleted_at)
			SELECT id, $2, 'Key', 'tk_' || id, 'hash', $3, $4 FROM unnest($1::text[]) AS k (id)`, ids, tenantID, now, deletedAt)
		is.NoErr(err)
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
	statements := 0
	for _, st := range trips.MarkedStatements() {
		if !strings.Contains(st.SQL, "FROM auth_api_keys") {
			continue
		}
		statements++
		if skipped := storetest.RowsSkipped(t, db, st, "auth_api_keys"); skipped > 100 {
			t.Errorf("%d keys read and left out (3,000 revoked keys in the tenant) for\n%s", skipped, st.SQL)
		}
	}
	is.Equal(statements, 2) // the count and the page
}
