package entities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestRecordsScale builds the data set and measures it, on demand:
//
//	TENANTKIT_RECORDS_SCALE=1000000 TENANTKIT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//	  go test ./entities -run TestRecordsScale -v -timeout 60m
//
// One entity with 10 custom fields, 3 of them filterable (category: 100
// values; code: unique; amount: an integer), in one tenant. Records are
// inserted through CreateRecords in batches of 1,000, reporting records
// per second; at 10% of the target and at the target it reports the
// p50/p99 of listing page 1 (50 records) with an equality filter on each
// filterable field, sorted by id (the list's default), total included,
// next to the same page and total by hand-written SQL (the field's index
// and count(*)) timed in the same loop.
func TestRecordsScale(t *testing.T) {
	target, _ := strconv.Atoi(os.Getenv("TENANTKIT_RECORDS_SCALE"))
	if target <= 0 {
		t.Skip("set TENANTKIT_RECORDS_SCALE (the issue's run: 1000000) to build and measure the data set")
	}
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := entities.New(db)
		ctx, _ := storetest.NewScope(t)
		const entity = "bench.items"
		defineBenchEntity(t, svc, ctx)
		rng := rand.New(rand.NewPCG(1, 2))
		record := func(n int) map[string]any {
			return map[string]any{"category": fmt.Sprintf("cat-%02d", n%100), "code": fmt.Sprintf("C%08d", n),
				"amount": float64(rng.IntN(100000)), "title": fmt.Sprintf("Item %d", n), "notes": "Some notes about this item",
				"price": rng.Float64() * 1000, "active": n%2 == 0, "due": "2026-11-22", "phone": "+48 600 000 000",
				"owner": fmt.Sprintf("user-%d", n%500)}
		}
		inserted := 0
		grow := func(to int) {
			start := time.Now()
			from := inserted
			for inserted < to {
				batch := make([]map[string]any, min(1000, to-inserted))
				for i := range batch {
					batch[i] = record(inserted + i)
				}
				if _, err := svc.CreateRecords(ctx, entity, batch); err != nil {
					t.Fatal(err)
				}
				inserted += len(batch)
			}
			d := time.Since(start)
			t.Logf("%s: inserted %d records in %v: %.0f records/s", db.Dialect().Name(), inserted-from, d.Round(time.Millisecond),
				float64(inserted-from)/d.Seconds())
			if db.Dialect().Name() == "postgres" { // autovacuum is off on the test servers: vacuum and analyze as it would
				if _, err := db.Exec(context.Background(), `VACUUM ANALYZE custom_entity_records`); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The baseline, timed in the same loop: the same page and total by
		// hand-written SQL, reading the page from the field's index and
		// counting the matches (what a list without kept counts does).
		sc, _ := store.ScopeFrom(ctx)
		baseline := func(f string, value any) (int, int) {
			cond, param := "json_extract(data, '$."+f+"') = $2", value
			if db.Dialect().Name() == "postgres" {
				v := "(data -> '" + f + "')"
				cond = "(CASE WHEN octet_length(" + v + "::text) <= 1500 THEN " + v + " END) = $2::jsonb"
				b, _ := json.Marshal(value)
				param = string(b)
			}
			where := `tenant_id = $1 AND entity_id = '` + entity + `' AND deleted_at IS NULL AND ` + cond
			ids, err := store.Many(ctx, db, func(s store.Scanner) (string, error) {
				var id, data string
				return id, s.Scan(&id, &data)
			}, `SELECT id, data FROM custom_entity_records WHERE `+where+` ORDER BY id LIMIT 50`, sc.TenantID, param)
			if err != nil {
				t.Fatal(err)
			}
			var total int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM custom_entity_records WHERE `+where, sc.TenantID, param).Scan(&total); err != nil {
				t.Fatal(err)
			}
			return len(ids), total
		}
		measure := func() map[string]time.Duration {
			p50s := map[string]time.Duration{}
			for _, f := range []string{"category", "code", "amount"} {
				var times, baseTimes []time.Duration
				for i := range 200 {
					n := rng.IntN(inserted)
					value := record(n)[f]
					text := fmt.Sprint(value)
					if f == "amount" {
						text = strconv.Itoa(int(value.(float64)))
						value = int64(value.(float64))
					}
					start := time.Now()
					items, total, err := svc.ListRecords(ctx, entities.RecordQuery{EntityID: entity, PageSize: 50,
						Filters: []entities.Filter{{Key: f, Op: entities.OpEq, Values: []string{text}}}})
					times = append(times, time.Since(start))
					if err != nil {
						t.Fatal(err)
					}
					start = time.Now()
					baseItems, baseTotal := baseline(f, value)
					baseTimes = append(baseTimes, time.Since(start))
					if baseItems != len(items) || baseTotal != total {
						t.Fatalf("filter %s=%v: the service listed %d of %d, the baseline %d of %d", f, value, len(items), total, baseItems, baseTotal)
					}
					if i == 0 && (total == 0 || len(items) == 0) && f != "amount" {
						t.Fatalf("filter %s=%v found nothing", f, value)
					}
				}
				slices.Sort(times)
				slices.Sort(baseTimes)
				p50s[f] = times[len(times)/2]
				t.Logf("%s at %d records: list filtered by %s, page size 50: p50 %v, p99 %v (hand-written SQL with count(*): p50 %v, p99 %v)",
					db.Dialect().Name(), inserted, f,
					times[len(times)/2].Round(10*time.Microsecond), times[len(times)*99/100].Round(10*time.Microsecond),
					baseTimes[len(baseTimes)/2].Round(10*time.Microsecond), baseTimes[len(baseTimes)*99/100].Round(10*time.Microsecond))
			}
			return p50s
		}
		grow(target / 10)
		small := measure()
		grow(target)
		large := measure()
		for f, p := range large {
			t.Logf("%s: %s grew %.2f× from %d to %d records", db.Dialect().Name(), f, float64(p)/float64(small[f]), target/10, target)
		}
	}, entities.Migrations)
}
