package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Read transactions reuse the statements they ran, prepared on the reader
// pool in the background: a text is cached after its first read, later
// reads through it see schema changes (SQLite prepares a stale statement
// again), many reads of new texts at once on a small pool do not wait on
// each other, the cache stops growing at its bound, and Close closes it.
func TestReadStatementsCached(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "r.db"), &Options{MaxReaders: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO t (id, a) VALUES (1, 'x')`); err != nil {
		t.Fatal(err)
	}
	eng := db.eng.(*sqlEngine)
	cached := func(q string) bool {
		eng.reads.mu.Lock()
		defer eng.reads.mu.Unlock()
		return eng.reads.m[q] != nil
	}
	// read runs q and returns its one row, scanned into n strings.
	read := func(n int, q string, args ...any) []string {
		out := make([]string, n)
		err := db.ReadTx(ctx, func(tx *Tx) error {
			dest := make([]any, n)
			for i := range out {
				dest[i] = &out[i]
			}
			return tx.QueryRow(ctx, q, args...).Scan(dest...)
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	const q = `SELECT * FROM t WHERE id = $1`
	read(2, q, 1)
	deadline := time.Now().Add(5 * time.Second)
	for !cached(q) {
		if time.Now().After(deadline) {
			t.Fatal("the statement was never cached")
		}
		time.Sleep(time.Millisecond)
	}
	if got := read(2, q, 1); got[1] != "x" {
		t.Fatalf("got %v", got)
	}
	if _, err := db.Exec(ctx, `DROP TABLE t`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO t (id, a, b) VALUES (1, 'y', 'z')`); err != nil {
		t.Fatal(err)
	}
	if got := read(3, q, 1); got[1] != "y" || got[2] != "z" {
		t.Fatalf("after the table changed: %v (the cached statement is prepared again)", got)
	}

	// 20 reads of new texts at once on 2 reader connections finish.
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range 20 {
		wg.Go(func() { read(1, fmt.Sprintf(`SELECT a FROM t WHERE id = $1 AND %d = %d`, i, i), 1) })
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("concurrent reads of new statements did not finish")
	}

	for i := range maxReadStmts + 10 {
		eng.reads.get(eng.read, fmt.Sprintf(`SELECT %d`, i))
	}
	eng.reads.mu.Lock()
	n := len(eng.reads.m)
	eng.reads.mu.Unlock()
	if n > maxReadStmts {
		t.Fatalf("%d statements cached, bound %d", n, maxReadStmts)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if eng.reads.get(eng.read, `SELECT 1`) != nil || !eng.reads.closed {
		t.Fatal("a closed cache handed out a statement")
	}
}

// A read outside a transaction (DB.Query, DB.QueryRow) goes through the
// reader pool's statements too: its text is cached after its first run,
// later runs answer through the cached statement, and a schema change is
// still seen.
func TestReadStatementsCachedOutsideTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "r.db"), &Options{MaxReaders: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)`,
		`INSERT INTO t (id, a) VALUES (1, 'x'), (2, 'y')`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	eng := db.eng.(*sqlEngine)
	cached := func(q string) bool {
		eng.reads.mu.Lock()
		defer eng.reads.mu.Unlock()
		return eng.reads.m[q] != nil
	}
	wait := func(q string) {
		deadline := time.Now().Add(5 * time.Second)
		for !cached(q) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: never cached", q)
			}
			time.Sleep(time.Millisecond)
		}
	}

	const one = `SELECT a FROM t WHERE id = $1`
	const all = `SELECT a FROM t WHERE id >= $1 ORDER BY id`
	readOne := func(id int) (a string) {
		if err := db.QueryRow(ctx, one, id).Scan(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	readAll := func() (out []string) {
		rows, err := db.Query(ctx, all, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			out = append(out, a)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	readOne(1)
	readAll()
	wait(one)
	wait(all)
	for range 3 { // through the cached statements, on either connection
		if got := readOne(2); got != "y" {
			t.Fatalf("QueryRow: %q", got)
		}
		if got := readAll(); fmt.Sprint(got) != "[x y]" {
			t.Fatalf("Query: %v", got)
		}
	}
	if _, err := db.Exec(ctx, `ALTER TABLE t ADD COLUMN b TEXT`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE t SET a = 'z' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if got := readOne(2); got != "z" {
		t.Fatalf("after the schema changed: %q", got)
	}
}
