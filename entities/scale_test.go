package entities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
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
// and count(*)) timed in the same loop; then the unfiltered lists
// (unfilteredLists) the same way, and the query plans of their page and
// total (explainUnfiltered). An unfiltered list in the default order or
// sorted by createdAt or updatedAt fails the test when its p50 at the
// target is over 5 ms or over 1.5 times its p50 at 10%, both measured
// alternately in one loop on a database of each size (issue 20).
func TestRecordsScale(t *testing.T) {
	target, _ := strconv.Atoi(os.Getenv("TENANTKIT_RECORDS_SCALE"))
	if target <= 0 {
		t.Skip("set TENANTKIT_RECORDS_SCALE (the issue's run: 1000000) to build and measure the data set")
	}
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		main := newScaleDB(t, db)
		svc, ctx := main.svc, main.ctx
		const entity = "bench.items"
		rng := rand.New(rand.NewPCG(1, 2))
		record := func(n int) map[string]any {
			return map[string]any{"category": fmt.Sprintf("cat-%02d", n%100), "code": fmt.Sprintf("C%08d", n),
				"amount": float64(rng.IntN(100000)), "title": fmt.Sprintf("Item %d", n), "notes": "Some notes about this item",
				"price": rng.Float64() * 1000, "active": n%2 == 0, "due": "2026-11-22", "phone": "+48 600 000 000",
				"owner": fmt.Sprintf("user-%d", n%500)}
		}
		grow := func(s *scaleDB, to int) {
			start := time.Now()
			from := s.inserted
			for s.inserted < to {
				batch := make([]map[string]any, min(1000, to-s.inserted))
				for i := range batch {
					batch[i] = record(s.inserted + i)
				}
				if _, err := s.svc.CreateRecords(s.ctx, entity, batch); err != nil {
					t.Fatal(err)
				}
				s.inserted += len(batch)
			}
			d := time.Since(start)
			t.Logf("%s: inserted %d records in %v: %.0f records/s", s.db.Dialect().Name(), s.inserted-from, d.Round(time.Millisecond),
				float64(s.inserted-from)/d.Seconds())
			if s.db.Dialect().Name() == "postgres" { // autovacuum is off on the test servers: vacuum and analyze as it would
				if _, err := s.db.Exec(context.Background(), `VACUUM ANALYZE custom_entity_records`); err != nil {
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
					n := rng.IntN(main.inserted)
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
					db.Dialect().Name(), main.inserted, f,
					times[len(times)/2].Round(10*time.Microsecond), times[len(times)*99/100].Round(10*time.Microsecond),
					baseTimes[len(baseTimes)/2].Round(10*time.Microsecond), baseTimes[len(baseTimes)*99/100].Round(10*time.Microsecond))
			}
			for _, l := range unfilteredLists {
				times, baseTimes := unfilteredTimes(t, main, l)
				p50s[l.name] = times[len(times)/2]
				t.Logf("%s at %d records: %s, page size 50: p50 %v, p99 %v (hand-written SQL with count(*), %d of the runs: p50 %v, p99 %v)",
					db.Dialect().Name(), main.inserted, l.name,
					times[len(times)/2].Round(10*time.Microsecond), times[len(times)*99/100].Round(10*time.Microsecond), len(baseTimes),
					baseTimes[len(baseTimes)/2].Round(10*time.Microsecond), baseTimes[len(baseTimes)*99/100].Round(10*time.Microsecond))
			}
			explainUnfiltered(t, db, ctx)
			return p50s
		}
		grow(main, target/10)
		small := measure()
		grow(main, target)
		large := measure()
		for _, f := range slices.Sorted(maps.Keys(large)) {
			p := large[f]
			t.Logf("%s: %s grew %.2f× from %d to %d records", db.Dialect().Name(), f, float64(p)/float64(small[f]), target/10, target)
		}
		// The unfiltered lists again, at both sizes under the same load: a
		// second database of 10% of the target, listed alternately with
		// the first. The goal is checked on these figures (a
		// machine shared with other work makes the two phases above run
		// under different loads).
		tenth := newScaleDB(t, openLike(t, db))
		grow(tenth, target/10)
		for _, l := range unfilteredLists {
			var smallTimes, largeTimes []time.Duration
			for i := range 200 {
				order := []*scaleDB{tenth, main}
				if i%2 == 1 { // alternate which goes first
					order = []*scaleDB{main, tenth}
				}
				for _, s := range order {
					d, _ := listUnfiltered(t, s, l)
					if s == main {
						largeTimes = append(largeTimes, d)
					} else {
						smallTimes = append(smallTimes, d)
					}
				}
			}
			slices.Sort(smallTimes)
			slices.Sort(largeTimes)
			p50s, p50l := smallTimes[len(smallTimes)/2], largeTimes[len(largeTimes)/2]
			growth := float64(p50l) / float64(p50s)
			t.Logf("%s, same loop: %s, page size 50: p50 %v, p99 %v at %d records; p50 %v, p99 %v at %d records; grew %.2f×",
				db.Dialect().Name(), l.name,
				p50s.Round(10*time.Microsecond), smallTimes[len(smallTimes)*99/100].Round(10*time.Microsecond), tenth.inserted,
				p50l.Round(10*time.Microsecond), largeTimes[len(largeTimes)*99/100].Round(10*time.Microsecond), main.inserted, growth)
			if l.goal && (p50l > 5*time.Millisecond || growth > 1.5) {
				t.Errorf("%s: %s misses the issue's goal (p50 ≤ 5 ms, growth ≤ 1.5×): p50 %v at %d, %v at %d",
					db.Dialect().Name(), l.name, p50l, main.inserted, p50s, tenth.inserted)
			}
		}
	}, entities.Migrations)
}

