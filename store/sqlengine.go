package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"sync"
)

// sqlEngine runs on database/sql: a single-connection writer (SQLite has
// one writer; BEGIN IMMEDIATE takes the write lock up front) and a reader
// pool. For an in-memory database both are the same one connection.
type sqlEngine struct {
	write, read *sql.DB
	// mu serialises WithLock among the handles on one file in this
	// process; across processes the immediate write transactions
	// serialise.
	mu *sync.Mutex
	// prepared are statements prepared on the writer (DB.Prepare), by
	// text; write transactions run those texts through them.
	prepared sync.Map // string → *sql.Stmt
	// reads are statements reads ran (in a read transaction or alone,
	// DB.Query), prepared on the reader pool, so that a read does not parse
	// its statement again: parsing a records list's statements cost SQLite
	// about a third of the list.
	reads readStmts
	// stopBackground stops work the engine runs in the background (a file
	// database's checkpoints) before the connections close; nil: none.
	stopBackground func() error
}

// maxReadStmts bounds the statement texts readStmts keeps; past it, reads
// run unprepared (texts are the service's own, a few per query shape).
const maxReadStmts = 1024

// readStmts caches statements prepared on the reader pool, by text, for
// read transactions and reads outside one. A text is prepared on the pool
// in the background the first time a read runs it (that read runs it unprepared): preparing on the pool from
// inside a read transaction could wait for a reader connection while
// holding one. Later reads reuse it, each reader connection preparing it
// once on its own connection (sql.Tx.StmtContext).
type readStmts struct {
	mu     sync.Mutex
	m      map[string]*sql.Stmt // nil value: being prepared
	closed bool
	// preparing counts the background preparations, which close waits
	// for (cancelling those still waiting for a connection), so that none
	// touches the database after it is closed.
	preparing sync.WaitGroup
	cancel    context.CancelFunc
	ctx       context.Context
}

// get returns q's statement, or nil (not prepared yet, being prepared, or
// the cache is full), starting its preparation on pool when new.
func (c *readStmts) get(pool *sql.DB, q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stmt, ok := c.m[q]; ok || c.closed || len(c.m) >= maxReadStmts {
		return stmt
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
		c.ctx, c.cancel = context.WithCancel(context.Background())
	}
	c.m[q] = nil
	c.preparing.Add(1)
	go func() {
		defer c.preparing.Done()
		stmt, err := pool.PrepareContext(c.ctx, sqliteText(q))
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err != nil:
			delete(c.m, q) // a later read tries again
		case c.closed:
			_ = stmt.Close()
		default:
			c.m[q] = stmt
		}
	}()
	return nil
}

