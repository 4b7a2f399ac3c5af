//go:build !tenantkit_nopostgres

package rules

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	logWriters[store.PostgresDialect] = writeLogPostgres
}

// writeLogPostgres writes executions and the counts they add in one
// statement, whatever their number: the executions' columns as arrays,
// unnested, inserted by a data-modifying WITH, and the counts upserted in
// the keys' order (one round trip, one statement text that the driver
// prepares once).
func writeLogPostgres(ctx context.Context, q store.Querier, rows []executionRow, slot int, counts []logCount) error {
	n := len(rows)
	ids, tenants, orgs, sets := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	types, entities, events, inputs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at, by, rules := make([]time.Time, n), make([]string, n), make([]string, n)
	ruleCounts, failures := make([]int32, n), make([]int32, n)
	for i, r := range rows {
		x := r.x
		ids[i], tenants[i], orgs[i], sets[i] = x.ID, x.TenantID, x.OrganizationID, x.SetID
		types[i], entities[i], events[i], inputs[i] = x.EntityType, x.EntityID, x.EventType, x.Input
		at[i], by[i], rules[i] = x.ExecutedAt, x.ExecutedBy, r.rules
		ruleCounts[i], failures[i] = int32(len(x.Rules)), int32(r.failures)
	}
	m := len(counts)
	cTenants, cOrgs, cRules, cResults, cN := make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]int64, m)
	for i, c := range counts {
		cTenants[i], cOrgs[i], cRules[i], cResults[i], cN[i] = c.key.tenant, c.key.org, c.key.rule, c.key.result, c.n
	}
	_, err := q.Exec(ctx, `WITH x AS (
			INSERT INTO business_rule_executions (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type,
				input_context, executed_at, executed_by, rules, rule_count, failure_count)
			SELECT v.id, v.tenant_id, NULLIF(v.organization_id, ''), NULLIF(v.set_id, ''), v.entity_type, v.entity_id, v.event_type,
				v.input_context::jsonb, v.executed_at, NULLIF(v.executed_by, ''), v.rules::json, v.rule_count, v.failure_count
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
				$9::timestamptz[], $10::text[], $11::text[], $12::int[], $13::int[])
				AS v (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at,
					executed_by, rules, rule_count, failure_count))
		INSERT INTO business_rule_log_counts (tenant_id, organization_id, rule_id, result, slot, n)
		SELECT c.tenant_id, c.organization_id, c.rule_id, c.result, $14::smallint, c.n
		FROM unnest($15::text[], $16::text[], $17::text[], $18::text[], $19::bigint[]) WITH ORDINALITY
			AS c (tenant_id, organization_id, rule_id, result, n, i)
		ORDER BY c.i
		ON CONFLICT (tenant_id, organization_id, rule_id, result, slot)
		DO UPDATE SET n = business_rule_log_counts.n + excluded.n`,
		ids, tenants, orgs, sets, types, entities, events, inputs, at, by, rules, ruleCounts, failures,
		slot, cTenants, cOrgs, cRules, cResults, cN)
	return err
}
