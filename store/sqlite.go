//go:build !tenantkit_nosqlite

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

func init() {
	openers["sqlite"] = openSQLite
	// SQLite's lower() and LIKE fold ASCII only; tk_fold applies the same
	// Unicode lower-casing as PostgreSQL's lower() (see FoldCase).
	sqlite.MustRegisterDeterministicScalarFunction("tk_fold", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return FoldCase(v), nil
		case []byte:
			return FoldCase(string(v)), nil
		default:
			return v, nil
		}
	})
}

// sqlitePragmas are applied to every connection. busy_timeout comes first so
// that it already applies while the others run (journal_mode needs a lock).
var sqlitePragmas = []string{
	"busy_timeout(10000)",
	"journal_mode(WAL)",
	"foreign_keys(1)",
	"synchronous(NORMAL)",
	// Statement journals (kept while a statement of a transaction runs,
	// so that it can be undone alone) live in memory rather than in a
	// temporary file: writing them was a quarter of a multi-row INSERT's
	// time.
	"temp_store(MEMORY)",
}

// openSQLite opens sqlite:PATH or sqlite::memory:.
func openSQLite(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	path := strings.TrimPrefix(rawURL, "sqlite:")
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return nil, errors.New("store: open sqlite: empty path (want sqlite:PATH or sqlite::memory:)")
	}
	eng := &sqlEngine{mu: lockFor(path)}
	if path == ":memory:" {
		// Each connection to :memory: is a new empty database, so reads
		// and writes share one connection.
		c, err := newCachingConnector(sqliteDSN(":memory:", false))
		if err != nil {
			return nil, err
		}
		db := sql.OpenDB(c)
		db.SetMaxOpenConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		eng.write, eng.read = db, db
	} else {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("store: open sqlite: %w", err)
			}
		}
		// The writer keeps the statements it runs prepared (stmtcache.go).
		wc, err := newCachingConnector(sqliteDSN(path, true))
		if err != nil {
			return nil, err
		}
		w := sql.OpenDB(wc)
		// One writer: SQLite allows one at a time, and a single connection
		// queues writers in Go instead of spinning on SQLITE_BUSY.
		w.SetMaxOpenConns(1)
		w.SetConnMaxIdleTime(0)
		w.SetConnMaxLifetime(0)
		r, err := sql.Open("sqlite", sqliteDSN(path, false)+"&_pragma=query_only(1)")
		if err != nil {
			w.Close()
			return nil, err
		}
		readers := opts.MaxReaders
		if readers <= 0 {
			readers = 8
		}
		r.SetMaxOpenConns(readers)
		r.SetMaxIdleConns(readers)
		eng.write, eng.read = w, r
	}
	// Connect the writer first: it switches the file to WAL mode.
	if err := eng.write.PingContext(ctx); err != nil {
		eng.close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
	}
	if path != ":memory:" {
		ckpt, err := startCheckpointer(path, checkpointInterval, opts.Logger)
		if err != nil {
			eng.close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		eng.stopBackground = ckpt.close
	}
	return newDB(eng, sqliteDialect{}, "", opts), nil
}

// sqliteDSN builds a modernc DSN. The writer uses _txlock=immediate so that
// a write transaction takes the lock at BEGIN rather than failing with
// SQLITE_BUSY on its first write. Times are written in SQLite's own text
// format in UTC, so that they sort and compare as text, and read back as
// time.UTC values.
func sqliteDSN(path string, writer bool) string {
	v := url.Values{}
	for _, p := range sqlitePragmas {
		v.Add("_pragma", p)
	}
	v.Set("_time_format", "sqlite")
	v.Set("_timezone", "UTC")
	if writer {
		v.Set("_txlock", "immediate")
		// The writer's page cache: 64 MiB rather than SQLite's 2 MiB, so
		// that inserts into large indexes (a million records with an index
		// per filterable field) find their pages in memory. Readers keep
		// 16 MiB each. Pages are allocated as used.
		v.Add("_pragma", "cache_size(-65536)")
		// Checkpoints run in the background (checkpointer); this is the
		// backstop.
		v.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(writerAutoCheckpointPages)+")")
	} else {
		v.Add("_pragma", "cache_size(-16384)")
	}
	// url.Values sorts keys; _pragma order within the key is preserved,
	// which keeps busy_timeout first.
	return "file:" + path + "?" + v.Encode()
}

