// Package identitytest is a conformance suite for identity.Store
// implementations: Run checks every behaviour the identity Service relies
// on, as documented on identity.Store: tenant scoping of every lookup,
// soft deletes and what "live" means for tenants, organizations and API
// keys, the order, paging and totals of lists, conflicts (a role name or
// user email twice in a tenant, an API key prefix twice anywhere, a role
// link twice), single-use and expiring reset tokens, role links, and that
// every method runs on the transaction it is given.
//
// newStore is called once per subtest and must return a database holding
// no identity data (tenant lists are global, so a shared database would
// make their totals unpredictable) together with the Store under test.
// Subtests run in parallel.
package identitytest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, identity.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *fixture)
	}{
		{"TenantGetAndDelete", testTenantGetAndDelete},
		{"TenantList", testTenantList},
		{"OrganizationTenantScoped", testOrganizationScoped},
		{"OrganizationSoftDelete", testOrganizationSoftDelete},
		{"OrganizationListAndOldest", testOrganizationList},
		{"RoleRoundTrip", testRoleRoundTrip},
		{"RoleTenantScoped", testRoleScoped},
		{"RoleDuplicateName", testRoleDuplicateName},
		{"RoleUpdateAccess", testRoleUpdateAccess},
		{"RoleList", testRoleList},
		{"UserTenantScoped", testUserScoped},
		{"UserDuplicateEmail", testUserDuplicateEmail},
		{"UsersByEmail", testUsersByEmail},
		{"UserPassword", testUserPassword},
		{"RoleLinks", testRoleLinks},
		{"UsersWithRoles", testUsersWithRoles},
		{"APIKeyRoundTrip", testAPIKeyRoundTrip},
		{"APIKeyPrefixUnique", testAPIKeyPrefixUnique},
		{"APIKeyLive", testAPIKeyLive},
		{"APIKeyDeleteScoped", testAPIKeyDeleteScoped},
		{"APIKeyRestore", testAPIKeyRestore},
		{"APIKeyList", testAPIKeyList},
		{"PasswordResetSingleUse", testResetSingleUse},
		{"PasswordResetExpiry", testResetExpiry},
		{"UserList", testUserList},
		{"RoleDelete", testRoleDelete},
		{"RevokedSessions", testRevokedSessions},
		{"Transaction", testTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			c.test(t, &fixture{t: t, db: db, st: st, base: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)})
		})
	}
}

// fixture creates rows through the Store under test and checks results.
type fixture struct {
	t    *testing.T
	db   *store.DB
	st   identity.Store
	base time.Time
	n    int
}

// at is the fixture's clock: base plus seconds, microsecond precision as
// both engines store it.
func (f *fixture) at(seconds int) time.Time { return f.base.Add(time.Duration(seconds) * time.Second) }

func (f *fixture) seq() int { f.n++; return f.n }

