package drain

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Key names one queue.
type Key struct {
	// Group is what the queue belongs to (a tenant id); the lease row
	// keeps it so that the owner's queries can name it first.
	Group string
	// ID names the queue (a webhook's id); unique across groups.
	ID string
}

// Leases are the queue rows: one per key, carrying the lease (owner,
// until when) and the queued flag (work arrived that no drain has looked
// at yet, and since when). Table implements them in SQL. Every method
// runs on the Querier given (a transaction of the caller's).
type Leases interface {
	// Wake sets k's flag (making its row) unless it is set already, and
	// reports whether it did so on a queue with no live lease at now: then
	// the caller enqueues a drain.
	Wake(ctx context.Context, q store.Querier, k Key, now time.Time) (free bool, err error)
	// Acquire gives owner the lease until until, clearing the flag, when
	// k's row exists and no lease is live at now; it reports whether.
	Acquire(ctx context.Context, q store.Querier, k Key, owner string, now, until time.Time) (bool, error)
	// Flag sets k's flag, making its row when there is none, keeping the
	// time of a flag already set.
	Flag(ctx context.Context, q store.Querier, k Key, now time.Time) error
	// AcquireFree gives owner the lease until until, clearing the flag,
	// when no one holds it (a row just made); it reports whether.
	AcquireFree(ctx context.Context, q store.Querier, k Key, owner string, until time.Time) (bool, error)
	// Renew extends owner's lease to until; false when owner no longer
	// holds it.
	Renew(ctx context.Context, q store.Querier, k Key, owner string, until time.Time) (bool, error)
	// Holds reports whether owner's lease is live at now. It reads
	// without locking the row.
	Holds(ctx context.Context, q store.Querier, k Key, owner string, now time.Time) (bool, error)
	// Release lets owner's lease go unless the flag is set; it reports
	// whether it did.
	Release(ctx context.Context, q store.Querier, k Key, owner string) (bool, error)
	// Unflag clears the flag of a queue owner holds; false when owner no
	// longer holds it.
	Unflag(ctx context.Context, q store.Querier, k Key, owner string) (bool, error)
	// Yield lets owner's lease go with the flag set at queuedAt (when the
	// drain the caller enqueues is due); false when owner did not hold it.
	Yield(ctx context.Context, q store.Querier, k Key, owner string, queuedAt time.Time) (bool, error)
	// ScheduleWake records that a drain is due at at, unless one is
	// recorded for a time after now and no later than at; it reports
	// whether it did (then the caller enqueues that drain).
	ScheduleWake(ctx context.Context, q store.Querier, k Key, at, now time.Time) (bool, error)
	// Requeue sets k's flag at now, making its row when there is none.
	Requeue(ctx context.Context, q store.Querier, k Key, now time.Time) error
}

// Items are the queries over the owning area's work.
type Items interface {
	// Due reports whether k has an item due at now.
	Due(ctx context.Context, q store.Querier, k Key, now time.Time) (bool, error)
	// NextDue returns the earliest time after now at which an item of k
	// comes due; ok is false when none waits.
	NextDue(ctx context.Context, q store.Querier, k Key, now time.Time) (at time.Time, ok bool, err error)
	// Stuck returns the keys with items due at now whose queue has no
	// live lease and no drain waiting: no row, an owner whose lease
	// expired (whatever the flag says), or a flag set before
	// flaggedBefore with no owner. In key order (see Table.Stuck).
	Stuck(ctx context.Context, q store.Querier, now, flaggedBefore time.Time) ([]Key, error)
}

// Store is what Queues needs of storage.
type Store interface {
	Leases
	Items
}

// Enqueue adds the owning area's drain job for k inside tx, due at at
// (the zero time: now).
type Enqueue func(ctx context.Context, tx *store.Tx, k Key, at time.Time) error

// Defaults of Options. A queue whose drain died is drained on within
// LeaseTTL + TakeOverEvery (+10% jitter) + the job engine's pickup of the
// enqueued drain: 4.1 s + pickup (milliseconds on PostgreSQL, which
// notifies the job engine; up to its 20 ms poll on SQLite). What each
// costs is on the Options field.
const (
	DefaultLeaseTTL       = 3 * time.Second
	DefaultHeartbeatEvery = time.Second
	DefaultTakeOverEvery  = time.Second
	DefaultBudget         = 10 * time.Second
	DefaultSweepEvery     = 15 * time.Second
	DefaultStaleQueued    = time.Minute
)

