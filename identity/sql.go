package identity

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store over the identity tables of Migrations, on either
// engine: the SQL below serves both. Every query on tenant data names the
// tenant first.
type SQLStore struct{}

// NewSQLStore returns the SQL store.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const tenantColumns = `id, name, is_active, created_at`

func scanTenant(s store.Scanner) (*Tenant, error) {
	var t Tenant
	return &t, s.Scan(&t.ID, &t.Name, &t.IsActive, &t.CreatedAt)
}

// CreateTenant inserts t into auth_tenants as given; an id in use is
// store.ErrConflict.
func (SQLStore) CreateTenant(ctx context.Context, q store.Querier, t *Tenant) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_tenants (id, name, is_active, created_at) VALUES ($1, $2, $3, $4)`,
		t.ID, t.Name, t.IsActive, t.CreatedAt)
	return err
}

// GetTenant returns the live (not deleted) tenant with id from
// auth_tenants; a missing or deleted one is store.ErrNotFound.
func (SQLStore) GetTenant(ctx context.Context, q store.Querier, id string) (*Tenant, error) {
	return store.One(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE id = $1 AND deleted_at IS NULL`, id)
}

// ListTenants returns up to limit live tenants after offset, oldest first
// (created_at, then id), and the count of all live tenants.
func (SQLStore) ListTenants(ctx context.Context, q store.Querier, offset, limit int) ([]*Tenant, int, error) {
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_tenants WHERE deleted_at IS NULL`).Scan(&total); err != nil {
		return nil, 0, err
	}
	items, err := store.Many(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE deleted_at IS NULL
		ORDER BY created_at, id LIMIT $1 OFFSET $2`, limit, offset)
	return items, total, err
}

// DeleteTenant soft-deletes the live tenant with id, setting deleted_at to
// now; its organizations, users and keys stay as they are. A missing or
// already deleted tenant is store.ErrNotFound.
func (SQLStore) DeleteTenant(ctx context.Context, q store.Querier, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_tenants SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
}

const orgColumns = `id, tenant_id, name, parent_id, is_active, created_at`

func scanOrg(s store.Scanner) (*Organization, error) {
	var o Organization
	return &o, s.Scan(&o.ID, &o.TenantID, &o.Name, &o.ParentID, &o.IsActive, &o.CreatedAt)
}

// CreateOrganization inserts o into auth_organizations as given; an id in
// use is store.ErrConflict.
func (SQLStore) CreateOrganization(ctx context.Context, q store.Querier, o *Organization) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_organizations (id, tenant_id, name, parent_id, is_active, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, o.ID, o.TenantID, o.Name, o.ParentID, o.IsActive, o.CreatedAt)
	return err
}

// GetOrganization returns the live organization id of tenantID; one that
// is missing, deleted or of another tenant is store.ErrNotFound.
func (SQLStore) GetOrganization(ctx context.Context, q store.Querier, tenantID, id string) (*Organization, error) {
	return store.One(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

// OrganizationTenant returns the tenant id of the live organization id, of
// any tenant; a missing or deleted organization is store.ErrNotFound.
func (SQLStore) OrganizationTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_organizations WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&tenantID)
	return tenantID, err
}

// ListOrganizations returns every live organization of tenantID, by name
// then id (an empty list when there is none).
func (SQLStore) ListOrganizations(ctx context.Context, q store.Querier, tenantID string) ([]*Organization, error) {
	return store.Many(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY name, id`, tenantID)
}

// OldestOrganization returns tenantID's live organization created first
// (created_at, then id); a tenant without one is store.ErrNotFound.
func (SQLStore) OldestOrganization(ctx context.Context, q store.Querier, tenantID string) (*Organization, error) {
	return store.One(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT 1`, tenantID)
}

