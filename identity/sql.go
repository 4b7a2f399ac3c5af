package auth

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// The SQL below serves both engines. Every query on tenant data names the
// tenant first.

const tenantColumns = `id, name, is_active, created_at`

func scanTenant(s store.Scanner) (*Tenant, error) {
	var t Tenant
	return &t, s.Scan(&t.ID, &t.Name, &t.IsActive, &t.CreatedAt)
}

func insertTenant(ctx context.Context, q store.Querier, t *Tenant) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_tenants (id, name, is_active, created_at) VALUES ($1, $2, $3, $4)`,
		t.ID, t.Name, t.IsActive, t.CreatedAt)
	return err
}

func getTenant(ctx context.Context, q store.Querier, id string) (*Tenant, error) {
	return store.One(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE id = $1 AND deleted_at IS NULL`, id)
}

func listTenants(ctx context.Context, q store.Querier, offset, limit int) ([]*Tenant, int, error) {
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_tenants WHERE deleted_at IS NULL`).Scan(&total); err != nil {
		return nil, 0, err
	}
	items, err := store.Many(ctx, q, scanTenant, `SELECT `+tenantColumns+` FROM auth_tenants WHERE deleted_at IS NULL
		ORDER BY created_at, id LIMIT $1 OFFSET $2`, limit, offset)
	return items, total, err
}

func deleteTenant(ctx context.Context, q store.Querier, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_tenants SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
}

const orgColumns = `id, tenant_id, name, parent_id, is_active, created_at`

func scanOrg(s store.Scanner) (*Organization, error) {
	var o Organization
	return &o, s.Scan(&o.ID, &o.TenantID, &o.Name, &o.ParentID, &o.IsActive, &o.CreatedAt)
}

func insertOrg(ctx context.Context, q store.Querier, o *Organization) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_organizations (id, tenant_id, name, parent_id, is_active, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, o.ID, o.TenantID, o.Name, o.ParentID, o.IsActive, o.CreatedAt)
	return err
}

func getOrg(ctx context.Context, q store.Querier, tenantID, id string) (*Organization, error) {
	return store.One(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
}

func listOrgs(ctx context.Context, q store.Querier, tenantID string) ([]*Organization, error) {
	return store.Many(ctx, q, scanOrg, `SELECT `+orgColumns+` FROM auth_organizations
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY name, id`, tenantID)
}

func deleteOrg(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
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

func insertRole(ctx context.Context, q store.Querier, r *Role) error {
	features, orgs := roleJSON(r)
	_, err := q.Exec(ctx, `INSERT INTO auth_roles (id, tenant_id, name, features, is_super_admin, organizations, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.TenantID, r.Name, features, r.IsSuperAdmin, orgs, r.CreatedAt, r.UpdatedAt)
	return err
}

