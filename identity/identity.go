package identity

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Limits on identity fields.
const (
	MaxNameLength        = 120
	MaxDescriptionLength = 1000
	MaxEmailLength       = 254
	MinPasswordLength    = 8
	MaxPasswordLength    = 256
	MaxFeatures          = 500
)

// Event types emitted by this package.
const (
	EventTenantCreated       = "directory.tenant.created"
	EventTenantDeleted       = "directory.tenant.deleted"
	EventOrganizationCreated = "directory.organization.created"
	EventOrganizationDeleted = "directory.organization.deleted"
	EventRoleCreated         = "auth.role.created"
	EventRoleUpdated         = "auth.role.updated"
	EventUserCreated         = "auth.user.created"
	EventUserPasswordReset   = "auth.user.password_reset"
	EventUserUpdated         = "auth.user.updated"
	EventUserDeleted         = "auth.user.deleted"
	EventRoleDeleted         = "auth.role.deleted"
	EventAPIKeyCreated       = "api_keys.key.created"
	EventAPIKeyDeleted       = "api_keys.key.deleted"
)

// EventTypes describes every event the package emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventTenantCreated, Label: "Tenant created", Description: "A tenant was created."},
	{ID: EventTenantDeleted, Label: "Tenant deleted", Description: "A tenant was deleted."},
	{ID: EventOrganizationCreated, Label: "Organization created", Description: "An organization was created."},
	{ID: EventOrganizationDeleted, Label: "Organization deleted", Description: "An organization was deleted."},
	{ID: EventRoleCreated, Label: "Role created", Description: "A role was created."},
	{ID: EventRoleUpdated, Label: "Role updated", Description: "A role's name or features changed."},
	{ID: EventUserCreated, Label: "User created", Description: "A user was created."},
	{ID: EventUserUpdated, Label: "User updated", Description: "A user's roles or organization changed."},
	{ID: EventUserDeleted, Label: "User deleted", Description: "A user was deleted; its sessions ended."},
	{ID: EventRoleDeleted, Label: "Role deleted", Description: "A role no user or API key held was deleted."},
	{ID: EventUserPasswordReset, Label: "Password reset", Description: "A user's password was reset."},
	{ID: EventAPIKeyCreated, Label: "API key created", Description: "An API key was created (never its secret)."},
	{ID: EventAPIKeyDeleted, Label: "API key deleted", Description: "An API key was deleted."},
}

// Features that guard identity management within a tenant. Super admins
// need none of them.
const (
	FeatureOrganizationsView   = "directory.organizations.view"
	FeatureOrganizationsManage = "directory.organizations.manage"
	FeatureRolesView           = "auth.roles.view"
	FeatureRolesManage         = "auth.roles.manage"
	FeatureUsersView           = "auth.users.view"
	FeatureUsersManage         = "auth.users.manage"
	FeatureAPIKeysView         = "api_keys.view"
	FeatureAPIKeysManage       = "api_keys.manage"
)

// Tenant is an isolated customer of the service.
type Tenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// IsActive false makes the tenant's API keys stop working (its
	// session tokens too); the tenant stays listed.
	IsActive  bool      `json:"isActive"`
	CreatedAt time.Time `json:"createdAt"`
}

// Organization is a node of a tenant's organization tree.
type Organization struct {
	ID       string `json:"id"`
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
	// ParentID is the organization above this one in the tenant's tree;
	// nil for a root.
	ParentID *string `json:"parentId"`
	// IsActive is stored and shown; nothing reads it yet.
	IsActive  bool      `json:"isActive"`
	CreatedAt time.Time `json:"createdAt"`
}

// Role grants features to the users and API keys that hold it.
type Role struct {
	ID       string `json:"id"`
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
	// Features are feature strings; "*" grants all and "x.*" grants x and
	// everything under it.
	Features []string `json:"features"`
	// IsSuperAdmin bypasses feature checks and tenant boundaries.
	IsSuperAdmin bool `json:"isSuperAdmin"`
	// Organizations restricts holders to these organizations; nil allows
	// every organization of the tenant.
	Organizations []string  `json:"organizations" jsonschema:"nullable"`
	CreatedAt     time.Time `json:"createdAt"`
	// UpdatedAt is when the role's access last changed.
	UpdatedAt time.Time `json:"updatedAt"`
}

