package entities

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on the store package's databases, SQLite and
// PostgreSQL alike: the tables of the area's migrations (Migrations),
// with an expression index and value counts per filterable field
// (sql_filterable.go, sql_counts.go). The few engine differences come from the
// Querier's Dialect, and the filterable indexes' names and columns from
// the engine's own file (sql_sqlite.go, sql_postgres.go). Use one per
// database.
type SQLStore struct {
	// indexesRestored is set once PrepareLists found every filterable
	// index present (restoreMu serialises its look).
	indexesRestored atomic.Bool
	restoreMu       sync.Mutex
}

// NewSQLStore returns the SQL Store.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

// engineSQL is what differs between the engines in the area's own SQL and
// is no Dialect matter: the filterable indexes' names and columns, whose
// history differs by engine.
type engineSQL struct {
	// indexName names the filterable index of (entityID, key).
	indexName func(entityID, key string) string
	// indexColumns is the column list of a filterable index (what CREATE
	// INDEX … ON custom_entity_records (…) holds) whose value key is value.
	indexColumns func(value string) string
	// listIndexes, when set, lists the names of custom_entity_records'
	// indexes: a migration dropped them, so that PrepareLists makes the
	// missing filterable ones again.
	listIndexes string
	// idsIn is the predicate that the id column is one of the ids that
	// the one parameter p holds, idList that parameter's value: one
	// statement text whatever the number of ids, parsed and planned once
	// (a list of numbered parameters is parsed again every time on
	// SQLite and bound by name, and PostgreSQL's generic plan of one
	// scans the entity's records testing each against every parameter).
	idsIn  func(p string) string
	idList func(ids []string) (any, error)
	// insertRecords writes new records' rows (InsertRecords).
	insertRecords func(ctx context.Context, q store.Querier, rows []recordRow) error
	// updateRecords writes rows' data and updatedAt over the live records
	// of their tenant and id, and returns how many it wrote.
	updateRecords func(ctx context.Context, q store.Querier, rows []recordRow) (int64, error)
	// addCounts adds rows' n to the value counts of (tenantID, entityID)
	// in slot, in the rows' order (countDeltas.flush).
	addCounts func(ctx context.Context, q store.Querier, tenantID, entityID string, slot int, rows []countRow) error
	// prepare has the statements of the batch writes above prepared (see
	// PrepareInserts); nil when the engine needs nothing.
	prepare func(ctx context.Context, db *store.DB)
	// page is an unfiltered list's LIMIT and OFFSET clause, its
	// arguments added to k (a filtered list's are parameters on every
	// engine: listRecords).
	page func(k *store.Conds, limit, offset int) string
}

// engines holds each engine's engineSQL by its Dialect value; each
// engine's build-tagged file registers itself, as the store's engines do.
var engines = map[store.Dialect]engineSQL{}

// engineOf returns q's engineSQL.
func engineOf(q store.Querier) (engineSQL, error) {
	e, ok := engines[q.Dialect()]
	if !ok {
		return e, errors.New("entities: the SQL store does not know this database engine")
	}
	return e, nil
}

const entityColumns = `id, entity_id, label, COALESCE(description, ''), COALESCE(label_field, ''), COALESCE(default_editor, ''),
	show_in_sidebar, is_active, tenant_id, COALESCE(organization_id, ''), created_at, updated_at, deleted_at`

func scanEntity(s store.Scanner) (*Entity, error) {
	var e Entity
	err := s.Scan(&e.ID, &e.EntityID, &e.Label, &e.Description, &e.LabelField, &e.DefaultEditor, &e.ShowInSidebar, &e.IsActive,
		&e.TenantID, &e.OrganizationID, &e.CreatedAt, &e.UpdatedAt, &e.DeletedAt)
	return &e, err
}

// LiveEntity implements Store.
func (*SQLStore) LiveEntity(ctx context.Context, q store.Querier, tenantID, orgID, entityID string) (*Entity, error) {
	return store.One(ctx, q, scanEntity, `SELECT `+entityColumns+` FROM custom_entities
		WHERE tenant_id = $1 AND COALESCE(organization_id, '') = $2 AND entity_id = $3 AND deleted_at IS NULL`,
		tenantID, orgID, entityID)
}

