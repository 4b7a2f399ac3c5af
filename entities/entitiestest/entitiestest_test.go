package entitiestest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/entities/entitiestest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the suite on both engines (PostgreSQL with
// TENANTKIT_TEST_POSTGRES_URL): one database and store per engine,
// shared by the subtests.
func TestSQLStore(t *testing.T) {
	t.Parallel()
	for _, engine := range []struct {
		name string
		open func(testing.TB, ...store.Migrations) *store.DB
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(engine.name, func(t *testing.T) {
			t.Parallel()
			db := engine.open(t, entities.Migrations)
			st := entities.NewSQLStore()
			entitiestest.Run(t, func(*testing.T) (*store.DB, entities.Store) { return db, st })
		})
	}
}

// Broken stores: the SQL store with one method wrong each, and the
// subtest of the suite that must catch it.
var broken = map[string]struct {
	store   func() entities.Store
	subtest string
}{
	"org scope ignored":             {func() entities.Store { return orgScopeIgnored{entities.NewSQLStore()} }, "RecordScope"},
	"delete keeps its counts":       {func() entities.Store { return deleteKeepsCounts{entities.NewSQLStore()} }, "CountedTotals"},
	"sort reversed":                 {func() entities.Store { return sortReversed{entities.NewSQLStore()} }, "Sorting"},
	"tombstones ignored":            {func() entities.Store { return tombstonesIgnored{entities.NewSQLStore()} }, "Tombstones"},
	"batch update keeps its counts": {func() entities.Store { return batchUpdateKeepsCounts{entities.NewSQLStore()} }, "Upserts"},
	"lock leaves deleted out":       {func() entities.Store { return lockLeavesDeletedOut{entities.NewSQLStore()} }, "Upserts"},
}

// orgScopeIgnored lists every organization's records.
type orgScopeIgnored struct{ *entities.SQLStore }

func (s orgScopeIgnored) ListRecords(ctx context.Context, q store.Querier, sc store.Scope, l entities.RecordList) ([]*entities.Record, int, error) {
	sc.OrganizationIDs = nil
	return s.SQLStore.ListRecords(ctx, q, sc, l)
}

// deleteKeepsCounts soft-deletes a record without uncounting its values.
type deleteKeepsCounts struct{ *entities.SQLStore }

func (s deleteKeepsCounts) DeleteRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, now time.Time) (*entities.Record, error) {
	r, err := s.GetRecord(ctx, q, sc, entityID, recordID, false)
	if err != nil {
		return nil, err
	}
	r.DeletedAt, r.UpdatedAt = &now, now
	return r, store.ExecOne(ctx, q, `UPDATE custom_entity_records SET deleted_at = $3, updated_at = $3 WHERE tenant_id = $1 AND id = $2`,
		r.TenantID, r.ID, now)
}

// sortReversed sorts the other way.
type sortReversed struct{ *entities.SQLStore }

func (s sortReversed) ListRecords(ctx context.Context, q store.Querier, sc store.Scope, l entities.RecordList) ([]*entities.Record, int, error) {
	l.SortDesc = !l.SortDesc
	return s.SQLStore.ListRecords(ctx, q, sc, l)
}

// tombstonesIgnored leaves deleted definitions out, so that a wider
// scope's definition shows through a tombstone.
type tombstonesIgnored struct{ *entities.SQLStore }

func (s tombstonesIgnored) VisibleDefinitions(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) ([]*entities.Definition, error) {
	rows, err := s.SQLStore.VisibleDefinitions(ctx, q, tenantID, orgID, entityIDs)
	var live []*entities.Definition
	for _, d := range rows {
		if d.DeletedAt == nil {
			live = append(live, d)
		}
	}
	return live, err
}

// batchUpdateKeepsCounts writes a batch of changed records without
// moving their value counts.
type batchUpdateKeepsCounts struct{ *entities.SQLStore }

func (s batchUpdateKeepsCounts) UpdateRecords(ctx context.Context, q store.Querier, changes []entities.RecordChange) error {
	for _, c := range changes {
		data, err := json.Marshal(c.New.Values)
		if err != nil {
			return err
		}
		if err := store.ExecOne(ctx, q, `UPDATE custom_entity_records SET data = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2`,
			c.New.TenantID, c.New.ID, string(data), c.New.UpdatedAt); err != nil {
			return err
		}
	}
	return nil
}

// lockLeavesDeletedOut reads the live records of a batch's ids only, so
// that a deleted record's id looks free.
type lockLeavesDeletedOut struct{ *entities.SQLStore }

func (s lockLeavesDeletedOut) LockRecords(ctx context.Context, q store.Querier, tenantID string, ids []string) ([]*entities.Record, error) {
	rows, err := s.SQLStore.LockRecords(ctx, q, tenantID, ids)
	var live []*entities.Record
	for _, r := range rows {
		if r.DeletedAt == nil {
			live = append(live, r)
		}
	}
	return live, err
}

// The suite fails each broken store, in the subtest meant to catch it
// (storetest.SuiteCatches runs TestBrokenStore in a child process for
// each).
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name, b := range broken {
		subtests[name] = b.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStore", subtests)
}

// TestBrokenStore runs the suite against the broken store that
// storetest.Broken names, on SQLite; it is skipped in an ordinary run.
func TestBrokenStore(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	b, ok := broken[name]
	if !ok {
		t.Fatalf("no broken store %q", name)
	}
	db := storetest.SQLite(t, entities.Migrations)
	st := b.store()
	entitiestest.Run(t, func(*testing.T) (*store.DB, entities.Store) { return db, st })
}
