package toggles

import (
	"encoding/json"
)

// The cache is a vcache.Value holding a snapshot: every live toggle with
// its overrides, as loaded by Store.LoadAll, kept fresh by the store's
// version counter "toggles" (see doc.go).

// versionCounter names the store version counter every change bumps.
const versionCounter = "toggles"

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
