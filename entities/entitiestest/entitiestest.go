// Package entitiestest is a conformance suite for entities.Store
// implementations: Run checks every behaviour the entities Service relies
// on its Store for (scoping of every read and write by tenant and
// organization, scope resolution of field definitions with tombstones,
// field settings, soft delete, record ids per tenant, filters by kind,
// sorting, paging, exact totals also when they come from kept value
// counts, counts following creates, updates and deletes, conflicts,
// concurrent writes of one record, batch upserts and their events).
//
// The suite drives the Store through a Service built on it
// (entities.New with Options.Store), as a host's calls would, so that it checks
// what the Service's answers depend on rather than one implementation's
// rows. Every subtest works in fresh random tenants and entity ids, so
// subtests may share one database, and a database shared between test
// runs (a PostgreSQL schema) needs no cleaning.
package entitiestest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Run runs the suite. newStore is called once per subtest, with that
// subtest's t; it returns a migrated database (entities.Migrations
// applied; the Service runs its transactions, version counter and events
// there) and the Store to check, which may be shared between subtests.
// Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, entities.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(t *testing.T, svc *entities.Service)
		// testDB, when set, is the test instead, given the database too
		// (the caller's transaction of UpsertRecordsTx, the events).
		testDB func(t *testing.T, svc *entities.Service, db *store.DB)
	}{
		{"EntityScope", testEntityScope, nil},
		{"DefinitionScopes", testDefinitionScopes, nil},
		{"Tombstones", testTombstones, nil},
		{"Settings", testSettings, nil},
		{"RecordScope", testRecordScope, nil},
		{"RecordIDPerTenant", testRecordIDPerTenant, nil},
		{"SoftDelete", testSoftDelete, nil},
		{"Filters", testFilters, nil},
		{"Sorting", testSorting, nil},
		{"PagingTotals", testPagingTotals, nil},
		{"SearchTotalCapped", testSearchTotalCapped, nil},
		{"CountedTotals", testCountedTotals, nil},
		{"CountsRebuilt", testCountsRebuilt, nil},
		{"RelationOptions", testRelationOptions, nil},
		{"ConcurrentUpdates", testConcurrentUpdates, nil},
		{"Upserts", nil, testUpserts},
		{"ConcurrentUpserts", nil, testConcurrentUpserts},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			if db == nil || st == nil {
				t.Fatal("newStore returned nil")
			}
			svc, err := entities.New(db, entities.Options{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			if c.testDB != nil {
				c.testDB(t, svc, db)
				return
			}
			c.test(t, svc)
		})
	}
}

// tenant is a fresh tenant with two organizations.
type tenant struct{ id, org1, org2 string }

func newTenant() tenant { return tenant{store.NewID(), store.NewID(), store.NewID()} }

// all is the tenant acting in no organization, reading every one.
func (tn tenant) all(t *testing.T) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: tn.id})
}

// in is the tenant acting in org, reading org alone.
func (tn tenant) in(t *testing.T, org string) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: tn.id, OrganizationID: org, OrganizationIDs: []string{org}})
}

var seq struct {
	sync.Mutex
	n int
}

// newEntityID returns an entity id no other subtest or run uses.
func newEntityID() string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return fmt.Sprintf("suite.e%d_%s", seq.n, store.NewID()[24:])
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func define(t *testing.T, svc *entities.Service, ctx context.Context, entityID, key, kind string, cfg map[string]any) {
	t.Helper()
	_, err := svc.Define(ctx, entities.DefinitionInput{EntityID: entityID, Key: key, Kind: kind, ConfigJSON: cfg})
	must(t, err)
}

func create(t *testing.T, svc *entities.Service, ctx context.Context, entityID string, values map[string]any) *entities.Record {
	t.Helper()
	r, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: entityID, Values: values})
	must(t, err)
	return r
}

// list lists and returns the records' ids and the total.
func list(t *testing.T, svc *entities.Service, ctx context.Context, q entities.RecordQuery) ([]string, int) {
	t.Helper()
	items, total, err := svc.ListRecords(ctx, q)
	must(t, err)
	ids := make([]string, len(items))
	for i, r := range items {
		ids[i] = r.ID
	}
	return ids, total
}

// eq is an equality filter.
func eq(key string, values ...string) []entities.Filter {
	op := entities.OpEq
	if len(values) > 1 {
		op = entities.OpIn
	}
	return []entities.Filter{{Key: key, Op: op, Values: values}}
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got ids %v, want %v", what, got, want)
	}
}

func wantTotal(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: total %d, want %d", what, got, want)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("%s: got %v, want not found", what, err)
	}
}