// scaleDB is one database of TestRecordsScale: its Service, the scope of
// its one tenant (with the bench entity defined) and how many records
// were inserted.
type scaleDB struct {
	db       *store.DB
	svc      *entities.Service
	ctx      context.Context
	inserted int
}

func newScaleDB(t *testing.T, db *store.DB) *scaleDB {
	t.Helper()
	s := &scaleDB{db: db, svc: must(entities.New(db, entities.Options{}))}
	s.ctx, _ = storetest.NewScope(t)
	defineBenchEntity(t, s.svc, s.ctx)
	return s
}

// openLike opens another new, migrated database on db's engine, closed
// when the test ends.
func openLike(t *testing.T, db *store.DB) *store.DB {
	t.Helper()
	url := storetest.SQLiteURL(t)
	if db.Dialect().Name() == "postgres" {
		url = storetest.IsolatedPostgresURL(t)
	}
	other, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if err := other.Migrate(t.Context(), entities.Migrations); err != nil {
		t.Fatal(err)
	}
	return other
}

// unfilteredList is one list of TestRecordsScale without a filter: page
// 1 (or page) of 50 of the whole entity with its exact total, in the
// order given, and the ORDER BY of the same page by hand-written SQL.
type unfilteredList struct {
	name      string
	page      int
	sortField string
	sortDir   string
	order     string
	// goal marks the lists the issue sets its goal for (page 1).
	goal bool
}

var unfilteredLists = []unfilteredList{
	{name: "unfiltered (id)", page: 1, order: "id", goal: true},
	{name: "unfiltered, createdAt desc", page: 1, sortField: "createdAt", sortDir: "desc", order: "created_at DESC, id DESC", goal: true},
	{name: "unfiltered, updatedAt desc", page: 1, sortField: "updatedAt", sortDir: "desc", order: "updated_at DESC, id DESC", goal: true},
	{name: "unfiltered, createdAt asc", page: 1, sortField: "createdAt", sortDir: "asc", order: "created_at, id", goal: true},
	{name: "unfiltered (id), page 100", page: 100, order: "id"},
	{name: "unfiltered, createdAt desc, page 100", page: 100, sortField: "createdAt", sortDir: "desc", order: "created_at DESC, id DESC"},
}

// unfilteredWhere is the predicate of the scale test's unfiltered lists by
// hand-written SQL: the tenant's live records of the entity (the test's
// scope reads every organization).
const unfilteredWhere = `tenant_id = $1 AND entity_id = 'bench.items' AND deleted_at IS NULL`