// DeleteOrganization soft-deletes the live organization id of tenantID,
// setting deleted_at to now; a missing, deleted or other tenant's
// organization is store.ErrNotFound.
func (SQLStore) DeleteOrganization(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_organizations SET deleted_at = $3
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

const roleColumns = `id, tenant_id, name, features, is_super_admin, organizations, created_at, updated_at`

func scanRole(s store.Scanner) (*Role, error) {
	var r Role
	var features, orgs []byte
	if err := s.Scan(&r.ID, &r.TenantID, &r.Name, &features, &r.IsSuperAdmin, &orgs, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(features, &r.Features); err != nil {
		return nil, err
	}
	if orgs != nil {
		if err := json.Unmarshal(orgs, &r.Organizations); err != nil {
			return nil, err
		}
	}
	if r.Features == nil {
		r.Features = []string{}
	}
	return &r, nil
}

// CreateRole inserts r into auth_roles, its features and organizations
// as JSON (nil organizations as NULL, meaning all). A name or id the
// tenant already uses is store.ErrConflict.
func (SQLStore) CreateRole(ctx context.Context, q store.Querier, r *Role) error {
	features, orgs := roleJSON(r)
	_, err := q.Exec(ctx, `INSERT INTO auth_roles (id, tenant_id, name, features, is_super_admin, organizations, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.TenantID, r.Name, features, r.IsSuperAdmin, orgs, r.CreatedAt, r.UpdatedAt)
	return err
}

// UpdateRoleAccess writes r's Features, IsSuperAdmin, Organizations and
// UpdatedAt to the role r.ID of r.TenantID; its name and creation time
// stay. A role that is missing or of another tenant is store.ErrNotFound.
func (SQLStore) UpdateRoleAccess(ctx context.Context, q store.Querier, r *Role) error {
	features, orgs := roleJSON(r)
	return store.ExecOne(ctx, q, `UPDATE auth_roles SET features = $3, is_super_admin = $4, organizations = $5, updated_at = $6
		WHERE tenant_id = $1 AND id = $2`, r.TenantID, r.ID, features, r.IsSuperAdmin, orgs, r.UpdatedAt)
}

// roleJSON encodes a role's lists for storage; nil organizations stay NULL
// ("all organizations").
func roleJSON(r *Role) (features string, orgs any) {
	f, _ := json.Marshal(r.Features)
	if r.Organizations == nil {
		return string(f), nil
	}
	o, _ := json.Marshal(r.Organizations)
	return string(f), string(o)
}

// GetRole returns the role id of tenantID; one that is missing or of
// another tenant is store.ErrNotFound.
func (SQLStore) GetRole(ctx context.Context, q store.Querier, tenantID, id string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// GetRoleByName returns tenantID's role with exactly this name (case
// sensitive); none is store.ErrNotFound.
func (SQLStore) GetRoleByName(ctx context.Context, q store.Querier, tenantID, name string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND name = $2`, tenantID, name)
}

// RoleTenant returns the tenant id of the role id, of any tenant; a
// missing role is store.ErrNotFound.
func (SQLStore) RoleTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_roles WHERE id = $1`, id).Scan(&tenantID)
	return tenantID, err
}

// ListRoles returns up to limit of tenantID's roles after offset, by name
// then id, and the count of all the tenant's roles.
func (SQLStore) ListRoles(ctx context.Context, q store.Querier, tenantID string, offset, limit int) ([]*Role, int, error) {
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_roles WHERE tenant_id = $1`, tenantID).Scan(&total); err != nil {
		return nil, 0, err
	}
	items, err := store.Many(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1
		ORDER BY name, id LIMIT $2 OFFSET $3`, tenantID, limit, offset)
	return items, total, err
}

// rolesOf returns the roles linked to a user or key through a join table
// (auth_user_roles or auth_api_key_roles) and its owner column.
func rolesOf(ctx context.Context, q store.Querier, joinTable, ownerColumn, ownerID string) ([]*Role, error) {
	return store.Many(ctx, q, scanRole, `SELECT r.id, r.tenant_id, r.name, r.features, r.is_super_admin, r.organizations, r.created_at, r.updated_at
		FROM auth_roles r JOIN `+joinTable+` j ON j.role_id = r.id
		WHERE j.`+ownerColumn+` = $1 ORDER BY r.name`, ownerID)
}

func linkRoles(ctx context.Context, q store.Querier, joinTable, ownerColumn, ownerID string, roleIDs []string) error {
	for _, id := range roleIDs {
		if _, err := q.Exec(ctx, `INSERT INTO `+joinTable+` (`+ownerColumn+`, role_id) VALUES ($1, $2)`, ownerID, id); err != nil {
			return err
		}
	}
	return nil
}

// UserRoles returns the roles linked to userID in auth_user_roles, by
// name (an empty list when there is none).
func (SQLStore) UserRoles(ctx context.Context, q store.Querier, userID string) ([]*Role, error) {
	return rolesOf(ctx, q, "auth_user_roles", "user_id", userID)
}

// APIKeyRoles returns the roles linked to keyID in auth_api_key_roles, by
// name (an empty list when there is none).
func (SQLStore) APIKeyRoles(ctx context.Context, q store.Querier, keyID string) ([]*Role, error) {
	return rolesOf(ctx, q, "auth_api_key_roles", "key_id", keyID)
}

// LinkUserRoles inserts a link from userID to each of roleIDs into
// auth_user_roles, in order; a link that exists is store.ErrConflict and
// stops there (run it in a transaction to write all or none).
func (SQLStore) LinkUserRoles(ctx context.Context, q store.Querier, userID string, roleIDs []string) error {
	return linkRoles(ctx, q, "auth_user_roles", "user_id", userID, roleIDs)
}

// LinkAPIKeyRoles inserts a link from keyID to each of roleIDs into
// auth_api_key_roles, in order; a link that exists is store.ErrConflict
// and stops there (run it in a transaction to write all or none).
func (SQLStore) LinkAPIKeyRoles(ctx context.Context, q store.Querier, keyID string, roleIDs []string) error {
	return linkRoles(ctx, q, "auth_api_key_roles", "key_id", keyID, roleIDs)
}

// APIKeyRoleRefs returns the id and name of each role of the keys keyIDs,
// in one query, keyed by key id, each key's roles by name; a key without
// roles is absent from the map, and no keyIDs is an empty map.
func (SQLStore) APIKeyRoleRefs(ctx context.Context, q store.Querier, keyIDs []string) (map[string][]RoleRef, error) {
	out := map[string][]RoleRef{}
	if len(keyIDs) == 0 {
		return out, nil
	}
	var args store.Args
	placeholders := make([]string, len(keyIDs))
	for i, id := range keyIDs {
		placeholders[i] = args.Add(id)
	}
	rows, err := q.Query(ctx, `SELECT j.key_id, r.id, r.name FROM auth_api_key_roles j JOIN auth_roles r ON r.id = j.role_id
		WHERE j.key_id IN (`+strings.Join(placeholders, ", ")+`) ORDER BY r.name`, args.Values()...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var keyID string
		var ref RoleRef
		if err := rows.Scan(&keyID, &ref.ID, &ref.Name); err != nil {
			return nil, err
		}
		out[keyID] = append(out[keyID], ref)
	}
	return out, rows.Err()
}

const userColumns = `id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at, last_login_at`

func scanUser(s store.Scanner) (*UserRecord, error) {
	var u UserRecord
	return &u, s.Scan(&u.ID, &u.TenantID, &u.OrganizationID, &u.Email, &u.PasswordHash, &u.PasswordChangedAt, &u.CreatedAt, &u.LastLoginAt)
}

// CreateUser inserts u, with its password hash, into auth_users as
// given; an email the tenant already uses, or an id in use, is
// store.ErrConflict.
func (SQLStore) CreateUser(ctx context.Context, q store.Querier, u *UserRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_users (id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, u.ID, u.TenantID, u.OrganizationID, u.Email, u.PasswordHash, u.PasswordChangedAt, u.CreatedAt)
	return err
}

// GetUser returns the live user id of tenantID with its password hash;
// one that is missing, deleted or of another tenant is store.ErrNotFound.
func (SQLStore) GetUser(ctx context.Context, q store.Querier, tenantID, id string) (*UserRecord, error) {
	return store.One(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

// UsersByEmail returns up to limit live users of live tenants whose email
// is exactly email (the caller normalizes it), oldest first: in tenantID,
// or in every tenant when tenantID is "". No match is an empty list.
func (SQLStore) UsersByEmail(ctx context.Context, q store.Querier, email, tenantID string, limit int) ([]*UserRecord, error) {
	w := store.Where("u.email = ?", email).And("u.deleted_at IS NULL").And("t.deleted_at IS NULL")
	if tenantID != "" {
		w.And("u.tenant_id = ?", tenantID)
	}
	where := w.SQL()
	limitArg := w.Add(limit)
	return store.Many(ctx, q, scanUser, `SELECT u.id, u.tenant_id, u.organization_id, u.email, u.password_hash, u.password_changed_at, u.created_at, u.last_login_at
		FROM auth_users u JOIN auth_tenants t ON t.id = u.tenant_id WHERE `+where+` ORDER BY u.created_at, u.id LIMIT `+limitArg, w.Values()...)
}

// UsersWithRoles returns up to limit live users of tenantID linked in
// auth_user_roles to any of roleIDs, each once, oldest first.
func (SQLStore) UsersWithRoles(ctx context.Context, q store.Querier, tenantID string, roleIDs []string, limit int) ([]*UserRecord, error) {
	if len(roleIDs) == 0 {
		return nil, nil
	}
	w := store.Where("tenant_id = ?", tenantID).And("deleted_at IS NULL")
	placeholders := make([]string, len(roleIDs))
	for i, id := range roleIDs {
		placeholders[i] = w.Add(id)
	}
	w.And("EXISTS (SELECT 1 FROM auth_user_roles j WHERE j.user_id = auth_users.id AND j.role_id IN (" + strings.Join(placeholders, ", ") + "))")
	where := w.SQL()
	limitArg := w.Add(limit)
	return store.Many(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE `+where+` ORDER BY created_at, id LIMIT `+limitArg, w.Values()...)
}