// reversed returns a reversed copy of ids.
func reversed(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// sorted returns ids sorted (the default list order, for UUIDv7 ids made
// in order, and the order of ids as text).
func sorted(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

// Entities: an organization's entity is seen in that organization only,
// winning there over the tenant's of the same id; another tenant sees
// neither; a deleted entity is gone.
func testEntityScope(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	shared, orgOnly := newEntityID(), newEntityID()
	_, err := svc.UpsertEntity(tn.all(t), entities.EntityInput{EntityID: shared, Label: "Tenant's"})
	must(t, err)
	_, err = svc.UpsertEntity(tn.in(t, tn.org1), entities.EntityInput{EntityID: shared, Label: "Org's"})
	must(t, err)
	_, err = svc.UpsertEntity(tn.in(t, tn.org1), entities.EntityInput{EntityID: orgOnly, Label: "Org only"})
	must(t, err)
	labels := func(ctx context.Context) map[string]string {
		t.Helper()
		list, err := svc.ListEntities(ctx)
		must(t, err)
		out := map[string]string{}
		for _, e := range list {
			if e.EntityID == shared || e.EntityID == orgOnly {
				out[e.EntityID] = e.Label
			}
		}
		return out
	}
	check := func(what string, got, want map[string]string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: entities %v, want %v", what, got, want)
		}
	}
	check("org1", labels(tn.in(t, tn.org1)), map[string]string{shared: "Org's", orgOnly: "Org only"})
	check("org2", labels(tn.in(t, tn.org2)), map[string]string{shared: "Tenant's"})
	check("tenant", labels(tn.all(t)), map[string]string{shared: "Tenant's"})
	check("other tenant", labels(other.all(t)), map[string]string{})
	must(t, svc.DeleteEntity(tn.in(t, tn.org1), shared))
	check("org1 after delete", labels(tn.in(t, tn.org1)), map[string]string{shared: "Tenant's", orgOnly: "Org only"})
	wantNotFound(t, "delete in another tenant", svc.DeleteEntity(other.all(t), orgOnly))
	wantNotFound(t, "delete in another organization", svc.DeleteEntity(tn.in(t, tn.org2), orgOnly))
}

// labelOf returns the label of key among defs, or "" when absent.
func labelOf(defs []*entities.Definition, key string) string {
	for _, d := range defs {
		if d.Key == key {
			label, _ := d.ConfigJSON["label"].(string)
			return label
		}
	}
	return ""
}

func definitions(t *testing.T, svc *entities.Service, ctx context.Context, entityID string) []*entities.Definition {
	t.Helper()
	defs, err := svc.Definitions(ctx, entityID)
	must(t, err)
	return defs
}

// Definitions: the most specific scope that defines a key wins
// (organization over tenant over global); other tenants and
// organizations see only what applies to them; an inactive definition
// lets a wider one show.
func testDefinitionScopes(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	ent := newEntityID()
	_, err := svc.DefineGlobal(t.Context(), entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
		ConfigJSON: map[string]any{"label": "global"}})
	must(t, err)
	define(t, svc, tn.all(t), ent, "k", "text", map[string]any{"label": "tenant"})
	define(t, svc, tn.in(t, tn.org1), ent, "k", "text", map[string]any{"label": "org1"})
	define(t, svc, tn.in(t, tn.org1), ent, "only_org1", "text", nil)
	for _, c := range []struct {
		what string
		ctx  context.Context
		k    string
		only bool
	}{
		{"org1", tn.in(t, tn.org1), "org1", true},
		{"org2", tn.in(t, tn.org2), "tenant", false},
		{"tenant", tn.all(t), "tenant", false},
		{"other tenant", other.all(t), "global", false},
		{"other tenant's organization", other.in(t, other.org1), "global", false},
	} {
		defs := definitions(t, svc, c.ctx, ent)
		if got := labelOf(defs, "k"); got != c.k {
			t.Fatalf("%s: k is %q, want %q", c.what, got, c.k)
		}
		if got := labelOf(defs, "only_org1") != ""; got != c.only {
			t.Fatalf("%s: sees only_org1: %v, want %v", c.what, got, c.only)
		}
	}
	off := false
	_, err = svc.Define(tn.in(t, tn.org1), entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
		ConfigJSON: map[string]any{"label": "org1"}, IsActive: &off})
	must(t, err)
	if got := labelOf(definitions(t, svc, tn.in(t, tn.org1), ent), "k"); got != "tenant" {
		t.Fatalf("org1 with its definition inactive: k is %q, want tenant", got)
	}
}

