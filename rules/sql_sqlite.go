//go:build !tenantkit_nosqlite

package rules

import (
	"context"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	logWriters[store.SQLiteDialect] = writeLogSQLite
	for _, n := range spanCountChunks {
		logStatements = append(logStatements, spanCountTexts[n])
	}
}

// spanCountChunks are the rule-row counts of spanCountStatement's texts,
// largest first (as store.BatchInsert's); the last is 1.
var spanCountChunks = []int{50, 20, 10, 5, 2, 1}

// spanCountStatement adds to the kept counts of n rules and results of
// one tenant, organization and entity type in the three spans: the whole
// log, a day and an hour. Its parameters, in order: the tenant, the
// organization, the entity type, the day's and the hour's buckets, then
// a rule id, a result and the number to add for each of the n. The three
// spans' rows are made in SQL (a join with the spans' VALUES), so that a
// rule row's key is bound once rather than three times: binding was most
// of what a count row's upsert cost the single writer.
func spanCountStatement(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO business_rule_log_counts (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
		SELECT g.t, s.column1, s.column2, g.o, g.e, r.column1, r.column2, r.column3
		FROM (SELECT ? AS t, ? AS o, ? AS e) g, (VALUES (0, 0), (1, ?), (2, ?)) s, (VALUES `)
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

// spanCountTexts holds spanCountStatement's text by chunk size.
var spanCountTexts = func() map[int]string {
	m := map[int]string{}
	for _, n := range spanCountChunks {
		m[n] = spanCountStatement(n)
	}
	return m
}()

// spanGroup is what the count rows of an execution's rule rows share but
// their rule and result: the tenant, the organization, the entity type,
// and the day and hour the execution began in.
type spanGroup struct {
	tenant, org, entityType string
	day, hour               int64
}

// ruleResult is a rule row's rule id and result.
type ruleResult struct{ rule, result string }

// writeLogSQLite writes executions with executionInserts' multi-row
// INSERTs and the counts they add, summed per spanGroup, rule and result
// in Go first, with spanCountStatement: one upsert per count row, each
// rule row's key bound once for its three spans, then the counts by set
// and hour (insertExecutionCounts). Executions of different
// hours upsert their whole-log rows once per hour (a single writer takes
// no row locks, so the order of the upserts does not matter).
func writeLogSQLite(ctx context.Context, q store.Querier, rows []executionRow) error {
	values := make([]any, 0, len(rows)*executionInserts.Columns())
	var groups []spanGroup
	sums := map[spanGroup]map[ruleResult]int64{}
	order := map[spanGroup][]ruleResult{} // each group's keys in the order first met
	setTexts(rows)
	for i := range rows {
		r := &rows[i]
		x := r.x
		values = append(values, x.ID, x.TenantID, store.NullIfEmpty(x.OrganizationID), store.NullIfEmpty(x.SetID),
			x.EntityType, x.EntityID, x.EventType, x.Input, x.ExecutedAt, store.NullIfEmpty(x.ExecutedBy),
			r.rules, len(x.Rules), r.failures, r.results)
		sec := x.ExecutedAt.Unix()
		g := spanGroup{tenant: x.TenantID, org: x.OrganizationID, entityType: x.EntityType, day: floorTo(sec, daySeconds),
			hour: floorTo(sec, hourSeconds)}
		n := sums[g]
		if n == nil {
			n = map[ruleResult]int64{}
			sums[g] = n
			groups = append(groups, g)
		}
		for i := range x.Rules {
			k := ruleResult{x.Rules[i].RuleID, string(x.Rules[i].Result)}
			if _, ok := n[k]; !ok {
				order[g] = append(order[g], k)
			}
			n[k]++
		}
	}
	if _, err := executionInserts.InsertValues(ctx, q, values); err != nil {
		return err
	}
	for _, g := range groups {
		keys := order[g]
		for len(keys) > 0 {
			c := 1
			for _, size := range spanCountChunks {
				if len(keys) >= size {
					c = size
					break
				}
			}
			args := make([]any, 0, 5+3*c)
			args = append(args, g.tenant, g.org, g.entityType, g.day, g.hour)
			for _, k := range keys[:c] {
				args = append(args, k.rule, k.result, sums[g][k])
			}
			if _, err := q.Exec(ctx, spanCountTexts[c], args...); err != nil {
				return err
			}
			keys = keys[c:]
		}
	}
	return insertExecutionCounts(ctx, q, rows)
}