// SetUserPassword writes hash and changedAt to the user userID of
// tenantID, deleted or not; a missing user or one of another tenant is
// store.ErrNotFound.
func (SQLStore) SetUserPassword(ctx context.Context, q store.Querier, tenantID, userID, hash string, changedAt time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET password_hash = $3, password_changed_at = $4 WHERE tenant_id = $1 AND id = $2`,
		tenantID, userID, hash, changedAt)
}

const keyColumns = `id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at`

func scanKey(s store.Scanner) (*APIKeyRecord, error) {
	var k APIKeyRecord
	return &k, s.Scan(&k.ID, &k.TenantID, &k.OrganizationID, &k.Name, &k.Description, &k.KeyPrefix, &k.SecretHash, &k.ExpiresAt, &k.CreatedAt)
}

// CreateAPIKey inserts k, with its secret's hash, into auth_api_keys as
// given; a KeyPrefix used by any key of any tenant, deleted or not, is
// store.ErrConflict.
func (SQLStore) CreateAPIKey(ctx context.Context, q store.Querier, k *APIKeyRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_api_keys (id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		k.ID, k.TenantID, k.OrganizationID, k.Name, k.Description, k.KeyPrefix, k.SecretHash, k.ExpiresAt, k.CreatedAt)
	return err
}

// APIKeyByPrefix returns the key with this prefix, deleted or not, of any
// tenant, and whether it is live: not deleted, its tenant live and
// active, and its organization, when it has one, live. An unknown prefix
// is store.ErrNotFound. Expiry is not checked here.
func (SQLStore) APIKeyByPrefix(ctx context.Context, q store.Querier, prefix string) (k *APIKeyRecord, live bool, err error) {
	k = &APIKeyRecord{}
	err = q.QueryRow(ctx, `SELECT k.id, k.tenant_id, k.organization_id, k.name, k.description, k.key_prefix, k.secret_hash, k.expires_at, k.created_at,
			(k.deleted_at IS NULL AND t.deleted_at IS NULL AND t.is_active AND o.deleted_at IS NULL)
		FROM auth_api_keys k
		JOIN auth_tenants t ON t.id = k.tenant_id
		LEFT JOIN auth_organizations o ON o.id = k.organization_id
		WHERE k.key_prefix = $1`, prefix).
		Scan(&k.ID, &k.TenantID, &k.OrganizationID, &k.Name, &k.Description, &k.KeyPrefix, &k.SecretHash, &k.ExpiresAt, &k.CreatedAt, &live)
	return k, live, err
}

// ListAPIKeys returns up to limit live keys of sc's tenant after offset,
// newest first (created_at, then id, descending), and the count of all
// of them; with sc.OrganizationIDs set, only the tenant-level keys and
// those of the listed organizations. Roles are not filled.
func (SQLStore) ListAPIKeys(ctx context.Context, q store.Querier, sc store.Scope, offset, limit int) ([]*APIKeyRecord, int, error) {
	c := sc.Readable("tenant_id", "organization_id")
	c.And("deleted_at IS NULL")
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_api_keys WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	where := c.SQL()
	page := c.OrderPage("created_at", "id", true, limit, offset)
	items, err := store.Many(ctx, q, scanKey, `SELECT `+keyColumns+` FROM auth_api_keys WHERE `+where+page, c.Values()...)
	return items, total, err
}

// GetAPIKey returns the live key id of tenantID with its secret's hash;
// one that is missing, deleted or of another tenant is store.ErrNotFound.
func (SQLStore) GetAPIKey(ctx context.Context, q store.Querier, tenantID, id string) (*APIKeyRecord, error) {
	return store.One(ctx, q, scanKey, `SELECT `+keyColumns+` FROM auth_api_keys WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

// APIKeyTenant returns the tenant id of the live key id, of any tenant; a
// missing or deleted key is store.ErrNotFound.
func (SQLStore) APIKeyTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_api_keys WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&tenantID)
	return tenantID, err
}