// Tombstones: deleting a key hides it at the deleting scope and the
// narrower ones, whatever wider scopes define (a tombstone wins like a
// definition); restore shows it again; defining it again lifts the
// tombstone.
func testTombstones(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	ent := newEntityID()
	_, err := svc.DefineGlobal(t.Context(), entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
		ConfigJSON: map[string]any{"label": "global"}})
	must(t, err)
	_, err = svc.DeleteDefinition(tn.all(t), ent, "k") // a tombstone of the global key
	must(t, err)
	for what, ctx := range map[string]context.Context{"tenant": tn.all(t), "org1": tn.in(t, tn.org1)} {
		if got := labelOf(definitions(t, svc, ctx, ent), "k"); got != "" {
			t.Fatalf("%s after the tenant deleted the global key: k is %q, want hidden", what, got)
		}
	}
	if got := labelOf(definitions(t, svc, other.all(t), ent), "k"); got != "global" {
		t.Fatalf("other tenant: k is %q, want global", got)
	}
	_, deleted, err := svc.Manage(tn.all(t), ent)
	must(t, err)
	if !slices.Equal(deleted, []string{"k"}) {
		t.Fatalf("Manage's deleted keys %v, want [k]", deleted)
	}
	// An organization defining the key again sees its own.
	define(t, svc, tn.in(t, tn.org1), ent, "k", "text", map[string]any{"label": "org1"})
	if got := labelOf(definitions(t, svc, tn.in(t, tn.org1), ent), "k"); got != "org1" {
		t.Fatalf("org1 defining the key: k is %q, want org1", got)
	}
	must(t, svc.RestoreDefinition(tn.all(t), ent, "k"))
	if got := labelOf(definitions(t, svc, tn.all(t), ent), "k"); got != "global" {
		t.Fatalf("tenant after restore: k is %q, want global", got)
	}
	// A tenant's own key deleted, then defined again.
	define(t, svc, tn.all(t), ent, "own", "text", map[string]any{"label": "first"})
	_, err = svc.DeleteDefinition(tn.all(t), ent, "own")
	must(t, err)
	if got := labelOf(definitions(t, svc, tn.in(t, tn.org2), ent), "own"); got != "" {
		t.Fatalf("org2 after the tenant deleted its key: %q, want hidden", got)
	}
	_, err = svc.DeleteDefinition(tn.all(t), ent, "own")
	wantNotFound(t, "deleting a deleted key", err)
	define(t, svc, tn.all(t), ent, "own", "text", map[string]any{"label": "again"})
	if got := labelOf(definitions(t, svc, tn.all(t), ent), "own"); got != "again" {
		t.Fatalf("after defining again: %q, want again", got)
	}
}

// Settings: the most specific scope's settings win; other tenants see
// none.
func testSettings(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	ent := newEntityID()
	yes := true
	_, err := svc.Batch(tn.all(t), entities.BatchInput{EntityID: ent, Definitions: []entities.DefinitionInput{{Key: "a", Kind: "text"}},
		Fieldsets: []entities.FieldSet{{Code: "tenant", Label: "Tenant"}}})
	must(t, err)
	_, err = svc.Batch(tn.in(t, tn.org1), entities.BatchInput{EntityID: ent, Fieldsets: []entities.FieldSet{{Code: "org", Label: "Org"}},
		SingleFieldsetPerRecord: &yes})
	must(t, err)
	code := func(ctx context.Context) string {
		t.Helper()
		m, err := svc.Settings(ctx, ent)
		must(t, err)
		s, ok := m[ent]
		if !ok || len(s.Fieldsets) == 0 {
			return ""
		}
		return fmt.Sprint(s.Fieldsets[0].Code, s.SingleFieldsetPerRecord)
	}
	for what, c := range map[string]struct {
		ctx  context.Context
		want string
	}{
		"org1": {tn.in(t, tn.org1), "orgtrue"}, "org2": {tn.in(t, tn.org2), "tenantfalse"},
		"tenant": {tn.all(t), "tenantfalse"}, "other tenant": {other.all(t), ""},
	} {
		if got := code(c.ctx); got != c.want {
			t.Fatalf("%s: settings %q, want %q", what, got, c.want)
		}
	}
}