func (f *fixture) must(err error, what string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

func (f *fixture) tenantAt(name string, created time.Time) *identity.Tenant {
	f.t.Helper()
	t := &identity.Tenant{ID: store.NewID(), Name: name, IsActive: true, CreatedAt: created}
	f.must(f.st.CreateTenant(f.t.Context(), f.db, t), "CreateTenant")
	return t
}

func (f *fixture) tenant() *identity.Tenant {
	return f.tenantAt(fmt.Sprintf("tenant %d", f.seq()), f.at(f.n))
}

func (f *fixture) orgAt(tenantID, name string, parent *string, created time.Time) *identity.Organization {
	f.t.Helper()
	o := &identity.Organization{ID: store.NewID(), TenantID: tenantID, Name: name, ParentID: parent, IsActive: true, CreatedAt: created}
	f.must(f.st.CreateOrganization(f.t.Context(), f.db, o), "CreateOrganization")
	return o
}

func (f *fixture) org(tenantID string) *identity.Organization {
	return f.orgAt(tenantID, fmt.Sprintf("org %d", f.seq()), nil, f.at(f.n))
}

func (f *fixture) roleNamed(tenantID, name string, features []string, orgs []string) *identity.Role {
	f.t.Helper()
	r := &identity.Role{ID: store.NewID(), TenantID: tenantID, Name: name, Features: features, Organizations: orgs,
		CreatedAt: f.at(0), UpdatedAt: f.at(0)}
	f.must(f.st.CreateRole(f.t.Context(), f.db, r), "CreateRole")
	return r
}

func (f *fixture) user(tenantID, orgID, email string) *identity.UserRecord {
	f.t.Helper()
	u := &identity.UserRecord{User: identity.User{ID: store.NewID(), TenantID: tenantID, OrganizationID: orgID, Email: email,
		CreatedAt: f.at(f.seq())}, PasswordHash: "hash-" + email, PasswordChangedAt: f.at(f.n)}
	f.must(f.st.CreateUser(f.t.Context(), f.db, u), "CreateUser")
	return u
}

func (f *fixture) keyAt(tenantID string, orgID *string, created time.Time) *identity.APIKeyRecord {
	f.t.Helper()
	id := store.NewID()
	k := &identity.APIKeyRecord{APIKey: identity.APIKey{ID: id, TenantID: tenantID, OrganizationID: orgID, Name: "key " + id,
		KeyPrefix: "tk_" + id[len(id)-8:], CreatedAt: created}, SecretHash: "secret-" + id}
	f.must(f.st.CreateAPIKey(f.t.Context(), f.db, k), "CreateAPIKey")
	return k
}

func (f *fixture) key(tenantID string, orgID *string) *identity.APIKeyRecord {
	return f.keyAt(tenantID, orgID, f.at(f.seq()))
}

// is fails unless err is (wraps) want; want nil means no error.
func (f *fixture) is(err, want error, what string) {
	f.t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		f.t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

func (f *fixture) notFound(err error, what string) {
	f.t.Helper()
	f.is(err, store.ErrNotFound, what)
}

func (f *fixture) equal(got, want any, what string) {
	f.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func tenantIDs(ts []*identity.Tenant) []string {
	return ids(ts, func(t *identity.Tenant) string { return t.ID })
}
func orgIDs(os []*identity.Organization) []string {
	return ids(os, func(o *identity.Organization) string { return o.ID })
}
func roleIDs(rs []*identity.Role) []string {
	return ids(rs, func(r *identity.Role) string { return r.ID })
}
func keyIDs(ks []*identity.APIKeyRecord) []string {
	return ids(ks, func(k *identity.APIKeyRecord) string { return k.ID })
}
func userIDs(us []*identity.UserRecord) []string {
	return ids(us, func(u *identity.UserRecord) string { return u.ID })
}

func ptr[T any](v T) *T { return &v }

func testTenantGetAndDelete(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	got, err := f.st.GetTenant(ctx, f.db, a.ID)
	f.must(err, "GetTenant")
	if got.ID != a.ID || got.Name != a.Name || !got.IsActive || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("GetTenant = %+v, want %+v", got, a)
	}
	_, err = f.st.GetTenant(ctx, f.db, store.NewID())
	f.notFound(err, "GetTenant(unknown)")
	f.must(f.st.DeleteTenant(ctx, f.db, a.ID, f.at(100)), "DeleteTenant")
	_, err = f.st.GetTenant(ctx, f.db, a.ID)
	f.notFound(err, "GetTenant(deleted)")
	f.notFound(f.st.DeleteTenant(ctx, f.db, a.ID, f.at(101)), "DeleteTenant(deleted)")
	f.notFound(f.st.DeleteTenant(ctx, f.db, store.NewID(), f.at(101)), "DeleteTenant(unknown)")
	inactive := &identity.Tenant{ID: store.NewID(), Name: "inactive", CreatedAt: f.at(5)}
	f.must(f.st.CreateTenant(ctx, f.db, inactive), "CreateTenant(inactive)")
	got, err = f.st.GetTenant(ctx, f.db, inactive.ID)
	f.must(err, "GetTenant(inactive)")
	f.equal(got.IsActive, false, "GetTenant(inactive).IsActive")
}

func testTenantList(t *testing.T, f *fixture) {
	ctx := t.Context()
	c := f.tenantAt("c", f.at(30))
	a := f.tenantAt("a", f.at(10))
	b1 := f.tenantAt("b1", f.at(20))
	b2 := f.tenantAt("b2", f.at(20)) // same time: id decides
	gone := f.tenantAt("gone", f.at(15))
	f.must(f.st.DeleteTenant(ctx, f.db, gone.ID, f.at(40)), "DeleteTenant")
	mid := []string{b1.ID, b2.ID}
	slices.Sort(mid)
	want := append(append([]string{a.ID}, mid...), c.ID)

	all, total, err := f.st.ListTenants(ctx, f.db, 0, 10)
	f.must(err, "ListTenants")
	f.equal(tenantIDs(all), want, "ListTenants(0, 10) order (created_at, id; deleted left out)")
	f.equal(total, 4, "ListTenants total")
	page, total, err := f.st.ListTenants(ctx, f.db, 1, 2)
	f.must(err, "ListTenants(1, 2)")
	f.equal(tenantIDs(page), want[1:3], "ListTenants(1, 2)")
	f.equal(total, 4, "ListTenants(1, 2) total")
	page, total, err = f.st.ListTenants(ctx, f.db, 4, 2)
	f.must(err, "ListTenants(4, 2)")
	f.equal(len(page), 0, "ListTenants past the end")
	f.equal(total, 4, "ListTenants past the end total")
}

func testOrganizationScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	parent := f.org(a.ID)
	o := f.orgAt(a.ID, "child", &parent.ID, f.at(7))
	got, err := f.st.GetOrganization(ctx, f.db, a.ID, o.ID)
	f.must(err, "GetOrganization")
	if got.TenantID != a.ID || got.Name != "child" || got.ParentID == nil || *got.ParentID != parent.ID || !got.IsActive || !got.CreatedAt.Equal(o.CreatedAt) {
		t.Errorf("GetOrganization = %+v, want %+v", got, o)
	}
	got, err = f.st.GetOrganization(ctx, f.db, a.ID, parent.ID)
	f.must(err, "GetOrganization(parent)")
	f.equal(got.ParentID == nil, true, "a root organization's ParentID is nil")
	_, err = f.st.GetOrganization(ctx, f.db, b.ID, o.ID)
	f.notFound(err, "GetOrganization(another tenant)")
	tenantID, err := f.st.OrganizationTenant(ctx, f.db, o.ID)
	f.must(err, "OrganizationTenant")
	f.equal(tenantID, a.ID, "OrganizationTenant")
	_, err = f.st.OrganizationTenant(ctx, f.db, store.NewID())
	f.notFound(err, "OrganizationTenant(unknown)")
	f.notFound(f.st.DeleteOrganization(ctx, f.db, b.ID, o.ID, f.at(50)), "DeleteOrganization(another tenant)")
	_, err = f.st.GetOrganization(ctx, f.db, a.ID, o.ID)
	f.must(err, "GetOrganization after another tenant's delete")
	orgs, err := f.st.ListOrganizations(ctx, f.db, b.ID)
	f.must(err, "ListOrganizations(another tenant)")
	f.equal(len(orgs), 0, "ListOrganizations(another tenant)")
}

func testOrganizationSoftDelete(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	o := f.org(a.ID)
	f.must(f.st.DeleteOrganization(ctx, f.db, a.ID, o.ID, f.at(50)), "DeleteOrganization")
	_, err := f.st.GetOrganization(ctx, f.db, a.ID, o.ID)
	f.notFound(err, "GetOrganization(deleted)")
	_, err = f.st.OrganizationTenant(ctx, f.db, o.ID)
	f.notFound(err, "OrganizationTenant(deleted)")
	f.notFound(f.st.DeleteOrganization(ctx, f.db, a.ID, o.ID, f.at(51)), "DeleteOrganization(deleted)")
	orgs, err := f.st.ListOrganizations(ctx, f.db, a.ID)
	f.must(err, "ListOrganizations")
	f.equal(len(orgs), 0, "ListOrganizations leaves deleted out")
	_, err = f.st.OldestOrganization(ctx, f.db, a.ID)
	f.notFound(err, "OldestOrganization(only one, deleted)")
}

func testOrganizationList(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	_, err := f.st.OldestOrganization(ctx, f.db, a.ID)
	f.notFound(err, "OldestOrganization(none)")
	beta := f.orgAt(a.ID, "beta", nil, f.at(1))
	alpha := f.orgAt(a.ID, "alpha", nil, f.at(3))
	gamma1 := f.orgAt(a.ID, "gamma", nil, f.at(2))
	gamma2 := f.orgAt(a.ID, "gamma", nil, f.at(2))
	gone := f.orgAt(a.ID, "aaa", nil, f.at(0))
	f.must(f.st.DeleteOrganization(ctx, f.db, a.ID, gone.ID, f.at(9)), "DeleteOrganization")
	f.orgAt(b.ID, "aardvark", nil, f.at(0))
	gammas := []string{gamma1.ID, gamma2.ID}
	slices.Sort(gammas)
	orgs, err := f.st.ListOrganizations(ctx, f.db, a.ID)
	f.must(err, "ListOrganizations")
	f.equal(orgIDs(orgs), append([]string{alpha.ID, beta.ID}, gammas...), "ListOrganizations order (name, id; own tenant, live)")
	oldest, err := f.st.OldestOrganization(ctx, f.db, a.ID)
	f.must(err, "OldestOrganization")
	f.equal(oldest.ID, beta.ID, "OldestOrganization (deleted and other tenants' left out)")
	c := f.tenant()
	x := f.orgAt(c.ID, "x", nil, f.at(5))
	y := f.orgAt(c.ID, "y", nil, f.at(5))
	first := min(x.ID, y.ID)
	oldest, err = f.st.OldestOrganization(ctx, f.db, c.ID)
	f.must(err, "OldestOrganization(tie)")
	f.equal(oldest.ID, first, "OldestOrganization breaks a created_at tie by id")
}

func testRoleRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	o := f.org(a.ID)
	all := &identity.Role{ID: store.NewID(), TenantID: a.ID, Name: "all", Features: []string{"x.*", "y.view"}, IsSuperAdmin: true,
		CreatedAt: f.at(1), UpdatedAt: f.at(2)}
	f.must(f.st.CreateRole(ctx, f.db, all), "CreateRole")
	none := f.roleNamed(a.ID, "none", []string{}, []string{})
	some := f.roleNamed(a.ID, "some", nil, []string{o.ID})
	got, err := f.st.GetRole(ctx, f.db, a.ID, all.ID)
	f.must(err, "GetRole")
	if got.Name != "all" || got.TenantID != a.ID || !got.IsSuperAdmin || !slices.Equal(got.Features, all.Features) ||
		got.Organizations != nil || !got.CreatedAt.Equal(all.CreatedAt) || !got.UpdatedAt.Equal(all.UpdatedAt) {
		t.Errorf("GetRole = %+v, want %+v", got, all)
	}
	got, err = f.st.GetRole(ctx, f.db, a.ID, none.ID)
	f.must(err, "GetRole(none)")
	if got.Organizations == nil || len(got.Organizations) != 0 || got.Features == nil {
		t.Errorf("GetRole(none) = %+v: an empty organization list is not nil (all), and features are never nil", got)
	}
	got, err = f.st.GetRoleByName(ctx, f.db, a.ID, "some")
	f.must(err, "GetRoleByName")
	f.equal(got.ID, some.ID, "GetRoleByName")
	f.equal(got.Organizations, []string{o.ID}, "GetRoleByName organizations")
	_, err = f.st.GetRoleByName(ctx, f.db, a.ID, "SOME")
	f.notFound(err, "GetRoleByName(other case)")
	_, err = f.st.GetRole(ctx, f.db, a.ID, store.NewID())
	f.notFound(err, "GetRole(unknown)")
}

func testRoleScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	r := f.roleNamed(a.ID, "editor", []string{"x.view"}, nil)
	_, err := f.st.GetRole(ctx, f.db, b.ID, r.ID)
	f.notFound(err, "GetRole(another tenant)")
	_, err = f.st.GetRoleByName(ctx, f.db, b.ID, "editor")
	f.notFound(err, "GetRoleByName(another tenant)")
	tenantID, err := f.st.RoleTenant(ctx, f.db, r.ID)
	f.must(err, "RoleTenant")
	f.equal(tenantID, a.ID, "RoleTenant")
	_, err = f.st.RoleTenant(ctx, f.db, store.NewID())
	f.notFound(err, "RoleTenant(unknown)")
	roles, total, err := f.st.ListRoles(ctx, f.db, b.ID, 0, 10)
	f.must(err, "ListRoles(another tenant)")
	f.equal(len(roles), 0, "ListRoles(another tenant)")
	f.equal(total, 0, "ListRoles(another tenant) total")
}

func testRoleDuplicateName(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	f.roleNamed(a.ID, "editor", []string{}, nil)
	dup := &identity.Role{ID: store.NewID(), TenantID: a.ID, Name: "editor", Features: []string{}, CreatedAt: f.at(1), UpdatedAt: f.at(1)}
	f.is(f.st.CreateRole(ctx, f.db, dup), store.ErrConflict, "CreateRole(same name, same tenant)")
	other := &identity.Role{ID: store.NewID(), TenantID: b.ID, Name: "editor", Features: []string{}, CreatedAt: f.at(1), UpdatedAt: f.at(1)}
	f.must(f.st.CreateRole(ctx, f.db, other), "CreateRole(same name, another tenant)")
	_, total, err := f.st.ListRoles(ctx, f.db, a.ID, 0, 10)
	f.must(err, "ListRoles")
	f.equal(total, 1, "roles of the tenant after a refused duplicate")
}

