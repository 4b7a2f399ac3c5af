// Package dashboardstest is the conformance suite for dashboards.Store
// implementations: Run checks every behaviour the dashboards Service
// relies on from its Store, as documented on dashboards.Store. The SQL
// store runs it on SQLite and PostgreSQL (dashboards/store_test.go); a
// host that plugs in its own Store runs it against that:
//
//	func TestMyStore(t *testing.T) {
//		dashboardstest.Run(t, func(t *testing.T) (*store.DB, dashboards.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// Every subtest works in tenants of its own (random ids), so one database
// may serve them all.
package dashboardstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/store"
)

// Run runs the suite. newStore is called once per subtest and returns a
// migrated database and the Store to test on it. Writes get a transaction
// on that database (*store.Tx), as the Service passes them.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, dashboards.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"Layouts", testLayouts},
		{"CreateKeepsExisting", testCreateKeepsExisting},
		{"CompareAndSet", testCompareAndSet},
		{"RoleRecords", testRoleRecords},
		{"UserRecords", testUserRecords},
		{"Tenants", testTenants},
		{"UsesTheTransaction", testUsesTheTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, s := newStore(t)
			c.test(t, &env{t: t, db: db, s: s, ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	db  *store.DB
	s   dashboards.Store
	ctx context.Context
}

// tx runs fn in a committed transaction, failing the test on error.
func (e *env) tx(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, fn); err != nil {
		e.t.Fatal(err)
	}
}

func tenant() string { return "t-" + store.NewID() }

var at = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func widget(def string, x int) dashboards.Widget {
	return dashboards.Widget{ID: store.NewID(), DefinitionID: def, Grid: dashboards.Grid{X: x, Y: 1, W: 2, H: 3},
		Config: json.RawMessage(`{"a":[1,"b"]}`)}
}

func (e *env) create(l *dashboards.Layout) bool {
	e.t.Helper()
	var created bool
	e.tx(func(tx *store.Tx) error {
		var err error
		created, err = e.s.CreateLayout(e.ctx, tx, l)
		return err
	})
	return created
}

func (e *env) get(tenantID, owner string) *dashboards.Layout {
	e.t.Helper()
	l, err := e.s.GetLayout(e.ctx, e.db, tenantID, owner)
	if err != nil {
		e.t.Fatalf("GetLayout(%s, %s): %v", tenantID, owner, err)
	}
	return l
}

func sameWidgets(t *testing.T, what string, got, want []dashboards.Widget) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s: widgets\n got %s\nwant %s", what, g, w)
	}
}

func testLayouts(t *testing.T, e *env) {
	tn := tenant()
	if _, err := e.s.GetLayout(e.ctx, e.db, tn, "u1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetLayout of no layout: %v, want ErrNotFound", err)
	}
	ws := []dashboards.Widget{widget("a", 0), widget("b", 4), widget("a", 8)}
	if !e.create(&dashboards.Layout{TenantID: tn, Owner: "u1", Widgets: ws, Version: 1, CreatedAt: at, UpdatedAt: at}) {
		t.Fatal("CreateLayout of a new owner reported not created")
	}
	l := e.get(tn, "u1")
	sameWidgets(t, "after create", l.Widgets, ws)
	if l.Version != 1 || !l.CreatedAt.Equal(at) || !l.UpdatedAt.Equal(at) || l.TenantID != tn || l.Owner != "u1" {
		t.Fatalf("layout read back as %+v", l)
	}
	empty := &dashboards.Layout{TenantID: tn, Owner: "api_key:k", Widgets: nil, Version: 1, CreatedAt: at, UpdatedAt: at}
	e.create(empty)
	if got := e.get(tn, "api_key:k"); len(got.Widgets) != 0 {
		t.Fatalf("an empty layout read back with %d widgets", len(got.Widgets))
	}
}

func testCreateKeepsExisting(t *testing.T, e *env) {
	tn := tenant()
	first := []dashboards.Widget{widget("a", 0)}
	e.create(&dashboards.Layout{TenantID: tn, Owner: "u", Widgets: first, Version: 1, CreatedAt: at, UpdatedAt: at})
	if e.create(&dashboards.Layout{TenantID: tn, Owner: "u", Widgets: []dashboards.Widget{widget("b", 1)}, Version: 1, CreatedAt: at, UpdatedAt: at}) {
		t.Fatal("CreateLayout over an existing layout reported created")
	}
	sameWidgets(t, "after a second create", e.get(tn, "u").Widgets, first)
}

