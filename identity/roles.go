package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"regexp"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// featurePattern accepts "*", "x.y.z" and "x.y.*" with lowercase segments.
var featurePattern = regexp.MustCompile(`^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$`)

// CreateRole creates a role without features in the actor's tenant (or,
// for a super admin, the named one). A caller limited to some
// organizations creates roles limited to the same ones, so that it can
// then manage them (see CheckGrant).
func (s *Service) CreateRole(ctx context.Context, actor *Identity, name, tenantID string) (*Role, error) {
	tenantID, err := actingTenant(actor, tenantID)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	name = checkText(v, "name", name, MaxNameLength)
	if err := v.Err(); err != nil {
		return nil, err
	}
	var r *Role
	err = s.createTx(ctx, func(tx *store.Tx) error {
		if _, err := s.store.GetTenant(ctx, tx, tenantID); err != nil {
			return notFoundField(err, "tenantId", "tenant not found")
		}
		r = &Role{ID: store.NewID(), TenantID: tenantID, Name: name, Features: []string{}, CreatedAt: tx.Now(), UpdatedAt: tx.Now()}
		if !actor.IsSuperAdmin && actor.OrganizationIDs != nil {
			r.Organizations = slices.Clone(actor.OrganizationIDs)
		}
		if err := s.store.CreateRole(ctx, tx, r); err != nil {
			if isConflict(err) {
				return store.Errorf(store.ErrConflict, "role %q already exists", name)
			}
			return err
		}
		_, err := tx.EmitData(ctx, EventRoleCreated, store.Scope{TenantID: tenantID}, r)
		return err
	})
	return r, err
}

