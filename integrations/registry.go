package integrations

import (
	"fmt"
	"slices"
	"sync"
)

// registry holds the definitions and bundles, in registration order.
type registry struct {
	mu      sync.RWMutex
	defs    []*Definition
	byID    map[string]*Definition
	bundles map[string]*Bundle
}

var fieldTypes = []FieldType{FieldText, FieldSecret, FieldSelect, FieldBoolean, FieldURL}

// Register adds an integration definition: an id not taken, a title,
// credential fields with unique keys and known types (a select with
// options), API versions with unique ids and at most one default, and a
// registered bundle when BundleID is set.
func (s *Service) Register(def Definition) error {
	if def.ID == "" || def.Title == "" {
		return fmt.Errorf("integrations: a definition needs an ID and a Title (got %q)", def.ID)
	}
	if err := checkFields(def.ID, def.Credentials); err != nil {
		return err
	}
	defaults, seen := 0, map[string]bool{}
	for _, v := range def.APIVersions {
		if v.ID == "" || seen[v.ID] {
			return fmt.Errorf("integrations: %s: API version ids must be set and unique (%q)", def.ID, v.ID)
		}
		seen[v.ID] = true
		if v.Default {
			defaults++
		}
	}
	if defaults > 1 {
		return fmt.Errorf("integrations: %s: at most one API version is the default", def.ID)
	}
	def.Credentials = append([]Field{}, def.Credentials...) // [] in JSON when none
	def.APIVersions = append([]APIVersion{}, def.APIVersions...)
	r := &s.registry
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[def.ID]; ok {
		return fmt.Errorf("integrations: %s is already registered", def.ID)
	}
	if def.BundleID != "" && r.bundles[def.BundleID] == nil {
		return fmt.Errorf("integrations: %s: bundle %q is not registered", def.ID, def.BundleID)
	}
	if r.byID == nil {
		r.byID = map[string]*Definition{}
	}
	r.defs = append(r.defs, &def)
	r.byID[def.ID] = &def
	return nil
}

// RegisterBundle adds a bundle, before the definitions that name it.
func (s *Service) RegisterBundle(b Bundle) error {
	if b.ID == "" || b.Title == "" {
		return fmt.Errorf("integrations: a bundle needs an ID and a Title (got %q)", b.ID)
	}
	if err := checkFields(b.ID, b.Credentials); err != nil {
		return err
	}
	r := &s.registry
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bundles[b.ID] != nil {
		return fmt.Errorf("integrations: bundle %s is already registered", b.ID)
	}
	if r.bundles == nil {
		r.bundles = map[string]*Bundle{}
	}
	r.bundles[b.ID] = &b
	return nil
}

func checkFields(owner string, fields []Field) error {
	keys := map[string]bool{}
	for _, f := range fields {
		switch {
		case f.Key == "" || keys[f.Key]:
			return fmt.Errorf("integrations: %s: credential keys must be set and unique (%q)", owner, f.Key)
		case !slices.Contains(fieldTypes, f.Type):
			return fmt.Errorf("integrations: %s: field %s: unknown type %q", owner, f.Key, f.Type)
		case f.Type == FieldSelect && len(f.Options) == 0:
			return fmt.Errorf("integrations: %s: select field %s has no options", owner, f.Key)
		}
		keys[f.Key] = true
	}
	return nil
}

// Definition returns the registered definition with the id.
func (s *Service) Definition(id string) (Definition, bool) {
	s.registry.mu.RLock()
	defer s.registry.mu.RUnlock()
	d, ok := s.registry.byID[id]
	if !ok {
		return Definition{}, false
	}
	return *d, true
}

// Definitions returns every registered definition, in registration order.
func (s *Service) Definitions() []Definition {
	s.registry.mu.RLock()
	defer s.registry.mu.RUnlock()
	out := make([]Definition, len(s.registry.defs))
	for i, d := range s.registry.defs {
		out[i] = *d
	}
	return out
}

// bundle returns the registered bundle with the id.
func (s *Service) bundle(id string) (*Bundle, bool) {
	s.registry.mu.RLock()
	defer s.registry.mu.RUnlock()
	b, ok := s.registry.bundles[id]
	return b, ok
}

// schema is the credential fields of a definition: its own, or its
// bundle's when it has none.
func (s *Service) schema(d Definition) []Field {
	if len(d.Credentials) == 0 && d.BundleID != "" {
		if b, ok := s.bundle(d.BundleID); ok {
			return b.Credentials
		}
	}
	return d.Credentials
}

// defaultVersion is the version a tenant uses until it picks one: the
// default, else the first; nil when the integration is not versioned.
func defaultVersion(d Definition) *string {
	for _, v := range d.APIVersions {
		if v.Default {
			return &v.ID
		}
	}
	if len(d.APIVersions) > 0 {
		return &d.APIVersions[0].ID
	}
	return nil
}
