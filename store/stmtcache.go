//go:build !tenantkit_nosqlite

package store

import (
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// modernc parses a statement each time database/sql runs its text
// unprepared (db.ExecContext, tx.QueryContext, …). The store prepares its
// own hot statements (DB.Prepare, readStmts), but the job engine's SQLite
// driver runs its fetch, an UPDATE of about 60 lines, as text on every poll
// of every queue: parsing it was 9% of a loaded server's CPU, on the one
// writer connection (BENCHMARKS.md, "River's fetch kept prepared on the
// writer").
//
// The writer's connections therefore keep the statements they run
// prepared, by text, up to maxCachedStmts of them: each text is parsed once
// per connection. A statement still reading rows when its text runs again
// on the same connection (a query inside a loop over its own results) is
// not shared: that run prepares a statement of its own, closed after it.
// SQLite prepares with sqlite3_prepare_v2, which parses a kept statement
// again by itself when the schema it was planned against changes. The text
// prepared is sqliteText's, so that binding a LIMIT does not make SQLite
// parse the statement again.

// maxCachedStmts bounds the statements one connection keeps; past it,
// statements run as before (prepared and closed each time). The texts are
// the service's and River's own, a few hundred at most.
const maxCachedStmts = 512

// cachingConnector opens modernc connections that keep their statements.
type cachingConnector struct{ base driver.Connector }

func newCachingConnector(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{base}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, errors.New("store: the sqlite driver's connection lacks a context method")
	}
	return &cachingConn{sqliteConn: inner, stmts: map[string]*cachedStmt{}}, nil
}

func (c cachingConnector) Driver() driver.Driver { return c.base.Driver() }

// sqliteConn is what modernc's connection implements and database/sql
// uses.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// sqliteStmt is what modernc's prepared statement implements.
type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// sqliteRows is what modernc's rows implement.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachingConn is a modernc connection that keeps its statements. database/sql
// uses a connection from one goroutine at a time, so it needs no lock.
type cachingConn struct {
	sqliteConn
	stmts map[string]*cachedStmt
}

type cachedStmt struct {
	sqliteStmt
	busy bool // rows of it are open
}

// stmt returns text's kept statement, or a statement of its own for this
// run (closed by done) when the kept one is busy or the cache is full.
func (c *cachingConn) stmt(ctx context.Context, text string) (s sqliteStmt, done func(), err error) {
	if cs, ok := c.stmts[text]; ok && !cs.busy {
		cs.busy = true
		return cs.sqliteStmt, func() { cs.busy = false }, nil
	}
	prepared, err := c.PrepareContext(ctx, sqliteText(text))
	if err != nil {
		return nil, nil, err
	}
	ps, ok := prepared.(sqliteStmt)
	if !ok {
		prepared.Close()
		return nil, nil, errors.New("store: the sqlite driver's statement lacks a context method")
	}
	if _, taken := c.stmts[text]; taken || len(c.stmts) >= maxCachedStmts {
		return ps, func() { ps.Close() }, nil
	}
	cs := &cachedStmt{sqliteStmt: ps, busy: true}
	c.stmts[text] = cs
	return ps, func() { cs.busy = false }, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Result, error) {
	s, done, err := c.stmt(ctx, text)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Rows, error) {
	s, done, err := c.stmt(ctx, text)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	r, ok := rows.(sqliteRows)
	if !ok {
		rows.Close()
		done()
		return nil, errors.New("store: the sqlite driver's rows lack column types")
	}
	return &releasingRows{sqliteRows: r, done: done}, nil
}

// Close closes the kept statements, then the connection.
func (c *cachingConn) Close() error {
	for text, s := range c.stmts {
		s.Close()
		delete(c.stmts, text)
	}
	return c.sqliteConn.Close()
}

// releasingRows gives its statement back when closed.
type releasingRows struct {
	sqliteRows
	done func()
}

func (r *releasingRows) Close() error {
	err := r.sqliteRows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}
