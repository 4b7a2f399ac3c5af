//go:build !tenantkit_nosqlite

package rules

import (
	"context"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	logWriters[store.SQLiteDialect] = writeLogSQLite
	for _, n := range pendingCountChunks {
		logStatements = append(logStatements, pendingCountTexts[n])
	}
}

// pendingCountChunks are the rule-row counts of pendingCountStatement's
// texts, largest first (as store.BatchInsert's); the last is 1.
var pendingCountChunks = []int{50, 20, 10, 5, 2, 1}

// pendingCountStatement adds to the pending counts of n rules and
// results of one countGroup (an hour's counts of a tenant, organization
// and entity type: spanPending). Its parameters, in order: the tenant,
// the hour's bucket, the organization, the entity type, then a rule id, a
// result and the number to add for each of the n. The group's columns
// are bound once rather than with each row: binding was most of what a
// count row's upsert cost the single writer.
func pendingCountStatement(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO business_rule_log_counts (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
		SELECT g.t, ` + strconv.Itoa(spanPending) + `, g.h, g.o, g.e, r.column1, r.column2, r.column3
		FROM (SELECT ? AS t, ? AS h, ? AS o, ? AS e) g, (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?)")
	}
	b.WriteString(`) r WHERE true
		ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, rule_id, result)
		DO UPDATE SET n = business_rule_log_counts.n + excluded.n`)
	return b.String()
}

// pendingCountTexts holds pendingCountStatement's text by chunk size.
var pendingCountTexts = func() map[int]string {
	m := map[int]string{}
	for _, n := range pendingCountChunks {
		m[n] = pendingCountStatement(n)
	}
	return m
}()

// writeLogSQLite writes executions with executionInserts' multi-row
// INSERTs and the pending counts they add, summed per countGroup, rule
// and result in Go first (pendingCounts), with pendingCountStatement: one
// upsert per count row, the group's columns bound once, then the counts
// by set and hour (insertExecutionCounts).
func writeLogSQLite(ctx context.Context, q store.Querier, rows []executionRow) error {
	values := make([]any, 0, len(rows)*executionInserts.Columns())
	xs := make([]*ExecutionRecord, len(rows))
	setTexts(rows)
	for i := range rows {
		r := &rows[i]
		x := r.x
		xs[i] = x
		values = append(values, x.ID, x.TenantID, store.NullIfEmpty(x.OrganizationID), store.NullIfEmpty(x.SetID),
			x.EntityType, x.EntityID, x.EventType, x.Input, x.ExecutedAt, store.NullIfEmpty(x.ExecutedBy),
			r.rules, len(x.Rules), r.failures, r.results)
	}
	if _, err := executionInserts.InsertValues(ctx, q, values); err != nil {
		return err
	}
	for _, c := range pendingCounts(xs) {
		keys, n := c.keys, c.n
		for len(keys) > 0 {
			size := 1
			for _, chunk := range pendingCountChunks {
				if len(keys) >= chunk {
					size = chunk
					break
				}
			}
			args := make([]any, 0, 4+3*size)
			args = append(args, c.group.tenant, c.group.hour, c.group.org, c.group.entityType)
			for i, k := range keys[:size] {
				args = append(args, k.rule, k.result, n[i])
			}
			if _, err := q.Exec(ctx, pendingCountTexts[size], args...); err != nil {
				return err
			}
			keys, n = keys[size:], n[size:]
		}
	}
	return insertExecutionCounts(ctx, q, rows)
}
