package entities

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

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

// syncFilterableIndex makes the expression index of (entityID, key) when
// some definition of the key (at any scope, not deleted) is filterable,
// and drops it when none is. Index: the tenant, the value, then the id
// (and the organization, for counts), over the entity's live records, so that an equality, In or range
// filter, and sorting, read one tenant's matching records only, and an
// equality filter's page in id order (the default) reads just that page. Entity ids and keys
// are checked identifiers, so they are written into the statement.
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
	name := indexName(entityID, key)
	if !filterable {
		_, err = tx.Exec(ctx, `DROP INDEX IF EXISTS `+name)
		return err
	}
	// organization_id rides along (the lists' scope predicate reads it),
	// so that counting a filter's matches reads the index alone.
	columns := "tenant_id, " + valueExpr("sqlite", key) + ", id, organization_id"
	if tx.Dialect().Name() == "postgres" {
		// Records without the value first, as on SQLite (see recordOrder).
		columns = "tenant_id, " + valueExpr("postgres", key) + " NULLS FIRST, id) INCLUDE (organization_id"
	}
	_, err = tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+name+` ON custom_entity_records (`+columns+`)
		WHERE entity_id = '`+entityID+`' AND deleted_at IS NULL`)
	return err
}
