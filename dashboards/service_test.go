package dashboards_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// fakeDirectory is a Directory over maps: roles by id with their
// features, users by id with their roles. Ids are per tenant.
type fakeDirectory struct {
	roles map[string][]string // "tenant/role" → features
	users map[string][]string // "tenant/user" → role ids
}

func holder(features []string) func(string) bool {
	return func(f string) bool { return slices.Contains(features, f) || slices.Contains(features, "*") }
}

func (d fakeDirectory) Role(_ context.Context, tenantID, roleID string) (dashboards.Access, error) {
	fs, ok := d.roles[tenantID+"/"+roleID]
	if !ok {
		return dashboards.Access{}, store.ErrNotFound
	}
	return dashboards.Access{RoleIDs: []string{roleID}, Holds: holder(fs)}, nil
}

func (d fakeDirectory) User(_ context.Context, tenantID, userID string) (dashboards.Access, error) {
	roles, ok := d.users[tenantID+"/"+userID]
	if !ok {
		return dashboards.Access{}, store.ErrNotFound
	}
	var fs []string
	for _, r := range roles {
		fs = append(fs, d.roles[tenantID+"/"+r]...)
	}
	return dashboards.Access{RoleIDs: roles, Holds: holder(fs)}, nil
}

// testService is a Service with widgets a (no feature, default), b
// (feature f.b, default), c (feature f.c) and d (no feature, with data).
func testService(t *testing.T, db *store.DB, dir dashboards.Directory) *dashboards.Service {
	t.Helper()
	s := must(dashboards.New(db, dashboards.Options{Directory: dir}))
	for _, d := range []dashboards.WidgetDefinition{
		{ID: "a", Title: "A", DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 0, Y: 0, W: 3, H: 2}, DefaultConfig: json.RawMessage(`{"n":1}`)},
		{ID: "b", Title: "B", Features: []string{"f.b"}, DefaultEnabled: true},
		{ID: "c", Title: "C", Features: []string{"f.c"}},
		{ID: "d", Title: "D", Data: func(ctx context.Context) (any, error) {
			sc, err := store.ScopeFrom(ctx)
			return map[string]string{"tenant": sc.TenantID}, err
		}},
	} {
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func ids(defs []dashboards.WidgetDefinition) string {
	var out []string
	for _, d := range defs {
		out = append(out, d.ID)
	}
	return strings.Join(out, ",")
}

func itemIDs(items []dashboards.WidgetItem) string {
	var out []string
	for _, it := range items {
		out = append(out, it.DefinitionID)
	}
	return strings.Join(out, ",")
}

// The resolution: a user override is exactly its widgets; otherwise the
// union of the roles' records; no record at all, every widget; then the
// features. Checked through Widgets (the caller), RoleWidgets and
// UserWidgets, which must agree.
func TestVisibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		tn := "t-" + store.NewID()
		dir := fakeDirectory{
			roles: map[string][]string{tn + "/plain": nil, tn + "/fb": {"f.b"}, tn + "/all": {"*"}},
			users: map[string][]string{tn + "/u1": {"plain", "fb"}, tn + "/u2": {"plain"}, tn + "/u3": {"all"}},
		}
		s := testService(t, db, dir)
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: tn})
		user := func(id string) dashboards.Viewer {
			a, err := dir.User(ctx, tn, id)
			if err != nil {
				t.Fatal(err)
			}
			return dashboards.Viewer{Owner: id, UserID: id, Access: a}
		}
		check := func(what string, v dashboards.Viewer, want string) {
			t.Helper()
			defs, err := s.Widgets(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(defs); got != want {
				t.Fatalf("%s: sees %q, want %q", what, got, want)
			}
			if v.UserID == "" {
				return
			}
			_, items, err := s.UserWidgets(ctx, v.UserID)
			if err != nil {
				t.Fatal(err)
			}
			if got := itemIDs(items); got != want {
				t.Fatalf("%s: UserWidgets lists %q, Widgets %q", what, got, want)
			}
		}
		// No record anywhere: every widget whose features are held.
		check("u1 (plain+fb), no records", user("u1"), "a,b,d")
		check("u2 (plain), no records", user("u2"), "a,d")
		check("u3 (*), no records", user("u3"), "a,b,c,d")
		check("super admin", dashboards.Viewer{Owner: "x", Access: dashboards.Access{SuperAdmin: true}}, "a,b,c,d")

		// A record on one role of u1: the union of records applies, so the
		// role without one adds nothing.
		if _, err := s.SetRoleWidgets(ctx, "plain", []string{"c", "d", "d"}); err != nil {
			t.Fatal(err)
		}
		check("u1 with plain→[c d]", user("u1"), "d") // c needs f.c
		check("u3 untouched", user("u3"), "a,b,c,d")
		if _, err := s.SetRoleWidgets(ctx, "fb", []string{"b"}); err != nil {
			t.Fatal(err)
		}
		check("u1 with plain→[c d], fb→[b]", user("u1"), "b,d")

		// Role previews: the record, then the role's features.
		for role, want := range map[string]string{"plain": "d", "fb": "b", "all": "a,b,c,d"} {
			items, err := s.RoleWidgets(ctx, role)
			if err != nil {
				t.Fatal(err)
			}
			if got := itemIDs(items); got != want {
				t.Fatalf("RoleWidgets(%s) = %q, want %q", role, got, want)
			}
		}

		// A user override replaces the roles' records, features still apply.
		if _, err := s.SetUserWidgets(ctx, "u1", dashboards.ModeOverride, []string{"a", "c"}); err != nil {
			t.Fatal(err)
		}
		check("u1 override [a c]", user("u1"), "a")
		if mode, _, _ := s.UserWidgets(ctx, "u1"); mode != dashboards.ModeOverride {
			t.Fatalf("mode %q, want override", mode)
		}
		// An API key (no user) holding u1's roles is not overridden.
		key := user("u1")
		key.UserID, key.Owner = "", "api_key:k"
		check("key with u1's roles", key, "b,d")
		// An empty override hides everything.
		if _, err := s.SetUserWidgets(ctx, "u1", dashboards.ModeOverride, nil); err != nil {
			t.Fatal(err)
		}
		check("u1 empty override", user("u1"), "")
		// Back to inherit (the ids sent along are ignored).
		if got, err := s.SetUserWidgets(ctx, "u1", dashboards.ModeInherit, []string{"a"}); err != nil || len(got) != 0 {
			t.Fatalf("inherit: %v, %v", got, err)
		}
		check("u1 inherits again", user("u1"), "b,d")
		// An empty role list is a record of no widget: plain adds none,
		// and with fb's also empty u1 sees nothing.
		if _, err := s.SetRoleWidgets(ctx, "plain", []string{}); err != nil {
			t.Fatal(err)
		}
		check("u1 with plain→[], fb→[b]", user("u1"), "b")
		if _, err := s.SetRoleWidgets(ctx, "fb", []string{}); err != nil {
			t.Fatal(err)
		}
		check("u1 with both empty", user("u1"), "")
		// A nil list is refused (it used to mean "remove"), naming the field.
		var ve *store.ValidationError
		if _, err := s.SetRoleWidgets(ctx, "fb", nil); !errors.As(err, &ve) || ve.Fields["widgetIds"] == "" {
			t.Fatalf("nil widgetIds: %v", err)
		}
		// ClearRoleWidgets removes the records: the roles restrict nothing.
		for _, role := range []string{"plain", "fb"} {
			if err := s.ClearRoleWidgets(ctx, role); err != nil {
				t.Fatal(err)
			}
		}
		check("u1 after both records removed", user("u1"), "a,b,d")
		// ForgetUser and ForgetRole remove the records of a deleted user or
		// role.
		if _, err := s.SetUserWidgets(ctx, "u1", dashboards.ModeOverride, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetRoleWidgets(ctx, "plain", []string{}); err != nil {
			t.Fatal(err)
		}
		check("u1 override [a]", user("u1"), "a")
		if err := s.ForgetUser(ctx, db, tn, "u1"); err != nil {
			t.Fatal(err)
		}
		check("u1 forgotten: plain→[] applies", user("u1"), "")
		if err := s.ForgetRole(ctx, db, tn, "plain"); err != nil {
			t.Fatal(err)
		}
		check("plain forgotten too", user("u1"), "a,b,d")
	}, dashboards.Migrations)
}

