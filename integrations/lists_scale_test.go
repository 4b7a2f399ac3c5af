package integrations_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListLogsAtScale measures the integration log's first page (20
// entries) with its exact total as a tenant's log grows: unfiltered, by
// integration, by level, by run, by entity type and by entity, on each
// engine. It is a measurement, not a test, and runs only when
// TENANTKIT_BENCH_LIST_ROWS lists the entry counts to measure at (for
// example "100000,1000000"); the entries are inserted straight into the
// table (storetest.SeedRows: multi-row INSERTs, 1,000 per transaction)
// over four integrations (90% info, 8% warn, 2% error, one run per 1,000
// entries, one in ten of no entity, the entries of one entity 1/10,000th
// of them), the kept counts recounted as migration 0004 counts them;
// storetest.GrowAndMeasure says how the table grows and what is timed.
// The last case is the baseline: the unfiltered total counted as before
// the kept counts (20 calls at most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./integrations -run TestListLogsAtScale -v -timeout 2h
func TestListLogsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListLogs(t, db, engine, sizes, calls) },
		integrations.Migrations)
}

// TestListLogsStayFlat runs TestListLogsAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListLogsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListLogs, integrations.Migrations)
}

func scaleListLogs(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := integrations.NewSQLStore()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	level := func(i int) string {
		switch i % 50 {
		case 0:
			return integrations.LevelError
		case 1, 2, 3, 4:
			return integrations.LevelWarn
		}
		return integrations.LevelInfo
	}
	integration := func(i int) string { return fmt.Sprint("crm-", i%4) }
	run := func(i int) string { return fmt.Sprintf("run-%06d", i/1000) }
	// One entry in ten is of no entity; the others are of contacts.
	entityType := func(i int) any {
		if i%10 == 9 {
			return nil
		}
		return "contacts"
	}
	entity := func(i int) any {
		if i%10 == 9 {
			return nil
		}
		return fmt.Sprint("contact-", i%10000)
	}
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "integration_logs",
			"id, tenant_id, integration_id, run_id, level, message, entity_type, entity_id, created_at", from, to, func(i int) []any {
				at := base.Add(time.Duration(i) * time.Millisecond)
				return []any{store.NewIDAt(at), tenant, integration(i), run(i), level(i), "Synced a contact", entityType(i), entity(i), at}
			})
		recount(t, db, tenant)
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		errors, contacts, errorContacts, runID := 0, 0, 0, run(rows-1)
		for i := range rows {
			if entityType(i) != nil {
				contacts++
			}
			if level(i) == integrations.LevelError {
				errors++
				if entityType(i) != nil {
					errorContacts++
				}
			}
		}
		list := func(name string, f integrations.LogFilter, want int) storetest.ScaleCase {
			f.Limit = 20
			return storetest.ScaleCase{Name: name, List: func() error {
				items, total, err := st.ListLogs(ctx, db, tenant, f)
				if err != nil {
					return err
				}
				return storetest.CheckPage(name, len(items), total, min(20, want), want)
			}}
		}
		return []storetest.ScaleCase{
			list("unfiltered", integrations.LogFilter{}, rows),
			list("integrationId", integrations.LogFilter{IntegrationID: "crm-1"}, rows/4),
			list("level", integrations.LogFilter{Level: integrations.LevelError}, errors),
			list("runId", integrations.LogFilter{RunID: runID}, rows-(rows-1)/1000*1000),
			list("entityType", integrations.LogFilter{EntityType: "contacts"}, contacts),
			list("level and entityType", integrations.LogFilter{Level: integrations.LevelError, EntityType: "contacts"}, errorContacts),
			list("entityId", integrations.LogFilter{EntityID: "contact-7"}, (rows+10000-1-7)/10000),
			list("entityType and entityId", integrations.LogFilter{EntityType: "contacts", EntityID: "contact-7"}, (rows+10000-1-7)/10000),
			{Name: "unfiltered total by count(*), as before 0003", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				var n int
				if err := db.QueryRow(ctx, `SELECT count(*) FROM integration_logs WHERE tenant_id = $1`, tenant).Scan(&n); err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", 0, n, 0, rows)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "integration logs", engine, sizes, calls, seed, cases)
}

// recount counts the tenant's entries into the kept counts as migration
// 0004 does (the seeded rows were inserted past the Store).
func recount(t *testing.T, db *store.DB, tenant string) {
	t.Helper()
	err := db.Tx(t.Context(), func(tx *store.Tx) error {
		if _, err := tx.Exec(t.Context(), `DELETE FROM integration_log_counts_by_type WHERE tenant_id = $1`, tenant); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), `INSERT INTO integration_log_counts_by_type (tenant_id, integration_id, level, entity_type, slot, n)
			SELECT tenant_id, integration_id, level, COALESCE(entity_type, ''), 0, count(*) FROM integration_logs WHERE tenant_id = $1
			GROUP BY tenant_id, integration_id, level, COALESCE(entity_type, '')`, tenant)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
