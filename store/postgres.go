//go:build !tenantkit_nopostgres

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

func init() {
	openers["postgres"] = openPostgres
}

// DefaultMaxConns is the size of the PostgreSQL request pool when neither
// Options.MaxReaders nor the URL's pool_max_conns sets it: two
// connections per CPU this process may use (GOMAXPROCS), at least 4 (see
// the package documentation, "Connections").
func DefaultMaxConns() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// DefaultBackgroundConns is the size of the PostgreSQL pool reserved for
// the job engine's own work (Options.BackgroundConns): one connection its
// listener holds, and three for its short queries (the queues' fetches,
// completions, leader election, lease renewals and sweeps), which wait
// for each other for a millisecond or so, never behind requests.
const DefaultBackgroundConns = 4

// openPostgres opens a pgx pool on a postgres:// URL, and a second one
// for background work. Extra URL parameters are passed to the server
// (search_path=myschema puts the tables there).
func openPostgres(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres %s: %w", redact(url), err)
	}
	switch {
	case opts.MaxReaders > 0:
		cfg.MaxConns = int32(opts.MaxReaders)
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = int32(DefaultMaxConns())
	}
	cfg.AfterConnect = configurePgxConn
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres %s: %w", redact(url), err)
	}
	db, err := fromPool(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	db.eng.(*pgxEngine).owned = true
	return db, nil
}

// backgroundPool opens the pool of background work: pool's configuration
// (server, credentials, connection hooks) with opts.BackgroundConns
// connections, none opened before it is used.
func backgroundPool(pool *pgxpool.Pool, opts Options) (*pgxpool.Pool, error) {
	cfg := pool.Config()
	cfg.MaxConns = int32(cmp.Or(opts.BackgroundConns, DefaultBackgroundConns))
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "tenantkit background"
	}
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// configurePgxConn makes timestamptz values scan in UTC, matching SQLite.
func configurePgxConn(_ context.Context, c *pgx.Conn) error {
	c.TypeMap().RegisterType(&pgtype.Type{
		Name:  "timestamptz",
		OID:   pgtype.TimestamptzOID,
		Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
	})
	return nil
}

// FromPool wraps a pgx pool the host already has. Scanned times are in UTC
// as with Open; Close leaves the pool open. Background work gets a second
// pool made from the host pool's configuration (Options.BackgroundConns
// connections, opened as they are needed, closed by Close), unless
// BackgroundConns is -1: then it shares the host's pool.
func FromPool(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	return fromPool(ctx, pool, *opts)
}

func fromPool(ctx context.Context, pool *pgxpool.Pool, opts Options) (*DB, error) {
	var schema *string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	if schema == nil {
		return nil, errors.New("store: open postgres: the search_path names no existing schema")
	}
	eng := &pgxEngine{pool: pool}
	db := newDB(eng, postgresDialect{}, *schema, opts)
	if opts.BackgroundConns < 0 {
		return db, nil
	}
	bg, err := backgroundPool(pool, opts)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: background pool: %w", err)
	}
	eng.background = bg
	view := *db
	view.eng, view.view = &pgxEngine{pool: bg}, true
	view.background = &view
	db.background = &view
	return db, nil
}

// PgxPool returns the pgx pool on PostgreSQL, for adapters such as the job
// engine's pgx driver. It reports false on SQLite.
func (db *DB) PgxPool() (*pgxpool.Pool, bool) {
	e, ok := db.eng.(*pgxEngine)
	if !ok {
		return nil, false
	}
	return e.pool, true
}

type pgxEngine struct {
	pool  *pgxpool.Pool
	owned bool // pool is closed by close
	// background is the pool of the DB's Background view, which close
	// always closes (the DB opened it).
	background *pgxpool.Pool
}