func testRoleUpdateAccess(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o := f.org(a.ID)
	r := f.roleNamed(a.ID, "editor", []string{"x.view"}, nil)
	upd := *r
	upd.Features, upd.IsSuperAdmin, upd.Organizations, upd.UpdatedAt = []string{"y.*"}, true, []string{o.ID}, f.at(60)
	f.must(f.st.UpdateRoleAccess(ctx, f.db, &upd), "UpdateRoleAccess")
	got, err := f.st.GetRole(ctx, f.db, a.ID, r.ID)
	f.must(err, "GetRole")
	if !slices.Equal(got.Features, []string{"y.*"}) || !got.IsSuperAdmin || !slices.Equal(got.Organizations, []string{o.ID}) ||
		!got.UpdatedAt.Equal(f.at(60)) || !got.CreatedAt.Equal(r.CreatedAt) || got.Name != "editor" {
		t.Errorf("after UpdateRoleAccess: %+v", got)
	}
	upd.Organizations = nil
	f.must(f.st.UpdateRoleAccess(ctx, f.db, &upd), "UpdateRoleAccess(all organizations)")
	got, err = f.st.GetRole(ctx, f.db, a.ID, r.ID)
	f.must(err, "GetRole")
	f.equal(got.Organizations == nil, true, "organizations set back to nil (all)")
	wrong := upd
	wrong.TenantID, wrong.Features = b.ID, []string{"*"}
	f.notFound(f.st.UpdateRoleAccess(ctx, f.db, &wrong), "UpdateRoleAccess(another tenant)")
	got, err = f.st.GetRole(ctx, f.db, a.ID, r.ID)
	f.must(err, "GetRole")
	f.equal(got.Features, []string{"y.*"}, "features after another tenant's update")
}

func testRoleList(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	c := f.roleNamed(a.ID, "c", nil, nil)
	x := f.roleNamed(a.ID, "a", nil, nil)
	bb := f.roleNamed(a.ID, "b", nil, nil)
	f.roleNamed(b.ID, "0", nil, nil)
	want := []string{x.ID, bb.ID, c.ID}
	roles, total, err := f.st.ListRoles(ctx, f.db, a.ID, 0, 10)
	f.must(err, "ListRoles")
	f.equal(roleIDs(roles), want, "ListRoles order (name)")
	f.equal(total, 3, "ListRoles total")
	roles, total, err = f.st.ListRoles(ctx, f.db, a.ID, 1, 1)
	f.must(err, "ListRoles(1, 1)")
	f.equal(roleIDs(roles), want[1:2], "ListRoles(1, 1)")
	f.equal(total, 3, "ListRoles(1, 1) total")
}

func testUserScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o := f.org(a.ID)
	u := f.user(a.ID, o.ID, "ann@example.test")
	got, err := f.st.GetUser(ctx, f.db, a.ID, u.ID)
	f.must(err, "GetUser")
	if got.Email != u.Email || got.OrganizationID != o.ID || got.TenantID != a.ID || got.PasswordHash != u.PasswordHash ||
		!got.PasswordChangedAt.Equal(u.PasswordChangedAt) || !got.CreatedAt.Equal(u.CreatedAt) {
		t.Errorf("GetUser = %+v, want %+v", got, u)
	}
	_, err = f.st.GetUser(ctx, f.db, b.ID, u.ID)
	f.notFound(err, "GetUser(another tenant)")
	_, err = f.st.GetUser(ctx, f.db, a.ID, store.NewID())
	f.notFound(err, "GetUser(unknown)")
}

func testUserDuplicateEmail(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	oa, ob := f.org(a.ID), f.org(b.ID)
	f.user(a.ID, oa.ID, "ann@example.test")
	dup := &identity.UserRecord{User: identity.User{ID: store.NewID(), TenantID: a.ID, OrganizationID: oa.ID, Email: "ann@example.test",
		CreatedAt: f.at(1)}, PasswordHash: "h", PasswordChangedAt: f.at(1)}
	f.is(f.st.CreateUser(ctx, f.db, dup), store.ErrConflict, "CreateUser(same email, same tenant)")
	f.user(b.ID, ob.ID, "ann@example.test")
	users, err := f.st.UsersByEmail(ctx, f.db, "ann@example.test", a.ID, 10)
	f.must(err, "UsersByEmail")
	f.equal(len(users), 1, "users with the email in the tenant after a refused duplicate")
}

