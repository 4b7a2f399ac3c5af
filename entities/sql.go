package entities

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

const entityColumns = `id, entity_id, label, COALESCE(description, ''), COALESCE(label_field, ''), COALESCE(default_editor, ''),
	show_in_sidebar, is_active, tenant_id, COALESCE(organization_id, ''), created_at, updated_at, deleted_at`

func scanEntity(s store.Scanner) (*Entity, error) {
	var e Entity
	err := s.Scan(&e.ID, &e.EntityID, &e.Label, &e.Description, &e.LabelField, &e.DefaultEditor, &e.ShowInSidebar, &e.IsActive,
		&e.TenantID, &e.OrganizationID, &e.CreatedAt, &e.UpdatedAt, &e.DeletedAt)
	return &e, err
}

// liveEntityAt returns the live entity entityID at exactly the scope
// (tenant, org or "" for the tenant's own).
func liveEntityAt(ctx context.Context, q store.Querier, tenantID, orgID, entityID string) (*Entity, error) {
	return store.One(ctx, q, scanEntity, `SELECT `+entityColumns+` FROM custom_entities
		WHERE tenant_id = $1 AND COALESCE(organization_id, '') = $2 AND entity_id = $3 AND deleted_at IS NULL`,
		tenantID, orgID, entityID)
}

// visibleEntities returns the live entities the caller sees: the
// tenant's own and its organization's, by entity id (the organization's
// winning over the tenant's).
func visibleEntities(ctx context.Context, q store.Querier, tenantID, orgID string) ([]*Entity, error) {
	return store.Many(ctx, q, scanEntity, `SELECT `+entityColumns+` FROM custom_entities
		WHERE tenant_id = $1 AND (organization_id IS NULL OR organization_id = $2) AND deleted_at IS NULL
		ORDER BY entity_id, organization_id IS NULL, id`, tenantID, orgID)
}

func insertEntity(ctx context.Context, q store.Querier, e *Entity) error {
	_, err := q.Exec(ctx, `INSERT INTO custom_entities (id, tenant_id, organization_id, entity_id, label, description, label_field,
		default_editor, show_in_sidebar, is_active, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
		e.ID, e.TenantID, store.NullIfEmpty(e.OrganizationID), e.EntityID, e.Label, store.NullIfEmpty(e.Description),
		store.NullIfEmpty(e.LabelField), store.NullIfEmpty(e.DefaultEditor), e.ShowInSidebar, e.IsActive, e.CreatedAt)
	return err
}

func updateEntity(ctx context.Context, q store.Querier, e *Entity) error {
	return store.ExecOne(ctx, q, `UPDATE custom_entities SET label = $2, description = $3, label_field = $4, default_editor = $5,
		show_in_sidebar = $6, is_active = $7, updated_at = $8, deleted_at = $9 WHERE id = $1`,
		e.ID, e.Label, store.NullIfEmpty(e.Description), store.NullIfEmpty(e.LabelField), store.NullIfEmpty(e.DefaultEditor),
		e.ShowInSidebar, e.IsActive, e.UpdatedAt, e.DeletedAt)
}

const definitionColumns = `id, COALESCE(tenant_id, ''), COALESCE(organization_id, ''), entity_id, field_key, kind, config_json,
	is_active, tombstone_only, created_at, updated_at, deleted_at`

func scanDefinition(s store.Scanner) (*Definition, error) {
	var d Definition
	var cfg string
	err := s.Scan(&d.ID, &d.TenantID, &d.OrganizationID, &d.EntityID, &d.Key, &d.Kind, &cfg, &d.IsActive, &d.tombstoneOnly,
		&d.CreatedAt, &d.UpdatedAt, &d.DeletedAt)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(cfg), &d.ConfigJSON); err != nil {
		return nil, err
	}
	d.Scope = scopeName(d.TenantID, d.OrganizationID)
	return &d, nil
}

func scopeName(tenantID, orgID string) string {
	switch {
	case tenantID == "":
		return ScopeGlobal
	case orgID == "":
		return ScopeTenant
	}
	return ScopeOrganization
}

// visibleDefinitions returns every definition row of the entities that a
// caller of (tenant, org) may see: global ones, the tenant's, and its
// organization's (org "" sees none of an organization's), deleted ones
// included (they are tombstones).
func visibleDefinitions(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) ([]*Definition, error) {
	c := store.Where("(tenant_id IS NULL OR tenant_id = ?)", tenantID)
	if orgID == "" {
		c.And("organization_id IS NULL")
	} else {
		c.And("(organization_id IS NULL OR organization_id = ?)", orgID)
	}
	if len(entityIDs) > 0 {
		var in []any
		marks := ""
		for i, id := range entityIDs {
			if i > 0 {
				marks += ", "
			}
			marks += "?"
			in = append(in, id)
		}
		c.And("entity_id IN ("+marks+")", in...)
	}
	return store.Many(ctx, q, scanDefinition, `SELECT `+definitionColumns+` FROM custom_field_definitions WHERE `+c.SQL()+
		` ORDER BY entity_id, field_key, id`, c.Values()...)
}

// definitionAt returns the row of key at exactly the scope (tenant ""
// for global, org "" for the tenant's own), deleted or not.
func definitionAt(ctx context.Context, q store.Querier, tenantID, orgID, entityID, key string) (*Definition, error) {
	return store.One(ctx, q, scanDefinition, `SELECT `+definitionColumns+` FROM custom_field_definitions
		WHERE COALESCE(tenant_id, '') = $1 AND COALESCE(organization_id, '') = $2 AND entity_id = $3 AND field_key = $4`,
		tenantID, orgID, entityID, key)
}

func configText(cfg map[string]any) (string, error) {
	b, err := json.Marshal(cfg)
	return string(b), err
}

func insertDefinition(ctx context.Context, q store.Querier, d *Definition) error {
	cfg, err := configText(d.ConfigJSON)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO custom_field_definitions (id, tenant_id, organization_id, entity_id, field_key, kind,
		config_json, is_active, tombstone_only, created_at, updated_at, deleted_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)`,
		d.ID, store.NullIfEmpty(d.TenantID), store.NullIfEmpty(d.OrganizationID), d.EntityID, d.Key, d.Kind, cfg, d.IsActive,
		d.tombstoneOnly, d.CreatedAt, d.DeletedAt)
	return err
}

