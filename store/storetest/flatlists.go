package storetest

import (
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// flatCounter counts the work of a list's reads on one database of
// FlatLists': rows read on PostgreSQL (flatlists_postgres.go), pages read
// on SQLite (flatpages_sqlite.go).
type flatCounter struct {
	// unit names what read counts, for messages ("rows", "pages").
	unit string
	// slack is the growth beside 1.5× that is not a list reading its
	// table: a kept count's rows, one more level of an index.
	slack int
	// read calls fn and returns the work its reads did. settings are
	// PostgreSQL planner settings (FlatCheck's); SQLite ignores them.
	read func(t *testing.T, fn func() error, settings ...string) (int, error)
}

// grew says whether a case that did small work at the first size and
// large at the second does more as its table grows: more than 1.5× and
// more than the counter's slack.
func (c *flatCounter) grew(small, large int) bool { return large > small*3/2 && large > small+c.slack }

// flatEngine opens a database for FlatLists on one engine: migrated, its
// reads counted. An engine a build leaves out registers none.
type flatEngine struct {
	name, label string // subtest name, engine name for reports
	sizes       []int  // the two sizes a tenant's table grows to
	open        func(t *testing.T, lines []store.Migrations) (*store.DB, *flatCounter)
}

// flatEngines are the engines this build has, in the order FlatLists
// runs them (registered by the engines' files' init).
var flatEngines []flatEngine

// flatGuards holds the counter of each database FlatLists opened, for
// GrowAndMeasure to find.
var flatGuards sync.Map // *store.DB → *flatCounter

// flatCounterOf returns the counter of db when FlatLists opened it.
func flatCounterOf(db *store.DB) (*flatCounter, bool) {
	c, ok := flatGuards.Load(db)
	if !ok {
		return nil, false
	}
	return c.(*flatCounter), true
}

// FlatGuarded says whether db is one of FlatLists' (its reads counted,
// not timed), for a measurement whose seed must differ there: a log
// spread over days at sizes far smaller than those it is timed at.
func FlatGuarded(db *store.DB) bool {
	_, ok := flatCounterOf(db)
	return ok
}

// FlatLists runs a list-at-scale measurement (the function a
// TestXAtScale hands EachFresh) as a test that plain go test runs, on
// each engine (PostgreSQL skipped without TENANTKIT_TEST_POSTGRES_URL):
// measure gets a migrated database whose reads are counted, the engine's
// two sizes (FlatSizes on PostgreSQL, twice them on SQLite) and no timed
// calls, and GrowAndMeasure, rather than timing each case,
// counts the work each case's reads do at both sizes, and fails the test
// for a case whose work grew more than 1.5× (and more than a slack) from
// the first size to the second: the list would slow down as its table
// grows. A case whose work grows on purpose names why (ScaleCase.Grows)
// and is left out. Work is counted, never timed:
//
//   - on PostgreSQL, the rows its table scans read: every read a case
//     sent, explained as the server runs it (ExplainRows, under
//     largeTablePlans, so that a small table gets the plan a large one
//     gets);
//   - on SQLite, the pages its reads looked up (the connections' page
//     cache hits and misses): a page of a list touches the index levels
//     and the page's rows, a read of the whole table every page of it.
//     SQLite's plans do not change with a table's size (the store
//     gathers no statistics), so the plan at 20,000 rows is the plan at a
//     million.
func FlatLists(t *testing.T, measure func(t *testing.T, db *store.DB, engine string, sizes []int, calls int),
	lines ...store.Migrations) {
	t.Helper()
	if len(flatEngines) == 0 {
		t.Skip("FlatLists: this build has no engine")
	}
	for _, e := range flatEngines {
		t.Run(e.name, func(t *testing.T) {
			db, counter := e.open(t, lines)
			flatGuards.Store(db, counter)
			t.Cleanup(func() { flatGuards.Delete(db) })
			measure(t, db, e.label, e.sizes, 0)
		})
	}
}

// guardFlat runs checkFlat and returns true when db is one of
// FlatLists'; it returns false for any other database.
func guardFlat(t *testing.T, db *store.DB, list string, sizes []int, seed func(tenant string, from, to int),
	cases func(tenant string, rows int) []ScaleCase) bool {
	t.Helper()
	counter, ok := flatCounterOf(db)
	if ok {
		checkFlat(t, db, counter, list, sizes, seed, cases)
	}
	return ok
}

// checkFlat is GrowAndMeasure for a database of FlatLists': it grows one
// tenant's rows to each of sizes, runs each case once at each size (the
// answers checked as when timed) and compares the work their reads did.
func checkFlat(t *testing.T, db *store.DB, counter *flatCounter, list string, sizes []int, seed func(tenant string, from, to int),
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
			n, err := counter.read(t, c.List)
			if err != nil {
				t.Fatalf("%s, %s at %d rows: %v", list, c.Name, rows, err)
			}
			reads[k][c.Name] = n
		}
	}
	first, last := reads[0], reads[len(reads)-1]
	for _, name := range names {
		checkGrowth(t, counter, list+", "+name, first[name], last[name], sizes[0], seeded)
	}
}

// FlatCheck is FlatLists' check for a measurement that seeds a tenant of
// each size itself and times a case's calls of every size alternately
// (Interleaved): on a database of FlatLists', it calls each of fns (the
// case's call on a tenant of rows[i] rows) once, compares the work they
// did as FlatLists does, and returns true, for the measurement to go on
// to its next case; on any other database it returns false. settings are
// PostgreSQL planner settings beside largeTablePlans, for a list whose
// small tables' plans differ from a large one's in another way too.
func FlatCheck(t *testing.T, db *store.DB, name string, rows []int, fns []func() error, settings ...string) bool {
	t.Helper()
	counter, ok := flatCounterOf(db)
	if !ok {
		return false
	}
	read := make([]int, len(fns))
	for i, fn := range fns {
		n, err := counter.read(t, fn, settings...)
		if err != nil {
			t.Fatalf("%s at %d rows: %v", name, rows[i], err)
		}
		read[i] = n
	}
	checkGrowth(t, counter, name, read[0], read[len(read)-1], rows[0], rows[len(rows)-1])
	return true
}

// FlatLeftOut is FlatCheck for a case whose reads grow with its table on
// purpose: on a database of FlatLists' it logs why and returns true, for
// the measurement to skip the case; on any other it returns false.
func FlatLeftOut(t *testing.T, db *store.DB, name, why string) bool {
	t.Helper()
	if _, ok := flatCounterOf(db); !ok {
		return false
	}
	t.Logf("%s: not checked, its reads grow with the table: %s", name, why)
	return true
}

// checkGrowth logs the work a case did at two sizes and fails t when it
// grew (flatCounter.grew).
func checkGrowth(t *testing.T, counter *flatCounter, name string, small, large, smallRows, largeRows int) {
	t.Helper()
	t.Logf("%s: %d → %d %s read at %d → %d rows", name, small, large, counter.unit, smallRows, largeRows)
	if counter.grew(small, large) {
		t.Errorf("%s reads more as its table grows: %d %s read at %d rows, %d at %d", name, small, counter.unit,
			smallRows, large, largeRows)
	}
}
