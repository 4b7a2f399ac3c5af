package store

import (
	"context"
	"time"
)

// Tx is a transaction started by DB.Tx or DB.ReadTx. It implements Querier.
// Store methods receive it as their executor; service methods that other
// code composes come in pairs (CreateX opens a transaction, CreateXTx joins
// the caller's).
type Tx struct {
	db          *DB
	eng         txEngine
	now         time.Time
	readOnly    bool
	afterCommit []func()
	// beforeCommit runs inside the transaction, after its function.
	beforeCommit []func(ctx context.Context) error
	onceKeys     map[string]bool // AfterCommitOnce's keys
	values       map[any]any     // SetValue's
	events       []Event
}

// Value returns what SetValue stored under key in this transaction, or
// nil.
func (tx *Tx) Value(key any) any { return tx.values[key] }

// SetValue keeps v under key for the rest of the transaction (an attempt
// that is retried starts without). An emit hook uses it to look something
// up once per transaction rather than once per event; use a key of an
// unexported type, as with context values.
func (tx *Tx) SetValue(key, v any) {
	if tx.values == nil {
		tx.values = map[any]any{}
	}
	tx.values[key] = v
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	args, _ = withoutPlanEachRun(args)
	n, err := tx.eng.exec(ctx, sql, args)
	return n, tx.db.dialect.Classify(err)
}

// ExecLater runs a statement in the transaction whose row count the
// caller does not need. On PostgreSQL the statement is queued and sent
// with the transaction's next statement (or its commit), in one round
// trip: a batch write of several statements then waits on the server
// once rather than once per statement. Its error, if any, is the error
// of that next statement (or of the commit), so queue only statements
// whose failure fails the transaction, and leave args unchanged until
// then: they are encoded when the statement is sent. Elsewhere it runs at
// once and returns its error.
func (tx *Tx) ExecLater(ctx context.Context, sql string, args ...any) error {
	args, _ = withoutPlanEachRun(args)
	if l, ok := tx.eng.(laterEngine); ok {
		l.later(sql, args)
		return nil
	}
	_, err := tx.Exec(ctx, sql, args...)
	return err
}

// laterEngine is a transaction engine that can queue statements
// (Tx.ExecLater).
type laterEngine interface{ later(sql string, args []any) }

// ExecLater is Tx.ExecLater when q is a transaction, and Exec otherwise.
func ExecLater(ctx context.Context, q Querier, sql string, args ...any) error {
	if tx, ok := q.(*Tx); ok {
		return tx.ExecLater(ctx, sql, args...)
	}
	_, err := q.Exec(ctx, sql, args...)
	return err
}

// Query runs a query in the transaction. Close the rows before the next
// statement: on SQLite a transaction has a single connection.
func (tx *Tx) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	args, _ = withoutPlanEachRun(args)
	rows, err := tx.eng.query(ctx, sql, args)
	if err != nil {
		return nil, tx.db.dialect.Classify(err)
	}
	return classifiedRows{rows, tx.db.dialect}, nil
}

// QueryRow runs a single-row query in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, sql string, args ...any) Row {
	args, _ = withoutPlanEachRun(args)
	return classifiedRow{tx.eng.queryRow(ctx, sql, args), tx.db.dialect}
}

// Dialect describes the engine.
func (tx *Tx) Dialect() Dialect { return tx.db.dialect }

// Now is the transaction's clock: fixed when it began, UTC, microseconds.
// Stamp every row the transaction writes with it.
func (tx *Tx) Now() time.Time { return tx.now }

// DB returns the database the transaction belongs to.
func (tx *Tx) DB() *DB { return tx.db }

// AfterCommit registers fn to run once the transaction has committed. It
// never runs for a rolled-back transaction, nor for an attempt that is
// retried.
func (tx *Tx) AfterCommit(fn func()) { tx.afterCommit = append(tx.afterCommit, fn) }

// BeforeCommit registers fn to run inside the transaction once the
// function given to DB.Tx has returned nil, just before the commit, in
// the order registered; an error rolls the transaction back. Work that
// gathers over a transaction's writes is done once this way: the writes
// of a shared transaction (Batcher) each add their job to a list, and one
// BeforeCommit inserts them all in one statement.
func (tx *Tx) BeforeCommit(fn func(ctx context.Context) error) {
	tx.beforeCommit = append(tx.beforeCommit, fn)
}

// AfterCommitOnce is AfterCommit for the first fn registered under key in
// this transaction; later ones are dropped. An emit hook uses it to act
// once per transaction however many events it sees.
func (tx *Tx) AfterCommitOnce(key string, fn func()) {
	if tx.onceKeys[key] {
		return
	}
	if tx.onceKeys == nil {
		tx.onceKeys = map[string]bool{}
	}
	tx.onceKeys[key] = true
	tx.AfterCommit(fn)
}

// Driver returns the engine's own transaction: *sql.Tx on SQLite, pgx.Tx on
// PostgreSQL. It exists for adapters that must join the transaction (the
// job engine's InsertTx); area code uses the Querier methods.
func (tx *Tx) Driver() any { return tx.eng.driverTx() }
