package entities_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListRecordsAtScale measures the records list's first page (50
// records, the default order) with its exact total and no filter, as an
// entity's records grow, on each engine, in the form of the other lists'
// measurements (TestRecordsScale measures more orders and filters, with
// records inserted through the Service). It is a measurement, not a test,
// and runs only when TENANTKIT_BENCH_LIST_ROWS lists the record counts to
// measure at (for example "100000,1000000"); the records of the
// benchmarks' entity (ten fields) are inserted straight into the table
// (storetest.SeedRows: multi-row INSERTs, 1,000 per transaction) and the
// live-record counts recounted as migration 0006 counts them;
// storetest.GrowAndMeasure says how the table grows and what is timed.
// The last case is the baseline: the total counted as before the kept
// counts (20 calls at most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./entities -run TestListRecordsAtScale -v -timeout 2h
func TestListRecordsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListRecords(t, db, engine, sizes, calls) },
		entities.Migrations)
}

// TestListRecordsStayFlat runs TestListRecordsAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListRecordsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListRecords, entities.Migrations)
}

func scaleListRecords(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	svc := must(entities.New(db, entities.Options{}))
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	scopes := map[string]store.Scope{}
	seed := func(tenant string, from, to int) {
		if from == 0 {
			sc := store.Scope{TenantID: tenant}
			scopes[tenant] = sc
			defineBenchEntity(t, svc, store.WithScope(ctx, sc))
		}
		storetest.SeedRows(t, db, "custom_entity_records", "id, tenant_id, entity_id, data, created_at, updated_at", from, to,
			func(i int) []any {
				at := base.Add(time.Duration(i) * time.Millisecond)
				data, err := json.Marshal(benchItem(i, float64(i%100000)))
				if err != nil {
					t.Fatal(err)
				}
				return []any{store.NewIDAt(at), tenant, "bench.items", string(data), at, at}
			})
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM custom_entity_value_counts WHERE tenant_id = $1 AND field_key = ''`, tenant); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
				SELECT tenant_id, entity_id, '', 'true', COALESCE(organization_id, ''), 0, count(*) FROM custom_entity_records
				WHERE tenant_id = $1 AND deleted_at IS NULL GROUP BY tenant_id, entity_id, COALESCE(organization_id, '')`, tenant)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		sctx := store.WithScope(ctx, scopes[tenant])
		return []storetest.ScaleCase{
			{Name: "unfiltered", List: func() error {
				items, total, err := svc.ListRecords(sctx, entities.RecordQuery{EntityID: "bench.items", PageSize: 50})
				if err != nil {
					return err
				}
				return storetest.CheckPage("unfiltered", len(items), total, 50, rows)
			}},
			{Name: "total by count(*), as before 0006", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				var n int
				err := db.QueryRow(ctx, `SELECT count(*) FROM custom_entity_records WHERE tenant_id = $1 AND entity_id = 'bench.items'
					AND deleted_at IS NULL`, tenant).Scan(&n)
				if err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", 0, n, 0, rows)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "custom entity records", engine, sizes, calls, seed, cases)
}