func (e *pgxEngine) exec(ctx context.Context, q string, args []any) (int64, error) {
	tag, err := e.pool.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (e *pgxEngine) query(ctx context.Context, q string, args []any) (Rows, error) {
	rows, err := e.pool.Query(ctx, q, pgxArgs(args)...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

func (e *pgxEngine) queryRow(ctx context.Context, q string, args []any) Row {
	return pgxRow{e.pool.QueryRow(ctx, q, pgxArgs(args)...)}
}

// pgxArgs turns a leading PlanEachRun into pgx's mode that runs the
// statement unnamed, planned for its values at every run.
func pgxArgs(args []any) []any {
	if rest, ok := withoutPlanEachRun(args); ok {
		return append([]any{pgx.QueryExecModeCacheDescribe}, rest...)
	}
	return args
}

// prepare does nothing: pgx prepares and caches every statement it runs.
func (e *pgxEngine) prepare(context.Context, string) error { return nil }

func (e *pgxEngine) begin(ctx context.Context, readOnly bool) (txEngine, error) {
	opts := pgx.TxOptions{}
	if readOnly {
		// REPEATABLE READ: every read of the transaction sees the snapshot
		// of its first (READ COMMITTED takes one per statement). A
		// read-only transaction at this level is never refused with a
		// serialization failure.
		opts.AccessMode, opts.IsoLevel = pgx.ReadOnly, pgx.RepeatableRead
	}
	tx, err := e.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &pgxTx{tx: tx}, nil
}

// claim takes the shared two-key advisory lock (name, value) on a
// connection of its own, outside the pools (held for as long as the claim,
// typically the process's life: it would otherwise take a pool's
// connection for good), then looks in pg_locks for a lock of name with
// another value in this database (from another process: this one's are
// released as they end). Closing the connection releases the lock.
func (e *pgxEngine) claim(ctx context.Context, name, value int32) (func(), bool, error) {
	conn, err := e.connect(ctx, "tenantkit claim")
	if err != nil {
		return nil, false, err
	}
	// The lock is let go before the connection closes: a closed
	// connection's server process ends, and drops its locks, only after
	// Close has returned, so a claim made right after a release could
	// still see the released one (TestClaim failed so once in CI).
	release := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(cctx, "SELECT pg_advisory_unlock_shared($1, $2)", name, value)
		_ = conn.Close(cctx)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1, $2)", name, value); err != nil {
		release()
		return nil, false, err
	}
	var conflict bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1::bigint::oid AND objid <> $2::bigint::oid)`, name, value).Scan(&conflict)
	if err != nil {
		release()
		return nil, false, err
	}
	return release, conflict, nil
}

// lock takes a session-level advisory lock on a connection of its own,
// outside the pools, as claim does: the work done under the lock
// (migrations, the bootstrap) has every connection of the request pool,
// so a pool of one (pool_max_conns=1) does not wait for itself. Closing
// the connection releases the lock, whatever the unlock's outcome.
func (e *pgxEngine) lock(ctx context.Context, key int64) (func(), error) {
	conn, err := e.connect(ctx, "tenantkit lock")
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(cctx, "SELECT pg_advisory_unlock($1)", key)
		_ = conn.Close(cctx)
	}, nil
}

func (e *pgxEngine) ping(ctx context.Context) error { return e.pool.Ping(ctx) }

func (e *pgxEngine) poolStats() PoolStats {
	st := e.pool.Stat()
	return PoolStats{Open: int(st.TotalConns()), InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()),
		Max: int(st.MaxConns()), Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime()}
}

func (e *pgxEngine) close() error {
	if e.background != nil {
		e.background.Close()
	}
	if e.owned {
		e.pool.Close()
	}
	return nil
}

type pgxRows struct{ pgx.Rows }

func (r pgxRows) Scan(dest ...any) error { return inUTC(r.Rows.Scan(dest...), dest) }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

type pgxRow struct{ pgx.Row }

func (r pgxRow) Scan(dest ...any) error { return inUTC(r.Row.Scan(dest...), dest) }

// inUTC puts scanned times in UTC. Pools opened by Open already scan
// timestamptz in UTC; a host's pool (FromPool) scans in time.Local.
func inUTC(err error, dest []any) error {
	if err != nil {
		return err
	}
	for _, d := range dest {
		switch t := d.(type) {
		case *time.Time:
			*t = t.UTC()
		case **time.Time:
			if *t != nil {
				u := (*t).UTC()
				*t = &u
			}
		}
	}
	return nil
}

// pgxTx is a transaction on PostgreSQL. Statements queued with later
// (Tx.ExecLater) wait in pending and go to the server in one pipeline with
// the transaction's next statement (pgx.Batch: one round trip for all of
// them), which reads their results first: the first error among them is
// that statement's error, and it stays the transaction's (failed), which
// commit returns too: PostgreSQL has aborted the transaction anyway.
type pgxTx struct {
	tx      pgx.Tx
	pending []pendingStmt
	failed  error
}

// pendingStmt is a statement queued by later.
type pendingStmt struct {
	sql  string
	args []any
}

func (t *pgxTx) later(sql string, args []any) { t.pending = append(t.pending, pendingStmt{sql, args}) }

// send sends the pending statements and q in one pipeline and reads the
// pending ones' results; on their error the results are closed.
func (t *pgxTx) send(ctx context.Context, q string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.pending)+1)}
	for _, p := range t.pending {
		b.Queue(p.sql, p.args...)
	}
	n := len(t.pending)
	t.pending = t.pending[:0]
	if q != "" {
		b.Queue(q, args...)
	}
	br := t.tx.SendBatch(ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			t.failed = err
			return nil, err
		}
	}
	return br, nil
}

// flush sends the pending statements on their own.
func (t *pgxTx) flush(ctx context.Context) error {
	if t.failed != nil {
		return t.failed
	}
	if len(t.pending) == 0 {
		return nil
	}
	br, err := t.send(ctx, "", nil)
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		t.failed = err
		return err
	}
	return nil
}

func (t *pgxTx) exec(ctx context.Context, q string, args []any) (int64, error) {
	if t.failed != nil {
		return 0, t.failed
	}
	if len(t.pending) == 0 {
		tag, err := t.tx.Exec(ctx, q, args...)
		return tag.RowsAffected(), err
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

func (t *pgxTx) query(ctx context.Context, q string, args []any) (Rows, error) {
	if t.failed != nil {
		return nil, t.failed
	}
	if len(t.pending) == 0 {
		rows, err := t.tx.Query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		return pgxRows{rows}, nil
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return batchRows{pgxRows{rows}, br}, nil
}

func (t *pgxTx) queryRow(ctx context.Context, q string, args []any) Row {
	if t.failed != nil {
		return errRow{t.failed}
	}
	if len(t.pending) == 0 {
		return pgxRow{t.tx.QueryRow(ctx, q, args...)}
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{pgxRow{br.QueryRow()}, br}
}

func (t *pgxTx) commit(ctx context.Context) error {
	if err := t.flush(ctx); err != nil {
		return err // no COMMIT was sent: the transaction did not commit
	}
	err := t.tx.Commit(ctx)
	if err != nil && outcomeUnknown(err) {
		return &kindError{kind: ErrCommitUnknown, err: err}
	}
	return err
}

func (e *pgxEngine) outcomeUnknown(err error) bool { return outcomeUnknown(err) }

// outcomeUnknown reports whether a failed COMMIT, or statement outside a
// transaction, may have committed: the server did not answer it (an
// answer is a PgError) and pgx cannot say it was never sent. pgx marks
// "conn closed" safe to retry even when the connection closed while it
// waited for the answer, so that one counts as unknown.
func outcomeUnknown(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return false
	}
	return !pgconn.SafeToRetry(err) || errors.Is(err, pgconn.ErrConnClosed)
}

func (t *pgxTx) rollback(ctx context.Context) error {
	t.pending = nil
	return t.tx.Rollback(ctx)
}

// driverTx sends the pending statements first, so that what the caller
// runs on the pgx.Tx comes after them; an error fails the transaction
// (the next statement and commit return it).
func (t *pgxTx) driverTx() any {
	_ = t.flush(context.Background())
	return t.tx
}

// batchRows are the rows of a statement sent after pending ones: closing
// them closes the pipeline's results.
type batchRows struct {
	pgxRows
	br pgx.BatchResults
}

func (r batchRows) Close() error {
	err := r.pgxRows.Close()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRow is the row of a statement sent after pending ones: scanning it
// closes the pipeline's results.
type batchRow struct {
	pgxRow
	br pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.pgxRow.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a Row that failed before it was read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type postgresDialect struct{}

func (postgresDialect) Name() string { return "postgres" }

func (postgresDialect) Notifies() bool { return true }

// eventWatermark implements eventLogDialect: the oldest transaction
// still running, in the statement's own snapshot (so the rows a statement
// reads and its watermark agree).
func (postgresDialect) eventWatermark() string {
	return "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
}

func (postgresDialect) JSONText(col, key string) string {
	return "(" + col + " ->> '" + strings.ReplaceAll(key, "'", "''") + "')"
}

// lower() folds non-ASCII letters under the UTF-8 locales PostgreSQL is
// normally initialised with (C.UTF-8, en_US.UTF-8, …).
func (postgresDialect) ContainsFold(col, param string) string {
	return "lower(" + col + ") LIKE " + param + ` ESCAPE '\'`
}

