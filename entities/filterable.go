package entities

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// valueExpr is the SQL expression of field key's value in a record's data:
// SQLite's json_extract (numbers compare as numbers, text as text) and
// PostgreSQL's jsonb value (jsonb's own order: numbers numerically,
// strings as text). key is a checked snake_case identifier.
func valueExpr(dialect string, key string) string {
	if dialect == "postgres" {
		return "(data -> '" + key + "')"
	}
	return "json_extract(data, '$." + key + "')"
}

// maxIndexedValue bounds the values PostgreSQL's filterable indexes hold
// (as jsonb text): an index entry there holds at most about 2,700 bytes,
// and a longer value would fail the record's write.
const maxIndexedValue = 1500

// indexedExpr is the expression the filterable indexes hold, and that
// range filters, short equality filters and sorting use so that the
// engine reads them from the index: valueExpr on SQLite; on PostgreSQL
// valueExpr when its text is at most maxIndexedValue bytes, else NULL
// (so a long text sorts as if empty there, and equality with a long value
// uses valueExpr: see shortFilterValue).
func indexedExpr(dialect string, key string) string {
	v := valueExpr(dialect, key)
	if dialect == "postgres" {
		return "(CASE WHEN octet_length(" + v + "::text) <= " + strconv.Itoa(maxIndexedValue) + " THEN " + v + " END)"
	}
	return v
}

// shortFilterValue reports whether a record's value equal to x is held by
// the index (indexedExpr): x's JSON is at most 1,000 bytes, which jsonb's
// text of an equal value cannot exceed by 500.
func shortFilterValue(x any) bool {
	b, _ := jsonMarshal(x)
	return len(b) <= 1000
}

// valueParam is a filter value as the engine compares it with valueExpr:
// a jsonb literal on PostgreSQL; on SQLite the value json_extract reads
// from its JSON text (a number written without a fraction or exponent is
// an INTEGER when it fits in 64 bits, as 2^60 is, which as a REAL would
// compare unequal).
func valueParam(dialect string, x any) (any, string) {
	if dialect == "postgres" {
		b, _ := jsonMarshal(x)
		return string(b), "::jsonb"
	}
	if f, ok := x.(float64); ok {
		b, _ := jsonMarshal(f)
		if !strings.ContainsAny(string(b), ".eE") {
			if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
				return n, ""
			}
		}
	}
	return x, ""
}

// indexName names the filterable index of (entityID, key). PostgreSQL's
// are named by an md5 prefix, which its migration 0003 computes too when
// it rebuilds the indexes of 0002 with indexedExpr.
func indexName(dialect, entityID, key string) string {
	if dialect == "postgres" {
		sum := md5.Sum([]byte(entityID + ":" + key))
		return "custom_entity_records_k_" + hex.EncodeToString(sum[:8])
	}
	h := fnv.New64a()
	h.Write([]byte(entityID + "\x00" + key))
	return fmt.Sprintf("custom_entity_records_f_%016x", h.Sum64())
}

// syncFilterableIndex keeps (entityID, key)'s index and value counts in
// step with its definitions: when some definition of the key (at any
// scope, active, not deleted) is filterable, the key is listed in
// custom_entity_filterable_fields and has an expression index and counts
// (counts.go); when none is, it has neither.
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
func syncFilterableIndex(ctx context.Context, tx *store.Tx, entityID, key string) error {
	configs, err := store.Many(ctx, tx, func(sc store.Scanner) (string, error) {
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
	listed, err := tx.Exec(ctx, `DELETE FROM custom_entity_filterable_fields WHERE entity_id = $1 AND field_key = $2`, entityID, key)
	if err != nil {
		return err
	}
	if !filterable {
		if listed == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+indexName(tx.Dialect().Name(), entityID, key)); err != nil {
			return err
		}
		return dropCounts(ctx, tx, entityID, key)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO custom_entity_filterable_fields (entity_id, field_key) VALUES ($1, $2)`, entityID, key); err != nil {
		return err
	}
	if listed == 1 {
		return nil // already filterable: its index and counts are kept up to date
	}
	if err := createFilterableIndex(ctx, tx, entityID, key); err != nil {
		return err
	}
	return rebuildCounts(ctx, tx, entityID, key)
}

// createFilterableIndex makes (entityID, key)'s index unless it exists.
func createFilterableIndex(ctx context.Context, tx *store.Tx, entityID, key string) error {
	dialect := tx.Dialect().Name()
	// organization_id rides along (the lists' scope predicate reads it),
	// so that counting a filter's matches reads the index alone.
	columns := "tenant_id, " + indexedExpr("sqlite", key) + ", id, organization_id"
	if dialect == "postgres" {
		// Records without the value first, as on SQLite (see recordOrder).
		columns = "tenant_id, " + indexedExpr("postgres", key) + " NULLS FIRST, id) INCLUDE (organization_id"
	}
	_, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+indexName(dialect, entityID, key)+` ON custom_entity_records (`+columns+`)
		WHERE entity_id = '`+entityID+`' AND deleted_at IS NULL`)
	return err
}

// filterableField is a row of custom_entity_filterable_fields.
type filterableField struct{ entityID, key string }

// restoreIndexes makes, on SQLite, the filterable indexes that
// custom_entity_filterable_fields lists and the database lacks: migration
// 0004 rebuilt custom_entity_records (SQLite cannot change a primary key
// in place), which drops the table's indexes, and SQL alone cannot name
// them (indexName hashes). The lists call it first; it looks once per
// service (one query, and a write transaction only when an index is
// missing) and again after a failure. Without the indexes the lists are
// right but read every record of the tenant's entity. PostgreSQL changed
// the key in place and kept its indexes.
func (s *Service) restoreIndexes(ctx context.Context) error {
	if s.indexesRestored.Load() {
		return nil
	}
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	if s.indexesRestored.Load() {
		return nil
	}
	if s.db.Dialect().Name() != "sqlite" {
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
		}, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'custom_entity_records'`)
		if err != nil {
			return nil, err
		}
		have := make(map[string]bool, len(names))
		for _, n := range names {
			have[n] = true
		}
		var out []filterableField
		for _, f := range listed {
			if !have[indexName("sqlite", f.entityID, f.key)] {
				out = append(out, f)
			}
		}
		return out, nil
	}
	fs, err := missing(ctx, s.db)
	if err != nil {
		return err
	}
	if len(fs) > 0 {
		// Read again under the writer, so that a key another process made
		// plain meanwhile gets no index.
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			fs, err := missing(ctx, tx)
			if err != nil {
				return err
			}
			for _, f := range fs {
				if err := createFilterableIndex(ctx, tx, f.entityID, f.key); err != nil {
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
