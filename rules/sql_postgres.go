//go:build !tenantkit_nopostgres

package rules

import (
	"context"
	"strconv"
	"strings"
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
//
// The parameters are written in one buffer (pgParams) as PostgreSQL's
// text forms, each handed to the driver as one string, the executions'
// two JSON columns last, as one text each that the statement splits on
// U+001F (which JSON text never holds raw). Decision: the driver encodes
// a []string array element by element into a buffer it cuts back before
// every statement, so a batch's 30 KB or so of JSON was copied many times
// as the buffer grew: half the bytes a logged execution allocated
// (BENCHMARKS.md, "Business rules").
func writeLogPostgres(ctx context.Context, q store.Querier, rows []executionRow) error {
	n := len(rows)
	xs := make([]*ExecutionRecord, n)
	size := 256
	for i := range rows {
		x := rows[i].x
		xs[i] = x
		size += 64 + len(x.ID) + len(x.TenantID) + len(x.OrganizationID) + len(x.SetID) + len(x.EntityType) + len(x.EntityID) +
			len(x.EventType) + len(x.ExecutedBy) + len(x.Input) + ruleRowsSize(x.Rules)
		if strings.IndexByte(x.Input, logTextSeparator) >= 0 {
			return store.Invalid("inputContext", "must be JSON text")
		}
	}
	counts := logCounts(xs)
	hours := executionCounts(rows)
	size += 96 * (len(counts) + len(hours))
	p := pgParams{args: make([]any, 0, 28), scratch: make([]byte, 0, 4096)}
	p.b.Grow(size)

	p.textArray(n, func(i int) string { return xs[i].ID })
	p.textArray(n, func(i int) string { return xs[i].TenantID })
	p.textArray(n, func(i int) string { return xs[i].OrganizationID })
	p.textArray(n, func(i int) string { return xs[i].SetID })
	p.textArray(n, func(i int) string { return xs[i].EntityType })
	p.textArray(n, func(i int) string { return xs[i].EntityID })
	p.textArray(n, func(i int) string { return xs[i].EventType })
	at := make([]time.Time, n)
	for i, x := range xs {
		at[i] = x.ExecutedAt
	}
	p.args = append(p.args, at)
	p.textArray(n, func(i int) string { return xs[i].ExecutedBy })
	p.intArray(n, func(i int) int64 { return int64(len(xs[i].Rules)) })
	p.intArray(n, func(i int) int64 { return int64(rows[i].failures) })
	p.begin()
	p.b.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			p.b.WriteByte(',')
		}
		p.b.WriteByte('"')
		for j := range x.Rules {
			p.b.WriteByte('|')
			p.arrayText(resultsEscaper.Replace(x.Rules[j].RuleID))
			p.b.WriteByte(':')
			p.arrayText(string(x.Rules[j].Result))
			p.b.WriteByte('|')
		}
		p.b.WriteByte('"')
	}
	p.b.WriteByte('}')
	p.end()

	m := len(counts)
	p.textArray(m, func(i int) string { return counts[i].key.tenant })
	p.intArray(m, func(i int) int64 { return int64(counts[i].key.span) })
	p.intArray(m, func(i int) int64 { return counts[i].key.bucket })
	p.textArray(m, func(i int) string { return counts[i].key.org })
	p.textArray(m, func(i int) string { return counts[i].key.entityType })
	p.textArray(m, func(i int) string { return counts[i].key.rule })
	p.textArray(m, func(i int) string { return counts[i].key.result })
	p.intArray(m, func(i int) int64 { return counts[i].n })

	h := len(hours)
	p.textArray(h, func(i int) string { return hours[i].key.tenant })
	p.intArray(h, func(i int) int64 { return hours[i].key.hour })
	p.textArray(h, func(i int) string { return hours[i].key.org })
	p.textArray(h, func(i int) string { return hours[i].key.set })
	p.intArray(h, func(i int) int64 { return hours[i].executions })
	p.intArray(h, func(i int) int64 { return hours[i].failures })

	p.begin()
	for i, x := range xs {
		if i > 0 {
			p.b.WriteByte(logTextSeparator)
		}
		p.b.WriteString(x.Input)
	}
	p.end()
	p.begin()
	for i, x := range xs {
		if i > 0 {
			p.b.WriteByte(logTextSeparator)
		}
		p.scratch = appendRuleRows(p.scratch[:0], x.Rules)
		p.b.Write(p.scratch)
	}
	p.end()

	_, err := q.Exec(ctx, `WITH x AS (
			INSERT INTO business_rule_executions (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type,
				input_context, executed_at, executed_by, rules, rule_count, failure_count, rule_results)
			SELECT v.id, v.tenant_id, NULLIF(v.organization_id, ''), NULLIF(v.set_id, ''), v.entity_type, v.entity_id, v.event_type,
				v.input_context::json, v.executed_at, NULLIF(v.executed_by, ''), v.rules::json, v.rule_count, v.failure_count,
				v.rule_results
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				string_to_array($27::text, E'\x1f'), $8::timestamptz[], $9::text[], string_to_array($28::text, E'\x1f'),
				$10::int[], $11::int[], $12::text[])
				AS v (id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at,
					executed_by, rules, rule_count, failure_count, rule_results)),
		`+executionCountsCTE+`
		INSERT INTO business_rule_log_counts AS k (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
		SELECT c.tenant_id, c.span, c.bucket, c.organization_id, c.entity_type, c.rule_id, c.result, c.n
		FROM unnest($13::text[], $14::smallint[], $15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[], $20::bigint[])
			WITH ORDINALITY AS c (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n, i)
		ORDER BY c.i
		ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, rule_id, result) DO UPDATE SET n = k.n + excluded.n`,
		p.values()...)
	return err
}

