// Package togglestest is the conformance suite for toggles.Store
// implementations: Run checks every behaviour the toggles Service relies
// on from its Store, as documented on toggles.Store, ListFilter and
// OverrideFilter. The SQL store runs it on SQLite and PostgreSQL
// (toggles/store_test.go); a host that plugs in its own Store runs it
// against that:
//
//	func TestMyStore(t *testing.T) {
//		togglestest.Run(t, func(t *testing.T) (*store.DB, toggles.Store) {
//			db := openEmptyDatabase(t) // migrated for the host's store
//			return db, mystore.New()
//		})
//	}
//
// Toggles are global, so every subtest needs a database of its own:
// newStore is called once per subtest and must return a store with no
// toggles. Subtests run in parallel and take well under a second each.
package togglestest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// Run runs the suite. newStore is called once per subtest, with that
// subtest's t, and returns a database holding no toggles and the Store to
// test on it. The suite passes every write a transaction on that database
// (*store.Tx), as the Service does, and reads the database itself or a
// transaction.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, toggles.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"Toggles", testToggles},
		{"SoftDelete", testSoftDelete},
		{"IdentifierReserved", testIdentifierReserved},
		{"Conflicts", testConflicts},
		{"ListFilters", testListFilters},
		{"ListSort", testListSort},
		{"ListPaging", testListPaging},
		{"SearchTotalCapped", testSearchTotalCapped},
		{"Overrides", testOverrides},
		{"OverrideList", testOverrideList},
		{"OverrideListSortAndPaging", testOverrideListSort},
		{"LoadAll", testLoadAll},
		{"UsesTheQuerier", testUsesTheQuerier},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			if db == nil || st == nil {
				t.Fatal("newStore returned a nil database or Store")
			}
			c.test(t, &env{ctx: t.Context(), db: db, st: st, clock: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
		})
	}
}

// env is one subtest's store, database and clock.
type env struct {
	ctx   context.Context
	db    *store.DB
	st    toggles.Store
	clock time.Time // the next timestamp handed out
}

// tick returns a new timestamp, a second after the last (microsecond
// precision and UTC, as the Service's transactions give).
func (e *env) tick() time.Time {
	e.clock = e.clock.Add(time.Second)
	return e.clock
}

// A toggle to create: its fields, with the type defaulting to Boolean.
type spec struct {
	identifier, name, description, category string
	typ                                     toggles.Type
	def                                     string    // JSON; "" is null
	at                                      time.Time // created at; zero: the next tick
}

// The Store's writes, each in a transaction of its own: the Service makes
// every change in one (and SQLite runs writes returning rows only there).

func (e *env) createToggle(tg *toggles.Toggle) error {
	return e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.CreateToggle(e.ctx, tx, tg) })
}

func (e *env) updateToggle(tg *toggles.Toggle) error {
	return e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.UpdateToggle(e.ctx, tx, tg) })
}

func (e *env) deleteToggle(id string, at time.Time) error {
	return e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.DeleteToggle(e.ctx, tx, id, at) })
}

func (e *env) upsertOverride(o *toggles.Override) (out *toggles.Override, err error) {
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error {
		out, err = e.st.UpsertOverride(e.ctx, tx, o)
		return err
	})
	return out, err
}

func (e *env) deleteOverride(tenantID, toggleID string) (found bool, err error) {
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error {
		found, err = e.st.DeleteOverride(e.ctx, tx, tenantID, toggleID)
		return err
	})
	return found, err
}

// create stores a toggle made from s at the next tick.
func (e *env) create(t *testing.T, s spec) *toggles.Toggle {
	t.Helper()
	now := s.at
	if now.IsZero() {
		now = e.tick()
	}
	tg := &toggles.Toggle{ID: store.NewID(), Identifier: s.identifier, Name: cmp.Or(s.name, s.identifier),
		Description: s.description, Category: s.category, Type: cmp.Or(s.typ, toggles.Boolean),
		DefaultValue: json.RawMessage(cmp.Or(s.def, "null")), CreatedAt: now, UpdatedAt: now}
	if err := e.createToggle(tg); err != nil {
		t.Fatalf("CreateToggle(%s): %v", s.identifier, err)
	}
	return tg
}

// remove soft-deletes a toggle at the next tick.
func (e *env) remove(t *testing.T, tg *toggles.Toggle) {
	t.Helper()
	if err := e.deleteToggle(tg.ID, e.tick()); err != nil {
		t.Fatalf("DeleteToggle(%s): %v", tg.Identifier, err)
	}
}

// override sets the tenant's override at the next tick and returns it.
func (e *env) override(t *testing.T, tenant string, tg *toggles.Toggle, value string) *toggles.Override {
	t.Helper()
	o, err := e.upsertOverride(&toggles.Override{ID: store.NewID(), ToggleID: tg.ID, TenantID: tenant,
		Value: json.RawMessage(value), UpdatedAt: e.tick()})
	if err != nil {
		t.Fatalf("UpsertOverride(%s, %s): %v", tenant, tg.Identifier, err)
	}
	return o
}

func wantIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want one wrapping %v", what, err, target)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// sameToggle reports how got differs from want, or "".
func sameToggle(got, want *toggles.Toggle) string {
	switch {
	case got == nil:
		return "nil"
	case got.ID != want.ID, got.Identifier != want.Identifier, got.Name != want.Name,
		got.Description != want.Description, got.Category != want.Category, got.Type != want.Type,
		string(got.DefaultValue) != string(want.DefaultValue),
		!got.CreatedAt.Equal(want.CreatedAt), !got.UpdatedAt.Equal(want.UpdatedAt):
		return fmt.Sprintf("%+v (default %s), want %+v (default %s)", *got, got.DefaultValue, *want, want.DefaultValue)
	}
	return ""
}

// sameOverride reports how got differs from want, or "".
func sameOverride(got, want *toggles.Override) string {
	if got == nil {
		return "nil"
	}
	if got.ID != want.ID || got.ToggleID != want.ToggleID || got.TenantID != want.TenantID ||
		string(got.Value) != string(want.Value) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		return fmt.Sprintf("%+v (value %s), want %+v (value %s)", *got, got.Value, *want, want.Value)
	}
	return ""
}

func identifiers[T any](items []T, identifier func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = identifier(it)
	}
	return out
}

func toggleIdentifier(t *toggles.Toggle) string      { return t.Identifier }
func itemIdentifier(it *toggles.OverrideItem) string { return it.Identifier }

// Every field is stored and read back as given; an update changes what
// UpdateToggle documents and nothing else.
func testToggles(t *testing.T, e *env) {
	tg := e.create(t, spec{identifier: "checkout.new-flow", name: "New checkout", description: "Über-größe", category: "billing",
		typ: toggles.JSON, def: `{"steps":[1,2],"label":"a\"b"}`})
	plain := e.create(t, spec{identifier: "plain", typ: toggles.String}) // no description or category, null default
	for _, want := range []*toggles.Toggle{tg, plain} {
		got, err := e.st.GetToggle(e.ctx, e.db, want.ID)
		noErr(t, "GetToggle", err)
		if d := sameToggle(got, want); d != "" {
			t.Errorf("GetToggle: %s", d)
		}
	}
	_, err := e.st.GetToggle(e.ctx, e.db, store.NewID())
	wantIs(t, "GetToggle of an unknown id", err, store.ErrNotFound)

	upd := *tg
	upd.Identifier, upd.Name, upd.Description, upd.Category = "checkout.flow", "Flow", "", "shop"
	upd.DefaultValue, upd.UpdatedAt = json.RawMessage(`null`), e.tick()
	upd.Type, upd.CreatedAt = toggles.Number, e.tick() // neither is stored
	noErr(t, "UpdateToggle", e.updateToggle(&upd))
	want := upd
	want.Type, want.CreatedAt = tg.Type, tg.CreatedAt
	got, err := e.st.GetToggle(e.ctx, e.db, tg.ID)
	noErr(t, "GetToggle after UpdateToggle", err)
	if d := sameToggle(got, &want); d != "" {
		t.Errorf("after UpdateToggle: %s", d)
	}
	if got, err := e.st.GetToggle(e.ctx, e.db, plain.ID); err != nil || sameToggle(got, plain) != "" {
		t.Errorf("UpdateToggle changed another toggle: %+v, %v", got, err)
	}
	unknown := upd
	unknown.ID, unknown.Identifier = store.NewID(), "unknown"
	wantIs(t, "UpdateToggle of an unknown id", e.updateToggle(&unknown), store.ErrNotFound)
}

// Delete is soft: the toggle no longer reads, updates, deletes or lists,
// its overrides stay stored (a later toggle cannot take their place).
func testSoftDelete(t *testing.T, e *env) {
	tg := e.create(t, spec{identifier: "gone"})
	kept := e.create(t, spec{identifier: "kept"})
	e.override(t, "tenant-a", tg, "true")
	e.remove(t, tg)
	_, err := e.st.GetToggle(e.ctx, e.db, tg.ID)
	wantIs(t, "GetToggle of a deleted toggle", err, store.ErrNotFound)
	wantIs(t, "DeleteToggle twice", e.deleteToggle(tg.ID, e.tick()), store.ErrNotFound)
	wantIs(t, "DeleteToggle of an unknown id", e.deleteToggle(store.NewID(), e.tick()), store.ErrNotFound)
	upd := *tg
	upd.Name, upd.UpdatedAt = "back", e.tick()
	wantIs(t, "UpdateToggle of a deleted toggle", e.updateToggle(&upd), store.ErrNotFound)
	items, total, err := e.st.ListToggles(e.ctx, e.db, toggles.ListFilter{Limit: 10})
	noErr(t, "ListToggles", err)
	if total != 1 || len(items) != 1 || items[0].ID != kept.ID {
		t.Errorf("ListToggles after a delete: %q (total %d), want only kept", identifiers(items, toggleIdentifier), total)
	}
	if got, err := e.st.GetToggle(e.ctx, e.db, kept.ID); err != nil || sameToggle(got, kept) != "" {
		t.Errorf("DeleteToggle touched another toggle: %+v, %v", got, err)
	}
	// The override is kept, stored under the tenant (GetOverride is not
	// asked about deleted toggles by the Service, so only its staying
	// hidden elsewhere is checked: OverrideList, LoadAll).
	rows, total, err := e.st.ListOverrides(e.ctx, e.db, "tenant-a", toggles.OverrideFilter{Limit: 10})
	noErr(t, "ListOverrides", err)
	if total != 1 || len(rows) != 1 || rows[0].ToggleID != kept.ID {
		t.Errorf("ListOverrides after a delete: %q (total %d), want only kept", identifiers(rows, itemIdentifier), total)
	}
}