// Records: an organization's records are read, listed, counted, updated
// and deleted only by callers allowed that organization; the tenant's
// own records by all of its callers; another tenant's by none.
func testRecordScope(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	ent := newEntityID()
	for _, ctx := range []context.Context{tn.all(t), other.all(t)} {
		define(t, svc, ctx, ent, "color", "text", map[string]any{"filterable": true})
		define(t, svc, ctx, ent, "n", "integer", nil)
	}
	r1 := create(t, svc, tn.in(t, tn.org1), ent, map[string]any{"color": "red", "n": 1})
	r2 := create(t, svc, tn.in(t, tn.org2), ent, map[string]any{"color": "red", "n": 2})
	rt := create(t, svc, tn.all(t), ent, map[string]any{"color": "red", "n": 3})
	ro := create(t, svc, other.all(t), ent, map[string]any{"color": "red", "n": 4})
	for _, c := range []struct {
		what string
		ctx  context.Context
		want []string
	}{
		{"org1", tn.in(t, tn.org1), sorted(r1.ID, rt.ID)},
		{"org2", tn.in(t, tn.org2), sorted(r2.ID, rt.ID)},
		{"tenant", tn.all(t), sorted(r1.ID, r2.ID, rt.ID)},
		{"other tenant", other.all(t), []string{ro.ID}},
	} {
		for _, q := range []entities.RecordQuery{
			{EntityID: ent},
			{EntityID: ent, Filters: eq("color", "red")},               // total from the value counts
			{EntityID: ent, Filters: eq("color", "red", "blue")},       // In
			{EntityID: ent, Filters: eq("n", "1", "2", "3", "4")},      // counted
			{EntityID: ent, Search: "red"},                             // search
			{EntityID: ent, IDs: []string{r1.ID, r2.ID, rt.ID, ro.ID}}, // ids
		} {
			ids, total := list(t, svc, c.ctx, q)
			wantIDs(t, c.what+fmt.Sprintf(" %+v", q.Filters), ids, c.want...)
			wantTotal(t, c.what+fmt.Sprintf(" %+v", q.Filters), total, len(c.want))
		}
		opts, _, err := svc.RelationOptions(c.ctx, entities.OptionsQuery{EntityID: ent})
		must(t, err)
		var got []string
		for _, o := range opts {
			got = append(got, o.Value)
		}
		wantIDs(t, c.what+" relation options", got, c.want...)
	}
	// Reads and writes of a record the caller may not see find nothing.
	for _, c := range []struct {
		what string
		ctx  context.Context
		id   string
	}{
		{"org2 reading org1's", tn.in(t, tn.org2), r1.ID},
		{"other tenant reading the tenant's", other.all(t), rt.ID},
		{"tenant reading another tenant's", tn.all(t), ro.ID},
	} {
		_, err := svc.GetRecord(c.ctx, ent, c.id, true)
		wantNotFound(t, c.what+": get", err)
		_, err = svc.UpdateRecord(c.ctx, entities.RecordInput{EntityID: ent, RecordID: c.id, Values: map[string]any{"n": 9}})
		wantNotFound(t, c.what+": update", err)
		wantNotFound(t, c.what+": delete", svc.DeleteRecord(c.ctx, ent, c.id))
	}
	got, err := svc.GetRecord(tn.in(t, tn.org1), ent, r1.ID, false)
	must(t, err)
	if got.Values["n"] != 1.0 || got.OrganizationID != tn.org1 || got.TenantID != tn.id {
		t.Fatalf("org1's record after others' writes: %+v", got)
	}
	// The organization grid every area walks: a record of org1 is found,
	// listed and counted by the scopes that may read org1 only.
	grid := storetest.NewOrgScopes(tn.id, tn.org1, tn.org2)
	grid.RunBlind(t, func(t *testing.T, ctx context.Context) {
		_, err := svc.GetRecord(ctx, ent, r1.ID, true)
		wantNotFound(t, "get", err)
		_, err = svc.UpdateRecord(ctx, entities.RecordInput{EntityID: ent, RecordID: r1.ID, Values: map[string]any{"n": 9}})
		wantNotFound(t, "update", err)
		wantNotFound(t, "delete", svc.DeleteRecord(ctx, ent, r1.ID))
		for _, q := range []entities.RecordQuery{{EntityID: ent}, {EntityID: ent, Filters: eq("color", "red")}} {
			if ids, _ := list(t, svc, ctx, q); slices.Contains(ids, r1.ID) {
				t.Fatalf("%+v lists org1's record", q.Filters)
			}
		}
	})
	grid.RunSeeing(t, func(t *testing.T, ctx context.Context) {
		_, err := svc.GetRecord(ctx, ent, r1.ID, false)
		must(t, err)
		for _, q := range []entities.RecordQuery{{EntityID: ent}, {EntityID: ent, Filters: eq("color", "red")}} {
			if ids, _ := list(t, svc, ctx, q); !slices.Contains(ids, r1.ID) {
				t.Fatalf("%+v leaves org1's record out", q.Filters)
			}
		}
	})
	// Another entity's records are not listed.
	_, total := list(t, svc, tn.all(t), entities.RecordQuery{EntityID: newEntityID()})
	wantTotal(t, "another entity", total, 0)
}

// Record ids: a record's key is (tenant, id): another tenant may use the
// same id, each reading and writing its own; the same tenant may not,
// whatever the entity, organization or deletion.
func testRecordIDPerTenant(t *testing.T, svc *entities.Service) {
	a, b := newTenant(), newTenant()
	ent, ent2 := newEntityID(), newEntityID()
	for _, ctx := range []context.Context{a.all(t), b.all(t)} {
		define(t, svc, ctx, ent, "name", "text", map[string]any{"filterable": true})
		define(t, svc, ctx, ent2, "name", "text", nil)
	}
	id := store.NewID()
	_, err := svc.CreateRecord(a.in(t, a.org1), entities.RecordInput{EntityID: ent, RecordID: id, Values: map[string]any{"name": "A"}})
	must(t, err)
	rb, err := svc.CreateRecord(b.all(t), entities.RecordInput{EntityID: ent, RecordID: id, Values: map[string]any{"name": "B"}})
	must(t, err)
	if rb.ID != id {
		t.Fatalf("tenant B's record has id %s, want the one asked for", rb.ID)
	}
	for _, c := range []struct {
		ctx  context.Context
		ent  string
		what string
	}{{a.in(t, a.org2), ent, "same tenant, other organization"}, {a.all(t), ent2, "same tenant, other entity"}} {
		_, err = svc.CreateRecord(c.ctx, entities.RecordInput{EntityID: c.ent, RecordID: id, Values: map[string]any{"name": "again"}})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("%s: got %v, want a conflict", c.what, err)
		}
	}
	_, err = svc.UpdateRecord(b.all(t), entities.RecordInput{EntityID: ent, RecordID: id, Values: map[string]any{"name": "B2"}})
	must(t, err)
	ra, err := svc.GetRecord(a.all(t), ent, id, false)
	must(t, err)
	if ra.Values["name"] != "A" || ra.TenantID != a.id {
		t.Fatalf("tenant A's record after B's update: %v", ra.Values)
	}
	must(t, svc.DeleteRecord(b.all(t), ent, id))
	_, err = svc.GetRecord(a.all(t), ent, id, false)
	must(t, err)
	_, total := list(t, svc, a.all(t), entities.RecordQuery{EntityID: ent, Filters: eq("name", "A")})
	wantTotal(t, "tenant A's count after B's delete", total, 1)
	_, err = svc.CreateRecord(b.all(t), entities.RecordInput{EntityID: ent, RecordID: id, Values: map[string]any{"name": "B3"}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("reusing a deleted record's id: got %v, want a conflict", err)
	}
}

