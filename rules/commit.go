package rules

import (
	"context"
	"errors"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// logWriter commits executions' writes: log rows (through the Store),
// events and webhook jobs. Concurrent executions share transactions
// (store.Batcher), so that many requests pay for one commit; each returns
// once its own writes are durable.
type logWriter struct {
	db    *store.DB
	store Store
	jobs  *jobs.Engine
	batch *store.Batcher
}

func newLogWriter(db *store.DB, st Store) *logWriter {
	return &logWriter{db: db, store: st, batch: store.NewBatcher(db)}
}

// write commits w and returns once it is durable (or failed).
func (g *logWriter) write(ctx context.Context, w *writes) error {
	if len(w.execution.Rules) == 0 && len(w.events) == 0 && len(w.calls) == 0 {
		return nil
	}
	g.store.PrepareLogWrites(ctx, g.db)
	return g.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		return g.writeAll(ctx, tx, []*writes{w})
	})
}

func (g *logWriter) writeAll(ctx context.Context, tx *store.Tx, batch []*writes) error {
	executions := make([]*ExecutionRecord, 0, len(batch))
	for _, w := range batch {
		if len(w.execution.Rules) > 0 {
			executions = append(executions, &w.execution)
		}
	}
	if len(executions) > 0 {
		if err := g.store.InsertExecutions(ctx, tx, executions); err != nil {
			return err
		}
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
