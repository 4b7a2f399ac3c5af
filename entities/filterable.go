package entities

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/tenantkit/tenantkit/store"
)

// valueExpr is the SQL expression of field key's value in a record's data,
// in the form filters, sorting and the filterable indexes share: SQLite's
// json_extract (numbers compare as numbers, text as text) and
// PostgreSQL's jsonb value (jsonb's own order: numbers numerically,
// strings as text). key is a checked snake_case identifier.
func valueExpr(dialect string, key string) string {
	if dialect == "postgres" {
		return "(data -> '" + key + "')"
	}
	return "json_extract(data, '$." + key + "')"
}

// valueParam is a filter value as the engine compares it with valueExpr:
// as is on SQLite, as a jsonb literal on PostgreSQL.
func valueParam(dialect string, x any) (any, string) {
	if dialect == "postgres" {
		b, _ := jsonMarshal(x)
		return string(b), "::jsonb"
	}
	return x, ""
}

// indexName names the filterable index of (entityID, key).
func indexName(entityID, key string) string {
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
	name := indexName(entityID, key)
	if !filterable {
		if listed == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+name); err != nil {
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
	// organization_id rides along (the lists' scope predicate reads it),
	// so that counting a filter's matches reads the index alone.
	columns := "tenant_id, " + valueExpr("sqlite", key) + ", id, organization_id"
	size := "length(CAST(json_extract(data, '$." + key + "') AS BLOB))"
	if tx.Dialect().Name() == "postgres" {
		// Records without the value first, as on SQLite (see recordOrder).
		columns = "tenant_id, " + valueExpr("postgres", key) + " NULLS FIRST, id) INCLUDE (organization_id"
		size = "CASE jsonb_typeof(" + valueExpr("postgres", key) + ") WHEN 'string' THEN octet_length(data ->> '" + key +
			"') ELSE octet_length(" + valueExpr("postgres", key) + "::text) END"
	}
	var tooLong bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM custom_entity_records WHERE entity_id = $1 AND deleted_at IS NULL
		AND `+size+` > `+strconv.Itoa(maxFilterableValue)+`)`, entityID).Scan(&tooLong); err != nil {
		return err
	}
	if tooLong {
		return store.Invalid("filterable", "Records hold values of this field longer than 1500 bytes, too long to be filterable")
	}
	if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+name+` ON custom_entity_records (`+columns+`)
		WHERE entity_id = '`+entityID+`' AND deleted_at IS NULL`); err != nil {
		return err
	}
	return rebuildCounts(ctx, tx, entityID, key)
}