// VisibleEntities implements Store.
func (*SQLStore) VisibleEntities(ctx context.Context, q store.Querier, tenantID, orgID string) ([]*Entity, error) {
	return store.Many(ctx, q, scanEntity, `SELECT `+entityColumns+` FROM custom_entities
		WHERE tenant_id = $1 AND (organization_id IS NULL OR organization_id = $2) AND deleted_at IS NULL
		ORDER BY entity_id, organization_id IS NULL, id`, tenantID, orgID)
}

// InsertEntity implements Store.
func (*SQLStore) InsertEntity(ctx context.Context, q store.Querier, e *Entity) error {
	_, err := q.Exec(ctx, `INSERT INTO custom_entities (id, tenant_id, organization_id, entity_id, label, description, label_field,
		default_editor, show_in_sidebar, is_active, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
		e.ID, e.TenantID, store.NullIfEmpty(e.OrganizationID), e.EntityID, e.Label, store.NullIfEmpty(e.Description),
		store.NullIfEmpty(e.LabelField), store.NullIfEmpty(e.DefaultEditor), e.ShowInSidebar, e.IsActive, e.CreatedAt)
	return err
}

// UpdateEntity implements Store.
func (*SQLStore) UpdateEntity(ctx context.Context, q store.Querier, e *Entity) error {
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
	err := s.Scan(&d.ID, &d.TenantID, &d.OrganizationID, &d.EntityID, &d.Key, &d.Kind, &cfg, &d.IsActive, &d.TombstoneOnly,
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

// VisibleDefinitions implements Store.
func (*SQLStore) VisibleDefinitions(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) ([]*Definition, error) {
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

// DefinitionAt implements Store.
func (*SQLStore) DefinitionAt(ctx context.Context, q store.Querier, tenantID, orgID, entityID, key string) (*Definition, error) {
	return store.One(ctx, q, scanDefinition, `SELECT `+definitionColumns+` FROM custom_field_definitions
		WHERE COALESCE(tenant_id, '') = $1 AND COALESCE(organization_id, '') = $2 AND entity_id = $3 AND field_key = $4`,
		tenantID, orgID, entityID, key)
}

// RemoveDefinition implements Store.
func (*SQLStore) RemoveDefinition(ctx context.Context, q store.Querier, id string) error {
	return store.ExecOne(ctx, q, `DELETE FROM custom_field_definitions WHERE id = $1`, id)
}

func configText(cfg map[string]any) (string, error) {
	b, err := json.Marshal(cfg)
	return string(b), err
}

// InsertDefinition implements Store.
func (*SQLStore) InsertDefinition(ctx context.Context, q store.Querier, d *Definition) error {
	cfg, err := configText(d.ConfigJSON)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO custom_field_definitions (id, tenant_id, organization_id, entity_id, field_key, kind,
		config_json, is_active, tombstone_only, created_at, updated_at, deleted_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)`,
		d.ID, store.NullIfEmpty(d.TenantID), store.NullIfEmpty(d.OrganizationID), d.EntityID, d.Key, d.Kind, cfg, d.IsActive,
		d.TombstoneOnly, d.CreatedAt, d.DeletedAt)
	return err
}

// UpdateDefinition implements Store.
func (*SQLStore) UpdateDefinition(ctx context.Context, q store.Querier, d *Definition) error {
	cfg, err := configText(d.ConfigJSON)
	if err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `UPDATE custom_field_definitions SET kind = $2, config_json = $3, is_active = $4,
		tombstone_only = $5, updated_at = $6, deleted_at = $7 WHERE id = $1`,
		d.ID, d.Kind, cfg, d.IsActive, d.TombstoneOnly, d.UpdatedAt, d.DeletedAt)
}

// Settings implements Store.
func (*SQLStore) Settings(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) (map[string]Settings, error) {
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

// SaveSettings implements Store.
func (*SQLStore) SaveSettings(ctx context.Context, q store.Querier, tenantID, orgID, entityID string, s Settings, now time.Time) error {
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