// Soft delete: a deleted record leaves lists and reads, except those
// asking for deleted ones; it can be neither updated nor deleted again.
func testSoftDelete(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.in(t, tn.org1)
	ent := newEntityID()
	define(t, svc, tn.all(t), ent, "name", "text", map[string]any{"filterable": true})
	keep := create(t, svc, ctx, ent, map[string]any{"name": "x"})
	gone := create(t, svc, ctx, ent, map[string]any{"name": "x"})
	must(t, svc.DeleteRecord(ctx, ent, gone.ID))
	ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent})
	wantIDs(t, "list", ids, keep.ID)
	wantTotal(t, "list", total, 1)
	_, total = list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: eq("name", "x")})
	wantTotal(t, "filtered list", total, 1)
	ids, total = list(t, svc, ctx, entities.RecordQuery{EntityID: ent, WithDeleted: true})
	wantIDs(t, "list with deleted", ids, sorted(keep.ID, gone.ID)...)
	wantTotal(t, "list with deleted", total, 2)
	_, err := svc.GetRecord(ctx, ent, gone.ID, false)
	wantNotFound(t, "get", err)
	r, err := svc.GetRecord(ctx, ent, gone.ID, true)
	must(t, err)
	if r.DeletedAt == nil || r.Values["name"] != "x" {
		t.Fatalf("deleted record read with deleted: %+v", r)
	}
	_, err = svc.UpdateRecord(ctx, entities.RecordInput{EntityID: ent, RecordID: gone.ID, Values: map[string]any{"name": "y"}})
	wantNotFound(t, "update", err)
	wantNotFound(t, "delete again", svc.DeleteRecord(ctx, ent, gone.ID))
	opts, _, err := svc.RelationOptions(ctx, entities.OptionsQuery{EntityID: ent})
	must(t, err)
	if len(opts) != 1 || opts[0].Value != keep.ID {
		t.Fatalf("relation options %v, want the live record only", opts)
	}
}

