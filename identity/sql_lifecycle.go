package identity

import (
	"context"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// ListUsers returns up to limit live users of sc's tenant after offset, by
// email then id, and the count of all of them: with sc.OrganizationIDs
// set, only those of the listed organizations; with search, only those
// whose email contains it, case-folded. Text no row can hold (NUL, broken
// UTF-8) matches nothing.
func (SQLStore) ListUsers(ctx context.Context, q store.Querier, sc store.Scope, search string, offset, limit int) ([]*UserRecord, int, error) {
	if !store.Storable(search) {
		return nil, 0, nil
	}
	c := sc.Readable("tenant_id", "organization_id")
	c.And("deleted_at IS NULL")
	if search != "" {
		c.And(q.Dialect().ContainsFold("email", "?"), store.LikeContains(search))
	}
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM auth_users WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	where := c.SQL()
	page := c.OrderPage("email", "id", false, limit, offset)
	items, err := store.Many(ctx, q, scanUser, `SELECT `+userColumns+` FROM auth_users WHERE `+where+page, c.Values()...)
	return items, total, err
}

// UserTenant returns the tenant id of the live user id, of any tenant; a
// missing or deleted user is store.ErrNotFound.
func (SQLStore) UserTenant(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenantID string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM auth_users WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&tenantID)
	return tenantID, err
}

// UserRoleRefs returns the id and name of each role of the users userIDs,
// in one query, keyed by user id, each user's roles by name; a user
// without roles is absent, and no userIDs is an empty map.
func (SQLStore) UserRoleRefs(ctx context.Context, q store.Querier, userIDs []string) (map[string][]RoleRef, error) {
	out := map[string][]RoleRef{}
	if len(userIDs) == 0 {
		return out, nil
	}
	var args store.Args
	placeholders := make([]string, len(userIDs))
	for i, id := range userIDs {
		placeholders[i] = args.Add(id)
	}
	rows, err := q.Query(ctx, `SELECT j.user_id, r.id, r.name FROM auth_user_roles j JOIN auth_roles r ON r.id = j.role_id
		WHERE j.user_id IN (`+strings.Join(placeholders, ", ")+`) ORDER BY r.name, r.id`, args.Values()...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var userID string
		var ref RoleRef
		if err := rows.Scan(&userID, &ref.ID, &ref.Name); err != nil {
			return nil, err
		}
		out[userID] = append(out[userID], ref)
	}
	return out, rows.Err()
}

// SetUserOrganization sets organization_id of the live user userID of
// tenantID; a missing, deleted or other tenant's user is
// store.ErrNotFound.
func (SQLStore) SetUserOrganization(ctx context.Context, q store.Querier, tenantID, userID, orgID string) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET organization_id = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		tenantID, userID, orgID)
}

// ReplaceUserRoles deletes every auth_user_roles link of userID and
// inserts one to each of roleIDs (run it in a transaction).
func (SQLStore) ReplaceUserRoles(ctx context.Context, q store.Querier, userID string, roleIDs []string) error {
	if _, err := q.Exec(ctx, `DELETE FROM auth_user_roles WHERE user_id = $1`, userID); err != nil {
		return err
	}
	return linkRoles(ctx, q, "auth_user_roles", "user_id", userID, roleIDs)
}

// DeleteUser soft-deletes the live user userID of tenantID, setting
// deleted_at to now; a missing, deleted or other tenant's user is
// store.ErrNotFound. Its role links stay, as a deleted key's do.
func (SQLStore) DeleteUser(ctx context.Context, q store.Querier, tenantID, userID string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET deleted_at = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		tenantID, userID, now)
}

// RecordLogin sets last_login_at of the user userID of tenantID; a
// missing user is store.ErrNotFound.
func (SQLStore) RecordLogin(ctx context.Context, q store.Querier, tenantID, userID string, at time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE auth_users SET last_login_at = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, userID, at)
}

// RoleHolders counts the live (not deleted) users and API keys linked to
// roleID.
func (SQLStore) RoleHolders(ctx context.Context, q store.Querier, roleID string) (users, keys int, err error) {
	err = q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM auth_user_roles j JOIN auth_users u ON u.id = j.user_id WHERE j.role_id = $1 AND u.deleted_at IS NULL),
		(SELECT count(*) FROM auth_api_key_roles j JOIN auth_api_keys k ON k.id = j.key_id WHERE j.role_id = $1 AND k.deleted_at IS NULL)`,
		roleID).Scan(&users, &keys)
	return users, keys, err
}

// DeleteRole deletes every link to the role roleID of tenantID (from
// users and keys, which the Service has checked are all deleted ones),
// then the role; a missing role or one of another tenant is
// store.ErrNotFound.
func (SQLStore) DeleteRole(ctx context.Context, q store.Querier, tenantID, roleID string) error {
	for _, table := range []string{"auth_user_roles", "auth_api_key_roles"} {
		if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE role_id IN (SELECT id FROM auth_roles WHERE tenant_id = $1 AND id = $2)`,
			tenantID, roleID); err != nil {
			return err
		}
	}
	return store.ExecOne(ctx, q, `DELETE FROM auth_roles WHERE tenant_id = $1 AND id = $2`, tenantID, roleID)
}

// RevokeSession inserts the token id into auth_revoked_sessions (a token
// already there stays as it is) and removes the rows whose tokens have
// expired at now, which no longer need them.
func (SQLStore) RevokeSession(ctx context.Context, q store.Querier, tokenID, userID string, expiresAt, now time.Time) error {
	if _, err := q.Exec(ctx, `DELETE FROM auth_revoked_sessions WHERE expires_at <= $1`, now); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `INSERT INTO auth_revoked_sessions (token_id, user_id, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (token_id) DO NOTHING`, tokenID, userID, expiresAt)
	return err
}

// SessionRevoked reports whether auth_revoked_sessions holds the token id.
func (SQLStore) SessionRevoked(ctx context.Context, q store.Querier, tokenID string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM auth_revoked_sessions WHERE token_id = $1`, tokenID).Scan(&n)
	return n > 0, err
}
