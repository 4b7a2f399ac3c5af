package datasync_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The runs list's totals come from kept counts that follow inserts and
// status changes (an update that keeps the status moves nothing), by
// each filter, as counting the runs would.
func TestRunCountsFollowWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := datasync.NewSQLStore()
		tn := sc.TenantID
		var runs []*datasync.Run
		for i := range 4 {
			at := db.Now()
			r := &datasync.Run{ID: store.NewID(), TenantID: tn, IntegrationID: "crm", EntityType: "contacts", Direction: datasync.Import,
				Status: datasync.StatusCompleted, BatchSize: 1, CreatedAt: at, UpdatedAt: at}
			if i == 3 {
				r.Status, r.IntegrationID = datasync.StatusPending, "erp"
			}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertRun(ctx, tx, r) }); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		update := func(r *datasync.Run, s datasync.Status) {
			t.Helper()
			r.Status, r.CreatedCount = s, r.CreatedCount+1
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.UpdateRun(ctx, tx, r) }); err != nil {
				t.Fatal(err)
			}
		}
		update(runs[3], datasync.StatusRunning)
		update(runs[3], datasync.StatusRunning)
		update(runs[3], datasync.StatusFailed)
		update(runs[0], datasync.StatusCompleted)
		for _, c := range []struct {
			f    datasync.RunFilter
			want int
		}{
			{datasync.RunFilter{}, 4},
			{datasync.RunFilter{Status: datasync.StatusCompleted}, 3},
			{datasync.RunFilter{Status: datasync.StatusFailed}, 1},
			{datasync.RunFilter{Status: datasync.StatusRunning}, 0},
			{datasync.RunFilter{IntegrationID: "erp", EntityType: "contacts", Direction: datasync.Import}, 1},
			{datasync.RunFilter{IntegrationID: "crm", Status: datasync.StatusFailed}, 0},
		} {
			c.f.Limit = 10
			items, total, err := st.ListRuns(ctx, db, tn, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if total != c.want || len(items) != c.want {
				t.Errorf("%+v: %d rows of %d, want %d", c.f, len(items), total, c.want)
			}
		}
	}, datasync.Migrations)
}