func testCompareAndSet(t *testing.T, e *env) {
	tn := tenant()
	e.create(&dashboards.Layout{TenantID: tn, Owner: "u", Widgets: []dashboards.Widget{}, Version: 1, CreatedAt: at, UpdatedAt: at})
	next := []dashboards.Widget{widget("x", 3)}
	later := at.Add(time.Hour)
	e.tx(func(tx *store.Tx) error { return e.s.UpdateLayout(e.ctx, tx, tn, "u", 1, next, later) })
	l := e.get(tn, "u")
	sameWidgets(t, "after update", l.Widgets, next)
	if l.Version != 2 || !l.UpdatedAt.Equal(later) || !l.CreatedAt.Equal(at) {
		t.Fatalf("after update: version %d, updated %v, created %v; want 2, %v, %v", l.Version, l.UpdatedAt, l.CreatedAt, later, at)
	}
	// A writer holding the old version changes nothing.
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		return e.s.UpdateLayout(e.ctx, tx, tn, "u", 1, []dashboards.Widget{widget("stale", 0)}, later)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateLayout with a stale version: %v, want ErrNotFound", err)
	}
	sameWidgets(t, "after a stale update", e.get(tn, "u").Widgets, next)
	// So does one for an owner without a layout.
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.UpdateLayout(e.ctx, tx, tn, "nobody", 1, next, later) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateLayout of no layout: %v, want ErrNotFound", err)
	}
	if _, err := e.s.GetLayout(e.ctx, e.db, tn, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateLayout of no layout created one: %v", err)
	}
}

func testRoleRecords(t *testing.T, e *env) {
	tn := tenant()
	got, err := e.s.RoleWidgets(e.ctx, e.db, tn, []string{"r1", "r2"})
	if err != nil || len(got) != 0 {
		t.Fatalf("RoleWidgets with no records: %v, %v", got, err)
	}
	if got, err := e.s.RoleWidgets(e.ctx, e.db, tn, nil); err != nil || len(got) != 0 {
		t.Fatalf("RoleWidgets of no roles: %v, %v", got, err)
	}
	e.tx(func(tx *store.Tx) error { return e.s.SetRoleWidgets(e.ctx, tx, tn, "r1", []string{"b", "a"}, at) })
	e.tx(func(tx *store.Tx) error { return e.s.SetRoleWidgets(e.ctx, tx, tn, "r3", []string{}, at) })
	got, err = e.s.RoleWidgets(e.ctx, e.db, tn, []string{"r1", "r2", "r3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got["r1"], []string{"b", "a"}) || got["r3"] == nil || len(got["r3"]) != 0 {
		t.Fatalf("RoleWidgets = %#v, want r1 [b a] and r3 [] (a record with no widget is still a record)", got)
	}
	e.tx(func(tx *store.Tx) error { return e.s.SetRoleWidgets(e.ctx, tx, tn, "r1", []string{"c"}, at) })
	e.tx(func(tx *store.Tx) error { return e.s.DeleteRoleWidgets(e.ctx, tx, tn, "r3") })
	e.tx(func(tx *store.Tx) error { return e.s.DeleteRoleWidgets(e.ctx, tx, tn, "never") })
	got, _ = e.s.RoleWidgets(e.ctx, e.db, tn, []string{"r1", "r3"})
	if len(got) != 1 || !slices.Equal(got["r1"], []string{"c"}) {
		t.Fatalf("after replace and delete: %#v, want only r1 [c]", got)
	}
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("role-%d", i)
	}
	if got, err := e.s.RoleWidgets(e.ctx, e.db, tn, append(many, "r1")); err != nil || len(got) != 1 {
		t.Fatalf("RoleWidgets of 301 roles: %v, %v", got, err)
	}
}

func testUserRecords(t *testing.T, e *env) {
	tn := tenant()
	if _, err := e.s.UserWidgets(e.ctx, e.db, tn, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UserWidgets without a record: %v, want ErrNotFound", err)
	}
	e.tx(func(tx *store.Tx) error { return e.s.SetUserWidgets(e.ctx, tx, tn, "u", []string{}, at) })
	ids, err := e.s.UserWidgets(e.ctx, e.db, tn, "u")
	if err != nil || ids == nil || len(ids) != 0 {
		t.Fatalf("an empty override read back as %#v, %v; want [] (it hides every widget)", ids, err)
	}
	e.tx(func(tx *store.Tx) error { return e.s.SetUserWidgets(e.ctx, tx, tn, "u", []string{"z", "a"}, at) })
	if ids, _ := e.s.UserWidgets(e.ctx, e.db, tn, "u"); !slices.Equal(ids, []string{"z", "a"}) {
		t.Fatalf("override = %v, want [z a]", ids)
	}
	e.tx(func(tx *store.Tx) error { return e.s.DeleteUserWidgets(e.ctx, tx, tn, "u") })
	if _, err := e.s.UserWidgets(e.ctx, e.db, tn, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UserWidgets after delete: %v, want ErrNotFound", err)
	}
}

