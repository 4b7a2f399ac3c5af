package identity

import (
	"context"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantkit/tenantkit/store"
)

// Kinds of row a DeleteHook is told about.
const (
	DeletedUser = "user"
	DeletedRole = "role"
)

// DeleteHook is told, inside the transaction that deletes it, of a user or
// role (kind DeletedUser or DeletedRole) of a tenant being deleted, so that
// another area removes what it keeps about it in the same transaction. An
// error rolls the deletion back.
type DeleteHook func(ctx context.Context, tx *store.Tx, kind, tenantID, id string) error

// OnDelete adds a hook that DeleteUser and DeleteRole run in their
// transaction. Add hooks before serving requests; they run in the order
// added.
func (s *Service) OnDelete(hook DeleteHook) {
	s.deleteHooks = append(s.deleteHooks, hook)
}

func (s *Service) runDeleteHooks(ctx context.Context, tx *store.Tx, kind, tenantID, id string) error {
	for _, h := range s.deleteHooks {
		if err := h(ctx, tx, kind, tenantID, id); err != nil {
			return err
		}
	}
	return nil
}

// MaxUserSearchLength bounds ListUsers' search text.
const MaxUserSearchLength = 254

// ListUsers pages the live users of the actor's tenant (or the named one,
// for super admins), by email: for a caller limited to some
// organizations, only the users of those. search, when not "", keeps the
// users whose email contains it, ignoring case. Each user's roles are
// filled; password hashes never leave the package.
func (s *Service) ListUsers(ctx context.Context, actor *Identity, tenantID, search string, offset, limit int) ([]*User, int, error) {
	tenantID, err := actingTenant(actor, tenantID)
	if err != nil {
		return nil, 0, err
	}
	search = strings.TrimSpace(search)
	if len(search) > MaxUserSearchLength {
		return nil, 0, store.Invalid("search", "must be at most 254 bytes")
	}
	sc := store.Scope{TenantID: tenantID}
	if !actor.IsSuperAdmin {
		sc.OrganizationIDs = actor.OrganizationIDs
	}
	rows, total, err := s.store.ListUsers(ctx, s.db, sc, search, offset, limit)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	roles, err := s.store.UserRoleRefs(ctx, s.db, ids)
	if err != nil {
		return nil, 0, err
	}
	users := make([]*User, len(rows))
	for i, r := range rows {
		users[i] = withRoles(&r.User, roles[r.ID])
	}
	return users, total, nil
}

func withRoles(u *User, roles []RoleRef) *User {
	u.Roles = roles
	if u.Roles == nil {
		u.Roles = []RoleRef{}
	}
	return u
}

// UserUpdate changes a user. Absent (nil) fields keep their value.
type UserUpdate struct {
	// ID is the user's id.
	ID string `json:"id" jsonschema:"required,minLength=1"`
	// Roles replaces the user's roles (ids or names of its tenant); an
	// empty list removes them all.
	Roles *[]string `json:"roles"`
	// OrganizationID moves the user to another organization of its tenant.
	OrganizationID *string `json:"organizationId"`
}

// UpdateUser changes a user's roles or organization in the actor's tenant
// (a super admin's: any tenant) and returns the user. A user outside the organizations the actor
// manages is not found; one holding roles the actor could not grant is
// ErrEscalation (nobody changes a user above its own access); the new
// roles must be ones the actor may grant (CheckGrant), and the new
// organization one it manages (403 naming organizationId). Sessions of the
// user are verified again on every process for the next request.
func (s *Service) UpdateUser(ctx context.Context, actor *Identity, in UserUpdate) (*User, error) {
	v := &store.ValidationError{}
	if in.ID == "" {
		v.Add("id", "is required")
	}
	if in.OrganizationID != nil && *in.OrganizationID == "" {
		v.Add("organizationId", "must not be empty")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	var out *User
	err := s.tx(ctx, func(tx *store.Tx) error {
		u, err := s.userForActor(ctx, tx, actor, in.ID)
		if err != nil {
			return err
		}
		if in.OrganizationID != nil && *in.OrganizationID != u.OrganizationID {
			org := *in.OrganizationID
			if _, err := s.store.GetOrganization(ctx, tx, u.TenantID, org); err != nil {
				return notFoundField(err, "organizationId", "organization not found in this tenant")
			}
			if !managesOrganization(actor, org) {
				return outOfOrganizationScope("organizationId")
			}
			if err := s.store.SetUserOrganization(ctx, tx, u.TenantID, u.ID, org); err != nil {
				return notFound(err, "user not found")
			}
			u.OrganizationID = org
		}
		if in.Roles != nil {
			roles, err := s.resolveRoles(ctx, tx, actor, u.TenantID, "roles", *in.Roles)
			if err != nil {
				return err
			}
			if err := s.store.ReplaceUserRoles(ctx, tx, u.ID, roleIDs(roles)); err != nil {
				return err
			}
		}
		current, err := s.store.UserRoleRefs(ctx, tx, []string{u.ID})
		if err != nil {
			return err
		}
		out = withRoles(&u.User, current[u.ID])
		_, err = tx.EmitData(ctx, EventUserUpdated, store.Scope{TenantID: u.TenantID, OrganizationID: u.OrganizationID}, out)
		return err
	})
	return out, err
}

// DeleteUser soft-deletes a user of the actor's tenant (a super admin's:
// any tenant): its sessions stop
// working on every process for every request that starts after the
// deletion commits, and the DeleteHooks remove what other areas keep about
// it in the same transaction. A caller cannot delete itself (conflict); a
// user outside the organizations the actor manages is not found; one
// holding roles the actor could not grant is ErrEscalation.
func (s *Service) DeleteUser(ctx context.Context, actor *Identity, id string) error {
	if id == "" {
		return store.Invalid("id", "is required")
	}
	if id == actor.UserID {
		return store.Errorf(store.ErrConflict, "a user cannot delete itself")
	}
	return s.tx(ctx, func(tx *store.Tx) error {
		u, err := s.userForActor(ctx, tx, actor, id)
		if err != nil {
			return err
		}
		if err := s.store.DeleteUser(ctx, tx, u.TenantID, u.ID, tx.Now()); err != nil {
			return notFound(err, "user not found")
		}
		if err := s.runDeleteHooks(ctx, tx, DeletedUser, u.TenantID, u.ID); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventUserDeleted, store.Scope{TenantID: u.TenantID, OrganizationID: u.OrganizationID},
			map[string]string{"id": u.ID})
		return err
	})
}

