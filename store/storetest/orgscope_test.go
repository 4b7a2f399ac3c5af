package storetest_test

import (
	"context"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The grid agrees with the scope's own rule: blind scopes do not allow o1,
// seeing ones do, and every scope is the tenant's.
func TestOrgScopes(t *testing.T) {
	g := storetest.NewOrgScopes("t", "o1", "o2")
	check := func(want bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, err := store.ScopeFrom(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sc.TenantID != "t" || sc.AllowsOrganization("o1") != want {
				t.Errorf("scope %+v: allows o1 = %v, want %v", sc, sc.AllowsOrganization("o1"), want)
			}
		}
	}
	g.RunBlind(t, check(false))
	g.RunSeeing(t, check(true))
	if len(g.Blind) < 2 || len(g.Seeing) < 3 {
		t.Fatalf("grid lost cases: %d blind, %d seeing", len(g.Blind), len(g.Seeing))
	}
}
