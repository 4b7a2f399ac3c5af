package identity

import (
	"errors"
	"slices"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// RoleAccess and UserAccess answer for the tenant named and no other: what
// a role grants, what a user's roles grant, with the role ids.
func TestRoleAndUserAccess(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{})
		ctx := t.Context()
		other, _ := e.newTenant("Other")
		u, err := e.svc.CreateUser(ctx, System, UserInput{Email: "ana@example.com", Password: "correct horse battery",
			OrganizationID: e.org.ID, Roles: []string{e.roleID}})
		if err != nil {
			t.Fatal(err)
		}

		a, err := e.svc.RoleAccess(ctx, e.tenant.ID, e.roleID)
		if err != nil || !slices.Equal(a.RoleIDs, []string{e.roleID}) || !a.HasFeature("webhooks.view") || a.HasFeature("webhooks.manage") || a.IsSuperAdmin {
			t.Fatalf("RoleAccess = %+v, %v", a, err)
		}
		ua, err := e.svc.UserAccess(ctx, e.tenant.ID, u.ID)
		if err != nil || ua.UserID != u.ID || !slices.Equal(ua.RoleIDs, []string{e.roleID}) || !ua.HasFeature("webhooks.view") {
			t.Fatalf("UserAccess = %+v, %v", ua, err)
		}
		for name, err := range map[string]error{
			"another tenant's role": second(e.svc.RoleAccess(ctx, other.ID, e.roleID)),
			"unknown role":          second(e.svc.RoleAccess(ctx, e.tenant.ID, store.NewID())),
			"another tenant's user": second(e.svc.UserAccess(ctx, other.ID, u.ID)),
			"unknown user":          second(e.svc.UserAccess(ctx, e.tenant.ID, store.NewID())),
		} {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", name, err)
			}
		}
	})
}

func second[T any](_ T, err error) error { return err }

// RecipientUsers resolves user ids, emails and role names in the tenant
// named only; UsersHolding finds the users whose roles grant a feature.
func TestRecipientUsersAndUsersHolding(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{})
		ctx := t.Context()
		other, otherOrg := e.newTenant("Other")
		newRole := func(tenantID, name string, features ...string) string {
			r, err := e.svc.CreateRole(ctx, System, name, tenantID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.SetRoleACL(ctx, System, ACLInput{RoleID: r.ID, Features: features}); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		newUser := func(tenantID, orgID, email string, roles ...string) string {
			u, err := e.svc.CreateUser(ctx, System, UserInput{Email: email, Password: "correct horse battery", OrganizationID: orgID, Roles: roles})
			if err != nil {
				t.Fatal(err)
			}
			return u.ID
		}
		managers := newRole(e.tenant.ID, "managers", "webhooks.manage")
		wildcard := newRole(e.tenant.ID, "all hooks", "webhooks.*")
		ann := newUser(e.tenant.ID, e.org.ID, "ann@example.com", managers)
		bob := newUser(e.tenant.ID, e.org.ID, "bob@example.com", e.roleID) // webhooks.view only
		cid := newUser(e.tenant.ID, e.org.ID, "cid@example.com", wildcard)
		otherManagers := newRole(other.ID, "managers", "webhooks.manage")
		eve := newUser(other.ID, otherOrg.ID, "eve@example.com", otherManagers)

		got, err := e.svc.RecipientUsers(ctx, e.tenant.ID, []string{"managers", " BOB@Example.com ", ann, "nobody@example.com",
			"no such role", eve, "", "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{ann, bob}; !slices.Equal(got, want) {
			t.Errorf("RecipientUsers = %v, want %v (ann by role and id once, bob by email and role; eve is another tenant's)", got, want)
		}
		got, err = e.svc.RecipientUsers(ctx, other.ID, []string{"managers", ann, "ann@example.com"})
		if err != nil || !slices.Equal(got, []string{eve}) {
			t.Errorf("RecipientUsers in the other tenant = %v, %v; want [eve]", got, err)
		}
		got, err = e.svc.UsersHolding(ctx, e.tenant.ID, "", "webhooks.manage")
		if err != nil || !slices.Equal(got, []string{ann, cid}) {
			t.Errorf("UsersHolding(webhooks.manage) = %v, %v; want [ann cid]", got, err)
		}
		// An organization: only the holders who may read it.
		org2, err := e.svc.CreateOrganization(ctx, System, OrganizationInput{Name: "Second", TenantID: e.tenant.ID})
		if err != nil {
			t.Fatal(err)
		}
		limited := newRole(e.tenant.ID, "hq managers", "webhooks.manage")
		if _, err := e.svc.SetRoleACL(ctx, System, ACLInput{RoleID: limited, Features: []string{"webhooks.manage"},
			Organizations: OptionalList{Set: true, Value: []string{e.org.ID}}}); err != nil {
			t.Fatal(err)
		}
		dan := newUser(e.tenant.ID, e.org.ID, "dan@example.com", limited)
		got, err = e.svc.UsersHolding(ctx, e.tenant.ID, e.org.ID, "webhooks.manage")
		if err != nil || !slices.Equal(got, []string{ann, cid, dan}) {
			t.Errorf("UsersHolding(HQ, webhooks.manage) = %v, %v; want [ann cid dan]", got, err)
		}
		got, err = e.svc.UsersHolding(ctx, e.tenant.ID, org2.ID, "webhooks.manage")
		if err != nil || !slices.Equal(got, []string{ann, cid}) {
			t.Errorf("UsersHolding(second org, webhooks.manage) = %v, %v; want [ann cid] (dan's role is limited to HQ)", got, err)
		}
		got, err = e.svc.UsersHolding(ctx, e.tenant.ID, "", "payments.manage")
		if err != nil || len(got) != 0 {
			t.Errorf("UsersHolding(payments.manage) = %v, %v; want none", got, err)
		}
	})
}