func TestVisibilityErrors(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, dashboards.Migrations)
	tn := "t-" + store.NewID()
	dir := fakeDirectory{roles: map[string][]string{tn + "/r": nil}, users: map[string][]string{tn + "/u": {"r"}}}
	s := testService(t, db, dir)
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tn})
	other := store.WithScope(t.Context(), store.Scope{TenantID: "t-other"})

	var ve *store.ValidationError
	if _, err := s.SetRoleWidgets(ctx, "r", []string{"a", "nope", "b", "also-nope"}); !errors.As(err, &ve) ||
		ve.Fields["widgetIds[1]"] == "" || ve.Fields["widgetIds[3]"] == "" || len(ve.Fields) != 2 {
		t.Fatalf("unknown widget ids: %v", err)
	}
	if _, err := s.SetUserWidgets(ctx, "u", "sometimes", nil); !errors.As(err, &ve) || ve.Fields["mode"] == "" {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := s.RoleWidgets(ctx, ""); !errors.As(err, &ve) || ve.Fields["roleId"] == "" {
		t.Fatalf("no roleId: %v", err)
	}
	for name, err := range map[string]error{
		"unknown role":        second(s.RoleWidgets(ctx, "zz")),
		"other tenant's role": second(s.RoleWidgets(other, "r")),
		"set other's role":    second(s.SetRoleWidgets(other, "r", []string{"a"})),
		"unknown user":        third(s.UserWidgets(ctx, "zz")),
		"other tenant's user": third(s.UserWidgets(other, "u")),
		"set other's user":    second(s.SetUserWidgets(other, "u", dashboards.ModeOverride, []string{"a"})),
		"data of unknown":     second(s.WidgetData(ctx, dashboards.Viewer{Owner: "x", Access: dashboards.Access{SuperAdmin: true}}, "zz")),
		"data without a Data": second(s.WidgetData(ctx, dashboards.Viewer{Owner: "x", Access: dashboards.Access{SuperAdmin: true}}, "a")),
		"item of no layout":   second(s.LayoutItem(ctx, dashboards.Viewer{Owner: "x"}, store.NewID())),
		"delete unknown item": second(s.DeleteLayoutItem(ctx, dashboards.Viewer{Owner: "x"}, store.NewID(), "")),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.WidgetData(ctx, dashboards.Viewer{Owner: "x"}, "c"); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("data of a widget the caller may not see: %v, want ErrForbidden", err)
	}
	got, err := s.WidgetData(ctx, dashboards.Viewer{Owner: "x"}, "d")
	if err != nil || got.(map[string]string)["tenant"] != tn {
		t.Errorf("data in the caller's scope: %v, %v", got, err)
	}
	noDir := testService(t, db, nil)
	if _, err := noDir.RoleWidgets(ctx, "r"); !errors.Is(err, dashboards.ErrNoDirectory) {
		t.Errorf("without a directory: %v", err)
	}
	if _, err := s.Widgets(t.Context(), dashboards.Viewer{Owner: "x"}); !errors.Is(err, store.ErrNoScope) {
		t.Errorf("without a scope: %v", err)
	}
	if _, _, err := s.Layout(ctx, dashboards.Viewer{}); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("a layout without an owner: %v", err)
	}
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

func TestRegister(t *testing.T) {
	t.Parallel()
	s := must(dashboards.New(nil, dashboards.Options{}))
	for name, d := range map[string]dashboards.WidgetDefinition{
		"no id":        {Title: "x"},
		"space in id":  {ID: "a b", Title: "x"},
		"no title":     {ID: "x"},
		"bad grid":     {ID: "x", Title: "x", DefaultGrid: dashboards.Grid{X: -1, W: 1, H: 1}},
		"config array": {ID: "x", Title: "x", DefaultConfig: json.RawMessage(`[1]`)},
	} {
		if err := s.Register(d); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
	if err := s.Register(dashboards.WidgetDefinition{ID: "x", Title: "X"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(dashboards.WidgetDefinition{ID: "x", Title: "again"}); err == nil {
		t.Error("a duplicate id registered")
	}
	defs := s.Definitions()
	if len(defs) != 1 || defs[0].DefaultGrid != (dashboards.Grid{W: 4, H: 3}) || string(defs[0].DefaultConfig) != "{}" {
		t.Errorf("defaults: %+v", defs)
	}
}
