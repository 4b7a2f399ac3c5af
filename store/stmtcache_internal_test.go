//go:build !tenantkit_nosqlite

package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// keptStatements returns how many statements the writer's connection
// keeps.
func keptStatements(t *testing.T, db *DB) int {
	t.Helper()
	w, _ := db.SQLPool()
	conn, err := w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	err = conn.Raw(func(dc any) error {
		n = len(dc.(*cachingConn).stmts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func openCachingTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "kept.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(t.Context(), `CREATE TABLE n (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// A text the writer runs again is not prepared again, and each run sees
// its own arguments.
func TestWriterKeepsStatements(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := openCachingTestDB(t)
	before := keptStatements(t, db)
	for i := range 5 {
		_, err := db.Exec(ctx, `INSERT INTO n (id, v) VALUES ($1, $2)`, i, fmt.Sprint("v", i))
		is.NoErr(err)
	}
	is.Equal(keptStatements(t, db), before+1) // five runs, one statement

	// A failing run (a unique violation) leaves the statement usable.
	_, err := db.Exec(ctx, `INSERT INTO n (id, v) VALUES ($1, $2)`, 99, "v1")
	is.True(err != nil)
	_, err = db.Exec(ctx, `INSERT INTO n (id, v) VALUES ($1, $2)`, 5, "v5")
	is.NoErr(err)
	var n int
	is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM n`).Scan(&n))
	is.Equal(n, 6)
}

// A text run again on the writer's connection while its rows are still
// being read gets a statement of its own: the outer rows read on
// undisturbed.
func TestWriterNestedRunOfOneText(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := openCachingTestDB(t)
	for i := range 4 {
		_, err := db.Exec(ctx, `INSERT INTO n (id, v) VALUES ($1, $2)`, i, fmt.Sprint("v", i))
		is.NoErr(err)
	}
	const text = `SELECT id FROM n WHERE id >= $1 ORDER BY id`
	var outer, inner []int
	err := db.Tx(ctx, func(tx *Tx) error {
		rows, err := tx.Query(ctx, text, 0)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			outer = append(outer, id)
			if id != 1 {
				continue
			}
			in, err := tx.Query(ctx, text, 2)
			if err != nil {
				return err
			}
			for in.Next() {
				var j int
				if err := in.Scan(&j); err != nil {
					return err
				}
				inner = append(inner, j)
			}
			if err := in.Close(); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	is.NoErr(err)
	is.Equal(outer, []int{0, 1, 2, 3})
	is.Equal(inner, []int{2, 3})
}

// A kept statement follows a schema change.
func TestWriterKeptStatementAfterSchemaChange(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := openCachingTestDB(t)
	w, _ := db.SQLPool()
	_, err := db.Exec(ctx, `INSERT INTO n (id, v) VALUES (1, 'a')`)
	is.NoErr(err)
	columns := func() int {
		rows, err := w.QueryContext(ctx, `SELECT * FROM n`)
		is.NoErr(err)
		defer rows.Close()
		cols, err := rows.Columns()
		is.NoErr(err)
		return len(cols)
	}
	is.Equal(columns(), 2)
	_, err = db.Exec(ctx, `ALTER TABLE n ADD COLUMN w INTEGER NOT NULL DEFAULT 7`)
	is.NoErr(err)
	is.Equal(columns(), 3)
}

// Past maxCachedStmts texts, statements still run (prepared and closed
// each time), and the connection keeps no more than the bound.
func TestWriterKeepsAtMostTheBound(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := openCachingTestDB(t)
	w, _ := db.SQLPool()
	for i := range maxCachedStmts + 20 {
		var got int
		is.NoErr(w.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&got))
		is.Equal(got, i)
	}
	is.Equal(keptStatements(t, db), maxCachedStmts)
	var got sql.NullInt64
	is.NoErr(w.QueryRowContext(context.Background(), `SELECT max(id) FROM n`).Scan(&got))
	is.True(!got.Valid)
}
