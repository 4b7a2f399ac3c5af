package toggles

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// snapshot is the cache: every live toggle with its overrides, as of a
// version of the version counter. It is never modified once published.
type snapshot struct {
	version      int64
	byIdentifier map[string]*cachedToggle
}

// cachedToggle is a toggle with its default and its overrides by tenant,
// each decoded once so that typed checks allocate nothing.
type cachedToggle struct {
	toggle    *Toggle
	def       cachedValue
	overrides map[string]*cachedValue
}

// cachedValue is a JSON value with its typed forms.
type cachedValue struct {
	raw json.RawMessage
	b   bool    // Boolean: the value, false for null
	s   string  // String: the value, "" for null
	n   float64 // Number: the value, 0 for null
}

func decodeValue(raw json.RawMessage) cachedValue {
	v := cachedValue{raw: raw}
	var x any
	if json.Unmarshal(raw, &x) == nil {
		switch t := x.(type) {
		case bool:
			v.b = t
		case string:
			v.s = t
		case float64:
			v.n = t
		}
	}
	return v
}

func buildSnapshot(version int64, ts []*Toggle, os []*Override) *snapshot {
	s := &snapshot{version: version, byIdentifier: make(map[string]*cachedToggle, len(ts))}
	byID := make(map[string]*cachedToggle, len(ts))
	for _, t := range ts {
		c := &cachedToggle{toggle: t, def: decodeValue(t.DefaultValue), overrides: map[string]*cachedValue{}}
		s.byIdentifier[t.Identifier] = c
		byID[t.ID] = c
	}
	for _, o := range os {
		if c := byID[o.ToggleID]; c != nil {
			v := decodeValue(o.Value)
			c.overrides[o.TenantID] = &v
		}
	}
	return s
}

// cache holds the published snapshot and keeps it fresh.
type cache struct {
	db      *store.DB
	current atomic.Pointer[snapshot]
	// mu serialises reloads, so a slow reload never replaces a newer one.
	mu sync.Mutex
}

// reload publishes the database's state if it is newer than the cache's
// (or force is set). The version is read before the rows: under READ
// COMMITTED the rows may be newer than the version read, never older, and
// a snapshot holding newer rows is simply reloaded again at the next poll.
func (c *cache) reload(ctx context.Context, force bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next *snapshot
	err := c.db.ReadTx(ctx, func(tx *store.Tx) error {
		v, err := readVersion(ctx, tx)
		if err != nil {
			return err
		}
		if cur := c.current.Load(); !force && cur != nil && cur.version == v {
			return nil
		}
		ts, os, err := loadAll(ctx, tx)
		if err != nil {
			return err
		}
		next = buildSnapshot(v, ts, os)
		return nil
	})
	if err == nil && next != nil {
		c.current.Store(next)
	}
	return err
}

// poll checks the version every interval until ctx ends, reloading when
// another process changed something. Failures keep the current snapshot
// and are retried at the next tick.
func (c *cache) poll(ctx context.Context, interval time.Duration, onError func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.reload(ctx, false); err != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
