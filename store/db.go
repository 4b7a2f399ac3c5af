package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// DB is a handle on the tenantkit database: SQLite (one writer connection and
// a pool of readers) or PostgreSQL (a pgx pool). It is safe for concurrent
// use. Outside a transaction, Query and QueryRow read from the reader pool
// and Exec writes through the writer; a write that returns rows
// (INSERT … RETURNING) belongs in Tx.
type DB struct {
	eng     engine
	dialect Dialect
	schema  string
	clock   func() time.Time
	logger  *slog.Logger

	// background is the DB of background work (Background): this one,
	// or on PostgreSQL a view over the pool reserved for it.
	background *DB
	// view: this DB is another's Background view; Close leaves it to that
	// one.
	view bool

	*dbShared // shared with the Background view
}

// dbShared is what a DB and its Background view share: hooks, listeners
// and the version listener.
type dbShared struct {
	mu        sync.RWMutex
	emitHooks []EmitHook
	afterTx   []func(context.Context, []Event)
	onClose   []func()

	watch watchers // WatchVersions's listener

	eventNotices eventNotices // WatchEventLog's watchers, NotifyEventCommits
}

// Options tunes a DB. The zero value is ready to use.
type Options struct {
	// Clock returns the current time. Defaults to time.Now. Tests set it
	// to control timestamps.
	Clock func() time.Time
	// Logger receives warnings (transaction retries). Defaults to
	// slog.Default().
	Logger *slog.Logger
	// MaxReaders bounds the SQLite reader pool or the PostgreSQL request
	// pool: the connections of request handlers and of job workers' own
	// queries. Defaults to 8 readers on SQLite; on PostgreSQL to
	// pool_max_conns when the URL sets it, else DefaultMaxConns.
	MaxReaders int
	// BackgroundConns bounds the PostgreSQL pool reserved for the job
	// engine's own work (Background): its listener, leader election,
	// fetches, completions, lease renewals and sweeps. Defaults to
	// DefaultBackgroundConns. Ignored on SQLite, whose background work
	// shares the single writer. -1 shares the request pool (with
	// FromPool, the host's) instead of opening a second one.
	BackgroundConns int
}

// engine is what an opened database provides. sqlEngine (database/sql,
// used for SQLite) and pgxEngine implement it.
type engine interface {
	exec(ctx context.Context, sql string, args []any) (int64, error)
	query(ctx context.Context, sql string, args []any) (Rows, error)
	queryRow(ctx context.Context, sql string, args []any) Row
	begin(ctx context.Context, readOnly bool) (txEngine, error)
	prepare(ctx context.Context, sql string) error
	lock(ctx context.Context, key int64) (unlock func(), err error)
	claim(ctx context.Context, name, value int32) (release func(), conflict bool, err error)
	ping(ctx context.Context) error
	// outcomeUnknown reports whether a failed statement outside a
	// transaction (or a COMMIT) was sent and never answered, so that it
	// may have committed.
	outcomeUnknown(err error) bool
	poolStats() PoolStats
	close() error
}

// PoolStats is what a DB's connection pool holds now and how often a
// query waited for a connection.
type PoolStats struct {
	// Open, InUse and Idle count the pool's connections; Max is its limit.
	Open, InUse, Idle, Max int
	// Waits counts the queries that waited for a free connection.
	Waits int64
	// WaitTime is how long they waited in all: WaitTime over Waits is the
	// mean wait, and its growth over a run tells a pool too small for the
	// load from statements that got slower.
	WaitTime time.Duration
}

// PoolStats returns the figures of the pool the DB's queries use (on
// SQLite, the writer's single connection).
func (db *DB) PoolStats() PoolStats { return db.eng.poolStats() }

type txEngine interface {
	exec(ctx context.Context, sql string, args []any) (int64, error)
	query(ctx context.Context, sql string, args []any) (Rows, error)
	queryRow(ctx context.Context, sql string, args []any) Row
	commit(ctx context.Context) error
	rollback(ctx context.Context) error
	driverTx() any
}

