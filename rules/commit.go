package rules

import (
	"context"
	"errors"

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
	executionInserts.Prepare(ctx, g.db)
	ruleLogInserts.Prepare(ctx, g.db)
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
	if _, err := executionInserts.Insert(ctx, tx, executions); err != nil {
		return err
	}
	if _, err := ruleLogInserts.Insert(ctx, tx, rules); err != nil {
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
	executionInserts = store.NewBatchInsert("business_rule_executions",
		"id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at, executed_by", "")
	ruleLogInserts = store.NewBatchInsert("business_rule_execution_logs",
		"tenant_id, id, rule_uuid, rule_id, rule_name, rule_type, result, input_context, output_context, error_message, execution_time_ms", "")
)
