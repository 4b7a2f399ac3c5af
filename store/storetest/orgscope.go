package storetest

import (
	"context"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// OrgScopes are the scopes of one tenant that an organization-scoped area
// tests its reads and writes with, named for subtests: Blind ones must not
// see a row of organization o1 (its reads answer not found, its lists leave
// the row out), Seeing ones must. Every area's organization test walks the
// same grid, so a new area cannot forget a case.
type OrgScopes struct {
	Blind, Seeing map[string]store.Scope // see the type comment
}

// NewOrgScopes returns the grid for tenant and two of its organizations:
// the data's (o1) and another (o2).
func NewOrgScopes(tenant, o1, o2 string) OrgScopes {
	return OrgScopes{
		Blind: map[string]store.Scope{
			"O2 only":         {TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o2}},
			"no organization": {TenantID: tenant, OrganizationIDs: []string{}},
		},
		Seeing: map[string]store.Scope{
			"all organizations": {TenantID: tenant, OrganizationID: o2},
			"O1 among others":   {TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o2, o1}},
			"O1 itself":         {TenantID: tenant, OrganizationID: o1, OrganizationIDs: []string{o1}},
		},
	}
}

// RunBlind runs fn as a subtest for each blind scope, with a context
// carrying it.
func (g OrgScopes) RunBlind(t *testing.T, fn func(t *testing.T, ctx context.Context)) {
	t.Helper()
	run(t, g.Blind, fn)
}

// RunSeeing runs fn as a subtest for each seeing scope, with a context
// carrying it.
func (g OrgScopes) RunSeeing(t *testing.T, fn func(t *testing.T, ctx context.Context)) {
	t.Helper()
	run(t, g.Seeing, fn)
}

func run(t *testing.T, scopes map[string]store.Scope, fn func(t *testing.T, ctx context.Context)) {
	t.Helper()
	for name, sc := range scopes {
		t.Run(name, func(t *testing.T) { fn(t, store.WithScope(t.Context(), sc)) })
	}
}