func testUsersByEmail(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b, c, gone := f.tenant(), f.tenant(), f.tenant(), f.tenant()
	ua := f.user(a.ID, f.org(a.ID).ID, "ann@example.test")
	ub := f.user(b.ID, f.org(b.ID).ID, "ann@example.test")
	uc := f.user(c.ID, f.org(c.ID).ID, "ann@example.test")
	f.user(gone.ID, f.org(gone.ID).ID, "ann@example.test")
	f.user(a.ID, f.org(a.ID).ID, "bob@example.test")
	f.must(f.st.DeleteTenant(ctx, f.db, gone.ID, f.at(90)), "DeleteTenant")

	users, err := f.st.UsersByEmail(ctx, f.db, "ann@example.test", b.ID, 2)
	f.must(err, "UsersByEmail(tenant)")
	f.equal(userIDs(users), []string{ub.ID}, "UsersByEmail in one tenant")
	users, err = f.st.UsersByEmail(ctx, f.db, "ann@example.test", "", 10)
	f.must(err, "UsersByEmail(all tenants)")
	got := userIDs(users)
	slices.Sort(got)
	want := []string{ua.ID, ub.ID, uc.ID}
	slices.Sort(want)
	f.equal(got, want, "UsersByEmail in every live tenant")
	users, err = f.st.UsersByEmail(ctx, f.db, "ann@example.test", "", 2)
	f.must(err, "UsersByEmail(limit 2)")
	f.equal(len(users), 2, "UsersByEmail honours the limit")
	users, err = f.st.UsersByEmail(ctx, f.db, "ann@example.test", gone.ID, 2)
	f.must(err, "UsersByEmail(deleted tenant)")
	f.equal(len(users), 0, "UsersByEmail in a deleted tenant")
	users, err = f.st.UsersByEmail(ctx, f.db, "nobody@example.test", "", 2)
	f.must(err, "UsersByEmail(unknown)")
	f.equal(len(users), 0, "UsersByEmail of an unknown email")
}

func testUsersWithRoles(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o := f.org(a.ID)
	admins := f.roleNamed(a.ID, "admins", []string{"x.manage"}, nil)
	viewers := f.roleNamed(a.ID, "viewers", []string{"x.view"}, nil)
	other := f.roleNamed(b.ID, "admins", []string{"x.manage"}, nil)
	ann := f.user(a.ID, o.ID, "ann@example.test")
	bob := f.user(a.ID, o.ID, "bob@example.test")
	cid := f.user(a.ID, o.ID, "cid@example.test")
	f.user(a.ID, o.ID, "dan@example.test") // no role
	eve := f.user(b.ID, f.org(b.ID).ID, "eve@example.test")
	f.must(f.st.LinkUserRoles(ctx, f.db, ann.ID, []string{admins.ID, viewers.ID}), "LinkUserRoles")
	f.must(f.st.LinkUserRoles(ctx, f.db, bob.ID, []string{viewers.ID}), "LinkUserRoles")
	f.must(f.st.LinkUserRoles(ctx, f.db, cid.ID, []string{admins.ID}), "LinkUserRoles")
	f.must(f.st.LinkUserRoles(ctx, f.db, eve.ID, []string{other.ID}), "LinkUserRoles")

	users, err := f.st.UsersWithRoles(ctx, f.db, a.ID, []string{admins.ID}, 10)
	f.must(err, "UsersWithRoles")
	f.equal(userIDs(users), []string{ann.ID, cid.ID}, "UsersWithRoles(admins)")
	users, err = f.st.UsersWithRoles(ctx, f.db, a.ID, []string{admins.ID, viewers.ID}, 10)
	f.must(err, "UsersWithRoles")
	f.equal(userIDs(users), []string{ann.ID, bob.ID, cid.ID}, "UsersWithRoles(admins, viewers), each user once")
	users, err = f.st.UsersWithRoles(ctx, f.db, a.ID, []string{admins.ID, viewers.ID}, 2)
	f.must(err, "UsersWithRoles")
	f.equal(userIDs(users), []string{ann.ID, bob.ID}, "UsersWithRoles honours the limit")
	users, err = f.st.UsersWithRoles(ctx, f.db, a.ID, []string{other.ID}, 10)
	f.must(err, "UsersWithRoles")
	f.equal(len(users), 0, "UsersWithRoles of another tenant's role")
	users, err = f.st.UsersWithRoles(ctx, f.db, a.ID, nil, 10)
	f.must(err, "UsersWithRoles")
	f.equal(len(users), 0, "UsersWithRoles of no role")
}

func testUserPassword(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	u := f.user(a.ID, f.org(a.ID).ID, "ann@example.test")
	f.must(f.st.SetUserPassword(ctx, f.db, a.ID, u.ID, "new-hash", f.at(70)), "SetUserPassword")
	got, err := f.st.GetUser(ctx, f.db, a.ID, u.ID)
	f.must(err, "GetUser")
	if got.PasswordHash != "new-hash" || !got.PasswordChangedAt.Equal(f.at(70)) {
		t.Errorf("after SetUserPassword: hash %q, changed %v", got.PasswordHash, got.PasswordChangedAt)
	}
	f.notFound(f.st.SetUserPassword(ctx, f.db, b.ID, u.ID, "other", f.at(80)), "SetUserPassword(another tenant)")
	got, err = f.st.GetUser(ctx, f.db, a.ID, u.ID)
	f.must(err, "GetUser")
	f.equal(got.PasswordHash, "new-hash", "hash after another tenant's SetUserPassword")
}

