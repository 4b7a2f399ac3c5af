package entities_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// fuzzEntityFixture is an entity with fields of several kinds and a few
// records, in a tenant of its own, on one engine.
type fuzzEntityFixture struct {
	engine string
	svc    *entities.Service
	ctx    context.Context
	eid    string
	live   map[string]bool // record ids
}

func newFuzzEntityFixture(f *testing.F, engine string, db *store.DB) *fuzzEntityFixture {
	f.Helper()
	svc := must(entities.New(db, entities.Options{}))
	ctx, _ := storetest.NewScope(f)
	fx := &fuzzEntityFixture{engine: engine, svc: svc, ctx: ctx, eid: recEntityID(), live: map[string]bool{}}
	def := func(key, kind string, cfg map[string]any) entities.DefinitionInput {
		return entities.DefinitionInput{EntityID: fx.eid, Key: key, Kind: kind, ConfigJSON: cfg}
	}
	if _, err := svc.Batch(ctx, entities.BatchInput{EntityID: fx.eid, Definitions: []entities.DefinitionInput{
		def("name", "text", map[string]any{"filterable": true}), def("n", "integer", map[string]any{"filterable": true}),
		def("price", "float", nil), def("b", "boolean", nil), def("d", "date", nil), def("dt", "datetime", nil),
		def("s", "select", map[string]any{"options": []any{"red", 5}}), def("tags", "text", map[string]any{"multi": true}),
	}}); err != nil {
		f.Fatal(err)
	}
	for _, v := range []map[string]any{
		{"name": "Ada", "n": 1, "price": 2.5, "b": true, "d": "2024-01-02", "dt": "2024-01-02T03:04:05Z", "s": "red", "tags": []any{"a"}},
		{"name": "bob", "n": -3, "s": 5},
		{},
	} {
		r, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: fx.eid, Values: v})
		if err != nil {
			f.Fatal(err)
		}
		fx.live[r.ID] = true
	}
	return fx
}

