//go:build !tenantkit_nopostgres

package entities

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

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
		// One text[] parameter: with tenant_id = $1 an index condition on
		// the primary key, in the generic plan too.
		idsIn:  func(p string) string { return "id = ANY(" + p + "::text[])" },
		idList: func(ids []string) (any, error) { return ids, nil },
		// The batch writes are one statement each, whatever the number of
		// rows: arrays of the columns, unnested (one statement text that
		// the driver prepares once). In a transaction the INSERT is queued
		// (store.ExecLater) and goes to the server with the next
		// statement, InsertRecords' read of the filterable keys, in one
		// round trip; a taken id is then that read's error.
		insertRecords: func(ctx context.Context, q store.Querier, rows []recordRow) error {
			ids, tenants, orgs, entities, data := pgColumn(rows, func(r *recordRow) string { return r.id }),
				pgColumn(rows, func(r *recordRow) string { return r.tenantID }), pgColumn(rows, func(r *recordRow) string { return r.orgID }),
				pgColumn(rows, func(r *recordRow) string { return r.entityID }), pgColumn(rows, func(r *recordRow) string { return r.data })
			created, updated := make([]time.Time, len(rows)), make([]time.Time, len(rows))
			for i := range rows {
				created[i], updated[i] = rows[i].createdAt, rows[i].updatedAt
			}
			return store.ExecLater(ctx, q, `INSERT INTO custom_entity_records (id, tenant_id, organization_id, entity_id, data, created_at, updated_at)
				SELECT v.id, v.tenant_id, NULLIF(v.organization_id, ''), v.entity_id, v.data::jsonb, v.created_at, v.updated_at
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[])
					AS v (id, tenant_id, organization_id, entity_id, data, created_at, updated_at)`,
				ids, tenants, orgs, entities, data, created, updated)
		},
		updateRecords: func(ctx context.Context, q store.Querier, rows []recordRow) (int64, error) {
			times := make([]time.Time, len(rows))
			for i := range rows {
				times[i] = rows[i].updatedAt
			}
			return q.Exec(ctx, `UPDATE custom_entity_records AS r SET data = v.data::jsonb, updated_at = v.updated_at
				FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS v (tenant_id, id, data, updated_at)
				WHERE r.tenant_id = v.tenant_id AND r.id = v.id AND r.deleted_at IS NULL`,
				pgColumn(rows, func(r *recordRow) string { return r.tenantID }), pgColumn(rows, func(r *recordRow) string { return r.id }),
				pgColumn(rows, func(r *recordRow) string { return r.data }), times)
		},
		// The page size is written into the statement (at most 100: a few
		// texts), and the first page has no OFFSET, so that PostgreSQL
		// keeps one generic plan of an unfiltered list: with a LIMIT or
		// an OFFSET parameter it costs a generic plan as reading a tenth
		// of the rows, so it planned the list again on every run, which
		// took as much of the server's time as running it.
		page: func(k *store.Conds, limit, offset int) string {
			if offset == 0 {
				return " LIMIT " + strconv.Itoa(limit)
			}
			return " LIMIT " + strconv.Itoa(limit) + " OFFSET " + k.Add(offset)
		},
		// In the rows' order (ORDER BY the ordinality), which is the lock
		// order of countDeltas.flush. Queued in a transaction, as the
		// records' INSERT: a create's counts go with its events.
		addCounts: func(ctx context.Context, q store.Querier, tenantID, entityID string, slot int, rows []countRow) error {
			keys, values, orgs, ns := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows)), make([]int64, len(rows))
			for i, r := range rows {
				v, ok := r.value.(string) // Dialect.JSONValueArg's jsonb text
				if !ok {
					b, err := json.Marshal(r.value)
					if err != nil {
						return err
					}
					v = string(b)
				}
				keys[i], values[i], orgs[i], ns[i] = r.key, v, r.org, r.n
			}
			return store.ExecLater(ctx, q, `INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
				SELECT $1::text, $2::text, v.field_key, v.value::jsonb, v.organization_id, $3::smallint, v.n
				FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY AS v (field_key, value, organization_id, n, i)
				ORDER BY v.i
				ON CONFLICT (tenant_id, entity_id, field_key, value, organization_id, slot)
				DO UPDATE SET n = custom_entity_value_counts.n + excluded.n`, tenantID, entityID, slot, keys, values, orgs, ns)
		},
	}
}

// pgColumn is one text column of rows, as an array parameter.
func pgColumn(rows []recordRow, col func(r *recordRow) string) []string {
	out := make([]string, len(rows))
	for i := range rows {
		out[i] = col(&rows[i])
	}
	return out
}