func testRoleLinks(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	o := f.org(a.ID)
	zed := f.roleNamed(a.ID, "zed", []string{"z.view"}, nil)
	alpha := f.roleNamed(a.ID, "alpha", []string{"a.view"}, []string{o.ID})
	unused := f.roleNamed(a.ID, "mid", nil, nil)
	u := f.user(a.ID, o.ID, "ann@example.test")
	f.must(f.st.LinkUserRoles(ctx, f.db, u.ID, []string{zed.ID, alpha.ID}), "LinkUserRoles")
	roles, err := f.st.UserRoles(ctx, f.db, u.ID)
	f.must(err, "UserRoles")
	f.equal(roleIDs(roles), []string{alpha.ID, zed.ID}, "UserRoles by name")
	if len(roles) == 2 && (!slices.Equal(roles[0].Organizations, []string{o.ID}) || !slices.Equal(roles[1].Features, []string{"z.view"})) {
		t.Errorf("UserRoles returned incomplete roles: %+v %+v", roles[0], roles[1])
	}
	f.is(f.st.LinkUserRoles(ctx, f.db, u.ID, []string{zed.ID}), store.ErrConflict, "LinkUserRoles(existing link)")

	k1, k2, k3 := f.key(a.ID, nil), f.key(a.ID, nil), f.key(a.ID, nil)
	f.must(f.st.LinkAPIKeyRoles(ctx, f.db, k1.ID, []string{zed.ID, alpha.ID}), "LinkAPIKeyRoles")
	f.must(f.st.LinkAPIKeyRoles(ctx, f.db, k2.ID, []string{unused.ID}), "LinkAPIKeyRoles")
	f.is(f.st.LinkAPIKeyRoles(ctx, f.db, k2.ID, []string{unused.ID}), store.ErrConflict, "LinkAPIKeyRoles(existing link)")
	roles, err = f.st.APIKeyRoles(ctx, f.db, k1.ID)
	f.must(err, "APIKeyRoles")
	f.equal(roleIDs(roles), []string{alpha.ID, zed.ID}, "APIKeyRoles by name")
	roles, err = f.st.APIKeyRoles(ctx, f.db, k3.ID)
	f.must(err, "APIKeyRoles(none)")
	f.equal(len(roles), 0, "APIKeyRoles of a key without roles")
	roles, err = f.st.UserRoles(ctx, f.db, k1.ID)
	f.must(err, "UserRoles(a key's id)")
	f.equal(len(roles), 0, "UserRoles does not see key links")

	refs, err := f.st.APIKeyRoleRefs(ctx, f.db, []string{k1.ID, k2.ID, k3.ID})
	f.must(err, "APIKeyRoleRefs")
	f.equal(refs[k1.ID], []identity.RoleRef{{ID: alpha.ID, Name: "alpha"}, {ID: zed.ID, Name: "zed"}}, "APIKeyRoleRefs(k1) by name")
	f.equal(refs[k2.ID], []identity.RoleRef{{ID: unused.ID, Name: "mid"}}, "APIKeyRoleRefs(k2)")
	if _, ok := refs[k3.ID]; ok || len(refs) != 2 {
		t.Errorf("APIKeyRoleRefs = %v: want k1 and k2 only", refs)
	}
	refs, err = f.st.APIKeyRoleRefs(ctx, f.db, nil)
	f.must(err, "APIKeyRoleRefs(none)")
	f.equal(len(refs), 0, "APIKeyRoleRefs of no keys")
}

func testAPIKeyRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o := f.org(a.ID)
	k := &identity.APIKeyRecord{APIKey: identity.APIKey{ID: store.NewID(), TenantID: a.ID, OrganizationID: &o.ID, Name: "ci",
		Description: ptr("for CI"), KeyPrefix: "tk_roundtr", ExpiresAt: ptr(f.at(3600)), CreatedAt: f.at(1)}, SecretHash: "abc"}
	f.must(f.st.CreateAPIKey(ctx, f.db, k), "CreateAPIKey")
	got, err := f.st.GetAPIKey(ctx, f.db, a.ID, k.ID)
	f.must(err, "GetAPIKey")
	if got.Name != "ci" || got.OrganizationID == nil || *got.OrganizationID != o.ID || got.Description == nil || *got.Description != "for CI" ||
		got.KeyPrefix != k.KeyPrefix || got.SecretHash != "abc" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(f.at(3600)) ||
		!got.CreatedAt.Equal(f.at(1)) || got.TenantID != a.ID {
		t.Errorf("GetAPIKey = %+v, want %+v", got, k)
	}
	plain := f.key(a.ID, nil)
	got, err = f.st.GetAPIKey(ctx, f.db, a.ID, plain.ID)
	f.must(err, "GetAPIKey(plain)")
	if got.OrganizationID != nil || got.Description != nil || got.ExpiresAt != nil {
		t.Errorf("GetAPIKey(plain) = %+v: want nil organization, description and expiry", got)
	}
	_, err = f.st.GetAPIKey(ctx, f.db, b.ID, k.ID)
	f.notFound(err, "GetAPIKey(another tenant)")
	tenantID, err := f.st.APIKeyTenant(ctx, f.db, k.ID)
	f.must(err, "APIKeyTenant")
	f.equal(tenantID, a.ID, "APIKeyTenant")
	_, err = f.st.APIKeyTenant(ctx, f.db, store.NewID())
	f.notFound(err, "APIKeyTenant(unknown)")
	byPrefix, live, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
	f.must(err, "APIKeyByPrefix")
	f.equal(byPrefix.ID, k.ID, "APIKeyByPrefix id")
	f.equal(byPrefix.SecretHash, "abc", "APIKeyByPrefix secret hash")
	f.equal(live, true, "APIKeyByPrefix live")
	_, _, err = f.st.APIKeyByPrefix(ctx, f.db, "tk_unknown!")
	f.notFound(err, "APIKeyByPrefix(unknown)")
}