// userForActor loads a live user of the actor's tenant (a super admin's:
// any tenant) that the actor manages: in one of its organizations (else
// not found) and holding only roles it could grant (else ErrEscalation).
func (s *Service) userForActor(ctx context.Context, q store.Querier, actor *Identity, id string) (*UserRecord, error) {
	tenantID := actor.TenantID
	var err error
	if actor.IsSuperAdmin {
		tenantID, err = s.store.UserTenant(ctx, q, id)
	}
	var u *UserRecord
	if err == nil {
		u, err = s.store.GetUser(ctx, q, tenantID, id)
	}
	if err == nil && !managesOrganization(actor, u.OrganizationID) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, notFound(err, "user not found")
	}
	roles, err := s.store.UserRoles(ctx, q, u.ID)
	if err != nil {
		return nil, err
	}
	if err := checkRoleGrants(actor, roles); err != nil {
		return nil, escalation("the user holds access you do not: %s", store.PublicMessage(err))
	}
	return u, nil
}

// DeleteRole deletes a role of the actor's tenant (a super admin's: any)
// that no live user or API key holds (else a conflict naming how many
// do); a super-admin role is never deleted (conflict). The actor must
// manage the role (else not found) and be able to grant what it holds
// (else ErrEscalation). The DeleteHooks run in the same transaction.
func (s *Service) DeleteRole(ctx context.Context, actor *Identity, id string) error {
	if id == "" {
		return store.Invalid("id", "is required")
	}
	return s.tx(ctx, func(tx *store.Tx) error {
		r, err := s.roleForActor(ctx, tx, actor, id)
		if err != nil {
			return err
		}
		if r.IsSuperAdmin {
			return store.Errorf(store.ErrConflict, "a super-admin role cannot be deleted")
		}
		if err := CheckGrant(actor, AccessOf(r)); err != nil {
			return escalation("the role holds access you do not: %s", store.PublicMessage(err))
		}
		users, keys, err := s.store.RoleHolders(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		if users > 0 || keys > 0 {
			return store.Errorf(store.ErrConflict, "role is held by %d users and %d API keys; take it from them first", users, keys)
		}
		if err := s.store.DeleteRole(ctx, tx, r.TenantID, r.ID); err != nil {
			return notFound(err, "role not found")
		}
		if err := s.runDeleteHooks(ctx, tx, DeletedRole, r.TenantID, r.ID); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventRoleDeleted, store.Scope{TenantID: r.TenantID}, map[string]string{"id": r.ID})
		return err
	})
}

// ErrNotASession is Logout's answer to a credential that is not a session
// token (an API key): keys end only when deleted.
var ErrNotASession = store.Errorf(store.ErrInvalid, "only a session token can be logged out; API keys end when deleted")

// Logout ends a session token from Login: every process refuses it for
// every request that starts after Logout returns (it records the token's
// id until the token's expiry and bumps the credentials' version). The
// user's other sessions and API keys are unaffected. A token that is not
// a valid session token is ErrUnauthenticated.
func (s *Service) Logout(ctx context.Context, token string) error {
	claims, err := s.parseToken(token)
	if err != nil {
		return err
	}
	if claims.ID == "" {
		return ErrUnauthenticated
	}
	return s.tx(ctx, func(tx *store.Tx) error {
		return s.store.RevokeSession(ctx, tx, claims.ID, claims.Subject, claims.ExpiresAt.Time, tx.Now())
	})
}

// parseToken verifies a session token's signature and expiry and returns
// its claims.
func (s *Service) parseToken(token string) (*sessionClaims, error) {
	var claims sessionClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.cfg.SecretKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.db.Now), jwt.WithStrictDecoding())
	if err != nil {
		return nil, ErrUnauthenticated
	}
	return &claims, nil
}

// recordLogin stores when a user signed in. It changes no credential, so
// the credentials' version stays.
func (s *Service) recordLogin(ctx context.Context, u *UserRecord, at time.Time) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		return s.store.RecordLogin(ctx, tx, u.TenantID, u.ID, at)
	})
}
