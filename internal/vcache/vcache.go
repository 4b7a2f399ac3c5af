// Package vcache is tenantkit's one cache of definitions: caches kept
// fresh by a named version counter in the database (store's Tx.BumpVersion
// and ReadVersion). Every change bumps the counter in its transaction
// (Changed); a commit in this process invalidates the cache at once.
// Other processes' commits are noticed two ways:
//
//   - On PostgreSQL, by notification: a bump notifies its new version at
//     commit, and the DB's listener (store.DB.WatchVersions, started by
//     the first cache) invalidates every cache on that counter within
//     milliseconds (measured between two processes on loopback, 200
//     changes, TestNotifiedAcrossProcesses: p50 0.3–1.7 ms, max 2–6 ms).
//     A rolled-back change notifies nothing.
//   - Everywhere, by polling: the first read after each check interval
//     reads the counter. This is the fallback for notifications lost
//     while the listener was disconnected (it reconnects with backoff,
//     and each reconnection makes every cache's next read check at once)
//     and the only way on SQLite, where one process owns the database.
//
// So a process serves another's change at the latest one check interval
// after its commit (the fallback's bound, while the listener is down),
// and within milliseconds while it is up. Shared across processes is the
// counter row and the notification; each process's cached values are its
// own.
//
// A value is cached only if no newer version was seen while it was
// loaded, so a slow load never publishes stale data.
//
// There are two forms over the same version and check code: Cache, values
// by key, loaded on demand and dropped together when the version moves;
// and Value, one value (a snapshot of a whole set of definitions) behind
// an atomic pointer, reloaded when the version moves, whose reads take no
// lock and allocate nothing, and which keeps serving the previous value
// when a reload fails.
//
// The check interval is kept by a timer, not by reading the clock on every
// read: when a check runs it arms a timer that, when it fires, marks the
// next check due; a read only loads that flag. No goroutine of the cache
// runs between reads, so there is nothing to start or stop: the
// notification subscription holds the cache weakly and ends when the
// cache is collected (the listener itself is the DB's, stopped by its
// Close).
//
// Several caches may share one counter (an area caching two kinds of plan
// over one set of definitions): a change bumps it once and invalidates
// each with the new version.
//
// # Writes: Sync
//
// Notification and polling bound how long reads lag; a write that
// validates against or executes cached definitions must not lag at all
// (a field deleted through one server must be refused by the next write
// through another, even within the millisecond the notification takes).
// Such a write calls Sync before it uses the cache. The guarantee: every
// change committed before Sync was called is honoured by the values the
// cache returns afterwards. On an engine where several processes may
// share the database (store.Dialect.Notifies: PostgreSQL) Sync reads the
// counter, one single-row query, and drops or reloads what is older; on
// SQLite it does nothing and costs nothing, since one process owns the
// database and its own commits invalidate its caches before they return.
// A change that commits while the write runs (after Sync read the
// counter) may or may not be honoured, as with any two concurrent
// transactions. Concurrent Syncs of one cache share reads: a Sync joins a
// read that has not started yet, never one already under way (which
// might miss a change committed just before the Sync began), so a cache
// runs one read at a time and a Sync waits for at most two (16 writers
// on PostgreSQL: 32 µs a Sync, against 336 µs for one alone, on a loaded
// machine; BenchmarkSync). Caches on one counter may share a Sync:
// Invalidate the other with the synced cache's Version.
//
// # Acknowledged changes: no read per use
//
// Sync costs a read of the counter per use (shared by concurrent users).
// A cache used on every request of a hot route (identity's credentials,
// the integrations' credentials before each provider call) avoids it with
// Acks (acks.go): each process beats in a table of its area with the
// version it has applied, a change waits after its commit until every
// live process has acknowledged its version (AwaitAcks), and a process
// whose lease holds (Trusted) skips Sync. The guarantee is Sync's (every
// change that returned before a use is honoured by it); the cost moves
// to the change (milliseconds while the listeners are up, up to the
// beat's second for a process cut off from notifications, at most 5 s for
// one cut off from the database) and to a beat a second per process.
package vcache

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/tenantkit/tenantkit/store"
)

// watch is the version-check code both forms share: the counter, and when
// to read it next.
type watch struct {
	db      *store.DB
	counter string
	due     atomic.Bool // a check is due: the interval has passed since the last
	timer   *time.Timer // marks the next check due; armed by each check
	every   time.Duration
	// shared: other processes may change the database (the engine
	// notifies), so Sync must read the counter.
	shared bool

	syncMu  sync.Mutex
	running *round // Sync's read under way
	pending *round // Sync's next read: callers join it until it starts
}

// round is one read of the counter by Sync, shared by the callers that
// joined it before it started.
type round struct {
	done chan struct{}
	v    int64
	err  error
}