func testAPIKeyPrefixUnique(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	k := f.key(a.ID, nil)
	dup := &identity.APIKeyRecord{APIKey: identity.APIKey{ID: store.NewID(), TenantID: b.ID, Name: "dup", KeyPrefix: k.KeyPrefix,
		CreatedAt: f.at(1)}, SecretHash: "other"}
	f.is(f.st.CreateAPIKey(ctx, f.db, dup), store.ErrConflict, "CreateAPIKey(prefix in use in another tenant)")
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, k.ID, f.at(50)), "DeleteAPIKey")
	dup.ID = store.NewID()
	f.is(f.st.CreateAPIKey(ctx, f.db, dup), store.ErrConflict, "CreateAPIKey(prefix of a deleted key)")
	got, _, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
	f.must(err, "APIKeyByPrefix")
	f.equal(got.ID, k.ID, "the prefix still finds the first key")
}

func testAPIKeyLive(t *testing.T, f *fixture) {
	ctx := t.Context()
	live := func(k *identity.APIKeyRecord) bool {
		t.Helper()
		_, ok, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
		f.must(err, "APIKeyByPrefix")
		return ok
	}
	a := f.tenant()
	o := f.org(a.ID)
	deleted := f.key(a.ID, nil)
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, deleted.ID, f.at(50)), "DeleteAPIKey")
	f.equal(live(deleted), false, "a deleted key is found by prefix but not live")
	_, err := f.st.GetAPIKey(ctx, f.db, a.ID, deleted.ID)
	f.notFound(err, "GetAPIKey(deleted)")
	_, err = f.st.APIKeyTenant(ctx, f.db, deleted.ID)
	f.notFound(err, "APIKeyTenant(deleted)")

	expired := &identity.APIKeyRecord{APIKey: identity.APIKey{ID: store.NewID(), TenantID: a.ID, Name: "expired", KeyPrefix: "tk_expired1",
		ExpiresAt: ptr(f.base.Add(-time.Hour)), CreatedAt: f.at(1)}, SecretHash: "h"}
	f.must(f.st.CreateAPIKey(ctx, f.db, expired), "CreateAPIKey(expired)")
	f.equal(live(expired), true, "expiry is the service's business, not liveness")

	orgKey := f.key(a.ID, &o.ID)
	f.equal(live(orgKey), true, "a key of a live organization is live")
	f.must(f.st.DeleteOrganization(ctx, f.db, a.ID, o.ID, f.at(51)), "DeleteOrganization")
	f.equal(live(orgKey), false, "a key of a deleted organization is not live")

	inactive := &identity.Tenant{ID: store.NewID(), Name: "inactive", CreatedAt: f.at(2)}
	f.must(f.st.CreateTenant(ctx, f.db, inactive), "CreateTenant(inactive)")
	f.equal(live(f.key(inactive.ID, nil)), false, "a key of an inactive tenant is not live")

	gone := f.tenant()
	goneKey := f.key(gone.ID, nil)
	f.equal(live(goneKey), true, "a tenant-level key of a live tenant is live")
	f.must(f.st.DeleteTenant(ctx, f.db, gone.ID, f.at(52)), "DeleteTenant")
	f.equal(live(goneKey), false, "a key of a deleted tenant is not live")
}

func testAPIKeyDeleteScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	k := f.key(a.ID, nil)
	f.notFound(f.st.DeleteAPIKey(ctx, f.db, b.ID, k.ID, f.at(50)), "DeleteAPIKey(another tenant)")
	_, live, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
	f.must(err, "APIKeyByPrefix")
	f.equal(live, true, "a key after another tenant's delete")
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, k.ID, f.at(50)), "DeleteAPIKey")
	f.notFound(f.st.DeleteAPIKey(ctx, f.db, a.ID, k.ID, f.at(51)), "DeleteAPIKey(deleted)")
}

func testAPIKeyRestore(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	k := &identity.APIKeyRecord{APIKey: identity.APIKey{ID: store.NewID(), TenantID: a.ID, Name: "boot", KeyPrefix: "tk_restore1",
		ExpiresAt: ptr(f.at(10)), CreatedAt: f.at(1)}, SecretHash: "h"}
	f.must(f.st.CreateAPIKey(ctx, f.db, k), "CreateAPIKey")
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, k.ID, f.at(50)), "DeleteAPIKey")
	f.notFound(f.st.RestoreAPIKey(ctx, f.db, b.ID, k.ID), "RestoreAPIKey(another tenant)")
	_, live, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
	f.must(err, "APIKeyByPrefix")
	f.equal(live, false, "a deleted key after another tenant's restore")
	f.must(f.st.RestoreAPIKey(ctx, f.db, a.ID, k.ID), "RestoreAPIKey")
	got, live, err := f.st.APIKeyByPrefix(ctx, f.db, k.KeyPrefix)
	f.must(err, "APIKeyByPrefix")
	f.equal(live, true, "a restored key is live")
	f.equal(got.ExpiresAt == nil, true, "a restored key does not expire")
	f.must(f.st.RestoreAPIKey(ctx, f.db, a.ID, k.ID), "RestoreAPIKey(live key)")
}