func (c *readStmts) close() {
	c.mu.Lock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.preparing.Wait() // each closes its statement, seeing closed
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, stmt := range c.m {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
	c.m = nil
}

// limitParam finds a LIMIT or OFFSET whose value is a parameter.
var limitParam = regexp.MustCompile(`(?i)\b(LIMIT|OFFSET)(\s+)([?$:@])`)

// sqliteText returns the text SQLite prepares for q, a statement kept
// prepared: q with each LIMIT and OFFSET parameter written +param. SQLite
// (3.54) plans a LIMIT whose value is a bare parameter with the bound value
// and marks the statement to be prepared again whenever that parameter is
// bound, so a kept paged statement (a records list's LIMIT $n OFFSET $m)
// was parsed and planned again on every run, after binding
// (sqlite3Reprepare). The unary plus, a no-op on the value, makes SQLite
// plan without it. Texts run unprepared keep their own text: they are
// parsed on each run anyway.
func sqliteText(q string) string {
	return limitParam.ReplaceAllString(q, "${1}${2}+${3}")
}

// fileLocks holds one WithLock mutex per database file.
var fileLocks sync.Map // path → *sync.Mutex

func lockFor(path string) *sync.Mutex {
	if path == ":memory:" {
		return &sync.Mutex{} // every in-memory database is its own
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	mu, _ := fileLocks.LoadOrStore(path, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

func (e *sqlEngine) exec(ctx context.Context, q string, args []any) (int64, error) {
	res, err := e.write.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query and queryRow run a read outside a transaction (DB.Query, a records
// list, which is one statement) through the reader pool's statements as
// read transactions do: database/sql would otherwise prepare the text on
// every run, and preparing was about a third of a records list.
func (e *sqlEngine) query(ctx context.Context, q string, args []any) (Rows, error) {
	args, _ = withoutPlanEachRun(args)
	if stmt := e.readStmt(q); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return e.read.QueryContext(ctx, q, args...)
}

func (e *sqlEngine) queryRow(ctx context.Context, q string, args []any) Row {
	args, _ = withoutPlanEachRun(args)
	if stmt := e.readStmt(q); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return e.read.QueryRowContext(ctx, q, args...)
}

// readStmt returns q prepared on the reader pool, or nil: not prepared
// yet (its preparation starts), or an in-memory database, whose one
// connection keeps the statements it runs by itself (stmtcache.go).
func (e *sqlEngine) readStmt(q string) *sql.Stmt {
	if e.read == e.write {
		return nil
	}
	return e.reads.get(e.read, q)
}

func (e *sqlEngine) begin(ctx context.Context, readOnly bool) (txEngine, error) {
	pool := e.write
	if readOnly {
		pool = e.read
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if readOnly {
		if e.read == e.write {
			return sqlTx{tx: tx}, nil // one connection (in memory): nothing to share
		}
		return sqlTx{tx: tx, reads: &e.reads, pool: e.read}, nil
	}
	return sqlTx{tx: tx, prepared: &e.prepared}, nil
}

// prepare prepares q on the writer once. It must not run inside a write
// transaction: the writer's one connection would be busy.
func (e *sqlEngine) prepare(ctx context.Context, q string) error {
	if _, ok := e.prepared.Load(q); ok {
		return nil
	}
	stmt, err := e.write.PrepareContext(ctx, sqliteText(q))
	if err != nil {
		return err
	}
	if _, loaded := e.prepared.LoadOrStore(q, stmt); loaded {
		return stmt.Close()
	}
	return nil
}

func (e *sqlEngine) lock(ctx context.Context, _ int64) (func(), error) {
	e.mu.Lock()
	return e.mu.Unlock, nil
}

// claim never conflicts: the database belongs to this process.
func (e *sqlEngine) claim(context.Context, int32, int32) (func(), bool, error) {
	return func() {}, false, nil
}

func (e *sqlEngine) ping(ctx context.Context) error { return e.write.PingContext(ctx) }

// outcomeUnknown is false: SQLite commits in the process, which knows.
func (e *sqlEngine) outcomeUnknown(error) bool { return false }

func (e *sqlEngine) poolStats() PoolStats {
	st := e.write.Stats()
	return PoolStats{Open: st.OpenConnections, InUse: st.InUse, Idle: st.Idle, Max: st.MaxOpenConnections, Waits: st.WaitCount,
		WaitTime: st.WaitDuration}
}

func (e *sqlEngine) close() error {
	var bgErr error
	if e.stopBackground != nil {
		bgErr = e.stopBackground()
	}
	e.prepared.Range(func(_, v any) bool {
		_ = v.(*sql.Stmt).Close()
		return true
	})
	e.reads.close()
	err := e.write.Close()
	if e.read != e.write {
		if rerr := e.read.Close(); err == nil {
			err = rerr
		}
	}
	if err == nil {
		err = bgErr
	}
	return err
}

type sqlTx struct {
	tx       *sql.Tx
	prepared *sync.Map  // the engine's prepared statements; nil when read-only
	reads    *readStmts // the reader pool's statements; nil when writing
	pool     *sql.DB    // the reader pool, with reads
}

func (t sqlTx) exec(ctx context.Context, q string, args []any) (int64, error) {
	var res sql.Result
	var err error
	if stmt, ok := t.preparedStmt(q); ok {
		res, err = t.tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
	} else {
		res, err = t.tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// preparedStmt returns q's statement prepared with DB.Prepare, if any.
func (t sqlTx) preparedStmt(q string) (*sql.Stmt, bool) {
	if t.prepared == nil {
		return nil, false
	}
	v, ok := t.prepared.Load(q)
	if !ok {
		return nil, false
	}
	return v.(*sql.Stmt), true
}

// readStmt returns q prepared on the reader pool for a read transaction,
// or nil.
func (t sqlTx) readStmt(ctx context.Context, q string) *sql.Stmt {
	if t.reads == nil {
		return nil
	}
	if stmt := t.reads.get(t.pool, q); stmt != nil {
		return t.tx.StmtContext(ctx, stmt)
	}
	return nil
}

func (t sqlTx) query(ctx context.Context, q string, args []any) (Rows, error) {
	if stmt := t.readStmt(ctx, q); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

func (t sqlTx) queryRow(ctx context.Context, q string, args []any) Row {
	if stmt := t.readStmt(ctx, q); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}

func (t sqlTx) commit(context.Context) error   { return t.tx.Commit() }
func (t sqlTx) rollback(context.Context) error { return t.tx.Rollback() }
func (t sqlTx) driverTx() any                  { return t.tx }

// SQLPool returns the database/sql pool that writes go through on SQLite
// (a single connection), for adapters such as the job engine's SQLite
// driver. It reports false on PostgreSQL.
func (db *DB) SQLPool() (*sql.DB, bool) {
	e, ok := db.eng.(*sqlEngine)
	if !ok {
		return nil, false
	}
	return e.write, true
}