// testTenants: the same owner, role and user ids in two tenants are
// different records.
func testTenants(t *testing.T, e *env) {
	t1, t2 := tenant(), tenant()
	w1 := []dashboards.Widget{widget("one", 0)}
	e.create(&dashboards.Layout{TenantID: t1, Owner: "same", Widgets: w1, Version: 1, CreatedAt: at, UpdatedAt: at})
	if _, err := e.s.GetLayout(e.ctx, e.db, t2, "same"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant 2 reads tenant 1's layout: %v", err)
	}
	if !e.create(&dashboards.Layout{TenantID: t2, Owner: "same", Widgets: []dashboards.Widget{}, Version: 1, CreatedAt: at, UpdatedAt: at}) {
		t.Fatal("tenant 2 cannot create a layout for an owner id tenant 1 uses")
	}
	e.tx(func(tx *store.Tx) error {
		return e.s.UpdateLayout(e.ctx, tx, t2, "same", 1, []dashboards.Widget{widget("two", 1)}, at)
	})
	sameWidgets(t, "tenant 1 after tenant 2's update", e.get(t1, "same").Widgets, w1)
	if v := e.get(t1, "same").Version; v != 1 {
		t.Fatalf("tenant 2's update moved tenant 1's version to %d", v)
	}

	e.tx(func(tx *store.Tx) error { return e.s.SetRoleWidgets(e.ctx, tx, t1, "r", []string{"a"}, at) })
	e.tx(func(tx *store.Tx) error { return e.s.SetUserWidgets(e.ctx, tx, t1, "u", []string{"a"}, at) })
	if got, _ := e.s.RoleWidgets(e.ctx, e.db, t2, []string{"r"}); len(got) != 0 {
		t.Fatalf("tenant 2 sees tenant 1's role record: %v", got)
	}
	if _, err := e.s.UserWidgets(e.ctx, e.db, t2, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant 2 sees tenant 1's user record: %v", err)
	}
	e.tx(func(tx *store.Tx) error { return e.s.DeleteRoleWidgets(e.ctx, tx, t2, "r") })
	e.tx(func(tx *store.Tx) error { return e.s.DeleteUserWidgets(e.ctx, tx, t2, "u") })
	if got, _ := e.s.RoleWidgets(e.ctx, e.db, t1, []string{"r"}); len(got) != 1 {
		t.Fatal("tenant 2's delete removed tenant 1's role record")
	}
	if _, err := e.s.UserWidgets(e.ctx, e.db, t1, "u"); err != nil {
		t.Fatalf("tenant 2's delete removed tenant 1's user record: %v", err)
	}
}

// testUsesTheTransaction: writes run on the Querier given, so a rolled
// back transaction leaves nothing.
func testUsesTheTransaction(t *testing.T, e *env) {
	tn := tenant()
	rollback := errors.New("roll back")
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if _, err := e.s.CreateLayout(e.ctx, tx, &dashboards.Layout{TenantID: tn, Owner: "u", Widgets: []dashboards.Widget{}, Version: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if err := e.s.SetRoleWidgets(e.ctx, tx, tn, "r", []string{"a"}, at); err != nil {
			return err
		}
		if err := e.s.SetUserWidgets(e.ctx, tx, tn, "u", []string{"a"}, at); err != nil {
			return err
		}
		if _, err := e.s.GetLayout(e.ctx, tx, tn, "u"); err != nil {
			return fmt.Errorf("the transaction does not see its own layout: %w", err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if _, err := e.s.GetLayout(e.ctx, e.db, tn, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rolled-back layout persists: %v", err)
	}
	if got, _ := e.s.RoleWidgets(e.ctx, e.db, tn, []string{"r"}); len(got) != 0 {
		t.Fatal("a rolled-back role record persists")
	}
	if _, err := e.s.UserWidgets(e.ctx, e.db, tn, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a rolled-back user record persists")
	}
}
