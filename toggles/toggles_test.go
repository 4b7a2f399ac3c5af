package toggles_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// Toggles are global, so on PostgreSQL every test runs in a schema of its
// own (EachIsolated / EachURL): on the package's shared schema parallel
// tests would see each other's toggles in List and ListOverrides, and a
// second -count run would find its identifiers taken (deleted ones stay
// reserved).

// newService starts a Service on db, stopped when the test ends.
func newService(t *testing.T, db *store.DB, opts toggles.Options) *toggles.Service {
	t.Helper()
	svc := must(toggles.New(db, opts))
	if err := svc.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return svc
}

// create makes a toggle or fails the test.
func create(t *testing.T, svc *toggles.Service, in toggles.CreateInput) *toggles.Toggle {
	t.Helper()
	if in.Name == "" {
		in.Name = in.Identifier
	}
	tg, err := svc.Create(t.Context(), in)
	if err != nil {
		t.Fatalf("Create(%s): %v", in.Identifier, err)
	}
	return tg
}

// wantInvalid checks that err is a *store.ValidationError naming field and
// an ErrInvalid.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want a *store.ValidationError on %q", err, err, field)
	}
	if _, ok := ve.Fields[field]; !ok {
		t.Fatalf("validation error %v does not name field %q", ve, field)
	}
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("errors.Is(%v, store.ErrInvalid) = false", err)
	}
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want errors.Is(err, %v)", err, target)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }
func ptr[T any](v T) *T            { return &v }

func TestCreateGetUpdateDelete(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		svc := newService(t, db, toggles.Options{})
		before := time.Now().Add(-time.Second)

		created, err := svc.Create(ctx, toggles.CreateInput{
			Identifier: "checkout.new-flow", Name: "New checkout", Description: "The reworked checkout",
			Category: "checkout", Type: toggles.JSON,
			DefaultValue: raw(" {\n  \"steps\" : [ 1, 2,\t3 ],  \"label\": \"a b\", \"nested\": {\"x\": null} }\n"),
		})
		is.NoErr(err)
		is.True(store.IsID(created.ID))
		is.Equal(created.Identifier, "checkout.new-flow")
		is.Equal(created.Name, "New checkout")
		is.Equal(created.Description, "The reworked checkout")
		is.Equal(created.Category, "checkout")
		is.Equal(created.Type, toggles.JSON)
		is.Equal(string(created.DefaultValue), `{"steps":[1,2,3],"label":"a b","nested":{"x":null}}`) // compacted, order kept
		is.True(created.CreatedAt.After(before) && created.CreatedAt.Before(time.Now().Add(time.Second)))
		is.True(created.UpdatedAt.Equal(created.CreatedAt))

		got, err := svc.Get(ctx, created.ID)
		is.NoErr(err)
		is.Equal(got.ID, created.ID)
		is.Equal(got.Identifier, created.Identifier)
		is.Equal(got.Name, created.Name)
		is.Equal(got.Description, created.Description)
		is.Equal(got.Category, created.Category)
		is.Equal(got.Type, created.Type)
		is.Equal(string(got.DefaultValue), string(created.DefaultValue))
		is.True(got.CreatedAt.Equal(created.CreatedAt)) // stored timestamps round-trip
		is.True(got.UpdatedAt.Equal(created.UpdatedAt))

		// Absent fields are empty; an absent default is null.
		bare, err := svc.Create(ctx, toggles.CreateInput{Identifier: "bare", Name: "Bare", Type: toggles.Boolean})
		is.NoErr(err)
		is.Equal(string(bare.DefaultValue), "null")
		got, err = svc.Get(ctx, bare.ID)
		is.NoErr(err)
		is.Equal(got.Description, "")
		is.Equal(got.Category, "")
		is.Equal(string(got.DefaultValue), "null")

		// Update changes only the fields it carries.
		updated, err := svc.Update(ctx, toggles.UpdateInput{ID: created.ID, Name: ptr("Checkout v2"),
			DefaultValue: raw(`[ true , "x" ]`), Type: ptr(toggles.JSON)})
		is.NoErr(err)
		is.Equal(updated.Name, "Checkout v2")
		is.Equal(string(updated.DefaultValue), `[true,"x"]`)
		is.Equal(updated.Identifier, "checkout.new-flow")
		is.Equal(updated.Description, "The reworked checkout")
		is.Equal(updated.Category, "checkout")
		is.True(updated.CreatedAt.Equal(created.CreatedAt))
		is.True(updated.UpdatedAt.After(created.UpdatedAt)) // UpdatedAt moves
		got, err = svc.Get(ctx, created.ID)
		is.NoErr(err)
		is.Equal(got.Name, "Checkout v2")
		is.Equal(string(got.DefaultValue), `[true,"x"]`)
		is.Equal(got.Description, "The reworked checkout")
		is.True(got.UpdatedAt.Equal(updated.UpdatedAt))
		is.True(got.CreatedAt.Equal(created.CreatedAt))

		// Every field at once; empty strings clear description and category;
		// an explicit null clears the default.
		updated, err = svc.Update(ctx, toggles.UpdateInput{ID: created.ID, Identifier: ptr("checkout.flow"),
			Name: ptr("Flow"), Description: ptr(""), Category: ptr(""), DefaultValue: raw("null")})
		is.NoErr(err)
		got, err = svc.Get(ctx, created.ID)
		is.NoErr(err)
		is.Equal(got.Identifier, "checkout.flow")
		is.Equal(got.Name, "Flow")
		is.Equal(got.Description, "")
		is.Equal(got.Category, "")
		is.Equal(string(got.DefaultValue), "null")
		is.Equal(string(updated.DefaultValue), "null")

		// An update without a default keeps it.
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: bare.ID, DefaultValue: raw("true")})
		is.NoErr(err)
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: bare.ID, Description: ptr("described")})
		is.NoErr(err)
		got, err = svc.Get(ctx, bare.ID)
		is.NoErr(err)
		is.Equal(string(got.DefaultValue), "true")
		is.Equal(got.Description, "described")

		// Delete is soft: the toggle is gone for Get, Update, Delete and List.
		is.NoErr(svc.Delete(ctx, created.ID))
		_, err = svc.Get(ctx, created.ID)
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, svc.Delete(ctx, created.ID), store.ErrNotFound)
		list, total, err := svc.List(ctx, toggles.ListFilter{Limit: 10})
		is.NoErr(err)
		is.Equal(total, 1)
		is.Equal(list[0].ID, bare.ID)

		_, err = svc.Get(ctx, store.NewID())
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.Get(ctx, "not-an-id")
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, svc.Delete(ctx, store.NewID()), store.ErrNotFound)
	}, toggles.Migrations)
}

