package store

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// Group commit. Concurrent callers' small writes join a queue, and
// whoever finds no transaction running commits everything queued in one
// DB.Tx; each caller returns once its own write is committed or failed.
// On SQLite, whose single writer makes every transaction wait its turn,
// this turns many commits (and fsyncs) into one, and one transaction runs
// at a time. PostgreSQL runs two shared transactions at once, so that one
// batch gathers and writes while the other commits. Decision: two rather
// than more. Every shared transaction costs its statements and round
// trips whatever its size; with 8 at once, 32 concurrent callers made
// batches of 2 to 3 and cost 2.3 times the CPU per write (process and
// server) of 2 at once, for no more writes per second (BENCHMARKS.md,
// "Fewer, larger shared transactions on PostgreSQL"). No goroutine
// outlives its work: a committing caller hands what queued up meanwhile
// to a goroutine, which stops when the queue is empty.
//
// Two forms share the queue: Batcher runs each caller's function in turn
// in the shared transaction; Group hands the whole batch to one function,
// which writes it with multi-row statements.

// Batcher runs the functions of concurrent callers in shared transactions
// (group commit). When a function fails, the shared transaction is rolled
// back and run again without it, and the failing function runs alone, so
// one caller's bad write never fails the others and its error is the one
// its own transaction gives. A commit whose outcome is unknown
// (ErrCommitUnknown) is not run again: every member gets that error.
//
// The functions must be what DB.Tx requires anyway: no effects outside the
// transaction (use Tx.AfterCommit), safe to run again.
type Batcher struct {
	q commitQueue[func(ctx context.Context, tx *Tx) error]
}

// NewBatcher returns a batcher writing to db.
func NewBatcher(db *DB) *Batcher {
	b := &Batcher{}
	b.q.init(db, b.commit)
	return b
}

// Do runs fn in a transaction shared with other callers' and returns once
// it is committed (nil) or failed. The caller's context does not bound
// the shared transaction (it must not be torn down by one caller leaving);
// the transaction has its own 30-second limit.
func (b *Batcher) Do(fn func(ctx context.Context, tx *Tx) error) error { return b.q.do(fn) }

