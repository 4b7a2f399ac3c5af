package rules

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// logWriter commits executions' writes: log rows, events and webhook
// jobs. Concurrent executions share transactions (store.Batcher), so that
// many requests pay for one commit; each returns once its own writes are
// durable.
type logWriter struct {
	db    *store.DB
	jobs  *jobs.Engine
	batch *store.Batcher
}

func newLogWriter(db *store.DB) *logWriter {
	return &logWriter{db: db, batch: store.NewBatcher(db)}
}

// write commits w and returns once it is durable (or failed).
func (g *logWriter) write(ctx context.Context, w *writes) error {
	if len(w.logs) == 0 && len(w.events) == 0 && len(w.calls) == 0 {
		return nil
	}
	executionInserts.prepare(ctx, g.db)
	ruleLogInserts.prepare(ctx, g.db)
	return g.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		return g.writeAll(ctx, tx, []*writes{w})
	})
}

func (g *logWriter) writeAll(ctx context.Context, tx *store.Tx, batch []*writes) error {
	var executions, rules [][]any
	for _, w := range batch {
		if len(w.logs) == 0 {
			continue
		}
		x := &w.execution
		executions = append(executions, []any{x.id, x.tenantID, store.NullIfEmpty(x.organizationID), store.NullIfEmpty(x.setID), x.entityType,
			x.entityID, x.eventType, x.input, x.at, store.NullIfEmpty(x.executedBy)})
		for i := range w.logs {
			r := &w.logs[i]
			rules = append(rules, []any{r.tenantID, r.id, r.ruleUUID, r.ruleID, r.ruleName, r.ruleType, r.result,
				store.NullIfEmpty(r.input), r.output, store.NullIfEmpty(r.errorMessage), r.ms})
		}
	}
	if err := executionInserts.insert(ctx, tx, executions); err != nil {
		return err
	}
	if err := ruleLogInserts.insert(ctx, tx, rules); err != nil {
		return err
	}
	for _, w := range batch {
		for _, ev := range w.events {
			if _, err := tx.EmitData(ctx, ev.typ, w.scope, ev.data); err != nil {
				return err
			}
		}
		if len(w.calls) == 0 {
			continue
		}
		if g.jobs == nil {
			return errors.New("rules: CALL_WEBHOOK needs a job engine (Options.Jobs)")
		}
		args := make([]jobs.Args, len(w.calls))
		for i := range w.calls {
			args[i] = w.calls[i]
		}
		if _, err := g.jobs.EnqueueManyTx(ctx, tx, args, nil); err != nil {
			return err
		}
	}
	return nil
}

// The execution log's two tables, inserted in this order.
var (
	executionInserts = newBatchInsert("business_rule_executions",
		"id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at, executed_by")
	ruleLogInserts = newBatchInsert("business_rule_execution_logs",
		"tenant_id, id, rule_uuid, rule_id, rule_name, rule_type, result, input_context, output_context, error_message, execution_time_ms")
)

// batchInsert writes rows into a table with multi-row INSERTs of
// batchChunks rows each (the largest that fits first), so that only a few
// statement texts exist and each is prepared once (prepare). On SQLite the
// parameters are anonymous (?): its driver looks numbered ones ($n) up by
// name in a list, which makes binding hundreds of them quadratic.
type batchInsert struct {
	columns int
	// statements by engine (sqlite: true) and chunk size
	statements map[bool]map[int]string
}

// batchChunks are the row counts of the INSERT statements, largest first;
// the last is 1.
var batchChunks = []int{50, 10, 1}

func newBatchInsert(table, columns string) *batchInsert {
	b := &batchInsert{columns: strings.Count(columns, ",") + 1, statements: map[bool]map[int]string{true: {}, false: {}}}
	for _, n := range batchChunks {
		for _, sqlite := range []bool{true, false} {
			var sql strings.Builder
			sql.WriteString("INSERT INTO " + table + " (" + columns + ") VALUES ")
			for i := range n {
				if i > 0 {
					sql.WriteString(", ")
				}
				sql.WriteByte('(')
				for c := range b.columns {
					if c > 0 {
						sql.WriteString(", ")
					}
					if sqlite {
						sql.WriteByte('?')
					} else {
						sql.WriteString("$" + strconv.Itoa(i*b.columns+c+1))
					}
				}
				sql.WriteByte(')')
			}
			b.statements[sqlite][n] = sql.String()
		}
	}
	return b
}

// prepare has the statements prepared (once; see store.DB.Prepare) before
// a transaction takes the writer. A failure only costs speed: the
// transaction runs them unprepared and reports real errors.
func (b *batchInsert) prepare(ctx context.Context, db *store.DB) {
	for _, q := range b.statements[db.Dialect().Name() == "sqlite"] {
		_ = db.Prepare(ctx, q)
	}
}

// insert writes rows, each a list of the columns' values.
func (b *batchInsert) insert(ctx context.Context, tx *store.Tx, rows [][]any) error {
	statements := b.statements[tx.Dialect().Name() == "sqlite"]
	for len(rows) > 0 {
		n := 1
		for _, c := range batchChunks {
			if len(rows) >= c {
				n = c
				break
			}
		}
		args := make([]any, 0, n*b.columns)
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := tx.Exec(ctx, statements[n], args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}
