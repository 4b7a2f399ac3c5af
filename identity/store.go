package identity

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage the Service needs, in domain terms. Every method
// runs on q: the database or the transaction the Service passes (the
// Service owns transactions, events and validation; a Store only stores).
//
// The contract, checked by identitytest.Run:
//
//   - A lookup that names a tenant finds only that tenant's rows; another
//     tenant's row is store.ErrNotFound.
//   - Tenants, organizations, users and API keys are soft-deleted: a
//     deleted row is not found, listed or counted, except by
//     APIKeyByPrefix, which finds it and reports it not live.
//   - A missing row is store.ErrNotFound; a uniqueness clash (role name or
//     user email within a tenant, API key prefix, an existing role link)
//     is store.ErrConflict.
//   - Lists come in the order each method documents (nil when empty),
//     paged ones with the total of the unpaged list.
type Store interface {
	// CreateTenant inserts t as given.
	CreateTenant(ctx context.Context, q store.Querier, t *Tenant) error
	// GetTenant returns a live tenant.
	GetTenant(ctx context.Context, q store.Querier, id string) (*Tenant, error)
	// ListTenants pages the live tenants, oldest first (created_at, then
	// id), and counts them all.
	ListTenants(ctx context.Context, q store.Querier, offset, limit int) ([]*Tenant, int, error)
	// DeleteTenant soft-deletes a live tenant at now.
	DeleteTenant(ctx context.Context, q store.Querier, id string, now time.Time) error

	// CreateOrganization inserts o as given.
	CreateOrganization(ctx context.Context, q store.Querier, o *Organization) error
	// GetOrganization returns a live organization of the tenant.
	GetOrganization(ctx context.Context, q store.Querier, tenantID, id string) (*Organization, error)
	// OrganizationTenant returns the tenant of a live organization, for
	// callers (super admins) that name an organization of any tenant.
	OrganizationTenant(ctx context.Context, q store.Querier, id string) (string, error)
	// ListOrganizations returns the tenant's live organizations by name,
	// then id.
	ListOrganizations(ctx context.Context, q store.Querier, tenantID string) ([]*Organization, error)
	// OldestOrganization returns the tenant's live organization created
	// first (created_at, then id).
	OldestOrganization(ctx context.Context, q store.Querier, tenantID string) (*Organization, error)
	// DeleteOrganization soft-deletes a live organization of the tenant at
	// now.
	DeleteOrganization(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error

	// CreateRole inserts r as given; a name the tenant already uses is
	// store.ErrConflict. Organizations nil (all organizations) and empty
	// (none) stay apart.
	CreateRole(ctx context.Context, q store.Querier, r *Role) error
	// UpdateRoleAccess stores r's Features, IsSuperAdmin, Organizations
	// and UpdatedAt on the role of r.TenantID with r.ID.
	UpdateRoleAccess(ctx context.Context, q store.Querier, r *Role) error
	// GetRole returns a role of the tenant by id.
	GetRole(ctx context.Context, q store.Querier, tenantID, id string) (*Role, error)
	// GetRoleByName returns a role of the tenant by exact name.
	GetRoleByName(ctx context.Context, q store.Querier, tenantID, name string) (*Role, error)
	// RoleTenant returns the tenant of a role, for callers (super admins)
	// that name a role of any tenant.
	RoleTenant(ctx context.Context, q store.Querier, id string) (string, error)
	// ListRoles pages the tenant's roles by name, then id, and counts them
	// all.
	ListRoles(ctx context.Context, q store.Querier, tenantID string, offset, limit int) ([]*Role, int, error)

	// CreateUser inserts u as given; an email the tenant already uses is
	// store.ErrConflict.
	CreateUser(ctx context.Context, q store.Querier, u *UserRecord) error
	// GetUser returns a live user of the tenant.
	GetUser(ctx context.Context, q store.Querier, tenantID, id string) (*UserRecord, error)
	// UsersByEmail returns up to limit live users of live tenants with
	// exactly this (normalized) email: in one tenant, or in every tenant
	// when tenantID is "".
	UsersByEmail(ctx context.Context, q store.Querier, email, tenantID string, limit int) ([]*UserRecord, error)
	// SetUserPassword stores a user's new password hash and the time it
	// changed.
	SetUserPassword(ctx context.Context, q store.Querier, tenantID, userID, hash string, changedAt time.Time) error
	// LinkUserRoles gives a user roles; a link that exists is
	// store.ErrConflict.
	LinkUserRoles(ctx context.Context, q store.Querier, userID string, roleIDs []string) error
	// UserRoles returns a user's roles by name.
	UserRoles(ctx context.Context, q store.Querier, userID string) ([]*Role, error)
	// UserTenant returns the tenant of a live user, for callers (super
	// admins) that name a user of any tenant.
	UserTenant(ctx context.Context, q store.Querier, id string) (string, error)
	// ListUsers pages the live users of sc.TenantID by email, then id, and
	// counts them all; with sc.OrganizationIDs not nil only the users of
	// those organizations; with search not "", only those whose email
	// contains it, ignoring case. Roles are not filled.
	ListUsers(ctx context.Context, q store.Querier, sc store.Scope, search string, offset, limit int) ([]*UserRecord, int, error)
	// UserRoleRefs returns the roles of several users, by user id, each
	// user's by name; users without roles are absent.
	UserRoleRefs(ctx context.Context, q store.Querier, userIDs []string) (map[string][]RoleRef, error)
	// SetUserOrganization moves a live user of the tenant to another
	// organization.
	SetUserOrganization(ctx context.Context, q store.Querier, tenantID, userID, orgID string) error
	// ReplaceUserRoles replaces every role link of a user with roleIDs.
	ReplaceUserRoles(ctx context.Context, q store.Querier, userID string, roleIDs []string) error
	// DeleteUser soft-deletes a live user of the tenant at now.
	DeleteUser(ctx context.Context, q store.Querier, tenantID, userID string, now time.Time) error
	// RecordLogin stores when a user signed in.
	RecordLogin(ctx context.Context, q store.Querier, tenantID, userID string, at time.Time) error

	// RoleHolders counts the live users and live API keys holding a role.
	RoleHolders(ctx context.Context, q store.Querier, roleID string) (users, keys int, err error)
	// DeleteRole deletes a role of the tenant and its links to deleted
	// users and keys (the Service checks that no live one holds it).
	DeleteRole(ctx context.Context, q store.Querier, tenantID, roleID string) error

	// RevokeSession records that the session token with this id (its jti)
	// is ended, until expiresAt, when it would have expired anyway; rows
	// past their expiry at now may be removed.
	RevokeSession(ctx context.Context, q store.Querier, tokenID, userID string, expiresAt, now time.Time) error
	// SessionRevoked reports whether the session token with this id was
	// ended by RevokeSession.
	SessionRevoked(ctx context.Context, q store.Querier, tokenID string) (bool, error)
	// UsersWithRoles returns up to limit live users of the tenant linked
	// to any of roleIDs, each once, oldest first (then by id); no roleIDs
	// is an empty list.
	UsersWithRoles(ctx context.Context, q store.Querier, tenantID string, roleIDs []string, limit int) ([]*UserRecord, error)

	// CreateAPIKey inserts k as given; a KeyPrefix in use by any key,
	// deleted or not, of any tenant is store.ErrConflict.
	CreateAPIKey(ctx context.Context, q store.Querier, k *APIKeyRecord) error
	// APIKeyByPrefix finds a key by its prefix, deleted or not, and
	// reports whether it is live: not deleted, in a live, active tenant
	// and, when it has one, a live organization. Expiry is the Service's
	// business.
	APIKeyByPrefix(ctx context.Context, q store.Querier, prefix string) (k *APIKeyRecord, live bool, err error)
	// GetAPIKey returns a live (not deleted) key of the tenant.
	GetAPIKey(ctx context.Context, q store.Querier, tenantID, id string) (*APIKeyRecord, error)
	// APIKeyTenant returns the tenant of a live key, for callers (super
	// admins) that name a key of any tenant.
	APIKeyTenant(ctx context.Context, q store.Querier, id string) (string, error)
	// ListAPIKeys pages the live keys of sc.TenantID, newest first
	// (created_at, then id, both descending), and counts them all. When
	// sc.OrganizationIDs is not nil only the tenant-level keys and the keys
	// of those organizations are listed and counted. Roles are not filled.
	ListAPIKeys(ctx context.Context, q store.Querier, sc store.Scope, offset, limit int) ([]*APIKeyRecord, int, error)
	// DeleteAPIKey soft-deletes a live key of the tenant at now.
	DeleteAPIKey(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error
	// RestoreAPIKey makes a key of the tenant live again (not deleted)
	// and unexpiring.
	RestoreAPIKey(ctx context.Context, q store.Querier, tenantID, id string) error
	// LinkAPIKeyRoles gives a key roles; a link that exists is
	// store.ErrConflict.
	LinkAPIKeyRoles(ctx context.Context, q store.Querier, keyID string, roleIDs []string) error
	// APIKeyRoles returns a key's roles by name.
	APIKeyRoles(ctx context.Context, q store.Querier, keyID string) ([]*Role, error)
	// APIKeyRoleRefs returns the roles of several keys, by key id, each
	// key's by name; keys without roles are absent.
	APIKeyRoleRefs(ctx context.Context, q store.Querier, keyIDs []string) (map[string][]RoleRef, error)

	// CreatePasswordReset stores a reset token (its hash).
	CreatePasswordReset(ctx context.Context, q store.Querier, r *PasswordReset) error
	// ConsumePasswordReset marks the token with this hash used and returns
	// its user. A token that is unknown, used, expired at now, or whose
	// user is not live is store.ErrNotFound and stays as it was.
	ConsumePasswordReset(ctx context.Context, q store.Querier, tokenHash string, now time.Time) (*UserRecord, error)
}

// UserRecord is a stored user: the User and its password.
type UserRecord struct {
	User
	// PasswordHash is the PHC-format Argon2id hash of the password.
	PasswordHash string `json:"-"`
	// PasswordChangedAt is when the password was last set; session tokens
	// carry it and stop working when it changes.
	PasswordChangedAt time.Time
}

// APIKeyRecord is a stored API key: the APIKey and its secret's hash.
type APIKeyRecord struct {
	APIKey
	// SecretHash is the hex SHA-256 of the whole secret.
	SecretHash string `json:"-"`
}

// PasswordReset is a stored password-reset token.
type PasswordReset struct {
	// TokenHash is the hex SHA-256 of the token sent to the user.
	TokenHash string
	UserID    string
	// ExpiresAt is when the token stops working.
	ExpiresAt time.Time
	CreatedAt time.Time
}