type opener func(ctx context.Context, url string, opts Options) (*DB, error)

// openers maps a URL scheme to its engine; each engine's build-tagged file
// registers itself, so a host can leave one engine out of its binary with
// the tags tenantkit_nosqlite or tenantkit_nopostgres.
var openers = map[string]opener{}

// Open opens a database by URL:
//
//	sqlite:PATH            a file (created if missing), WAL mode
//	sqlite::memory:        an in-memory database on one shared connection
//	postgres://…           PostgreSQL through a pgx pool (postgresql:// too)
//
// Open only connects; it starts no goroutines. Call Migrate before use.
func Open(ctx context.Context, url string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	scheme, _, ok := strings.Cut(url, ":")
	if !ok {
		return nil, fmt.Errorf("store: open %q: want sqlite:PATH or postgres://…", redact(url))
	}
	if scheme == "postgresql" {
		scheme = "postgres"
	}
	open, ok := openers[scheme]
	if !ok {
		return nil, fmt.Errorf("store: open: engine %q is unknown or left out of this build", scheme)
	}
	return open(ctx, url, *opts)
}

func newDB(eng engine, d Dialect, schema string, opts Options) *DB {
	db := &DB{eng: eng, dialect: d, schema: schema, clock: opts.Clock, logger: opts.Logger, dbShared: &dbShared{}}
	db.background = db
	if db.clock == nil {
		db.clock = time.Now
	}
	if db.logger == nil {
		db.logger = slog.Default()
	}
	return db
}

// redact hides the password of a database URL in error messages.
func redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return url
	}
	userinfo := url[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return url[:scheme+3] + user + ":xxxxx" + url[at:]
	}
	return url
}

// Close stops the version listener (WatchVersions) and closes the
// database.
func (db *DB) Close() error {
	if db.view {
		return nil // the DB it was made from closes it
	}
	db.mu.Lock()
	onClose := db.onClose
	db.onClose = nil
	db.mu.Unlock()
	for _, f := range slices.Backward(onClose) {
		f()
	}
	db.stopWatching()
	return db.eng.close()
}

// Background returns the DB of the process's background work, the job
// engine's own queries (its listener, leader election, fetches,
// completions, lease renewals, sweeps), which must not wait behind
// requests for a connection: on PostgreSQL a DB over a pool of its own
// (Options.BackgroundConns), sharing this DB's hooks, listeners and
// version listener, closed by this DB's Close (its own Close does
// nothing); on SQLite, whose writes all go through one connection, the DB
// itself.
func (db *DB) Background() *DB { return db.background }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.eng.ping(ctx) }

// Dialect describes the engine.
func (db *DB) Dialect() Dialect { return db.dialect }

// Schema is the PostgreSQL schema the tables live in (the first entry of
// the search path); empty on SQLite.
func (db *DB) Schema() string { return db.schema }

// Now returns the current time, UTC, truncated to microseconds (the
// precision both engines store).
func (db *DB) Now() time.Time { return db.clock().UTC().Truncate(time.Microsecond) }

// Logger is the logger the DB was opened with.
func (db *DB) Logger() *slog.Logger { return db.logger }

// Exec runs a statement outside a transaction, on the writer.
func (db *DB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	args, _ = withoutPlanEachRun(args)
	n, err := db.eng.exec(ctx, sql, args)
	return n, db.dialect.Classify(err)
}

// Query runs a read outside a transaction, on the reader pool. Its first
// argument may be PlanEachRun.
func (db *DB) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	rows, err := db.eng.query(ctx, sql, args)
	if err != nil {
		return nil, db.dialect.Classify(err)
	}
	return classifiedRows{rows, db.dialect}, nil
}

// QueryRow runs a single-row read outside a transaction, on the reader
// pool. Its first argument may be PlanEachRun.
func (db *DB) QueryRow(ctx context.Context, sql string, args ...any) Row {
	return classifiedRow{db.eng.queryRow(ctx, sql, args), db.dialect}
}

