//go:build !tenantkit_nopostgres

package rules

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

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
// text forms and handed to the server as they are (store.ExecTexts), the
// executions' two JSON columns last, as one text each that the statement
// splits on U+001F (which JSON text never holds raw). Decision: the
// driver encodes a []string array element by element into a buffer it
// cuts back before every statement, so a batch's 30 KB or so of JSON was
// copied many times as the buffer grew: half the bytes a logged execution
// allocated (BENCHMARKS.md, "Business rules"); as strings, each was still
// copied once into that buffer.
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
	p := pgParamsPool.Get().(*pgParams)
	defer p.release()
	p.grow(size)

	p.textArray(n, func(i int) string { return xs[i].ID })
	p.textArray(n, func(i int) string { return xs[i].TenantID })
	p.textArray(n, func(i int) string { return xs[i].OrganizationID })
	p.textArray(n, func(i int) string { return xs[i].SetID })
	p.textArray(n, func(i int) string { return xs[i].EntityType })
	p.textArray(n, func(i int) string { return xs[i].EntityID })
	p.textArray(n, func(i int) string { return xs[i].EventType })
	p.textArray(n, func(i int) string { return xs[i].ExecutedAt.UTC().Format(pgTimestamptz) }) // to the microsecond, as pgx's binary form
	p.textArray(n, func(i int) string { return xs[i].ExecutedBy })
	p.intArray(n, func(i int) int64 { return int64(len(xs[i].Rules)) })
	p.intArray(n, func(i int) int64 { return int64(rows[i].failures) })
	p.begin()
	p.b = append(p.b, '{')
	for i, x := range xs {
		if i > 0 {
			p.b = append(p.b, ',')
		}
		p.b = append(p.b, '"')
		for j := range x.Rules {
			p.b = append(p.b, '|')
			p.arrayText(resultsEscaper.Replace(x.Rules[j].RuleID))
			p.b = append(p.b, ':')
			p.arrayText(string(x.Rules[j].Result))
			p.b = append(p.b, '|')
		}
		p.b = append(p.b, '"')
	}
	p.b = append(p.b, '}')
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
			p.b = append(p.b, logTextSeparator)
		}
		p.b = append(p.b, x.Input...)
	}
	p.end()
	p.begin()
	for i, x := range xs {
		if i > 0 {
			p.b = append(p.b, logTextSeparator)
		}
		p.b = appendRuleRows(p.b, x.Rules)
	}
	p.end()

	_, err := store.ExecTexts(ctx, q, `WITH x AS (
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
		p.values())
	return err
}

// logTextSeparator separates the executions' JSON texts in
// writeLogPostgres' parameters: U+001F, which JSON holds only escaped.
const logTextSeparator = 0x1f

// pgParams writes a statement's parameters as PostgreSQL's text forms
// into one buffer, handed to the server as they are (store.ExecTexts:
// no copy through the driver's encoders). Its buffers are kept for the
// next batch (pgParamsPool): the log's batches are alike in size.
type pgParams struct {
	b     []byte
	spans []int // each parameter's start and end in b
	start int
	// params is values' result, kept with its backing array.
	params [][]byte
}

// pgParamsPool keeps pgParams between batches.
var pgParamsPool = sync.Pool{New: func() any { return &pgParams{b: make([]byte, 0, 64<<10)} }}

// grow makes room for size more bytes.
func (p *pgParams) grow(size int) { p.b = slices.Grow(p.b, size) }

// release empties p and puts it back in pgParamsPool, unless a batch made
// its buffer larger than the pool keeps (1 MiB).
func (p *pgParams) release() {
	if cap(p.b) > 1<<20 {
		return
	}
	p.b, p.spans, p.params = p.b[:0], p.spans[:0], p.params[:0]
	pgParamsPool.Put(p)
}

// begin starts a parameter written into the buffer; end ends it.
func (p *pgParams) begin() { p.start = len(p.b) }

func (p *pgParams) end() { p.spans = append(p.spans, p.start, len(p.b)) }

// values returns the statement's parameters: slices of p's buffer, valid
// until release.
func (p *pgParams) values() [][]byte {
	for i := 0; i < len(p.spans); i += 2 {
		p.params = append(p.params, p.b[p.spans[i]:p.spans[i+1]])
	}
	return p.params
}

// textArray adds a text[] of n elements, elem(i) each, in the array
// literal's form (every element quoted, so none is NULL).
func (p *pgParams) textArray(n int, elem func(i int) string) {
	p.begin()
	p.b = append(p.b, '{')
	for i := range n {
		if i > 0 {
			p.b = append(p.b, ',')
		}
		p.b = append(p.b, '"')
		p.arrayText(elem(i))
		p.b = append(p.b, '"')
	}
	p.b = append(p.b, '}')
	p.end()
}

// pgTimestamptz is the layout of a timestamptz in UTC, to the
// microsecond (Format truncates the rest).
const pgTimestamptz = "2006-01-02 15:04:05.999999+00"

// arrayText writes s inside a quoted element of an array literal: " and
// \ escaped with a backslash.
func (p *pgParams) arrayText(s string) {
	for {
		i := strings.IndexAny(s, `"\`)
		if i < 0 {
			p.b = append(p.b, s...)
			return
		}
		p.b = append(p.b, s[:i]...)
		p.b = append(p.b, '\\', s[i])
		s = s[i+1:]
	}
}

// intArray adds an integer array (int[], smallint[] or bigint[]) of n
// elements, elem(i) each.
func (p *pgParams) intArray(n int, elem func(i int) int64) {
	p.begin()
	p.b = append(p.b, '{')
	for i := range n {
		if i > 0 {
			p.b = append(p.b, ',')
		}
		p.b = strconv.AppendInt(p.b, elem(i), 10)
	}
	p.b = append(p.b, '}')
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
