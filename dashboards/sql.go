package dashboards

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL. Widgets and widget id lists
// are kept as JSON text: they are always read and written whole.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

// GetLayout implements Store.
func (*SQLStore) GetLayout(ctx context.Context, q store.Querier, tenantID, owner string) (*Layout, error) {
	return store.One(ctx, q, func(s store.Scanner) (*Layout, error) {
		l := &Layout{TenantID: tenantID, Owner: owner}
		var widgets string
		if err := s.Scan(&widgets, &l.Version, &l.CreatedAt, &l.UpdatedAt); err != nil {
			return nil, err
		}
		l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
		return l, json.Unmarshal([]byte(widgets), &l.Widgets)
	}, `SELECT widgets, version, created_at, updated_at FROM dashboard_layouts WHERE tenant_id = $1 AND owner_id = $2`, tenantID, owner)
}

// CreateLayout implements Store.
func (*SQLStore) CreateLayout(ctx context.Context, q store.Querier, l *Layout) (bool, error) {
	widgets, err := marshalWidgets(l.Widgets)
	if err != nil {
		return false, err
	}
	n, err := q.Exec(ctx, `INSERT INTO dashboard_layouts (tenant_id, owner_id, widgets, version, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, l.TenantID, l.Owner, widgets, l.Version, l.CreatedAt, l.UpdatedAt)
	return n > 0, err
}

// UpdateLayout implements Store: the version in the WHERE clause makes it
// a compare-and-set, so of two writers that read the same version only
// the first changes the row.
func (*SQLStore) UpdateLayout(ctx context.Context, q store.Querier, tenantID, owner string, version int64, widgets []Widget, at time.Time) error {
	text, err := marshalWidgets(widgets)
	if err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `UPDATE dashboard_layouts SET widgets = $4, version = version + 1, updated_at = $5
		WHERE tenant_id = $1 AND owner_id = $2 AND version = $3`, tenantID, owner, version, text, at)
}

func marshalWidgets(ws []Widget) (string, error) {
	if ws == nil {
		ws = []Widget{}
	}
	b, err := json.Marshal(ws)
	return string(b), err
}

func marshalIDs(ids []string) string {
	if ids == nil {
		ids = []string{}
	}
	b, _ := json.Marshal(ids) // strings always marshal
	return string(b)
}

// RoleWidgets implements Store.
func (*SQLStore) RoleWidgets(ctx context.Context, q store.Querier, tenantID string, roleIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(roleIDs) == 0 {
		return out, nil
	}
	args := store.Args{}
	tenant := args.Add(tenantID)
	placeholders := make([]string, len(roleIDs))
	for i, id := range roleIDs {
		placeholders[i] = args.Add(id)
	}
	type record struct {
		role string
		ids  []string
	}
	records, err := store.Many(ctx, q, func(s store.Scanner) (record, error) {
		var r record
		var ids string
		if err := s.Scan(&r.role, &ids); err != nil {
			return r, err
		}
		return r, json.Unmarshal([]byte(ids), &r.ids)
	}, `SELECT role_id, widget_ids FROM dashboard_role_widgets WHERE tenant_id = `+tenant+
		` AND role_id IN (`+strings.Join(placeholders, ", ")+`)`, args.Values()...)
	for _, r := range records {
		out[r.role] = r.ids
	}
	return out, err
}

// SetRoleWidgets implements Store.
func (*SQLStore) SetRoleWidgets(ctx context.Context, q store.Querier, tenantID, roleID string, widgetIDs []string, at time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO dashboard_role_widgets (tenant_id, role_id, widget_ids, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, role_id) DO UPDATE SET widget_ids = excluded.widget_ids, updated_at = excluded.updated_at`,
		tenantID, roleID, marshalIDs(widgetIDs), at)
	return err
}

// DeleteRoleWidgets implements Store.
func (*SQLStore) DeleteRoleWidgets(ctx context.Context, q store.Querier, tenantID, roleID string) error {
	_, err := q.Exec(ctx, `DELETE FROM dashboard_role_widgets WHERE tenant_id = $1 AND role_id = $2`, tenantID, roleID)
	return err
}

// UserWidgets implements Store.
func (*SQLStore) UserWidgets(ctx context.Context, q store.Querier, tenantID, userID string) ([]string, error) {
	return store.One(ctx, q, func(s store.Scanner) ([]string, error) {
		var text string
		if err := s.Scan(&text); err != nil {
			return nil, err
		}
		ids := []string{}
		return ids, json.Unmarshal([]byte(text), &ids)
	}, `SELECT widget_ids FROM dashboard_user_widgets WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID)
}

// SetUserWidgets implements Store.
func (*SQLStore) SetUserWidgets(ctx context.Context, q store.Querier, tenantID, userID string, widgetIDs []string, at time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO dashboard_user_widgets (tenant_id, user_id, widget_ids, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, user_id) DO UPDATE SET widget_ids = excluded.widget_ids, updated_at = excluded.updated_at`,
		tenantID, userID, marshalIDs(widgetIDs), at)
	return err
}

// DeleteUserWidgets implements Store.
func (*SQLStore) DeleteUserWidgets(ctx context.Context, q store.Querier, tenantID, userID string) error {
	_, err := q.Exec(ctx, `DELETE FROM dashboard_user_widgets WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID)
	return err
}