func TestValidation(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		svc := newService(t, db, toggles.Options{})

		ok := func(in toggles.CreateInput) toggles.CreateInput {
			if in.Identifier == "" {
				in.Identifier = "valid.id"
			}
			if in.Name == "" {
				in.Name = "Valid"
			}
			if in.Type == "" {
				in.Type = toggles.Boolean
			}
			return in
		}
		invalid := []struct {
			name  string
			in    toggles.CreateInput
			field string
		}{
			{"identifier missing", toggles.CreateInput{Name: "x", Type: toggles.Boolean}, "identifier"},
			{"identifier mixed case", ok(toggles.CreateInput{Identifier: "BadKey-123"}), "identifier"},
			{"identifier starts with a digit", ok(toggles.CreateInput{Identifier: "9invalid"}), "identifier"},
			{"identifier with a space", ok(toggles.CreateInput{Identifier: "a b"}), "identifier"},
			{"identifier starts with a dot", ok(toggles.CreateInput{Identifier: ".a"}), "identifier"},
			{"identifier non-ASCII", ok(toggles.CreateInput{Identifier: "ärger"}), "identifier"},
			{"identifier with a newline", ok(toggles.CreateInput{Identifier: "a\n"}), "identifier"},
			{"identifier 101 characters", ok(toggles.CreateInput{Identifier: strings.Repeat("a", 101)}), "identifier"},
			{"name missing", toggles.CreateInput{Identifier: "x", Type: toggles.Boolean}, "name"},
			{"name 201 characters", ok(toggles.CreateInput{Name: strings.Repeat("n", 201)}), "name"},
			{"description 2001 characters", ok(toggles.CreateInput{Description: strings.Repeat("d", 2001)}), "description"},
			{"category 101 characters", ok(toggles.CreateInput{Category: strings.Repeat("c", 101)}), "category"},
			{"type missing", toggles.CreateInput{Identifier: "x", Name: "x"}, "type"},
			{"type invalid", ok(toggles.CreateInput{Type: "bool"}), "type"},
			{"type in capitals", ok(toggles.CreateInput{Type: "BOOLEAN"}), "type"},
			{"boolean default a string", ok(toggles.CreateInput{Type: toggles.Boolean, DefaultValue: raw(`"yes"`)}), "defaultValue"},
			{"boolean default a number", ok(toggles.CreateInput{Type: toggles.Boolean, DefaultValue: raw(`1`)}), "defaultValue"},
			{"string default a number", ok(toggles.CreateInput{Type: toggles.String, DefaultValue: raw(`5`)}), "defaultValue"},
			{"string default an object", ok(toggles.CreateInput{Type: toggles.String, DefaultValue: raw(`{"a":"b"}`)}), "defaultValue"},
			{"number default a string", ok(toggles.CreateInput{Type: toggles.Number, DefaultValue: raw(`"5"`)}), "defaultValue"},
			{"number default a boolean", ok(toggles.CreateInput{Type: toggles.Number, DefaultValue: raw(`true`)}), "defaultValue"},
			{"number default out of range", ok(toggles.CreateInput{Type: toggles.Number, DefaultValue: raw(`1e400`)}), "defaultValue"},
			{"invalid JSON", ok(toggles.CreateInput{Type: toggles.JSON, DefaultValue: raw(`{"a":`)}), "defaultValue"},
			{"bare word", ok(toggles.CreateInput{Type: toggles.String, DefaultValue: raw(`yes`)}), "defaultValue"},
			{"two values", ok(toggles.CreateInput{Type: toggles.Boolean, DefaultValue: raw(`true false`)}), "defaultValue"},
		}
		for _, tt := range invalid {
			t.Run(tt.name, func(t *testing.T) {
				_, err := svc.Create(ctx, tt.in)
				wantInvalid(t, err, tt.field)
			})
		}
		// Several problems are reported together.
		_, err := svc.Create(ctx, toggles.CreateInput{Identifier: "Bad", Type: "nope"})
		var ve *store.ValidationError
		is.True(errors.As(err, &ve))
		is.Equal(len(ve.Fields), 3) // identifier, name, type
		list, total, err := svc.List(ctx, toggles.ListFilter{Limit: 10})
		is.NoErr(err)
		is.Equal(total, 0) // nothing invalid was stored
		is.Equal(len(list), 0)

		valid := []toggles.CreateInput{
			{Identifier: "qa.lock-round6.legacy-adapters-123", Name: "Lock", Type: toggles.Boolean},
			{Identifier: "a", Name: "One letter", Type: toggles.Boolean},
			{Identifier: "snake_case.v2", Name: "Snake", Type: toggles.Boolean},
			{Identifier: strings.Repeat("a", 100), Name: strings.Repeat("ü", 200), Type: toggles.String, // limits count characters
				Description: strings.Repeat("é", 2000), Category: strings.Repeat("ß", 100)},
			{Identifier: "bool.true", Name: "x", Type: toggles.Boolean, DefaultValue: raw("true")},
			{Identifier: "bool.false", Name: "x", Type: toggles.Boolean, DefaultValue: raw(" false ")},
			{Identifier: "str.empty", Name: "x", Type: toggles.String, DefaultValue: raw(`""`)},
			{Identifier: "num.float", Name: "x", Type: toggles.Number, DefaultValue: raw("-1.5e3")},
			{Identifier: "num.int", Name: "x", Type: toggles.Number, DefaultValue: raw("0")},
			{Identifier: "json.object", Name: "x", Type: toggles.JSON, DefaultValue: raw(`{"a":[1,{"b":null}]}`)},
			{Identifier: "json.array", Name: "x", Type: toggles.JSON, DefaultValue: raw(`[]`)},
			{Identifier: "json.string", Name: "x", Type: toggles.JSON, DefaultValue: raw(`"s"`)},
			{Identifier: "json.number", Name: "x", Type: toggles.JSON, DefaultValue: raw(`12`)},
			{Identifier: "json.bool", Name: "x", Type: toggles.JSON, DefaultValue: raw(`false`)},
			{Identifier: "json.big", Name: "x", Type: toggles.JSON, DefaultValue: raw(`1e400`)},
		}
		for _, typ := range []toggles.Type{toggles.Boolean, toggles.String, toggles.Number, toggles.JSON} {
			valid = append(valid,
				toggles.CreateInput{Identifier: "null." + string(typ), Name: "x", Type: typ, DefaultValue: raw("null")},
				toggles.CreateInput{Identifier: "absent." + string(typ), Name: "x", Type: typ},
				toggles.CreateInput{Identifier: "blank." + string(typ), Name: "x", Type: typ, DefaultValue: raw("  ")})
		}
		for _, in := range valid {
			tg, err := svc.Create(ctx, in)
			if err != nil {
				t.Errorf("Create(%q, %s, %s): %v", in.Identifier, in.Type, in.DefaultValue, err)
				continue
			}
			if strings.HasPrefix(in.Identifier, "null.") || strings.HasPrefix(in.Identifier, "absent.") || strings.HasPrefix(in.Identifier, "blank.") {
				is.Equal(string(tg.DefaultValue), "null")
			}
		}

		// Identifiers are unique, deleted toggles included.
		first, err := svc.Create(ctx, toggles.CreateInput{Identifier: "dup", Name: "First", Type: toggles.Boolean})
		is.NoErr(err)
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "dup", Name: "Second", Type: toggles.String})
		wantInvalid(t, err, "identifier")
		is.NoErr(svc.Delete(ctx, first.ID))
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "dup", Name: "Third", Type: toggles.Boolean})
		wantInvalid(t, err, "identifier")
		other, err := svc.Create(ctx, toggles.CreateInput{Identifier: "other", Name: "Other", Type: toggles.Boolean})
		is.NoErr(err)
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: other.ID, Identifier: ptr("dup")}) // a deleted one's
		wantInvalid(t, err, "identifier")
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: other.ID, Identifier: ptr("a")}) // a live one's
		wantInvalid(t, err, "identifier")
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: other.ID, Identifier: ptr("other"), Name: ptr("Own identifier")})
		is.NoErr(err) // repeating its own identifier is fine

		// Update validates like Create and may not change the type.
		for _, tt := range []struct {
			in    toggles.UpdateInput
			field string
		}{
			{toggles.UpdateInput{Type: ptr(toggles.String)}, "type"},
			{toggles.UpdateInput{Type: ptr(toggles.Type("nope"))}, "type"},
			{toggles.UpdateInput{Identifier: ptr("")}, "identifier"},
			{toggles.UpdateInput{Identifier: ptr("BadKey-123")}, "identifier"},
			{toggles.UpdateInput{Name: ptr("")}, "name"},
			{toggles.UpdateInput{Name: ptr(strings.Repeat("n", 201))}, "name"},
			{toggles.UpdateInput{DefaultValue: raw(`"yes"`)}, "defaultValue"},
			{toggles.UpdateInput{DefaultValue: raw(`{`)}, "defaultValue"},
		} {
			tt.in.ID = other.ID
			_, err := svc.Update(ctx, tt.in)
			wantInvalid(t, err, tt.field)
		}
		got, err := svc.Get(ctx, other.ID)
		is.NoErr(err)
		is.Equal(got.Type, toggles.Boolean) // the failed updates changed nothing
		is.Equal(got.Name, "Own identifier")
		is.Equal(string(got.DefaultValue), "null")

		_, err = svc.Update(ctx, toggles.UpdateInput{ID: store.NewID(), Name: ptr("x")})
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: first.ID, Name: ptr("x")}) // deleted
		wantIs(t, err, store.ErrNotFound)
	}, toggles.Migrations)
}