// Options tune Queues; zero fields take the defaults above.
type Options struct {
	// Name prefixes log messages and after-commit keys ("webhooks").
	Name string
	// Logger receives the leases' takeovers, hand-ons and losses (Warn
	// and Info) and takes, yields and ends (Debug), each with the holder
	// (host:pid:instance). Defaults to the DB's.
	Logger *slog.Logger
	// LeaseTTL is how long a lease lasts unless renewed: a dead drain's
	// queue is free again within it. A renewal later than LeaseTTL −
	// HeartbeatEvery (a database stalled that long, a paused process,
	// hosts' clocks that far apart: leases are stamped with each
	// process's clock) loses the lease to a takeover: the drain is
	// cancelled, and the items it had started are done again (see the
	// package doc's at-least-once window).
	LeaseTTL time.Duration
	// HeartbeatEvery is how often a drain renews its lease; well under
	// LeaseTTL. Cost: one short write transaction per running drain per
	// beat (the default: one a second), on the background pool.
	HeartbeatEvery time.Duration
	// TakeOverEvery is how often Run looks for leases that lapsed
	// (TakeOver). Cost: one read of the queue table's held rows per
	// process per round (the default: one a second), a transaction only
	// when one lapsed.
	TakeOverEvery time.Duration
	// SweepEvery is how often Run sweeps (Sweep): the slower net under
	// lost wake-ups, which reads the due work. Cost: one query joining
	// the due items with their queues per process per round.
	SweepEvery time.Duration
	// Budget is how long a drain runs before its step should yield
	// (Lease.Deadline).
	Budget time.Duration
	// StaleQueued is how long a flag may stand with no drain taking the
	// queue before the sweep takes its wake-up for lost.
	StaleQueued time.Duration
}

// ErrLeaseLost is the cause of a drain's context cancelled because its
// lease was taken by another drain (it was not renewed in time).
var ErrLeaseLost = errors.New("drain: the queue's lease was lost")

// Queues runs one ordered drain per key at a time, across processes.
type Queues struct {
	db *store.DB
	// bg is db's background pool (store.DB.Background): the leases' own
	// queries, the heartbeat, takeover and sweep, run there, on their
	// deadlines, never waiting behind requests for a connection.
	bg      *store.DB
	st      Store
	enqueue Enqueue
	opts    Options
	log     *slog.Logger
	holder  string // host:pid:instance, the owners' prefix
	waker   waker
}

// New returns the queues of st on db; enqueue adds the area's drain job,
// whose worker calls Drain.
func New(db *store.DB, st Store, enqueue Enqueue, opts Options) *Queues {
	opts.LeaseTTL = cmp.Or(opts.LeaseTTL, DefaultLeaseTTL)
	opts.HeartbeatEvery = cmp.Or(opts.HeartbeatEvery, DefaultHeartbeatEvery)
	opts.Budget = cmp.Or(opts.Budget, DefaultBudget)
	opts.StaleQueued = cmp.Or(opts.StaleQueued, DefaultStaleQueued)
	opts.TakeOverEvery = cmp.Or(opts.TakeOverEvery, DefaultTakeOverEvery)
	opts.SweepEvery = cmp.Or(opts.SweepEvery, DefaultSweepEvery)
	qs := &Queues{db: db, st: st, enqueue: enqueue, opts: opts, log: opts.Logger, holder: newHolder()}
	if db != nil {
		qs.bg = db.Background()
	}
	if qs.log == nil {
		qs.log = db.Logger()
	}
	qs.waker.qs = qs
	return qs
}

// Lease is a drain's hold on its queue.
type Lease struct {
	Key Key // the queue leased
	// Owner names the drain in the lease row: "<holder>/<drain id>"
	// (HolderOf).
	Owner string
	// Deadline is when the drain's budget ends: a step past it yields.
	Deadline time.Time
}

// Step is what one step of a drain did.
type Step struct {
	// More: the step did work; the drain steps again.
	More bool
	// Yield: the drain hands the queue on (flag set, a drain enqueued
	// after Wait) and ends, so that other queues' drains get the worker.
	Yield bool
	// Wait delays the drain a Yield enqueues.
	Wait time.Duration
}

// Wake tells k's queue, inside tx (the transaction that made the work),
// that it has new work, and enqueues a drain unless one is waiting or
// holds the lease (which then sees the flag before it lets go).
func (qs *Queues) Wake(ctx context.Context, tx *store.Tx, k Key) error {
	free, err := qs.st.Wake(ctx, tx, k, tx.Now())
	if err != nil || !free {
		return err
	}
	return qs.enqueue(ctx, tx, k, time.Time{})
}

// WakeAfterCommit wakes k once tx has committed (once per key and
// transaction), in the background, outside it: a transaction that makes
// work never waits on a queue's row. Should the process die in between,
// the sweep wakes the queue.
func (qs *Queues) WakeAfterCommit(tx *store.Tx, k Key) {
	tx.AfterCommitOnce(qs.opts.Name+".wake:"+k.ID, func() { qs.waker.add(k) })
}