// Filters by kind: equality, In and ranges on numbers and dates (on
// filterable fields and plain ones alike), booleans, lists holding a
// value, search (case-folded, booleans as true and false) and ids; all
// together.
func testFilters(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.all(t)
	ent := newEntityID()
	for _, filterable := range []bool{true, false} {
		sfx := ""
		if !filterable {
			sfx = "_plain"
		}
		cfg := func() map[string]any { return map[string]any{"filterable": filterable} }
		define(t, svc, ctx, ent, "name"+sfx, "text", cfg())
		define(t, svc, ctx, ent, "n"+sfx, "integer", cfg())
		define(t, svc, ctx, ent, "price"+sfx, "float", cfg())
		define(t, svc, ctx, ent, "ok"+sfx, "boolean", cfg())
		define(t, svc, ctx, ent, "due"+sfx, "date", cfg())
	}
	define(t, svc, ctx, ent, "tags", "select", map[string]any{"multi": true, "options": []any{"a", "b", "c"}})
	var recs []*entities.Record
	for i, v := range []struct {
		name  string
		n     int
		price float64
		ok    bool
		due   string
		tags  []any
	}{
		{"Łódź", 1, 1.5, true, "2026-01-01", []any{"a"}},
		{"apple", 2, 2.5, false, "2026-02-01", []any{"a", "b"}},
		{"Banana", 3, 10, true, "2026-03-01", []any{"c"}},
		{"cherry", 10, 20.25, false, "2025-12-31", nil},
	} {
		vals := map[string]any{}
		for _, sfx := range []string{"", "_plain"} {
			vals["name"+sfx], vals["n"+sfx], vals["price"+sfx], vals["ok"+sfx], vals["due"+sfx] = v.name, v.n, v.price, v.ok, v.due
		}
		if v.tags != nil {
			vals["tags"] = v.tags
		}
		recs = append(recs, create(t, svc, ctx, ent, vals))
		_ = i
	}
	id := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, recs[i].ID)
		}
		return sorted(out...)
	}
	for _, sfx := range []string{"", "_plain"} {
		for _, c := range []struct {
			filters []entities.Filter
			want    []string
		}{
			{eq("name"+sfx, "apple"), id(1)},
			{eq("name"+sfx, "Apple"), id()}, // equality is exact
			{eq("name"+sfx, "Łódź", "cherry", "none"), id(0, 3)},
			{eq("n"+sfx, "3"), id(2)},
			{eq("n"+sfx, "2", "10"), id(1, 3)},
			{eq("price"+sfx, "20.25"), id(3)},
			{eq("ok"+sfx, "true"), id(0, 2)},
			{eq("ok"+sfx, "false"), id(1, 3)},
			{eq("due"+sfx, "2026-02-01"), id(1)},
			{[]entities.Filter{{Key: "n" + sfx, Op: entities.OpGt, Values: []string{"2"}}}, id(2, 3)},
			{[]entities.Filter{{Key: "n" + sfx, Op: entities.OpGte, Values: []string{"2"}}}, id(1, 2, 3)},
			{[]entities.Filter{{Key: "n" + sfx, Op: entities.OpLt, Values: []string{"3"}}}, id(0, 1)},
			{[]entities.Filter{{Key: "cf_n" + sfx, Op: entities.OpLte, Values: []string{"3"}}}, id(0, 1, 2)},
			{[]entities.Filter{{Key: "price" + sfx, Op: entities.OpGte, Values: []string{"2.5"}}}, id(1, 2, 3)},
			{[]entities.Filter{{Key: "due" + sfx, Op: entities.OpLt, Values: []string{"2026-01-15"}}}, id(0, 3)},
			{[]entities.Filter{{Key: "n" + sfx, Op: entities.OpGte, Values: []string{"2"}},
				{Key: "n" + sfx, Op: entities.OpLt, Values: []string{"10"}}, {Key: "ok" + sfx, Op: entities.OpEq, Values: []string{"false"}}}, id(1)},
		} {
			ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: c.filters})
			wantIDs(t, fmt.Sprintf("%+v", c.filters), ids, c.want...)
			wantTotal(t, fmt.Sprintf("%+v", c.filters), total, len(c.want))
		}
	}
	for _, c := range []struct {
		q    entities.RecordQuery
		want []string
	}{
		{entities.RecordQuery{Filters: eq("tags", "a")}, id(0, 1)},
		{entities.RecordQuery{Filters: eq("tags", "b", "c")}, id(1, 2)},
		{entities.RecordQuery{Search: "ŁÓDŹ"}, id(0)},
		{entities.RecordQuery{Search: "AN"}, id(2)},
		{entities.RecordQuery{Search: "true"}, id(0, 2)},
		{entities.RecordQuery{Search: "20.25"}, id(3)},
		{entities.RecordQuery{Search: "%"}, id()},
		{entities.RecordQuery{IDs: []string{recs[1].ID, recs[3].ID, store.NewID()}}, id(1, 3)},
		{entities.RecordQuery{IDs: []string{recs[1].ID, recs[3].ID}, Filters: eq("n", "10"), Search: "CHER"}, id(3)},
	} {
		c.q.EntityID = ent
		ids, total := list(t, svc, ctx, c.q)
		wantIDs(t, fmt.Sprintf("%+v", c.q), ids, c.want...)
		wantTotal(t, fmt.Sprintf("%+v", c.q), total, len(c.want))
	}
}

// Sorting: by a field (records without it first ascending, last
// descending), by createdAt and by id, both directions, ties by id.
func testSorting(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.all(t)
	ent := newEntityID()
	define(t, svc, ctx, ent, "n", "integer", map[string]any{"filterable": true})
	define(t, svc, ctx, ent, "name", "text", nil)
	r := []*entities.Record{
		create(t, svc, ctx, ent, map[string]any{"n": 5, "name": "b"}),
		create(t, svc, ctx, ent, map[string]any{"n": -1, "name": "c"}),
		create(t, svc, ctx, ent, map[string]any{"name": "a"}),
		create(t, svc, ctx, ent, map[string]any{"n": 5, "name": "d"}),
		create(t, svc, ctx, ent, map[string]any{"n": 40, "name": "B"}),
	}
	ids := func(is ...int) []string {
		out := make([]string, len(is))
		for i, x := range is {
			out[i] = r[x].ID
		}
		return out
	}
	byID := sorted(ids(0, 1, 2, 3, 4)...)
	// Records 0 and 3 tie on n: by id in the list's direction.
	n5 := sorted(r[0].ID, r[3].ID)
	for _, c := range []struct {
		field, dir string
		want       []string
	}{
		{"n", "asc", append(append(ids(2, 1), n5...), r[4].ID)},
		{"cf_n", "desc", append(append(ids(4), n5[1], n5[0]), ids(1, 2)...)},
		{"id", "", byID},
		{"id", "desc", reversed(byID)},
		{"createdAt", "asc", byID},
		{"createdAt", "desc", reversed(byID)},
	} {
		got, _ := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, SortField: c.field, SortDir: c.dir})
		wantIDs(t, "sort by "+c.field+" "+c.dir, got, c.want...)
	}
	got, _ := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, SortField: "name", SortDir: "asc"})
	if len(got) != 5 || got[len(got)-1] != r[3].ID {
		t.Fatalf("sort by name: last %v, want record d", got)
	}
}

