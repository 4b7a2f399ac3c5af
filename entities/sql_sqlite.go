//go:build !tenantkit_nosqlite

package entities

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/tenantkit/tenantkit/store"
)

// The batch writes on SQLite: statements of up to 50 rows of anonymous
// parameters (rowStatements), prepared by PrepareInserts.
var (
	// sqliteRecordInserts: OR FAIL, so that SQLite keeps no statement
	// journal (a copy of every page the statement changes, to undo the
	// statement alone on a constraint error): a conflict fails the
	// statement where it stands, and every caller rolls the transaction
	// back on an error (on PostgreSQL the transaction is lost anyway).
	sqliteRecordInserts = newRowStatements(`INSERT OR FAIL INTO custom_entity_records (id, tenant_id, organization_id, entity_id, data,
		created_at, updated_at) VALUES `, `(?, ?, ?, ?, ?, ?, ?)`, ``)
	// sqliteRecordUpdates: UPDATE … FROM (VALUES …) (SQLite 3.33 and
	// later), each row found by the primary key.
	sqliteRecordUpdates = newRowStatements(`UPDATE custom_entity_records SET data = v.column3, updated_at = v.column4 FROM (VALUES `,
		`(?, ?, ?, ?)`, `) AS v WHERE custom_entity_records.tenant_id = v.column1 AND custom_entity_records.id = v.column2
		AND custom_entity_records.deleted_at IS NULL`)
	sqliteCountAdds = newRowStatements(`INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id,
		slot, n) VALUES `, `(?, ?, ?, ?, ?, ?, ?)`, ` ON CONFLICT (tenant_id, entity_id, field_key, value, organization_id, slot)
		DO UPDATE SET n = custom_entity_value_counts.n + excluded.n`)
)

func init() {
	engines[store.SQLiteDialect] = engineSQL{
		// Both as parameters: one kept statement for every page (its
		// LIMIT and OFFSET planned without their values, see the store's
		// sqliteText).
		page: func(k *store.Conds, limit, offset int) string {
			return " LIMIT " + k.Add(limit) + " OFFSET " + k.Add(offset)
		},
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
		// The ids as a JSON array, read by json_each.
		idsIn: func(p string) string { return "id IN (SELECT value FROM json_each(" + p + "))" },
		idList: func(ids []string) (any, error) {
			b, err := json.Marshal(ids)
			return string(b), err
		},
		insertRecords: func(ctx context.Context, q store.Querier, rows []recordRow) error {
			_, err := sqliteRecordInserts.exec(ctx, q, len(rows), func(i int, args []any) []any {
				r := &rows[i]
				return append(args, r.id, r.tenantID, store.NullIfEmpty(r.orgID), r.entityID, r.data, r.createdAt, r.updatedAt)
			})
			return err
		},
		updateRecords: func(ctx context.Context, q store.Querier, rows []recordRow) (int64, error) {
			return sqliteRecordUpdates.exec(ctx, q, len(rows), func(i int, args []any) []any {
				r := &rows[i]
				return append(args, r.tenantID, r.id, r.data, r.updatedAt)
			})
		},
		addCounts: func(ctx context.Context, q store.Querier, tenantID, entityID string, slot int, rows []countRow) error {
			_, err := sqliteCountAdds.exec(ctx, q, len(rows), func(i int, args []any) []any {
				r := &rows[i]
				return append(args, tenantID, entityID, r.key, r.value, r.org, slot, r.n)
			})
			return err
		},
		prepare: func(ctx context.Context, db *store.DB) {
			sqliteRecordInserts.prepare(ctx, db)
			sqliteRecordUpdates.prepare(ctx, db)
			sqliteCountAdds.prepare(ctx, db)
		},
	}
}
