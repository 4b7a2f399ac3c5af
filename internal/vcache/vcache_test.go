package vcache_test

import (
	"context"
	"errors"
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

// A Value is loaded once, reloaded at once after a change in this process
// and after the check interval after another's, keeps serving the previous
// value while reloads fail, and is read without allocating.
func TestValue(t *testing.T) {
	// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
	ctx := t.Context()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "v.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	loads, fail := 0, error(nil)
	var reported []error
	c := vcache.NewValue(db, "test.value", 100*time.Millisecond, func(context.Context, *store.Tx) (int, error) {
		if fail != nil {
			return 0, fail
		}
		loads++
		return loads, nil
	}, func(err error) { reported = append(reported, err) })
	other := vcache.New[string, int](db, "test.value", time.Hour, 1) // another process, in effect
	get := func() int {
		t.Helper()
		v, err := c.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	change := func(changed func(context.Context, *store.Tx) (int64, error)) {
		t.Helper()
		if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := changed(ctx, tx); return err }); err != nil {
			t.Fatal(err)
		}
	}

	fail = errors.New("no table")
	if _, err := c.Get(ctx); !errors.Is(err, fail) {
		t.Fatalf("first Get with a failing load: %v, want the load's error", err)
	}
	fail = nil
	if get() != 1 || get() != 1 {
		t.Fatal("the second Get loaded again")
	}
	if n := testing.AllocsPerRun(100, func() { get() }); n != 0 {
		t.Errorf("Get allocates %v times, want 0", n)
	}
	change(c.Changed)
	if got := get(); got != 2 {
		t.Fatalf("after Changed got %d, want a new load (2)", got)
	}
	change(other.Changed)
	if got := get(); got != 2 {
		t.Fatalf("within the interval got %d, want the cached 2", got)
	}
	time.Sleep(150 * time.Millisecond)
	if got := get(); got != 3 {
		t.Fatalf("after the interval got %d, want a new load (3)", got)
	}

	// Reloads fail: the previous value is served, the failure reported
	// once, and tried again after a change or the next check.
	fail = errors.New("database down")
	change(c.Changed)
	if get() != 3 || get() != 3 {
		t.Fatal("a failed reload did not keep the previous value")
	}
	if len(reported) != 1 || !errors.Is(reported[0], fail) {
		t.Fatalf("reported %v, want the one failure", reported)
	}
	fail = nil
	change(c.Changed) // a newer change tries again at once
	if got := get(); got != 4 {
		t.Fatalf("after a change following a failed reload got %d, want 4", got)
	}
	fail = errors.New("database down")
	change(other.Changed)
	time.Sleep(150 * time.Millisecond)
	if get() != 4 {
		t.Fatal("a failed reload did not keep the previous value")
	}
	fail = nil
	time.Sleep(150 * time.Millisecond) // the next check tries again
	if got := get(); got != 5 {
		t.Fatalf("after the next check got %d, want 5", got)
	}
}