// Paging: pages of the default order partition the records, each list
// giving the exact total; All lists every record; a page past the end is
// empty with the total.
func testPagingTotals(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.in(t, tn.org1)
	ent := newEntityID()
	define(t, svc, tn.all(t), ent, "kind", "text", map[string]any{"filterable": true})
	define(t, svc, tn.all(t), ent, "n", "integer", nil)
	var all, odd []string
	values := make([]map[string]any, 7)
	for i := range values {
		values[i] = map[string]any{"kind": []string{"even", "odd"}[i%2], "n": i}
	}
	made, err := svc.CreateRecords(ctx, ent, values)
	must(t, err)
	for i, id := range made {
		all = append(all, id)
		if i%2 == 1 {
			odd = append(odd, id)
		}
	}
	all, odd = sorted(all...), sorted(odd...)
	for _, c := range []struct {
		what    string
		filters []entities.Filter
		want    []string
	}{{"all", nil, all}, {"odd (counted)", eq("kind", "odd"), odd}, {"range", []entities.Filter{{Key: "n", Op: entities.OpGte, Values: []string{"0"}}}, all}} {
		var got []string
		for page := 1; page <= 4; page++ {
			ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: c.filters, Page: page, PageSize: 3})
			wantTotal(t, fmt.Sprintf("%s page %d", c.what, page), total, len(c.want))
			if want := min(3, max(0, len(c.want)-(page-1)*3)); len(ids) != want {
				t.Fatalf("%s page %d: %d records, want %d", c.what, page, len(ids), want)
			}
			got = append(got, ids...)
		}
		wantIDs(t, c.what+" pages", got, c.want...)
		ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: c.filters, All: true, PageSize: 1})
		wantIDs(t, c.what+" all", ids, c.want...)
		wantTotal(t, c.what+" all", total, len(c.want))
	}
}

// Counted totals: a filter's exact total (from kept value counts where a
// Store keeps them) follows creates, batch creates, updates changing,
// clearing and setting the value, and deletes, per organization and
// tenant; values that compare equal count as one (2 and 2.0; -0 and 0).
func testCountedTotals(t *testing.T, svc *entities.Service) {
	tn, other := newTenant(), newTenant()
	ent := newEntityID()
	for _, ctx := range []context.Context{tn.all(t), other.all(t)} {
		define(t, svc, ctx, ent, "color", "text", map[string]any{"filterable": true})
		define(t, svc, ctx, ent, "n", "float", map[string]any{"filterable": true})
		define(t, svc, ctx, ent, "ok", "boolean", map[string]any{"filterable": true})
	}
	org1, org2 := tn.in(t, tn.org1), tn.in(t, tn.org2)
	check := func(step string, ctx context.Context, filters []entities.Filter, want int) {
		t.Helper()
		ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: filters, All: true})
		if total != want || len(ids) != want {
			t.Fatalf("%s: %+v: total %d and %d records, want %d", step, filters, total, len(ids), want)
		}
	}
	a := create(t, svc, org1, ent, map[string]any{"color": "red", "n": 2, "ok": true})
	b := create(t, svc, org1, ent, map[string]any{"color": "red", "n": 2.0, "ok": false})
	c := create(t, svc, org2, ent, map[string]any{"color": "red", "n": -0.0})
	_, err := svc.CreateRecords(org2, ent, []map[string]any{{"color": "blue", "n": 0}, {"color": "red", "n": 2}})
	must(t, err)
	create(t, svc, other.all(t), ent, map[string]any{"color": "red", "n": 2})
	check("created", org1, eq("color", "red"), 2)
	check("created", org2, eq("color", "red"), 2)
	check("created", tn.all(t), eq("color", "red"), 4)
	check("created", tn.all(t), eq("color", "red", "blue"), 5)
	check("created", tn.all(t), eq("n", "2"), 3)
	check("created", tn.all(t), eq("n", "0"), 2)
	check("created", tn.all(t), eq("ok", "true"), 1)
	check("created", other.all(t), eq("n", "2"), 1)

	_, err = svc.UpdateRecord(org1, entities.RecordInput{EntityID: ent, RecordID: a.ID, Values: map[string]any{"color": "blue", "n": nil}})
	must(t, err)
	_, err = svc.UpdateRecord(org1, entities.RecordInput{EntityID: ent, RecordID: b.ID, Values: map[string]any{"ok": true}})
	must(t, err)
	check("updated", org1, eq("color", "red"), 1)
	check("updated", tn.all(t), eq("color", "blue"), 2)
	check("updated", tn.all(t), eq("n", "2"), 2)
	check("updated", tn.all(t), eq("ok", "true"), 2)
	check("updated", tn.all(t), eq("ok", "false"), 0)

	must(t, svc.DeleteRecord(org1, ent, b.ID))
	must(t, svc.DeleteRecord(org2, ent, c.ID))
	check("deleted", org1, eq("color", "red"), 0)
	check("deleted", tn.all(t), eq("color", "red"), 1)
	check("deleted", tn.all(t), eq("n", "2"), 1)
	check("deleted", tn.all(t), eq("n", "0"), 1)
	check("deleted", tn.all(t), eq("ok", "true"), 1)
	check("deleted", other.all(t), eq("color", "red"), 1)
}

