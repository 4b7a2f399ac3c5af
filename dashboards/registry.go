package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// registry holds the widget definitions, in registration order. Reads
// take a snapshot; Register may run while requests are served.
type registry struct {
	mu   sync.RWMutex
	defs []*WidgetDefinition
	byID map[string]*WidgetDefinition
}

// Register adds a widget definition. The id must be new, non-empty, at
// most MaxDefinitionIDLength characters and free of spaces; the title is
// required; DefaultGrid must be a valid grid (a zero DefaultGrid becomes
// {0, 0, 4, 3}); DefaultConfig, when set, a JSON object.
func (s *Service) Register(def WidgetDefinition) error {
	if def.ID == "" || len(def.ID) > MaxDefinitionIDLength || strings.ContainsAny(def.ID, " \t\r\n/") {
		return fmt.Errorf("dashboards: widget id %q: must be 1 to %d characters without spaces or slashes", def.ID, MaxDefinitionIDLength)
	}
	if def.Title == "" {
		return fmt.Errorf("dashboards: widget %q: Title is required", def.ID)
	}
	if def.DefaultGrid == (Grid{}) {
		def.DefaultGrid = Grid{W: 4, H: 3}
	}
	if msg := checkGrid(def.DefaultGrid); msg != "" {
		return fmt.Errorf("dashboards: widget %q: DefaultGrid: %s", def.ID, msg)
	}
	if def.DefaultConfig == nil {
		def.DefaultConfig = json.RawMessage(`{}`)
	} else if !isObject(def.DefaultConfig) {
		return fmt.Errorf("dashboards: widget %q: DefaultConfig must be a JSON object", def.ID)
	}
	def.Features = slices.Clone(def.Features)
	if def.Features == nil {
		def.Features = []string{}
	}
	r := &s.registry
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[def.ID]; ok {
		return fmt.Errorf("dashboards: widget %q is already registered", def.ID)
	}
	if r.byID == nil {
		r.byID = map[string]*WidgetDefinition{}
	}
	r.defs = append(r.defs, &def)
	r.byID[def.ID] = &def
	return nil
}

// Definitions returns every registered definition, in registration order.
func (s *Service) Definitions() []WidgetDefinition {
	r := &s.registry
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]WidgetDefinition, len(r.defs))
	for i, d := range r.defs {
		out[i] = *d
	}
	return out
}

// definition returns the registered definition with the id.
func (s *Service) definition(id string) (*WidgetDefinition, bool) {
	r := &s.registry
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.byID[id]
	return d, ok
}

// snapshot returns the definitions in registration order.
func (s *Service) snapshot() []*WidgetDefinition {
	r := &s.registry
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.defs)
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return json.Valid(raw)
}