// Wait waits for the wake-ups under way (WakeAfterCommit). Call it before
// closing the database.
func (qs *Queues) Wait() { qs.waker.wg.Wait() }

// Drain runs step while it holds k's lease: again while it reports More;
// when it reports nothing more the lease is let go, unless work arrived
// meanwhile (then it steps on). The lease is renewed every HeartbeatEvery;
// when another drain took it, ctx is cancelled with ErrLeaseLost and the
// drain ends. A drain that fails, or whose ctx ends, hands the queue on at
// once (flag set, a drain enqueued) rather than when its lease expires.
// When another drain holds the lease, Drain only sets the flag.
func (qs *Queues) Drain(ctx context.Context, k Key, step func(ctx context.Context, l *Lease) (Step, error)) (err error) {
	owner := qs.holder + "/" + store.NewID()
	got, err := qs.acquire(ctx, k, owner)
	if err != nil || !got {
		return err
	}
	qs.log.Debug(qs.opts.Name+": lease taken", "queue", k.ID, "group", k.Group, "holder", qs.holder)
	jobCtx := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	// lettingGo is set while the drain lets the lease go itself (release,
	// yield, hand-on): a heartbeat then finding the lease gone is the
	// drain's own doing, not a loss.
	var lettingGo atomic.Bool
	go qs.heartbeat(ctx, cancel, k, owner, done, &lettingGo)
	defer cancel(nil)
	defer close(done)
	defer func() {
		if err != nil || jobCtx.Err() != nil {
			lettingGo.Store(true)
			// Failed, or out of time: hand the queue on now rather than
			// when the lease expires (the job's retry, or a new drain,
			// takes it).
			cause := err
			if cause == nil {
				cause = context.Cause(jobCtx)
			}
			qs.log.Info(qs.opts.Name+": handing a queue on", "queue", k.ID, "group", k.Group, "holder", qs.holder, "cause", cause)
			qs.handOn(k, owner)
		}
	}()
	l := &Lease{Key: k, Owner: owner, Deadline: time.Now().Add(qs.opts.Budget)}
	for {
		if ctx.Err() != nil {
			return nil // lease lost, or the job's time is up (handed on above)
		}
		st, err := step(ctx, l)
		if err != nil {
			return err
		}
		if st.Yield {
			qs.log.Debug(qs.opts.Name+": yielding a queue", "queue", k.ID, "group", k.Group, "holder", qs.holder, "wait", st.Wait)
			lettingGo.Store(true)
			return qs.yield(ctx, k, owner, st.Wait)
		}
		if st.More {
			continue
		}
		lettingGo.Store(true)
		more, err := qs.release(ctx, k, owner)
		if err != nil || !more {
			if err == nil {
				qs.log.Debug(qs.opts.Name+": drain finished", "queue", k.ID, "group", k.Group, "holder", qs.holder)
			}
			return err
		}
		lettingGo.Store(false) // stepping on: a lease gone is lost again
	}
}

// acquire takes k's lease for owner, clearing its flag, and reports
// whether it did. A queue whose lease is held gets its flag set instead,
// so that its drain looks again before it stops.
func (qs *Queues) acquire(ctx context.Context, k Key, owner string) (bool, error) {
	got := false
	err := qs.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		var err error
		if got, err = qs.st.Acquire(ctx, tx, k, owner, now, now.Add(qs.opts.LeaseTTL)); err != nil || got {
			return err
		}
		// Held, or no row yet: set the flag, making the row if need be.
		return qs.st.Flag(ctx, tx, k, now)
	})
	if err != nil || got {
		return got, err
	}
	// A row just made is free: take it.
	err = qs.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		got, err = qs.st.AcquireFree(ctx, tx, k, owner, tx.Now().Add(qs.opts.LeaseTTL))
		return err
	})
	return got, err
}

// heartbeat renews owner's lease until done is closed; when the lease is
// gone it cancels the drain, unless the drain is letting it go itself
// (lettingGo): then a renewal that finds it gone ran after the drain's
// release or yield committed, and the drain is ending anyway.
func (qs *Queues) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, k Key, owner string, done <-chan struct{}, lettingGo *atomic.Bool) {
	t := time.NewTicker(qs.opts.HeartbeatEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held := false
		err := qs.bg.Tx(ctx, func(tx *store.Tx) error {
			var err error
			held, err = qs.st.Renew(ctx, tx, k, owner, tx.Now().Add(qs.opts.LeaseTTL))
			return err
		})
		switch {
		case err == nil && !held && lettingGo.Load():
			return // let go by the drain itself
		case err == nil && !held:
			qs.log.Warn(qs.opts.Name+": lease lost (it lapsed and was taken over); stopping the drain",
				"queue", k.ID, "group", k.Group, "holder", qs.holder)
			cancel(ErrLeaseLost)
			return
		case err != nil && ctx.Err() == nil && !failing:
			qs.log.Warn(qs.opts.Name+": renew a lease (retrying at the next beat)", "queue", k.ID, "holder", qs.holder, "err", err)
		}
		failing = err != nil
	}
}

