package toggles

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL. It is the only code of the
// area that writes SQL. Toggles are global; overrides are always read and
// written with their tenant.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const toggleColumns = `id, identifier, name, COALESCE(description, ''), COALESCE(category, ''), type, default_value, created_at, updated_at`

func scanToggle(s store.Scanner) (*Toggle, error) {
	var t Toggle
	var def string
	err := s.Scan(&t.ID, &t.Identifier, &t.Name, &t.Description, &t.Category, &t.Type, &def, &t.CreatedAt, &t.UpdatedAt)
	t.DefaultValue = json.RawMessage(def)
	return &t, err
}

// GetToggle implements Store.
func (*SQLStore) GetToggle(ctx context.Context, q store.Querier, id string) (*Toggle, error) {
	return store.One(ctx, q, scanToggle, `SELECT `+toggleColumns+` FROM feature_toggles WHERE id = $1 AND deleted_at IS NULL`, id)
}

// IdentifierTaken implements Store.
func (*SQLStore) IdentifierTaken(ctx context.Context, q store.Querier, identifier, except string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM feature_toggles WHERE identifier = $1 AND id <> $2`, identifier, except).Scan(&n)
	return n > 0, err
}

// CreateToggle implements Store.
func (*SQLStore) CreateToggle(ctx context.Context, q store.Querier, t *Toggle) error {
	_, err := q.Exec(ctx, `INSERT INTO feature_toggles (id, identifier, name, description, category, type, default_value, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.ID, t.Identifier, t.Name, t.Description, t.Category, string(t.Type), string(t.DefaultValue), t.CreatedAt, t.UpdatedAt)
	return err
}

// UpdateToggle implements Store.
func (*SQLStore) UpdateToggle(ctx context.Context, q store.Querier, t *Toggle) error {
	return store.ExecOne(ctx, q, `UPDATE feature_toggles SET identifier = $2, name = $3, description = $4, category = $5,
		default_value = $6, updated_at = $7 WHERE id = $1 AND deleted_at IS NULL`,
		t.ID, t.Identifier, t.Name, t.Description, t.Category, string(t.DefaultValue), t.UpdatedAt)
}

// DeleteToggle implements Store.
func (*SQLStore) DeleteToggle(ctx context.Context, q store.Querier, id string, at time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE feature_toggles SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, at)
}

// sortColumns maps the list's sortField values to columns.
var sortColumns = map[string]string{
	"id": "id", "category": "category", "identifier": "identifier", "name": "name",
	"createdAt": "created_at", "updatedAt": "updated_at", "type": "type",
}

