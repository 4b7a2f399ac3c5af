//go:build !tenantkit_nopostgres

package rules_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestGetSetRoundTrips: on PostgreSQL a set's detail is one statement,
// the set joined with its members, instead of a read transaction (BEGIN,
// the set, its members, COMMIT: four round trips); a set none of whose
// members the caller may read costs a second, the set alone. Only the
// statements of the read itself are counted (its context carries a
// mark: storetest.RoundTrips.Mark), not the background work sharing the
// pool.
func TestGetSetRoundTrips(t *testing.T) {
	t.Parallel()
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, rules.Migrations)
	is := is.New(t)
	svc := must(rules.New(db, rules.Options{}))
	tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
	scoped := func(sc store.Scope) context.Context {
		return trips.Mark(store.WithScope(t.Context(), sc))
	}
	whole := scoped(store.Scope{TenantID: tenant})
	inO1 := scoped(store.Scope{TenantID: tenant, OrganizationID: o1})
	onlyO2 := scoped(store.Scope{TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o2}})
	createRule(t, svc, inO1, ruleInput("O1_RULE"))
	createRule(t, svc, whole, ruleInput("TENANT_RULE"))
	createSet(t, svc, whole, "SET")
	addMember(t, svc, inO1, "SET", "O1_RULE", 1)
	addMember(t, svc, whole, "SET", "TENANT_RULE", 2)
	createSet(t, svc, whole, "HIDDEN")
	addMember(t, svc, inO1, "HIDDEN", "O1_RULE", 1)

	read := func(ctx context.Context, id string, members int) int64 {
		t.Helper()
		before := trips.Marked.Load()
		rs, err := svc.GetSet(ctx, id)
		is.NoErr(err)
		is.Equal(len(rs.Members), members)
		return trips.Marked.Load() - before
	}
	is.Equal(read(whole, "SET", 2), int64(1))
	is.Equal(read(onlyO2, "SET", 1), int64(1))
	is.Equal(read(onlyO2, "HIDDEN", 0), int64(2))
}
