package store_test

import (
	"slices"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// Readable: the tenant always; the organization only when the scope
// restricts it (no organization, or one of the readable ones).
func TestScopeReadable(t *testing.T) {
	for name, tc := range map[string]struct {
		sc       store.Scope
		sql      string
		values   []any
		allowsB1 bool
	}{
		"every organization": {store.Scope{TenantID: "t"}, "t.tenant_id = $1", []any{"t"}, true},
		"none":               {store.Scope{TenantID: "t", OrganizationIDs: []string{}}, "t.tenant_id = $1 AND t.org IS NULL", []any{"t"}, false},
		"some": {store.Scope{TenantID: "t", OrganizationIDs: []string{"a", "b1"}},
			"t.tenant_id = $1 AND (t.org IS NULL OR t.org IN ($2, $3))", []any{"t", "a", "b1"}, true},
	} {
		c := tc.sc.Readable("t.tenant_id", "t.org")
		if c.SQL() != tc.sql || !slices.Equal(c.Values(), tc.values) {
			t.Errorf("%s: %q %v, want %q %v", name, c.SQL(), c.Values(), tc.sql, tc.values)
		}
		if tc.sc.AllowsOrganization("b1") != tc.allowsB1 {
			t.Errorf("%s: AllowsOrganization disagrees with the predicate", name)
		}
	}
}

func TestColumns(t *testing.T) {
	if got := store.Columns("", []string{"b"}, "a", "b"); got != "a, COALESCE(b, '')" {
		t.Errorf("unqualified: %q", got)
	}
	if got := store.Columns("t", []string{"b"}, "a", "b", "c"); got != "t.a, COALESCE(t.b, ''), t.c" {
		t.Errorf("qualified: %q", got)
	}
}