// Counts of records written before a field became filterable, and while
// it was not, are right once it is.
func testCountsRebuilt(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.in(t, tn.org1)
	ent := newEntityID()
	define(t, svc, tn.all(t), ent, "color", "text", nil)
	gone := create(t, svc, ctx, ent, map[string]any{"color": "red"})
	create(t, svc, ctx, ent, map[string]any{"color": "red"})
	must(t, svc.DeleteRecord(ctx, ent, gone.ID))
	define(t, svc, tn.all(t), ent, "color", "text", map[string]any{"filterable": true})
	_, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: eq("color", "red")})
	wantTotal(t, "made filterable", total, 1)
	define(t, svc, tn.all(t), ent, "color", "text", nil)
	create(t, svc, ctx, ent, map[string]any{"color": "red"})
	define(t, svc, tn.in(t, tn.org2), ent, "color", "text", map[string]any{"filterable": true})
	define(t, svc, tn.all(t), ent, "color", "text", map[string]any{"filterable": true})
	_, total = list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: eq("color", "red")})
	wantTotal(t, "filterable again", total, 2)
}

// Relation options page through live records in id order with a cursor,
// matching a search.
func testRelationOptions(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.all(t)
	ent := newEntityID()
	define(t, svc, ctx, ent, "name", "text", nil)
	var want, wantX []string
	for i := range 5 {
		name := fmt.Sprintf("item %d", i)
		if i%2 == 0 {
			name += " X"
		}
		r := create(t, svc, ctx, ent, map[string]any{"name": name})
		want = append(want, r.ID)
		if i%2 == 0 {
			wantX = append(wantX, r.ID)
		}
	}
	want, wantX = sorted(want...), sorted(wantX...)
	for _, c := range []struct {
		q    string
		want []string
	}{{"", want}, {"x", wantX}} {
		var got []string
		cursor := ""
		for range 5 {
			opts, next, err := svc.RelationOptions(ctx, entities.OptionsQuery{EntityID: ent, Q: c.q, Cursor: cursor, PageSize: 2})
			must(t, err)
			for _, o := range opts {
				got = append(got, o.Value)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		wantIDs(t, "options "+c.q, got, c.want...)
	}
}

// Concurrent updates of one record apply one after the other, each to
// the other's result: every value written survives, and its counts are
// exact.
func testConcurrentUpdates(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ctx := tn.all(t)
	ent := newEntityID()
	const n = 8
	for i := range n {
		define(t, svc, ctx, ent, fmt.Sprintf("f%d", i), "integer", map[string]any{"filterable": true})
	}
	r := create(t, svc, ctx, ent, map[string]any{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := svc.UpdateRecord(ctx, entities.RecordInput{EntityID: ent, RecordID: r.ID, Values: map[string]any{fmt.Sprintf("f%d", i): i}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	got, err := svc.GetRecord(ctx, ent, r.ID, false)
	must(t, err)
	if len(got.Values) != n {
		t.Fatalf("after %d concurrent updates the record holds %v", n, got.Values)
	}
	for i := range n {
		_, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Filters: eq(fmt.Sprintf("f%d", i), fmt.Sprint(i))})
		wantTotal(t, fmt.Sprintf("f%d", i), total, 1)
	}
}

// testSearchTotalCapped: with a search, a list's total counts at most
// store.SearchCap(ctx)+1 matches (the cap lowered to 3 here), exactly
// below it, on full pages, a partial last page and an empty page past
// the matches alike; without a search the total stays exact.
func testSearchTotalCapped(t *testing.T, svc *entities.Service) {
	tn := newTenant()
	ent := newEntityID()
	define(t, svc, tn.all(t), ent, "name", "text", nil)
	values := []map[string]any{{"name": "Other"}}
	for i := range 5 {
		values = append(values, map[string]any{"name": fmt.Sprint("Alpha ", i)})
	}
	made, err := svc.CreateRecords(tn.all(t), ent, values)
	must(t, err)
	alpha := sorted(made[1:]...)
	for _, c := range []struct {
		what        string
		cap         int
		search      string
		page, size  int
		rows, total int
	}{
		{"capped, first page", 3, "ALPHA", 1, 2, 2, 4},
		{"capped, last page", 3, "alpha", 3, 2, 1, 4},
		{"capped, past the matches", 3, "alpha", 4, 2, 0, 4},
		{"exact at the cap", 5, "alpha", 1, 2, 2, 5},
		{"exact below the cap", 9, "alpha", 1, 2, 2, 5},
		{"no search", 3, "", 1, 2, 2, 6},
	} {
		ctx := storetest.WithSearchCap(tn.all(t), c.cap)
		ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent, Search: c.search, Page: c.page, PageSize: c.size})
		wantTotal(t, c.what, total, c.total)
		if len(ids) != c.rows {
			t.Fatalf("%s: %d records, want %d", c.what, len(ids), c.rows)
		}
		for _, id := range ids {
			if c.search != "" && !slices.Contains(alpha, id) {
				t.Fatalf("%s: record %s does not match", c.what, id)
			}
		}
	}
}