type sqliteDialect struct{}

func (sqliteDialect) Name() string { return "sqlite" }

func (sqliteDialect) Notifies() bool { return false }

// eventWatermark implements eventLogDialect: one write transaction at a
// time, so every committed event is final.
func (sqliteDialect) eventWatermark() string { return strconv.FormatInt(maxWatermark, 10) }

func (sqliteDialect) JSONText(col, key string) string {
	return "json_extract(" + col + ", '$." + strings.ReplaceAll(key, "'", "''") + "')"
}

func (sqliteDialect) ContainsFold(col, param string) string {
	return "tk_fold(" + col + ") LIKE " + param + ` ESCAPE '\'`
}

func (sqliteDialect) JSONValue(col, key string) string {
	return "json_extract(" + col + ", " + quoteText("$."+key) + ")"
}

// BoundedJSONValue is JSONValue: SQLite bounds no index entry.
func (d sqliteDialect) BoundedJSONValue(col, key string, _ int) string { return d.JSONValue(col, key) }

// JSONValueArg binds x as json_extract reads it from JSON text: a number
// written without a fraction or exponent is an INTEGER when it fits in 64
// bits (as 2^60 does, which as a REAL would compare unequal).
func (sqliteDialect) JSONValueArg(x any) (any, string) {
	if f, ok := x.(float64); ok {
		b, _ := json.Marshal(f)
		if !strings.ContainsAny(string(b), ".eE") {
			if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
				return n, ""
			}
		}
	}
	return x, ""
}

func (d sqliteDialect) JSONListHas(col, key, param string, x any) (string, any) {
	arg, _ := d.JSONValueArg(x)
	return "EXISTS (SELECT 1 FROM json_each(" + col + ", " + quoteText("$."+key) + ") WHERE value = " + param + ")", arg
}

// JSONValuesContainFold reads booleans, which json_each gives as 1 and
// 0, as PostgreSQL does.
func (d sqliteDialect) JSONValuesContainFold(col, param string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") v WHERE " +
		d.ContainsFold("CASE v.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE v.value END", param) + ")"
}

func (d sqliteDialect) JSONScalar(col, key string, maxText int) string {
	typ := "json_type(" + col + ", " + quoteText("$."+key) + ")"
	return "(" + typ + " IN ('integer', 'real', 'true', 'false') OR " + typ + " = 'text' AND length(CAST(" +
		d.JSONValue(col, key) + " AS BLOB)) <= " + strconv.Itoa(maxText) + ")"
}

func (sqliteDialect) SingleWriter() bool { return true }

// ForUpdate is "": the one writer holds the database until it commits.
func (sqliteDialect) ForUpdate() string { return "" }

func (sqliteDialect) IndexedBy(table, index string) string { return table + " INDEXED BY " + index }

func (sqliteDialect) SubqueryFence() string { return "" }

func (sqliteDialect) JSONArrayElements(array string) string { return `json_each(` + array + `)` }

// LockForWrites is "": the one writer holds the database until it
// commits.
func (sqliteDialect) LockForWrites(string) string { return "" }

// Classify maps SQLite result codes (extended codes first, then the
// primary code in the low byte) to error kinds.
func (sqliteDialect) Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return withKind(ErrNotFound, err)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return withKind(ErrConflict, err)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY, sqlite3.SQLITE_CONSTRAINT_CHECK,
		sqlite3.SQLITE_CONSTRAINT_NOTNULL:
		return withKind(ErrInvalid, err)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return withKind(errRetryable, err)
	case sqlite3.SQLITE_CONSTRAINT:
		return withKind(ErrInvalid, err)
	}
	return err
}

// SQLiteDialect is the Dialect of SQLite databases, for packages that keep
// SQL of their own per engine (keyed by the Dialect value a Querier
// returns).
var SQLiteDialect Dialect = sqliteDialect{}