func updateDefinition(ctx context.Context, q store.Querier, d *Definition) error {
	cfg, err := configText(d.ConfigJSON)
	if err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `UPDATE custom_field_definitions SET kind = $2, config_json = $3, is_active = $4,
		tombstone_only = $5, updated_at = $6, deleted_at = $7 WHERE id = $1`,
		d.ID, d.Kind, cfg, d.IsActive, d.tombstoneOnly, d.UpdatedAt, d.DeletedAt)
}

// settingsOf returns the field settings of the entities visible to
// (tenant, org), by entity id, the most specific scope winning.
func settingsOf(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) (map[string]Settings, error) {
	type row struct {
		entityID string
		score    int
		s        Settings
	}
	c := store.Where("(tenant_id IS NULL OR tenant_id = ?)", tenantID)
	if orgID == "" {
		c.And("organization_id IS NULL")
	} else {
		c.And("(organization_id IS NULL OR organization_id = ?)", orgID)
	}
	rows, err := store.Many(ctx, q, func(s store.Scanner) (row, error) {
		var r row
		var t, o, sets string
		err := s.Scan(&t, &o, &r.entityID, &sets, &r.s.SingleFieldsetPerRecord)
		if err == nil {
			err = json.Unmarshal([]byte(sets), &r.s.Fieldsets)
		}
		r.score = score(t, o)
		return r, err
	}, `SELECT COALESCE(tenant_id, ''), COALESCE(organization_id, ''), entity_id, fieldsets, single_fieldset_per_record
		FROM custom_field_settings WHERE `+c.SQL(), c.Values()...)
	if err != nil {
		return nil, err
	}
	out := map[string]Settings{}
	best := map[string]int{}
	wanted := map[string]bool{}
	for _, id := range entityIDs {
		wanted[id] = true
	}
	for _, r := range rows {
		if len(wanted) > 0 && !wanted[r.entityID] {
			continue
		}
		if b, ok := best[r.entityID]; !ok || r.score > b {
			best[r.entityID], out[r.entityID] = r.score, r.s
		}
	}
	return out, nil
}

func saveSettings(ctx context.Context, q store.Querier, tenantID, orgID, entityID string, s Settings, now time.Time) error {
	sets, err := json.Marshal(s.Fieldsets)
	if err != nil {
		return err
	}
	n, err := q.Exec(ctx, `UPDATE custom_field_settings SET fieldsets = $4, single_fieldset_per_record = $5, updated_at = $6
		WHERE COALESCE(tenant_id, '') = $1 AND COALESCE(organization_id, '') = $2 AND entity_id = $3`,
		tenantID, orgID, entityID, string(sets), s.SingleFieldsetPerRecord, now)
	if err != nil || n == 1 {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO custom_field_settings (tenant_id, organization_id, entity_id, fieldsets,
		single_fieldset_per_record, updated_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		store.NullIfEmpty(tenantID), store.NullIfEmpty(orgID), entityID, string(sets), s.SingleFieldsetPerRecord, now)
	return err
}
