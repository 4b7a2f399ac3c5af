package datasync_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListRunsAtScale measures the sync runs list's first page (20 runs)
// with its exact total as a tenant's runs grow: unfiltered, by status, by
// integration and by one sync (integration, entity type and direction),
// on each engine. It is a measurement, not a test, and runs only when
// TENANTKIT_BENCH_LIST_ROWS lists the run counts to measure at (for
// example "100000,1000000"); they are inserted straight into the table
// (storetest.SeedRows: multi-row INSERTs, 1,000 per transaction) over four
// integrations of two entity types each, both directions (95% completed,
// 5% failed), the kept counts recounted as migrations 0004 and 0006 count
// them; storetest.GrowAndMeasure says how the table grows and what is
// timed. The last two cases are baselines (20 calls at most): the
// widget's read before 0006 and the unfiltered total counted as before
// the kept counts.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./datasync -run TestListRunsAtScale -v -timeout 2h
func TestListRunsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListRuns(t, db, engine, sizes, calls) },
		datasync.Migrations)
}

// TestListRunsStayFlat runs TestListRunsAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListRunsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListRuns, datasync.Migrations)
}

func scaleListRuns(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := datasync.NewSQLStore()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	integration := func(i int) string { return fmt.Sprint("crm-", i%4) }
	entity := func(i int) string { return []string{"contacts", "deals"}[i/4%2] }
	direction := func(i int) datasync.Direction { return []datasync.Direction{datasync.Import, datasync.Export}[i/8%2] }
	status := func(i int) datasync.Status {
		if i%20 == 3 {
			return datasync.StatusFailed
		}
		return datasync.StatusCompleted
	}
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "data_sync_runs", `id, tenant_id, integration_id, entity_type, direction, status, cursor,
			full_sync, batch_size, created_count, updated_count, skipped_count, failed_count, batches_completed,
			cancel_requested, created_at, updated_at`, from, to, func(i int) []any {
			at := base.Add(time.Duration(i) * time.Millisecond)
			return []any{store.NewIDAt(at), tenant, integration(i), entity(i), string(direction(i)), string(status(i)), "c",
				false, 250, 10, 2, 0, 0, 1, false, at, at}
		})
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM data_sync_run_counts WHERE tenant_id = $1`, tenant); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO data_sync_run_counts (tenant_id, integration_id, entity_type, direction, status, slot, n)
				SELECT tenant_id, integration_id, entity_type, direction, status, 0, count(*) FROM data_sync_runs WHERE tenant_id = $1
				GROUP BY tenant_id, integration_id, entity_type, direction, status`, tenant); err != nil {
				return err
			}
			// The counts by hour, integration and status (migration
			// 0006) of runs 0 to to, counted here.
			if _, err := tx.Exec(ctx, `DELETE FROM data_sync_run_hour_counts WHERE tenant_id = $1`, tenant); err != nil {
				return err
			}
			type hourKey struct {
				hour        int64
				integration string
				status      datasync.Status
			}
			byHour := map[hourKey]int{}
			for i := range to {
				byHour[hourKey{base.Add(time.Duration(i) * time.Millisecond).Truncate(time.Hour).Unix(), integration(i), status(i)}]++
			}
			for k, n := range byHour {
				if _, err := tx.Exec(ctx, `INSERT INTO data_sync_run_hour_counts (tenant_id, hour, integration_id, status, slot, n)
					VALUES ($1, $2, $3, $4, 0, $5)`, tenant, k.hour, k.integration, string(k.status), n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		failed, sync := 0, 0
		for i := range rows {
			if status(i) == datasync.StatusFailed {
				failed++
			}
			if integration(i) == "crm-1" && entity(i) == "deals" && direction(i) == datasync.Export {
				sync++
			}
		}
		list := func(name string, f datasync.RunFilter, want int) storetest.ScaleCase {
			f.Limit = 20
			return storetest.ScaleCase{Name: name, List: func() error {
				items, total, err := st.ListRuns(ctx, db, tenant, f)
				if err != nil {
					return err
				}
				return storetest.CheckPage(name, len(items), total, 20, want)
			}}
		}
		return []storetest.ScaleCase{
			list("unfiltered", datasync.RunFilter{}, rows),
			list("status", datasync.RunFilter{Status: datasync.StatusFailed}, failed),
			list("integrationId", datasync.RunFilter{IntegrationID: "crm-1"}, rows/4),
			list("one sync", datasync.RunFilter{IntegrationID: "crm-1", EntityType: "deals", Direction: datasync.Export}, sync),
			// What the dashboards' data sync widget reads (Service.Summary):
			// the window from the start of the UTC hour 24 hours back, every
			// run of the tenant in it.
			{Name: "sync runs widget (kept counts by hour, 0006)", List: func() error {
				since := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
				sums, err := st.RunSummary(ctx, db, tenant, since)
				if err != nil {
					return err
				}
				n := 0
				for _, ir := range sums {
					if ir.Latest == nil {
						return fmt.Errorf("widget: %s without a latest run", ir.IntegrationID)
					}
					for _, c := range ir.ByStatus {
						n += c
					}
				}
				return storetest.CheckPage("widget", len(sums), n, min(rows, 4), rows)
			}},
			// The widget's read before 0006: the newest 1,000 runs, with
			// their total (20 calls at most).
			{Name: "sync runs widget's newest 1,000 runs, as before 0006", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				items, total, err := st.ListRuns(ctx, db, tenant, datasync.RunFilter{Limit: 1000})
				if err != nil {
					return err
				}
				return storetest.CheckPage("newest 1,000", len(items), total, 1000, rows)
			}},
			{Name: "unfiltered total by count(*), as before 0004", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				var n int
				err := db.QueryRow(ctx, `SELECT count(*) FROM data_sync_runs WHERE tenant_id = $1`, tenant).Scan(&n)
				if err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", 0, n, 0, rows)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "data sync runs", engine, sizes, calls, seed, cases)
}
