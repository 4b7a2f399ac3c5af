package store

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version notifications. On an engine that notifies (PostgreSQL), a
// transaction's BumpVersion also queues a notification, on the channel
// versionChannel(schema), of "name:version"; PostgreSQL delivers it to
// every listening session when the transaction commits, and drops it when
// it rolls back. A DB listens on a connection of its own, outside its pool,
// started by the first WatchVersions: one goroutine and one connection per
// DB, reconnecting with backoff until the DB is closed. Notifications sent
// while it is not connected are lost, which is why every (re)connection
// is reported to the watchers as ("", 0): anything may have changed.
// Polling the counters (internal/vcache's check interval) stays the
// fallback, and the only mechanism on SQLite (one process).

// versionChannel names the notification channel of the version counters
// of the tables in schema: two deployments in two schemas of one database
// do not hear each other. Channel names are identifiers (at most 63
// bytes): a longer one is shortened to a hash of the schema.
func versionChannel(schema string) string {
	const prefix = "tenantkit_versions:"
	if len(prefix)+len(schema) <= 63 {
		return prefix + schema
	}
	return prefix + strconv.FormatUint(uint64(lockKey(schema)), 16)
}

// Reconnection backoff of the listener: the first retry after losing a
// connection is immediate, failed ones wait from listenBackoffMin,
// doubling up to listenBackoffMax, with jitter.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
	// listenPingEvery is how long the listener waits for a notification
	// before it checks that its connection still answers (a connection
	// cut without a reset would otherwise wait for ever).
	listenPingEvery = 15 * time.Second
)

// notifier is implemented by engines that deliver notifications across
// processes (PostgreSQL).
type notifier interface {
	// listen connects a session of its own, listens on channel, reports
	// the session's server process id to connected, then passes each
	// notification's payload to notify until the session is lost or ctx
	// ends; it closes the session before it returns.
	listen(ctx context.Context, channel string, connected func(pid uint32), notify func(payload string)) error
}

// watchers is a DB's version listener and its subscribers.
type watchers struct {
	mu      sync.Mutex
	subs    map[uint64]func(name string, version int64)
	nextID  uint64
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}

	listening  atomic.Bool
	pid        atomic.Uint32
	reconnects atomic.Int64
	lastErr    atomic.Pointer[string]
}

// WatchVersions has fn called with the name and new version of each
// version counter bump committed on the database by any process, within
// milliseconds of its commit, and with ("", 0) each time the DB's
// listener connects or reconnects: notifications may have been missed
// while it was not connected, so fn must treat every counter as possibly
// changed (read them again). Bumps of rolled-back transactions are never
// reported; a bump may be reported more than once, and this process's own
// bumps are reported too. fn runs on the listener's goroutine and must
// not block.
//
// The first call starts the listener: one goroutine and one connection
// of its own (outside the pool, through the pool's configuration,
// BeforeConnect and AfterConnect included), reconnecting with backoff,
// until Close. On an engine that does not notify (SQLite, whose database
// one process owns) fn is never called. The returned function ends the
// subscription; the listener runs on until Close.
func (db *DB) WatchVersions(fn func(name string, version int64)) (stop func()) {
	n, ok := db.eng.(notifier)
	if !ok || !db.dialect.Notifies() {
		return func() {}
	}
	w := &db.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return func() {}
	}
	if w.subs == nil {
		w.subs = map[uint64]func(string, int64){}
	}
	w.nextID++
	id := w.nextID
	w.subs[id] = fn
	if !w.started {
		w.started = true
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		go db.listenVersions(ctx, n)
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, id)
	}
}

// WatchStatus is the state of a DB's version listener (WatchVersions).
type WatchStatus struct {
	// Started: WatchVersions started the listener (always false on an
	// engine that does not notify).
	Started bool
	// Listening: its connection is up and listening now.
	Listening bool
	// PID is the server process id of its connection (0 when down).
	PID uint32
	// Reconnects counts the connections it made after its first.
	Reconnects int64
	// LastError is why its last connection failed or was lost ("" if
	// none was).
	LastError string
}

// WatchStatus reports the state of the version listener, for readiness
// checks and metrics: while Listening is false, other processes' changes
// are seen only by polling.
func (db *DB) WatchStatus() WatchStatus {
	w := &db.watch
	w.mu.Lock()
	started := w.started && !w.closed
	w.mu.Unlock()
	s := WatchStatus{Started: started, Listening: w.listening.Load(), PID: w.pid.Load(), Reconnects: w.reconnects.Load()}
	if e := w.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	return s
}

// stopWatching stops the listener (Close) and waits for it.
func (db *DB) stopWatching() {
	w := &db.watch
	w.mu.Lock()
	w.closed = true
	w.subs = nil
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// listenVersions runs the listener until ctx ends, reconnecting.
func (db *DB) listenVersions(ctx context.Context, n notifier) {
	w := &db.watch
	defer close(w.done)
	channel := versionChannel(db.schema)
	backoff := time.Duration(0)
	for first := true; ; first = false {
		if !first {
			w.reconnects.Add(1)
		}
		connected := false
		err := n.listen(ctx, channel, func(pid uint32) {
			connected = true
			// Status first, so a watcher told of the connection reads it
			// as up; then whatever happened while not listening.
			w.pid.Store(pid)
			w.listening.Store(true)
			db.notifyWatchers("", 0)
		}, func(payload string) {
			i := strings.LastIndexByte(payload, ':')
			if i < 0 {
				return
			}
			v, err := strconv.ParseInt(payload[i+1:], 10, 64)
			if err != nil {
				return
			}
			db.notifyWatchers(payload[:i], v)
		})
		w.listening.Store(false)
		w.pid.Store(0)
		if ctx.Err() != nil {
			return
		}
		msg := "connection lost"
		if err != nil {
			msg = err.Error()
		}
		w.lastErr.Store(&msg)
		if connected {
			backoff = 0 // the first retry is immediate
			db.logger.Warn("store: version listener lost its connection; reconnecting (changes are polled meanwhile)", "err", msg)
		} else {
			db.logger.Warn("store: version listener cannot connect; retrying (changes are polled meanwhile)", "err", msg, "retry_in", backoff)
		}
		if backoff > 0 {
			select {
			case <-time.After(backoff/2 + rand.N(backoff/2+1)):
			case <-ctx.Done():
				return
			}
		}
		backoff = min(max(2*backoff, listenBackoffMin), listenBackoffMax)
	}
}

func (db *DB) notifyWatchers(name string, version int64) {
	w := &db.watch
	w.mu.Lock()
	fns := make([]func(string, int64), 0, len(w.subs))
	for _, fn := range w.subs {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(name, version)
	}
}