func (w *watch) init(db *store.DB, counter string, interval time.Duration) {
	w.db, w.counter, w.every = db, counter, interval
	w.shared = db.Dialect().Notifies()
	w.due.Store(true) // the first read checks
	w.timer = time.AfterFunc(time.Hour, func() { w.due.Store(true) })
	w.timer.Stop()
}

// check reads the counter if a check is due (one caller at a time; the
// others go on with what is cached) and reports whether it did. A failed
// read is retried after the interval, like a successful one. The read
// does not end with the caller's context: it serves every reader.
func (w *watch) check(ctx context.Context) (v int64, checked bool, err error) {
	if !w.due.Load() { // inlined: the common case
		return 0, false, nil
	}
	return w.checkNow(ctx)
}

func (w *watch) checkNow(ctx context.Context) (v int64, checked bool, err error) {
	return w.checkThrough(context.WithoutCancel(ctx), w.db)
}

// checkIn is check reading through q, a caller's transaction.
func (w *watch) checkIn(ctx context.Context, q store.Querier) (v int64, checked bool, err error) {
	if !w.due.Load() {
		return 0, false, nil
	}
	return w.checkThrough(ctx, q)
}

func (w *watch) checkThrough(ctx context.Context, q store.Querier) (v int64, checked bool, err error) {
	if !w.due.CompareAndSwap(true, false) {
		return 0, false, nil
	}
	defer w.timer.Reset(w.every)
	v, err = store.ReadVersion(ctx, q, w.counter)
	return v, err == nil, err
}

