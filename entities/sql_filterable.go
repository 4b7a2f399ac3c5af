package entities

import (
	"context"
	"encoding/json"

	"github.com/tenantkit/tenantkit/store"
)

// valueExpr is the SQL expression of field key's value in a record's data
// (Dialect.JSONValue: SQLite's json_extract, PostgreSQL's jsonb value).
// key is a checked snake_case identifier.
func valueExpr(q store.Querier, key string) string {
	return q.Dialect().JSONValue("data", key)
}

// maxIndexedValue bounds the values PostgreSQL's filterable indexes hold
// (as jsonb text): an index entry there holds at most about 2,700 bytes,
// and a longer value would fail the record's write.
const maxIndexedValue = 1500

// indexedExpr is the expression the filterable indexes hold, and that
// range filters, short equality filters and sorting use so that the
// engine reads them from the index: valueExpr, or on PostgreSQL NULL for
// a value whose text is over maxIndexedValue bytes (so a long text sorts
// as if empty there, and equality with a long value uses valueExpr: see
// shortFilterValue). See Dialect.BoundedJSONValue.
func indexedExpr(q store.Querier, key string) string {
	return q.Dialect().BoundedJSONValue("data", key, maxIndexedValue)
}

// shortFilterValue reports whether a record's value equal to x is held by
// the index (indexedExpr): x's JSON is at most 1,000 bytes, which jsonb's
// text of an equal value cannot exceed by 500.
func shortFilterValue(x any) bool {
	b, _ := jsonMarshal(x)
	return len(b) <= 1000
}

// SyncFilterable implements Store: it keeps (entityID, key)'s index and
// value counts in step with its definitions. When some definition of the
// key (at any scope, active, not deleted) is filterable, the key is
// listed in custom_entity_filterable_fields and has an expression index
// and counts (sql_counts.go); when none is, it has neither.
//
// The index: the tenant, the value, then the id (and the organization,
// for counts that do not use the value counts), over the entity's live
// records, so that an equality, In or range filter, and sorting, read one
// tenant's matching records only, and an equality filter's page in id
// order (the default) reads just that page. Entity ids and keys are
// checked identifiers, so they are written into the statement.
//
// Making the key filterable locks custom_entity_records against writes
// until the transaction ends (CREATE INDEX takes that lock on PostgreSQL;
// SQLite has one writer), so no record write falls between the counts'
// rebuild and the key's listing (see filterableKeys).
func (*SQLStore) SyncFilterable(ctx context.Context, q store.Querier, entityID, key string) error {
	eng, err := engineOf(q)
	if err != nil {
		return err
	}
	configs, err := store.Many(ctx, q, func(sc store.Scanner) (string, error) {
		var cfg string
		return cfg, sc.Scan(&cfg)
	}, `SELECT config_json FROM custom_field_definitions WHERE entity_id = $1 AND field_key = $2
		AND deleted_at IS NULL AND is_active`, entityID, key)
	if err != nil {
		return err
	}
	filterable := false
	for _, c := range configs {
		var cfg struct {
			Filterable bool `json:"filterable"`
		}
		if json.Unmarshal([]byte(c), &cfg) == nil && cfg.Filterable {
			filterable = true
		}
	}
	listed, err := q.Exec(ctx, `DELETE FROM custom_entity_filterable_fields WHERE entity_id = $1 AND field_key = $2`, entityID, key)
	if err != nil {
		return err
	}
	if !filterable {
		if listed == 0 {
			return nil
		}
		if _, err := q.Exec(ctx, `DROP INDEX IF EXISTS `+eng.indexName(entityID, key)); err != nil {
			return err
		}
		return dropCounts(ctx, q, entityID, key)
	}
	if _, err := q.Exec(ctx, `INSERT INTO custom_entity_filterable_fields (entity_id, field_key) VALUES ($1, $2)`, entityID, key); err != nil {
		return err
	}
	if listed == 1 {
		return nil // already filterable: its index and counts are kept up to date
	}
	if err := createFilterableIndex(ctx, q, eng, entityID, key); err != nil {
		return err
	}
	return rebuildCounts(ctx, q, entityID, key)
}

// createFilterableIndex makes (entityID, key)'s index unless it exists.
// organization_id rides along (the lists' scope predicate reads it), so
// that counting a filter's matches reads the index alone.
func createFilterableIndex(ctx context.Context, q store.Querier, eng engineSQL, entityID, key string) error {
	_, err := q.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+eng.indexName(entityID, key)+` ON custom_entity_records (`+
		eng.indexColumns(indexedExpr(q, key))+`)
		WHERE entity_id = '`+entityID+`' AND deleted_at IS NULL`)
	return err
}

// filterableField is a row of custom_entity_filterable_fields.
type filterableField struct{ entityID, key string }

// PrepareLists implements Store: it makes the filterable indexes that
// custom_entity_filterable_fields lists and the database lacks, on an
// engine whose migrations dropped them (engineSQL.listIndexes): SQLite's
// migration 0004 rebuilt custom_entity_records (SQLite cannot change a
// primary key in place), which drops the table's indexes, and SQL alone
// cannot name them (indexName hashes). It looks once per store (one
// query, and a write transaction only when an index is missing) and again
// after a failure. Without the indexes the lists are right but read every
// record of the tenant's entity.
func (s *SQLStore) PrepareLists(ctx context.Context, db *store.DB) error {
	if s.indexesRestored.Load() {
		return nil
	}
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	if s.indexesRestored.Load() {
		return nil
	}
	eng, err := engineOf(db)
	if err != nil {
		return err
	}
	if eng.listIndexes == "" {
		s.indexesRestored.Store(true)
		return nil
	}
	missing := func(ctx context.Context, q store.Querier) ([]filterableField, error) {
		listed, err := store.Many(ctx, q, func(sc store.Scanner) (filterableField, error) {
			var f filterableField
			return f, sc.Scan(&f.entityID, &f.key)
		}, `SELECT entity_id, field_key FROM custom_entity_filterable_fields`)
		if err != nil {
			return nil, err
		}
		names, err := store.Many(ctx, q, func(sc store.Scanner) (string, error) {
			var n string
			return n, sc.Scan(&n)
		}, eng.listIndexes)
		if err != nil {
			return nil, err
		}
		have := make(map[string]bool, len(names))
		for _, n := range names {
			have[n] = true
		}
		var out []filterableField
		for _, f := range listed {
			if !have[eng.indexName(f.entityID, f.key)] {
				out = append(out, f)
			}
		}
		return out, nil
	}
	fs, err := missing(ctx, db)
	if err != nil {
		return err
	}
	if len(fs) > 0 {
		// Read again under the writer, so that a key another process made
		// plain meanwhile gets no index.
		err = db.Tx(ctx, func(tx *store.Tx) error {
			fs, err := missing(ctx, tx)
			if err != nil {
				return err
			}
			for _, f := range fs {
				if err := createFilterableIndex(ctx, tx, eng, f.entityID, f.key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	s.indexesRestored.Store(true)
	return nil
}
