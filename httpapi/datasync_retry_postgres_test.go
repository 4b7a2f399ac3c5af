//go:build !tenantkit_nopostgres

package httpapi

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A batch whose transaction PostgreSQL ends with a deadlock (40P01) is
// run again whole (store.DB.Tx retries it): the retry writes the same
// page from the run's row as it was, and the run goes on to completion
// with each record counted once. (A retry that compared the row with the
// cursor its own first try had moved on took the run for moved on by
// another process, and left it running with no job.)
func TestDataSyncBatchRetriedAfterDeadlock(t *testing.T) {
	t.Parallel()
	db, _ := storetest.PostgresPool(t, storetest.IsolatedPostgresURL(t), func(*pgxpool.Config) {})
	runs := &deadlockOnce{SQLStore: datasync.NewSQLStore()}
	f, _ := dsBoundsSetup(t, db, datasync.Options{Store: runs}, 0)
	src := dsNewSource(t, 250)
	f.credentials(src.URL, "")

	run := f.wait(f.start(f.body("import", "batchSize", 100)))
	if runs.raised.Load() != 1 {
		t.Fatalf("the deadlock was raised %d times, want once", runs.raised.Load())
	}
	expectRun(t, "the run", run, "completed", 250, 0, 0, 0, 3)
	if got := f.records(); got != 250 {
		t.Errorf("%d records, want 250", got)
	}
	expectEvents(t, f.e, f.tf.ID, run["id"].(string), "started", "completed")
}

// deadlockOnce is the SQL store of runs, but the first batch's update of
// its run fails as a deadlock does, from the server.
type deadlockOnce struct {
	*datasync.SQLStore
	raised atomic.Int32
}

func (s *deadlockOnce) UpdateRun(ctx context.Context, q store.Querier, r *datasync.Run) error {
	if tx, ok := q.(*store.Tx); ok && r.BatchesCompleted == 1 && s.raised.CompareAndSwap(0, 1) {
		_, err := tx.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'deadlock detected (a test)' USING ERRCODE = '40P01'; END $$`)
		return err
	}
	return s.SQLStore.UpdateRun(ctx, q, r)
}
