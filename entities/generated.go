package entities

import (
	"slices"
	"strings"
	"sync"
)

// CodeEntity is an entity the host application defines in code (a
// "generated" entity): one of its own types that tenants extend
// with custom fields. Every tenant sees it; a tenant's or organization's
// custom entity of the same id overrides how it is shown (label,
// description, labelField, defaultEditor, showInSidebar).
type CodeEntity struct {
	EntityID      string
	Label         string
	Description   string
	LabelField    string // see Entity.LabelField
	DefaultEditor string // see Entity.DefaultEditor
	ShowInSidebar bool   // see Entity.ShowInSidebar
}

// codeEntities is a Service's registry of CodeEntity, by entity id.
type codeEntities struct {
	mu sync.RWMutex
	m  map[string]CodeEntity
}

// RegisterEntity adds (or replaces) a code-defined entity, listed for
// every tenant with source "code". Hosts call it at start-up, next to
// DefineGlobal for the entity's global fields. The entity id and the
// fields are checked as for UpsertEntity.
func (s *Service) RegisterEntity(e CodeEntity) error {
	show := e.ShowInSidebar
	in := EntityInput{EntityID: e.EntityID, Label: e.Label, Description: e.Description, LabelField: e.LabelField,
		DefaultEditor: e.DefaultEditor, ShowInSidebar: &show}
	if err := in.normalize(); err != nil {
		return err
	}
	e.EntityID = in.EntityID
	s.code.mu.Lock()
	defer s.code.mu.Unlock()
	if s.code.m == nil {
		s.code.m = map[string]CodeEntity{}
	}
	s.code.m[e.EntityID] = e
	return nil
}

// codeList returns the registered code entities in entity id order.
func (s *Service) codeList() []CodeEntity {
	s.code.mu.RLock()
	defer s.code.mu.RUnlock()
	out := make([]CodeEntity, 0, len(s.code.m))
	for _, e := range s.code.m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b CodeEntity) int { return strings.Compare(a.EntityID, b.EntityID) })
	return out
}

// summarize merges the code entities with the custom ones visible to the
// caller (list: by entity id, the organization's before the tenant's):
// a custom entity of a code entity's id overrides how it is shown and
// keeps source "code".
func summarize(code []CodeEntity, list []*Entity) []EntitySummary {
	custom := map[string]*Entity{}
	for _, e := range list {
		if custom[e.EntityID] == nil {
			custom[e.EntityID] = e // the organization's comes first
		}
	}
	var out []EntitySummary
	for _, c := range code {
		sum := EntitySummary{EntityID: c.EntityID, Source: "code", Label: c.Label, Description: c.Description,
			LabelField: c.LabelField, DefaultEditor: c.DefaultEditor, ShowInSidebar: c.ShowInSidebar, active: true}
		if e := custom[c.EntityID]; e != nil {
			overrideSummary(&sum, e)
			delete(custom, c.EntityID)
		}
		out = append(out, sum)
	}
	for _, e := range list {
		if custom[e.EntityID] != e {
			continue
		}
		sum := EntitySummary{EntityID: e.EntityID, Source: "custom"}
		overrideSummary(&sum, e)
		out = append(out, sum)
	}
	slices.SortStableFunc(out, func(a, b EntitySummary) int { return strings.Compare(a.EntityID, b.EntityID) })
	return out
}

func overrideSummary(sum *EntitySummary, e *Entity) {
	updated := e.UpdatedAt
	sum.Label, sum.Description, sum.LabelField, sum.DefaultEditor = e.Label, e.Description, e.LabelField, e.DefaultEditor
	sum.ShowInSidebar, sum.UpdatedAt, sum.active = e.ShowInSidebar, &updated, e.IsActive
}
