package vcache_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

// A value is loaded once and served from the cache until the version
// changes: at once through Invalidate, or after the check interval when
// another writer bumped it.
func TestCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE v (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO v (id, version) VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context, q store.Querier) (int64, error) {
		var v int64
		err := q.QueryRow(ctx, `SELECT version FROM v WHERE id = 1`).Scan(&v)
		return v, err
	}
	bump := func() int64 {
		var v int64
		err := db.Tx(ctx, func(tx *store.Tx) error {
			return tx.QueryRow(ctx, `UPDATE v SET version = version + 1 WHERE id = 1 RETURNING version`).Scan(&v)
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	c := vcache.New[string, int](db, read, 100*time.Millisecond, 2)
	loads := 0
	get := func(key string) int {
		v, err := c.Get(ctx, key, func(*store.Tx) (int, error) { loads++; return loads, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get("a") != 1 || get("a") != 1 {
		t.Fatal("the second Get loaded again")
	}
	c.Invalidate(bump()) // a change made by this process
	if got := get("a"); got != 2 {
		t.Fatalf("after Invalidate got %d, want a new load (2)", got)
	}
	bump() // another process's change: seen after the interval
	if got := get("a"); got != 2 {
		t.Fatalf("within the interval got %d, want the cached 2", got)
	}
	time.Sleep(150 * time.Millisecond)
	if got := get("a"); got != 3 {
		t.Fatalf("after the interval got %d, want a new load (3)", got)
	}
	get("b")
	get("c") // past max (2): the cache starts over
	if got := get("a"); got == 3 {
		t.Fatal("the cache kept more than its bound")
	}
}