func TestListSearchAndFilters(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		svc := newService(t, db, toggles.Options{})
		create(t, svc, toggles.CreateInput{Identifier: "alpha.one", Name: "Ärger Übersicht", Category: "ui", Type: toggles.Boolean})
		create(t, svc, toggles.CreateInput{Identifier: "beta.two", Name: "Beta", Description: "contains the word ZEBRA", Category: "billing", Type: toggles.String})
		create(t, svc, toggles.CreateInput{Identifier: "gamma.three", Name: "Gamma", Category: "Billing-Extra", Type: toggles.Number})
		create(t, svc, toggles.CreateInput{Identifier: "delta.four", Name: "Straße", Description: "Größe", Type: toggles.JSON})
		gone := create(t, svc, toggles.CreateInput{Identifier: "deleted.five", Name: "Gamma deleted", Category: "billing", Type: toggles.Number})
		is.NoErr(svc.Delete(ctx, gone.ID))

		identifiers := func(f toggles.ListFilter) []string {
			t.Helper()
			f.SortField = "identifier"
			if f.Limit == 0 {
				f.Limit = 100
			}
			items, total, err := svc.List(ctx, f)
			if err != nil {
				t.Fatalf("List(%+v): %v", f, err)
			}
			out := make([]string, len(items))
			for i, it := range items {
				out[i] = it.Identifier
			}
			if total != len(out) {
				t.Fatalf("List(%+v): total %d, %d items", f, total, len(out))
			}
			return out
		}
		for _, tt := range []struct {
			f    toggles.ListFilter
			want []string
		}{
			{toggles.ListFilter{}, []string{"alpha.one", "beta.two", "delta.four", "gamma.three"}},
			{toggles.ListFilter{Search: "ärger"}, []string{"alpha.one"}},
			{toggles.ListFilter{Search: "ÜBERSICHT"}, []string{"alpha.one"}},
			{toggles.ListFilter{Search: "äRGER übers"}, []string{"alpha.one"}},
			{toggles.ListFilter{Search: "STRASSE"}, nil}, // folding is lower-casing, not full case folding
			{toggles.ListFilter{Search: "STRAßE"}, []string{"delta.four"}},
			{toggles.ListFilter{Search: "GRÖSSE"}, nil},
			// Search covers description, category and identifier too; the
			// deleted "Gamma deleted" is left out.
			{toggles.ListFilter{Search: "größe"}, []string{"delta.four"}},
			{toggles.ListFilter{Search: "zebra"}, []string{"beta.two"}},
			{toggles.ListFilter{Search: "BILLING"}, []string{"beta.two", "gamma.three"}},
			{toggles.ListFilter{Search: "GAMMA"}, []string{"gamma.three"}},
			{toggles.ListFilter{Search: "TA.T"}, []string{"beta.two"}},
			{toggles.ListFilter{Search: "deleted"}, nil},
			{toggles.ListFilter{Search: "%"}, nil}, // LIKE wildcards are literal
			{toggles.ListFilter{Search: "_"}, nil},
			{toggles.ListFilter{Search: `\`}, nil},
			{toggles.ListFilter{Identifier: "TA."}, []string{"beta.two", "delta.four"}},
			{toggles.ListFilter{Identifier: "gamma"}, []string{"gamma.three"}},
			{toggles.ListFilter{Name: "ärger"}, []string{"alpha.one"}},
			{toggles.ListFilter{Name: "zebra"}, nil}, // name only, not the description
			{toggles.ListFilter{Category: "BILL"}, []string{"beta.two", "gamma.three"}},
			{toggles.ListFilter{Category: "extra"}, []string{"gamma.three"}},
			{toggles.ListFilter{Type: toggles.Number}, []string{"gamma.three"}},
			{toggles.ListFilter{Type: toggles.JSON}, []string{"delta.four"}},
			{toggles.ListFilter{Type: "bool"}, nil}, // exact, not contains
			{toggles.ListFilter{Category: "billing", Type: toggles.String}, []string{"beta.two"}},
			{toggles.ListFilter{Search: "a", Identifier: "gamma", Name: "gam", Category: "bill", Type: toggles.Number}, []string{"gamma.three"}},
			{toggles.ListFilter{Search: "zebra", Type: toggles.Number}, nil},
		} {
			if got := identifiers(tt.f); !slices.Equal(got, tt.want) {
				t.Errorf("List(%+v) = %q, want %q", tt.f, got, tt.want)
			}
		}
	}, toggles.Migrations)
}

// sortableTime formats a time as text that sorts as the time does.
const sortableTime = "2006-01-02T15:04:05.000000000Z07:00"

func TestListSortAndPaging(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		svc := newService(t, db, toggles.Options{})
		// Values whose order is the same under any collation; a tie on
		// category shows the id tiebreaker.
		ts := []*toggles.Toggle{
			create(t, svc, toggles.CreateInput{Identifier: "m.one", Name: "delta", Category: "c", Type: toggles.String}),
			create(t, svc, toggles.CreateInput{Identifier: "b.two", Name: "alpha", Category: "a", Type: toggles.Number}),
			create(t, svc, toggles.CreateInput{Identifier: "x.three", Name: "charlie", Category: "c", Type: toggles.Boolean}),
			create(t, svc, toggles.CreateInput{Identifier: "d.four", Name: "bravo", Category: "b", Type: toggles.JSON}),
		}
		// Updates make updatedAt's order differ from createdAt's.
		for _, i := range []int{1, 3, 0, 2} {
			u, err := svc.Update(ctx, toggles.UpdateInput{ID: ts[i].ID, Description: ptr("touched")})
			is.NoErr(err)
			ts[i] = u
		}
		gone := create(t, svc, toggles.CreateInput{Identifier: "a.deleted", Name: "aaa", Category: "a", Type: toggles.Boolean})
		is.NoErr(svc.Delete(ctx, gone.ID))

		keys := map[string]func(*toggles.Toggle) string{
			"id":         func(t *toggles.Toggle) string { return t.ID },
			"identifier": func(t *toggles.Toggle) string { return t.Identifier },
			"name":       func(t *toggles.Toggle) string { return t.Name },
			"category":   func(t *toggles.Toggle) string { return t.Category },
			"type":       func(t *toggles.Toggle) string { return string(t.Type) },
			// Fixed-width fractions, so that the text sorts as the time
			// does (RFC3339Nano drops trailing zeros: ".5Z" > ".45Z").
			"createdAt": func(t *toggles.Toggle) string { return t.CreatedAt.UTC().Format(sortableTime) },
			"updatedAt": func(t *toggles.Toggle) string { return t.UpdatedAt.UTC().Format(sortableTime) },
		}
		ids := func(items []*toggles.Toggle) []string {
			out := make([]string, len(items))
			for i, it := range items {
				out[i] = it.Identifier
			}
			return out
		}
		for field, key := range keys {
			for _, desc := range []bool{false, true} {
				want := slices.Clone(ts)
				slices.SortFunc(want, func(a, b *toggles.Toggle) int {
					c := strings.Compare(key(a), key(b))
					if c == 0 {
						c = strings.Compare(a.ID, b.ID)
					}
					if desc {
						c = -c
					}
					return c
				})
				got, total, err := svc.List(ctx, toggles.ListFilter{SortField: field, SortDesc: desc, Limit: 10})
				is.NoErr(err)
				is.Equal(total, 4)
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("sort %s desc=%v: got %q, want %q", field, desc, ids(got), ids(want))
				}
				// Pages of two put together give the same order.
				var paged []*toggles.Toggle
				for off := 0; off < 6; off += 2 {
					page, total, err := svc.List(ctx, toggles.ListFilter{SortField: field, SortDesc: desc, Limit: 2, Offset: off})
					is.NoErr(err)
					is.Equal(total, 4)
					is.True(len(page) == max(0, min(2, 4-off)))
					paged = append(paged, page...)
				}
				if !slices.Equal(ids(paged), ids(want)) {
					t.Errorf("paged sort %s desc=%v: got %q, want %q", field, desc, ids(paged), ids(want))
				}
			}
		}
		// The default and unknown sort fields order by createdAt.
		for _, field := range []string{"", "nope", "name; DROP TABLE feature_toggles", "description"} {
			got, total, err := svc.List(ctx, toggles.ListFilter{SortField: field, Limit: 10})
			is.NoErr(err)
			is.Equal(total, 4)
			is.Equal(ids(got), []string{"m.one", "b.two", "x.three", "d.four"})
		}
		// A filtered total counts the filter's rows, not the page's.
		got, total, err := svc.List(ctx, toggles.ListFilter{Category: "c", SortField: "identifier", Limit: 1, Offset: 1})
		is.NoErr(err)
		is.Equal(total, 2)
		is.Equal(ids(got), []string{"x.three"})
	}, toggles.Migrations)
}

func TestOverridesTwoTenants(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(t, db, toggles.Options{})
		ctxA, scA := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)
		ctx := t.Context() // no scope: toggle definitions are global

		beta := create(t, svc, toggles.CreateInput{Identifier: "beta.feature", Name: "Beta feature", Category: "labs", Type: toggles.Boolean, DefaultValue: raw("false")})
		theme := create(t, svc, toggles.CreateInput{Identifier: "theme", Name: "Theme", Category: "ui", Type: toggles.String, DefaultValue: raw(`"light"`)})
		gone := create(t, svc, toggles.CreateInput{Identifier: "gone", Name: "Gone", Type: toggles.Boolean, DefaultValue: raw("true")})

		// Without an override every tenant gets the default.
		for _, c := range []struct {
			ctx    context.Context
			tenant string
		}{{ctxA, scA.TenantID}, {ctxB, scB.TenantID}} {
			r, err := svc.Resolve(c.ctx, "beta.feature")
			is.NoErr(err)
			is.Equal(r, toggles.Resolution{ToggleID: beta.ID, Identifier: "beta.feature", TenantID: c.tenant,
				Type: toggles.Boolean, Source: toggles.FromDefault, Value: raw("false")})
			v, err := svc.GetOverride(c.ctx, beta.ID)
			is.NoErr(err)
			is.Equal(v.ID, "")
			is.Equal(string(v.Value), "false")
			is.Equal(v.TenantID, c.tenant)
			is.Equal(v.ToggleType, toggles.Boolean)
			is.True(v.UpdatedAt == nil)
		}

		// Tenant A's override changes A only.
		ov, err := svc.SetOverride(ctxA, beta.ID, true, raw(" true "))
		is.NoErr(err)
		is.True(store.IsID(ov.ID))
		is.Equal(ov.ToggleID, beta.ID)
		is.Equal(ov.TenantID, scA.TenantID)
		is.Equal(string(ov.Value), "true")
		is.True(!ov.UpdatedAt.IsZero())
		on, err := svc.Bool(ctxA, "beta.feature")
		is.NoErr(err)
		is.True(on)
		r, err := svc.Resolve(ctxA, "beta.feature")
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromOverride)
		is.Equal(string(r.Value), "true")
		is.Equal(r.TenantID, scA.TenantID)
		on, err = svc.Bool(ctxB, "beta.feature")
		is.NoErr(err)
		is.True(!on)
		r, err = svc.Resolve(ctxB, "beta.feature")
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromDefault)
		is.Equal(string(r.Value), "false")

		v, err := svc.GetOverride(ctxA, beta.ID)
		is.NoErr(err)
		is.Equal(v.ID, ov.ID)
		is.Equal(string(v.Value), "true")
		is.Equal(v.TenantID, scA.TenantID)
		is.True(v.UpdatedAt != nil && v.UpdatedAt.Equal(ov.UpdatedAt))
		v, err = svc.GetOverride(ctxB, beta.ID)
		is.NoErr(err)
		is.Equal(v.ID, "")
		is.Equal(string(v.Value), "false")

		// Setting it again keeps the override's id; an override equal to
		// the default is still an override.
		ov2, err := svc.SetOverride(ctxA, beta.ID, true, raw("false"))
		is.NoErr(err)
		is.Equal(ov2.ID, ov.ID)
		is.Equal(string(ov2.Value), "false")
		r, err = svc.Resolve(ctxA, "beta.feature")
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromOverride)
		is.Equal(string(r.Value), "false")
		_, err = svc.SetOverride(ctxA, beta.ID, true, raw("true"))
		is.NoErr(err)

		// B overrides the other toggle.
		_, err = svc.SetOverride(ctxB, theme.ID, true, raw(`"dark"`))
		is.NoErr(err)
		s, err := svc.String(ctxB, "theme")
		is.NoErr(err)
		is.Equal(s, "dark")
		s, err = svc.String(ctxA, "theme")
		is.NoErr(err)
		is.Equal(s, "light")

		// ListOverrides: one row per live toggle, as the caller's tenant sees it.
		_, err = svc.SetOverride(ctxA, gone.ID, true, raw("false"))
		is.NoErr(err)
		is.NoErr(svc.Delete(ctx, gone.ID)) // its override is kept but no longer listed or resolved
		_, err = svc.Resolve(ctxA, "gone")
		wantIs(t, err, toggles.ErrMissingToggle)

		items, total, err := svc.ListOverrides(ctxA, toggles.OverrideFilter{Limit: 10})
		is.NoErr(err)
		is.Equal(total, 2)
		is.Equal(len(items), 2)
		is.Equal(items[0].Identifier, "beta.feature") // identifier order by default
		is.Equal(items[0].ID, ov.ID)
		is.Equal(items[0].ToggleID, beta.ID)
		is.Equal(items[0].TenantID, scA.TenantID)
		is.Equal(items[0].Name, "Beta feature")
		is.Equal(items[0].Category, "labs")
		is.Equal(items[0].Type, toggles.Boolean)
		is.True(items[0].IsOverride)
		is.Equal(string(items[0].Value), "true")
		is.True(items[0].UpdatedAt != nil)
		is.Equal(items[1].Identifier, "theme")
		is.Equal(items[1].ID, "") // B's override of theme is not A's
		is.True(!items[1].IsOverride)
		is.Equal(string(items[1].Value), `"light"`)
		is.Equal(items[1].TenantID, scA.TenantID)
		is.True(items[1].UpdatedAt == nil)

		items, total, err = svc.ListOverrides(ctxB, toggles.OverrideFilter{Limit: 10})
		is.NoErr(err)
		is.Equal(total, 2)
		is.Equal(items[0].Identifier, "beta.feature")
		is.True(!items[0].IsOverride) // A's override is not B's
		is.Equal(items[0].ID, "")
		is.Equal(string(items[0].Value), "false")
		is.Equal(items[1].Identifier, "theme")
		is.True(items[1].IsOverride)
		is.Equal(string(items[1].Value), `"dark"`)
		is.Equal(items[1].TenantID, scB.TenantID)

		// A tenant without overrides sees only defaults.
		ctxC, _ := storetest.NewScope(t)
		items, total, err = svc.ListOverrides(ctxC, toggles.OverrideFilter{Limit: 10})
		is.NoErr(err)
		is.Equal(total, 2)
		for _, it := range items {
			is.True(!it.IsOverride)
		}

		// Filters, sort and paging.
		items, total, err = svc.ListOverrides(ctxA, toggles.OverrideFilter{Identifier: "THEME", Limit: 10})
		is.NoErr(err)
		is.Equal(total, 1)
		is.Equal(items[0].Identifier, "theme")
		items, total, err = svc.ListOverrides(ctxA, toggles.OverrideFilter{Name: "beta", Limit: 10})
		is.NoErr(err)
		is.Equal(total, 1)
		is.Equal(items[0].Identifier, "beta.feature")
		items, total, err = svc.ListOverrides(ctxA, toggles.OverrideFilter{Category: "U", Limit: 10})
		is.NoErr(err)
		is.Equal(total, 1)
		is.Equal(items[0].Identifier, "theme")
		items, total, err = svc.ListOverrides(ctxA, toggles.OverrideFilter{SortField: "name", SortDesc: true, Limit: 1})
		is.NoErr(err)
		is.Equal(total, 2)
		is.Equal(len(items), 1)
		is.Equal(items[0].Identifier, "theme")
		items, _, err = svc.ListOverrides(ctxA, toggles.OverrideFilter{SortField: "category", Limit: 1, Offset: 1})
		is.NoErr(err)
		is.Equal(items[0].Identifier, "theme")

		// Removing A's override returns nil and A is back on the default;
		// B keeps its own.
		removed, err := svc.SetOverride(ctxA, beta.ID, false, nil)
		is.NoErr(err)
		is.True(removed == nil)
		on, err = svc.Bool(ctxA, "beta.feature")
		is.NoErr(err)
		is.True(!on)
		r, err = svc.Resolve(ctxA, "beta.feature")
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromDefault)
		v, err = svc.GetOverride(ctxA, beta.ID)
		is.NoErr(err)
		is.Equal(v.ID, "")
		is.True(v.UpdatedAt == nil)
		removed, err = svc.SetOverride(ctxA, beta.ID, false, raw("true")) // removing a missing override is fine; the value is ignored
		is.NoErr(err)
		is.True(removed == nil)
		s, err = svc.String(ctxB, "theme")
		is.NoErr(err)
		is.Equal(s, "dark")

		// A new override after a removal gets a new id.
		ov3, err := svc.SetOverride(ctxA, beta.ID, true, raw("true"))
		is.NoErr(err)
		is.True(ov3.ID != ov.ID)

		// Override values are type-checked; null is allowed.
		for _, bad := range []string{`"yes"`, `1`, `{`, `[true]`, `yes`} {
			_, err = svc.SetOverride(ctxA, beta.ID, true, raw(bad))
			wantInvalid(t, err, "overrideValue")
		}
		_, err = svc.SetOverride(ctxA, theme.ID, true, raw(`5`))
		wantInvalid(t, err, "overrideValue")
		on, err = svc.Bool(ctxA, "beta.feature")
		is.NoErr(err)
		is.True(on) // the failed sets changed nothing

		// An absent value is null.
		ovNull, err := svc.SetOverride(ctxA, beta.ID, true, nil)
		is.NoErr(err)
		is.Equal(string(ovNull.Value), "null")
		r, err = svc.Resolve(ctxA, "beta.feature")
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromOverride)
		is.Equal(string(r.Value), "null")
		on, err = svc.Bool(ctxA, "beta.feature")
		is.NoErr(err)
		is.True(!on) // null is false

		// Missing and deleted toggles.
		_, err = svc.SetOverride(ctxA, store.NewID(), true, raw("true"))
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.SetOverride(ctxA, gone.ID, true, raw("true"))
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.SetOverride(ctxA, gone.ID, false, nil)
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.GetOverride(ctxA, gone.ID)
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.GetOverride(ctxA, store.NewID())
		wantIs(t, err, store.ErrNotFound)

		// Every tenant call needs a scope with a tenant.
		for _, c := range []context.Context{ctx, store.WithScope(ctx, store.Scope{OrganizationID: store.NewID()})} {
			_, err = svc.GetOverride(c, beta.ID)
			wantIs(t, err, store.ErrNoScope)
			_, _, err = svc.ListOverrides(c, toggles.OverrideFilter{Limit: 10})
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.SetOverride(c, beta.ID, true, raw("true"))
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.SetOverride(c, beta.ID, false, nil)
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.Resolve(c, "beta.feature")
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.Check(c, "beta.feature", toggles.Boolean)
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.Bool(c, "beta.feature")
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.String(c, "theme")
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.Number(c, "x")
			wantIs(t, err, store.ErrNoScope)
			_, err = svc.JSON(c, "x")
			wantIs(t, err, store.ErrNoScope)
		}
	}, toggles.Migrations)
}

func TestResolveAndTypedReads(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		svc := newService(t, db, toggles.Options{})

		for _, typ := range []toggles.Type{toggles.Boolean, toggles.String, toggles.Number, toggles.JSON} {
			create(t, svc, toggles.CreateInput{Identifier: "null." + string(typ), Type: typ})
		}
		flag := create(t, svc, toggles.CreateInput{Identifier: "flag", Type: toggles.Boolean, DefaultValue: raw("true")})
		greeting := create(t, svc, toggles.CreateInput{Identifier: "greeting", Type: toggles.String, DefaultValue: raw(`"hello \"world\" ü"`)})
		limit := create(t, svc, toggles.CreateInput{Identifier: "limit", Type: toggles.Number, DefaultValue: raw("42.5")})
		config := create(t, svc, toggles.CreateInput{Identifier: "config", Type: toggles.JSON, DefaultValue: raw(`{ "a": [1, 2] }`)})

		// null reads as the type's zero value; Resolve and JSON return null.
		b, err := svc.Bool(ctx, "null.boolean")
		is.NoErr(err)
		is.True(!b)
		s, err := svc.String(ctx, "null.string")
		is.NoErr(err)
		is.Equal(s, "")
		n, err := svc.Number(ctx, "null.number")
		is.NoErr(err)
		is.Equal(n, 0.0)
		j, err := svc.JSON(ctx, "null.json")
		is.NoErr(err)
		is.Equal(string(j), "null")
		r, err := svc.Resolve(ctx, "null.boolean")
		is.NoErr(err)
		is.Equal(string(r.Value), "null")
		is.Equal(r.Source, toggles.FromDefault)

		b, err = svc.Bool(ctx, "flag")
		is.NoErr(err)
		is.True(b)
		s, err = svc.String(ctx, "greeting")
		is.NoErr(err)
		is.Equal(s, `hello "world" ü`)
		n, err = svc.Number(ctx, "limit")
		is.NoErr(err)
		is.Equal(n, 42.5)
		j, err = svc.JSON(ctx, "config")
		is.NoErr(err)
		is.Equal(string(j), `{"a":[1,2]}`)

		// Overrides of every type, for another tenant.
		ctx2, _ := storetest.NewScope(t)
		_, err = svc.SetOverride(ctx2, greeting.ID, true, raw(`"hi"`))
		is.NoErr(err)
		_, err = svc.SetOverride(ctx2, limit.ID, true, raw("-3"))
		is.NoErr(err)
		_, err = svc.SetOverride(ctx2, config.ID, true, raw(`[ "x", {"y": true} ]`))
		is.NoErr(err)
		s, err = svc.String(ctx2, "greeting")
		is.NoErr(err)
		is.Equal(s, "hi")
		n, err = svc.Number(ctx2, "limit")
		is.NoErr(err)
		is.Equal(n, -3.0)
		j, err = svc.JSON(ctx2, "config")
		is.NoErr(err)
		is.Equal(string(j), `["x",{"y":true}]`)
		r, err = svc.Check(ctx2, "config", toggles.JSON)
		is.NoErr(err)
		is.Equal(r.Source, toggles.FromOverride)
		n, err = svc.Number(ctx, "limit") // the first tenant keeps the default
		is.NoErr(err)
		is.Equal(n, 42.5)

		r, err = svc.Check(ctx, "limit", toggles.Number)
		is.NoErr(err)
		is.Equal(r.Type, toggles.Number)
		is.Equal(string(r.Value), "42.5")
		is.Equal(r.TenantID, sc.TenantID)
		r, err = svc.Check(ctx, "flag", toggles.Boolean)
		is.NoErr(err)
		is.Equal(r.ToggleID, flag.ID)
		is.Equal(r.Identifier, "flag")

		// The wrong type is a *TypeMismatchError.
		mismatch := func(err error, identifier string, actual, requested toggles.Type) {
			t.Helper()
			var tm *toggles.TypeMismatchError
			if !errors.As(err, &tm) {
				t.Fatalf("error = %v, want a *toggles.TypeMismatchError", err)
			}
			is.Equal(*tm, toggles.TypeMismatchError{Identifier: identifier, Actual: actual, Requested: requested})
			is.True(!errors.Is(err, toggles.ErrMissingToggle))
		}
		_, err = svc.Check(ctx, "greeting", toggles.Boolean)
		mismatch(err, "greeting", toggles.String, toggles.Boolean)
		_, err = svc.Bool(ctx, "greeting")
		mismatch(err, "greeting", toggles.String, toggles.Boolean)
		_, err = svc.String(ctx, "flag")
		mismatch(err, "flag", toggles.Boolean, toggles.String)
		_, err = svc.Number(ctx, "config")
		mismatch(err, "config", toggles.JSON, toggles.Number)
		_, err = svc.JSON(ctx, "limit")
		mismatch(err, "limit", toggles.Number, toggles.JSON)
		_, err = svc.Bool(ctx, "null.json") // even a null value has a type
		mismatch(err, "null.json", toggles.JSON, toggles.Boolean)

		// An unknown identifier is missing.
		missing := func(err error, identifier string) {
			t.Helper()
			wantIs(t, err, toggles.ErrMissingToggle)
			var me *toggles.MissingToggleError
			is.True(errors.As(err, &me))
			is.Equal(me.Identifier, identifier)
		}
		_, err = svc.Resolve(ctx, "nope")
		missing(err, "nope")
		_, err = svc.Bool(ctx, "nope")
		missing(err, "nope")
		_, err = svc.Check(ctx, "nope", toggles.String)
		missing(err, "nope")
		_, err = svc.Bool(ctx, "FLAG") // identifiers are exact
		missing(err, "FLAG")

		// Changes through this Service show at the very next call, no sleep.
		for i, def := range []string{"false", "true", "null", "false"} {
			_, err := svc.Update(ctx, toggles.UpdateInput{ID: flag.ID, DefaultValue: raw(def)})
			is.NoErr(err)
			b, err := svc.Bool(ctx, "flag")
			is.NoErr(err)
			if b != (def == "true") {
				t.Fatalf("update %d: Bool = %v right after setting the default to %s", i, b, def)
			}
		}
		_, err = svc.SetOverride(ctx, flag.ID, true, raw("true"))
		is.NoErr(err)
		b, err = svc.Bool(ctx, "flag")
		is.NoErr(err)
		is.True(b)
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: flag.ID, DefaultValue: raw("false")})
		is.NoErr(err)
		b, err = svc.Bool(ctx, "flag")
		is.NoErr(err)
		is.True(b) // the override still wins over the new default

		// A renamed toggle answers to its new identifier only.
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: flag.ID, Identifier: ptr("flag.renamed")})
		is.NoErr(err)
		_, err = svc.Bool(ctx, "flag")
		missing(err, "flag")
		b, err = svc.Bool(ctx, "flag.renamed")
		is.NoErr(err)
		is.True(b) // with its override

		// A deleted toggle is missing at once.
		is.NoErr(svc.Delete(ctx, flag.ID))
		_, err = svc.Bool(ctx, "flag.renamed")
		missing(err, "flag.renamed")
		_, err = svc.Resolve(ctx, "flag.renamed")
		missing(err, "flag.renamed")

		// A second Service started now loads the current state.
		svc2 := newService(t, db, toggles.Options{})
		s, err = svc2.String(ctx, "greeting")
		is.NoErr(err)
		is.Equal(s, `hello "world" ü`)
		_, err = svc2.Bool(ctx, "flag.renamed")
		missing(err, "flag.renamed")
	}, toggles.Migrations)
}

// event is a store_events row.
type event struct {
	Type, TenantID string
	Data           map[string]any
}

// toggleEvents reads the area's global events (no tenant) straight from
// store_events: store.ListEvents requires a tenant.
func toggleEvents(t *testing.T, db *store.DB) []event {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT type, data FROM store_events
		WHERE tenant_id IS NULL AND type LIKE 'feature\_toggles.%' ESCAPE '\' ORDER BY occurred_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var ev event
		var data string
		if err := rows.Scan(&ev.Type, &data); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
			t.Fatalf("event %s data %q: %v", ev.Type, data, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countEvents(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM store_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEvents(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		ctxA, scA := storetest.NewScope(t)
		_, scB := storetest.NewScope(t)
		svc := newService(t, db, toggles.Options{})

		// Failed changes emit nothing.
		_, err := svc.Create(ctx, toggles.CreateInput{Identifier: "BadKey-123", Name: "x", Type: toggles.Boolean})
		wantInvalid(t, err, "identifier")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "x", Name: "x", Type: toggles.Boolean, DefaultValue: raw(`"yes"`)})
		wantInvalid(t, err, "defaultValue")
		is.Equal(countEvents(t, db), 0)

		tg := create(t, svc, toggles.CreateInput{Identifier: "evt", Name: "Event toggle", Type: toggles.Boolean, DefaultValue: raw("false")})
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: tg.ID, Name: ptr("Renamed"), DefaultValue: raw("true")})
		is.NoErr(err)
		_, err = svc.SetOverride(ctxA, tg.ID, true, raw("false"))
		is.NoErr(err)
		_, err = svc.SetOverride(ctxA, tg.ID, false, nil)
		is.NoErr(err)
		n := countEvents(t, db)

		// A duplicate (rejected inside the transaction), a type change and a
		// bad override value emit nothing either.
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "evt", Name: "again", Type: toggles.Boolean})
		wantInvalid(t, err, "identifier")
		_, err = svc.Update(ctx, toggles.UpdateInput{ID: tg.ID, Type: ptr(toggles.JSON)})
		wantInvalid(t, err, "type")
		_, err = svc.SetOverride(ctxA, tg.ID, true, raw(`"no"`))
		wantInvalid(t, err, "overrideValue")
		_, err = svc.SetOverride(ctxA, store.NewID(), true, raw(`true`))
		wantIs(t, err, store.ErrNotFound)
		// Removing an override the tenant does not have changes nothing.
		o, err := svc.SetOverride(ctxA, tg.ID, false, nil)
		is.NoErr(err)
		is.True(o == nil)
		is.Equal(countEvents(t, db), n)

		is.NoErr(svc.Delete(ctx, tg.ID))

		evs := toggleEvents(t, db)
		is.Equal(len(evs), 3)
		is.Equal(evs[0].Type, toggles.EventToggleCreated)
		is.Equal(evs[0].Data["id"], tg.ID)
		is.Equal(evs[0].Data["identifier"], "evt")
		is.Equal(evs[0].Data["name"], "Event toggle")
		is.Equal(evs[0].Data["type"], "boolean")
		is.Equal(evs[0].Data["defaultValue"], false)
		is.Equal(evs[1].Type, toggles.EventToggleUpdated)
		is.Equal(evs[1].Data["id"], tg.ID)
		is.Equal(evs[1].Data["name"], "Renamed")
		is.Equal(evs[1].Data["defaultValue"], true)
		is.Equal(evs[2].Type, toggles.EventToggleDeleted)
		is.Equal(evs[2].Data["id"], tg.ID)
		is.Equal(evs[2].Data["identifier"], "evt")

		// Override events belong to the tenant.
		list, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: scA.TenantID})
		is.NoErr(err)
		is.Equal(len(list), 2)
		for i, want := range []struct {
			on    bool
			value any
		}{{true, false}, {false, nil}} {
			ev := list[i]
			is.Equal(ev.Type, toggles.EventOverrideUpdated)
			is.Equal(ev.TenantID, scA.TenantID)
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			is.Equal(data["toggleId"], tg.ID)
			is.Equal(data["identifier"], "evt")
			is.Equal(data["tenantId"], scA.TenantID)
			is.Equal(data["isOverride"], want.on)
			is.Equal(data["value"], want.value)
		}
		list, err = store.ListEvents(ctx, db, store.EventFilter{TenantID: scB.TenantID})
		is.NoErr(err)
		is.Equal(len(list), 0) // A's override is not B's event
	}, toggles.Migrations)
}

// openTwo opens two handles on the database at url, as two processes
// would, migrates it, and starts a Service on each: the second with a
// 250 ms poll.
func openTwo(t *testing.T, url string) (s1, s2 *toggles.Service) {
	t.Helper()
	open := func() *store.DB {
		db, err := store.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(t.Context(), toggles.Migrations); err != nil {
			t.Fatal(err)
		}
		return db
	}
	db1, db2 := open(), open()
	// Cleanups run last-in first-out: the Services stop before the DBs close.
	s1 = newService(t, db1, toggles.Options{})
	s2 = newService(t, db2, toggles.Options{PollInterval: 250 * time.Millisecond})
	return s1, s2
}

// within polls cond until it holds, failing the test when that takes more
// than limit from start, and returns the delay.
func within(t *testing.T, what string, start time.Time, limit time.Duration, cond func() (bool, error)) time.Duration {
	t.Helper()
	var last error
	for {
		ok, err := cond()
		if ok {
			d := time.Since(start)
			t.Logf("%s: seen by the other Service after %v", what, d.Round(time.Millisecond))
			return d
		}
		last = err
		if time.Since(start) > limit {
			t.Fatalf("%s: not seen by the other Service within %v (last error: %v)", what, limit, last)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestCrossProcessFreshness(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		s1, s2 := openTwo(t, url)
		ctxA, _ := storetest.NewScope(t)
		ctxB, _ := storetest.NewScope(t)
		const limit = time.Second

		_, err := s2.Bool(ctxA, "fresh")
		wantIs(t, err, toggles.ErrMissingToggle)

		// A new toggle.
		tg, err := s1.Create(ctxA, toggles.CreateInput{Identifier: "fresh", Name: "Fresh", Type: toggles.Boolean, DefaultValue: raw("false")})
		is.NoErr(err)
		start := time.Now()
		b, err := s1.Bool(ctxA, "fresh") // the writing Service sees it at once
		is.NoErr(err)
		is.True(!b)
		within(t, "new toggle", start, limit, func() (bool, error) {
			b, err := s2.Bool(ctxA, "fresh")
			return err == nil && !b, err
		})

		// A default change.
		_, err = s1.Update(ctxA, toggles.UpdateInput{ID: tg.ID, DefaultValue: raw("true")})
		is.NoErr(err)
		start = time.Now()
		within(t, "default change", start, limit, func() (bool, error) {
			b, err := s2.Bool(ctxA, "fresh")
			return err == nil && b, err
		})

		// An override set for tenant A; B keeps the default.
		_, err = s1.SetOverride(ctxA, tg.ID, true, raw("false"))
		is.NoErr(err)
		start = time.Now()
		within(t, "override set", start, limit, func() (bool, error) {
			r, err := s2.Resolve(ctxA, "fresh")
			return err == nil && r.Source == toggles.FromOverride && string(r.Value) == "false", err
		})
		b, err = s2.Bool(ctxA, "fresh")
		is.NoErr(err)
		is.True(!b)
		b, err = s2.Bool(ctxB, "fresh")
		is.NoErr(err)
		is.True(b)

		// The override removed.
		_, err = s1.SetOverride(ctxA, tg.ID, false, nil)
		is.NoErr(err)
		start = time.Now()
		within(t, "override removal", start, limit, func() (bool, error) {
			r, err := s2.Resolve(ctxA, "fresh")
			return err == nil && r.Source == toggles.FromDefault && string(r.Value) == "true", err
		})

		// The toggle deleted.
		is.NoErr(s1.Delete(ctxA, tg.ID))
		start = time.Now()
		within(t, "delete", start, limit, func() (bool, error) {
			_, err := s2.Bool(ctxA, "fresh")
			return errors.Is(err, toggles.ErrMissingToggle), err
		})

		// And the other way round: a change made through s2 reaches s1,
		// whose poll runs at the default interval.
		_, err = s2.Create(ctxA, toggles.CreateInput{Identifier: "back", Name: "Back", Type: toggles.Number, DefaultValue: raw("7")})
		is.NoErr(err)
		start = time.Now()
		within(t, "new toggle, other direction", start, limit, func() (bool, error) {
			n, err := s1.Number(ctxA, "back")
			return err == nil && n == 7, err
		})
	})
}

// A failing reload keeps serving the previous values and is logged.
func TestReloadFailureKeepsServing(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx, _ := storetest.NewScope(t)
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		is.NoErr(db.Migrate(ctx, toggles.Migrations))
		var logs logbuf.Buffer
		svc := newService(t, db, toggles.Options{PollInterval: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		create(t, svc, toggles.CreateInput{Identifier: "kept", Type: toggles.String, DefaultValue: raw(`"v"`)})

		is.NoErr(db.Close()) // every reload fails from now on
		// The checks themselves read the version (there is no poll
		// goroutine): keep checking until one has failed to.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "cache reload failed") {
			if time.Now().After(deadline) {
				t.Fatalf("no reload failure logged; logs: %s", logs.String())
			}
			s, err := svc.String(ctx, "kept")
			is.NoErr(err)
			is.Equal(s, "v")
			time.Sleep(5 * time.Millisecond)
		}
		s, err := svc.String(ctx, "kept")
		is.NoErr(err)
		is.Equal(s, "v")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "late", Name: "x", Type: toggles.Boolean})
		is.True(err != nil) // writes fail, reads keep working
		s, err = svc.String(ctx, "kept")
		is.NoErr(err)
		is.Equal(s, "v")
	})
}

// New reads nothing; the first check loads the cache, and fails without
// the area's tables.
func TestFirstCheckWithoutMigrationsFails(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t) // the store's own tables only
	svc := must(toggles.New(db, toggles.Options{}))
	ctx, _ := storetest.NewScope(t)
	_, err := svc.Bool(ctx, "anything")
	var missing *toggles.MissingToggleError
	if err == nil || errors.As(err, &missing) {
		t.Fatalf("a check on a database without the toggles tables answered %v, want a load error", err)
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, toggles.Migrations)
	svc := must(toggles.New(db, toggles.Options{PollInterval: time.Millisecond}))
	ctx := t.Context()
	if err := svc.Stop(ctx); err != nil { // never started
		t.Fatal(err)
	}
	for range 2 { // Start twice runs one poll; Stop twice is fine
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Start(ctx); err != nil { // and it starts again
		t.Fatal(err)
	}
	if err := svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// Checks running while toggles and overrides change never see a torn state
// (run with -race).
func TestConcurrentReadsDuringChanges(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, toggles.Options{PollInterval: time.Millisecond})
		ctx, _ := storetest.NewScope(t)
		tg := create(t, svc, toggles.CreateInput{Identifier: "busy", Type: toggles.Number, DefaultValue: raw("0")})

		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 2 {
			wg.Go(func() {
				last := -1.0
				for {
					select {
					case <-stop:
						return
					default:
					}
					n, err := svc.Number(ctx, "busy")
					if err != nil {
						errs <- err
						return
					}
					if n < last { // values only grow, and a check never goes back
						errs <- fmt.Errorf("value went back from %v to %v", last, n)
						return
					}
					last = n
					runtime.Gosched() // leave the CPUs to the writer and the poll too
				}
			})
		}
		// Each round sets an override to i, then the default to i, then
		// removes the override: the value a tenant sees never decreases.
		for i := 1; i <= 20; i++ {
			v := raw(fmt.Sprint(i))
			if _, err := svc.SetOverride(ctx, tg.ID, true, v); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Update(ctx, toggles.UpdateInput{ID: tg.ID, DefaultValue: v}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.SetOverride(ctx, tg.ID, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}, toggles.Migrations)
}

// Two concurrent Updates of different fields of one toggle both stick.
func TestConcurrentUpdatesKeepEveryField(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, toggles.Options{})
		ctx := t.Context()
		for i := range 20 {
			tg := create(t, svc, toggles.CreateInput{Identifier: fmt.Sprintf("race.%d", i), Name: "old name", Type: toggles.Boolean})
			var wg sync.WaitGroup
			wg.Go(func() {
				if _, err := svc.Update(ctx, toggles.UpdateInput{ID: tg.ID, Name: ptr("new name")}); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				if _, err := svc.Update(ctx, toggles.UpdateInput{ID: tg.ID, DefaultValue: raw("true")}); err != nil {
					t.Error(err)
				}
			})
			wg.Wait()
			got, err := svc.Get(ctx, tg.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "new name" || string(got.DefaultValue) != "true" {
				t.Fatalf("round %d: name %q, default %s: one of two concurrent updates was lost", i, got.Name, got.DefaultValue)
			}
		}
	}, toggles.Migrations)
}

// Concurrent Creates with one identifier: one wins, the others get the
// same validation error as a sequential duplicate.
func TestConcurrentCreateSameIdentifier(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, toggles.Options{})
		for i := range 10 {
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for j := range errs {
				wg.Go(func() {
					_, errs[j] = svc.Create(t.Context(), toggles.CreateInput{Identifier: fmt.Sprintf("same.%d", i), Name: "x", Type: toggles.Boolean})
				})
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
					continue
				}
				wantInvalid(t, err, "identifier")
			}
			if won != 1 {
				t.Fatalf("round %d: %d creates succeeded, want 1", i, won)
			}
		}
	}, toggles.Migrations)
}

// NUL characters cannot be stored on PostgreSQL; both engines refuse them
// with the field named, and a blank name counts as missing.
func TestRefusesNULAndBlankNames(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, toggles.Options{})
		ctx := t.Context()
		_, err := svc.Create(ctx, toggles.CreateInput{Identifier: "nul-default", Name: "x", Type: toggles.String, DefaultValue: raw(`"a\u0000b"`)})
		wantInvalid(t, err, "defaultValue")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "nul-json", Name: "x", Type: toggles.JSON, DefaultValue: raw(`{"k":["\u0000"]}`)})
		wantInvalid(t, err, "defaultValue")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "nul-name", Name: "a\x00b", Type: toggles.Boolean})
		wantInvalid(t, err, "name")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "nul-desc", Name: "x", Description: "\x00", Type: toggles.Boolean})
		wantInvalid(t, err, "description")
		_, err = svc.Create(ctx, toggles.CreateInput{Identifier: "blank-name", Name: "   ", Type: toggles.Boolean})
		wantInvalid(t, err, "name")
		tg := create(t, svc, toggles.CreateInput{Identifier: "nul-override", Name: "x", Type: toggles.String})
		ctxA := store.WithScope(ctx, store.Scope{TenantID: "tenant-a"})
		_, err = svc.SetOverride(ctxA, tg.ID, true, raw(`"\u0000"`))
		wantInvalid(t, err, "overrideValue")
	}, toggles.Migrations)
}
