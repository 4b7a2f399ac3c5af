package datasynctest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/datasynctest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// replacesActive makes room for a new run by failing the active run of
// the same target (two starts racing would both win).
type replacesActive struct{ *datasync.SQLStore }

func (s replacesActive) InsertRun(ctx context.Context, q store.Querier, r *datasync.Run) error {
	if _, err := q.Exec(ctx, `UPDATE data_sync_runs SET status = 'failed' WHERE tenant_id = $1 AND integration_id = $2
		AND entity_type = $3 AND direction = $4 AND status IN ('pending', 'running')`,
		r.TenantID, r.IntegrationID, r.EntityType, string(r.Direction)); err != nil {
		return err
	}
	return s.SQLStore.InsertRun(ctx, q, r)
}

// crossTenantGet finds a run by id alone.
type crossTenantGet struct{ *datasync.SQLStore }

func (s crossTenantGet) GetRun(ctx context.Context, q store.Querier, _, id string) (*datasync.Run, error) {
	var owner string
	if err := q.QueryRow(ctx, `SELECT tenant_id FROM data_sync_runs WHERE id = $1`, id).Scan(&owner); err != nil {
		return nil, store.ErrNotFound
	}
	return s.SQLStore.GetRun(ctx, q, owner, id)
}

// countersLost stores the status but not the cursor and counters.
type countersLost struct{ *datasync.SQLStore }

func (s countersLost) UpdateRun(ctx context.Context, q store.Querier, r *datasync.Run) error {
	old, err := s.SQLStore.GetRun(ctx, q, r.TenantID, r.ID)
	if err != nil {
		return err
	}
	cp := *r
	cp.Cursor, cp.CreatedCount, cp.UpdatedCount, cp.BatchesCompleted = old.Cursor, old.CreatedCount, old.UpdatedCount, old.BatchesCompleted
	return s.SQLStore.UpdateRun(ctx, q, &cp)
}

// anyStatusCursor continues from the latest run whatever its status (a
// failed run's cursor would skip the pages it never committed).
type anyStatusCursor struct{ *datasync.SQLStore }

func (anyStatusCursor) LastCursor(ctx context.Context, q store.Querier, tenantID, integrationID, entityType string, d datasync.Direction) (string, error) {
	var c string
	err := q.QueryRow(ctx, `SELECT cursor FROM data_sync_runs WHERE tenant_id = $1 AND integration_id = $2 AND entity_type = $3
		AND direction = $4 ORDER BY updated_at DESC, id DESC LIMIT 1`, tenantID, integrationID, entityType, string(d)).Scan(&c)
	if err != nil {
		return "", nil
	}
	return c, nil
}

// firstCompletedCursor continues from the oldest completed run.
type firstCompletedCursor struct{ *datasync.SQLStore }

func (firstCompletedCursor) LastCursor(ctx context.Context, q store.Querier, tenantID, integrationID, entityType string, d datasync.Direction) (string, error) {
	var c string
	err := q.QueryRow(ctx, `SELECT cursor FROM data_sync_runs WHERE tenant_id = $1 AND integration_id = $2 AND entity_type = $3
		AND direction = $4 AND status = 'completed' ORDER BY updated_at, id LIMIT 1`, tenantID, integrationID, entityType, string(d)).Scan(&c)
	if err != nil {
		return "", nil
	}
	return c, nil
}

// oldestFirst lists runs oldest first.
type oldestFirst struct{ *datasync.SQLStore }