// logTextSeparator separates the executions' JSON texts in
// writeLogPostgres' parameters: U+001F, which JSON holds only escaped.
const logTextSeparator = 0x1f

// pgParams writes a statement's parameters as PostgreSQL's text forms
// into one buffer; each is handed to the driver as one string (a
// substring of the buffer's), which it copies in one append and sends in
// the text format.
type pgParams struct {
	b     strings.Builder
	args  []any
	texts []pgText // the parameters written into b
	start int
	// scratch is a buffer for a text made by an append function.
	scratch []byte
}

// pgText is a parameter written into pgParams' buffer: its index in the
// arguments and its bytes' bounds.
type pgText struct{ arg, start, end int }

// begin starts a parameter written into the buffer; end adds it to the
// arguments.
func (p *pgParams) begin() { p.start = p.b.Len() }

func (p *pgParams) end() {
	p.texts = append(p.texts, pgText{len(p.args), p.start, p.b.Len()})
	p.args = append(p.args, nil) // set by values
}

// values returns the statement's arguments.
func (p *pgParams) values() []any {
	s := p.b.String()
	for _, t := range p.texts {
		p.args[t.arg] = s[t.start:t.end]
	}
	return p.args
}

// textArray adds a text[] of n elements, elem(i) each, in the array
// literal's form (every element quoted, so none is NULL).
func (p *pgParams) textArray(n int, elem func(i int) string) {
	p.begin()
	p.b.WriteByte('{')
	for i := range n {
		if i > 0 {
			p.b.WriteByte(',')
		}
		p.b.WriteByte('"')
		p.arrayText(elem(i))
		p.b.WriteByte('"')
	}
	p.b.WriteByte('}')
	p.end()
}

// arrayText writes s inside a quoted element of an array literal: " and
// \ escaped with a backslash.
func (p *pgParams) arrayText(s string) {
	for {
		i := strings.IndexAny(s, `"\`)
		if i < 0 {
			p.b.WriteString(s)
			return
		}
		p.b.WriteString(s[:i])
		p.b.WriteByte('\\')
		p.b.WriteByte(s[i])
		s = s[i+1:]
	}
}

// intArray adds an integer array (int[], smallint[] or bigint[]) of n
// elements, elem(i) each.
func (p *pgParams) intArray(n int, elem func(i int) int64) {
	p.begin()
	p.b.WriteByte('{')
	for i := range n {
		if i > 0 {
			p.b.WriteByte(',')
		}
		var digits [20]byte
		p.b.Write(strconv.AppendInt(digits[:0], elem(i), 10))
	}
	p.b.WriteByte('}')
	p.end()
}

// executionCountsCTE is the part of writeLogPostgres' statement that adds
// to the kept counts by set and hour (business_rule_execution_counts):
// parameters $21 to $26 (writeLogPostgres), upserted in their
// order (key order: executionCounts). Its WITH runs after the statement's
// upsert of the log counts, so every writer takes the log counts' row
// locks first, then these, each in key order, as DeleteLogsBefore does.
const executionCountsCTE = `hour_counts AS (
			INSERT INTO business_rule_execution_counts AS k (tenant_id, hour, organization_id, set_id, executions, failures)
			SELECT e.tenant_id, e.hour, e.organization_id, e.set_id, e.executions, e.failures
			FROM unnest($21::text[], $22::bigint[], $23::text[], $24::text[], $25::bigint[], $26::bigint[])
				WITH ORDINALITY AS e (tenant_id, hour, organization_id, set_id, executions, failures, i)
			ORDER BY e.i
			ON CONFLICT (tenant_id, hour, organization_id, set_id)
			DO UPDATE SET executions = k.executions + excluded.executions, failures = k.failures + excluded.failures)`
