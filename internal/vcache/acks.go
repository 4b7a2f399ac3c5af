package vcache

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Acknowledged changes: for a cache whose every use must honour every
// change that returned before it, through any process (a credential
// revoked, a provider's credentials replaced), without reading the
// counter on every use (Sync). On a database several processes share,
// each process that caches registers in a table of its own (the area's
// migration: id TEXT PRIMARY KEY, seen BIGINT, beat_at TIMESTAMPTZ) and
// keeps its row beating; a change, once committed, waits (AwaitAcks) until
// every live row has seen its version of the counter. A process writes a
// version as seen only after its cache has dropped what is older, so a
// use that starts after the change returns finds nothing stale, on any
// process, without reading the counter itself.
//
// A process trusts its cache without reading the counter only while its
// lease holds (Trusted): ackTrustFor from the moment it sent its last
// successful beat. A change counts a row as dead when its last beat
// (stamped by the database's clock) is older than ackDeadAfter, twice
// ackTrustFor, and stops waiting for it; by then that process's lease
// has lapsed (it sent the beat before the database stamped it), so it
// reads the counter for every use again until a beat gets through, and a
// beat reads and applies the counter before it writes the row. A process
// cut off from notifications acknowledges at its next beat (within
// ackBeatEvery); one cut off from the database is waited for at most
// ackDeadAfter. The row is written before the beat that first reads the
// counter and grants a lease, so a change either sees the row (and waits
// for it) or committed before that read.
const (
	ackBeatEvery  = 1 * time.Second
	ackTrustFor   = 2500 * time.Millisecond
	ackDeadAfter  = 2 * ackTrustFor
	ackWaitMax    = ackDeadAfter + 2*time.Second // for clocks that disagree more than the lease allows; then logged
	ackForgetRows = time.Hour                    // how long a dead row stays before a beat removes it
)

// Acks is one process's side of acknowledged changes of one cache: its
// row in table, beating with the version of counter the cache has
// applied. Make it only where several processes may share the database
// (store.Dialect.Notifies); elsewhere a process's own commits invalidate
// its caches before they return and nothing needs acknowledging.
type Acks struct {
	db      *store.DB
	table   string
	counter string
	apply   func(v int64) // has the cache drop what is older than v
	logger  *slog.Logger
	what    string // the area, for log lines
	id      string
	base    time.Time // monotonic origin of lease
	// lease is until when (nanoseconds after base) the cache may be
	// trusted without reading the counter; 0 before the first beat.
	lease atomic.Int64

	once   sync.Once
	wake   chan struct{} // a notified version is waiting to be acknowledged
	notify atomic.Int64  // the newest notified version applied
	done   chan struct{} // closed when the DB closes
	ended  chan struct{} // closed when run returns

	// Deaf and Frozen are test knobs: Deaf drops notifications (a process
	// whose listener is cut off), Frozen stops beats and acknowledgements
	// (a process cut off from the database).
	Deaf, Frozen atomic.Bool
}

// NewAcks returns the acknowledgements of a cache on counter, kept in
// table; apply has the cache drop what is older than a version (its
// Invalidate). what names the area in log lines ("identity"). Nothing
// starts before the first Trusted.
func NewAcks(db *store.DB, table, counter string, apply func(v int64), logger *slog.Logger, what string) *Acks {
	if logger == nil {
		logger = db.Logger()
	}
	return &Acks{db: db, table: table, counter: counter, apply: apply, logger: logger, what: what, id: store.NewID(),
		base: time.Now(), wake: make(chan struct{}, 1), done: make(chan struct{}),
		ended: make(chan struct{})}
}

// Trusted reports whether the lease holds: the cache honours every change
// that returned (Await) before this call, without reading the counter.
// The first call registers the process and starts its beats.
func (a *Acks) Trusted() bool {
	a.once.Do(a.start)
	return int64(time.Since(a.base)) < a.lease.Load()
}

// start registers the process and beats until its DB closes.
func (a *Acks) start() {
	a.db.WatchVersions(func(name string, v int64) {
		if name != a.counter || a.Deaf.Load() {
			return
		}
		a.apply(v) // before it is acknowledged
		for {
			cur := a.notify.Load()
			if v <= cur || a.notify.CompareAndSwap(cur, v) {
				break
			}
		}
		select {
		case a.wake <- struct{}{}:
		default:
		}
	})
	a.db.OnClose(func() {
		close(a.done)
		<-a.ended        // a beat under way ends first: it must not extend the lease after this
		a.lease.Store(0) // a closed database answers nothing: trust nothing
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = a.db.Exec(ctx, `DELETE FROM `+a.table+` WHERE id = $1`, a.id)
	})
	go a.run()
}

