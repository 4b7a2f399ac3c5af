package entities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// On PostgreSQL the tests share the package's schema. Every test uses
// fresh tenants (storetest.NewScope) and entity ids with a random suffix
// (newEntityID), so that neither tenant data nor global definitions
// (shared by every tenant of a schema) cross between tests or -count runs.

// uniq returns a random lowercase hex suffix.
func uniq() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newEntityID returns a fresh entity id in stored (dotted) form.
func newEntityID() string { return "test.e_" + uniq() }

// scopes returns a fresh tenant with an organization: the context of a
// caller in that organization, the context of a tenant-level caller (no
// organization), and the scope.
func scopes(t *testing.T) (orgCtx, tenantCtx context.Context, sc store.Scope) {
	orgCtx, sc = storetest.NewScope(t)
	tenantCtx = store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID})
	return orgCtx, tenantCtx, sc
}

// otherOrg returns the context of a caller in another organization of
// sc's tenant.
func otherOrg(t *testing.T, sc store.Scope) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationID: store.NewID()})
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want a *store.ValidationError naming %q", err, err, field)
	}
	if _, ok := ve.Fields[field]; !ok {
		t.Fatalf("validation error %v does not name field %q", ve, field)
	}
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("errors.Is(%v, store.ErrInvalid) = false", err)
	}
}

func wantNotFound(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, entities.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("error = %v, want entities.ErrNotFound (a store.ErrNotFound)", err)
	}
}

func ptr[T any](v T) *T { return &v }

func define(t *testing.T, svc *entities.Service, ctx context.Context, in entities.DefinitionInput) *entities.Definition {
	t.Helper()
	d, err := svc.Define(ctx, in)
	if err != nil {
		t.Fatalf("Define(%s %s): %v", in.EntityID, in.Key, err)
	}
	return d
}

func upsert(t *testing.T, svc *entities.Service, ctx context.Context, in entities.EntityInput) *entities.Entity {
	t.Helper()
	e, err := svc.UpsertEntity(ctx, in)
	if err != nil {
		t.Fatalf("UpsertEntity(%s): %v", in.EntityID, err)
	}
	return e
}

// text is a text definition of key labelled label.
func text(entityID, key, label string) entities.DefinitionInput {
	return entities.DefinitionInput{EntityID: entityID, Key: key, Kind: "text", ConfigJSON: map[string]any{"label": label}}
}

// resolved returns the caller's resolved definitions of entityID by key.
func resolved(t *testing.T, svc *entities.Service, ctx context.Context, entityID string) map[string]*entities.Definition {
	t.Helper()
	defs, err := svc.Definitions(ctx, entityID)
	if err != nil {
		t.Fatalf("Definitions(%s): %v", entityID, err)
	}
	out := map[string]*entities.Definition{}
	for _, d := range defs {
		if d.EntityID != entityID {
			t.Fatalf("Definitions(%s) returned a definition of %s", entityID, d.EntityID)
		}
		if _, dup := out[d.Key]; dup {
			t.Fatalf("Definitions(%s) returned key %s twice", entityID, d.Key)
		}
		out[d.Key] = d
	}
	return out
}

func keysOf(defs []*entities.Definition) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.Key)
	}
	return out
}

func label(d *entities.Definition) string {
	if d == nil {
		return "<none>"
	}
	s, _ := d.ConfigJSON["label"].(string)
	return s
}

func manage(t *testing.T, svc *entities.Service, ctx context.Context, entityID string) (map[string]*entities.Definition, []string) {
	t.Helper()
	items, deleted, err := svc.Manage(ctx, entityID)
	if err != nil {
		t.Fatalf("Manage(%s): %v", entityID, err)
	}
	out := map[string]*entities.Definition{}
	for _, d := range items {
		out[d.Key] = d
	}
	return out, deleted
}

func summary(list []entities.EntitySummary, entityID string) *entities.EntitySummary {
	for i := range list {
		if list[i].EntityID == entityID {
			return &list[i]
		}
	}
	return nil
}

func listEntities(t *testing.T, svc *entities.Service, ctx context.Context) []entities.EntitySummary {
	t.Helper()
	list, err := svc.ListEntities(ctx)
	if err != nil {
		t.Fatalf("ListEntities: %v", err)
	}
	return list
}

func sidebar(t *testing.T, svc *entities.Service, ctx context.Context) []entities.EntitySummary {
	t.Helper()
	list, err := svc.SidebarEntities(ctx)
	if err != nil {
		t.Fatalf("SidebarEntities: %v", err)
	}
	return list
}

// --- 1. Entities ---

func TestEntityUpsertCreatesThenUpdates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		ent := newEntityID()

		e1 := upsert(t, svc, ctx, entities.EntityInput{EntityID: ent, Label: "First", Description: "d", LabelField: "title",
			DefaultEditor: "markdown", ShowInSidebar: ptr(true)})
		is.Equal(e1.EntityID, ent)
		is.Equal(e1.TenantID, sc.TenantID)
		is.Equal(e1.OrganizationID, sc.OrganizationID) // the caller's organization's
		is.True(e1.IsActive)                           // defaults to active
		is.True(e1.ShowInSidebar)
		is.True(e1.DeletedAt == nil)

		time.Sleep(2 * time.Millisecond) // so that updatedAt moves on
		e2 := upsert(t, svc, ctx, entities.EntityInput{EntityID: ent, Label: "Second"})
		is.Equal(e2.ID, e1.ID) // same entity
		is.Equal(e2.Label, "Second")
		is.Equal(e2.Description, "")
		is.True(e2.CreatedAt.Equal(e1.CreatedAt)) // createdAt kept
		is.True(e2.UpdatedAt.After(e1.UpdatedAt))
		is.True(e2.ShowInSidebar) // not given: kept

		list := listEntities(t, svc, ctx)
		is.Equal(len(list), 1)
		is.Equal(list[0].EntityID, ent)
		is.Equal(list[0].Label, "Second")
		is.Equal(list[0].Source, "custom")
		is.True(list[0].UpdatedAt != nil && list[0].UpdatedAt.Equal(e2.UpdatedAt))
	}, entities.Migrations)
}

func TestEntityColonAndDotAreTheSame(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		dotted := newEntityID()
		colon := strings.Replace(dotted, ".", ":", 1)

		n, ok := entities.NormalizeEntityID(colon)
		is.True(ok)
		is.Equal(n, dotted)

		e1 := upsert(t, svc, ctx, entities.EntityInput{EntityID: colon, Label: "Colon"})
		is.Equal(e1.EntityID, dotted) // stored dotted
		e2 := upsert(t, svc, ctx, entities.EntityInput{EntityID: dotted, Label: "Dot"})
		is.Equal(e2.ID, e1.ID) // the same entity
		list := listEntities(t, svc, ctx)
		is.Equal(len(list), 1)
		is.Equal(list[0].EntityID, dotted)
		is.Equal(list[0].Label, "Dot")

		// Definitions: written through one form, read through the other.
		d := define(t, svc, ctx, text(colon, "name", "Name"))
		is.Equal(d.EntityID, dotted)
		defs, err := svc.Definitions(ctx, colon)
		is.NoErr(err)
		is.Equal(keysOf(defs), []string{"name"})
		is.Equal(defs[0].EntityID, dotted)
		_, err = svc.Batch(ctx, entities.BatchInput{EntityID: colon, Definitions: []entities.DefinitionInput{{Key: "other", Kind: "text"}},
			Fieldsets: []entities.FieldSet{{Code: "main", Label: "Main"}}})
		is.NoErr(err)
		set, err := svc.Settings(ctx, colon)
		is.NoErr(err)
		is.Equal(len(set[dotted].Fieldsets), 1)
		_, err = svc.DeleteDefinition(ctx, colon, "other")
		is.NoErr(err)
		is.NoErr(svc.RestoreDefinition(ctx, dotted, "other"))

		is.NoErr(svc.DeleteEntity(ctx, colon))
		is.Equal(len(listEntities(t, svc, ctx)), 0)
	}, entities.Migrations)
}

func TestEntityValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent := newEntityID()
		ok := entities.EntityInput{EntityID: ent, Label: "L"}
		with := func(f func(*entities.EntityInput)) entities.EntityInput {
			in := ok
			f(&in)
			return in
		}
		cases := []struct {
			name  string
			in    entities.EntityInput
			field string
		}{
			{"empty id", with(func(in *entities.EntityInput) { in.EntityID = "" }), "entityId"},
			{"no separator", with(func(in *entities.EntityInput) { in.EntityID = "modulename" }), "entityId"},
			{"upper case", with(func(in *entities.EntityInput) { in.EntityID = "Module.name" }), "entityId"},
			{"two separators", with(func(in *entities.EntityInput) { in.EntityID = "a.b.c" }), "entityId"},
			{"hyphen", with(func(in *entities.EntityInput) { in.EntityID = "a-b.c" }), "entityId"},
			{"empty side", with(func(in *entities.EntityInput) { in.EntityID = "a." }), "entityId"},
			{"too long id", with(func(in *entities.EntityInput) { in.EntityID = "a." + strings.Repeat("b", 199) }), "entityId"},
			{"empty label", with(func(in *entities.EntityInput) { in.Label = "" }), "label"},
			{"long label", with(func(in *entities.EntityInput) { in.Label = strings.Repeat("é", 201) }), "label"},
			{"long description", with(func(in *entities.EntityInput) { in.Description = strings.Repeat("x", 2001) }), "description"},
			{"labelField digit first", with(func(in *entities.EntityInput) { in.LabelField = "1name" }), "labelField"},
			{"labelField dash", with(func(in *entities.EntityInput) { in.LabelField = "a-b" }), "labelField"},
			{"labelField too long", with(func(in *entities.EntityInput) { in.LabelField = strings.Repeat("a", 101) }), "labelField"},
			{"defaultEditor", with(func(in *entities.EntityInput) { in.DefaultEditor = "wysiwyg" }), "defaultEditor"},
		}
		for _, c := range cases {
			_, err := svc.UpsertEntity(ctx, c.in)
			if err == nil {
				t.Fatalf("%s: UpsertEntity accepted %+v", c.name, c.in)
			}
			wantInvalid(t, err, c.field)
		}
		// Several bad fields are all named.
		_, err := svc.UpsertEntity(ctx, entities.EntityInput{EntityID: "X", Label: "", DefaultEditor: "x"})
		var ve *store.ValidationError
		is.True(errors.As(err, &ve))
		is.Equal(len(ve.Fields), 3)
		is.Equal(len(listEntities(t, svc, ctx)), 0) // nothing written

		// The limits themselves are accepted.
		for _, in := range []entities.EntityInput{
			{EntityID: "a." + strings.Repeat("b", 198), Label: strings.Repeat("é", 200), Description: strings.Repeat("x", 2000),
				LabelField: "_" + strings.Repeat("A", 99), DefaultEditor: "simpleMarkdown"},
			{EntityID: "m_1:n_2", Label: "x", LabelField: "Title9", DefaultEditor: "plain"},
			{EntityID: ent, Label: "x", DefaultEditor: "htmlRichText"},
		} {
			_, err := svc.UpsertEntity(ctx, in)
			is.NoErr(err)
		}
		_, err = svc.UpsertEntity(t.Context(), ok)
		is.True(errors.Is(err, store.ErrNoScope)) // no scope, no write
	}, entities.Migrations)
}

func TestEntityDeleteAndRecreate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent, keep := newEntityID(), newEntityID()

		e1 := upsert(t, svc, ctx, entities.EntityInput{EntityID: ent, Label: "Gone", ShowInSidebar: ptr(true)})
		upsert(t, svc, ctx, entities.EntityInput{EntityID: keep, Label: "Kept", ShowInSidebar: ptr(true)})
		is.Equal(len(sidebar(t, svc, ctx)), 2)

		is.NoErr(svc.DeleteEntity(ctx, ent))
		list := listEntities(t, svc, ctx)
		is.Equal(len(list), 1)
		is.Equal(list[0].EntityID, keep)
		side := sidebar(t, svc, ctx)
		is.Equal(len(side), 1)
		is.Equal(side[0].EntityID, keep)

		wantNotFound(t, svc.DeleteEntity(ctx, ent))             // again
		wantNotFound(t, svc.DeleteEntity(ctx, newEntityID()))   // never existed
		wantNotFound(t, svc.DeleteEntity(ctx, "not an entity")) // malformed

		e2 := upsert(t, svc, ctx, entities.EntityInput{EntityID: ent, Label: "Back"})
		is.True(e2.ID != e1.ID) // a new one
		is.True(e2.IsActive)
		is.True(!e2.ShowInSidebar) // not carried over from the deleted one
		is.True(e2.DeletedAt == nil)
		list = listEntities(t, svc, ctx)
		is.Equal(len(list), 2)
		is.Equal(summary(list, ent).Label, "Back")
	}, entities.Migrations)
}

func TestEntitySidebarOnlyShownAndActive(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		shown, hidden, inactive, def := newEntityID(), newEntityID(), newEntityID(), newEntityID()
		upsert(t, svc, ctx, entities.EntityInput{EntityID: shown, Label: "Shown", ShowInSidebar: ptr(true)})
		upsert(t, svc, ctx, entities.EntityInput{EntityID: hidden, Label: "Hidden", ShowInSidebar: ptr(false)})
		upsert(t, svc, ctx, entities.EntityInput{EntityID: inactive, Label: "Inactive", ShowInSidebar: ptr(true), IsActive: ptr(false)})
		upsert(t, svc, ctx, entities.EntityInput{EntityID: def, Label: "Default"}) // showInSidebar defaults to false

		side := sidebar(t, svc, ctx)
		is.Equal(len(side), 1)
		is.Equal(side[0].EntityID, shown)
		is.True(side[0].ShowInSidebar)
		list := listEntities(t, svc, ctx)
		is.Equal(len(list), 4) // the list has them all
		is.True(slices.IsSortedFunc(list, func(a, b entities.EntitySummary) int { return strings.Compare(a.EntityID, b.EntityID) }))

		// Turning them on and off moves them.
		upsert(t, svc, ctx, entities.EntityInput{EntityID: inactive, Label: "Inactive", IsActive: ptr(true)})
		upsert(t, svc, ctx, entities.EntityInput{EntityID: shown, Label: "Shown", ShowInSidebar: ptr(false)})
		side = sidebar(t, svc, ctx)
		is.Equal(len(side), 1)
		is.Equal(side[0].EntityID, inactive)
	}, entities.Migrations)
}

func TestEntityCountIsResolvedActiveKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		ent, empty := newEntityID(), newEntityID()
		upsert(t, svc, tenantCtx, entities.EntityInput{EntityID: ent, Label: "E", ShowInSidebar: ptr(true)})
		upsert(t, svc, tenantCtx, entities.EntityInput{EntityID: empty, Label: "Empty"})

		_, err := svc.DefineGlobal(t.Context(), text(ent, "global_key", "Global"))
		is.NoErr(err)
		define(t, svc, tenantCtx, text(ent, "a", "A"))
		define(t, svc, tenantCtx, text(ent, "b", "B"))
		in := text(ent, "c", "C")
		in.IsActive = ptr(false)
		define(t, svc, tenantCtx, in)
		_, err = svc.DeleteDefinition(tenantCtx, ent, "b")
		is.NoErr(err)
		define(t, svc, orgCtx, text(ent, "d", "D"))
		define(t, svc, orgCtx, text(ent, "a", "A for the org")) // same key: still one

		// Tenant-level caller: global_key, a (b deleted, c inactive, d is the org's).
		is.Equal(summary(listEntities(t, svc, tenantCtx), ent).Count, 2)
		is.Equal(summary(listEntities(t, svc, tenantCtx), empty).Count, 0)
		// Org caller: global_key, a, d.
		is.Equal(summary(listEntities(t, svc, orgCtx), ent).Count, 3)
		is.Equal(summary(sidebar(t, svc, orgCtx), ent).Count, 3)
		// Another org of the tenant: global_key, a.
		is.Equal(summary(listEntities(t, svc, otherOrg(t, sc)), ent).Count, 2)
		// Count equals what Definitions returns.
		defs, err := svc.Definitions(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(defs), 3)
	}, entities.Migrations)
}

func TestEntityOrganizationWinsOverTenant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		ent := newEntityID()
		te := upsert(t, svc, tenantCtx, entities.EntityInput{EntityID: ent, Label: "Tenant's", ShowInSidebar: ptr(true)})
		is.Equal(te.OrganizationID, "")
		oe := upsert(t, svc, orgCtx, entities.EntityInput{EntityID: ent, Label: "Org's", ShowInSidebar: ptr(true)})
		is.Equal(oe.OrganizationID, sc.OrganizationID)
		is.True(oe.ID != te.ID) // two entities, one per scope

		list := listEntities(t, svc, orgCtx)
		is.Equal(len(list), 1) // one entry per id
		is.Equal(list[0].Label, "Org's")
		side := sidebar(t, svc, orgCtx)
		is.Equal(len(side), 1)
		is.Equal(side[0].Label, "Org's")

		list = listEntities(t, svc, otherOrg(t, sc))
		is.Equal(len(list), 1)
		is.Equal(list[0].Label, "Tenant's")
		list = listEntities(t, svc, tenantCtx)
		is.Equal(len(list), 1)
		is.Equal(list[0].Label, "Tenant's")

		// An org caller deletes its own; the tenant's shows again for it.
		is.NoErr(svc.DeleteEntity(orgCtx, ent))
		list = listEntities(t, svc, orgCtx)
		is.Equal(len(list), 1)
		is.Equal(list[0].Label, "Tenant's")
		wantNotFound(t, svc.DeleteEntity(orgCtx, ent)) // the tenant's is not the org caller's to delete
		is.Equal(len(listEntities(t, svc, tenantCtx)), 1)
	}, entities.Migrations)
}

// --- 2. Isolation ---

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctxA, tenantA, _ := scopes(t)
		ctxB, tenantB, _ := scopes(t)
		ent := newEntityID()

		upsert(t, svc, tenantA, entities.EntityInput{EntityID: ent, Label: "A's", ShowInSidebar: ptr(true)})
		upsert(t, svc, ctxA, entities.EntityInput{EntityID: newEntityID(), Label: "A org's", ShowInSidebar: ptr(true)})
		define(t, svc, tenantA, text(ent, "secret", "A tenant"))
		define(t, svc, ctxA, text(ent, "org_secret", "A org"))
		_, err := svc.Batch(ctxA, entities.BatchInput{EntityID: ent, Fieldsets: []entities.FieldSet{{Code: "a", Label: "A"}}})
		is.NoErr(err)

		for _, ctx := range []context.Context{ctxB, tenantB} {
			is.Equal(len(listEntities(t, svc, ctx)), 0)
			is.Equal(len(sidebar(t, svc, ctx)), 0)
			defs, err := svc.Definitions(ctx, ent)
			is.NoErr(err)
			is.Equal(len(defs), 0)
			items, deleted := manage(t, svc, ctx, ent)
			is.Equal(len(items), 0)
			is.Equal(len(deleted), 0)
			set, err := svc.Settings(ctx, ent)
			is.NoErr(err)
			is.Equal(len(set), 0)
			_, err = svc.DeleteDefinition(ctx, ent, "secret")
			wantNotFound(t, err)
			wantNotFound(t, svc.RestoreDefinition(ctx, ent, "secret"))
			wantNotFound(t, svc.DeleteEntity(ctx, ent))
		}
		// B defining the same key does not touch A's.
		define(t, svc, tenantB, text(ent, "secret", "B tenant"))
		is.Equal(label(resolved(t, svc, tenantA, ent)["secret"]), "A tenant")
		is.Equal(label(resolved(t, svc, tenantB, ent)["secret"]), "B tenant")
		upsert(t, svc, tenantB, entities.EntityInput{EntityID: ent, Label: "B's"})
		is.Equal(listEntities(t, svc, tenantA)[0].Label, "A's")
	}, entities.Migrations)
}

func TestOrganizationIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		o1, tenantCtx, sc := scopes(t)
		o2 := otherOrg(t, sc)
		ent := newEntityID()

		define(t, svc, tenantCtx, text(ent, "shared", "Tenant"))
		define(t, svc, o1, text(ent, "only_o1", "O1"))
		upsert(t, svc, o1, entities.EntityInput{EntityID: ent, Label: "O1's"})
		_, err := svc.Batch(o1, entities.BatchInput{EntityID: ent, Fieldsets: []entities.FieldSet{{Code: "o1", Label: "O1"}}})
		is.NoErr(err)

		got := resolved(t, svc, o1, ent)
		is.Equal(len(got), 2)
		is.Equal(label(got["only_o1"]), "O1")
		is.Equal(label(got["shared"]), "Tenant")

		got = resolved(t, svc, o2, ent)
		is.Equal(len(got), 1) // not O1's
		is.Equal(label(got["shared"]), "Tenant")
		items, _ := manage(t, svc, o2, ent)
		is.Equal(len(items), 1)
		is.True(items["only_o1"] == nil)
		got = resolved(t, svc, tenantCtx, ent)
		is.Equal(len(got), 1) // a tenant-level caller sees no organization's
		is.Equal(len(listEntities(t, svc, o2)), 0)
		set, err := svc.Settings(o2, ent)
		is.NoErr(err)
		is.Equal(len(set), 0)

		_, err = svc.DeleteDefinition(o2, ent, "only_o1")
		wantNotFound(t, err)
		is.Equal(label(resolved(t, svc, o1, ent)["only_o1"]), "O1")
	}, entities.Migrations)
}

// --- 3. Scope resolution ---

func TestScopeResolution(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		_, otherTenant, _ := scopes(t)
		ent := newEntityID()

		g, err := svc.DefineGlobal(t.Context(), text(ent, "color", "Global"))
		is.NoErr(err)
		is.Equal(g.Scope, entities.ScopeGlobal)
		is.Equal(g.TenantID, "")
		td := define(t, svc, tenantCtx, text(ent, "color", "Tenant"))
		is.Equal(td.Scope, entities.ScopeTenant)
		is.Equal(td.TenantID, sc.TenantID)
		is.Equal(td.OrganizationID, "")
		od := define(t, svc, orgCtx, text(ent, "color", "Org"))
		is.Equal(od.Scope, entities.ScopeOrganization)
		is.Equal(od.OrganizationID, sc.OrganizationID)

		// Most specific wins, whatever the order they were written in.
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Org")
		is.Equal(resolved(t, svc, orgCtx, ent)["color"].Scope, entities.ScopeOrganization)
		is.Equal(label(resolved(t, svc, tenantCtx, ent)["color"]), "Tenant")
		is.Equal(label(resolved(t, svc, otherOrg(t, sc), ent)["color"]), "Tenant")
		is.Equal(label(resolved(t, svc, otherTenant, ent)["color"]), "Global")

		// Updating the global one later (newer) does not beat narrower scopes.
		_, err = svc.DefineGlobal(t.Context(), text(ent, "color", "Global v2"))
		is.NoErr(err)
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Org")
		is.Equal(label(resolved(t, svc, tenantCtx, ent)["color"]), "Tenant")
		is.Equal(label(resolved(t, svc, otherTenant, ent)["color"]), "Global v2")

		// Updating a definition keeps its id and createdAt.
		td2 := define(t, svc, tenantCtx, text(ent, "color", "Tenant v2"))
		is.Equal(td2.ID, td.ID)
		is.True(td2.CreatedAt.Equal(td.CreatedAt))
		is.True(!td2.UpdatedAt.Before(td.UpdatedAt))

		// Manage shows the winner per key.
		items, deleted := manage(t, svc, orgCtx, ent)
		is.Equal(len(items), 1)
		is.Equal(label(items["color"]), "Org")
		is.Equal(len(deleted), 0)
		items, _ = manage(t, svc, otherTenant, ent)
		is.Equal(label(items["color"]), "Global v2")
		is.Equal(items["color"].Scope, entities.ScopeGlobal)
	}, entities.Migrations)
}

// --- 4. Tombstones ---

func TestTombstoneOwnScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, _ := scopes(t)
		ent := newEntityID()
		d1 := define(t, svc, tenantCtx, text(ent, "color", "Tenant"))
		define(t, svc, tenantCtx, text(ent, "size", "Size"))

		_, err := svc.DeleteDefinition(tenantCtx, ent, "color")
		is.NoErr(err)
		got := resolved(t, svc, tenantCtx, ent)
		is.True(got["color"] == nil)
		is.True(got["size"] != nil)
		is.True(resolved(t, svc, orgCtx, ent)["color"] == nil) // hidden in narrower scopes too
		items, deleted := manage(t, svc, tenantCtx, ent)
		is.True(items["color"] == nil)
		is.Equal(deleted, []string{"color"}) // history kept
		_, deleted = manage(t, svc, orgCtx, ent)
		is.Equal(len(deleted), 0) // not deleted at the org's own scope

		_, err = svc.DeleteDefinition(tenantCtx, ent, "color") // twice
		wantNotFound(t, err)
		_, err = svc.DeleteDefinition(tenantCtx, ent, "unknown")
		wantNotFound(t, err)
		wantNotFound(t, svc.RestoreDefinition(tenantCtx, ent, "size"))    // not deleted
		wantNotFound(t, svc.RestoreDefinition(tenantCtx, ent, "unknown")) // never defined

		// Define again lifts the tombstone (same row).
		d2 := define(t, svc, tenantCtx, text(ent, "color", "Tenant again"))
		is.Equal(d2.ID, d1.ID)
		is.True(d2.DeletedAt == nil)
		is.True(d2.IsActive)
		is.Equal(label(resolved(t, svc, tenantCtx, ent)["color"]), "Tenant again")
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Tenant again")
		_, deleted = manage(t, svc, tenantCtx, ent)
		is.Equal(len(deleted), 0)

		// Delete then restore brings the same definition back.
		_, err = svc.DeleteDefinition(tenantCtx, ent, "color")
		is.NoErr(err)
		is.NoErr(svc.RestoreDefinition(tenantCtx, ent, "color"))
		wantNotFound(t, svc.RestoreDefinition(tenantCtx, ent, "color")) // twice
		got = resolved(t, svc, tenantCtx, ent)
		is.Equal(label(got["color"]), "Tenant again")
		is.Equal(got["color"].ID, d1.ID)
		is.True(got["color"].IsActive)

		// An org's own definition: delete and restore at the org's scope.
		define(t, svc, orgCtx, text(ent, "org_only", "Org only"))
		_, err = svc.DeleteDefinition(orgCtx, ent, "org_only")
		is.NoErr(err)
		is.True(resolved(t, svc, orgCtx, ent)["org_only"] == nil)
		_, deleted = manage(t, svc, orgCtx, ent)
		is.Equal(deleted, []string{"org_only"})
		is.NoErr(svc.RestoreDefinition(orgCtx, ent, "org_only"))
		is.Equal(label(resolved(t, svc, orgCtx, ent)["org_only"]), "Org only")
	}, entities.Migrations)
}