// FuzzRecordQuery lists records with arbitrary filters (any key,
// operator and values, not only those the HTTP query can spell), sort,
// search, ids and paging, and asks for relation options with an
// arbitrary label field, search and cursor. The answer is a page of the
// entity's own records or a store.ErrInvalid error, never another error
// and never a panic; with no filter, search or ids, the total is the
// entity's record count.
func FuzzRecordQuery(f *testing.F) {
	for _, s := range []struct {
		key, op, value, sortField, sortDir, search, ids string
		page, pageSize                                  int
	}{
		{"", "", "", "", "", "", "", 0, 0},
		{"name", entities.OpEq, "Ada", "n", "desc", "", "", 1, 2},
		{"cf_n", entities.OpGte, "0", "cf_price", "ASC", "a", "", 2, 1},
		{"n", entities.OpIn, "1", "updated_at", "", "", "", -5, 1000},
		{"name", "like", "%", "", "", "%", "", 1, 1},
		{"n", entities.OpGt, "NaN", "", "", "", "", 1, 1},
		{"n", entities.OpLt, "1e400", "", "", "", "", 1, 1},
		{"b", entities.OpEq, "TRUE", "", "", "", "", 1, 1},
		{"b", entities.OpGt, "true", "", "", "", "", 1, 1},
		{"d", entities.OpLte, "2024-13-45", "d", "", "", "", 1, 1},
		{"dt", entities.OpGt, "2024-01-02T03:04:05+25:00", "", "", "", "", 1, 1},
		{"s", entities.OpIn, "5", "s", "", "", "", 1, 1},
		{"tags", entities.OpEq, "a", "tags", "", "", "", 1, 1},
		{"name", entities.OpEq, "\x00", "", "", "\x00", "\x00", 1, 1},
		{"name", entities.OpEq, "\xff", "", "", "\xff", "\xff", 1, 1},
		{"name'; DROP TABLE x; --", entities.OpEq, "x", "name'", "", "", "", 1, 1},
		{"", "", "", "", "sideways", "", "", 1, 1},
		{"", "", "", "", "", "", strings.Repeat("x,", 101), 1, 1},
		{"", "", "", "", "", "", " 01A21429-6A01-79AA-AA5C-EB58D0801DAE ", 1, 1},
		{"", "", "", "", "", "", "", 1 << 40, 100},
	} {
		f.Add(s.key, s.op, s.value, s.sortField, s.sortDir, s.search, s.ids, s.page, s.pageSize)
	}
	dbs := map[string]*store.DB{"sqlite": storetest.SQLite(f, entities.Migrations)}
	if os.Getenv(storetest.PostgresEnv) != "" {
		dbs["postgres"] = storetest.Postgres(f, entities.Migrations)
	}
	var fxs []*fuzzEntityFixture
	for engine, db := range dbs {
		fxs = append(fxs, newFuzzEntityFixture(f, engine, db))
	}
	f.Fuzz(func(t *testing.T, key, op, value, sortField, sortDir, search, ids string, page, pageSize int) {
		for _, fx := range fxs {
			q := entities.RecordQuery{EntityID: fx.eid, Page: page, PageSize: pageSize, SortField: sortField, SortDir: sortDir, Search: search}
			if key != "" || op != "" {
				q.Filters = []entities.Filter{{Key: key, Op: op, Values: strings.Split(value, ",")}}
			}
			if ids != "" {
				q.IDs = strings.Split(ids, ",")
			}
			items, total, err := fx.svc.ListRecords(fx.ctx, q)
			where := fx.engine + ": ListRecords(" + strings.ReplaceAll(strings.TrimSpace(strings.Join([]string{key, op, value, sortField, sortDir, search, ids}, " | ")), "\x00", `\x00`) + ")"
			switch {
			case err != nil && !errors.Is(err, store.ErrInvalid):
				t.Fatalf("%s: %v, want nil or ErrInvalid", where, err)
			case err == nil:
				if total < len(items) || total > len(fx.live) || len(items) > 100 {
					t.Fatalf("%s: %d items of %d (the entity has %d records)", where, len(items), total, len(fx.live))
				}
				for _, r := range items {
					if !fx.live[r.ID] || r.EntityID != fx.eid {
						t.Fatalf("%s: record %+v is not the entity's", where, r)
					}
				}
				// A page past the last one is empty (the offset must not
				// overflow into an earlier page).
				limit := pageSize
				if limit <= 0 {
					limit = 50
				}
				limit = min(limit, 100)
				if page > 1 && page-1 >= (total+limit-1)/limit && len(items) > 0 {
					t.Fatalf("%s: page %d of size %d holds %d items, with a total of %d", where, page, limit, len(items), total)
				}
				if len(q.Filters) == 0 && q.IDs == nil && search == "" && total != len(fx.live) {
					t.Fatalf("%s: total %d, want the entity's %d records", where, total, len(fx.live))
				}
			}

			// Relation options: labelField from sortField, q from
			// search, cursor from value.
			opts, next, err := fx.svc.RelationOptions(fx.ctx, entities.OptionsQuery{EntityID: fx.eid, LabelField: sortField, Q: search,
				Cursor: value, PageSize: pageSize})
			if err != nil {
				if !errors.Is(err, store.ErrInvalid) {
					t.Fatalf("%s: RelationOptions: %v, want nil or ErrInvalid", fx.engine, err)
				}
				continue
			}
			for _, o := range opts {
				if !fx.live[o.Value] {
					t.Fatalf("%s: option %+v is not a record of the entity", fx.engine, o)
				}
			}
			if next != "" {
				// A cursor the API gave is accepted, and moves on.
				more, _, err := fx.svc.RelationOptions(fx.ctx, entities.OptionsQuery{EntityID: fx.eid, Cursor: next, PageSize: pageSize})
				if err != nil {
					t.Fatalf("%s: the next cursor %q: %v", fx.engine, next, err)
				}
				for _, o := range more {
					if slices.ContainsFunc(opts, func(p entities.Option) bool { return p.Value == o.Value }) {
						t.Fatalf("%s: option %s on two pages", fx.engine, o.Value)
					}
				}
			}
		}
	})
}
