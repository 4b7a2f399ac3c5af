package progress_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListActiveAtScale measures GET /progress/active's read,
// Service.Active (the pending and fresh running jobs, and those finished
// or gone stale in the recent window), as a tenant's jobs grow, on each
// engine. It is a measurement, not a test, and runs only when
// TENANTKIT_BENCH_LIST_ROWS lists the job counts to measure at (for
// example "100000,1000000"); they are inserted straight into the table
// (storetest.SeedRows: multi-row INSERTs, 1,000 per transaction), all
// finished a day or more ago (96% completed, 3% failed, 1% cancelled),
// and before each measurement the live ones are written afresh: 10
// running with a fresh heartbeat, 5 pending, 3 running gone stale and 30
// finished in the last minutes; storetest.GrowAndMeasure says how the
// table grows and what is timed.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./progress -run TestListActiveAtScale -v -timeout 2h
func TestListActiveAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListActive(t, db, engine, sizes, calls) },
		progress.Migrations)
}

const jobColumns = `id, tenant_id, job_type, name, description, status, processed_count, total_count, progress_percent,
	cancellable, cancel_requested, meta, started_at, finished_at, heartbeat_at, created_at, updated_at`

// TestListActiveStaysFlat runs TestListActiveAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListActiveStaysFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListActive, progress.Migrations)
}

func scaleListActive(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	svc, err := progress.New(db, progress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The finished jobs end a day or more before now, one a second apart.
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	status := func(i int) progress.Status {
		switch i % 100 {
		case 0, 1, 2:
			return progress.StatusFailed
		case 3:
			return progress.StatusCancelled
		}
		return progress.StatusCompleted
	}
	job := func(tenant string, at time.Time, s progress.Status, finished *time.Time, heartbeat time.Time, jobType string) []any {
		return []any{store.NewIDAt(at), tenant, jobType, "Import contacts", "", string(s), 100, 100, 100, true, false, "{}",
			at, finished, heartbeat, at, heartbeat}
	}
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "progress_jobs", jobColumns, from, to, func(i int) []any {
			at := end.Add(-time.Duration(1<<24-i) * time.Second)
			done := at.Add(time.Second)
			return job(tenant, at, status(i), &done, done, "bench.done")
		})
		// The live jobs, relative to now: running ones heartbeat an hour
		// ahead so that they stay fresh while measured.
		now := db.Now()
		var live [][]any
		for i := range 10 {
			live = append(live, job(tenant, now.Add(-time.Duration(i)*time.Minute), progress.StatusRunning, nil, now.Add(time.Hour), "bench.live"))
		}
		for i := range 5 {
			live = append(live, job(tenant, now.Add(-time.Duration(i)*time.Second), progress.StatusPending, nil, now, "bench.live"))
		}
		for i := range 3 {
			live = append(live, job(tenant, now.Add(-time.Hour), progress.StatusRunning, nil,
				now.Add(-2*time.Minute-time.Duration(i)*time.Second), "bench.live"))
		}
		for i := range 30 {
			done := now.Add(-time.Duration(i) * 10 * time.Second)
			live = append(live, job(tenant, done.Add(-time.Minute), progress.StatusCompleted, &done, done, "bench.live"))
		}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM progress_jobs WHERE tenant_id = $1 AND job_type = 'bench.live'`, tenant); err != nil {
				return err
			}
			_, err := store.NewBatchInsert("progress_jobs", jobColumns, "").Insert(ctx, tx, live)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		sctx := store.WithScope(ctx, store.Scope{TenantID: tenant})
		return []storetest.ScaleCase{{Name: "active", List: func() error {
			a, err := svc.Active(sctx)
			if err == nil && (len(a.Active) != 15 || len(a.RecentlyCompleted) != progress.RecentLimit) {
				err = fmt.Errorf("%d active, %d recent; want 15, %d", len(a.Active), len(a.RecentlyCompleted), progress.RecentLimit)
			}
			return err
		}}}
	}
	storetest.GrowAndMeasure(t, db, "progress jobs", engine, sizes, calls, seed, cases)
}
