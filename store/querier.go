package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Querier is the executor store methods run their SQL on. *DB and *Tx
// implement it for both engines, so each query is written once, with $1…$n
// placeholders (modernc.org/sqlite binds them by ordinal, pgx natively).
//
// Every error it returns has been classified by the dialect: a missing row is
// ErrNotFound, a unique violation ErrConflict, a check or foreign-key
// violation ErrInvalid.
//
// Binding conventions that hold on both engines: times as time.Time (UTC,
// microseconds; use Querier.Now), JSON as a string (a []byte would be a BLOB
// on SQLite), booleans as bool. Scan JSON into []byte or json.RawMessage.
type Querier interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs a statement that returns rows. The caller closes them.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// QueryRow runs a statement expected to return at most one row; Scan
	// reports ErrNotFound when there is none.
	QueryRow(ctx context.Context, sql string, args ...any) Row
	// Dialect describes the engine's SQL differences.
	Dialect() Dialect
	// Now is the current time: fixed at BEGIN inside a transaction, UTC,
	// truncated to microseconds.
	Now() time.Time
}

// Row is the result of QueryRow.
type Row interface {
	// Scan copies the row's columns into dest; no row is ErrNotFound.
	Scan(dest ...any) error
}

// Rows is the result of Query.
type Rows interface {
	// Next advances to the next row; false at the end or on an error.
	Next() bool
	// Scan copies the current row's columns into dest.
	Scan(dest ...any) error
	// Err is the error that ended the iteration, if any.
	Err() error
	// Close releases the rows.
	Close() error
}

// Scanner is implemented by Row and Rows, so one scan function per entity
// serves both single and multi-row reads.
type Scanner interface {
	// Scan copies the current row's columns into dest.
	Scan(dest ...any) error
}

// One runs a single-row query and scans it with scan. No row is ErrNotFound.
func One[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), sql string, args ...any) (T, error) {
	return scan(q.QueryRow(ctx, sql, args...))
}

// Many runs a query and scans every row with scan.
func Many[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// ExecOne runs a statement that must affect exactly one row; none is
// ErrNotFound.
func ExecOne(ctx context.Context, q Querier, sql string, args ...any) error {
	n, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Args collects query arguments and hands out their placeholders.
type Args struct {
	values []any
}

// Add appends v and returns its placeholder ("$3").
func (a *Args) Add(v any) string {
	a.values = append(a.values, v)
	return "$" + strconv.Itoa(len(a.values))
}

// Values returns the collected arguments in placeholder order.
func (a *Args) Values() []any { return a.values }

// Conds builds a WHERE clause from fragments joined by AND, numbering the
// placeholders itself. Start it with the tenant predicate (Where) so that no
// query can forget it.
type Conds struct {
	Args
	parts []string
}

// Where starts a condition list with one fragment, typically
// Where("tenant_id = ?", sc.TenantID).
func Where(fragment string, vals ...any) *Conds {
	c := &Conds{}
	c.And(fragment, vals...)
	return c
}

// And adds a fragment. Each '?' in it is replaced by the placeholder of the
// next value in vals, in order; fragments are SQL written by us, never input.
func (c *Conds) And(fragment string, vals ...any) *Conds {
	var b strings.Builder
	i := 0
	for _, r := range fragment {
		if r == '?' && i < len(vals) {
			b.WriteString(c.Add(vals[i]))
			i++
			continue
		}
		b.WriteRune(r)
	}
	if i != len(vals) {
		panic("store: Conds.And: fragment " + strconv.Quote(fragment) + " has fewer placeholders than values")
	}
	c.parts = append(c.parts, b.String())
	return c
}

// OrderPage returns " ORDER BY column, tiebreak LIMIT $n OFFSET $m", the
// direction applied to both columns (tiebreak, a unique column, keeps pages
// stable), adding limit and offset to the arguments. The columns must come
// from the caller's own sort map, never from a request.
func (c *Conds) OrderPage(column, tiebreak string, desc bool, limit, offset int) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	return " ORDER BY " + column + dir + ", " + tiebreak + dir + " LIMIT " + c.Add(limit) + " OFFSET " + c.Add(offset)
}

// SQL returns the fragments joined with AND (without the WHERE keyword).
func (c *Conds) SQL() string {
	if len(c.parts) == 0 {
		return "TRUE"
	}
	return strings.Join(c.parts, " AND ")
}

// LikeContains turns user search text into a LIKE pattern that matches it
// anywhere, case-folded, with %, _ and \ escaped. Use it with
// Dialect.ContainsFold.
func LikeContains(s string) string {
	return "%" + escapeLike(FoldCase(s)) + "%"
}

// LikePrefix is LikeContains anchored at the start.
func LikePrefix(s string) string {
	return escapeLike(FoldCase(s)) + "%"
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// FoldCase is the case folding used for case-insensitive matching on both
// engines: Unicode lower-casing, the same mapping PostgreSQL's lower() applies
// under a UTF-8 locale and the one registered for SQLite.
func FoldCase(s string) string { return strings.ToLower(s) }

// Columns lists cols for a SELECT, each qualified with alias when alias is
// not empty; the columns named in orEmpty (nullable text a scan reads into
// a string) are read as COALESCE(col, ”). Store code keeps one column
// list per table and qualifies it for joins.
func Columns(alias string, orEmpty []string, cols ...string) string {
	if alias != "" {
		alias += "."
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = alias + c
		if slices.Contains(orEmpty, c) {
			out[i] = "COALESCE(" + alias + c + ", '')"
		}
	}
	return strings.Join(out, ", ")
}

// ScanThen returns a Scanner that scans a row's leading columns into the
// destinations its caller gives (a scan function of one table) and the
// trailing ones into then: a join's row read with each table's own scan
// function.
func ScanThen(s Scanner, then ...any) Scanner { return scanThen{s, then} }

type scanThen struct {
	Scanner
	then []any
}

func (s scanThen) Scan(dest ...any) error { return s.Scanner.Scan(append(dest, s.then...)...) }

// NullIfEmpty is s as a query argument, NULL when empty (nullable text
// columns that the Go side keeps as "").
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