func (postgresDialect) JSONValue(col, key string) string {
	return "(" + col + " -> " + quoteText(key) + ")"
}

func (d postgresDialect) BoundedJSONValue(col, key string, maxBytes int) string {
	v := d.JSONValue(col, key)
	return "(CASE WHEN octet_length(" + v + "::text) <= " + strconv.Itoa(maxBytes) + " THEN " + v + " END)"
}

// JSONValueArg binds x as a jsonb literal.
func (postgresDialect) JSONValueArg(x any) (any, string) {
	b, _ := json.Marshal(x)
	return string(b), "::jsonb"
}

func (d postgresDialect) JSONListHas(col, key, param string, x any) (string, any) {
	b, _ := json.Marshal([]any{x})
	return d.JSONValue(col, key) + " @> " + param + "::jsonb", string(b)
}

func (d postgresDialect) JSONValuesContainFold(col, param string) string {
	return "EXISTS (SELECT 1 FROM jsonb_each_text(" + col + ") v WHERE " + d.ContainsFold("v.value", param) + ")"
}

func (d postgresDialect) JSONScalar(col, key string, maxText int) string {
	v := d.JSONValue(col, key)
	return "(jsonb_typeof(" + v + ") IN ('number', 'boolean') OR jsonb_typeof(" + v + ") = 'string' AND octet_length(" +
		v + " #>> '{}') <= " + strconv.Itoa(maxText) + ")"
}