// current reads the counter for Sync: a read that starts after this call
// began. A caller joins the pending read (not yet started) if there is
// one; otherwise, with a read under way, it makes the pending read and
// starts it when that one ends; otherwise it reads at once. The read
// does not end with the caller's context (it serves the callers that
// joined it); a caller stops waiting when its context ends.
func (w *watch) current(ctx context.Context) (int64, error) {
	w.syncMu.Lock()
	if r := w.pending; r != nil {
		w.syncMu.Unlock()
		select {
		case <-r.done:
			return r.v, r.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	r := &round{done: make(chan struct{})}
	if prev := w.running; prev != nil {
		w.pending = r
		w.syncMu.Unlock()
		<-prev.done // it hands over: r is running now
	} else {
		w.running = r
		w.syncMu.Unlock()
	}
	r.v, r.err = store.ReadVersion(context.WithoutCancel(ctx), w.db, w.counter)
	w.syncMu.Lock()
	w.running, w.pending = w.pending, nil
	w.syncMu.Unlock()
	close(r.done)
	return r.v, r.err
}

// subscribe has the DB's version notifications (store.DB.WatchVersions,
// PostgreSQL) reach c: a newer version of its counter invalidates it at
// once, as a commit in this process does, and a (re)connection of the
// listener, which may have missed notifications, makes its next read
// check. The subscription holds c weakly and ends when c is collected, so
// a cache needs no Close.
func subscribe[T any](c *T, w *watch, watchOf func(*T) *watch, invalidate func(*T, int64)) {
	wp, counter := weak.Make(c), w.counter
	stop := w.db.WatchVersions(func(name string, v int64) {
		c := wp.Value()
		switch {
		case c == nil:
		case name == "":
			watchOf(c).due.Store(true)
		case name == counter:
			invalidate(c, v)
		}
	})
	runtime.AddCleanup(c, func(stop func()) { stop() }, stop)
}

// changed bumps the counter in tx and has invalidate run with the new
// version once tx commits.
func changed(ctx context.Context, tx *store.Tx, counter string, invalidate func(int64)) (int64, error) {
	v, err := tx.BumpVersion(ctx, counter)
	if err != nil {
		return 0, err
	}
	tx.AfterCommit(func() { invalidate(v) })
	return v, nil
}

// Cache caches values by key. The zero value is not usable; use New.
type Cache[K comparable, V any] struct {
	w   watch
	max int

	mu      sync.RWMutex
	version int64 // the newest version seen
	m       map[K]V
}

// New returns a cache over db kept fresh by the named version counter,
// checked at most every interval, holding at most max values (past that it
// starts over).
func New[K comparable, V any](db *store.DB, counter string, interval time.Duration, max int) *Cache[K, V] {
	c := &Cache[K, V]{max: max, m: map[K]V{}}
	c.w.init(db, counter, interval)
	subscribe(c, &c.w, func(c *Cache[K, V]) *watch { return &c.w }, (*Cache[K, V]).Invalidate)
	return c
}

// Changed records, in tx, a change to what the cache holds: it bumps the
// counter, and once tx commits drops this process's cache. It returns the
// new version (for another cache on the same counter to Invalidate).
func (c *Cache[K, V]) Changed(ctx context.Context, tx *store.Tx) (int64, error) {
	return changed(ctx, tx, c.w.counter, c.Invalidate)
}

// Invalidate records version v (read or made by a committed change) and
// drops every value older than it.
func (c *Cache[K, V]) Invalidate(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v > c.version {
		c.version = v
		clear(c.m)
	}
}

// Peek returns the value cached under key without loading it (false when
// there is none), for a caller that has cheap checks to make before a
// load. Like Get, it first reads the counter when a check is due.
func (c *Cache[K, V]) Peek(ctx context.Context, key K) (V, bool) {
	seen, checked, _ := c.w.check(ctx) // a failed check is retried after the interval
	return c.lookup(key, seen, checked)
}

// Delete drops the value under key, for a caller that finds it stale by
// a rule of its own (an age bound): the next Get loads it again.
func (c *Cache[K, V]) Delete(key K) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// Sync makes the cache at least as new as the database at this moment:
// every change committed before Sync was called is honoured by the values
// Get returns afterwards (see the package doc). Call it before a write
// that validates against the cache. On an engine whose database other
// processes may share (PostgreSQL) it reads the counter, one single-row
// query, and drops the values older than it (Get then loads them again);
// on SQLite it does nothing. An error (the counter could not be read)
// means the cache may be stale: the write should fail.
func (c *Cache[K, V]) Sync(ctx context.Context) error {
	if !c.w.shared {
		return nil
	}
	v, err := c.w.current(ctx)
	if err != nil {
		return err
	}
	c.Invalidate(v)
	return nil
}

// SyncIn is Sync reading the counter through q, the caller's transaction,
// for a write that validates inside a transaction it already holds: Sync
// would take a second connection from the pool, and writers that each
// hold one while waiting for another can exhaust it (a deadlock). It does
// nothing on SQLite, as Sync.
func (c *Cache[K, V]) SyncIn(ctx context.Context, q store.Querier) error {
	if !c.w.shared {
		return nil
	}
	v, err := store.ReadVersion(ctx, q, c.w.counter)
	if err != nil {
		return err
	}
	c.Invalidate(v)
	return nil
}

// Version returns the newest version of the counter this cache has seen
// (read, made by a committed change, or notified); 0 before any. Another
// cache on the same counter may Invalidate with it, so that one Sync
// serves both.
func (c *Cache[K, V]) Version() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.version
}

// Get returns the value under key, or loads it in a read transaction
// (after reading the version) and caches it.
func (c *Cache[K, V]) Get(ctx context.Context, key K, load func(tx *store.Tx) (V, error)) (V, error) {
	seen, checked, _ := c.w.check(ctx) // a failed check is retried after the interval
	v, ok := c.lookup(key, seen, checked)
	if ok {
		return v, nil
	}
	var version int64
	err := c.w.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if version, err = store.ReadVersion(ctx, tx, c.w.counter); err != nil {
			return err
		}
		v, err = load(tx)
		return err
	})
	if err != nil {
		var zero V
		return zero, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if version < c.version {
		return v, nil // something newer was seen meanwhile: do not cache
	}
	if version > c.version {
		c.version = version
		clear(c.m)
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = v
	return v, nil
}

// GetIn is Get for a caller inside its own transaction tx: a cached
// value is returned as Get returns it; a missing one is loaded through tx
// (load gets tx) rather than a second pool connection, since callers that
// each hold a connection while waiting for another can exhaust the pool
// (a deadlock); the periodic version check, when due, reads through tx
// too. The value loaded is returned but not cached: tx may hold
// uncommitted changes of its own that a rollback would undo.
func (c *Cache[K, V]) GetIn(ctx context.Context, tx *store.Tx, key K, load func(tx *store.Tx) (V, error)) (V, error) {
	seen, checked, _ := c.w.checkIn(ctx, tx)
	if v, ok := c.lookup(key, seen, checked); ok {
		return v, nil
	}
	return load(tx)
}

// lookup applies a version check's result (when it checked) and returns
// the value cached under key.
func (c *Cache[K, V]) lookup(key K, seen int64, checked bool) (V, bool) {
	if checked {
		c.Invalidate(seen)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[key]
	return v, ok
}

// Value caches one value, loaded whole. The zero value is not usable; use
// NewValue.
type Value[V any] struct {
	w       watch
	load    func(ctx context.Context, tx *store.Tx) (V, error)
	onError func(error)

	cur    atomic.Pointer[loaded[V]] // nil until the first load
	wanted atomic.Int64              // the newest version seen
	// held is the wanted version a reload failed to reach: until a newer
	// version is seen or the next check runs, cur is served without
	// another try.
	held atomic.Int64
	mu   sync.Mutex // serialises loads, so an older one never replaces a newer
}

// loaded is a value as of a version of the counter.
type loaded[V any] struct {
	version int64
	value   V
}

// Version returns the counter's version the served value was loaded at,
// and 0 before the first load: a gauge of how fresh this process's copy
// is.
func (c *Value[V]) Version() int64 {
	if l := c.cur.Load(); l != nil {
		return l.version
	}
	return 0
}

// NewValue returns a value over db kept fresh by the named version
// counter, checked at most every interval. load reads it whole, in a read
// transaction that has read the version first. onError (nil: ignored)
// receives the failures of checks and reloads while the previous value is
// served.
func NewValue[V any](db *store.DB, counter string, interval time.Duration,
	load func(ctx context.Context, tx *store.Tx) (V, error), onError func(error)) *Value[V] {
	c := &Value[V]{load: load, onError: onError}
	if c.onError == nil {
		c.onError = func(error) {}
	}
	c.w.init(db, counter, interval)
	subscribe(c, &c.w, func(c *Value[V]) *watch { return &c.w }, (*Value[V]).Invalidate)
	return c
}

// Changed records, in tx, a change to the value: it bumps the counter, and
// once tx commits has the next Get in this process reload. It returns the
// new version.
func (c *Value[V]) Changed(ctx context.Context, tx *store.Tx) (int64, error) {
	return changed(ctx, tx, c.w.counter, c.Invalidate)
}

// Invalidate records version v: a Get reloads unless the value is as new.
func (c *Value[V]) Invalidate(v int64) {
	for {
		old := c.wanted.Load()
		if v <= old || c.wanted.CompareAndSwap(old, v) {
			return
		}
	}
}

// fresh reports whether l may be served: it is as new as the newest
// version seen, or a reload towards that version failed.
func (c *Value[V]) fresh(l *loaded[V]) bool {
	w := c.wanted.Load()
	return l != nil && (l.version >= w || c.held.Load() >= w)
}

// Get returns the value, loading it first when it is older than the newest
// version seen. With the value current it takes no lock and allocates
// nothing. A failed reload serves the previous value (reporting the error
// to onError) and is tried again at the next check; the first load's
// failure is returned.
func (c *Value[V]) Get(ctx context.Context) (V, error) {
	if l := c.cur.Load(); l != nil && !c.w.due.Load() && l.version >= c.wanted.Load() {
		return l.value, nil // inlined: the common case
	}
	return c.get(ctx)
}

func (c *Value[V]) get(ctx context.Context) (V, error) {
	if v, checked, err := c.w.check(ctx); checked {
		c.held.Store(0) // a check retries a failed reload
		c.Invalidate(v)
	} else if err != nil {
		c.onError(err)
	}
	if l := c.cur.Load(); c.fresh(l) {
		return l.value, nil
	}
	return c.reload(ctx)
}

func (c *Value[V]) reload(ctx context.Context) (V, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.cur.Load()
	if c.fresh(prev) {
		return prev.value, nil // loaded (or failed) while this call waited
	}
	target := c.wanted.Load()
	next, err := c.loadLocked(ctx)
	if err != nil {
		if prev == nil {
			var zero V
			return zero, err
		}
		c.held.Store(target)
		c.onError(err)
		return prev.value, nil
	}
	return next.value, nil
}

// loadLocked loads the value, at the version it reads first, and
// publishes it. c.mu is held.
func (c *Value[V]) loadLocked(ctx context.Context) (*loaded[V], error) {
	// The load does not end with the caller's context: it serves every
	// reader.
	ctx = context.WithoutCancel(ctx)
	next := &loaded[V]{}
	err := c.w.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if next.version, err = store.ReadVersion(ctx, tx, c.w.counter); err != nil {
			return err
		}
		next.value, err = c.load(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.cur.Store(next)
	c.Invalidate(next.version) // it may be newer than any seen
	return next, nil
}

// Sync makes the value at least as new as the database at this moment:
// every change committed before Sync was called is honoured by the value
// Get returns afterwards (see the package doc). Call it before a write
// that validates against the value. On an engine whose database other
// processes may share (PostgreSQL) it reads the counter, one single-row
// query, and reloads the value when it is older; on SQLite it does
// nothing. Unlike Get, it does not fall back on the previous value: an
// error (the counter or the value could not be read) means the value may
// be stale, and the write should fail.
func (c *Value[V]) Sync(ctx context.Context) error {
	if !c.w.shared {
		return nil
	}
	v, err := c.w.current(ctx)
	if err != nil {
		return err
	}
	c.Invalidate(v)
	if l := c.cur.Load(); l != nil && l.version >= v {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.cur.Load(); l != nil && l.version >= v {
		return nil // loaded while this call waited
	}
	_, err = c.loadLocked(ctx)
	return err
}
