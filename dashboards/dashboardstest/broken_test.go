package dashboardstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/dashboards/dashboardstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// lastWriteWins updates whatever the stored version (no compare-and-set:
// concurrent writers with If-Match would lose updates).
type lastWriteWins struct{ *dashboards.SQLStore }

func (s lastWriteWins) UpdateLayout(ctx context.Context, q store.Querier, tenantID, owner string, _ int64, widgets []dashboards.Widget, at time.Time) error {
	l, err := s.GetLayout(ctx, q, tenantID, owner)
	if err != nil {
		return err
	}
	return s.SQLStore.UpdateLayout(ctx, q, tenantID, owner, l.Version, widgets, at)
}

// overwrites replaces an existing layout on create (two first reads racing
// would clobber a saved layout).
type overwrites struct{ *dashboards.SQLStore }

func (s overwrites) CreateLayout(ctx context.Context, q store.Querier, l *dashboards.Layout) (bool, error) {
	if old, err := s.GetLayout(ctx, q, l.TenantID, l.Owner); err == nil {
		return true, s.SQLStore.UpdateLayout(ctx, q, l.TenantID, l.Owner, old.Version, l.Widgets, l.UpdatedAt)
	}
	return s.SQLStore.CreateLayout(ctx, q, l)
}

// emptyIsNone drops role records without widgets.
type emptyIsNone struct{ *dashboards.SQLStore }

func (s emptyIsNone) SetRoleWidgets(ctx context.Context, q store.Querier, tenantID, roleID string, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return s.DeleteRoleWidgets(ctx, q, tenantID, roleID)
	}
	return s.SQLStore.SetRoleWidgets(ctx, q, tenantID, roleID, ids, at)
}

// brokenStores are the broken stores by name.
var brokenStores = map[string]func() dashboards.Store{
	"lastWriteWins": func() dashboards.Store { return lastWriteWins{dashboards.NewSQLStore()} },
	"overwrites":    func() dashboards.Store { return overwrites{dashboards.NewSQLStore()} },
	"emptyIsNone":   func() dashboards.Store { return emptyIsNone{dashboards.NewSQLStore()} },
}

// TestBrokenStore runs the suite on SQLite against the broken store
// storetest.Broken names; it is run, and meant to fail, by
// TestSuiteCatchesBrokenStores.
func TestBrokenStore(t *testing.T) {
	newStore, ok := brokenStores[storetest.Broken()]
	if !ok {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	db := storetest.SQLite(t, dashboards.Migrations)
	dashboardstest.Run(t, func(*testing.T) (*store.DB, dashboards.Store) { return db, newStore() })
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	storetest.SuiteCatches(t, "TestBrokenStore", map[string]string{
		"lastWriteWins": "CompareAndSet",
		"overwrites":    "CreateKeepsExisting",
		"emptyIsNone":   "RoleRecords",
	})
}