func (a *Acks) run() {
	defer close(a.ended)
	t := time.NewTimer(0)
	defer t.Stop()
	registered, acked := false, int64(0)
	for {
		select {
		case <-a.done:
			return
		case <-a.wake:
			if v := a.notify.Load(); registered && v > acked && !a.Frozen.Load() {
				if err := a.ack(v); err == nil {
					acked = v
				}
			}
		case <-t.C:
			if !a.Frozen.Load() {
				var err error
				if !registered {
					registered = a.register() == nil
				}
				if registered {
					var v int64
					if v, err = a.beat(); err == nil {
						acked = max(acked, v)
					}
				}
				select {
				case <-a.done:
					return // closing: the pool is going
				default:
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					a.logger.Warn(a.what+": a cache's beat failed; this process reads the counter for every use until one gets through",
						"counter", a.counter, "err", err)
				}
			}
			t.Reset(ackBeatEvery)
		}
	}
}

func (a *Acks) register() error {
	ctx, cancel := context.WithTimeout(context.Background(), ackBeatEvery)
	defer cancel()
	_, err := a.db.Background().Exec(ctx, `INSERT INTO `+a.table+` (id, seen, beat_at) VALUES ($1, 0, CURRENT_TIMESTAMP)`, a.id)
	return err
}

// beat reads the counter, has the cache drop what is older, writes it as
// seen, and extends the lease from the moment it began.
func (a *Acks) beat() (int64, error) {
	sent := time.Since(a.base)
	ctx, cancel := context.WithTimeout(context.Background(), ackBeatEvery)
	defer cancel()
	db := a.db.Background() // never behind requests
	v, err := store.ReadVersion(ctx, db, a.counter)
	if err != nil {
		return 0, err
	}
	a.apply(v)
	n, err := db.Exec(ctx, `UPDATE `+a.table+` SET seen = CASE WHEN seen > $2 THEN seen ELSE $2 END, beat_at = CURRENT_TIMESTAMP
		WHERE id = $1`, a.id, v)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		// Removed as dead (a long stall): register again; the next beat
		// trusts.
		return 0, a.register()
	}
	a.lease.Store(int64(sent + ackTrustFor))
	if rand.N(64) == 0 { // now and then, forget long-dead rows
		_, _ = db.Exec(ctx, `DELETE FROM `+a.table+` WHERE beat_at < $1`, a.db.Now().Add(-ackForgetRows))
	}
	return v, nil
}

// ack writes version v (already applied) as seen.
func (a *Acks) ack(v int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), ackBeatEvery)
	defer cancel()
	_, err := a.db.Background().Exec(ctx, `UPDATE `+a.table+` SET seen = CASE WHEN seen > $2 THEN seen ELSE $2 END WHERE id = $1`, a.id, v)
	return err
}

// AwaitAcks waits until every live process registered in table has seen
// version v of its cache's counter, or is dead (see Acks): call it once
// the change that made v has committed (store.Tx.AfterCommit, after the
// cache's own hook, so this process's cache has dropped what is older).
// self is this process's Acks (nil when it caches nothing), acknowledged
// first. Past a bound (clocks that disagree more than the lease allows)
// the wait is logged as an error and ends without one.
func AwaitAcks(ctx context.Context, db *store.DB, table string, self *Acks, v int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackWaitMax)
	defer cancel()
	if self != nil {
		if err := self.ack(v); err != nil {
			return err
		}
	}
	pause := 500 * time.Microsecond
	for {
		waiting, err := lagging(ctx, db, table, v)
		if err != nil || waiting == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			db.Logger().Error("vcache: a change was not acknowledged in time by every live process", "table", table,
				"processes", waiting, "version", v)
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// lagging counts the live processes in table that have not seen version v.
func lagging(ctx context.Context, db *store.DB, table string, v int64) (int, error) {
	rows, err := db.Query(ctx, `SELECT beat_at, CURRENT_TIMESTAMP FROM `+table+` WHERE seen < $1`, v)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var beat, now time.Time
		if err := rows.Scan(&beat, &now); err != nil {
			return 0, err
		}
		if now.Sub(beat) < ackDeadAfter {
			n++
		}
	}
	return n, rows.Err()
}