func (postgresDialect) SingleWriter() bool { return false }

func (postgresDialect) ForUpdate() string { return " FOR UPDATE" }

func (postgresDialect) IndexedBy(table, _ string) string { return table }

func (postgresDialect) SubqueryFence() string { return " OFFSET 0" }

func (postgresDialect) JSONArrayElements(array string) string {
	return `LATERAL (SELECT e.value, e.n - 1 AS key FROM json_array_elements(` + array + `) WITH ORDINALITY AS e(value, n))`
}

func (postgresDialect) LockForWrites(table string) string {
	return "LOCK TABLE " + table + " IN ROW EXCLUSIVE MODE"
}

// Classify maps SQLSTATE codes to error kinds.
func (postgresDialect) Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return withKind(ErrNotFound, err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case pe.Code == "23505": // unique_violation
		return withKind(ErrConflict, err)
	case pe.Code == "23503", pe.Code == "23514", pe.Code == "23502": // foreign key, check, not null
		return withKind(ErrInvalid, err)
	case strings.HasPrefix(pe.Code, "22"): // data exception: bad number, bad JSON, …
		return withKind(ErrInvalid, err)
	case pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock
		return withKind(errRetryable, conflictDetail(err, pe))
	}
	return err
}

// conflictDetail adds to a deadlock's or a serialization failure's
// message what PostgreSQL tells the client of it beyond its code: where
// it happened ("while updating tuple (0,5) in relation …") and, for a
// deadlock, which process waited for which, so that the store's retry
// warning names the table the transactions met on. Neither carries row
// values: they name relations, tuples and processes, and within a
// trigger its statement as written (the server's own log has the
// statements that met).
func conflictDetail(err error, pe *pgconn.PgError) error {
	var extra []string
	for _, s := range []string{pe.Where, pe.Detail} {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			extra = append(extra, s)
		}
	}
	if len(extra) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(extra, "; "))
}

// PostgresDialect is the Dialect of PostgreSQL databases, for packages
// that keep SQL of their own per engine (keyed by the Dialect value a
// Querier returns).
var PostgresDialect Dialect = postgresDialect{}