// handOn yields owner's lease on a context of its own (the drain's may be
// over).
func (qs *Queues) handOn(k Key, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := qs.yield(ctx, k, owner, 0); err != nil {
		qs.log.Warn(qs.opts.Name+": hand a queue on (the takeover or the sweep will)", "queue", k.ID, "holder", qs.holder, "err", err)
	}
}

// release lets the lease go unless k has due items (one that came due
// since the step looked, or work committed since) or work arrived since
// the drain took it (the flag): then it clears the flag and reports more
// (the drain goes on). Letting go, it enqueues a drain for k's next item
// to come due, unless one is scheduled for then or earlier.
func (qs *Queues) release(ctx context.Context, k Key, owner string) (more bool, err error) {
	err = qs.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		due, err := qs.st.Due(ctx, tx, k, now)
		if err != nil {
			return err
		}
		if !due {
			released, err := qs.st.Release(ctx, tx, k, owner)
			if err != nil {
				return err
			}
			if released {
				more = false
				return qs.scheduleNext(ctx, tx, k, now)
			}
		}
		// Due work or the flag: drain on, if the lease is still ours
		// (otherwise the queue is another drain's).
		more, err = qs.st.Unflag(ctx, tx, k, owner)
		return err
	})
	return more, err
}

func (qs *Queues) scheduleNext(ctx context.Context, tx *store.Tx, k Key, now time.Time) error {
	at, ok, err := qs.st.NextDue(ctx, tx, k, now)
	if err != nil || !ok {
		return err
	}
	scheduled, err := qs.st.ScheduleWake(ctx, tx, k, at, now)
	if err != nil || !scheduled {
		return err
	}
	return qs.enqueue(ctx, tx, k, at)
}

// yield lets the lease go with the flag set and a drain enqueued (after
// wait). The flag's time is when that drain is due, so the sweep leaves
// it alone until then.
func (qs *Queues) yield(ctx context.Context, k Key, owner string, wait time.Duration) error {
	return qs.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		yielded, err := qs.st.Yield(ctx, tx, k, owner, now.Add(wait))
		if err != nil || !yielded {
			return err
		}
		var at time.Time
		if wait > 0 {
			at = now.Add(wait)
		}
		return qs.enqueue(ctx, tx, k, at)
	})
}

// Sweep restarts the queues that have due items but no live lease and no
// drain waiting: their drain died with its process, or their wake-up was
// lost. Run runs it every SweepEvery (an area may instead run it as a
// periodic job); TakeOver is the faster path for dead drains.
func (qs *Queues) Sweep(ctx context.Context) error {
	return qs.bg.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		stuck, err := qs.st.Stuck(ctx, tx, now, now.Add(-qs.opts.StaleQueued))
		if err != nil {
			return err
		}
		for _, k := range stuck {
			if err := qs.st.Requeue(ctx, tx, k, now); err != nil {
				return err
			}
			if err := qs.enqueue(ctx, tx, k, time.Time{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// waker wakes queues in the background once the transactions that gave
// them work have committed. Wake-ups requested while one is under way are
// coalesced into the next, which wakes its queues in one transaction, in
// key order: concurrent wakes (of this process or another) lock the queue
// rows in one order and never deadlock. A failure is logged; the sweep
// wakes those queues later.
type waker struct {
	qs      *Queues
	mu      sync.Mutex
	pending map[Key]bool
	running bool
	wg      sync.WaitGroup
}

func (w *waker) add(k Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[Key]bool{}
	}
	w.pending[k] = true
	if !w.running {
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
}

// run wakes the pending queues until there are none; only one run is
// under way at a time.
func (w *waker) run() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		keys := slices.SortedFunc(maps.Keys(w.pending), func(a, b Key) int { return strings.Compare(a.ID, b.ID) })
		clear(w.pending)
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.qs.db.Tx(ctx, func(tx *store.Tx) error {
			for _, k := range keys {
				if err := w.qs.Wake(ctx, tx, k); err != nil {
					return err
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			w.qs.log.Warn(w.qs.opts.Name+": wake queues (the sweep will)", "queues", len(keys), "err", err)
		}
	}
}
