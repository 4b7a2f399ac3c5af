//go:build !tenantkit_nopostgres

package rules

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	logWriters[store.PostgresDialect] = writeLogPostgres
	oneStatementLog[store.PostgresDialect] = true
}

// writeLogPostgres writes executions and the counts they add in one
// statement, whatever their number (the counts by set and hour in
// executionCountsCTE): the executions' columns as arrays,
// unnested and inserted by a data-modifying WITH, and the counts' as
// arrays too, upserted in the order of counts (ORDER BY the ordinality:
// the one lock order of every writer). One round trip, and one statement
// text, which the driver prepares once.
func writeLogPostgres(ctx context.Context, q store.Querier, rows []executionRow) error {
	n := len(rows)
	ids, tenants, orgs, sets := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	types, entities, events, inputs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at, by, rules, results := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n)
	ruleCounts, failures := make([]int32, n), make([]int32, n)
	for i, r := range rows {
		x := r.x
		ids[i], tenants[i], orgs[i], sets[i] = x.ID, x.TenantID, x.OrganizationID, x.SetID
		types[i], entities[i], events[i], inputs[i] = x.EntityType, x.EntityID, x.EventType, x.Input
		at[i], by[i], rules[i], results[i] = x.ExecutedAt, x.ExecutedBy, r.rules, r.results
		ruleCounts[i], failures[i] = int32(len(x.Rules)), int32(r.failures)
	}
	xs := make([]*ExecutionRecord, n)
	for i := range rows {
		xs[i] = rows[i].x
	}
	counts := logCounts(xs)
	m := len(counts)
	cTenants, cSpans, cBuckets, cOrgs := make([]string, m), make([]int16, m), make([]int64, m), make([]string, m)
	cTypes, cRules, cResults, cN := make([]string, m), make([]string, m), make([]string, m), make([]int64, m)
	for i, c := range counts {
		k := c.key
		cTenants[i], cSpans[i], cBuckets[i], cOrgs[i] = k.tenant, int16(k.span), k.bucket, k.org
		cTypes[i], cRules[i], cResults[i], cN[i] = k.entityType, k.rule, k.result, c.n
	}
	eTenants, eHours, eOrgs, eSets, eExecutions, eFailures := executionCountArrays(rows)
	_, err := q.Exec(ctx, `WITH x AS (
			INSERT INTO business_rule_executions (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type,
				input_context, executed_at, executed_by, rules, rule_count, failure_count, rule_results)
			SELECT v.id, v.tenant_id, NULLIF(v.organization_id, ''), NULLIF(v.set_id, ''), v.entity_type, v.entity_id, v.event_type,
				v.input_context::json, v.executed_at, NULLIF(v.executed_by, ''), v.rules::json, v.rule_count, v.failure_count,
				v.rule_results
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
				$9::timestamptz[], $10::text[], $11::text[], $12::int[], $13::int[], $14::text[])
				AS v (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at,
					executed_by, rules, rule_count, failure_count, rule_results)),
		`+executionCountsCTE+`
		INSERT INTO business_rule_log_counts AS k (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
		SELECT c.tenant_id, c.span, c.bucket, c.organization_id, c.entity_type, c.rule_id, c.result, c.n
		FROM unnest($15::text[], $16::smallint[], $17::bigint[], $18::text[], $19::text[], $20::text[], $21::text[], $22::bigint[])
			WITH ORDINALITY AS c (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n, i)
		ORDER BY c.i
		ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, rule_id, result) DO UPDATE SET n = k.n + excluded.n`,
		ids, tenants, orgs, sets, types, entities, events, inputs, at, by, rules, ruleCounts, failures, results,
		cTenants, cSpans, cBuckets, cOrgs, cTypes, cRules, cResults, cN,
		eTenants, eHours, eOrgs, eSets, eExecutions, eFailures)
	return err
}

// executionCountsCTE is the part of writeLogPostgres' statement that adds
// to the kept counts by set and hour (business_rule_execution_counts):
// parameters $23 to $28, executionCountArrays' arrays, upserted in their
// order (key order: executionCounts). Its WITH runs after the statement's
// upsert of the log counts, so every writer takes the log counts' row
// locks first, then these, each in key order, as DeleteLogsBefore does.
const executionCountsCTE = `hour_counts AS (
			INSERT INTO business_rule_execution_counts AS k (tenant_id, hour, organization_id, set_id, executions, failures)
			SELECT e.tenant_id, e.hour, e.organization_id, e.set_id, e.executions, e.failures
			FROM unnest($23::text[], $24::bigint[], $25::text[], $26::text[], $27::bigint[], $28::bigint[])
				WITH ORDINALITY AS e (tenant_id, hour, organization_id, set_id, executions, failures, i)
			ORDER BY e.i
			ON CONFLICT (tenant_id, hour, organization_id, set_id)
			DO UPDATE SET executions = k.executions + excluded.executions, failures = k.failures + excluded.failures)`

// executionCountArrays returns executionCounts(rows) as the columns of
// executionCountsCTE.
func executionCountArrays(rows []executionRow) (tenants []string, hours []int64, orgs, sets []string, executions, failures []int64) {
	counts := executionCounts(rows)
	m := len(counts)
	tenants, hours, orgs, sets = make([]string, m), make([]int64, m), make([]string, m), make([]string, m)
	executions, failures = make([]int64, m), make([]int64, m)
	for i, c := range counts {
		tenants[i], hours[i], orgs[i], sets[i] = c.key.tenant, c.key.hour, c.key.org, c.key.set
		executions[i], failures[i] = c.executions, c.failures
	}
	return tenants, hours, orgs, sets, executions, failures
}