// listUnfiltered lists l through s's Service, checking the page's size and
// the total, and returns the time taken and the page's ids.
func listUnfiltered(t *testing.T, s *scaleDB, l unfilteredList) (time.Duration, []string) {
	t.Helper()
	start := time.Now()
	items, total, err := s.svc.ListRecords(s.ctx, entities.RecordQuery{EntityID: "bench.items", Page: l.page, PageSize: 50,
		SortField: l.sortField, SortDir: l.sortDir})
	d := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if total != s.inserted || len(items) != min(50, max(0, s.inserted-(l.page-1)*50)) {
		t.Fatalf("%s: the service listed %d of %d, %d inserted", l.name, len(items), total, s.inserted)
	}
	ids := make([]string, len(items))
	for i, r := range items {
		ids[i] = r.ID
	}
	return d, ids
}

// unfilteredTimes times l 200 times through the service and, every tenth
// time, by hand-written SQL right after it (the baseline's count(*) reads
// every record: at 1,000,000 records, about a second), checking that both
// give the same page (the same ids in the same order) and the total
// inserted.
func unfilteredTimes(t *testing.T, s *scaleDB, l unfilteredList) (times, baseTimes []time.Duration) {
	t.Helper()
	sc, _ := store.ScopeFrom(s.ctx)
	for i := range 200 {
		d, ids := listUnfiltered(t, s, l)
		times = append(times, d)
		if i%10 != 0 {
			continue
		}
		start := time.Now()
		baseIDs, err := store.Many(s.ctx, s.db, func(s store.Scanner) (string, error) {
			var id, data string
			return id, s.Scan(&id, &data)
		}, `SELECT id, data FROM custom_entity_records WHERE `+unfilteredWhere+` ORDER BY `+l.order+` LIMIT 50 OFFSET $2`,
			sc.TenantID, (l.page-1)*50)
		if err != nil {
			t.Fatal(err)
		}
		var baseTotal int
		if err := s.db.QueryRow(s.ctx, `SELECT count(*) FROM custom_entity_records WHERE `+unfilteredWhere, sc.TenantID).Scan(&baseTotal); err != nil {
			t.Fatal(err)
		}
		baseTimes = append(baseTimes, time.Since(start))
		if baseTotal != s.inserted || !slices.Equal(ids, baseIDs) {
			t.Fatalf("%s: the service listed %v of %d, the baseline %v of %d", l.name, ids, s.inserted, baseIDs, baseTotal)
		}
	}
	slices.Sort(times)
	slices.Sort(baseTimes)
	return times, baseTimes
}

// explainUnfiltered logs the plans of the unfiltered lists' page (in id
// and createdAt desc order) and of their total from the live-record
// counts as the SQL store runs them: EXPLAIN QUERY PLAN on SQLite,
// EXPLAIN ANALYZE on PostgreSQL, both with the parameters bound.
func explainUnfiltered(t *testing.T, db *store.DB, ctx context.Context) {
	t.Helper()
	sc, _ := store.ScopeFrom(ctx)
	prefix := "EXPLAIN QUERY PLAN "
	if db.Dialect().Name() == "postgres" {
		prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
	}
	cols := `id, entity_id, data, tenant_id, COALESCE(organization_id, ''), created_at, updated_at, deleted_at`
	for _, q := range []struct {
		name string
		sql  string
		args []any
	}{
		{"page, id order", `SELECT ` + cols + ` FROM custom_entity_records WHERE ` + unfilteredWhere + ` ORDER BY id ASC LIMIT $2 OFFSET $3`,
			[]any{sc.TenantID, 50, 0}},
		{"page, createdAt desc", `SELECT ` + cols + ` FROM custom_entity_records WHERE ` + unfilteredWhere +
			` ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, []any{sc.TenantID, 50, 0}},
		{"page 100, createdAt desc", `SELECT ` + cols + ` FROM custom_entity_records WHERE ` + unfilteredWhere +
			` ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, []any{sc.TenantID, 50, 4950}},
		{"total", `SELECT COALESCE(SUM(n), 0) FROM custom_entity_value_counts WHERE tenant_id = $1 AND entity_id = $2 AND field_key = $3`,
			[]any{sc.TenantID, "bench.items", ""}},
	} {
		rows, err := db.Query(ctx, prefix+q.sql, q.args...)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var line string
			if db.Dialect().Name() == "postgres" {
				err = rows.Scan(&line)
			} else { // id, parent, notused, detail
				var id, parent, notused int
				err = rows.Scan(&id, &parent, &notused, &line)
			}
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		t.Logf("%s: plan of the unfiltered %s:\n\t%s", db.Dialect().Name(), q.name, strings.Join(lines, "\n\t"))
	}
}
