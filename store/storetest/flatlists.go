//go:build !tenantkit_nopostgres

package storetest

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// flatSlack is the growth in rows read FlatLists allows a case beside
// 1.5×: a handful of rows more (a kept count's rows, a page's lookups)
// is not a list reading its table.
const flatSlack = 300

// largeTablePlans are the planner settings under which FlatLists
// explains a statement: what a table of millions of rows gets for a page
// (walking an index in the page's order, looking up each row's matches)
// rather than what a table of thousands gets (reading it whole, joining
// by hash and sorting, cheaper there). Penalized, not forbidden: a
// statement with no other way still reads its table, and fails.
var largeTablePlans = []string{"enable_seqscan = off", "enable_hashjoin = off", "enable_mergejoin = off"}

// flatGuards holds the statement recorder of each database FlatLists
// opened, for GrowAndMeasure to find.
var flatGuards sync.Map // *store.DB → *RoundTrips

// flatTrips returns the recorder of db when FlatLists opened it.
func flatTrips(db *store.DB) (*RoundTrips, bool) {
	trips, ok := flatGuards.Load(db)
	if !ok {
		return nil, false
	}
	return trips.(*RoundTrips), true
}

// FlatLists runs a list-at-scale measurement (the function a
// TestXAtScale hands EachFresh) as a test that plain go test runs, on
// PostgreSQL (skipped without TENANTKIT_TEST_POSTGRES_URL): measure gets
// a migrated database whose statements are recorded, FlatSizes and no
// timed calls, and GrowAndMeasure, rather than timing each case, counts
// the rows each case's statements read (EXPLAIN ANALYZE of every read it
// ran, as the server runs it: ExplainRows, under largeTablePlans so that
// a small table gets the plan a large one gets) at both sizes, and fails
// the test for a case whose reads grew more than 1.5× (and more than
// flatSlack rows) from the first size to the second: the list would
// slow down as its table grows. A case whose work grows on purpose names
// why (ScaleCase.Grows) and is left out. Work is counted, never timed.
func FlatLists(t *testing.T, measure func(t *testing.T, db *store.DB, engine string, sizes []int, calls int),
	lines ...store.Migrations) {
	t.Helper()
	trips := &RoundTrips{}
	db := PostgresTraced(t, IsolatedPostgresURL(t), trips, lines...)
	flatGuards.Store(db, trips)
	t.Cleanup(func() { flatGuards.Delete(db) })
	measure(t, db, "PostgreSQL", FlatSizes, 0)
}

// guardFlat runs checkFlat and returns true when db is one of
// FlatLists'; it returns false for any other database.
func guardFlat(t *testing.T, db *store.DB, list string, sizes []int, seed func(tenant string, from, to int),
	cases func(tenant string, rows int) []ScaleCase) bool {
	t.Helper()
	trips, ok := flatTrips(db)
	if ok {
		checkFlat(t, db, trips, list, sizes, seed, cases)
	}
	return ok
}

// checkFlat is GrowAndMeasure for a database of FlatLists' (trips its
// recorder): it grows one tenant's rows to each of sizes, runs each case
// once at each size (the answers checked as when timed) and compares the
// rows their reads read.
func checkFlat(t *testing.T, db *store.DB, trips *RoundTrips, list string, sizes []int, seed func(tenant string, from, to int),
	cases func(tenant string, rows int) []ScaleCase) {
	t.Helper()
	tenant := store.NewID()
	reads := make([]map[string]int, len(sizes))
	var names []string
	seeded := 0
	for k, rows := range sizes {
		seed(tenant, seeded, rows)
		seeded = rows
		reads[k] = map[string]int{}
		for _, c := range cases(tenant, rows) {
			if c.Grows != "" {
				if k == 0 {
					FlatLeftOut(t, db, list+", "+c.Name, c.Grows)
				}
				continue
			}
			if k == 0 {
				names = append(names, c.Name)
			}
			n, err := rowsRead(t, db, trips, c.List)
			if err != nil {
				t.Fatalf("%s, %s at %d rows: %v", list, c.Name, rows, err)
			}
			reads[k][c.Name] = n
		}
	}
	first, last := reads[0], reads[len(reads)-1]
	for _, name := range names {
		checkGrowth(t, list+", "+name, first[name], last[name], sizes[0], seeded)
	}
}

// FlatCheck is FlatLists' check for a measurement that seeds a tenant of
// each size itself and times a case's calls of every size alternately
// (Interleaved): on a database of FlatLists', it calls each of fns (the
// case's call on a tenant of rows[i] rows) once, compares the rows they
// read as FlatLists does, and returns true, for the measurement to go on
// to its next case; on any other database it returns false. settings are
// planner settings beside largeTablePlans, for a list whose small
// tables' plans differ from a large one's in another way too.
func FlatCheck(t *testing.T, db *store.DB, name string, rows []int, fns []func() error, settings ...string) bool {
	t.Helper()
	trips, ok := flatTrips(db)
	if !ok {
		return false
	}
	read := make([]int, len(fns))
	for i, fn := range fns {
		n, err := rowsRead(t, db, trips, fn, settings...)
		if err != nil {
			t.Fatalf("%s at %d rows: %v", name, rows[i], err)
		}
		read[i] = n
	}
	checkGrowth(t, name, read[0], read[len(read)-1], rows[0], rows[len(rows)-1])
	return true
}

// FlatLeftOut is FlatCheck for a case whose reads grow with its table on
// purpose: on a database of FlatLists' it logs why and returns true, for
// the measurement to skip the case; on any other it returns false.
func FlatLeftOut(t *testing.T, db *store.DB, name, why string) bool {
	t.Helper()
	if _, ok := flatTrips(db); !ok {
		return false
	}
	t.Logf("%s: not checked, its reads grow with the table: %s", name, why)
	return true
}

// rowsRead calls fn and returns the rows its reads read, each explained
// as the server runs it under largeTablePlans.
func rowsRead(t *testing.T, db *store.DB, trips *RoundTrips, fn func() error, settings ...string) (int, error) {
	t.Helper()
	trips.takeStatements()
	trips.all.Store(true)
	err := fn()
	trips.all.Store(false)
	statements := trips.takeStatements()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range statements {
		if isRead(st.SQL) {
			n += ExplainRows(t, db, st, "", append(slices.Clip(largeTablePlans), settings...)...).Read
		}
	}
	return n, nil
}

// checkGrowth logs the rows a case read at two sizes and fails t when
// they grew more than 1.5× and more than flatSlack rows.
func checkGrowth(t *testing.T, name string, small, large, smallRows, largeRows int) {
	t.Helper()
	t.Logf("%s: %d → %d rows read at %d → %d rows", name, small, large, smallRows, largeRows)
	if grew(small, large) {
		t.Errorf("%s reads more as its table grows: %d rows read at %d rows, %d at %d", name, small, smallRows, large, largeRows)
	}
}

// isRead says whether sql is a statement ExplainRows can explain: a
// query, not a transaction's BEGIN or COMMIT.
func isRead(sql string) bool {
	head := strings.ToUpper(strings.TrimSpace(sql))
	return strings.HasPrefix(head, "SELECT") || strings.HasPrefix(head, "WITH") || strings.HasPrefix(head, "(")
}

// grew says whether a case that read small rows at the first size and
// large at the second reads more as its table grows: more than 1.5× and
// more than flatSlack rows more.
func grew(small, large int) bool { return large > small*3/2 && large > small+flatSlack }
