package identitytest

import (
	"testing"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// testUserList: ListUsers pages the live users of the scope's tenant by
// email, limited to the scope's organizations, searched case-folded with
// LIKE's wildcards taken literally, and counts them all.
func testUserList(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o1, o2 := f.org(a.ID), f.org(a.ID)
	carl := f.user(a.ID, o2.ID, "carl@example.test")
	ann := f.user(a.ID, o1.ID, "ann@example.test")
	bob := f.user(a.ID, o1.ID, "b_b%@example.test")
	gone := f.user(a.ID, o1.ID, "gone@example.test")
	f.user(b.ID, f.org(b.ID).ID, "ann@other.test")
	f.must(f.st.DeleteUser(ctx, f.db, a.ID, gone.ID, f.at(100)), "DeleteUser")

	list := func(sc store.Scope, search string, offset, limit int) ([]string, int) {
		t.Helper()
		items, total, err := f.st.ListUsers(ctx, f.db, sc, search, offset, limit)
		f.must(err, "ListUsers")
		return userIDs(items), total
	}
	ids, total := list(store.Scope{TenantID: a.ID}, "", 0, 10)
	f.equal(ids, []string{ann.ID, bob.ID, carl.ID}, "ListUsers by email, deleted left out")
	f.equal(total, 3, "ListUsers total")
	ids, total = list(store.Scope{TenantID: a.ID}, "", 1, 1)
	f.equal(ids, []string{bob.ID}, "ListUsers page 2 of 1")
	f.equal(total, 3, "ListUsers total of a page")
	ids, total = list(store.Scope{TenantID: a.ID, OrganizationIDs: []string{o2.ID}}, "", 0, 10)
	f.equal(ids, []string{carl.ID}, "ListUsers in o2")
	f.equal(total, 1, "ListUsers total in o2")
	ids, _ = list(store.Scope{TenantID: a.ID}, "ANN", 0, 10)
	f.equal(ids, []string{ann.ID}, "ListUsers search, case-folded, one tenant")
	ids, _ = list(store.Scope{TenantID: a.ID}, "_b%", 0, 10)
	f.equal(ids, []string{bob.ID}, "ListUsers search with LIKE wildcards taken literally")
	ids, total = list(store.Scope{TenantID: a.ID}, "%", 0, 10)
	f.equal(len(ids), 1, "ListUsers search for %")
	f.equal(total, 1, "ListUsers total of a search")

	// UserTenant finds live users only.
	tn, err := f.st.UserTenant(ctx, f.db, ann.ID)
	f.must(err, "UserTenant")
	f.equal(tn, a.ID, "UserTenant")
	_, err = f.st.UserTenant(ctx, f.db, gone.ID)
	f.notFound(err, "UserTenant(deleted)")
	_, err = f.st.GetUser(ctx, f.db, a.ID, gone.ID)
	f.notFound(err, "GetUser(deleted)")
	f.notFound(f.st.DeleteUser(ctx, f.db, a.ID, gone.ID, f.at(101)), "DeleteUser(deleted)")
	f.notFound(f.st.DeleteUser(ctx, f.db, b.ID, ann.ID, f.at(101)), "DeleteUser(another tenant)")

	// Organization moves and sign-in times.
	f.must(f.st.SetUserOrganization(ctx, f.db, a.ID, ann.ID, o2.ID), "SetUserOrganization")
	f.notFound(f.st.SetUserOrganization(ctx, f.db, b.ID, ann.ID, o1.ID), "SetUserOrganization(another tenant)")
	f.must(f.st.RecordLogin(ctx, f.db, a.ID, ann.ID, f.at(50)), "RecordLogin")
	got, err := f.st.GetUser(ctx, f.db, a.ID, ann.ID)
	f.must(err, "GetUser")
	if got.OrganizationID != o2.ID || got.LastLoginAt == nil || !got.LastLoginAt.Equal(f.at(50)) {
		t.Errorf("after the move and sign-in: %+v", got.User)
	}
	if carlNow, _ := f.st.GetUser(ctx, f.db, a.ID, carl.ID); carlNow == nil || carlNow.LastLoginAt != nil {
		t.Errorf("a user who never signed in has a LastLoginAt: %+v", carlNow)
	}
}

// testRoleDelete: role links are replaced and counted (live holders
// only), and a role is deleted with the links of deleted holders.
func testRoleDelete(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.tenant(), f.tenant()
	o := f.org(a.ID)
	r1 := f.roleNamed(a.ID, "r1", nil, nil)
	r2 := f.roleNamed(a.ID, "r2", nil, nil)
	u := f.user(a.ID, o.ID, "ann@example.test")
	k := f.key(a.ID, nil)
	f.must(f.st.LinkUserRoles(ctx, f.db, u.ID, []string{r1.ID}), "LinkUserRoles")
	f.must(f.st.ReplaceUserRoles(ctx, f.db, u.ID, []string{r2.ID, r1.ID}), "ReplaceUserRoles")
	refs, err := f.st.UserRoleRefs(ctx, f.db, []string{u.ID, store.NewID()})
	f.must(err, "UserRoleRefs")
	f.equal(refs[u.ID], []identity.RoleRef{{ID: r1.ID, Name: "r1"}, {ID: r2.ID, Name: "r2"}}, "UserRoleRefs by name")
	f.equal(len(refs), 1, "UserRoleRefs leaves out users without roles")
	f.must(f.st.ReplaceUserRoles(ctx, f.db, u.ID, nil), "ReplaceUserRoles(none)")
	roles, err := f.st.UserRoles(ctx, f.db, u.ID)
	f.must(err, "UserRoles")
	f.equal(len(roles), 0, "roles after ReplaceUserRoles(none)")

	f.must(f.st.ReplaceUserRoles(ctx, f.db, u.ID, []string{r1.ID}), "ReplaceUserRoles")
	f.must(f.st.LinkAPIKeyRoles(ctx, f.db, k.ID, []string{r1.ID}), "LinkAPIKeyRoles")
	users, keys, err := f.st.RoleHolders(ctx, f.db, r1.ID)
	f.must(err, "RoleHolders")
	f.equal([]int{users, keys}, []int{1, 1}, "RoleHolders")
	f.must(f.st.DeleteUser(ctx, f.db, a.ID, u.ID, f.at(10)), "DeleteUser")
	f.must(f.st.DeleteAPIKey(ctx, f.db, a.ID, k.ID, f.at(10)), "DeleteAPIKey")
	users, keys, err = f.st.RoleHolders(ctx, f.db, r1.ID)
	f.must(err, "RoleHolders")
	f.equal([]int{users, keys}, []int{0, 0}, "RoleHolders after the holders' deletion")

	f.notFound(f.st.DeleteRole(ctx, f.db, b.ID, r1.ID), "DeleteRole(another tenant)")
	f.must(f.st.DeleteRole(ctx, f.db, a.ID, r1.ID), "DeleteRole (links of deleted holders go with it)")
	_, err = f.st.GetRole(ctx, f.db, a.ID, r1.ID)
	f.notFound(err, "GetRole(deleted)")
	f.notFound(f.st.DeleteRole(ctx, f.db, a.ID, r1.ID), "DeleteRole(deleted)")
	if _, err := f.st.GetRole(ctx, f.db, a.ID, r2.ID); err != nil {
		t.Errorf("the other role: %v", err)
	}
}

// testRevokedSessions: a revoked token id is reported until its expiry,
// when a later revocation may remove it.
func testRevokedSessions(t *testing.T, f *fixture) {
	ctx := t.Context()
	revoked := func(id string) bool {
		t.Helper()
		ok, err := f.st.SessionRevoked(ctx, f.db, id)
		f.must(err, "SessionRevoked")
		return ok
	}
	t1, t2 := store.NewID(), store.NewID()
	f.equal(revoked(t1), false, "SessionRevoked before")
	f.must(f.st.RevokeSession(ctx, f.db, t1, "u", f.at(10), f.at(0)), "RevokeSession")
	f.must(f.st.RevokeSession(ctx, f.db, t1, "u", f.at(10), f.at(1)), "RevokeSession(again)")
	f.equal(revoked(t1), true, "SessionRevoked after")
	f.equal(revoked(t2), false, "SessionRevoked(another token)")
	f.must(f.st.RevokeSession(ctx, f.db, t2, "u", f.at(30), f.at(20)), "RevokeSession past t1's expiry")
	f.equal(revoked(t2), true, "SessionRevoked(t2)")
}
