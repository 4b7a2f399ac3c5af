// These tests are in package ratelimit_test, not ratelimit: an internal
// test cannot import ratelimittest, which imports ratelimit ("import cycle
// not allowed in test"). Time is faked with testing/synctest.
package ratelimit_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/ratelimit/ratelimittest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts ratelimit.MemoryOptions
	}{
		{"Default", ratelimit.MemoryOptions{}},
		{"OneShard", ratelimit.MemoryOptions{MaxKeys: 1000, Shards: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ratelimittest.Run(t, func(*testing.T) ratelimit.Limiter { return ratelimit.NewMemory(c.opts) })
		})
	}
}

// TestMemoryExactTimes checks window and block ends to the nanosecond,
// on synctest's fake clock.
func TestMemoryExactTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		ctx := t.Context()
		check := func(what string, key string, rule ratelimit.Rule, allowed bool, remaining int, resetAfter time.Duration) {
			t.Helper()
			r, err := m.Consume(ctx, key, rule)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want := ratelimit.Result{Allowed: allowed, Limit: rule.Points, Remaining: remaining, ResetAfter: resetAfter}
			if r != want {
				t.Errorf("%s: %+v, want %+v", what, r, want)
			}
		}

		window := ratelimit.Rule{Points: 2, Duration: time.Second}
		check("window: request 1", "w", window, true, 1, time.Second)
		time.Sleep(400 * time.Millisecond)
		check("window: request 2", "w", window, true, 0, 600*time.Millisecond)
		check("window: request 3", "w", window, false, 0, 600*time.Millisecond)
		time.Sleep(600*time.Millisecond - 1)
		check("window: 1ns before its end", "w", window, false, 0, 1)
		time.Sleep(1 + 5*time.Millisecond)
		// The next window starts at this request, not at the previous
		// window's end.
		check("window: next window", "w", window, true, 1, time.Second)

		block := ratelimit.Rule{Points: 1, Duration: time.Second, BlockDuration: 3 * time.Second}
		check("block: request 1", "b", block, true, 0, time.Second)
		time.Sleep(100 * time.Millisecond)
		check("block: request 2 starts the block", "b", block, false, 0, 3*time.Second)
		time.Sleep(2 * time.Second)
		check("block: past the window", "b", block, false, 0, time.Second) // not extended
		time.Sleep(time.Second - 1)
		check("block: 1ns before its end", "b", block, false, 0, 1)
		time.Sleep(1)
		check("block: ended", "b", block, true, 0, time.Second)
	})
}

// TestMemoryBounded floods a small limiter with distinct keys.
func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	const maxKeys = 256
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{MaxKeys: maxKeys, Shards: 4})
	ctx := t.Context()
	// The key whose window ends last is never the one evicted: a full
	// shard evicts the sampled key whose window ends soonest.
	keep := ratelimit.Rule{Points: 10, Duration: time.Hour}
	if _, err := m.Consume(ctx, "keep", keep); err != nil {
		t.Fatal(err)
	}
	flood := ratelimit.Rule{Points: 10, Duration: time.Minute}
	for i := range 10000 {
		if _, err := m.Consume(ctx, "flood-"+strconv.Itoa(i), flood); err != nil {
			t.Fatal(err)
		}
		if n := m.Len(); n > maxKeys {
			t.Fatalf("after %d distinct keys: Len = %d, want at most %d", i+1, n, maxKeys)
		}
	}
	if n := m.Len(); n < maxKeys/2 {
		t.Errorf("after the flood: Len = %d, want the shards about full (%d keys)", n, maxKeys)
	}
	r, err := m.Consume(ctx, "keep", keep)
	if err != nil {
		t.Fatal(err)
	}
	if r.Remaining != keep.Points-2 {
		t.Errorf("key consumed before the flood: Remaining = %d, want %d (evicted and started afresh?)",
			r.Remaining, keep.Points-2)
	}
}

// TestMemorySweepsExpiredKeys checks that expired keys are dropped as new
// keys arrive, on synctest's fake clock.
func TestMemorySweepsExpiredKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxKeys, shards = 256, 4
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{MaxKeys: maxKeys, Shards: shards})
		ctx := t.Context()
		rule := ratelimit.Rule{Points: 10, Duration: time.Second}
		for i := range 1000 {
			if _, err := m.Consume(ctx, "old-"+strconv.Itoa(i), rule); err != nil {
				t.Fatal(err)
			}
		}
		if n := m.Len(); n > maxKeys || n < maxKeys/2 {
			t.Fatalf("after 1000 keys: Len = %d, want about %d", n, maxKeys)
		}
		time.Sleep(2 * time.Second) // every key has expired

		// A flood of keys that expire before the next one comes: each new
		// key finds only expired keys, drops those it samples, and so the
		// expired keys drain away instead of piling up.
		short := ratelimit.Rule{Points: 10, Duration: time.Millisecond}
		for i := range 2000 {
			if _, err := m.Consume(ctx, "new-"+strconv.Itoa(i), short); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		if n := m.Len(); n > shards {
			t.Errorf("after the flood of short-lived keys: Len = %d, want at most %d (the last key of each shard)", n, shards)
		}
	})
}

