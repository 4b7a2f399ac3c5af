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