// ListRoles lists the roles of the actor's tenant (or the named one).
func (s *Service) ListRoles(ctx context.Context, actor *Identity, tenantID string, offset, limit int) ([]*Role, int, error) {
	tenantID, err := actingTenant(actor, tenantID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.ListRoles(ctx, s.db, tenantID, offset, limit)
}

// ACLInput replaces a role's access. Nil fields keep their current value.
type ACLInput struct {
	RoleID string `json:"roleId" jsonschema:"required,minLength=1"`
	// Features replaces the role's features: names such as
	// "webhooks.view", a prefix wildcard ("webhooks.*") or "*".
	Features []string `json:"features" jsonschema:"required,maxItems=500,maxLength=200,pattern=^([*]|[a-z0-9_]+([.][a-z0-9_]+)*([.][*])?)$"`
	// IsSuperAdmin may be set (or a super-admin role changed) by super
	// admins only.
	IsSuperAdmin *bool `json:"isSuperAdmin"`
	// Organizations restricts the role to these organizations; an explicit
	// null (Set true, Value nil) allows all.
	Organizations OptionalList `json:"organizations"`
}

// OptionalList is a JSON string list that tells "absent" from "null".
type OptionalList struct {
	Set   bool     // the field was present, null or not
	Value []string // the list; nil when absent or null
}

// UnmarshalJSON records that the field was present.
func (o *OptionalList) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// SetRoleACL replaces a role's features (and optionally its super-admin
// flag and organizations).
//
// The caller must manage the role (its organization restriction lies
// within the caller's, otherwise the role is not found), must be able to
// grant what the role holds now (it cannot strip a role above its own
// access), and must be able to grant what the role will hold (CheckGrant).
func (s *Service) SetRoleACL(ctx context.Context, actor *Identity, in ACLInput) (*Role, error) {
	v := &store.ValidationError{}
	if in.RoleID == "" {
		v.Add("roleId", "is required")
	}
	if in.Features == nil {
		v.Add("features", "is required (an array of feature strings)")
	}
	if len(in.Features) > MaxFeatures {
		v.Add("features", fmt.Sprintf("must have at most %d entries", MaxFeatures))
	}
	for _, f := range in.Features {
		if len(f) > 200 || !featurePattern.MatchString(f) {
			v.Add("features", fmt.Sprintf("%q is not a feature (lowercase dot-separated words, optionally ending in .*, or *)", f))
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	var r *Role
	err := s.tx(ctx, func(tx *store.Tx) error {
		var err error
		if r, err = s.roleForActor(ctx, tx, actor, in.RoleID); err != nil {
			return err
		}
		if r.IsSuperAdmin && !actor.IsSuperAdmin {
			return escalation("only super admins may change super-admin roles")
		}
		if err := CheckGrant(actor, AccessOf(r)); err != nil {
			return escalation("the role holds access you do not: %s", store.PublicMessage(err))
		}
		r.Features = dedupe(in.Features)
		if in.IsSuperAdmin != nil {
			r.IsSuperAdmin = *in.IsSuperAdmin
		}
		if in.Organizations.Set {
			r.Organizations = nil
			if in.Organizations.Value != nil {
				r.Organizations = dedupe(in.Organizations.Value)
				for _, id := range r.Organizations {
					if _, err := s.store.GetOrganization(ctx, tx, r.TenantID, id); err != nil {
						return notFoundField(err, "organizations", fmt.Sprintf("organization %s not found in this tenant", id))
					}
				}
			}
		}
		if err := CheckGrant(actor, AccessOf(r)); err != nil {
			return err
		}
		r.UpdatedAt = tx.Now()
		if err := s.store.UpdateRoleAccess(ctx, tx, r); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventRoleUpdated, store.Scope{TenantID: r.TenantID}, r)
		return err
	})
	return r, err
}

// roleForActor loads a role the actor manages by id: in the actor's
// tenant, or any tenant for a super admin. Another tenant's role, and a
// role outside the actor's organizations (managesRole), is "not found".
func (s *Service) roleForActor(ctx context.Context, q store.Querier, actor *Identity, id string) (*Role, error) {
	tenantID := actor.TenantID
	var err error
	if actor.IsSuperAdmin {
		if tenantID, err = s.store.RoleTenant(ctx, q, id); err != nil {
			return nil, notFound(err, "role not found")
		}
	}
	r, err := s.store.GetRole(ctx, q, tenantID, id)
	if err == nil && !managesRole(actor, r) {
		err = store.ErrNotFound
	}
	return r, notFound(err, "role not found")
}

// resolveRoles finds the roles of a tenant that the actor hands to a
// credential, by id or name. Unknown roles are a validation error on
// field; a role the actor may not grant (CheckGrant) is ErrEscalation.
func (s *Service) resolveRoles(ctx context.Context, q store.Querier, actor *Identity, tenantID, field string, refs []string) ([]*Role, error) {
	var roles []*Role
	for _, ref := range dedupe(refs) {
		r, err := s.store.GetRole(ctx, q, tenantID, ref)
		if isNotFound(err) {
			r, err = s.store.GetRoleByName(ctx, q, tenantID, ref)
		}
		if isNotFound(err) {
			return nil, store.Invalid(field, fmt.Sprintf("role %q not found", ref))
		}
		if err != nil {
			return nil, err
		}
		roles = append(roles, r)
	}
	return roles, checkRoleGrants(actor, roles)
}

// UserInput creates a user.
type UserInput struct {
	// Email is the sign-in name, unique in the tenant; it is trimmed and
	// lower-cased.
	Email string `json:"email" jsonschema:"required,minLength=1"`
	// Password is 8 to 256 bytes (MinPasswordLength, MaxPasswordLength).
	Password string `json:"password" jsonschema:"required,maxLength=256"`
	// OrganizationID is required: the user's organization, which also
	// decides the tenant.
	OrganizationID string `json:"organizationId" jsonschema:"required,minLength=1"`
	// Roles are role ids or names of the organization's tenant.
	Roles []string `json:"roles"`
}

// CreateUser creates a user in the organization's tenant, which must be
// the actor's unless the actor is a super admin. The organization must be
// one the actor manages, and the roles ones it may grant (CheckGrant).
func (s *Service) CreateUser(ctx context.Context, actor *Identity, in UserInput) (*User, error) {
	v := &store.ValidationError{}
	email := normalizeEmail(in.Email)
	if email == "" {
		v.Add("email", "is required")
	} else if _, err := mail.ParseAddress(email); err != nil || len(email) > MaxEmailLength || !strings.Contains(email, "@") {
		v.Add("email", "is not a valid email address")
	}
	checkPassword(v, "password", in.Password)
	if in.OrganizationID == "" {
		v.Add("organizationId", "is required")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	hash, err := hashPassword(in.Password)
	if err != nil {
		return nil, err
	}
	var u *User
	err = s.createTx(ctx, func(tx *store.Tx) error {
		var err error
		u, err = s.createUserTx(ctx, tx, actor, in, email, hash)
		return err
	})
	return u, err
}

// createUserTx stores a validated user in tx.
func (s *Service) createUserTx(ctx context.Context, tx *store.Tx, actor *Identity, in UserInput, email, hash string) (*User, error) {
	tenantID := actor.TenantID
	if actor.IsSuperAdmin {
		var err error
		if tenantID, err = s.store.OrganizationTenant(ctx, tx, in.OrganizationID); err != nil {
			return nil, notFoundField(err, "organizationId", "organization not found")
		}
	}
	if _, err := s.store.GetOrganization(ctx, tx, tenantID, in.OrganizationID); err != nil {
		return nil, notFoundField(err, "organizationId", "organization not found")
	}
	if !managesOrganization(actor, in.OrganizationID) {
		return nil, outOfOrganizationScope("organizationId")
	}
	roles, err := s.resolveRoles(ctx, tx, actor, tenantID, "roles", in.Roles)
	if err != nil {
		return nil, err
	}
	row := &UserRecord{User: User{ID: store.NewID(), TenantID: tenantID, OrganizationID: in.OrganizationID,
		Email: email, Roles: refs(roles), CreatedAt: tx.Now()}, PasswordHash: hash, PasswordChangedAt: tx.Now()}
	if err := s.store.CreateUser(ctx, tx, row); err != nil {
		if isConflict(err) {
			return nil, store.Errorf(store.ErrConflict, "a user with this email already exists in the tenant")
		}
		return nil, err
	}
	if err := s.store.LinkUserRoles(ctx, tx, row.ID, roleIDs(roles)); err != nil {
		return nil, err
	}
	_, err = tx.EmitData(ctx, EventUserCreated, store.Scope{TenantID: tenantID, OrganizationID: row.OrganizationID},
		map[string]any{"id": row.ID, "email": row.Email, "organizationId": row.OrganizationID})
	return &row.User, err
}

func checkPassword(v *store.ValidationError, field, password string) {
	switch {
	case password == "":
		v.Add(field, "is required")
	case len(password) < MinPasswordLength:
		v.Add(field, fmt.Sprintf("must be at least %d characters", MinPasswordLength))
	case len(password) > MaxPasswordLength:
		v.Add(field, fmt.Sprintf("must be at most %d characters", MaxPasswordLength))
	}
}

func normalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func roleIDs(roles []*Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = r.ID
	}
	return out
}

func refs(roles []*Role) []RoleRef {
	out := make([]RoleRef, len(roles))
	for i, r := range roles {
		out[i] = RoleRef{ID: r.ID, Name: r.Name}
	}
	return out
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
