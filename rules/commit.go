package rules

import (
	"context"
	"errors"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// logWriter commits executions' writes: log rows (through the Store),
// events and webhook jobs. Concurrent executions share transactions
// (store.Group): what queued up while one ran is written by the next in
// one call of writeAll (the log rows of all in multi-row INSERTs), so that
// many requests pay for one commit and a few statements; each returns
// once its own writes are durable.
type logWriter struct {
	db    *store.DB
	store Store
	jobs  *jobs.Engine
	group *store.Group[*writes]
}

func newLogWriter(db *store.DB, st Store) *logWriter {
	g := &logWriter{db: db, store: st}
	g.group = store.NewGroup(db, g.writeAll)
	// Only the package's own store, not one embedding it: a host's store
	// that overrides InsertExecutions may write in several statements,
	// which need the transaction.
	if sq, ok := st.(*SQLStore); ok && sq.insertsExecutionsInOneStatement(db.Dialect()) {
		g.group.SetSingleStatement(g.single)
	}
	// Every batch of one tenant's executions upserts the same kept count
	// rows: a second batch running at once would wait on their locks
	// until the first commits, and batches half the size upsert them
	// twice as often.
	g.group.SetRunners(1)
	return g
}

// single is the write of a batch of log rows alone, without events or
// webhook calls, which InsertExecutions writes in one statement: it needs
// no transaction of its own (store.Group.SetSingleStatement). A batch
// with events or calls returns nil: those are written in a transaction
// with its log rows.
func (g *logWriter) single(batch []*writes) func(ctx context.Context, q store.Querier) error {
	executions := make([]*ExecutionRecord, 0, len(batch))
	for _, w := range batch {
		if len(w.events) > 0 || len(w.calls) > 0 {
			return nil
		}
		if len(w.execution.Rules) > 0 {
			executions = append(executions, &w.execution)
		}
	}
	if len(executions) == 0 {
		return nil
	}
	return func(ctx context.Context, q store.Querier) error { return g.store.InsertExecutions(ctx, q, executions) }
}

// write commits w and returns once it is durable (or failed).
func (g *logWriter) write(ctx context.Context, w *writes) error {
	if len(w.execution.Rules) == 0 && len(w.events) == 0 && len(w.calls) == 0 {
		return nil
	}
	g.store.PrepareLogWrites(ctx, g.db)
	return g.group.Do(w)
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
