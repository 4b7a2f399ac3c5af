//go:build !tenantkit_nosqlite

package entities

import (
	"fmt"
	"hash/fnv"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	engines[store.SQLiteDialect] = engineSQL{
		indexName: func(entityID, key string) string {
			h := fnv.New64a()
			h.Write([]byte(entityID + "\x00" + key))
			return fmt.Sprintf("custom_entity_records_f_%016x", h.Sum64())
		},
		// SQLite's indexes sort NULLs first already, and have no INCLUDE:
		// organization_id is a trailing key.
		indexColumns: func(value string) string { return "tenant_id, " + value + ", id, organization_id" },
		// Migration 0004 rebuilt custom_entity_records (SQLite cannot
		// change a primary key in place), which dropped its indexes.
		listIndexes: `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'custom_entity_records'`,
	}
}
