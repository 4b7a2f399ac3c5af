package store

import (
	"context"
	"slices"
	"strings"
)

// Scope is the tenant (and organization) a call acts in. httpapi derives it
// from the caller's credential; a host calling a service directly puts one in
// the context with WithScope.
type Scope struct {
	// TenantID is the tenant every read and write is confined to. Required.
	TenantID string
	// OrganizationID is the active organization: creates in
	// organization-scoped areas are stamped with it. May be empty.
	OrganizationID string
	// OrganizationIDs are the organizations the caller may read. Nil means
	// every organization of the tenant.
	OrganizationIDs []string
	// ActorID names who acts, for the records that say who created them
	// (a user id, or "api_key:<id>" for an API key). May be empty.
	ActorID string
}

// AllowsOrganization reports whether the scope may read data of org. Data
// without an organization (org == "") is visible to every organization of
// the tenant.
func (s Scope) AllowsOrganization(org string) bool {
	return org == "" || s.OrganizationIDs == nil || slices.Contains(s.OrganizationIDs, org)
}

// Readable starts a WHERE clause for the rows the scope may read, in a
// table whose tenant and organization columns are tenantCol and orgCol:
// the tenant's rows of no organization or of one AllowsOrganization
// accepts.
func (s Scope) Readable(tenantCol, orgCol string) *Conds {
	c := Where(tenantCol+" = ?", s.TenantID)
	if s.OrganizationIDs != nil {
		placeholders := make([]string, len(s.OrganizationIDs))
		for i, id := range s.OrganizationIDs {
			placeholders[i] = c.Add(id)
		}
		if len(placeholders) == 0 {
			c.And(orgCol + " IS NULL")
		} else {
			c.And("(" + orgCol + " IS NULL OR " + orgCol + " IN (" + strings.Join(placeholders, ", ") + "))")
		}
	}
	return c
}

type scopeKey struct{}

// WithScope returns a context carrying sc.
func WithScope(ctx context.Context, sc Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

// ScopeFrom returns the scope in ctx, or ErrNoScope when there is none or
// it names no tenant. Service methods call it once and pass the scope
// explicitly to store methods.
func ScopeFrom(ctx context.Context) (Scope, error) {
	sc, ok := ctx.Value(scopeKey{}).(Scope)
	if !ok || sc.TenantID == "" {
		return Scope{}, ErrNoScope
	}
	return sc, nil
}
