package progresstest_test

import (
	"context"
	"errors"
	"time"

	"testing"

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/progress/progresstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// ignoresOrganization reads every job of the tenant, whatever
// organizations the scope may read.
type ignoresOrganization struct{ *progress.SQLStore }

func (s ignoresOrganization) Get(ctx context.Context, q store.Querier, sc store.Scope, id string) (*progress.Job, error) {
	return s.SQLStore.Get(ctx, q, store.Scope{TenantID: sc.TenantID}, id)
}

// staleIsActive lists running jobs as active however old their heartbeat.
type staleIsActive struct{ *progress.SQLStore }

func (s staleIsActive) ListActive(ctx context.Context, q store.Querier, sc store.Scope, _ time.Time, limit int) ([]*progress.Job, error) {
	return s.SQLStore.ListActive(ctx, q, sc, time.Time{}, limit)
}

// unknownIsZero stores an unknown total as 0.
type unknownIsZero struct{ *progress.SQLStore }

func (s unknownIsZero) Insert(ctx context.Context, q store.Querier, j *progress.Job) error {
	cp := *j
	if cp.TotalCount == nil {
		zero := int64(0)
		cp.TotalCount = &zero
	}
	return s.SQLStore.Insert(ctx, q, &cp)
}

// finishedForever lists every finished job, however long ago.
type finishedForever struct{ *progress.SQLStore }

func (s finishedForever) ListFinished(ctx context.Context, q store.Querier, sc store.Scope, _ time.Time, limit int) ([]*progress.Job, error) {
	return s.SQLStore.ListFinished(ctx, q, sc, time.Time{}, limit)
}

// updatesAnyTenant updates a job by its id alone.
type updatesAnyTenant struct{ *progress.SQLStore }

func (s updatesAnyTenant) Update(ctx context.Context, q store.Querier, j *progress.Job) error {
	err := s.SQLStore.Update(ctx, q, j)
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var owner string
	if err := q.QueryRow(ctx, `SELECT tenant_id FROM progress_jobs WHERE id = $1`, j.ID).Scan(&owner); err != nil {
		return err
	}
	cp := *j
	cp.TenantID = owner
	return s.SQLStore.Update(ctx, q, &cp)
}

// brokenStores are the broken stores by name.
var brokenStores = map[string]func() progress.Store{
	"ignoresOrganization": func() progress.Store { return ignoresOrganization{progress.NewSQLStore()} },
	"staleIsActive":       func() progress.Store { return staleIsActive{progress.NewSQLStore()} },
	"unknownIsZero":       func() progress.Store { return unknownIsZero{progress.NewSQLStore()} },
	"finishedForever":     func() progress.Store { return finishedForever{progress.NewSQLStore()} },
	"updatesAnyTenant":    func() progress.Store { return updatesAnyTenant{progress.NewSQLStore()} },
}

// TestBrokenStore runs the suite on SQLite against the broken store
// storetest.Broken names; it is run, and meant to fail, by
// TestSuiteCatchesBrokenStores.
func TestBrokenStore(t *testing.T) {
	newStore, ok := brokenStores[storetest.Broken()]
	if !ok {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	db := storetest.SQLite(t, progress.Migrations)
	progresstest.Run(t, func(*testing.T) (*store.DB, progress.Store) { return db, newStore() })
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	storetest.SuiteCatches(t, "TestBrokenStore", map[string]string{
		"ignoresOrganization": "Organizations",
		"staleIsActive":       "ListActive",
		"unknownIsZero":       "RoundTrip",
		"finishedForever":     "ListFinished",
		"updatesAnyTenant":    "Tenants",
	})
}