func TestRuleValidate(t *testing.T) {
	for _, c := range []struct {
		rule ratelimit.Rule
		ok   bool
	}{
		{ratelimit.Rule{Points: 10, Duration: time.Second}, true},
		{ratelimit.Rule{Points: 0, Duration: time.Second}, true},
		{ratelimit.Rule{Points: 1, Duration: time.Millisecond}, true},
		{ratelimit.Rule{Points: 1, Duration: time.Second, BlockDuration: time.Minute}, true},
		{ratelimit.Rule{Points: -1, Duration: time.Second}, false},
		{ratelimit.Rule{Points: 1}, false},
		{ratelimit.Rule{Points: 1, Duration: time.Millisecond - 1}, false},
		{ratelimit.Rule{Points: 1, Duration: -time.Second}, false},
		{ratelimit.Rule{Points: 1, Duration: time.Second, BlockDuration: -1}, false},
	} {
		if err := c.rule.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v.Validate() = %v, want ok %t", c.rule, err, c.ok)
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		resetAfter time.Duration
		want       int64
	}{
		{0, 1},
		{time.Nanosecond, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1500 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{59500 * time.Millisecond, 60},
		{time.Hour, 3600},
	} {
		if got := (ratelimit.Result{ResetAfter: c.resetAfter}).RetryAfterSeconds(); got != c.want {
			t.Errorf("RetryAfterSeconds with ResetAfter %s = %d, want %d", c.resetAfter, got, c.want)
		}
	}
}

// benchRule allows every request of a benchmark.
var benchRule = ratelimit.Rule{Points: 1 << 40, Duration: time.Hour}

// BenchmarkMemoryConsume is the common case: a key already counting.
func BenchmarkMemoryConsume(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	ctx := context.Background()
	const key = "tenant:42:ip:203.0.113.7"
	if _, err := m.Consume(ctx, key, benchRule); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Consume(ctx, key, benchRule); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryConsumeParallel has each goroutine count its own few
// existing keys.
func BenchmarkMemoryConsumeParallel(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	ctx := context.Background()
	const perGoroutine = 4
	keys := benchKeys("parallel", 1024*perGoroutine)
	for _, k := range keys {
		if _, err := m.Consume(ctx, k, benchRule); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		own := keys[(int(next.Add(1)-1)*perGoroutine)%len(keys):][:perGoroutine]
		i := 0
		for pb.Next() {
			if _, err := m.Consume(ctx, own[i%perGoroutine], benchRule); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkMemoryConsumeNewKeys counts keys the limiter does not hold: the
// pool of keys is larger than MaxKeys, so a key has been evicted by the
// time it comes round again, and a full limiter evicts on every insert.
func BenchmarkMemoryConsumeNewKeys(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{MaxKeys: 1 << 16})
	ctx := context.Background()
	keys := newKeysPool()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := m.Consume(ctx, keys[i&(len(keys)-1)], benchRule); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// newKeysPool is BenchmarkMemoryConsumeNewKeys's keys, built once per test
// binary (the benchmark function runs several times).
var newKeysPool = sync.OnceValue(func() []string { return benchKeys("new", 1<<19) })

func benchKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + ":tenant:" + strconv.Itoa(i%97) + ":ip:" + strconv.Itoa(i)
	}
	return keys
}

// globalLockLimiter is the baseline the sharded limiter is measured
// against: the obvious hand-written fixed window, one map behind one mutex.
type globalLockLimiter struct {
	mu    sync.Mutex
	start time.Time
	keys  map[string]*[2]int64 // count, expiresAt
}

func (g *globalLockLimiter) consume(key string, rule ratelimit.Rule) bool {
	now := int64(time.Since(g.start))
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.keys[key]
	if e == nil {
		e = new([2]int64)
		g.keys[key] = e
	}
	if e[1] <= now {
		e[0], e[1] = 0, now+int64(rule.Duration)
	}
	e[0]++
	return e[0] <= int64(rule.Points)
}

// BenchmarkBaselineGlobalLockParallel is BenchmarkMemoryConsumeParallel
// over globalLockLimiter.
func BenchmarkBaselineGlobalLockParallel(b *testing.B) {
	g := &globalLockLimiter{start: time.Now(), keys: map[string]*[2]int64{}}
	const perGoroutine = 4
	keys := benchKeys("parallel", 1024*perGoroutine)
	for _, k := range keys {
		g.consume(k, benchRule)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		own := keys[(int(next.Add(1)-1)*perGoroutine)%len(keys):][:perGoroutine]
		i := 0
		for pb.Next() {
			g.consume(own[i%perGoroutine], benchRule)
			i++
		}
	})
}
