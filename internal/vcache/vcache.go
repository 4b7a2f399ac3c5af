// Package vcache is tenantkit's one cache of definitions: a read-through
// cache kept fresh by a named version counter in the database (store's
// Tx.BumpVersion and ReadVersion). Every change bumps the counter in its
// transaction (Changed); a commit in this process drops the cache at once,
// and other processes' commits are noticed by the first read after each
// check interval, which reads the counter. A value is cached only if no
// newer version was seen while it was loaded, so a slow load never
// publishes stale data.
//
// Several caches may share one counter (an area caching two kinds of plan
// over one set of definitions): a change bumps it once and invalidates
// each with the new version.
package vcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Cache caches values by key. The zero value is not usable; use New.
type Cache[K comparable, V any] struct {
	db       *store.DB
	counter  string
	interval time.Duration
	max      int

	mu      sync.RWMutex
	version int64 // the newest version seen
	m       map[K]V

	lastCheck atomic.Int64 // unix nanoseconds of the last version read
	checking  atomic.Bool
}

// New returns a cache over db kept fresh by the named version counter,
// checked at most every interval, holding at most max values (past that it
// starts over).
func New[K comparable, V any](db *store.DB, counter string, interval time.Duration, max int) *Cache[K, V] {
	return &Cache[K, V]{db: db, counter: counter, interval: interval, max: max, m: map[K]V{}}
}

// Changed records, in tx, a change to what the cache holds: it bumps the
// counter, and once tx commits drops this process's cache. It returns the
// new version (for another cache on the same counter to Invalidate).
func (c *Cache[K, V]) Changed(ctx context.Context, tx *store.Tx) (int64, error) {
	v, err := tx.BumpVersion(ctx, c.counter)
	if err != nil {
		return 0, err
	}
	tx.AfterCommit(func() { c.Invalidate(v) })
	return v, nil
}

// Invalidate records version v (read or made by a committed change) and
// drops every value older than it.
func (c *Cache[K, V]) Invalidate(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v > c.version {
		c.version = v
		clear(c.m)
	}
}

// refresh reads the version when the last read is older than the
// interval (one caller at a time; the others go on with the cache).
func (c *Cache[K, V]) refresh(ctx context.Context) {
	now := time.Now().UnixNano()
	if now-c.lastCheck.Load() < int64(c.interval) || !c.checking.CompareAndSwap(false, true) {
		return
	}
	defer c.checking.Store(false)
	v, err := store.ReadVersion(ctx, c.db, c.counter)
	if err != nil {
		return // the next read tries again
	}
	c.lastCheck.Store(now)
	c.Invalidate(v)
}

// Get returns the value under key, or loads it in a read transaction
// (after reading the version) and caches it.
func (c *Cache[K, V]) Get(ctx context.Context, key K, load func(tx *store.Tx) (V, error)) (V, error) {
	c.refresh(ctx)
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	var version int64
	err := c.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if version, err = store.ReadVersion(ctx, tx, c.counter); err != nil {
			return err
		}
		v, err = load(tx)
		return err
	})
	if err != nil {
		var zero V
		return zero, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if version < c.version {
		return v, nil // something newer was seen meanwhile: do not cache
	}
	if version > c.version {
		c.version = version
		clear(c.m)
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = v
	return v, nil
}