// ListToggles implements Store.
func (*SQLStore) ListToggles(ctx context.Context, q store.Querier, f ListFilter) ([]*Toggle, int, error) {
	d := q.Dialect()
	c := store.Where("deleted_at IS NULL")
	if f.Search != "" {
		p := store.LikeContains(f.Search)
		c.And("("+d.ContainsFold("identifier", "?")+" OR "+d.ContainsFold("name", "?")+" OR "+
			d.ContainsFold("COALESCE(description, '')", "?")+" OR "+d.ContainsFold("COALESCE(category, '')", "?")+")", p, p, p, p)
	}
	for col, v := range map[string]string{"identifier": f.Identifier, "name": f.Name, "COALESCE(category, '')": f.Category} {
		if v != "" {
			c.And(d.ContainsFold(col, "?"), store.LikeContains(v))
		}
	}
	if f.Type != "" {
		c.And("type = ?", string(f.Type))
	}
	// The total counts the toggles; with a search, at most
	// store.SearchCap(ctx)+1 of them (store.CountCapped).
	var total int
	var err error
	if f.Search != "" {
		total, err = store.CountCapped(ctx, q, `FROM feature_toggles WHERE `+c.SQL(), c.Values()...)
	} else {
		err = q.QueryRow(ctx, `SELECT count(*) FROM feature_toggles WHERE `+c.SQL(), c.Values()...).Scan(&total)
	}
	if err != nil {
		return nil, 0, err
	}
	page := c.OrderPage(cmp.Or(sortColumns[f.SortField], "created_at"), "id", f.SortDesc, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, scanToggle, `SELECT `+toggleColumns+` FROM feature_toggles WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

const overrideColumns = `id, toggle_id, tenant_id, value, updated_at`

func scanOverride(s store.Scanner) (*Override, error) {
	var o Override
	var v string
	err := s.Scan(&o.ID, &o.ToggleID, &o.TenantID, &v, &o.UpdatedAt)
	o.Value = json.RawMessage(v)
	return &o, err
}

// GetOverride implements Store.
func (*SQLStore) GetOverride(ctx context.Context, q store.Querier, tenantID, toggleID string) (*Override, error) {
	return store.One(ctx, q, scanOverride, `SELECT `+overrideColumns+` FROM feature_toggle_overrides
		WHERE tenant_id = $1 AND toggle_id = $2`, tenantID, toggleID)
}

// UpsertOverride implements Store: ON CONFLICT keeps the row, and so its
// id.
func (*SQLStore) UpsertOverride(ctx context.Context, q store.Querier, o *Override) (*Override, error) {
	return store.One(ctx, q, scanOverride, `INSERT INTO feature_toggle_overrides (id, toggle_id, tenant_id, value, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (toggle_id, tenant_id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
		RETURNING `+overrideColumns, o.ID, o.ToggleID, o.TenantID, string(o.Value), o.UpdatedAt)
}

// DeleteOverride implements Store.
func (*SQLStore) DeleteOverride(ctx context.Context, q store.Querier, tenantID, toggleID string) (bool, error) {
	n, err := q.Exec(ctx, `DELETE FROM feature_toggle_overrides WHERE tenant_id = $1 AND toggle_id = $2`, tenantID, toggleID)
	return n > 0, err
}

// overrideSortColumns maps the overrides list's sortField values.
var overrideSortColumns = map[string]string{"identifier": "t.identifier", "name": "t.name", "category": "COALESCE(t.category, '')"}

// ListOverrides implements Store: a left join, so toggles without an
// override of the tenant's are listed with their default.
func (*SQLStore) ListOverrides(ctx context.Context, q store.Querier, tenantID string, f OverrideFilter) ([]*OverrideItem, int, error) {
	d := q.Dialect()
	c := &store.Conds{}
	tenant := c.Add(tenantID)
	c.And("t.deleted_at IS NULL")
	for col, v := range map[string]string{"t.identifier": f.Identifier, "t.name": f.Name, "COALESCE(t.category, '')": f.Category} {
		if v != "" {
			c.And(d.ContainsFold(col, "?"), store.LikeContains(v))
		}
	}
	from := ` FROM feature_toggles t LEFT JOIN feature_toggle_overrides o ON o.toggle_id = t.id AND o.tenant_id = ` + tenant +
		` WHERE ` + c.SQL()
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*)`+from, c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	page := c.OrderPage(cmp.Or(overrideSortColumns[f.SortField], "t.identifier"), "t.id", f.SortDesc, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, func(s store.Scanner) (*OverrideItem, error) {
		var it OverrideItem
		var id, value *string
		var def string
		err := s.Scan(&id, &it.ToggleID, &it.Identifier, &it.Name, &it.Category, &it.Type, &def, &value, &it.UpdatedAt)
		it.TenantID = tenantID
		it.IsOverride = id != nil
		it.Value = json.RawMessage(def)
		if id != nil {
			it.ID, it.Value = *id, json.RawMessage(*value)
		}
		return &it, err
	}, `SELECT o.id, t.id, t.identifier, t.name, COALESCE(t.category, ''), t.type, t.default_value, o.value, o.updated_at`+from+page, c.Values()...)
	return items, total, err
}

// LoadAll implements Store.
func (*SQLStore) LoadAll(ctx context.Context, q store.Querier) ([]*Toggle, []*Override, error) {
	ts, err := store.Many(ctx, q, scanToggle, `SELECT `+toggleColumns+` FROM feature_toggles WHERE deleted_at IS NULL`)
	if err != nil {
		return nil, nil, err
	}
	os, err := store.Many(ctx, q, scanOverride, `SELECT o.id, o.toggle_id, o.tenant_id, o.value, o.updated_at
		FROM feature_toggle_overrides o JOIN feature_toggles t ON t.id = o.toggle_id WHERE t.deleted_at IS NULL`)
	return ts, os, err
}
