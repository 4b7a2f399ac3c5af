package identity

import (
	"context"
	"fmt"
	"slices"

	"github.com/tenantkit/tenantkit/store"
)

// SuperAdminRole is the name of the role Bootstrap creates.
const SuperAdminRole = "superadmin"

// BootstrapInput says which credentials must exist after Bootstrap.
type BootstrapInput struct {
	// APIKey, when set, is the exact secret of a super-admin API key of
	// the default tenant and organization; it is created or restored.
	APIKey string
	// AdminEmail and AdminPassword, when both set, are the credentials of
	// a super-admin user of the default tenant and organization.
	AdminEmail, AdminPassword string
}

// BootstrapResult reports what Bootstrap found or made.
type BootstrapResult struct {
	// TenantID, OrganizationID and RoleID are the default tenant, its
	// default organization and its super-admin role.
	TenantID, OrganizationID, RoleID string
	// FirstStart is true when the default tenant was created by this call.
	FirstStart bool
	// GeneratedAPIKey is the secret of the super-admin key created on first
	// start when no APIKey was given. It is shown this once.
	GeneratedAPIKey string
}

// Bootstrap makes sure a default tenant, organization and super-admin role
// exist (the oldest tenant and its oldest organization count as the
// defaults), then the credentials in, idempotently. Several processes may
// run it at once.
func (s *Service) Bootstrap(ctx context.Context, in BootstrapInput) (*BootstrapResult, error) {
	res := &BootstrapResult{}
	err := s.db.WithLock(ctx, "tenantkit.bootstrap", func() error {
		return s.tx(ctx, func(tx *store.Tx) error {
			*res = BootstrapResult{}
			if err := s.ensureDefaults(ctx, tx, res); err != nil {
				return err
			}
			if in.APIKey != "" {
				if err := s.ensureKey(ctx, tx, res, in.APIKey); err != nil {
					return err
				}
			} else if res.FirstStart {
				res.GeneratedAPIKey = generateSecret()
				if err := s.ensureKey(ctx, tx, res, res.GeneratedAPIKey); err != nil {
					return err
				}
			}
			if in.AdminEmail != "" && in.AdminPassword != "" {
				return s.ensureAdmin(ctx, tx, res, in.AdminEmail, in.AdminPassword)
			}
			return nil
		})
	})
	return res, err
}

func (s *Service) ensureDefaults(ctx context.Context, tx *store.Tx, res *BootstrapResult) error {
	var t *Tenant
	oldest, _, err := s.store.ListTenants(ctx, tx, 0, 1)
	if err == nil && len(oldest) == 0 {
		err = store.ErrNotFound
	}
	switch {
	case isNotFound(err):
		t = &Tenant{ID: store.NewID(), Name: "Default", IsActive: true, CreatedAt: tx.Now()}
		if err := s.store.CreateTenant(ctx, tx, t); err != nil {
			return err
		}
		if _, err := tx.EmitData(ctx, EventTenantCreated, store.Scope{TenantID: t.ID}, t); err != nil {
			return err
		}
		res.FirstStart = true
	case err != nil:
		return err
	default:
		t = oldest[0]
	}
	res.TenantID = t.ID

	o, err := s.store.OldestOrganization(ctx, tx, t.ID)
	switch {
	case isNotFound(err):
		o = &Organization{ID: store.NewID(), TenantID: t.ID, Name: "Default", IsActive: true, CreatedAt: tx.Now()}
		if err := s.store.CreateOrganization(ctx, tx, o); err != nil {
			return err
		}
		if _, err := tx.EmitData(ctx, EventOrganizationCreated, store.Scope{TenantID: t.ID, OrganizationID: o.ID}, o); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	res.OrganizationID = o.ID

	r, err := s.store.GetRoleByName(ctx, tx, t.ID, SuperAdminRole)
	switch {
	case isNotFound(err):
		r = &Role{ID: store.NewID(), TenantID: t.ID, Name: SuperAdminRole, Features: []string{"*"}, IsSuperAdmin: true,
			CreatedAt: tx.Now(), UpdatedAt: tx.Now()}
		if err := s.store.CreateRole(ctx, tx, r); err != nil {
			return err
		}
	case err != nil:
		return err
	case !r.IsSuperAdmin:
		r.IsSuperAdmin, r.UpdatedAt = true, tx.Now()
		if err := s.store.UpdateRoleAccess(ctx, tx, r); err != nil {
			return err
		}
	}
	res.RoleID = r.ID
	return nil
}

// ensureKey makes the secret a live super-admin key of the default tenant.
func (s *Service) ensureKey(ctx context.Context, tx *store.Tx, res *BootstrapResult, secret string) error {
	k, _, err := s.store.APIKeyByPrefix(ctx, tx, prefixOf(secret))
	switch {
	case isNotFound(err):
		_, err := s.createAPIKeyTx(ctx, tx, System, res.TenantID, APIKeyInput{OrganizationID: res.OrganizationID,
			Roles: []string{res.RoleID}}, "Bootstrap key", secret)
		return err
	case err != nil:
		return err
	case k.SecretHash != hashSecret(secret):
		return fmt.Errorf("identity: bootstrap API key: its first %d characters are those of another key; choose another secret", keyPrefixLength)
	}
	if err := s.store.RestoreAPIKey(ctx, tx, k.TenantID, k.ID); err != nil {
		return err
	}
	roles, err := s.store.APIKeyRoles(ctx, tx, k.ID)
	if err != nil || hasRole(roles, res.RoleID) {
		return err
	}
	return s.store.LinkAPIKeyRoles(ctx, tx, k.ID, []string{res.RoleID})
}

// ensureAdmin makes email/password a super-admin user of the default
// tenant.
func (s *Service) ensureAdmin(ctx context.Context, tx *store.Tx, res *BootstrapResult, email, password string) error {
	users, err := s.store.UsersByEmail(ctx, tx, normalizeEmail(email), res.TenantID, 2)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		v := &store.ValidationError{}
		checkPassword(v, "ADMIN_PASSWORD", password)
		if err := v.Err(); err != nil {
			return err
		}
		hash, err := hashPassword(password)
		if err != nil {
			return err
		}
		_, err = s.createUserTx(ctx, tx, System, UserInput{OrganizationID: res.OrganizationID, Roles: []string{res.RoleID}},
			normalizeEmail(email), hash)
		return err
	}
	u := users[0]
	if ok, err := verifyPassword(u.PasswordHash, password); err != nil || !ok {
		hash, err := hashPassword(password)
		if err != nil {
			return err
		}
		if err := s.store.SetUserPassword(ctx, tx, u.TenantID, u.ID, hash, tx.Now()); err != nil {
			return err
		}
	}
	roles, err := s.store.UserRoles(ctx, tx, u.ID)
	if err != nil || hasRole(roles, res.RoleID) {
		return err
	}
	return s.store.LinkUserRoles(ctx, tx, u.ID, []string{res.RoleID})
}

func hasRole(roles []*Role, id string) bool {
	return slices.ContainsFunc(roles, func(r *Role) bool { return r.ID == id })
}