func updateRoleACL(ctx context.Context, q store.Querier, r *Role) error {
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

func getRole(ctx context.Context, q store.Querier, tenantID, id string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

func getRoleByName(ctx context.Context, q store.Querier, tenantID, name string) (*Role, error) {
	return store.One(ctx, q, scanRole, `SELECT `+roleColumns+` FROM auth_roles WHERE tenant_id = $1 AND name = $2`, tenantID, name)
}

func listRoles(ctx context.Context, q store.Querier, tenantID string, offset, limit int) ([]*Role, int, error) {
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

// roleRefsOfKeys returns the roles of several keys, by key id, in one
// query.
func roleRefsOfKeys(ctx context.Context, q store.Querier, keyIDs []string) (map[string][]RoleRef, error) {
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

type userRow struct {
	User
	passwordHash      string
	passwordChangedAt time.Time
}

const userColumns = `id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at`

func scanUser(s store.Scanner) (*userRow, error) {
	var u userRow
	return &u, s.Scan(&u.ID, &u.TenantID, &u.OrganizationID, &u.Email, &u.passwordHash, &u.passwordChangedAt, &u.CreatedAt)
}

func insertUser(ctx context.Context, q store.Querier, u *userRow) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_users (id, tenant_id, organization_id, email, password_hash, password_changed_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, u.ID, u.TenantID, u.OrganizationID, u.Email, u.passwordHash, u.passwordChangedAt, u.CreatedAt)
	return err
}

func getUser(ctx context.Context, q store.Querier, id string) (*userRow, error) {
	return store.One(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE id = $1 AND deleted_at IS NULL`, id)
}

// usersByEmail finds the live users with an email, in live tenants,
// optionally within one tenant.
func usersByEmail(ctx context.Context, q store.Querier, email, tenantID string) ([]*userRow, error) {
	w := store.Where("u.email = ?", email).And("u.deleted_at IS NULL").And("t.deleted_at IS NULL")
	if tenantID != "" {
		w.And("u.tenant_id = ?", tenantID)
	}
	return store.Many(ctx, q, scanUser, `SELECT u.id, u.tenant_id, u.organization_id, u.email, u.password_hash, u.password_changed_at, u.created_at
		FROM auth_users u JOIN auth_tenants t ON t.id = u.tenant_id WHERE `+w.SQL()+` LIMIT 2`, w.Values()...)
}

func setPassword(ctx context.Context, q store.Querier, userID, hash string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET password_hash = $2, password_changed_at = $3 WHERE id = $1`, userID, hash, now)
}

func linkRoles(ctx context.Context, q store.Querier, joinTable, ownerColumn, ownerID string, roles []*Role) error {
	for _, r := range roles {
		if _, err := q.Exec(ctx, `INSERT INTO `+joinTable+` (`+ownerColumn+`, role_id) VALUES ($1, $2)`, ownerID, r.ID); err != nil {
			return err
		}
	}
	return nil
}

type keyRow struct {
	APIKey
	secretHash string
}

const keyColumns = `id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at`

func scanKey(s store.Scanner) (*keyRow, error) {
	var k keyRow
	return &k, s.Scan(&k.ID, &k.TenantID, &k.OrganizationID, &k.Name, &k.Description, &k.KeyPrefix, &k.secretHash, &k.ExpiresAt, &k.CreatedAt)
}

func insertKey(ctx context.Context, q store.Querier, k *keyRow) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_api_keys (id, tenant_id, organization_id, name, description, key_prefix, secret_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		k.ID, k.TenantID, k.OrganizationID, k.Name, k.Description, k.KeyPrefix, k.secretHash, k.ExpiresAt, k.CreatedAt)
	return err
}

// keyByPrefix finds a key by its public prefix, deleted or not, and reports
// whether it is live: not deleted, in a live, active tenant and (when it has
// one) a live organization.
func keyByPrefix(ctx context.Context, q store.Querier, prefix string) (k *keyRow, live bool, err error) {
	k = &keyRow{}
	err = q.QueryRow(ctx, `SELECT k.id, k.tenant_id, k.organization_id, k.name, k.description, k.key_prefix, k.secret_hash, k.expires_at, k.created_at,
			(k.deleted_at IS NULL AND t.deleted_at IS NULL AND t.is_active AND o.deleted_at IS NULL)
		FROM auth_api_keys k
		JOIN auth_tenants t ON t.id = k.tenant_id
		LEFT JOIN auth_organizations o ON o.id = k.organization_id
		WHERE k.key_prefix = $1`, prefix).
		Scan(&k.ID, &k.TenantID, &k.OrganizationID, &k.Name, &k.Description, &k.KeyPrefix, &k.secretHash, &k.ExpiresAt, &k.CreatedAt, &live)
	return k, live, err
}

// listKeys pages the live keys the scope may read: its tenant's, limited
// to its organizations (and the tenant-level keys) when it has a list.
func listKeys(ctx context.Context, q store.Querier, sc store.Scope, offset, limit int) ([]*keyRow, int, error) {
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

// getKey loads a live key by id, in any tenant.
func getKey(ctx context.Context, q store.Querier, id string) (*keyRow, error) {
	return store.One(ctx, q, scanKey, `SELECT `+keyColumns+` FROM auth_api_keys WHERE id = $1 AND deleted_at IS NULL`, id)
}

func deleteKey(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_api_keys SET deleted_at = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

func insertReset(ctx context.Context, q store.Querier, tokenHash, userID string, expires, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO auth_password_resets (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)`,
		tokenHash, userID, expires, now)
	return err
}

// consumeReset marks an unused, unexpired token used and returns its user.
func consumeReset(ctx context.Context, q store.Querier, tokenHash string, now time.Time) (string, error) {
	var userID string
	err := q.QueryRow(ctx, `UPDATE auth_password_resets SET used_at = $2
		WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id`, tokenHash, now).Scan(&userID)
	return userID, err
}
