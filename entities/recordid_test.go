package entities_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Record ids are unique per tenant (migration 0004): a record id of one
// tenant says nothing to another. Tenant B creating a record with tenant
// A's record id succeeds exactly as with a free id, each tenant reads its
// own record only, and B's updates and deletes never reach A's record.
func TestRecordIDPerTenant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(entities.New(db, entities.Options{}))
		ctxA, scA := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)
		eid := recEntityID()
		for _, ctx := range []context.Context{ctxA, ctxB} {
			recDefineAll(t, svc, ctx, eid,
				recDef(eid, "name", "text", nil),
				recDef(eid, "color", "text", map[string]any{"filterable": true}))
		}
		taken := store.NewID()
		a, err := svc.CreateRecord(ctxA, entities.RecordInput{EntityID: eid, RecordID: taken,
			Values: map[string]any{"name": "A's", "color": "red"}})
		is.NoErr(err)
		is.Equal(a.ID, taken)

		// B with A's id, and B with a free id: the same answer.
		free := store.NewID()
		bTaken, err := svc.CreateRecord(ctxB, entities.RecordInput{EntityID: eid, RecordID: strings.ToUpper(taken),
			Values: map[string]any{"name": "B's", "color": "red"}})
		is.NoErr(err)
		bFree, err := svc.CreateRecord(ctxB, entities.RecordInput{EntityID: eid, RecordID: free,
			Values: map[string]any{"name": "B free", "color": "blue"}})
		is.NoErr(err)
		is.Equal(bTaken.ID, taken) // the id asked for, as for a free id
		is.Equal(bFree.ID, free)
		is.Equal(bTaken.TenantID, scB.TenantID)

		// The same tenant asking for its own id again: 409 as before,
		// from either tenant, whichever organization asks.
		for _, c := range []struct {
			ctx context.Context
			id  string
		}{{ctxA, taken}, {ctxB, taken}, {ctxB, free},
			{store.WithScope(t.Context(), store.Scope{TenantID: scA.TenantID, OrganizationID: store.NewID()}), taken}} {
			_, err = svc.CreateRecord(c.ctx, entities.RecordInput{EntityID: eid, RecordID: c.id})
			if !errors.Is(err, store.ErrConflict) || store.PublicMessage(err) != "A record with this id already exists" {
				t.Fatalf("create with a taken id of the caller's tenant: error = %v, want 409 \"A record with this id already exists\"", err)
			}
		}

		// Each tenant reads its own record under the id.
		got, err := svc.GetRecord(ctxA, eid, taken, false)
		is.NoErr(err)
		is.Equal(got.Values["name"], "A's")
		is.Equal(got.TenantID, scA.TenantID)
		got, err = svc.GetRecord(ctxB, eid, taken, false)
		is.NoErr(err)
		is.Equal(got.Values["name"], "B's")
		items, total := recList(t, svc, ctxA, entities.RecordQuery{EntityID: eid, WithDeleted: true})
		is.Equal(total, 1)
		is.Equal(recIDs(items), []string{taken})
		is.Equal(items[0].Values["name"], "A's")
		_, total = recList(t, svc, ctxB, entities.RecordQuery{EntityID: eid})
		is.Equal(total, 2)
		byID := recList1(t, svc, ctxB, eid, taken)
		is.Equal(byID.Values["name"], "B's")
		// Counted totals (color is filterable) stay per tenant.
		red := entities.RecordQuery{EntityID: eid, Filters: []entities.Filter{{Key: "color", Op: entities.OpEq, Values: []string{"red"}}}}
		_, total = recList(t, svc, ctxA, red)
		is.Equal(total, 1)
		_, total = recList(t, svc, ctxB, red)
		is.Equal(total, 1)

		// B's update and delete change B's record only.
		upd, err := svc.UpdateRecord(ctxB, entities.RecordInput{EntityID: eid, RecordID: taken, Values: map[string]any{"name": "B's new", "color": "green"}})
		is.NoErr(err)
		is.Equal(upd.TenantID, scB.TenantID)
		is.Equal(upd.Values["name"], "B's new")
		afterA, err := svc.GetRecord(ctxA, eid, taken, false)
		is.NoErr(err)
		is.Equal(recJSON(t, afterA.Values), recJSON(t, a.Values))
		is.True(afterA.UpdatedAt.Equal(a.UpdatedAt))
		is.NoErr(svc.DeleteRecord(ctxB, eid, taken))
		recWantNotFound(t, svc.DeleteRecord(ctxB, eid, taken))
		_, err = svc.GetRecord(ctxB, eid, taken, false)
		recWantNotFound(t, err)
		afterA, err = svc.GetRecord(ctxA, eid, taken, false)
		is.NoErr(err)
		is.True(afterA.DeletedAt == nil)
		is.Equal(recJSON(t, afterA.Values), recJSON(t, a.Values))
		is.True(afterA.UpdatedAt.Equal(a.UpdatedAt))
		_, total = recList(t, svc, ctxA, red)
		is.Equal(total, 1)
		_, total = recList(t, svc, ctxB, red)
		is.Equal(total, 0)

		// A id only B holds (free) is unknown to A: not found, as any
		// unknown id.
		_, err = svc.UpdateRecord(ctxA, entities.RecordInput{EntityID: eid, RecordID: free, Values: map[string]any{"name": "x"}})
		recWantNotFound(t, err)
		recWantNotFound(t, svc.DeleteRecord(ctxA, eid, free))
		got, err = svc.GetRecord(ctxB, eid, free, false)
		is.NoErr(err)
		is.Equal(got.Values["name"], "B free")

		// A's own update and delete leave B's soft-deleted record as it is.
		_, err = svc.UpdateRecord(ctxA, entities.RecordInput{EntityID: eid, RecordID: taken, Values: map[string]any{"name": "A's new"}})
		is.NoErr(err)
		is.NoErr(svc.DeleteRecord(ctxA, eid, taken))
		bDeleted, err := svc.GetRecord(ctxB, eid, taken, true)
		is.NoErr(err)
		is.Equal(bDeleted.Values["name"], "B's new")

		// Batch creates make fresh ids in the caller's tenant.
		ids, err := svc.CreateRecords(ctxB, eid, []map[string]any{{"name": "b1"}, {"name": "b2"}})
		is.NoErr(err)
		is.Equal(len(ids), 2)
		for _, id := range ids {
			is.True(id != taken && id != free)
			_, err := svc.GetRecord(ctxA, eid, id, true)
			recWantNotFound(t, err)
		}
	}, entities.Migrations)
}