func testAPIKeyList(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o1, o2 := f.org(a.ID), f.org(a.ID)
	tenantLevel := f.keyAt(a.ID, nil, f.at(10))
	k1 := f.keyAt(a.ID, &o1.ID, f.at(30))
	k2 := f.keyAt(a.ID, &o2.ID, f.at(20))
	t1 := f.keyAt(a.ID, &o1.ID, f.at(40))
	t2 := f.keyAt(a.ID, &o1.ID, f.at(40)) // same time: id decides, descending
	gone := f.keyAt(a.ID, nil, f.at(50))
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, gone.ID, f.at(60)), "DeleteAPIKey")
	f.keyAt(b.ID, nil, f.at(45))
	ties := []string{t1.ID, t2.ID}
	slices.Sort(ties)
	slices.Reverse(ties)
	want := append(ties, k1.ID, k2.ID, tenantLevel.ID)

	keys, total, err := f.st.ListAPIKeys(ctx, f.db, store.Scope{TenantID: a.ID}, 0, 10)
	f.must(err, "ListAPIKeys")
	f.equal(keyIDs(keys), want, "ListAPIKeys order (newest first; own tenant, live)")
	f.equal(total, 5, "ListAPIKeys total")
	keys, total, err = f.st.ListAPIKeys(ctx, f.db, store.Scope{TenantID: a.ID}, 1, 2)
	f.must(err, "ListAPIKeys(1, 2)")
	f.equal(keyIDs(keys), want[1:3], "ListAPIKeys(1, 2)")
	f.equal(total, 5, "ListAPIKeys(1, 2) total")

	keys, total, err = f.st.ListAPIKeys(ctx, f.db, store.Scope{TenantID: a.ID, OrganizationIDs: []string{o2.ID}}, 0, 10)
	f.must(err, "ListAPIKeys(limited)")
	f.equal(keyIDs(keys), []string{k2.ID, tenantLevel.ID}, "ListAPIKeys limited to one organization (and tenant-level keys)")
	f.equal(total, 2, "ListAPIKeys(limited) total")
	keys, total, err = f.st.ListAPIKeys(ctx, f.db, store.Scope{TenantID: a.ID, OrganizationIDs: []string{}}, 0, 10)
	f.must(err, "ListAPIKeys(no organizations)")
	f.equal(keyIDs(keys), []string{tenantLevel.ID}, "ListAPIKeys limited to no organization")
	f.equal(total, 1, "ListAPIKeys(no organizations) total")
}

func testResetSingleUse(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	u := f.user(a.ID, f.org(a.ID).ID, "ann@example.test")
	f.must(f.st.CreatePasswordReset(ctx, f.db, &identity.PasswordReset{TokenHash: "t1", UserID: u.ID, ExpiresAt: f.at(3600), CreatedAt: f.at(0)}), "CreatePasswordReset")
	got, err := f.st.ConsumePasswordReset(ctx, f.db, "t1", f.at(10))
	f.must(err, "ConsumePasswordReset")
	if got.ID != u.ID || got.TenantID != a.ID || got.Email != u.Email || got.OrganizationID != u.OrganizationID {
		t.Errorf("ConsumePasswordReset = %+v, want user %+v", got, u)
	}
	_, err = f.st.ConsumePasswordReset(ctx, f.db, "t1", f.at(11))
	f.notFound(err, "ConsumePasswordReset(used)")
	_, err = f.st.ConsumePasswordReset(ctx, f.db, "unknown", f.at(11))
	f.notFound(err, "ConsumePasswordReset(unknown)")
}

func testResetExpiry(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	u := f.user(a.ID, f.org(a.ID).ID, "ann@example.test")
	f.must(f.st.CreatePasswordReset(ctx, f.db, &identity.PasswordReset{TokenHash: "t2", UserID: u.ID, ExpiresAt: f.at(100), CreatedAt: f.at(0)}), "CreatePasswordReset")
	_, err := f.st.ConsumePasswordReset(ctx, f.db, "t2", f.at(100))
	f.notFound(err, "ConsumePasswordReset at its expiry")
	_, err = f.st.ConsumePasswordReset(ctx, f.db, "t2", f.at(200))
	f.notFound(err, "ConsumePasswordReset after its expiry")
	got, err := f.st.ConsumePasswordReset(ctx, f.db, "t2", f.at(99))
	f.must(err, "ConsumePasswordReset before its expiry (a refused consume leaves the token as it was)")
	if got != nil {
		f.equal(got.ID, u.ID, "ConsumePasswordReset user")
	}
}

func testTransaction(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.tenant()
	rollback := errors.New("roll back")
	var inTx *identity.Tenant
	err := f.db.Tx(ctx, func(tx *store.Tx) error {
		inTx = &identity.Tenant{ID: store.NewID(), Name: "in tx", IsActive: true, CreatedAt: f.at(1)}
		if err := f.st.CreateTenant(ctx, tx, inTx); err != nil {
			return err
		}
		if _, err := f.st.GetTenant(ctx, tx, inTx.ID); err != nil {
			return fmt.Errorf("GetTenant in the transaction: %w", err)
		}
		r := &identity.Role{ID: store.NewID(), TenantID: a.ID, Name: "in tx", Features: []string{}, CreatedAt: f.at(1), UpdatedAt: f.at(1)}
		if err := f.st.CreateRole(ctx, tx, r); err != nil {
			return err
		}
		if err := f.st.DeleteTenant(ctx, tx, a.ID, f.at(2)); err != nil {
			return err
		}
		return rollback
	})
	f.is(err, rollback, "transaction")
	_, err = f.st.GetTenant(ctx, f.db, inTx.ID)
	f.notFound(err, "GetTenant after rollback")
	_, err = f.st.GetRoleByName(ctx, f.db, a.ID, "in tx")
	f.notFound(err, "GetRoleByName after rollback")
	_, err = f.st.GetTenant(ctx, f.db, a.ID)
	f.must(err, "GetTenant of a tenant whose delete rolled back")
}
