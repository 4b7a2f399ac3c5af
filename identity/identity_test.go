package identity

import (
	"errors"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

func TestFeatureMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		granted, required string
		want              bool
	}{
		{"*", "anything.at.all", true},
		{"webhooks.view", "webhooks.view", true},
		{"webhooks.view", "webhooks.manage", false},
		{"webhooks.*", "webhooks", true},
		{"webhooks.*", "webhooks.view", true},
		{"webhooks.*", "webhooks.secrets.rotate", true},
		{"webhooks.*", "webhooksx.view", false},
		{"business_rules.rules.*", "business_rules.rules.view", true},
		{"business_rules.rules.*", "business_rules.sets", false},
		{"webhooks", "webhooks.view", false},
	}
	for _, tt := range tests {
		if got := FeatureMatches(tt.granted, tt.required); got != tt.want {
			t.Errorf("FeatureMatches(%q, %q) = %v, want %v", tt.granted, tt.required, got, tt.want)
		}
	}
}

func TestIdentityFromRoles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	id := identityFromRoles([]*Role{
		{ID: "r1", Name: "a", Features: []string{"x.view"}, Organizations: []string{"o1"}},
		{ID: "r2", Name: "b", Features: []string{"x.view", "y.*"}, Organizations: []string{"o2"}},
	})
	is.Equal(id.Roles, []string{"a", "b"})
	is.Equal(id.RoleIDs, []string{"r1", "r2"}) // in the order of Roles
	is.Equal(id.Features, []string{"x.view", "y.*"})
	is.Equal(id.OrganizationIDs, []string{"o1", "o2"})
	is.True(id.HasFeature("y.manage"))
	is.Equal(id.Missing("x.view", "z.view"), []string{"z.view"})

	id = identityFromRoles([]*Role{{Name: "a", Organizations: []string{"o1"}}, {Name: "all"}})
	is.True(id.OrganizationIDs == nil) // one unrestricted role lifts the restriction
	id = identityFromRoles(nil)
	is.Equal(len(id.OrganizationIDs), 0)
	is.True(id.OrganizationIDs != nil) // no roles: no organizations, not all of them
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, err := hashPassword("correct horse")
	is.NoErr(err)
	ok, err := verifyPassword(h, "correct horse")
	is.NoErr(err)
	is.True(ok)
	ok, _ = verifyPassword(h, "wrong horse")
	is.True(!ok)
	h2, _ := hashPassword("correct horse")
	is.True(h != h2) // salted
	_, err = verifyPassword("$bcrypt$nope", "x")
	is.True(err != nil)
}

func open(t *testing.T, db *store.DB) *Service {
	t.Helper()
	svc, err := openIdentity(t.Context(), db, Options{SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestBootstrapIsIdempotent(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		svc := open(t, db)

		first, err := svc.Bootstrap(ctx, BootstrapInput{})
		is.NoErr(err)
		is.True(first.FirstStart)
		is.True(first.GeneratedAPIKey != "")
		id, err := svc.AuthenticateKey(ctx, first.GeneratedAPIKey)
		is.NoErr(err)
		is.True(id.IsSuperAdmin)
		is.Equal(id.TenantID, first.TenantID)
		is.Equal(id.OrganizationID, first.OrganizationID)

		// Restarts find the same defaults and print no new key.
		const fixed = "tk_fixed_bootstrap_key_for_tests"
		again, err := svc.Bootstrap(ctx, BootstrapInput{APIKey: fixed, AdminEmail: "root@example.test", AdminPassword: "root-password"})
		is.NoErr(err)
		is.True(!again.FirstStart)
		is.Equal(again.GeneratedAPIKey, "")
		is.Equal(again.TenantID, first.TenantID)
		_, err = svc.AuthenticateKey(ctx, fixed)
		is.NoErr(err)
		_, _, err = svc.Login(ctx, "root@example.test", "root-password", "")
		is.NoErr(err)

		// A deleted bootstrap key comes back; a changed admin password is set again.
		keys, _, err := svc.ListAPIKeys(ctx, System, first.TenantID, 0, 10)
		is.NoErr(err)
		for _, k := range keys {
			if k.KeyPrefix == prefixOf(fixed) {
				is.NoErr(svc.DeleteAPIKey(ctx, System, k.ID))
			}
		}
		_, err = svc.AuthenticateKey(ctx, fixed)
		is.True(errors.Is(err, ErrUnauthenticated))
		_, err = svc.Bootstrap(ctx, BootstrapInput{APIKey: fixed, AdminEmail: "root@example.test", AdminPassword: "new-root-password"})
		is.NoErr(err)
		_, err = svc.AuthenticateKey(ctx, fixed)
		is.NoErr(err)
		_, _, err = svc.Login(ctx, "root@example.test", "new-root-password", "")
		is.NoErr(err)

		tenants, total, err := svc.ListTenants(ctx, System, 0, 10)
		is.NoErr(err)
		is.Equal(total, 1)
		is.Equal(tenants[0].Name, "Default")
	})
}

// Several processes starting together create one default tenant.
func TestBootstrapConcurrently(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		var wg sync.WaitGroup
		results := make([]*BootstrapResult, 3)
		errs := make([]error, 3)
		for i := range results {
			db, err := store.Open(ctx, url, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			wg.Go(func() {
				svc, err := openIdentity(ctx, db, Options{SecretKey: []byte("0123456789abcdef0123456789abcdef")})
				if err != nil {
					errs[i] = err
					return
				}
				results[i], errs[i] = svc.Bootstrap(ctx, BootstrapInput{APIKey: "tk_shared_bootstrap_key_0001"})
			})
		}
		wg.Wait()
		firstStarts := 0
		for i := range results {
			is.NoErr(errs[i])
			is.Equal(results[i].TenantID, results[0].TenantID)
			if results[i].FirstStart {
				firstStarts++
			}
		}
		is.Equal(firstStarts, 1)
	})
}