// A toggle's identifier stays taken after it is deleted.
func testIdentifierReserved(t *testing.T, e *env) {
	live := e.create(t, spec{identifier: "live"})
	gone := e.create(t, spec{identifier: "gone"})
	e.remove(t, gone)
	for _, c := range []struct {
		identifier, except string
		want               bool
	}{
		{"live", "", true},
		{"live", store.NewID(), true},
		{"live", live.ID, false}, // a toggle keeping its own identifier
		{"gone", "", true},       // deleted: still reserved
		{"gone", live.ID, true},
		{"gone", gone.ID, false},
		{"other", "", false},
		{"LIVE", "", false}, // identifiers are compared exactly
		{"liv", "", false},
	} {
		got, err := e.st.IdentifierTaken(e.ctx, e.db, c.identifier, c.except)
		noErr(t, "IdentifierTaken", err)
		if got != c.want {
			t.Errorf("IdentifierTaken(%q, except %q) = %v, want %v", c.identifier, c.except, got, c.want)
		}
	}
}

// A taken id or identifier, a deleted toggle's included, is ErrConflict,
// and the refused write changes nothing.
func testConflicts(t *testing.T, e *env) {
	a := e.create(t, spec{identifier: "a", name: "A"})
	b := e.create(t, spec{identifier: "b", name: "B"})
	gone := e.create(t, spec{identifier: "gone"})
	e.remove(t, gone)
	now := e.tick()
	for _, tg := range []*toggles.Toggle{
		{ID: store.NewID(), Identifier: "a", Name: "dup", Type: toggles.Boolean, DefaultValue: json.RawMessage("null"), CreatedAt: now, UpdatedAt: now},
		{ID: store.NewID(), Identifier: "gone", Name: "dup", Type: toggles.Boolean, DefaultValue: json.RawMessage("null"), CreatedAt: now, UpdatedAt: now},
		{ID: a.ID, Identifier: "fresh", Name: "dup", Type: toggles.Boolean, DefaultValue: json.RawMessage("null"), CreatedAt: now, UpdatedAt: now},
	} {
		wantIs(t, fmt.Sprintf("CreateToggle(id %s, identifier %s)", tg.ID, tg.Identifier), e.createToggle(tg), store.ErrConflict)
	}
	for _, identifier := range []string{"a", "gone"} {
		upd := *b
		upd.Identifier, upd.Name, upd.UpdatedAt = identifier, "renamed", e.tick()
		wantIs(t, "UpdateToggle to identifier "+identifier, e.updateToggle(&upd), store.ErrConflict)
	}
	for _, want := range []*toggles.Toggle{a, b} {
		got, err := e.st.GetToggle(e.ctx, e.db, want.ID)
		noErr(t, "GetToggle", err)
		if d := sameToggle(got, want); d != "" {
			t.Errorf("after refused writes: %s", d)
		}
	}
	_, total, err := e.st.ListToggles(e.ctx, e.db, toggles.ListFilter{Limit: 10})
	noErr(t, "ListToggles", err)
	if total != 2 {
		t.Errorf("ListToggles total after refused creates = %d, want 2", total)
	}
}