// classifiedRow and classifiedRows pass every error through the dialect.
type classifiedRow struct {
	r Row
	d Dialect
}

func (r classifiedRow) Scan(dest ...any) error { return r.d.Classify(r.r.Scan(dest...)) }

type classifiedRows struct {
	Rows
	d Dialect
}

func (r classifiedRows) Scan(dest ...any) error { return r.d.Classify(r.Rows.Scan(dest...)) }
func (r classifiedRows) Err() error             { return r.d.Classify(r.Rows.Err()) }
func (r classifiedRows) Close() error           { return r.d.Classify(r.Rows.Close()) }

// maxTxAttempts bounds how often Tx runs its function when the engine
// reports a transient conflict (SQLite busy, PostgreSQL serialization
// failure or deadlock).
const maxTxAttempts = 5

// Tx runs fn in a write transaction and commits when it returns nil. It
// rolls back when fn returns an error or panics (the panic is re-raised).
//
// When the engine reports a transient conflict, Tx rolls back and runs fn
// again, up to 5 times with a short jittered backoff, so fn must not have
// effects outside the transaction; use tx.AfterCommit for those.
//
// Events emitted with tx.Emit are written in the same transaction; after a
// successful commit the AfterCommit functions run, then the listeners
// registered with OnCommit receive the transaction's events.
func (db *DB) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	return db.runTx(ctx, false, fn)
}

// ReadTx runs fn in a read-only transaction on the reader pool, for reads
// that must see one consistent snapshot (a page and its total): on
// PostgreSQL at REPEATABLE READ, so that every statement sees the
// snapshot of the first; on SQLite a read transaction does.
func (db *DB) ReadTx(ctx context.Context, fn func(tx *Tx) error) error {
	return db.runTx(ctx, true, fn)
}

func (db *DB) runTx(ctx context.Context, readOnly bool, fn func(tx *Tx) error) error {
	for attempt := 1; ; attempt++ {
		tx, err := db.runTxOnce(ctx, readOnly, fn)
		if err == nil {
			for _, f := range tx.afterCommit {
				f()
			}
			if len(tx.events) > 0 {
				db.eventsCommitted()
				db.mu.RLock()
				listeners := db.afterTx
				db.mu.RUnlock()
				for _, l := range listeners {
					l(ctx, tx.events)
				}
			}
			return nil
		}
		if !errors.Is(err, errRetryable) || attempt == maxTxAttempts || ctx.Err() != nil {
			return err
		}
		db.logger.WarnContext(ctx, "store: transaction conflict, retrying", "attempt", attempt, "err", err)
		backoff := time.Duration(attempt*attempt) * 2 * time.Millisecond
		select {
		case <-time.After(backoff + rand.N(backoff)):
		case <-ctx.Done():
			return err
		}
	}
}

// autocommit runs write, a single statement on db, outside a
// transaction: the engine's implicit transaction commits it as it
// returns. A transient conflict is retried as runTx retries one; write
// must be safe to run again after a failure (a statement that failed
// changed nothing).
func (db *DB) autocommit(ctx context.Context, write func(ctx context.Context, q Querier) error) error {
	for attempt := 1; ; attempt++ {
		err := write(ctx, db)
		if err != nil && db.eng.outcomeUnknown(err) {
			return &kindError{kind: ErrCommitUnknown, err: err}
		}
		if err == nil || !errors.Is(err, errRetryable) || attempt == maxTxAttempts || ctx.Err() != nil {
			return err
		}
		db.logger.WarnContext(ctx, "store: statement conflict, retrying", "attempt", attempt, "err", err)
		backoff := time.Duration(attempt*attempt) * 2 * time.Millisecond
		select {
		case <-time.After(backoff + rand.N(backoff)):
		case <-ctx.Done():
			return err
		}
	}
}

