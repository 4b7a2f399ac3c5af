package vcache_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
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

// Two processes on one PostgreSQL database: a Value of the second sees a
// change committed through the first within milliseconds, by the
// notification (the check interval is an hour), not a rolled-back one;
// after its listener's connection is killed, a change made while it was
// down is seen once it reconnects (the reconnection makes the next read
// check), and later changes promptly again.
func TestSyncSQLiteIsFree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := vcache.New[string, int](db, "test.sync", time.Hour, 10)
	v := vcache.NewValue(db, "test.sync", time.Hour, func(context.Context, *store.Tx) (int, error) { return 1, nil }, nil)
	db.Close()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("Cache.Sync on SQLite: %v", err)
	}
	if err := v.Sync(ctx); err != nil {
		t.Fatalf("Value.Sync on SQLite: %v", err)
	}
}

// Two processes on one PostgreSQL database, the second's caches polling
// hourly and bumps made without a notification (as when the listener is
// down): a read lags, but after Sync every change committed before it is
// honoured, by concurrent callers too (they share reads, never one that
// started before they called). Value.Sync does not serve a stale value
// when its reload fails.
func TestSyncAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := storetest.IsolatedPostgresURL(t)
	open := func() *store.DB {
		db, err := store.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db1, db2 := open(), open()
	if err := db1.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const counter = "test.sync"
	// bump advances the counter through db1 without notifying (a plain
	// upsert, not Tx.BumpVersion) and returns the new version.
	bump := func() int64 {
		var v int64
		err := db1.QueryRow(ctx, `INSERT INTO store_versions (name, version) VALUES ($1, 1)
			ON CONFLICT (name) DO UPDATE SET version = store_versions.version + 1 RETURNING version`, counter).Scan(&v)
		if err != nil {
			t.Error(err)
		}
		return v
	}
	// Both caches hold the version their load read.
	var fail atomic.Pointer[error]
	loadVersion := func(ctx context.Context, tx *store.Tx) (int64, error) {
		if e := fail.Load(); e != nil {
			return 0, *e
		}
		return store.ReadVersion(ctx, tx, counter)
	}
	c := vcache.New[string, int64](db2, counter, time.Hour, 10)
	val := vcache.NewValue(db2, counter, time.Hour, loadVersion, nil)
	cget := func() int64 {
		v, err := c.Get(ctx, "k", func(tx *store.Tx) (int64, error) { return loadVersion(ctx, tx) })
		if err != nil {
			t.Error(err)
		}
		return v
	}
	vget := func() int64 {
		v, err := val.Get(ctx)
		if err != nil {
			t.Error(err)
		}
		return v
	}
	// Once the listener has connected (which makes the next reads check),
	// reads check only hourly.
	for deadline := time.Now().Add(10 * time.Second); !db2.WatchStatus().Listening; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect")
		}
	}
	first := bump()
	if cget() != first || vget() != first {
		t.Fatal("first loads")
	}
	next := bump()
	if cget() != first || vget() != first {
		t.Fatal("a read saw an unnotified change within the hour's interval: the test shows nothing")
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := val.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cget(); got != next {
		t.Fatalf("Cache after Sync serves %d, want %d", got, next)
	}
	if got := vget(); got != next {
		t.Fatalf("Value after Sync serves %d, want %d", got, next)
	}

	// Concurrent writers, each bumping then syncing: each sees at least
	// its own bump.
	const writers, rounds = 8, 40
	var wg sync.WaitGroup
	var stale atomic.Int64
	for range writers {
		wg.Go(func() {
			for range rounds {
				v := bump()
				if err := c.Sync(ctx); err != nil {
					t.Error(err)
					return
				}
				if cget() < v {
					stale.Add(1)
				}
				if err := val.Sync(ctx); err != nil {
					t.Error(err)
					return
				}
				if vget() < v {
					stale.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := stale.Load(); n != 0 {
		t.Fatalf("%d of %d reads after Sync were older than a change committed before it", n, 2*writers*rounds)
	}

	// A failing reload: Sync reports it, Get serves the previous value.
	served := vget()
	down := errors.New("database down")
	fail.Store(&down)
	bump()
	if err := val.Sync(ctx); !errors.Is(err, down) {
		t.Fatalf("Value.Sync with a failing reload: %v, want the load's error", err)
	}
	if got := vget(); got != served {
		t.Fatalf("Get after a failed Sync serves %d, want the previous %d", got, served)
	}
	fail.Store(nil)
	if err := val.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := vget(); got <= served {
		t.Fatalf("after a successful Sync Get serves %d, want newer than %d", got, served)
	}
}

// BenchmarkSync is the cost Sync adds to a write: nothing on SQLite, one
// single-row read on PostgreSQL, shared by concurrent writers (parallel).
func BenchmarkSync(b *testing.B) {
	run := func(b *testing.B, url string) {
		ctx := b.Context()
		db, err := store.Open(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		c := vcache.New[string, int](db, "bench.sync", time.Hour, 10)
		b.Run("serial", func(b *testing.B) {
			for b.Loop() {
				if err := c.Sync(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel", func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Sync(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	b.Run("sqlite", func(b *testing.B) { run(b, "sqlite:"+filepath.Join(b.TempDir(), "b.db")) })
	b.Run("postgres", func(b *testing.B) { run(b, storetest.IsolatedPostgresURL(b)) })
}

// GetIn, called inside a transaction that holds the pool's only
// connection, loads a missing value through that transaction (Get would
// wait for a second connection forever: the deadlock four concurrent
// imports on a pool of four once hit), and does not cache what it loaded
// there: a rollback may undo what the transaction saw.
func TestGetInLoadsThroughTheTransaction(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, url string) {
		ctx := t.Context()
		setup, err := store.Open(ctx, url, nil) // Migrate takes two connections
		if err != nil {
			t.Fatal(err)
		}
		err = setup.Migrate(ctx)
		setup.Close()
		if err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(ctx, url, &store.Options{MaxReaders: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		c := vcache.New[string, int](db, "test.getin", time.Millisecond, 10) // a check is due on every call
		loads := 0
		load := func(tx *store.Tx) (int, error) {
			if tx == nil {
				return 0, errors.New("load without a transaction")
			}
			loads++
			return loads, nil
		}
		bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = db.Tx(bounded, func(tx *store.Tx) error {
			time.Sleep(2 * time.Millisecond) // the check is due
			v, err := c.GetIn(bounded, tx, "k", load)
			if err != nil {
				return err
			}
			if v != 1 {
				t.Errorf("GetIn on a miss = %d, want a load (1)", v)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("GetIn inside the pool's only connection: %v", err)
		}
		if v, err := c.Get(ctx, "k", load); err != nil || v != 2 {
			t.Fatalf("Get after GetIn = %d, %v; want a load (2): GetIn must not cache", v, err)
		}
		err = db.Tx(bounded, func(tx *store.Tx) error {
			v, err := c.GetIn(bounded, tx, "k", load)
			if err == nil && v != 2 {
				t.Errorf("GetIn on a hit = %d, want the cached 2", v)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "sqlite:"+filepath.Join(t.TempDir(), "g.db")) })
	t.Run("postgres", func(t *testing.T) { run(t, storetest.IsolatedPostgresURL(t)) })
}

// Peek returns what Get cached without loading; Delete drops one key,
// which the next Get loads again, and leaves the others.
func TestPeekAndDelete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := storetest.SQLite(t)
	c := vcache.New[string, int](db, "test.peek", time.Hour, 10)
	if _, ok := c.Peek(ctx, "a"); ok {
		t.Fatal("Peek found a value never loaded")
	}
	loads := 0
	get := func(key string) int {
		v, err := c.Get(ctx, key, func(*store.Tx) (int, error) { loads++; return loads, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	get("a")
	get("b")
	if v, ok := c.Peek(ctx, "a"); !ok || v != 1 {
		t.Fatalf("Peek(a) = %d, %v; want the cached 1", v, ok)
	}
	if loads != 2 {
		t.Fatalf("Peek loaded: %d loads, want 2", loads)
	}
	c.Delete("a")
	if _, ok := c.Peek(ctx, "a"); ok {
		t.Fatal("Peek found a deleted value")
	}
	if v, ok := c.Peek(ctx, "b"); !ok || v != 2 {
		t.Fatalf("Delete(a) dropped b: %d, %v", v, ok)
	}
	if got := get("a"); got != 3 {
		t.Fatalf("Get after Delete = %d, want a new load (3)", got)
	}
}
