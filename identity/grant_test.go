package identity

import (
	"errors"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

func TestCheckGrant(t *testing.T) {
	t.Parallel()
	hooks := &Identity{Features: []string{"webhooks.*", "entities.records.view"}}
	limited := &Identity{Features: []string{"*"}, OrganizationIDs: []string{"o1", "o2"}}
	none := &Identity{Features: []string{"*"}, OrganizationIDs: []string{}}
	super := &Identity{IsSuperAdmin: true, OrganizationIDs: []string{"o1"}}
	tests := []struct {
		name  string
		actor *Identity
		grant Access
		ok    bool
	}{
		{"nothing", hooks, Access{}, true},
		{"a feature it holds", hooks, Access{Features: []string{"entities.records.view"}}, true},
		{"under its wildcard", hooks, Access{Features: []string{"webhooks.view", "webhooks.secrets"}}, true},
		{"its wildcard itself", hooks, Access{Features: []string{"webhooks.*"}}, true},
		{"a narrower wildcard", hooks, Access{Features: []string{"webhooks.secrets.*"}}, true},
		{"the wildcard's root", hooks, Access{Features: []string{"webhooks"}}, true},
		{"a feature it lacks", hooks, Access{Features: []string{"webhooks.view", "entities.records.manage"}}, false},
		{"a wider wildcard", hooks, Access{Features: []string{"entities.*"}}, false},
		{"everything", hooks, Access{Features: []string{"*"}}, false},
		{"a lookalike prefix", hooks, Access{Features: []string{"webhooksx.view"}}, false},
		{"super admin", hooks, Access{SuperAdmin: true}, false},
		{"unrestricted actor, restricted grant", hooks, Access{Organizations: []string{"o9"}}, true},
		{"limited: within", limited, Access{Features: []string{"*"}, Organizations: []string{"o2"}}, true},
		{"limited: all of its own", limited, Access{Organizations: []string{"o1", "o2"}}, true},
		{"limited: every organization", limited, Access{Features: []string{"x.view"}}, false},
		{"limited: another organization", limited, Access{Organizations: []string{"o1", "o3"}}, false},
		{"limited: no organization at all", limited, Access{Organizations: []string{}}, true},
		{"no organizations: grants none", none, Access{Organizations: []string{"o1"}}, false},
		{"no organizations: empty list", none, Access{Organizations: []string{}}, true},
		{"super admin grants anything", super, Access{SuperAdmin: true, Features: []string{"*"}}, true},
	}
	for _, tt := range tests {
		err := CheckGrant(tt.actor, tt.grant)
		if (err == nil) != tt.ok {
			t.Errorf("%s: CheckGrant = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrEscalation) || !errors.Is(err, store.ErrForbidden) || store.PublicMessage(err) == "") {
			t.Errorf("%s: error %v is not an ErrEscalation and ErrForbidden with a public message", tt.name, err)
		}
	}
}

func TestDescendantsOf(t *testing.T) {
	t.Parallel()
	p := func(s string) *string { return &s }
	orgs := []*Organization{{ID: "a"}, {ID: "b", ParentID: p("a")}, {ID: "c", ParentID: p("b")}, {ID: "d", ParentID: p("a")}, {ID: "e"}}
	got := descendantsOf(orgs, "a")
	if len(got) != 3 || got[0] != "b" || got[1] != "d" || got[2] != "c" {
		t.Errorf("descendantsOf(a) = %v, want [b d c]", got)
	}
	if got := descendantsOf(orgs, "e"); len(got) != 0 {
		t.Errorf("descendantsOf(e) = %v, want none", got)
	}
}
