//go:build !tenantkit_nopostgres

package entities

import (
	"crypto/md5"
	"encoding/hex"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	engines[store.PostgresDialect] = engineSQL{
		// Named by an md5 prefix, which migration 0003 computes too when it
		// rebuilds the indexes of 0002 with BoundedJSONValue.
		indexName: func(entityID, key string) string {
			sum := md5.Sum([]byte(entityID + ":" + key))
			return "custom_entity_records_k_" + hex.EncodeToString(sum[:8])
		},
		// Records without the value first, as on SQLite (see recordOrder);
		// organization_id rides along in INCLUDE.
		indexColumns: func(value string) string { return "tenant_id, " + value + " NULLS FIRST, id) INCLUDE (organization_id" },
		// Migration 0004 changed the key in place and kept the indexes.
		listIndexes: "",
	}
}