// recList1 returns the one record of entityID with id, listed by the id
// filter.
func recList1(t *testing.T, svc *entities.Service, ctx context.Context, entityID, id string) *entities.Record {
	t.Helper()
	items, total := recList(t, svc, ctx, entities.RecordQuery{EntityID: entityID, IDs: []string{id}})
	if total != 1 || len(items) != 1 {
		t.Fatalf("list by id %s: %d items, total %d; want 1", id, len(items), total)
	}
	return items[0]
}

// migrationsUpTo is the entities line with its versions up to max only.
func migrationsUpTo(t *testing.T, max string) store.Migrations {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(entities.Migrations.FS, entities.Migrations.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := path[strings.LastIndex(path, "/")+1:]
		if base[:4] > max {
			return nil
		}
		b, err := fs.ReadFile(entities.Migrations.FS, path)
		m[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return store.Migrations{Line: entities.Migrations.Line, FS: m, Dir: entities.Migrations.Dir}
}

// filterableIndexes counts the filterable indexes on custom_entity_records.
func filterableIndexes(t *testing.T, db *store.DB) int {
	t.Helper()
	sql := `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'custom_entity_records'
		AND name LIKE 'custom_entity_records_f_%'`
	if db.Dialect().Name() == "postgres" {
		sql = `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'custom_entity_records'
			AND indexname LIKE 'custom_entity_records_k_%'`
	}
	var n int
	if err := db.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A database made before migration 0004 keeps its records, their value
// counts and its filterable indexes, and afterwards lets another tenant
// use a record id.
func TestRecordKeyMigration(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		old, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		is.NoErr(old.Migrate(ctx, migrationsUpTo(t, "0003")))
		svc := must(entities.New(old, entities.Options{}))
		ctxA, _ := storetest.NewScope(t)
		ctxB, _ := storetest.NewScope(t)
		eid := recEntityID()
		for _, c := range []context.Context{ctxA, ctxB} {
			recDefineAll(t, svc, c, eid,
				recDef(eid, "name", "text", nil),
				recDef(eid, "color", "text", map[string]any{"filterable": true}))
		}
		var idsA []string
		for _, v := range []map[string]any{{"name": "a1", "color": "red"}, {"name": "a2", "color": "red"}, {"name": "a3", "color": "blue"}} {
			idsA = append(idsA, recCreate(t, svc, ctxA, eid, v).ID)
		}
		recCreate(t, svc, ctxB, eid, map[string]any{"name": "b1", "color": "red"})
		is.NoErr(svc.DeleteRecord(ctxA, eid, idsA[2]))
		// Before 0004 the id is one global key: B cannot use A's.
		_, err = svc.CreateRecord(ctxB, entities.RecordInput{EntityID: eid, RecordID: idsA[0], Values: map[string]any{"name": "b"}})
		is.True(errors.Is(err, store.ErrConflict))
		beforeA, _ := recList(t, svc, ctxA, entities.RecordQuery{EntityID: eid, WithDeleted: true})
		is.Equal(filterableIndexes(t, old), 1)
		is.NoErr(old.Close())

		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		defer db.Close()
		is.NoErr(db.Migrate(ctx, entities.Migrations))
		if db.Dialect().Name() == "sqlite" {
			is.Equal(filterableIndexes(t, db), 0) // the rebuild dropped it
		}
		svc = must(entities.New(db, entities.Options{}))
		red := entities.RecordQuery{EntityID: eid, Filters: []entities.Filter{{Key: "color", Op: entities.OpEq, Values: []string{"red"}}}}
		items, total := recList(t, svc, ctxA, red)
		is.Equal(total, 2) // from the kept counts
		is.Equal(len(items), 2)
		// The first list made SQLite's filterable index again;
		// PostgreSQL kept it.
		is.Equal(filterableIndexes(t, db), 1)
		afterA, _ := recList(t, svc, ctxA, entities.RecordQuery{EntityID: eid, WithDeleted: true})
		is.Equal(recJSON(t, afterA), recJSON(t, beforeA))
		_, total = recList(t, svc, ctxB, red)
		is.Equal(total, 1)

		// Now B may use A's id; A's record stays as it was.
		b, err := svc.CreateRecord(ctxB, entities.RecordInput{EntityID: eid, RecordID: idsA[0], Values: map[string]any{"name": "b", "color": "red"}})
		is.NoErr(err)
		is.Equal(b.ID, idsA[0])
		_, total = recList(t, svc, ctxB, red)
		is.Equal(total, 2)
		_, total = recList(t, svc, ctxA, red)
		is.Equal(total, 2)
		got, err := svc.GetRecord(ctxA, eid, idsA[0], false)
		is.NoErr(err)
		is.Equal(got.Values["name"], "a1")
		_, err = svc.CreateRecord(ctxA, entities.RecordInput{EntityID: eid, RecordID: idsA[0], Values: map[string]any{"name": "a"}})
		is.True(errors.Is(err, store.ErrConflict))
	})
}