// commit runs a batch in one transaction. When a function fails, the
// shared transaction is rolled back, that function is run again alone
// (its own transaction gives its answer) and the others are committed
// together again without it; so a bad write costs one more transaction,
// not one per member. When the commit itself fails, each function runs
// alone.
func (b *Batcher) commit(ctx context.Context, batch []*queued[func(ctx context.Context, tx *Tx) error]) {
	var alone []*queued[func(ctx context.Context, tx *Tx) error]
	for len(batch) > 0 {
		failed := -1
		err := b.q.db.Tx(ctx, func(tx *Tx) error {
			for i, item := range batch {
				if err := item.v(ctx, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil || len(batch) == 1 || errors.Is(err, ErrCommitUnknown) {
			// A commit of unknown outcome is not run again: it may
			// have committed, and a second run would write it twice.
			for _, item := range batch {
				item.done <- err
			}
			break
		}
		if failed < 0 {
			alone = append(alone, batch...)
			break
		}
		alone = append(alone, batch[failed])
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
	for _, item := range alone {
		item.done <- b.q.db.Tx(ctx, func(tx *Tx) error { return item.v(ctx, tx) })
	}
}

// Group commits the items of concurrent callers in shared transactions
// (group commit) through one function that writes a whole batch:
// write(ctx, tx, items), with multi-row statements, so that n writes cost
// a few statements rather than n times a few. When a batch's transaction
// fails, each item is written again alone, in a transaction of its own,
// so one caller's bad item never fails the others and its error is the
// one its own transaction gives; after a commit of unknown outcome
// (ErrCommitUnknown), nothing is written again and every item gets that
// error.
//
// write must be what DB.Tx requires anyway: no effects outside the
// transaction (use Tx.AfterCommit), safe to run again on the same items.
// Items are typically pointers to a write's input and, once written, its
// result.
type Group[T any] struct {
	write func(ctx context.Context, tx *Tx, items []T) error
	// single, when set (SetSingleStatement), writes the batches it
	// accepts without a transaction of their own.
	single func(items []T) func(ctx context.Context, q Querier) error
	q      commitQueue[T]
}

// SetSingleStatement has the batches that single accepts written outside
// a transaction of their own: single(items) returns a function that
// writes them in one statement, which the engine runs in its implicit
// transaction (atomic, and committed when it returns, as a COMMIT would
// be), or nil when the batch needs a transaction (several statements,
// events, jobs). Such a batch saves BEGIN and COMMIT: two round trips and
// what the server spends on them. A transient conflict is retried as
// DB.Tx retries one, and a failed batch is written again item by item as
// any. Call it before the first Do.
func (g *Group[T]) SetSingleStatement(single func(items []T) func(ctx context.Context, q Querier) error) {
	g.single = single
}

// SetRunners sets how many of the group's shared transactions (or
// single statements) may run at once, instead of the engine's default
// (two on PostgreSQL, one on SQLite). One makes batches about twice as
// large: right for writes whose batches all take the same rows' locks
// (kept counts), so that a second one would only wait for the first's
// commit. Call it before the first Do.
func (g *Group[T]) SetRunners(n int) { g.q.runners = max(1, n) }

// SetYieldBeforeBatch has the group's runner, before each batch but the
// first, let the goroutines that are ready to run go first
// (runtime.Gosched), so that the items they are about to queue join that
// batch rather than the next. It never waits on an idle process: with
// nothing else ready, the yield returns at once. Right for a group whose
// batch costs much more than an item and whose process, not its one
// writer, is the limit: SQLite's rule execution log (a batch about
// 220 µs of CPU, an execution about 23 µs) made batches of 9 instead of 4
// and took 17% less CPU a request. Wrong where the one writer is the
// limit: records created at full load lost about 14% of their
// throughput with it (BENCHMARKS.md, "Gathering before a batch"). Call it
// before the first Do.
func (g *Group[T]) SetYieldBeforeBatch() { g.q.yield = true }

// NewGroup returns a group writing to db through write.
func NewGroup[T any](db *DB, write func(ctx context.Context, tx *Tx, items []T) error) *Group[T] {
	g := &Group[T]{write: write}
	g.q.init(db, g.commit)
	return g
}

// Do writes item in a transaction shared with other callers' items and
// returns once it is committed (nil) or failed. As with Batcher.Do, the
// caller's context does not bound the shared transaction.
func (g *Group[T]) Do(item T) error { return g.q.do(item) }

func (g *Group[T]) commit(ctx context.Context, batch []*queued[T]) {
	items := make([]T, len(batch))
	for i, q := range batch {
		items[i] = q.v
	}
	err := g.writeBatch(ctx, items)
	if err == nil || len(batch) == 1 || errors.Is(err, ErrCommitUnknown) { // see Batcher.commit
		for _, q := range batch {
			q.done <- err
		}
		return
	}
	for _, q := range batch {
		q.done <- g.writeBatch(ctx, []T{q.v})
	}
}

// writeBatch writes items in one statement outside a transaction when
// single accepts them, in a transaction otherwise.
func (g *Group[T]) writeBatch(ctx context.Context, items []T) error {
	if g.single != nil {
		if write := g.single(items); write != nil {
			return g.q.db.autocommit(ctx, write)
		}
	}
	return g.q.db.Tx(ctx, func(tx *Tx) error { return g.write(ctx, tx, items) })
}

// commitQueue is the queue and the runners both forms share.
type commitQueue[T any] struct {
	db      *DB
	runners int  // how many transactions may run at once
	yield   bool // let ready goroutines run before each batch (Group.SetYieldBeforeBatch)
	commit  func(ctx context.Context, batch []*queued[T])

	mu      sync.Mutex
	queue   []*queued[T]
	running int
}

type queued[T any] struct {
	v    T
	done chan error
}

// Bounds of one shared transaction.
const (
	maxBatchItems = 128
	batchTimeout  = 30 * time.Second
)

func (q *commitQueue[T]) init(db *DB, commit func(ctx context.Context, batch []*queued[T])) {
	q.db, q.commit, q.runners = db, commit, 1
	if db.Dialect().Name() == "postgres" {
		q.runners = 2
	}
}

func (q *commitQueue[T]) do(v T) error {
	item := &queued[T]{v: v, done: make(chan error, 1)}
	q.mu.Lock()
	q.queue = append(q.queue, item)
	if q.running == q.runners {
		q.mu.Unlock()
		return <-item.done
	}
	q.running++
	q.mu.Unlock()
	// The queue as it stands (this caller's item included, unless another
	// runner took it); what queued meanwhile is committed on another
	// goroutine, so that this caller returns now.
	if q.next() {
		go q.drain()
	}
	return <-item.done
}

// drain commits batches until the queue is empty, which ends this
// runner.
func (q *commitQueue[T]) drain() {
	for {
		if q.yield {
			runtime.Gosched()
		}
		if !q.next() {
			return
		}
	}
}

// next commits the next batch of the queue. When the queue is empty it
// ends this runner and reports false.
func (q *commitQueue[T]) next() bool {
	q.mu.Lock()
	if len(q.queue) == 0 {
		q.running--
		q.mu.Unlock()
		return false
	}
	n := min(len(q.queue), maxBatchItems)
	batch := q.queue[:n:n]
	q.queue = q.queue[n:]
	if len(q.queue) == 0 {
		q.queue = nil
	}
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	q.commit(ctx, batch)
	return true
}