// DeleteAPIKey soft-deletes the live key id of tenantID, setting
// deleted_at to now, after which APIKeyByPrefix reports it not live; a
// missing, deleted or other tenant's key is store.ErrNotFound.
func (SQLStore) DeleteAPIKey(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_api_keys SET deleted_at = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

// RestoreAPIKey clears deleted_at and expires_at of the key id of
// tenantID, so it is live and never expires; a missing key or one of
// another tenant is store.ErrNotFound.
func (SQLStore) RestoreAPIKey(ctx context.Context, q store.Querier, tenantID, id string) error {
	return store.ExecOne(ctx, q, `UPDATE auth_api_keys SET deleted_at = NULL, expires_at = NULL WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// CreatePasswordReset inserts r into auth_password_resets: the token's
// hash (never the token), its user, expiry and creation time. A hash in
// use is store.ErrConflict.
func (SQLStore) CreatePasswordReset(ctx context.Context, q store.Querier, r *PasswordReset) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_password_resets (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)`,
		r.TokenHash, r.UserID, r.ExpiresAt, r.CreatedAt)
	return err
}

// ConsumePasswordReset reads the token's user, then marks the token used
// only if it still may be: of two concurrent consumes one wins. (No UPDATE
// … RETURNING: on SQLite a query outside a transaction runs on a read-only
// connection.)
func (SQLStore) ConsumePasswordReset(ctx context.Context, q store.Querier, tokenHash string, now time.Time) (*UserRecord, error) {
	const usable = `token_hash = $1 AND used_at IS NULL AND expires_at > $2
		AND user_id IN (SELECT id FROM auth_users WHERE deleted_at IS NULL)`
	var userID string
	if err := q.QueryRow(ctx, `SELECT user_id FROM auth_password_resets WHERE `+usable, tokenHash, now).Scan(&userID); err != nil {
		return nil, err
	}
	if err := store.ExecOne(ctx, q, `UPDATE auth_password_resets SET used_at = $2 WHERE `+usable, tokenHash, now); err != nil {
		return nil, err
	}
	return store.One(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE id = $1`, userID)
}
