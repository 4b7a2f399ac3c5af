package toggles

import (
	"context"
	"encoding/json"
)

// The cache is a vcache.Value holding a snapshot: every live toggle with
// its overrides, as loaded by Store.LoadAll, kept fresh by the store's
// version counter "toggles" (see doc.go).

// versionCounter names the store version counter every change bumps.
const versionCounter = "toggles"

// Sync makes this process's cache honour every toggle change committed
// before the call, by this process or another (vcache.Value.Sync). The
// area's own writes read toggles in their transactions and do not need
// it; checks without it lag another process's change by the
// notification's milliseconds on PostgreSQL. A host that gates a write on
// a toggle (refuses it while the toggle is off) calls Sync before the
// check, so that a toggle switched through one server is honoured by the
// next write through any other. On PostgreSQL it reads the version
// counter (one single-row query) and reloads when it moved; on SQLite it
// does nothing. An error means the cache may be stale.
func (s *Service) Sync(ctx context.Context) error { return s.cache.Sync(ctx) }

// snapshot is the cache's value. It is never modified once published.
type snapshot struct {
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

func buildSnapshot(ts []*Toggle, os []*Override) *snapshot {
	s := &snapshot{byIdentifier: make(map[string]*cachedToggle, len(ts))}
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