// Search and the field filters match anywhere, lower-casing non-ASCII
// letters too, with LIKE's wildcards taken literally; Type is exact.
func testListFilters(t *testing.T, e *env) {
	e.create(t, spec{identifier: "alpha.one", name: "Ärger Übersicht", category: "ui", typ: toggles.Boolean})
	e.create(t, spec{identifier: "beta.two", name: "Beta", description: "contains the word ZEBRA", category: "billing", typ: toggles.String})
	e.create(t, spec{identifier: "gamma.three", name: "Gamma", category: "Billing-Extra", typ: toggles.Number})
	e.create(t, spec{identifier: "delta.four", name: "Straße", description: "Größe", typ: toggles.JSON})
	e.remove(t, e.create(t, spec{identifier: "deleted.five", name: "Gamma deleted", category: "billing", typ: toggles.Number}))
	for _, c := range []struct {
		f    toggles.ListFilter
		want []string
	}{
		{toggles.ListFilter{}, []string{"alpha.one", "beta.two", "delta.four", "gamma.three"}},
		{toggles.ListFilter{Search: "ärger"}, []string{"alpha.one"}},
		{toggles.ListFilter{Search: "ÜBERSICHT"}, []string{"alpha.one"}},
		{toggles.ListFilter{Search: "äRGER übers"}, []string{"alpha.one"}},
		{toggles.ListFilter{Search: "STRASSE"}, nil}, // lower-casing, not full case folding
		{toggles.ListFilter{Search: "STRAßE"}, []string{"delta.four"}},
		{toggles.ListFilter{Search: "GRÖSSE"}, nil},
		{toggles.ListFilter{Search: "größe"}, []string{"delta.four"}}, // the description
		{toggles.ListFilter{Search: "zebra"}, []string{"beta.two"}},
		{toggles.ListFilter{Search: "BILLING"}, []string{"beta.two", "gamma.three"}}, // the category
		{toggles.ListFilter{Search: "GAMMA"}, []string{"gamma.three"}},
		{toggles.ListFilter{Search: "TA.T"}, []string{"beta.two"}}, // the identifier
		{toggles.ListFilter{Search: "deleted"}, nil},
		{toggles.ListFilter{Search: "%"}, nil},
		{toggles.ListFilter{Search: "_"}, nil},
		{toggles.ListFilter{Search: `\`}, nil},
		{toggles.ListFilter{Identifier: "TA."}, []string{"beta.two", "delta.four"}},
		{toggles.ListFilter{Identifier: "gamma"}, []string{"gamma.three"}},
		{toggles.ListFilter{Identifier: "zebra"}, nil},
		{toggles.ListFilter{Name: "ärger"}, []string{"alpha.one"}},
		{toggles.ListFilter{Name: "STRAßE"}, []string{"delta.four"}},
		{toggles.ListFilter{Name: "zebra"}, nil}, // the name only, not the description
		{toggles.ListFilter{Category: "BILL"}, []string{"beta.two", "gamma.three"}},
		{toggles.ListFilter{Category: "extra"}, []string{"gamma.three"}},
		{toggles.ListFilter{Category: "beta"}, nil},
		{toggles.ListFilter{Type: toggles.Number}, []string{"gamma.three"}},
		{toggles.ListFilter{Type: toggles.JSON}, []string{"delta.four"}},
		{toggles.ListFilter{Type: "bool"}, nil}, // exact, not contains
		{toggles.ListFilter{Category: "billing", Type: toggles.String}, []string{"beta.two"}},
		{toggles.ListFilter{Search: "a", Identifier: "gamma", Name: "gam", Category: "bill", Type: toggles.Number}, []string{"gamma.three"}},
		{toggles.ListFilter{Search: "zebra", Type: toggles.Number}, nil},
	} {
		f := c.f
		f.SortField, f.Limit = "identifier", 100
		items, total, err := e.st.ListToggles(e.ctx, e.db, f)
		noErr(t, fmt.Sprintf("ListToggles(%+v)", f), err)
		got := identifiers(items, toggleIdentifier)
		if !slices.Equal(got, c.want) || total != len(c.want) {
			t.Errorf("ListToggles(%+v) = %q (total %d), want %q", c.f, got, total, c.want)
		}
	}
}

// sortSet creates toggles whose values sort alike under any collation,
// with a tie in every field (so the id tie-break shows), createdAt and
// updatedAt in different orders, and a deleted toggle that must never
// appear.
func sortSet(t *testing.T, e *env) []*toggles.Toggle {
	ts := []*toggles.Toggle{
		e.create(t, spec{identifier: "m.one", name: "delta", category: "c", typ: toggles.String}),
		e.create(t, spec{identifier: "b.two", name: "alpha", category: "a", typ: toggles.Number}),
	}
	ts = append(ts,
		e.create(t, spec{identifier: "x.three", name: "charlie", category: "c", typ: toggles.Boolean, at: ts[1].CreatedAt}),
		e.create(t, spec{identifier: "d.four", name: "bravo", category: "b", typ: toggles.JSON}),
		e.create(t, spec{identifier: "k.five", name: "alpha", typ: toggles.String}))
	for _, i := range []int{1, 3, 2, 0, 4} {
		ts[i].UpdatedAt = e.tick()
		if i == 4 {
			ts[i].UpdatedAt = ts[0].UpdatedAt
		}
		noErr(t, "UpdateToggle", e.updateToggle(ts[i]))
	}
	e.remove(t, e.create(t, spec{identifier: "a.deleted", name: "aaa", category: "a", typ: toggles.Boolean}))
	return ts
}

// toggleKeys gives each sort field's value of a toggle, compared as a
// string.
var toggleKeys = map[string]func(*toggles.Toggle) string{
	"id":         func(t *toggles.Toggle) string { return t.ID },
	"identifier": func(t *toggles.Toggle) string { return t.Identifier },
	"name":       func(t *toggles.Toggle) string { return t.Name },
	"category":   func(t *toggles.Toggle) string { return t.Category },
	"type":       func(t *toggles.Toggle) string { return string(t.Type) },
	"createdAt":  func(t *toggles.Toggle) string { return t.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000") },
	"updatedAt":  func(t *toggles.Toggle) string { return t.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000") },
}

// sorted returns items ordered by key, ties by id, both in one direction.
func sorted[T any](items []T, key, id func(T) string, desc bool) []T {
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b T) int {
		c := cmp.Or(strings.Compare(key(a), key(b)), strings.Compare(id(a), id(b)))
		if desc {
			c = -c
		}
		return c
	})
	return out
}

// checkOrder checks that list gives the identifiers want in this order and
// a total of all of them, in one page and in pages of two.
func checkOrder[T any](t *testing.T, what string, want []string, identifier func(T) string, list func(limit, offset int) ([]T, int, error)) {
	t.Helper()
	items, total, err := list(len(want)+5, 0)
	noErr(t, what, err)
	if got := identifiers(items, identifier); !slices.Equal(got, want) || total != len(want) {
		t.Errorf("%s: %q (total %d), want %q (total %d)", what, got, total, want, len(want))
	}
	var paged []string
	for off := 0; off < len(want)+2; off += 2 {
		page, total, err := list(2, off)
		noErr(t, what, err)
		if total != len(want) {
			t.Errorf("%s, offset %d: total %d, want %d", what, off, total, len(want))
		}
		paged = append(paged, identifiers(page, identifier)...)
	}
	if !slices.Equal(paged, want) {
		t.Errorf("%s, in pages of 2: %q, want %q", what, paged, want)
	}
}

// Every sort field orders both ways, ties by id in the same direction;
// pages put together give the same order.
func testListSort(t *testing.T, e *env) {
	ts := sortSet(t, e)
	toggleID := func(t *toggles.Toggle) string { return t.ID }
	for field, key := range toggleKeys {
		for _, desc := range []bool{false, true} {
			want := identifiers(sorted(ts, key, toggleID, desc), toggleIdentifier)
			checkOrder(t, fmt.Sprintf("ListToggles sort %q desc=%v", field, desc), want, toggleIdentifier,
				func(limit, offset int) ([]*toggles.Toggle, int, error) {
					return e.st.ListToggles(e.ctx, e.db, toggles.ListFilter{SortField: field, SortDesc: desc, Limit: limit, Offset: offset})
				})
		}
	}
	// The default and unknown fields order by createdAt.
	for _, field := range []string{"", "nope", "description", "name; DROP TABLE feature_toggles", "created_at"} {
		for _, desc := range []bool{false, true} {
			want := identifiers(sorted(ts, toggleKeys["createdAt"], toggleID, desc), toggleIdentifier)
			items, _, err := e.st.ListToggles(e.ctx, e.db, toggles.ListFilter{SortField: field, SortDesc: desc, Limit: 10})
			noErr(t, "ListToggles", err)
			if got := identifiers(items, toggleIdentifier); !slices.Equal(got, want) {
				t.Errorf("sort %q desc=%v: %q, want createdAt's order %q", field, desc, got, want)
			}
		}
	}
}

// Limit and Offset cut a page; the total counts every match.
func testListPaging(t *testing.T, e *env) {
	for i := range 7 {
		e.create(t, spec{identifier: fmt.Sprintf("page.%d", i), category: []string{"odd", "even"}[(i+1)%2]})
	}
	e.remove(t, e.create(t, spec{identifier: "page.gone", category: "even"}))
	for _, c := range []struct {
		f     toggles.ListFilter
		want  []string
		total int
	}{
		{toggles.ListFilter{Limit: 3}, []string{"page.0", "page.1", "page.2"}, 7},
		{toggles.ListFilter{Limit: 3, Offset: 3}, []string{"page.3", "page.4", "page.5"}, 7},
		{toggles.ListFilter{Limit: 3, Offset: 6}, []string{"page.6"}, 7},
		{toggles.ListFilter{Limit: 3, Offset: 7}, nil, 7},
		{toggles.ListFilter{Limit: 3, Offset: 100}, nil, 7},
		{toggles.ListFilter{Limit: 0}, nil, 7},
		{toggles.ListFilter{Category: "even", Limit: 2, Offset: 1}, []string{"page.2", "page.4"}, 4},
		{toggles.ListFilter{Category: "odd", Limit: 10}, []string{"page.1", "page.3", "page.5"}, 3},
		{toggles.ListFilter{Category: "none", Limit: 10}, nil, 0},
	} {
		f := c.f
		f.SortField = "identifier"
		items, total, err := e.st.ListToggles(e.ctx, e.db, f)
		noErr(t, "ListToggles", err)
		if got := identifiers(items, toggleIdentifier); !slices.Equal(got, c.want) || total != c.total {
			t.Errorf("ListToggles(%+v) = %q (total %d), want %q (total %d)", c.f, got, total, c.want, c.total)
		}
	}
}

// Overrides belong to one tenant: a tenant reads, replaces and deletes its
// own only; a second upsert keeps the override's id.
func testOverrides(t *testing.T, e *env) {
	tg := e.create(t, spec{identifier: "flag", typ: toggles.Number, def: "1"})
	other := e.create(t, spec{identifier: "other", typ: toggles.Number, def: "1"})
	a1 := e.override(t, "tenant-a", tg, "2")
	if a1.ToggleID != tg.ID || a1.TenantID != "tenant-a" || string(a1.Value) != "2" || a1.ID == "" {
		t.Fatalf("UpsertOverride returned %+v", a1)
	}
	b := e.override(t, "tenant-b", tg, "3")
	if b.ID == a1.ID {
		t.Fatal("two tenants' overrides share an id")
	}
	get := func(tenant string, tg *toggles.Toggle) (*toggles.Override, error) {
		return e.st.GetOverride(e.ctx, e.db, tenant, tg.ID)
	}
	for _, c := range []struct {
		tenant string
		want   *toggles.Override
	}{{"tenant-a", a1}, {"tenant-b", b}} {
		got, err := get(c.tenant, tg)
		noErr(t, "GetOverride", err)
		if d := sameOverride(got, c.want); d != "" {
			t.Errorf("GetOverride(%s): %s", c.tenant, d)
		}
	}
	_, err := get("tenant-c", tg)
	wantIs(t, "GetOverride of a tenant without one", err, store.ErrNotFound)
	_, err = get("tenant-a", other)
	wantIs(t, "GetOverride of another toggle", err, store.ErrNotFound)

	// A second upsert replaces the value and keeps the id.
	a2 := e.override(t, "tenant-a", tg, `null`)
	want := &toggles.Override{ID: a1.ID, ToggleID: tg.ID, TenantID: "tenant-a", Value: json.RawMessage(`null`), UpdatedAt: e.clock}
	if d := sameOverride(a2, want); d != "" {
		t.Errorf("second UpsertOverride returned %s", d)
	}
	got, err := get("tenant-a", tg)
	noErr(t, "GetOverride", err)
	if d := sameOverride(got, want); d != "" {
		t.Errorf("GetOverride after the second upsert: %s", d)
	}
	if got, err := get("tenant-b", tg); err != nil || sameOverride(got, b) != "" {
		t.Errorf("tenant-a's upsert changed tenant-b's override: %+v, %v", got, err)
	}

	// Delete removes the tenant's own, once.
	for _, c := range []struct {
		tenant string
		tg     *toggles.Toggle
		want   bool
	}{{"tenant-c", tg, false}, {"tenant-a", other, false}, {"tenant-a", tg, true}, {"tenant-a", tg, false}} {
		found, err := e.deleteOverride(c.tenant, c.tg.ID)
		noErr(t, "DeleteOverride", err)
		if found != c.want {
			t.Errorf("DeleteOverride(%s, %s) = %v, want %v", c.tenant, c.tg.Identifier, found, c.want)
		}
	}
	_, err = get("tenant-a", tg)
	wantIs(t, "GetOverride after DeleteOverride", err, store.ErrNotFound)
	if got, err := get("tenant-b", tg); err != nil || sameOverride(got, b) != "" {
		t.Errorf("tenant-a's delete touched tenant-b's override: %+v, %v", got, err)
	}
	// And it can be set again, as a new override.
	a3 := e.override(t, "tenant-a", tg, "4")
	if a3.ID == a1.ID || string(a3.Value) != "4" {
		t.Errorf("UpsertOverride after a delete returned %+v, want a new override (not id %s)", a3, a1.ID)
	}
}

// ListOverrides lists every live toggle once, as the tenant sees it: its
// own override, or the default (no id, no updatedAt) when it has none.
func testOverrideList(t *testing.T, e *env) {
	x := e.create(t, spec{identifier: "x.flag", name: "Größe", category: "ui", typ: toggles.Boolean, def: "false"})
	y := e.create(t, spec{identifier: "y.flag", name: "Why", category: "Billing", typ: toggles.String, def: `"d"`})
	z := e.create(t, spec{identifier: "z.flag", name: "Zed", typ: toggles.JSON})
	gone := e.create(t, spec{identifier: "gone.flag", name: "Gone", category: "ui"})
	ax := e.override(t, "tenant-a", x, "true")
	by := e.override(t, "tenant-b", y, `"b"`)
	e.override(t, "tenant-a", gone, "true")
	e.remove(t, gone)

	list := func(tenant string, f toggles.OverrideFilter) []*toggles.OverrideItem {
		t.Helper()
		f.Limit = 10
		items, total, err := e.st.ListOverrides(e.ctx, e.db, tenant, f)
		noErr(t, "ListOverrides", err)
		if total != len(items) {
			t.Errorf("ListOverrides(%s, %+v): total %d, %d items", tenant, f, total, len(items))
		}
		return items
	}
	type row struct {
		toggle   *toggles.Toggle
		override *toggles.Override // nil: the default
	}
	check := func(tenant string, got []*toggles.OverrideItem, want []row) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("ListOverrides(%s): %q, want %d rows", tenant, identifiers(got, itemIdentifier), len(want))
		}
		for i, w := range want {
			it := got[i]
			wantItem := toggles.OverrideItem{ToggleID: w.toggle.ID, TenantID: tenant, Identifier: w.toggle.Identifier,
				Name: w.toggle.Name, Category: w.toggle.Category, Type: w.toggle.Type, Value: w.toggle.DefaultValue}
			if w.override != nil {
				wantItem.ID, wantItem.IsOverride, wantItem.Value, wantItem.UpdatedAt = w.override.ID, true, w.override.Value, &w.override.UpdatedAt
			}
			same := it.ID == wantItem.ID && it.ToggleID == wantItem.ToggleID && it.TenantID == wantItem.TenantID &&
				it.Identifier == wantItem.Identifier && it.Name == wantItem.Name && it.Category == wantItem.Category &&
				it.Type == wantItem.Type && it.IsOverride == wantItem.IsOverride && string(it.Value) == string(wantItem.Value) &&
				(it.UpdatedAt == nil) == (wantItem.UpdatedAt == nil) &&
				(it.UpdatedAt == nil || it.UpdatedAt.Equal(*wantItem.UpdatedAt))
			if !same {
				t.Errorf("ListOverrides(%s) row %d: %+v (value %s), want %+v (value %s)", tenant, i, *it, it.Value, wantItem, wantItem.Value)
			}
		}
	}
	check("tenant-a", list("tenant-a", toggles.OverrideFilter{}), []row{{x, ax}, {y, nil}, {z, nil}})
	check("tenant-b", list("tenant-b", toggles.OverrideFilter{}), []row{{x, nil}, {y, by}, {z, nil}})
	check("tenant-c", list("tenant-c", toggles.OverrideFilter{}), []row{{x, nil}, {y, nil}, {z, nil}})
	for _, c := range []struct {
		f    toggles.OverrideFilter
		want []string
	}{
		{toggles.OverrideFilter{Identifier: "Y.F"}, []string{"y.flag"}},
		{toggles.OverrideFilter{Identifier: "flag"}, []string{"x.flag", "y.flag", "z.flag"}},
		{toggles.OverrideFilter{Identifier: "gone"}, nil},
		{toggles.OverrideFilter{Name: "GRÖ"}, []string{"x.flag"}},
		{toggles.OverrideFilter{Name: "e"}, []string{"x.flag", "z.flag"}},
		{toggles.OverrideFilter{Category: "bill"}, []string{"y.flag"}},
		{toggles.OverrideFilter{Category: "UI"}, []string{"x.flag"}},
		{toggles.OverrideFilter{Category: "%"}, nil},
		{toggles.OverrideFilter{Name: "e", Category: "u"}, []string{"x.flag"}},
	} {
		if got := identifiers(list("tenant-a", c.f), itemIdentifier); !slices.Equal(got, c.want) {
			t.Errorf("ListOverrides(tenant-a, %+v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// The overrides list sorts by identifier, name or category both ways, ties
// by the toggle's id; pages put together give the same order.
func testOverrideListSort(t *testing.T, e *env) {
	ts := sortSet(t, e)
	e.override(t, "tenant-a", ts[1], "1")
	e.override(t, "tenant-b", ts[0], `"b"`)
	toggleID := func(t *toggles.Toggle) string { return t.ID }
	for _, field := range []string{"identifier", "name", "category", "", "type", "nope"} {
		key := toggleKeys[field]
		if field != "name" && field != "category" {
			key = toggleKeys["identifier"] // the default
		}
		for _, desc := range []bool{false, true} {
			want := identifiers(sorted(ts, key, toggleID, desc), toggleIdentifier)
			checkOrder(t, fmt.Sprintf("ListOverrides sort %q desc=%v", field, desc), want, itemIdentifier,
				func(limit, offset int) ([]*toggles.OverrideItem, int, error) {
					return e.st.ListOverrides(e.ctx, e.db, "tenant-a", toggles.OverrideFilter{SortField: field, SortDesc: desc, Limit: limit, Offset: offset})
				})
		}
	}
	items, total, err := e.st.ListOverrides(e.ctx, e.db, "tenant-a", toggles.OverrideFilter{Limit: 0})
	noErr(t, "ListOverrides", err)
	if len(items) != 0 || total != len(ts) {
		t.Errorf("ListOverrides with Limit 0: %d rows, total %d; want none and %d", len(items), total, len(ts))
	}
}

// LoadAll returns every live toggle and the overrides of every tenant on
// them, nothing of deleted toggles.
func testLoadAll(t *testing.T, e *env) {
	ts, os, err := e.st.LoadAll(e.ctx, e.db)
	noErr(t, "LoadAll", err)
	if len(ts) != 0 || len(os) != 0 {
		t.Fatalf("LoadAll of an empty store: %d toggles, %d overrides", len(ts), len(os))
	}
	x := e.create(t, spec{identifier: "x", name: "X", description: "d", category: "c", typ: toggles.Number, def: "1.5"})
	y := e.create(t, spec{identifier: "y", typ: toggles.JSON, def: `{"a":[1]}`})
	gone := e.create(t, spec{identifier: "gone"})
	overrides := []*toggles.Override{
		e.override(t, "tenant-a", x, "2"),
		e.override(t, "tenant-b", x, "null"),
		e.override(t, "tenant-a", y, `[true]`),
	}
	e.override(t, "tenant-a", gone, "true")
	e.remove(t, gone)
	overrides[0] = e.override(t, "tenant-a", x, "3") // replaced, not added

	ts, os, err = e.st.LoadAll(e.ctx, e.db)
	noErr(t, "LoadAll", err)
	gotToggles := map[string]*toggles.Toggle{}
	for _, tg := range ts {
		gotToggles[tg.ID] = tg
	}
	if len(ts) != 2 || len(gotToggles) != 2 {
		t.Errorf("LoadAll: toggles %q, want x and y", identifiers(ts, toggleIdentifier))
	}
	for _, want := range []*toggles.Toggle{x, y} {
		if d := sameToggle(gotToggles[want.ID], want); d != "" {
			t.Errorf("LoadAll toggle %s: %s", want.Identifier, d)
		}
	}
	gotOverrides := map[string]*toggles.Override{}
	for _, o := range os {
		gotOverrides[o.ID] = o
	}
	if len(os) != len(overrides) || len(gotOverrides) != len(overrides) {
		t.Errorf("LoadAll: %d overrides, want %d (those of deleted toggles left out)", len(os), len(overrides))
	}
	for _, want := range overrides {
		if d := sameOverride(gotOverrides[want.ID], want); d != "" {
			t.Errorf("LoadAll override %s/%s: %s", want.TenantID, want.ToggleID, d)
		}
	}
}

// Writes run on the Querier given: inside a transaction they are seen by
// it and undone by its rollback (so a change commits with its event and
// version bump, or not at all).
func testUsesTheQuerier(t *testing.T, e *env) {
	kept := e.create(t, spec{identifier: "kept"})
	rollback := errors.New("rollback")
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		now := tx.Now()
		tg := &toggles.Toggle{ID: store.NewID(), Identifier: "in.tx", Name: "tx", Type: toggles.Boolean,
			DefaultValue: json.RawMessage("true"), CreatedAt: now, UpdatedAt: now}
		if err := e.st.CreateToggle(e.ctx, tx, tg); err != nil {
			return err
		}
		if _, err := e.st.UpsertOverride(e.ctx, tx, &toggles.Override{ID: store.NewID(), ToggleID: kept.ID, TenantID: "tenant-a",
			Value: json.RawMessage("true"), UpdatedAt: now}); err != nil {
			return err
		}
		if err := e.st.DeleteToggle(e.ctx, tx, kept.ID, now); err != nil {
			return err
		}
		if _, err := e.st.GetToggle(e.ctx, tx, tg.ID); err != nil {
			return fmt.Errorf("GetToggle in the transaction of its creation: %w", err)
		}
		if taken, err := e.st.IdentifierTaken(e.ctx, tx, "in.tx", ""); err != nil || !taken {
			return fmt.Errorf("IdentifierTaken in the transaction of its creation = %v, %v", taken, err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("transaction: %v", err)
	}
	ts, os, err := e.st.LoadAll(e.ctx, e.db)
	noErr(t, "LoadAll", err)
	if len(ts) != 1 || ts[0].ID != kept.ID || len(os) != 0 {
		t.Errorf("after a rollback LoadAll gives toggles %q and %d overrides, want only kept and none", identifiers(ts, toggleIdentifier), len(os))
	}
	taken, err := e.st.IdentifierTaken(e.ctx, e.db, "in.tx", "")
	noErr(t, "IdentifierTaken", err)
	if taken {
		t.Error("a rolled-back toggle's identifier is taken")
	}
}

// testSearchTotalCapped: with a search, ListToggles counts at most
// store.SearchCap(ctx)+1 matches (the cap lowered to 3 here), exactly
// below it, and still reads a page past a capped total; without a search
// the total stays exact.
func testSearchTotalCapped(t *testing.T, e *env) {
	for i := range 5 {
		e.create(t, spec{identifier: fmt.Sprint("alpha.", i), name: fmt.Sprint("Alpha ", i), typ: toggles.Boolean})
	}
	e.create(t, spec{identifier: "other", name: "Other", typ: toggles.Boolean})
	for _, c := range []struct {
		name     string
		cap      int
		f        toggles.ListFilter
		want     []string
		total    int
		reported int
		capped   bool
	}{
		{"capped", 3, toggles.ListFilter{Search: "ALPHA", Limit: 2}, []string{"alpha.0", "alpha.1"}, 4, 3, true},
		{"page past the capped total", 3, toggles.ListFilter{Search: "alpha", Limit: 10, Offset: 4}, []string{"alpha.4"}, 4, 3, true},
		{"exact at the cap", 5, toggles.ListFilter{Search: "alpha", Limit: 2}, []string{"alpha.0", "alpha.1"}, 5, 5, false},
		{"no search", 3, toggles.ListFilter{Limit: 1}, []string{"alpha.0"}, 6, 6, false},
	} {
		ctx := storetest.WithSearchCap(e.ctx, c.cap)
		c.f.SortField = "identifier"
		items, total, err := e.st.ListToggles(ctx, e.db, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := []string{}
		for _, tg := range items {
			got = append(got, tg.Identifier)
		}
		reported, capped := store.CapTotal(ctx, total, c.f.Search != "")
		if !slices.Equal(got, c.want) || total != c.total || reported != c.reported || capped != c.capped {
			t.Errorf("%s: %v, total %d (reported %d, capped %v), want %v, total %d (reported %d, capped %v)",
				c.name, got, total, reported, capped, c.want, c.total, c.reported, c.capped)
		}
	}
}