// RoleRef names a role in API key responses.
type RoleRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// User is a person who signs in with email and password.
type User struct {
	ID       string `json:"id"`
	TenantID string `json:"tenantId"`
	// OrganizationID is the organization a session starts in.
	OrganizationID string `json:"organizationId"`
	// Email is stored trimmed and lower-cased; unique within the tenant.
	Email string `json:"email"`
	// Roles are filled when the user is created and in lists; single
	// lookups leave them nil.
	Roles     []RoleRef `json:"roles"`
	CreatedAt time.Time `json:"createdAt"`
	// LastLoginAt is when the user last signed in; nil never.
	LastLoginAt *time.Time `json:"lastLoginAt"`
}

// APIKey is a machine credential. Its secret is shown once, at creation,
// and stored only as a SHA-256 hash.
type APIKey struct {
	ID       string `json:"id"`
	TenantID string `json:"tenantId"`
	// OrganizationID is the organization the key acts in; nil for a
	// tenant-level key.
	OrganizationID *string `json:"organizationId"`
	Name           string  `json:"name"`
	// Description is nil when none was given.
	Description *string `json:"description"`
	// KeyPrefix is the secret's first 11 characters ("tk_" and 8 hex
	// digits for generated keys), stored in clear to find the key; unique
	// across all keys of all tenants, deleted ones included.
	KeyPrefix string `json:"keyPrefix"`
	// Roles are the key's roles, by name.
	Roles []RoleRef `json:"roles"`
	// ExpiresAt is when the key stops working; nil never.
	ExpiresAt *time.Time `json:"expiresAt"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Identity is an authenticated caller: who it is, where it acts and what
// it may do.
type Identity struct {
	// TenantID is the tenant the caller acts in: its own, or the one a
	// super admin selected; "" for System.
	TenantID string `json:"tenantId"`
	// OrganizationID is the active organization ("" for a tenant-level
	// key).
	OrganizationID string `json:"organizationId"`
	// OrganizationIDs are the organizations the caller may read; nil means
	// all of the tenant's.
	OrganizationIDs []string `json:"-"`
	// UserID is set for a session token's caller, APIKeyID for a key's.
	UserID   string `json:"userId,omitempty"`
	APIKeyID string `json:"apiKeyId,omitempty"`
	// Roles are the names of the caller's roles.
	Roles []string `json:"roles"`
	// RoleIDs are the ids of the caller's roles, in the order of Roles.
	RoleIDs []string `json:"-"`
	// Features is the union of the roles' features, wildcards included.
	Features []string `json:"features"`
	// IsSuperAdmin is whether one of the roles is a super-admin role: it
	// holds every feature and may act for any tenant.
	IsSuperAdmin bool `json:"isSuperAdmin"`
	// expiresAt is when the credential stops being valid (key expiry or
	// session end); zero when it does not expire.
	expiresAt time.Time
	// keyActor is "api_key:<APIKeyID>", Scope's actor, made once when an
	// API key is verified rather than on every request.
	keyActor string
	// values is Values' context, kept by keepValues for this very
	// Identity (valuesOf): a copy of the struct makes its own.
	values   context.Context
	valuesOf *Identity
}

// System is the identity of trusted in-process callers (bootstrap code,
// tests): a super admin bound to no tenant.
var System = &Identity{IsSuperAdmin: true}

// AllFeatures is the feature that grants every feature.
const AllFeatures = "*"

// ForTenant returns the identity of a caller trusted with the whole of
// tenantID: every feature, every organization, no super-admin rights over
// other tenants. It is what a host's own authenticator returns for a
// signed-in administrator; narrow it with WithFeatures and
// InOrganizations, and set UserID so that records name their author.
func ForTenant(tenantID string) *Identity {
	return &Identity{TenantID: tenantID, Features: []string{AllFeatures}, Roles: []string{}}
}

// WithFeatures returns a copy of id holding only features (each "x.y.z",
// "x.*" or AllFeatures).
func (id *Identity) WithFeatures(features ...string) *Identity {
	c := *id
	c.Features = slices.Clone(features)
	return &c
}

// InOrganizations returns a copy of id limited to the organizations orgIDs
// of its tenant, the first being the active one (where it creates
// organization-scoped data). A caller so limited cannot change state that
// holds for the whole tenant.
func (id *Identity) InOrganizations(orgIDs ...string) *Identity {
	c := *id
	c.OrganizationIDs = slices.Clone(orgIDs)
	if c.OrganizationIDs == nil {
		c.OrganizationIDs = []string{}
	}
	c.OrganizationID = ""
	if len(orgIDs) > 0 {
		c.OrganizationID = orgIDs[0]
	}
	return &c
}

// Scope is the store scope the identity acts in.
func (id *Identity) Scope() store.Scope {
	sc := store.Scope{TenantID: id.TenantID, OrganizationID: id.OrganizationID, OrganizationIDs: id.OrganizationIDs, ActorID: id.UserID}
	if sc.ActorID == "" && id.APIKeyID != "" {
		if strings.TrimPrefix(id.keyActor, keyActorPrefix) == id.APIKeyID && id.keyActor != id.APIKeyID {
			sc.ActorID = id.keyActor
		} else {
			sc.ActorID = keyActorPrefix + id.APIKeyID
		}
	}
	return sc
}

// keyActorPrefix precedes an API key's id in the actor of its scope.
const keyActorPrefix = "api_key:"

// CoversTenant reports whether the identity's access covers every
// organization of its tenant: a super admin, or a caller none of whose
// roles limits it to some organizations. Only such a caller may change
// state that holds for the whole tenant.
func (id *Identity) CoversTenant() bool {
	return id.IsSuperAdmin || id.OrganizationIDs == nil
}

// HasFeature reports whether the identity holds feature f. Super admins
// hold every feature.
func (id *Identity) HasFeature(f string) bool {
	if id.IsSuperAdmin {
		return true
	}
	return slices.ContainsFunc(id.Features, func(granted string) bool { return FeatureMatches(granted, f) })
}

// Missing returns the features of required the identity lacks.
func (id *Identity) Missing(required ...string) []string {
	var missing []string
	for _, f := range required {
		if !id.HasFeature(f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// FeatureMatches reports whether a granted feature covers required: "*"
// covers everything, "x.*" covers "x" and every "x.…", anything else only
// itself.
func FeatureMatches(granted, required string) bool {
	switch {
	case granted == "*", granted == required:
		return true
	case strings.HasSuffix(granted, ".*"):
		prefix := strings.TrimSuffix(granted, ".*")
		return required == prefix || strings.HasPrefix(required, prefix+".")
	}
	return false
}

type identityKey struct{}

// WithIdentity returns a context carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// Values returns a context holding only id (as WithIdentity puts it) and
// id's scope (as store.WithScope does), with no deadline and no parent
// values: for a server whose request contexts answer with it once the
// caller is known, rather than wrapping the request's context in two
// more values. The identities the Service caches (verified API keys and
// sessions) keep theirs, made once when they are verified; any other is
// given a new one by each call. Do not change id afterwards.
func (id *Identity) Values() context.Context {
	if id.valuesOf == id && id.values != nil {
		return id.values
	}
	return store.WithScope(WithIdentity(context.Background(), id), id.Scope())
}

// keepValues makes id's Values once, before id is shared.
func (id *Identity) keepValues() {
	id.values, id.valuesOf = nil, nil
	id.values, id.valuesOf = id.Values(), id
}

// IdentityFrom returns the identity in ctx, or nil.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// Errors reported by this package. Each wraps a store error kind.
var (
	// ErrUnauthenticated: no valid credential (missing, unknown, expired,
	// deleted, or belonging to a deleted tenant or organization).
	ErrUnauthenticated = store.Errorf(store.ErrForbidden, "Unauthorized")
	// ErrInvalidLogin: wrong email or password. It never says which.
	ErrInvalidLogin = store.Errorf(store.ErrInvalid, "Invalid email or password")
	// ErrInvalidResetToken: the reset token is unknown, used or expired.
	ErrInvalidResetToken = store.Errorf(store.ErrInvalid, "Invalid or expired token")
	// ErrOutOfScope: the caller names a tenant it may not act in.
	ErrOutOfScope = store.Errorf(store.ErrForbidden, "Tenant out of scope")
)

// actingTenant resolves the tenant an actor acts on when it names one
// (requested) or not: its own, or, for super admins only, any.
func actingTenant(actor *Identity, requested string) (string, error) {
	switch {
	case requested == "" && actor.TenantID == "":
		return "", store.Invalid("tenantId", "is required")
	case requested == "" || requested == actor.TenantID:
		return actor.TenantID, nil
	case actor.IsSuperAdmin:
		return requested, nil
	}
	return "", ErrOutOfScope
}