func (db *DB) runTxOnce(ctx context.Context, readOnly bool, fn func(tx *Tx) error) (tx *Tx, err error) {
	te, err := db.eng.begin(ctx, readOnly)
	if err != nil {
		return nil, fmt.Errorf("store: begin: %w", db.dialect.Classify(err))
	}
	tx = &Tx{db: db, eng: te, now: db.Now(), readOnly: readOnly}
	defer func() {
		if p := recover(); p != nil {
			_ = te.rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		_ = te.rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	for i := 0; i < len(tx.beforeCommit); i++ { // a hook may add another
		if err := tx.beforeCommit[i](ctx); err != nil {
			_ = te.rollback(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if err := te.commit(ctx); err != nil {
		_ = te.rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: commit: %w", db.dialect.Classify(err))
	}
	return tx, nil
}

// OnEmit registers a hook that runs inside the emitting transaction for
// every event, after the event row is written. A hook error rolls the
// transaction back. The job engine uses it to enqueue one delivery job per
// subscriber in the same transaction, which is what makes delivery
// at-least-once: the event and its jobs commit or vanish together.
func (db *DB) OnEmit(h EmitHook) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.emitHooks = append(db.emitHooks, h)
}

// OnCommit registers a listener called after every commit of a
// transaction that emitted events, with those events, in this process only
// (for example to drop a cache at once; other processes learn of changes
// through event subscriptions). It must not block.
func (db *DB) OnCommit(l func(ctx context.Context, events []Event)) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.afterTx = append(db.afterTx, l)
}

// OnClose registers f to run when Close begins, while the database is still
// open (a process removing its row from a table of live processes). The
// functions run in reverse order of registration, once.
func (db *DB) OnClose(f func()) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.onClose = append(db.onClose, f)
}

// WithLock runs fn while holding a database-wide lock identified by name:
// a PostgreSQL advisory lock (so several processes serialise), or the
// process-local writer on SQLite. Migrations use it.
func (db *DB) WithLock(ctx context.Context, name string, fn func() error) error {
	unlock, err := db.eng.lock(ctx, lockKey(name))
	if err != nil {
		return fmt.Errorf("store: lock %q: %w", name, err)
	}
	defer unlock()
	return fn()
}

// Claim records, for as long as the process keeps it (until release is
// called), that name has value on this database, and reports whether
// another process holds a claim to name with a different value (conflict).
// Processes claiming the same value coexist. On PostgreSQL a claim is a
// shared session-level advisory lock on a connection of its own (outside
// the pools, held until release; a process that dies loses its claims
// with its connection); SQLite's database belongs to one
// process, so there no claim conflicts. A server uses it to find out at
// start whether another on the same database is configured differently
// (examples/server: where attachments' files are kept).
func (db *DB) Claim(ctx context.Context, name, value string) (release func(), conflict bool, err error) {
	release, conflict, err = db.eng.claim(ctx, claimKey(name), claimKey(value))
	if err != nil {
		return nil, false, fmt.Errorf("store: claim %q: %w", name, err)
	}
	return release, conflict, nil
}

// claimKey hashes a claim's name or value into 31 bits (FNV-1a), one half
// of a two-key advisory lock, kept positive so that it reads back from
// pg_locks' unsigned columns as it was given.
func claimKey(s string) int32 {
	return int32(lockKey(s) & 0x7fffffff)
}

// lockKey hashes a lock name into PostgreSQL's advisory lock key space
// (FNV-1a, 64 bit).
func lockKey(name string) int64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return int64(h)
}

// Prepare prepares a statement that write transactions will run often, so
// that Tx.Exec of the same text skips parsing it: on SQLite preparing a
// long statement can cost more than running it. It does nothing on
// PostgreSQL, whose driver caches every statement itself. Call it outside
// a transaction (on SQLite it needs the writer's one connection); it is
// cheap once the text is prepared.
func (db *DB) Prepare(ctx context.Context, sql string) error {
	return db.dialect.Classify(db.eng.prepare(ctx, sql))
}
