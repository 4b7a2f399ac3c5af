//go:build !tenantkit_nosqlite

package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// reprepares runs q (prepared once) three times with args on a reader
// connection of db and returns how many times SQLite prepared it again
// (SQLITE_STMTSTATUS_REPREPARE), reading the driver's handles by reflection.
func reprepares(t *testing.T, db *DB, q string, args ...driver.NamedValue) int32 {
	t.Helper()
	ctx := t.Context()
	conn, err := db.eng.(*sqlEngine).read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int32
	err = conn.Raw(func(dc any) error {
		c := reflect.ValueOf(dc).Elem()
		tls := (*libc.TLS)(unsafe.Pointer(c.FieldByName("tls").Pointer()))
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		pstmt := uintptr(reflect.ValueOf(st).Elem().FieldByName("pstmt").Uint())
		if pstmt == 0 {
			return errors.New("the driver kept no statement")
		}
		for range 3 {
			rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), args)
			if err != nil {
				return err
			}
			dest := make([]driver.Value, len(rows.Columns()))
			for rows.Next(dest) == nil {
			}
			rows.Close()
		}
		n = sqlite3.Xsqlite3_stmt_status(tls, pstmt, sqlite3.SQLITE_STMTSTATUS_REPREPARE, 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A kept statement with a LIMIT and OFFSET parameter (a page) runs without
// SQLite preparing it again on each run: the text SQLite prepares
// (sqliteText) writes them +param. The same text as written is prepared
// again on every run, which shows the count measures it.
func TestSQLiteTextLimitNotReprepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "r.db"), &Options{MaxReaders: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO t (id, a) VALUES (1, 'x'), (2, 'y'), (3, 'z')`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT a FROM t WHERE id > $1 ORDER BY id LIMIT $2 OFFSET $3`
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(0)}, {Ordinal: 2, Value: int64(2)}, {Ordinal: 3, Value: int64(1)}}
	if n := reprepares(t, db, q, args...); n == 0 {
		t.Fatal("as written, the statement was never prepared again: the count measures nothing")
	}
	if got, want := sqliteText(q), `SELECT a FROM t WHERE id > $1 ORDER BY id LIMIT +$2 OFFSET +$3`; got != want {
		t.Fatalf("sqliteText: %s, want %s", got, want)
	}
	if n := reprepares(t, db, sqliteText(q), args...); n != 0 {
		t.Fatalf("prepared again %d times", n)
	}
	for in, want := range map[string]string{
		`SELECT 1 limit ?`:                `SELECT 1 limit +?`,
		"SELECT 1 LIMIT\n\t@max":          "SELECT 1 LIMIT\n\t+@max",
		`SELECT rate_limit $1 FROM t`:     `SELECT rate_limit $1 FROM t`,
		`SELECT 1 LIMIT 20 OFFSET ?1`:     `SELECT 1 LIMIT 20 OFFSET +?1`,
		`SELECT 'LIMITS' FROM t LIMIT 10`: `SELECT 'LIMITS' FROM t LIMIT 10`,
	} {
		if got := sqliteText(in); got != want {
			t.Errorf("sqliteText(%q) = %q, want %q", in, got, want)
		}
	}

	// Through the store: a page read outside a transaction, repeatedly.
	var page []string
	for range 3 {
		page = page[:0]
		rows, err := db.Query(ctx, q, 0, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			page = append(page, a)
		}
		rows.Close()
	}
	if len(page) != 2 || page[0] != "y" || page[1] != "z" {
		t.Fatalf("page %v", page)
	}
}
