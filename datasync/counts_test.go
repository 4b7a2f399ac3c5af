package datasync_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// Migration 0006 counts the runs already stored by hour, integration and
// status: the widget's summary is right at once, and follows the status
// changes made after it.
func TestRunHourCountsMigrationCountsExistingRuns(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, datasync.Migrations, "0006")); err != nil {
			t.Fatal(err)
		}
		tenant := store.NewID()
		hour := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
		var ids []string
		for i, x := range []struct {
			integration string
			status      datasync.Status
			at          time.Duration
		}{
			{"crm", datasync.StatusCompleted, 10 * time.Minute},
			{"crm", datasync.StatusFailed, 70 * time.Minute},
			{"erp", datasync.StatusCompleted, 71 * time.Minute},
			{"crm", datasync.StatusRunning, 130 * time.Minute},
		} {
			at := hour.Add(x.at)
			id := store.NewIDAt(at)
			ids = append(ids, id)
			if _, err := db.Exec(ctx, `INSERT INTO data_sync_runs (id, tenant_id, integration_id, entity_type, direction, status, cursor,
				full_sync, batch_size, created_count, updated_count, skipped_count, failed_count, batches_completed,
				cancel_requested, created_at, updated_at)
				VALUES ($1, $2, $3, $4, 'import', $5, '', false, 10, 0, 0, 0, 0, 0, false, $6, $6)`,
				id, tenant, x.integration, fmt.Sprint("e", i), string(x.status), at); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx, datasync.Migrations); err != nil {
			t.Fatal(err)
		}
		st := datasync.NewSQLStore()
		summary := func(since time.Time) string {
			t.Helper()
			got, err := st.RunSummary(ctx, db, tenant, since)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, ir := range got {
				parts = append(parts, fmt.Sprint(ir.IntegrationID, " latest ", slices.Index(ids, ir.Latest.ID), " ", ir.ByStatus))
			}
			return strings.Join(parts, "; ")
		}
		for _, c := range []struct {
			since time.Time
			want  string
		}{
			{hour, "crm latest 3 map[completed:1 failed:1 running:1]; erp latest 2 map[completed:1]"},
			{hour.Add(time.Hour), "crm latest 3 map[failed:1 running:1]; erp latest 2 map[completed:1]"},
			{hour.Add(2 * time.Hour), "crm latest 3 map[running:1]"},
			{hour.Add(3 * time.Hour), ""},
		} {
			if got := summary(c.since); got != c.want {
				t.Errorf("RunSummary from %s: %s; want %s", c.since, got, c.want)
			}
		}
		// A status change after the migration moves a counted run.
		r, err := st.GetRun(ctx, db, tenant, ids[3])
		if err != nil {
			t.Fatal(err)
		}
		r.Status = datasync.StatusCompleted
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.UpdateRun(ctx, tx, r) }); err != nil {
			t.Fatal(err)
		}
		if got, want := summary(hour), "crm latest 3 map[completed:2 failed:1]; erp latest 2 map[completed:1]"; got != want {
			t.Errorf("RunSummary after a status change: %s; want %s", got, want)
		}
	})
}
