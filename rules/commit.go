package rules

import (
	"context"
	"errors"
	"sync"
	"time"

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

	// folder is the store when it keeps pending counts to fold (SQLStore,
	// or a store embedding it), nil otherwise.
	folder logCountFolder
	foldMu sync.Mutex
	// folded holds, by tenant, the start of the minute (foldEvery) in
	// which this process last folded (or is folding) the tenant's pending
	// counts; latest is the latest such minute of any tenant. At most
	// maxFoldedTenants of earlier minutes are kept (forgetting one costs
	// a fold with nothing to fold).
	folded map[string]int64
	latest int64
}

// maxFoldedTenants bounds the tenants logWriter.folded keeps of minutes
// before the latest.
var maxFoldedTenants = 1 << 16 // a variable for the tests

// logCountFolder is a Store whose log writes add to pending counts that
// FoldLogCounts moves into the kept counts of the whole log, the days and
// the hours (SQLStore.FoldLogCounts).
type logCountFolder interface {
	FoldLogCounts(ctx context.Context, q store.Querier, tenantID string, before time.Time) error
}

// foldTimeout bounds a fold of a tenant's pending counts.
const foldTimeout = 30 * time.Second

// foldEvery is how often the log writer folds a tenant's pending counts
// (in seconds): at most once a minute per tenant and process.
const foldEvery = 60

func newLogWriter(db *store.DB, st Store) *logWriter {
	g := &logWriter{db: db, store: st, folded: map[string]int64{}}
	g.folder, _ = st.(logCountFolder)
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
	// On SQLite a batch's commit costs about ten times an execution's
	// rows, and under load the machine, not the one writer, is the
	// limit: executions ready to queue join the next batch first. On
	// PostgreSQL, whose batches already gather about 15, it measured no
	// different.
	if db.Dialect().SingleWriter() {
		g.group.SetYieldBeforeBatch()
	}
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
	if err := g.group.Do(w); err != nil {
		return err
	}
	if len(w.execution.Rules) > 0 {
		g.fold(ctx, w.execution.TenantID, w.execution.ExecutedAt)
	}
	return nil
}

// fold folds the tenant's pending counts, up to and including at's
// hour, once a minute (foldEvery) in this process: the tenant's first
// logged execution of a minute does it, once its own write is committed,
// in a transaction of its own. So the pending rows a total reads beside
// the kept ones are those of the rules executed in the last minute or
// two, however many rules an hour executes. (Folding once an hour, a
// soak that executed 17,000 new rules in half an hour saw the
// unfiltered total read 35, then 222 buffers a call.) The current hour's
// rows fold too: its executions written after the fold add to new
// pending rows, which the next fold moves, as a late write into an
// earlier hour's does. Decision: folding in the write path rather than
// in a job, so that a service without a job engine keeps its totals'
// reads short too; it costs one request a minute and tenant a few
// statements. A fold that fails is tried again by the tenant's next
// execution; it loses nothing (pending counts add to every total as
// folded ones do).
func (g *logWriter) fold(ctx context.Context, tenant string, at time.Time) {
	if g.folder == nil {
		return
	}
	minute := floorTo(at.Unix(), foldEvery)
	g.foldMu.Lock()
	before, seen := g.folded[tenant]
	if seen && before >= minute {
		g.foldMu.Unlock()
		return
	}
	if minute > g.latest {
		g.latest = minute
		if len(g.folded) > maxFoldedTenants {
			for t, m := range g.folded {
				if m < minute {
					delete(g.folded, t)
				}
			}
		}
	}
	g.folded[tenant] = minute // claimed: the tenant's other executions of the minute go on
	g.foldMu.Unlock()
	upTo := time.Unix(floorTo(at.Unix(), hourSeconds)+hourSeconds, 0) // every hour bucket up to at's
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), foldTimeout)
	defer cancel()
	err := g.db.Tx(ctx, func(tx *store.Tx) error { return g.folder.FoldLogCounts(ctx, tx, tenant, upTo) })
	if err == nil {
		return
	}
	g.foldMu.Lock()
	if g.folded[tenant] == minute {
		if seen {
			g.folded[tenant] = before
		} else {
			delete(g.folded, tenant)
		}
	}
	g.foldMu.Unlock()
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
