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

func (SQLStore) CreateTenant(ctx context.Context, q store.Querier, t *Tenant) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_tenants (id, name, is_active, created_at) VALUES ($1, $2, $3, $4)`,
		t.ID, t.Name, t.IsActive, t.CreatedAt)
	return err
}

func (SQLStore) GetTenant(ctx context.Context, q store.Querier, id string) (*Tenant, error) {
	return store.One(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE id = $1 AND deleted_at IS NULL`, id)
}

func (SQLStore) ListTenants(ctx context.Context, q store.Querier, offset, limit int) ([]*Tenant, int, error) {
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_tenants WHERE deleted_at IS NULL`).Scan(&total); err != nil {
		return nil, 0, err
	}
	items, err := store.Many(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE deleted_at IS NULL
		ORDER BY created_at, id LIMIT $1 OFFSET $2`, limit, offset)
	return items, total, err
}

func (SQLStore) DeleteTenant(ctx context.Context, q store.Querier, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_tenants SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
}

const orgColumns = `id, tenant_id, name, parent_id, is_active, created_at`

func scanOrg(s store.Scanner) (*Organization, error) {
	var o Organization
	return &o, s.Scan(&o.ID, &o.TenantID, &o.Name, &o.ParentID, &o.IsActive, &o.CreatedAt)
}

func (SQLStore) CreateOrganization(ctx context.Context, q store.Querier, o *Organization) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_organizations (id, tenant_id, name, parent_id, is_active, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, o.ID, o.TenantID, o.Name, o.ParentID, o.IsActive, o.CreatedAt)
	return err
}

func (SQLStore) GetOrganization(ctx context.Context, q store.Querier, tenantID, id string) (*Organization, error) {
	return store.One(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

func (SQLStore) OrganizationTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_organizations WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&tenantID)
	return tenantID, err
}

func (SQLStore) ListOrganizations(ctx context.Context, q store.Querier, tenantID string) ([]*Organization, error) {
	return store.Many(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY name, id`, tenantID)
}

func (SQLStore) OldestOrganization(ctx context.Context, q store.Querier, tenantID string) (*Organization, error) {
	return store.One(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT 1`, tenantID)
}

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

func (SQLStore) CreateRole(ctx context.Context, q store.Querier, r *Role) error {
	features, orgs := roleJSON(r)
	_, err := q.Exec(ctx, `INSERT INTO auth_roles (id, tenant_id, name, features, is_super_admin, organizations, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.TenantID, r.Name, features, r.IsSuperAdmin, orgs, r.CreatedAt, r.UpdatedAt)
	return err
}

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

func (SQLStore) GetRole(ctx context.Context, q store.Querier, tenantID, id string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

func (SQLStore) GetRoleByName(ctx context.Context, q store.Querier, tenantID, name string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND name = $2`, tenantID, name)
}

func (SQLStore) RoleTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_roles WHERE id = $1`, id).Scan(&tenantID)
	return tenantID, err
}

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

func (SQLStore) UserRoles(ctx context.Context, q store.Querier, userID string) ([]*Role, error) {
	return rolesOf(ctx, q, "auth_user_roles", "user_id", userID)
}

func (SQLStore) APIKeyRoles(ctx context.Context, q store.Querier, keyID string) ([]*Role, error) {
	return rolesOf(ctx, q, "auth_api_key_roles", "key_id", keyID)
}

func (SQLStore) LinkUserRoles(ctx context.Context, q store.Querier, userID string, roleIDs []string) error {
	return linkRoles(ctx, q, "auth_user_roles", "user_id", userID, roleIDs)
}

func (SQLStore) LinkAPIKeyRoles(ctx context.Context, q store.Querier, keyID string, roleIDs []string) error {
	return linkRoles(ctx, q, "auth_api_key_roles", "key_id", keyID, roleIDs)
}

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

const userColumns = `id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at`

func scanUser(s store.Scanner) (*UserRecord, error) {
	var u UserRecord
	return &u, s.Scan(&u.ID, &u.TenantID, &u.OrganizationID, &u.Email, &u.PasswordHash, &u.PasswordChangedAt, &u.CreatedAt)
}

func (SQLStore) CreateUser(ctx context.Context, q store.Querier, u *UserRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_users (id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, u.ID, u.TenantID, u.OrganizationID, u.Email, u.PasswordHash, u.PasswordChangedAt, u.CreatedAt)
	return err
}

func (SQLStore) GetUser(ctx context.Context, q store.Querier, tenantID, id string) (*UserRecord, error) {
	return store.One(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

func (SQLStore) UsersByEmail(ctx context.Context, q store.Querier, email, tenantID string, limit int) ([]*UserRecord, error) {
	w := store.Where("u.email = ?", email).And("u.deleted_at IS NULL").And("t.deleted_at IS NULL")
	if tenantID != "" {
		w.And("u.tenant_id = ?", tenantID)
	}
	where := w.SQL()
	limitArg := w.Add(limit)
	return store.Many(ctx, q, scanUser, `SELECT u.id, u.tenant_id, u.organization_id, u.email, u.password_hash, u.password_changed_at, u.created_at
		FROM auth_users u JOIN auth_tenants t ON t.id = u.tenant_id WHERE `+where+` ORDER BY u.created_at, u.id LIMIT `+limitArg, w.Values()...)
}

func (SQLStore) SetUserPassword(ctx context.Context, q store.Querier, tenantID, userID, hash string, changedAt time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET password_hash = $3, password_changed_at = $4 WHERE tenant_id = $1 AND id = $2`,
		tenantID, userID, hash, changedAt)
}

const keyColumns = `id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at`

func scanKey(s store.Scanner) (*APIKeyRecord, error) {
	var k APIKeyRecord
	return &k, s.Scan(&k.ID, &k.TenantID, &k.OrganizationID, &k.Name, &k.Description, &k.KeyPrefix, &k.SecretHash, &k.ExpiresAt, &k.CreatedAt)
}

func (SQLStore) CreateAPIKey(ctx context.Context, q store.Querier, k *APIKeyRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_api_keys (id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		k.ID, k.TenantID, k.OrganizationID, k.Name, k.Description, k.KeyPrefix, k.SecretHash, k.ExpiresAt, k.CreatedAt)
	return err
}

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

func (SQLStore) GetAPIKey(ctx context.Context, q store.Querier, tenantID, id string) (*APIKeyRecord, error) {
	return store.One(ctx, q, scanKey, `SELECT `+keyColumns+` FROM auth_api_keys WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

func (SQLStore) APIKeyTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_api_keys WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&tenantID)
	return tenantID, err
}

func (SQLStore) DeleteAPIKey(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_api_keys SET deleted_at = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

func (SQLStore) RestoreAPIKey(ctx context.Context, q store.Querier, tenantID, id string) error {
	return store.ExecOne(ctx, q, `UPDATE auth_api_keys SET deleted_at = NULL, expires_at = NULL WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

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