// countRows counts the definition rows of a key (any scope).
func countRows(t *testing.T, db *store.DB, entityID, key string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT COUNT(*) FROM custom_field_definitions WHERE entity_id = $1 AND field_key = $2`,
		entityID, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A key defined at a wider scope deleted at a narrower one: the narrower
// scope gets a tombstone-only row, which restore removes.
func TestTombstoneWiderScopeKey(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		ent := newEntityID()
		define(t, svc, tenantCtx, text(ent, "color", "Tenant"))
		define(t, svc, tenantCtx, text(ent, "size", "Size"))
		is.Equal(countRows(t, db, ent, "color"), 1)

		_, err := svc.DeleteDefinition(orgCtx, ent, "color")
		t.Logf("DeleteDefinition(org caller, tenant-defined key) = %v (rows of the key: %d)", err, countRows(t, db, ent, "color"))
		is.NoErr(err)
		is.Equal(countRows(t, db, ent, "color"), 2) // a tombstone-only row at the org's scope
		is.True(resolved(t, svc, orgCtx, ent)["color"] == nil)
		is.Equal(label(resolved(t, svc, tenantCtx, ent)["color"]), "Tenant")       // the tenant still sees it
		is.Equal(label(resolved(t, svc, otherOrg(t, sc), ent)["color"]), "Tenant") // and so does another org
		items, deleted := manage(t, svc, orgCtx, ent)
		is.True(items["color"] == nil)
		is.True(items["size"] != nil)
		is.Equal(deleted, []string{"color"})
		_, deleted = manage(t, svc, tenantCtx, ent)
		is.Equal(len(deleted), 0)

		_, err = svc.DeleteDefinition(orgCtx, ent, "color") // twice
		wantNotFound(t, err)

		is.NoErr(svc.RestoreDefinition(orgCtx, ent, "color"))
		is.Equal(countRows(t, db, ent, "color"), 1) // the tombstone-only row is gone
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Tenant")
		_, deleted = manage(t, svc, orgCtx, ent)
		is.Equal(len(deleted), 0)
		wantNotFound(t, svc.RestoreDefinition(orgCtx, ent, "color"))

		// Defining the key at the org's scope over a tombstone-only row
		// lifts it too, and restore then finds nothing to restore.
		_, err = svc.DeleteDefinition(orgCtx, ent, "color")
		is.NoErr(err)
		define(t, svc, orgCtx, text(ent, "color", "Org"))
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Org")
		wantNotFound(t, svc.RestoreDefinition(orgCtx, ent, "color"))

		// A tenant deleting a global key hides it for itself only.
		_, otherTenant, _ := scopes(t)
		_, err = svc.DefineGlobal(t.Context(), text(ent, "global_key", "Global"))
		is.NoErr(err)
		_, err = svc.DeleteDefinition(tenantCtx, ent, "global_key")
		is.NoErr(err)
		is.True(resolved(t, svc, tenantCtx, ent)["global_key"] == nil)
		is.True(resolved(t, svc, orgCtx, ent)["global_key"] == nil)
		is.Equal(label(resolved(t, svc, otherTenant, ent)["global_key"]), "Global")
	}, entities.Migrations)
}

func TestInactiveLetsWiderScopeShow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, _ := scopes(t)
		ent := newEntityID()
		define(t, svc, tenantCtx, text(ent, "color", "Tenant"))
		in := text(ent, "color", "Org, disabled")
		in.IsActive = ptr(false)
		od := define(t, svc, orgCtx, in)
		is.True(!od.IsActive)

		got := resolved(t, svc, orgCtx, ent)
		is.Equal(label(got["color"]), "Tenant") // the tenant's shows through
		is.True(got["color"].IsActive)
		items, deleted := manage(t, svc, orgCtx, ent)
		is.Equal(label(items["color"]), "Org, disabled") // the manager sees the inactive winner
		is.True(!items["color"].IsActive)
		is.Equal(items["color"].Scope, entities.ScopeOrganization)
		is.Equal(len(deleted), 0)

		// Inactive everywhere: gone from the resolved view, kept in Manage.
		in = text(ent, "color", "Tenant, disabled")
		in.IsActive = ptr(false)
		define(t, svc, tenantCtx, in)
		is.True(resolved(t, svc, tenantCtx, ent)["color"] == nil)
		items, _ = manage(t, svc, tenantCtx, ent)
		is.Equal(label(items["color"]), "Tenant, disabled")

		// Active again at the org: it wins again.
		define(t, svc, orgCtx, text(ent, "color", "Org"))
		is.Equal(label(resolved(t, svc, orgCtx, ent)["color"]), "Org")
	}, entities.Migrations)
}

// --- 5. Kinds and configuration ---

func TestKinds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent := newEntityID()
		for _, k := range entities.Kinds {
			cfg := map[string]any{}
			if k == "dictionary" {
				cfg["dictionaryId"] = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
			}
			d, err := svc.Define(ctx, entities.DefinitionInput{EntityID: ent, Key: "f_" + k, Kind: k, ConfigJSON: cfg})
			if err != nil {
				t.Fatalf("kind %s: %v", k, err)
			}
			is.Equal(d.Kind, k)
		}
		d := define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "s", Kind: "string"})
		is.Equal(d.Kind, "text")
		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "e", Kind: "enum", ConfigJSON: map[string]any{"options": []any{"a", "b"}}})
		is.Equal(d.Kind, "select")
		got := resolved(t, svc, ctx, ent)
		is.Equal(len(got), len(entities.Kinds)+2)
		is.Equal(got["s"].Kind, "text")
		is.Equal(got["e"].Kind, "select")

		for _, k := range []string{"", "strin", "Text", "json", "text "} {
			_, err := svc.Define(ctx, entities.DefinitionInput{EntityID: ent, Key: "bad", Kind: k})
			wantInvalid(t, err, "kind")
		}
		is.True(resolved(t, svc, ctx, ent)["bad"] == nil)
	}, entities.Migrations)
}

func TestDefinitionValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent := newEntityID()
		rules := func(r ...map[string]any) map[string]any {
			list := make([]any, len(r))
			for i := range r {
				list[i] = r[i]
			}
			return map[string]any{"validation": list}
		}
		many := make([]map[string]any, 33)
		for i := range many {
			many[i] = map[string]any{"rule": "required", "message": "x"}
		}
		cases := []struct {
			name  string
			in    entities.DefinitionInput
			field string
		}{
			{"bad entity", entities.DefinitionInput{EntityID: "bad", Key: "k", Kind: "text"}, "entityId"},
			{"empty key", entities.DefinitionInput{EntityID: ent, Key: "", Kind: "text"}, "key"},
			{"camelCase key", entities.DefinitionInput{EntityID: ent, Key: "myKey", Kind: "text"}, "key"},
			{"dash key", entities.DefinitionInput{EntityID: ent, Key: "my-key", Kind: "text"}, "key"},
			{"space key", entities.DefinitionInput{EntityID: ent, Key: "my key", Kind: "text"}, "key"},
			{"long key", entities.DefinitionInput{EntityID: ent, Key: strings.Repeat("k", 101), Kind: "text"}, "key"},
			{"dictionary without id", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "dictionary"}, "configJson.dictionaryId"},
			{"dictionary bad id", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "dictionary",
				ConfigJSON: map[string]any{"dictionaryId": "dict-1"}}, "configJson.dictionaryId"},
			{"unknown rule", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: rules(map[string]any{"rule": "sometimes"})}, "configJson.validation[0].rule"},
			{"lt without param", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "integer",
				ConfigJSON: rules(map[string]any{"rule": "required"}, map[string]any{"rule": "lt"})}, "configJson.validation[1].param"},
			{"gte text param", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "integer",
				ConfigJSON: rules(map[string]any{"rule": "gte", "param": "5"})}, "configJson.validation[0].param"},
			{"eq without param", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: rules(map[string]any{"rule": "eq"})}, "configJson.validation[0].param"},
			{"bad regex", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: rules(map[string]any{"rule": "regex", "param": "(unclosed"})}, "configJson.validation[0].param"},
			{"long regex", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: rules(map[string]any{"rule": "regex", "param": strings.Repeat("a", 501)})}, "configJson.validation[0].param"},
			{"rule not an object", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"validation": []any{"required"}}}, "configJson.validation[0]"},
			{"message not text", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: rules(map[string]any{"rule": "required", "message": 3})}, "configJson.validation[0].message"},
			{"33 rules", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: rules(many...)}, "configJson.validation"},
			{"validation not a list", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"validation": "required"}}, "configJson.validation"},
			{"boolean default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "boolean",
				ConfigJSON: map[string]any{"defaultValue": "yes"}}, "configJson.defaultValue"},
			{"integer default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "integer",
				ConfigJSON: map[string]any{"defaultValue": 1.5}}, "configJson.defaultValue"},
			{"integer text default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "integer",
				ConfigJSON: map[string]any{"defaultValue": "1"}}, "configJson.defaultValue"},
			{"select default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "select",
				ConfigJSON: map[string]any{"options": []any{"a", "b"}, "defaultValue": "c"}}, "configJson.defaultValue"},
			{"relation default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "relation",
				ConfigJSON: map[string]any{"defaultValue": "x"}}, "configJson.defaultValue"},
			{"text default", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"defaultValue": 3}}, "configJson.defaultValue"},
			{"label not text", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"label": 3}}, "configJson.label"},
			{"long label", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"label": strings.Repeat("x", 201)}}, "configJson.label"},
			{"filterable not bool", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"filterable": "yes"}}, "configJson.filterable"},
			{"priority not number", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"priority": "1"}}, "configJson.priority"},
			{"options not list", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "select",
				ConfigJSON: map[string]any{"options": "a,b"}}, "configJson.options"},
			{"options of objects", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "select",
				ConfigJSON: map[string]any{"options": []any{map[string]any{"v": 1}}, "defaultValue": "a"}}, "configJson.options"},
			{"fieldset code", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"fieldset": "Main Set"}}, "configJson.fieldset"},
			{"group without code", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text",
				ConfigJSON: map[string]any{"group": map[string]any{"title": "T"}}}, "configJson.group"},
			{"empty optionsUrl", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "select",
				ConfigJSON: map[string]any{"optionsUrl": ""}}, "configJson.optionsUrl"},
			{"NaN", entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "float",
				ConfigJSON: map[string]any{"defaultValue": nan()}}, "configJson"},
		}
		for _, c := range cases {
			_, err := svc.Define(ctx, c.in)
			if err == nil {
				t.Fatalf("%s: Define accepted %+v", c.name, c.in)
			}
			wantInvalid(t, err, c.field)
		}
		is.Equal(len(resolved(t, svc, ctx, ent)), 0) // nothing written

		// Accepted: the limits, good rules and defaults.
		good := []entities.DefinitionInput{
			{EntityID: ent, Key: strings.Repeat("k", 100), Kind: "text"},
			{EntityID: ent, Key: "dict", Kind: "dictionary", ConfigJSON: map[string]any{"dictionaryId": "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B"}},
			{EntityID: ent, Key: "rules", Kind: "integer", ConfigJSON: rules(
				map[string]any{"rule": "required", "message": "needed"}, map[string]any{"rule": "lt", "param": 10},
				map[string]any{"rule": "lte", "param": 10.5}, map[string]any{"rule": "gt", "param": -1},
				map[string]any{"rule": "gte", "param": 0}, map[string]any{"rule": "eq", "param": "x"},
				map[string]any{"rule": "ne", "param": nil}, map[string]any{"rule": "regex", "param": `^\d+$`},
				map[string]any{"rule": "date"}, map[string]any{"rule": "integer"}, map[string]any{"rule": "float"})},
			{EntityID: ent, Key: "thirty_two", Kind: "text", ConfigJSON: rules(many[:32]...)},
			{EntityID: ent, Key: "flag", Kind: "boolean", ConfigJSON: map[string]any{"defaultValue": false}},
			{EntityID: ent, Key: "count", Kind: "integer", ConfigJSON: map[string]any{"defaultValue": 2}},
			{EntityID: ent, Key: "count_f", Kind: "integer", ConfigJSON: map[string]any{"defaultValue": 3.0}},
			{EntityID: ent, Key: "ratio", Kind: "float", ConfigJSON: map[string]any{"defaultValue": 0.5}},
			{EntityID: ent, Key: "choice", Kind: "select", ConfigJSON: map[string]any{"options": []any{"a", "b", 3}, "defaultValue": "a"}},
			{EntityID: ent, Key: "choice_n", Kind: "select", ConfigJSON: map[string]any{"options": []any{"a", 3}, "defaultValue": 3}},
			{EntityID: ent, Key: "rel", Kind: "relation", ConfigJSON: map[string]any{"defaultValue": nil, "relatedEntityId": "a.b"}},
			{EntityID: ent, Key: "extra", Kind: "text", ConfigJSON: map[string]any{"somethingElse": map[string]any{"x": []any{1}}}},
		}
		for _, in := range good {
			_, err := svc.Define(ctx, in)
			if err != nil {
				t.Fatalf("Define(%s): %v", in.Key, err)
			}
		}
		got := resolved(t, svc, ctx, ent)
		is.Equal(len(got), len(good))
		is.Equal(got["count"].ConfigJSON["defaultValue"], float64(2))
		is.Equal(got["extra"].ConfigJSON["somethingElse"], map[string]any{"x": []any{float64(1)}}) // passes through
		is.Equal(len(got["rules"].ConfigJSON["validation"].([]any)), 11)
	}, entities.Migrations)
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestDefinitionNormalisation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent := newEntityID()

		d := define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "plain", Kind: "text"})
		is.Equal(d.ConfigJSON["label"], "plain") // label defaults to the key
		is.Equal(d.ConfigJSON["formEditable"], true)
		is.Equal(d.ConfigJSON["listVisible"], true)
		is.True(d.IsActive)

		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "hidden", Kind: "text",
			ConfigJSON: map[string]any{"label": "Hidden", "formEditable": false, "listVisible": false}})
		is.Equal(d.ConfigJSON["label"], "Hidden")
		is.Equal(d.ConfigJSON["formEditable"], false) // given: kept
		is.Equal(d.ConfigJSON["listVisible"], false)

		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "price", Kind: "currency",
			ConfigJSON: map[string]any{"options": []any{"EUR", "USD"}, "optionsUrl": "/elsewhere"}})
		is.Equal(d.ConfigJSON["optionsUrl"], "/api/currencies/currencies/options")
		_, has := d.ConfigJSON["options"]
		is.True(!has)

		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "notes", Kind: "multiline"})
		is.Equal(d.ConfigJSON["editor"], "markdown")
		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "notes_html", Kind: "multiline",
			ConfigJSON: map[string]any{"editor": "htmlRichText"}})
		is.Equal(d.ConfigJSON["editor"], "htmlRichText")
		d = define(t, svc, ctx, entities.DefinitionInput{EntityID: ent, Key: "line", Kind: "text"})
		_, has = d.ConfigJSON["editor"]
		is.True(!has) // only multiline gets an editor

		// What is stored is what Define returned.
		got := resolved(t, svc, ctx, ent)
		is.Equal(got["plain"].ConfigJSON["label"], "plain")
		is.Equal(got["plain"].ConfigJSON["formEditable"], true)
		is.Equal(got["hidden"].ConfigJSON["listVisible"], false)
		is.Equal(got["price"].ConfigJSON["optionsUrl"], "/api/currencies/currencies/options")
		_, has = got["price"].ConfigJSON["options"]
		is.True(!has)
		is.Equal(got["notes"].ConfigJSON["editor"], "markdown")
		is.Equal(got["notes_html"].ConfigJSON["editor"], "htmlRichText")
		items, _ := manage(t, svc, ctx, ent)
		is.Equal(items["notes"].ConfigJSON["editor"], "markdown")
	}, entities.Migrations)
}

// --- 6. Batch ---

func TestBatchOrderAndSettings(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		ent := newEntityID()

		v1, err := svc.Batch(tenantCtx, entities.BatchInput{EntityID: ent,
			Definitions: []entities.DefinitionInput{
				{Key: "zeta", Kind: "text", ConfigJSON: map[string]any{"priority": 99}},
				{Key: "alpha", Kind: "integer"},
				{Key: "mid", Kind: "enum", ConfigJSON: map[string]any{"options": []any{"x"}}},
			},
			Fieldsets: []entities.FieldSet{{Code: "main", Label: "Main", Icon: "star", Description: "d",
				Groups: []entities.FieldSetGroup{{Code: "g1", Title: "Group", Hint: "h"}}}},
			SingleFieldsetPerRecord: ptr(true),
		})
		is.NoErr(err)
		defs, err := svc.Definitions(tenantCtx, ent)
		is.NoErr(err)
		is.Equal(keysOf(defs), []string{"zeta", "alpha", "mid"}) // batch order
		for i, d := range defs {
			is.Equal(d.Priority(), float64(i)) // priority = index (a given one is replaced)
			is.Equal(d.Scope, entities.ScopeTenant)
		}
		is.Equal(defs[2].Kind, "select")

		set, err := svc.Settings(tenantCtx, ent)
		is.NoErr(err)
		is.Equal(set[ent], entities.Settings{Fieldsets: []entities.FieldSet{{Code: "main", Label: "Main", Icon: "star", Description: "d",
			Groups: []entities.FieldSetGroup{{Code: "g1", Title: "Group", Hint: "h"}}}}, SingleFieldsetPerRecord: true})
		set, err = svc.Settings(orgCtx, ent) // the org has none: the tenant's
		is.NoErr(err)
		is.Equal(set[ent].Fieldsets[0].Code, "main")

		// A second batch at the org scope: new order, other settings.
		v2, err := svc.Batch(orgCtx, entities.BatchInput{EntityID: ent,
			Definitions: []entities.DefinitionInput{{Key: "mid", Kind: "text"}, {Key: "zeta", Kind: "text"}, {Key: "org_new", Kind: "text"}},
			Fieldsets:   []entities.FieldSet{{Code: "org", Label: "Org"}, {Code: "org-2", Label: "Org 2"}},
		})
		is.NoErr(err)
		is.True(v2 > v1) // the version goes up
		defs, err = svc.Definitions(orgCtx, ent)
		is.NoErr(err)
		// mid 0 (org), zeta 1 (org), alpha 1 (tenant's, kept), org_new 2: ties by key.
		is.Equal(keysOf(defs), []string{"mid", "alpha", "zeta", "org_new"})
		set, err = svc.Settings(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(set[ent].Fieldsets), 2) // most specific wins
		is.Equal(set[ent].Fieldsets[0].Code, "org")
		is.True(!set[ent].SingleFieldsetPerRecord)
		set, err = svc.Settings(tenantCtx, ent)
		is.NoErr(err)
		is.Equal(set[ent].Fieldsets[0].Code, "main")
		is.True(set[ent].SingleFieldsetPerRecord)
		set, err = svc.Settings(otherOrg(t, sc), ent)
		is.NoErr(err)
		is.Equal(set[ent].Fieldsets[0].Code, "main")

		// A batch without settings keeps them; keys it leaves out stay.
		v3, err := svc.Batch(tenantCtx, entities.BatchInput{EntityID: ent, Definitions: []entities.DefinitionInput{{Key: "alpha", Kind: "text"}}})
		is.NoErr(err)
		is.True(v3 > v2)
		defs, err = svc.Definitions(tenantCtx, ent)
		is.NoErr(err)
		is.Equal(keysOf(defs), []string{"alpha", "zeta", "mid"}) // alpha 0 (new batch), zeta 0, mid 2: ties by key
		set, err = svc.Settings(tenantCtx, ent)
		is.NoErr(err)
		is.True(set[ent].SingleFieldsetPerRecord)

		// Settings of several entities; unknown ones left out.
		other := newEntityID()
		set, err = svc.Settings(tenantCtx, ent, other)
		is.NoErr(err)
		is.Equal(len(set), 1)
		_, err = svc.Settings(tenantCtx, "Bad")
		wantInvalid(t, err, "entityId")

		// The version keeps going up with other changes.
		v4, err := svc.DeleteDefinition(tenantCtx, ent, "alpha")
		is.NoErr(err)
		is.True(v4 > v3)
	}, entities.Migrations)
}

func TestBatchValidationWritesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		ent := newEntityID()
		good := []entities.DefinitionInput{{Key: "a", Kind: "text"}, {Key: "b", Kind: "text"}}
		sets := []entities.FieldSet{{Code: "main", Label: "Main"}}
		with := func(defs ...entities.DefinitionInput) []entities.DefinitionInput {
			return append(slices.Clone(good), defs...)
		}
		many := make([]entities.FieldSet, 21)
		for i := range many {
			many[i] = entities.FieldSet{Code: "s" + string(rune('a'+i)), Label: "S"}
		}
		cases := []struct {
			name  string
			in    entities.BatchInput
			field string
		}{
			{"bad kind at 2", entities.BatchInput{EntityID: ent, Definitions: with(entities.DefinitionInput{Key: "c", Kind: "nope"}), Fieldsets: sets}, "definitions[2].kind"},
			{"bad key at 2", entities.BatchInput{EntityID: ent, Definitions: with(entities.DefinitionInput{Key: "C", Kind: "text"})}, "definitions[2].key"},
			{"bad config at 2", entities.BatchInput{EntityID: ent, Definitions: with(entities.DefinitionInput{Key: "c", Kind: "text",
				ConfigJSON: map[string]any{"validation": []any{map[string]any{"rule": "lt"}}}})}, "definitions[2].configJson.validation[0].param"},
			{"dictionary at 2", entities.BatchInput{EntityID: ent, Definitions: with(entities.DefinitionInput{Key: "c", Kind: "dictionary"})}, "definitions[2].configJson.dictionaryId"},
			{"duplicate key", entities.BatchInput{EntityID: ent, Definitions: with(entities.DefinitionInput{Key: "a", Kind: "integer"})}, "definitions[2].key"},
			{"21 fieldsets", entities.BatchInput{EntityID: ent, Definitions: good, Fieldsets: many}, "fieldsets"},
			{"fieldset code", entities.BatchInput{EntityID: ent, Definitions: good, Fieldsets: []entities.FieldSet{{Code: "Main", Label: "M"}}}, "fieldsets[0].code"},
			{"fieldset label", entities.BatchInput{EntityID: ent, Definitions: good, Fieldsets: []entities.FieldSet{{Code: "m"}}}, "fieldsets[0].label"},
			{"group code", entities.BatchInput{EntityID: ent, Definitions: good, Fieldsets: []entities.FieldSet{{Code: "m", Label: "M",
				Groups: []entities.FieldSetGroup{{Title: "x"}}}}}, "fieldsets[0].groups[0].code"},
			{"entity", entities.BatchInput{EntityID: "nope", Definitions: good}, "entityId"},
		}
		for _, c := range cases {
			_, err := svc.Batch(ctx, c.in)
			if err == nil {
				t.Fatalf("%s: Batch accepted it", c.name)
			}
			wantInvalid(t, err, c.field)
		}
		// Nothing partial: no definition, no settings, no event.
		is.Equal(len(resolved(t, svc, ctx, ent)), 0)
		items, deleted := manage(t, svc, ctx, ent)
		is.Equal(len(items)+len(deleted), 0)
		set, err := svc.Settings(ctx, ent)
		is.NoErr(err)
		is.Equal(len(set), 0)
		evs, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID})
		is.NoErr(err)
		is.Equal(len(evs), 0)

		// 20 field sets are fine; the duplicate check names the second one only.
		_, err = svc.Batch(ctx, entities.BatchInput{EntityID: ent, Definitions: good, Fieldsets: many[:20]})
		is.NoErr(err)
		set, err = svc.Settings(ctx, ent)
		is.NoErr(err)
		is.Equal(len(set[ent].Fieldsets), 20)
		is.Equal(len(resolved(t, svc, ctx, ent)), 2)
	}, entities.Migrations)
}

// --- 7. Events ---

func TestEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		ent := newEntityID()

		// Each step and the events it must add: type, organization.
		type want struct{ typ, org string }
		steps := []struct {
			name string
			do   func() error
			want []want
		}{
			{"upsert entity (org)", func() error {
				_, err := svc.UpsertEntity(orgCtx, entities.EntityInput{EntityID: ent, Label: "E"})
				return err
			}, []want{{entities.EventEntityCreated, sc.OrganizationID}}},
			{"update entity (org)", func() error {
				_, err := svc.UpsertEntity(orgCtx, entities.EntityInput{EntityID: ent, Label: "E2"})
				return err
			}, []want{{entities.EventEntityUpdated, sc.OrganizationID}}},
			{"upsert entity (tenant)", func() error {
				_, err := svc.UpsertEntity(tenantCtx, entities.EntityInput{EntityID: ent, Label: "T"})
				return err
			}, []want{{entities.EventEntityCreated, ""}}},
			{"delete entity (org)", func() error { return svc.DeleteEntity(orgCtx, ent) },
				[]want{{entities.EventEntityDeleted, sc.OrganizationID}}},
			{"define (tenant)", func() error { _, err := svc.Define(tenantCtx, text(ent, "a", "A")); return err },
				[]want{{entities.EventDefinitionCreated, ""}}},
			{"redefine (tenant)", func() error { _, err := svc.Define(tenantCtx, text(ent, "a", "A2")); return err },
				[]want{{entities.EventDefinitionUpdated, ""}}},
			{"define (org)", func() error { _, err := svc.Define(orgCtx, text(ent, "b", "B")); return err },
				[]want{{entities.EventDefinitionCreated, sc.OrganizationID}}},
			{"delete (org)", func() error { _, err := svc.DeleteDefinition(orgCtx, ent, "b"); return err },
				[]want{{entities.EventDefinitionDeleted, sc.OrganizationID}}},
			{"restore (org)", func() error { return svc.RestoreDefinition(orgCtx, ent, "b") },
				[]want{{entities.EventDefinitionRestored, sc.OrganizationID}}},
			{"delete (tenant)", func() error { _, err := svc.DeleteDefinition(tenantCtx, ent, "a"); return err },
				[]want{{entities.EventDefinitionDeleted, ""}}},
			{"batch (org)", func() error {
				_, err := svc.Batch(orgCtx, entities.BatchInput{EntityID: ent, Definitions: []entities.DefinitionInput{
					{Key: "b", Kind: "text"}, {Key: "c", Kind: "text"}}})
				return err
			}, []want{{entities.EventDefinitionUpdated, sc.OrganizationID}, {entities.EventDefinitionCreated, sc.OrganizationID}}},
			{"failed delete", func() error {
				_, err := svc.DeleteDefinition(orgCtx, ent, "nothing")
				if errors.Is(err, entities.ErrNotFound) {
					return nil
				}
				return errors.New("want ErrNotFound")
			}, nil},
		}
		last := ""
		for _, s := range steps {
			if err := s.do(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: sc.TenantID, AfterID: last})
			is.NoErr(err)
			if len(evs) != len(s.want) {
				t.Fatalf("%s: %d events, want %d: %+v", s.name, len(evs), len(s.want), evs)
			}
			for i, ev := range evs {
				if ev.Type != s.want[i].typ || ev.TenantID != sc.TenantID || ev.OrganizationID != s.want[i].org {
					t.Fatalf("%s: event %d = %s tenant %q org %q, want %s tenant %q org %q", s.name, i, ev.Type, ev.TenantID,
						ev.OrganizationID, s.want[i].typ, sc.TenantID, s.want[i].org)
				}
				// The payload is the entity or definition, with its scope.
				var data map[string]any
				is.NoErr(json.Unmarshal(ev.Data, &data))
				is.Equal(data["entityId"], ent)
				is.Equal(data["tenantId"], sc.TenantID)
				if s.want[i].org == "" {
					is.True(data["organizationId"] == nil)
				} else {
					is.Equal(data["organizationId"], s.want[i].org)
				}
				if strings.HasPrefix(ev.Type, "entities.definition.") {
					is.True(data["key"] != nil)
				}
				last = ev.ID
			}
		}

		// A global definition's event has no tenant.
		_, err := svc.DefineGlobal(t.Context(), text(ent, "g", "G"))
		is.NoErr(err)
		var n int
		is.NoErr(db.QueryRow(t.Context(), `SELECT COUNT(*) FROM store_events WHERE type = $1 AND tenant_id IS NULL AND organization_id IS NULL AND `+
			db.Dialect().JSONText("data", "entityId")+` = $2`, entities.EventDefinitionCreated, ent).Scan(&n))
		is.Equal(n, 1)
		for _, typ := range []string{entities.EventEntityCreated, entities.EventEntityUpdated, entities.EventEntityDeleted,
			entities.EventDefinitionCreated, entities.EventDefinitionUpdated, entities.EventDefinitionDeleted,
			entities.EventDefinitionRestored} {
			is.True(slices.ContainsFunc(entities.EventTypes, func(et store.EventType) bool { return et.ID == typ })) // catalogued
		}
	}, entities.Migrations)
}

// --- 8. Cache across processes ---

func TestCacheAcrossProcesses(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		// Two processes: two database handles, a service each.
		open := func() *store.DB {
			db, err := store.Open(t.Context(), url, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			is.NoErr(db.Migrate(t.Context(), entities.Migrations))
			return db
		}
		a, b := must(entities.New(open(), entities.Options{})), must(entities.New(open(), entities.Options{}))
		orgCtx, tenantCtx, _ := scopes(t)
		ent := newEntityID()
		define(t, a, tenantCtx, text(ent, "first", "First"))

		// Both read (and cache) the resolved view.
		is.Equal(len(resolved(t, a, orgCtx, ent)), 1)
		is.Equal(len(resolved(t, b, orgCtx, ent)), 1)
		is.Equal(len(resolved(t, b, tenantCtx, ent)), 1)

		// eventually waits for cond on the other service, at most 1 s.
		eventually := func(what string, cond func() bool) {
			t.Helper()
			start := time.Now()
			for !cond() {
				if time.Since(start) > time.Second {
					t.Fatalf("%s: not visible through the other service after %v", what, time.Since(start))
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("%s: visible after %v", what, time.Since(start).Round(time.Millisecond))
		}

		// A change through a: a sees it at once, b within a second.
		define(t, a, tenantCtx, text(ent, "second", "Second"))
		is.Equal(len(resolved(t, a, orgCtx, ent)), 2)
		is.Equal(len(resolved(t, a, tenantCtx, ent)), 2)
		eventually("define through a", func() bool { return len(resolved(t, b, orgCtx, ent)) == 2 })
		eventually("define through a (tenant view)", func() bool { return len(resolved(t, b, tenantCtx, ent)) == 2 })

		// A change through b: b at once, a within a second.
		_, err := b.DeleteDefinition(tenantCtx, ent, "first")
		is.NoErr(err)
		is.True(resolved(t, b, orgCtx, ent)["first"] == nil)
		eventually("delete through b", func() bool { return resolved(t, a, orgCtx, ent)["first"] == nil })

		is.NoErr(b.RestoreDefinition(tenantCtx, ent, "first"))
		is.True(resolved(t, b, orgCtx, ent)["first"] != nil)
		eventually("restore through b", func() bool { return resolved(t, a, orgCtx, ent)["first"] != nil })

		// An update (label) and a batch, and the entity count.
		define(t, a, orgCtx, text(ent, "first", "Org first"))
		is.Equal(label(resolved(t, a, orgCtx, ent)["first"]), "Org first")
		eventually("org update through a", func() bool { return label(resolved(t, b, orgCtx, ent)["first"]) == "Org first" })
		upsert(t, b, orgCtx, entities.EntityInput{EntityID: ent, Label: "E"})
		is.Equal(summary(listEntities(t, a, orgCtx), ent).Count, 2)
		_, err = b.Batch(orgCtx, entities.BatchInput{EntityID: ent, Definitions: []entities.DefinitionInput{{Key: "third", Kind: "text"}}})
		is.NoErr(err)
		is.Equal(summary(listEntities(t, b, orgCtx), ent).Count, 3)
		eventually("batch through b", func() bool { return summary(listEntities(t, a, orgCtx), ent).Count == 3 })

		// A global definition reaches every tenant's cached view.
		_, err = a.DefineGlobal(t.Context(), text(ent, "global_key", "Global"))
		is.NoErr(err)
		is.True(resolved(t, a, tenantCtx, ent)["global_key"] != nil)
		eventually("global through a", func() bool { return resolved(t, b, tenantCtx, ent)["global_key"] != nil })
	})
}

// A record create through one process honours every definition change
// committed through another before it began, at once (no waiting for the
// change's notice): a field just defined is accepted, one just deleted is
// refused, alone and among concurrent creates that share a transaction.
// PostgreSQL only: there processes share a database.
func TestCreateHonoursOtherProcessChanges(t *testing.T) {
	t.Parallel()
	url := storetest.IsolatedPostgresURL(t)
	open := func() *store.DB {
		db, err := store.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(t.Context(), entities.Migrations); err != nil {
			t.Fatal(err)
		}
		return db
	}
	a, b := must(entities.New(open(), entities.Options{})), must(entities.New(open(), entities.Options{}))
	ctx, _ := storetest.NewScope(t)
	ent := newEntityID()
	define(t, a, ctx, text(ent, "base", "Base"))
	create := func(values map[string]any) error {
		_, err := b.CreateRecord(ctx, entities.RecordInput{EntityID: ent, Values: values})
		return err
	}
	if err := create(map[string]any{"base": "x"}); err != nil { // b caches the definitions
		t.Fatal(err)
	}
	for i := range 6 {
		key := "k" + string(rune('a'+i))
		define(t, a, ctx, text(ent, key, key))
		if err := create(map[string]any{key: "v"}); err != nil {
			t.Fatalf("create with %s just defined through the other process: %v", key, err)
		}
		if _, err := a.DeleteDefinition(ctx, ent, key); err != nil {
			t.Fatal(err)
		}
		// Concurrent creates, some with the deleted field: those are
		// refused, the others written.
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for j := range errs {
			wg.Go(func() {
				values := map[string]any{"base": "y"}
				if j%2 == 0 {
					values[key] = "v"
				}
				errs[j] = create(values)
			})
		}
		wg.Wait()
		for j, err := range errs {
			if j%2 == 0 {
				wantInvalid(t, err, "cf_"+key)
			} else if err != nil {
				t.Fatalf("create %d without %s: %v", j, key, err)
			}
		}
	}
}

// The cache answers repeated reads and keeps answering the same after a
// change made in the same process (no stale read right after a write).
func TestCacheOwnChangesAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, _ := scopes(t)
		ent := newEntityID()
		for i := range 6 {
			key := "k" + string(rune('a'+i))
			define(t, svc, tenantCtx, text(ent, key, key))
			got := resolved(t, svc, orgCtx, ent)
			is.Equal(len(got), i+1)
			in := text(ent, key, "org "+key)
			in.IsActive = ptr(false)
			define(t, svc, orgCtx, in)
			is.Equal(label(resolved(t, svc, orgCtx, ent)[key]), key) // inactive org one: the tenant's shows
			_, err := svc.DeleteDefinition(orgCtx, ent, key)
			is.NoErr(err)
			is.True(resolved(t, svc, orgCtx, ent)[key] == nil)
			is.NoErr(svc.RestoreDefinition(orgCtx, ent, key))
			is.Equal(label(resolved(t, svc, orgCtx, ent)[key]), "org "+key) // a restored definition is active again
		}
	}, entities.Migrations)
}

// --- 9. Bad input ---

func TestBadInputIsValidationError(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		ent := newEntityID()
		const nul, bad = "\x00", "\xff\xfe"

		entityCases := []struct {
			in    entities.EntityInput
			field string
		}{
			{entities.EntityInput{EntityID: ent, Label: "a" + nul + "b"}, "label"},
			{entities.EntityInput{EntityID: ent, Label: "a" + bad}, "label"},
			{entities.EntityInput{EntityID: ent, Label: "L", Description: nul}, "description"},
			{entities.EntityInput{EntityID: ent, Label: "L", Description: bad}, "description"},
			{entities.EntityInput{EntityID: ent + nul, Label: "L"}, "entityId"},
			{entities.EntityInput{EntityID: ent + bad, Label: "L"}, "entityId"},
			{entities.EntityInput{EntityID: ent, Label: "L", LabelField: "a" + nul}, "labelField"},
			{entities.EntityInput{EntityID: ent, Label: "L", LabelField: bad}, "labelField"},
			{entities.EntityInput{EntityID: ent, Label: "L", DefaultEditor: "plain" + nul}, "defaultEditor"},
		}
		for _, c := range entityCases {
			_, err := svc.UpsertEntity(ctx, c.in)
			wantInvalid(t, err, c.field)
		}

		defCases := []struct {
			in    entities.DefinitionInput
			field string
		}{
			{entities.DefinitionInput{EntityID: ent, Key: "a" + nul, Kind: "text"}, "key"},
			{entities.DefinitionInput{EntityID: ent, Key: bad, Kind: "text"}, "key"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text" + nul}, "kind"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: bad}, "kind"},
			{entities.DefinitionInput{EntityID: nul, Key: "k", Kind: "text"}, "entityId"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: map[string]any{"label": "a" + nul}}, "configJson.label"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: map[string]any{"x" + nul: 1}}, "configJson"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: map[string]any{"deep": map[string]any{"y": []any{"z" + nul}}}}, "configJson.deep.y[0]"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "select", ConfigJSON: map[string]any{"options": []any{nul}}}, "configJson.options[0]"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: map[string]any{"validation": []any{
				map[string]any{"rule": "regex", "param": "a" + nul}}}}, "configJson.validation[0].param"},
			{entities.DefinitionInput{EntityID: ent, Key: "k", Kind: "text", ConfigJSON: map[string]any{"bad": make(chan int)}}, "configJson"},
		}
		for _, c := range defCases {
			_, err := svc.Define(ctx, c.in)
			wantInvalid(t, err, c.field)
			_, err = svc.DefineGlobal(t.Context(), c.in)
			wantInvalid(t, err, c.field)
			if c.field == "entityId" {
				continue // a batch's definitions take the batch's entity
			}
			c.in.EntityID = ""
			_, err = svc.Batch(ctx, entities.BatchInput{EntityID: ent, Definitions: []entities.DefinitionInput{{Key: "ok", Kind: "text"}, c.in}})
			wantInvalid(t, err, "definitions[1]."+c.field)
		}

		setCases := []struct {
			set   entities.FieldSet
			field string
		}{
			{entities.FieldSet{Code: "m" + nul, Label: "M"}, "fieldsets[0].code"},
			{entities.FieldSet{Code: "m", Label: "M" + nul}, "fieldsets[0].label"},
			{entities.FieldSet{Code: "m", Label: bad}, "fieldsets[0].label"},
			{entities.FieldSet{Code: "m", Label: "M", Icon: nul}, "fieldsets[0].icon"},
			{entities.FieldSet{Code: "m", Label: "M", Description: bad}, "fieldsets[0].description"},
			{entities.FieldSet{Code: "m", Label: "M", Groups: []entities.FieldSetGroup{{Code: "g" + nul}}}, "fieldsets[0].groups[0].code"},
			{entities.FieldSet{Code: "m", Label: "M", Groups: []entities.FieldSetGroup{{Code: bad}}}, "fieldsets[0].groups[0].code"},
			{entities.FieldSet{Code: "m", Label: "M", Groups: []entities.FieldSetGroup{{Code: "g", Title: nul}}}, "fieldsets[0].groups[0].title"},
			{entities.FieldSet{Code: "m", Label: "M", Groups: []entities.FieldSetGroup{{Code: "g", Hint: bad}}}, "fieldsets[0].groups[0].hint"},
		}
		for _, c := range setCases {
			_, err := svc.Batch(ctx, entities.BatchInput{EntityID: ent, Fieldsets: []entities.FieldSet{c.set}})
			wantInvalid(t, err, c.field)
		}

		// Lookups with such ids: validation errors or not found.
		for _, id := range []string{nul, bad, ent + nul, ent + bad} {
			_, err := svc.Definitions(ctx, id)
			wantInvalid(t, err, "entityId")
			_, _, err = svc.Manage(ctx, id)
			wantInvalid(t, err, "entityId")
			_, err = svc.Settings(ctx, id)
			wantInvalid(t, err, "entityId")
			wantNotFound(t, svc.DeleteEntity(ctx, id))
			_, err = svc.DeleteDefinition(ctx, id, "k")
			wantNotFound(t, err)
			wantNotFound(t, svc.RestoreDefinition(ctx, id, "k"))
		}
		define(t, svc, ctx, text(ent, "k", "K"))
		for _, key := range []string{"k" + nul, "k" + bad, nul, ""} {
			_, err := svc.DeleteDefinition(ctx, ent, key)
			wantNotFound(t, err)
			wantNotFound(t, svc.RestoreDefinition(ctx, ent, key))
		}

		// Nothing was written but "k".
		is.Equal(keysOf(mustDefs(t, svc, ctx, ent)), []string{"k"})
		is.Equal(len(listEntities(t, svc, ctx)), 0)
		evs, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID})
		is.NoErr(err)
		is.Equal(len(evs), 1)
	}, entities.Migrations)
}

// Invalid UTF-8 inside configJson strings must not reach the database as
// such: it is refused (like invalid text elsewhere).
func TestBadUTF8InConfig(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		ent := newEntityID()
		for i, cfg := range []map[string]any{
			{"label": "a\xffb"},
			{"description": "\xfe"},
			{"x\xff": "y"},
			{"options": []any{"\xff"}},
		} {
			key := "k" + string(rune('a'+i))
			_, err := svc.Define(ctx, entities.DefinitionInput{EntityID: ent, Key: key, Kind: "select", ConfigJSON: cfg})
			// Never a database error: refused, or stored as valid text.
			var ve *store.ValidationError
			if err != nil && !errors.As(err, &ve) {
				t.Fatalf("config %q: error %v is not a validation error", cfg, err)
			}
			if err == nil {
				d := resolved(t, svc, ctx, ent)[key]
				is.True(d != nil)
				b, _ := json.Marshal(d.ConfigJSON)
				is.True(utf8.Valid(b))
			}
		}
		d, err := svc.Define(ctx, entities.DefinitionInput{EntityID: ent, Key: "z", Kind: "text", ConfigJSON: map[string]any{"label": "a\xffb"}})
		if err == nil {
			t.Logf("Define accepted label %q and stored %q", "a\xffb", d.ConfigJSON["label"])
		}
		wantInvalid(t, err, "configJson.label")
	}, entities.Migrations)
}

func mustDefs(t *testing.T, svc *entities.Service, ctx context.Context, entityID string) []*entities.Definition {
	t.Helper()
	defs, err := svc.Definitions(ctx, entityID)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

func TestNoScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctx := t.Context()
		ent := newEntityID()
		for _, err := range []error{
			func() error {
				_, err := svc.UpsertEntity(ctx, entities.EntityInput{EntityID: ent, Label: "L"})
				return err
			}(),
			svc.DeleteEntity(ctx, ent),
			func() error { _, err := svc.ListEntities(ctx); return err }(),
			func() error { _, err := svc.SidebarEntities(ctx); return err }(),
			func() error { _, err := svc.Define(ctx, text(ent, "k", "K")); return err }(),
			func() error { _, err := svc.Batch(ctx, entities.BatchInput{EntityID: ent}); return err }(),
			func() error { _, err := svc.DeleteDefinition(ctx, ent, "k"); return err }(),
			svc.RestoreDefinition(ctx, ent, "k"),
			func() error { _, err := svc.Definitions(ctx, ent); return err }(),
			func() error { _, err := svc.Settings(ctx, ent); return err }(),
			func() error { _, _, err := svc.Manage(ctx, ent); return err }(),
		} {
			if !errors.Is(err, store.ErrNoScope) {
				t.Fatalf("error = %v, want store.ErrNoScope", err)
			}
		}
	}, entities.Migrations)
}

// Two callers saving the same new field, entity or field sets at the
// same moment (a double submit, two administrators): both are "create or
// update", so both should succeed and leave one row.
func TestConcurrentFirstSaves(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctx, _ := storetest.NewScope(t)
		var mu sync.Mutex
		var errs []error
		ents := make([]string, 5)
		for r := range ents {
			ent := newEntityID()
			ents[r] = ent
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					_, err := svc.Define(ctx, text(ent, "k", "K"))
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				})
				wg.Go(func() {
					_, err := svc.UpsertEntity(ctx, entities.EntityInput{EntityID: ent, Label: "L"})
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				})
				wg.Go(func() {
					_, err := svc.Batch(ctx, entities.BatchInput{EntityID: ent, Fieldsets: []entities.FieldSet{{Code: "a", Label: "A"}}})
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		// Whatever happened, the state is whole: one row of each.
		list := listEntities(t, svc, ctx)
		is.Equal(len(list), len(ents))
		for _, ent := range ents {
			is.Equal(countRows(t, db, ent, "k"), 1)
			is.Equal(len(resolved(t, svc, ctx, ent)), 1)
			set, err := svc.Settings(ctx, ent)
			is.NoErr(err)
			is.Equal(len(set[ent].Fieldsets), 1)
		}
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				if failed == 1 {
					t.Logf("first failure: %v", err)
				}
				is.True(errors.Is(err, store.ErrConflict)) // a lost race, nothing worse
			}
		}
		t.Logf("%d of %d concurrent saves failed", failed, len(errs))
		if failed == 0 {
			return
		}
		is.Equal(failed, 0)
	}, entities.Migrations)
}

// Definitions answers from a cache; what it returns should be the
// caller's to change without changing what later calls (of any caller)
// get.
func TestDefinitionsResultNotShared(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, _ := scopes(t)
		ent := newEntityID()
		define(t, svc, tenantCtx, text(ent, "k", "K"))
		defs := mustDefs(t, svc, orgCtx, ent)
		defs[0].ConfigJSON["label"] = "changed by a caller"
		defs[0].Kind = "integer"
		again := mustDefs(t, svc, orgCtx, ent)
		t.Logf("after a caller changed its result: label %q, kind %q", label(again[0]), again[0].Kind)
		is.Equal(label(again[0]), "K")
		is.Equal(again[0].Kind, "text")
	}, entities.Migrations)
}

// Code entities (the spec's generated entities) are listed for every
// tenant with source "code" and their field counts; a tenant's or an
// organization's custom entity of the same id overrides how one is shown
// (and keeps source "code"), for its own scope only; deleting the
// override shows the code entity again.
func TestCodeEntities(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		orgCtx, tenantCtx, sc := scopes(t)
		otherTenant, _ := storetest.NewScope(t)
		code, custom := newEntityID(), newEntityID()
		is.NoErr(svc.RegisterEntity(entities.CodeEntity{EntityID: strings.Replace(code, ".", ":", 1), Label: "Leads",
			LabelField: "name", ShowInSidebar: true}))
		is.True(svc.RegisterEntity(entities.CodeEntity{EntityID: "Bad Id", Label: "x"}) != nil)
		is.True(svc.RegisterEntity(entities.CodeEntity{EntityID: newEntityID()}) != nil) // no label
		_, err := svc.DefineGlobal(tenantCtx, entities.DefinitionInput{EntityID: code, Key: "score", Kind: "integer"})
		is.NoErr(err)
		define(t, svc, orgCtx, text(code, "org_note", "Note"))
		upsert(t, svc, tenantCtx, entities.EntityInput{EntityID: custom, Label: "Tickets"})

		byID := func(list []entities.EntitySummary) map[string]entities.EntitySummary {
			m := map[string]entities.EntitySummary{}
			for _, e := range list {
				m[e.EntityID] = e
			}
			return m
		}
		// Every tenant sees the code entity.
		other := byID(listEntities(t, svc, otherTenant))
		is.Equal(other[code].Source, "code")
		is.Equal(other[code].Label, "Leads")
		is.Equal(other[code].LabelField, "name")
		is.Equal(other[code].Count, 1) // the global field
		is.True(other[code].UpdatedAt == nil)
		is.Equal(len(other), 1) // not the other tenant's custom entity
		org := byID(listEntities(t, svc, orgCtx))
		is.Equal(org[code].Count, 2) // global + the organization's
		is.Equal(org[custom].Source, "custom")
		is.Equal(org[custom].Label, "Tickets")
		is.Equal(len(sidebar(t, svc, orgCtx)), 1)

		// The organization overrides how the code entity shows, for itself.
		upsert(t, svc, orgCtx, entities.EntityInput{EntityID: code, Label: "Prospects", ShowInSidebar: ptr(false)})
		org = byID(listEntities(t, svc, orgCtx))
		is.Equal(org[code].Source, "code")
		is.Equal(org[code].Label, "Prospects")
		is.Equal(org[code].LabelField, "")
		is.True(org[code].UpdatedAt != nil)
		is.Equal(len(org), 2) // no second entry for the override
		is.Equal(len(sidebar(t, svc, orgCtx)), 0)
		is.Equal(byID(listEntities(t, svc, tenantCtx))[code].Label, "Leads")
		is.Equal(byID(listEntities(t, svc, otherOrg(t, sc)))[code].Label, "Leads")

		// Deleting the override shows the code entity again.
		is.NoErr(svc.DeleteEntity(orgCtx, code))
		org = byID(listEntities(t, svc, orgCtx))
		is.Equal(org[code].Label, "Leads")
		is.True(org[code].UpdatedAt == nil)
		is.Equal(len(sidebar(t, svc, orgCtx)), 1)
	}, entities.Migrations)
}
