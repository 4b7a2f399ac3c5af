package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// Memory is a Limiter that keeps its counters in this process: a restart
// forgets them and several processes count separately. It is sharded by key
// hash, so concurrent requests for different keys rarely share a lock, and
// it is bounded: at most MaxKeys keys are kept (see MemoryOptions).
type Memory struct {
	seed     maphash.Seed
	shards   []memoryShard
	perShard int
	start    time.Time
}

// MemoryOptions tunes a Memory limiter. The zero value is ready to use.
type MemoryOptions struct {
	// MaxKeys bounds how many keys are kept (default 131072, about 20 MB
	// with short keys). When a shard is full, a new key first evicts expired
	// keys and otherwise the sampled key whose window ends soonest, so a
	// flood of distinct keys cannot grow memory without bound. The cost of
	// eviction under such a flood is that an evicted key starts afresh.
	MaxKeys int
	// Shards is the number of independently locked shards (default 64,
	// rounded up to a power of two).
	Shards int
}

// memoryShard is one lock and the keys it guards, padded so neighbouring
// shards do not share a cache line.
type memoryShard struct {
	mu   sync.Mutex
	keys map[string]*memoryEntry
	_    [48]byte
}

// memoryEntry is one key's window: how many requests it has counted and when
// the window (or block) ends, in nanoseconds since the limiter's start.
type memoryEntry struct {
	count     int64
	expiresAt int64
}

// evictionSample is how many keys a full shard looks at to choose what to
// evict; sweepSample is how many a new key looks at to drop expired keys.
const (
	evictionSample = 8
	sweepSample    = 2
)

// NewMemory returns an in-process limiter.
func NewMemory(opts MemoryOptions) *Memory {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = 1 << 17
	}
	shards := 64
	if opts.Shards > 0 {
		shards = 1
		for shards < opts.Shards && shards < 1<<12 {
			shards <<= 1
		}
	}
	m := &Memory{
		seed:     maphash.MakeSeed(),
		shards:   make([]memoryShard, shards),
		perShard: max(maxKeys/shards, 1),
		start:    time.Now(),
	}
	for i := range m.shards {
		m.shards[i].keys = make(map[string]*memoryEntry)
	}
	return m
}

// now is the monotonic time since the limiter started, in nanoseconds.
func (m *Memory) now() int64 {
	return int64(time.Since(m.start))
}

func (m *Memory) shard(key string) *memoryShard {
	return &m.shards[maphash.String(m.seed, key)&uint64(len(m.shards)-1)]
}

// Consume implements Limiter. It never fails for a valid rule.
func (m *Memory) Consume(_ context.Context, key string, rule Rule) (Result, error) {
	if err := rule.Validate(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrInvalidRule, err)
	}
	return m.consume(key, rule, m.now()), nil
}

func (m *Memory) consume(key string, rule Rule, now int64) Result {
	s := m.shard(key)
	s.mu.Lock()
	e := s.keys[key]
	if e == nil {
		e = s.insert(key, now, m.perShard)
	}
	if e.expiresAt <= now {
		e.count, e.expiresAt = 0, now+int64(rule.Duration)
	}
	if e.count <= int64(rule.Points) {
		e.count++ // saturates at Points+1: a refused key counts no further
		if e.count == int64(rule.Points)+1 && rule.BlockDuration > 0 {
			e.expiresAt = now + int64(rule.BlockDuration)
		}
	}
	count, expiresAt := e.count, e.expiresAt
	s.mu.Unlock()
	return result(rule, count, time.Duration(expiresAt-now))
}

// result builds the Result of a key that has counted count requests and
// whose window ends in ttl; both backends share it.
func result(rule Rule, count int64, ttl time.Duration) Result {
	allowed := count <= int64(rule.Points)
	remaining := 0
	if allowed {
		remaining = rule.Points - int(count)
	}
	return Result{Allowed: allowed, Limit: rule.Points, Remaining: remaining, ResetAfter: max(ttl, 0)}
}

// insert adds a new key (whose window starts expired), first making room:
// a few sampled keys are dropped if expired, and a full shard evicts the
// sampled key whose window ends soonest. s.mu is held.
func (s *memoryShard) insert(key string, now int64, limit int) *memoryEntry {
	sample := sweepSample
	if len(s.keys) >= limit {
		sample = evictionSample
	}
	var soonest string
	soonestAt, seen := int64(0), 0
	for k, e := range s.keys { // map iteration starts at a random key
		if seen == sample {
			break
		}
		seen++
		if e.expiresAt <= now {
			delete(s.keys, k)
			continue
		}
		if soonest == "" || e.expiresAt < soonestAt {
			soonest, soonestAt = k, e.expiresAt
		}
	}
	if len(s.keys) >= limit && soonest != "" {
		delete(s.keys, soonest)
	}
	e := &memoryEntry{}
	s.keys[key] = e
	return e
}

// Reset implements Limiter.
func (m *Memory) Reset(_ context.Context, key string) error {
	s := m.shard(key)
	s.mu.Lock()
	delete(s.keys, key)
	s.mu.Unlock()
	return nil
}

// Len is the number of keys currently held, expired ones included until
// they are swept.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.keys)
		s.mu.Unlock()
	}
	return n
}