func (s oldestFirst) ListRuns(ctx context.Context, q store.Querier, tenantID string, f datasync.RunFilter) ([]*datasync.Run, int, error) {
	all := f
	all.Limit, all.Offset = 1<<20, 0
	runs, total, err := s.SQLStore.ListRuns(ctx, q, tenantID, all)
	if err != nil {
		return nil, 0, err
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	from := min(f.Offset, len(runs))
	return runs[from:min(from+f.Limit, len(runs))], total, nil
}

// statusIgnored drops the status filter.
type statusIgnored struct{ *datasync.SQLStore }

func (s statusIgnored) ListRuns(ctx context.Context, q store.Querier, tenantID string, f datasync.RunFilter) ([]*datasync.Run, int, error) {
	f.Status = ""
	return s.SQLStore.ListRuns(ctx, q, tenantID, f)
}

// totalIsPage counts the page instead of every match.
type totalIsPage struct{ *datasync.SQLStore }

func (s totalIsPage) ListRuns(ctx context.Context, q store.Querier, tenantID string, f datasync.RunFilter) ([]*datasync.Run, int, error) {
	runs, _, err := s.SQLStore.ListRuns(ctx, q, tenantID, f)
	return runs, len(runs), err
}

// wholeHoursOnly counts the window from the first whole hour at or after
// since, dropping the runs of a first, partial hour.
type wholeHoursOnly struct{ *datasync.SQLStore }

func (s wholeHoursOnly) RunSummary(ctx context.Context, q store.Querier, tenantID string, since time.Time) ([]datasync.IntegrationRuns, error) {
	if h := since.Truncate(time.Hour); h.Before(since) {
		since = h.Add(time.Hour)
	}
	return s.SQLStore.RunSummary(ctx, q, tenantID, since)
}

// crossTenantSummary counts every tenant's runs with the caller's.
type crossTenantSummary struct{ *datasync.SQLStore }

func (s crossTenantSummary) RunSummary(ctx context.Context, q store.Querier, tenantID string, since time.Time) ([]datasync.IntegrationRuns, error) {
	tenants, err := store.Many(ctx, q, func(sc store.Scanner) (string, error) {
		var t string
		return t, sc.Scan(&t)
	}, `SELECT DISTINCT tenant_id FROM data_sync_runs WHERE tenant_id <> $1`, tenantID)
	if err != nil {
		return nil, err
	}
	mine, err := s.SQLStore.RunSummary(ctx, q, tenantID, since)
	for _, other := range tenants {
		theirs, err := s.SQLStore.RunSummary(ctx, q, other, since)
		if err != nil {
			return nil, err
		}
		for i := range mine {
			for _, t := range theirs {
				if t.IntegrationID == mine[i].IntegrationID {
					for st, n := range t.ByStatus {
						mine[i].ByStatus[st] += n
					}
				}
			}
		}
	}
	return mine, err
}

// brokenStores are the broken stores by name.
var brokenStores = map[string]func() datasync.Store{
	"replacesActive":       func() datasync.Store { return replacesActive{datasync.NewSQLStore()} },
	"crossTenantGet":       func() datasync.Store { return crossTenantGet{datasync.NewSQLStore()} },
	"countersLost":         func() datasync.Store { return countersLost{datasync.NewSQLStore()} },
	"anyStatusCursor":      func() datasync.Store { return anyStatusCursor{datasync.NewSQLStore()} },
	"firstCompletedCursor": func() datasync.Store { return firstCompletedCursor{datasync.NewSQLStore()} },
	"oldestFirst":          func() datasync.Store { return oldestFirst{datasync.NewSQLStore()} },
	"statusIgnored":        func() datasync.Store { return statusIgnored{datasync.NewSQLStore()} },
	"totalIsPage":          func() datasync.Store { return totalIsPage{datasync.NewSQLStore()} },
	"wholeHoursOnly":       func() datasync.Store { return wholeHoursOnly{datasync.NewSQLStore()} },
	"crossTenantSummary":   func() datasync.Store { return crossTenantSummary{datasync.NewSQLStore()} },
}

// TestBrokenStore runs the suite on SQLite against the broken store
// storetest.Broken names; it is run, and meant to fail, by
// TestSuiteCatchesBrokenStores.
func TestBrokenStore(t *testing.T) {
	newStore, ok := brokenStores[storetest.Broken()]
	if !ok {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	db := storetest.SQLite(t, datasync.Migrations)
	datasynctest.Run(t, func(*testing.T) (*store.DB, datasync.Store) { return db, newStore() })
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	storetest.SuiteCatches(t, "TestBrokenStore", map[string]string{
		"replacesActive":       "ActiveRunUnique",
		"crossTenantGet":       "Tenants",
		"countersLost":         "UpdateRun",
		"anyStatusCursor":      "LastCursor",
		"firstCompletedCursor": "LastCursor",
		"oldestFirst":          "ListRuns",
		"statusIgnored":        "ListRuns",
		"totalIsPage":          "ListRuns",
		"wholeHoursOnly":       "RunSummary",
		"crossTenantSummary":   "RunSummary",
	})
}
