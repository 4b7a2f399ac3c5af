package vcache_test

import (
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
	if err := db.Migrate(ctx); err != nil { // the store's own line: store_versions
		t.Fatal(err)
	}
	other := vcache.New[string, int](db, "test.counter", time.Hour, 2) // another process's cache, in effect
	c := vcache.New[string, int](db, "test.counter", 100*time.Millisecond, 2)
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
	if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := c.Changed(ctx, tx); return err }); err != nil { // a change made by this process
		t.Fatal(err)
	}
	if got := get("a"); got != 2 {
		t.Fatalf("after Changed got %d, want a new load (2)", got)
	}
	if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := other.Changed(ctx, tx); return err }); err != nil { // another process's change: seen after the interval
		t.Fatal(err)
	}
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
