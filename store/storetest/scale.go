package storetest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// ScaleRowsEnv lists the table sizes (comma-separated row counts, for
// example "100000,1000000") the list-at-scale measurements grow a table
// to; they are skipped when it is unset. ScaleCallsEnv is the number of
// timed calls per case (200 when unset).
const (
	ScaleRowsEnv  = "TENANTKIT_BENCH_LIST_ROWS"
	ScaleCallsEnv = "TENANTKIT_BENCH_LIST_CALLS"
)

// FlatSizes are the two sizes FlatLists grows a tenant's table to on
// PostgreSQL: large enough apart (5×) that a list reading its table grows
// as plainly in rows read as it would in time, small enough to seed in a
// second. On SQLite it uses twice these (flatSQLiteSizes).
var FlatSizes = []int{10000, 50000}

// ScaleCasesEnv, when set, names the cases a list-at-scale measurement
// times: comma-separated parts of case names ("search" times the cases
// whose name holds "search"). Unset, every case is timed.
const ScaleCasesEnv = "TENANTKIT_BENCH_LIST_CASES"

// caseSelected says whether ScaleCasesEnv selects the case named name.
func caseSelected(name string) bool {
	env := os.Getenv(ScaleCasesEnv)
	if env == "" {
		return true
	}
	for _, part := range strings.Split(env, ",") {
		if part = strings.TrimSpace(part); part != "" && strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// ScaleSizes returns the row counts of ScaleRowsEnv and the calls of
// ScaleCallsEnv, or skips the test when ScaleRowsEnv is unset. A
// measurement at scale is not a test: plain go test runs skip it.
func ScaleSizes(t testing.TB) (sizes []int, calls int) {
	t.Helper()
	env := os.Getenv(ScaleRowsEnv)
	if env == "" {
		t.Skipf("set %s (for example 100000,1000000) to measure", ScaleRowsEnv)
	}
	for _, s := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1000 {
			t.Fatalf("%s: %q is not a row count of at least 1000", ScaleRowsEnv, s)
		}
		sizes = append(sizes, n)
	}
	calls = 200
	if s := os.Getenv(ScaleCallsEnv); s != "" {
		var err error
		if calls, err = strconv.Atoi(s); err != nil || calls < 1 {
			t.Fatalf("%s: %q is not a positive count", ScaleCallsEnv, s)
		}
	}
	return sizes, calls
}

// EnvInt returns the positive integer in the environment variable name,
// or def when it is unset or not one: the knobs of the load measurements.
func EnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// EachFresh runs fn on each engine with a migrated database of its own:
// a SQLite file in a temporary directory, and a PostgreSQL schema made
// for the test and dropped when it ends (skipped when PostgresEnv is
// unset). engine is the engine's name for reports ("SQLite",
// "PostgreSQL").
func EachFresh(t *testing.T, fn func(t *testing.T, db *store.DB, engine string), lines ...store.Migrations) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t, lines...), "SQLite") })
	t.Run("postgres", func(t *testing.T) {
		db := open(t, IsolatedPostgresURL(t))
		migrate(t, db, lines)
		fn(t, db, "PostgreSQL")
	})
}

// Percentiles calls fn three times to warm up, then calls times, and
// returns the median and the 95th percentile of those calls' durations.
// It stops the test at fn's first error.
func Percentiles(t testing.TB, calls int, fn func() error) (p50, p95 time.Duration) {
	t.Helper()
	times := make([]time.Duration, 0, calls)
	for i := range calls + 3 {
		began := time.Now()
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		if i >= 3 {
			times = append(times, time.Since(began))
		}
	}
	slices.Sort(times)
	return times[len(times)/2], times[len(times)*95/100]
}

// Milliseconds is d in milliseconds, to the microsecond, for reports.
func Milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Analyze gathers the planner's statistics where a live database has
// them: on PostgreSQL (ANALYZE), whose autovacuum gathers them on its own
// a while after a bulk load, so that a measurement right after seeding
// does not time plans made for an empty table. On SQLite it does nothing:
// SQLite gathers none unless told, and the store never tells it (a
// single-tenant benchmark database's statistics would mislead its
// planner about many-tenant ones).
func Analyze(t testing.TB, db *store.DB) {
	t.Helper()
	if db.Dialect().Name() != "postgres" {
		return
	}
	if _, err := db.Exec(t.Context(), "ANALYZE"); err != nil {
		t.Fatalf("storetest: analyze: %v", err)
	}
}

// Vacuum has PostgreSQL's VACUUM (ANALYZE) run on tables, as its
// autovacuum does on a live database a while after rows are deleted or
// updated: the dead row versions and their index entries go, and the
// visibility map lets an index-only scan skip the table. A measurement
// on a server without autovacuum, as the tests' is, otherwise walks every
// dead version a seeding left. It logs what VACUUM could not remove (rows
// still visible to another session's snapshot). On SQLite it does
// nothing: a delete or update leaves no versions behind.
func Vacuum(t testing.TB, db *store.DB, tables ...string) {
	t.Helper()
	if db.Dialect().Name() != "postgres" {
		return
	}
	for _, table := range tables {
		if _, err := db.Exec(t.Context(), "VACUUM (ANALYZE) "+table); err != nil {
			t.Fatalf("storetest: vacuum %s: %v", table, err)
		}
		var live, dead int64
		if err := db.QueryRow(t.Context(), `SELECT n_live_tup, n_dead_tup FROM pg_stat_user_tables
			WHERE relid = to_regclass($1)`, table).Scan(&live, &dead); err != nil {
			t.Fatalf("storetest: vacuum %s: %v", table, err)
		}
		t.Logf("vacuumed %s: %d live, %d dead row versions left", table, live, dead)
	}
}

// ExplainEnv, when set, has Explain log the plans of the statements a
// measurement names.
const ExplainEnv = "TENANTKIT_BENCH_EXPLAIN"

// Explain logs, when ExplainEnv is set and the engine is PostgreSQL, the
// plan of sql with args as it runs (EXPLAIN (ANALYZE, BUFFERS)), under
// name.
func Explain(t testing.TB, db *store.DB, name, sql string, args ...any) {
	t.Helper()
	if os.Getenv(ExplainEnv) == "" || db.Dialect().Name() != "postgres" {
		return
	}
	lines, err := store.Many(t.Context(), db, func(s store.Scanner) (string, error) {
		var line string
		return line, s.Scan(&line)
	}, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		t.Fatalf("storetest: explain %s: %v", name, err)
	}
	t.Logf("plan of %s:\n%s", name, strings.Join(lines, "\n"))
}

// SeedRows inserts the rows from to to (exclusive) into table, row(i)
// giving the i-th row's values in the order of columns (a comma-separated
// list), in multi-row INSERTs of 1,000 rows per transaction: the fast way
// to grow a table for a measurement at scale, past the Store and so past
// anything it keeps beside the rows (kept counts: recount them after).
func SeedRows(t testing.TB, db *store.DB, table, columns string, from, to int, row func(i int) []any) {
	t.Helper()
	ins := store.NewBatchInsert(table, columns, "")
	ctx := t.Context()
	values := make([]any, 0, 1000*ins.Columns())
	for from < to {
		n := min(1000, to-from)
		values = values[:0]
		for i := range n {
			values = append(values, row(from+i)...)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := ins.InsertValues(ctx, tx, values); return err }); err != nil {
			t.Fatalf("storetest: seeding %s: %v", table, err)
		}
		from += n
	}
}

// ScaleCase is one list measured by MeasureList: its name in the report
// and a call that lists page 1 and checks what it got.
type ScaleCase struct {
	// Name names the case in the report.
	Name string
	// List lists page 1 and returns an error when its answer is wrong
	// (CheckPage).
	List func() error
	// Calls, when positive, caps the timed calls of this case (a slow
	// baseline measured beside the list).
	Calls int
	// Grows, when set, says why this case's work grows with its table
	// (a baseline, a search whose total is capped): FlatLists leaves it
	// out.
	Grows string
}

// MeasureList times calls of each case that ScaleCasesEnv selects (Percentiles) and logs a row of
// BENCHMARKS.md's tables for each: "| list, case | engine | rows | p50 |
// p95 |".
func MeasureList(t testing.TB, list, engine string, rows, calls int, cases ...ScaleCase) {
	t.Helper()
	for _, c := range cases {
		if !caseSelected(c.Name) {
			continue
		}
		n := calls
		if c.Calls > 0 {
			n = min(n, c.Calls)
		}
		p50, p95 := Percentiles(t, n, c.List)
		t.Logf("| %s, %s | %s | %d | %.2f ms | %.2f ms |", list, c.Name, engine, rows, Milliseconds(p50), Milliseconds(p95))
	}
}

// CheckPage returns an error unless a page of got rows of total matches
// want rows of wantTotal: a scale case's check of its list's answer.
func CheckPage(name string, got, total, want, wantTotal int) error {
	if got != want || total != wantTotal {
		return fmt.Errorf("%s: %d rows of %d, want %d of %d", name, got, total, want, wantTotal)
	}
	return nil
}

// MeasureGrowth times the cases of a small and a large table
// alternately, call by call, so that both see the same load (on a shared
// machine, a sequential measurement of one size after the other mostly
// measures how the load changed), and logs a row of BENCHMARKS.md's tables
// for each pair: "| list, case | engine | small → large | p50 small |
// p50 large | growth |". small and large list the same cases in the same
// order; a case's Calls caps its calls as in MeasureList.
func MeasureGrowth(t testing.TB, list, engine string, smallRows, largeRows, calls int, small, large []ScaleCase) {
	t.Helper()
	for i, c := range small {
		if !caseSelected(c.Name) {
			continue
		}
		n := calls
		if c.Calls > 0 {
			n = min(n, c.Calls)
		}
		p50, _ := Interleaved(t, n, []func() error{c.List, large[i].List})
		ps, pl := p50[0], p50[1]
		t.Logf("| %s, %s | %s | %d → %d | %.2f ms | %.2f ms | %.2f× |", list, c.Name, engine, smallRows, largeRows,
			Milliseconds(ps), Milliseconds(pl), float64(pl)/float64(max(ps, time.Microsecond)))
	}
}

// Interleaved times each of fns calls times (after 3 warm-up calls each),
// one call of each in turn, so that all of them see the same load, and
// returns each one's p50 and p95. An error of a call fails t.
func Interleaved(t testing.TB, calls int, fns []func() error) (p50, p95 []time.Duration) {
	t.Helper()
	times := make([][]time.Duration, len(fns))
	for i := range calls + 3 {
		for j, fn := range fns {
			began := time.Now()
			if err := fn(); err != nil {
				t.Fatal(err)
			}
			if i >= 3 {
				times[j] = append(times[j], time.Since(began))
			}
		}
	}
	for _, ts := range times {
		slices.Sort(ts)
		p50, p95 = append(p50, ts[len(ts)/2]), append(p95, ts[len(ts)*95/100])
	}
	return p50, p95
}

// GrowAndMeasure is the course of a list-at-scale measurement on one
// engine: it grows one tenant's rows to each of sizes in turn (seed adds
// the rows from..to of a tenant, kept counts and planner statistics
// included) and times the cases of that size (MeasureList); then, with
// more than one size, it seeds a second tenant with the first size's rows
// in the same table and times both tenants' cases alternately
// (MeasureGrowth): the growth from the first size to the last under one
// load. cases returns the cases of a tenant with rows rows. The calls per
// case are ScaleCallsEnv's (ScaleSizes), and every line logged is a row
// of BENCHMARKS.md's tables. On a database of FlatLists' it counts the
// work the cases' reads do instead (see FlatLists).
func GrowAndMeasure(t *testing.T, db *store.DB, list, engine string, sizes []int, calls int, seed func(tenant string, from, to int),
	cases func(tenant string, rows int) []ScaleCase) {
	t.Helper()
	if guardFlat(t, db, list, sizes, seed, cases) {
		return
	}
	large := store.NewID()
	seeded := 0
	for _, rows := range sizes {
		start := time.Now()
		seed(large, seeded, rows)
		seeded = rows
		t.Logf("seeded %d rows in %s", seeded, time.Since(start).Round(time.Second))
		MeasureList(t, list, engine, seeded, calls, cases(large, seeded)...)
	}
	if len(sizes) < 2 {
		return
	}
	small := store.NewID()
	seed(small, 0, sizes[0])
	MeasureGrowth(t, list, engine, sizes[0], seeded, calls, cases(small, sizes[0]), cases(large, seeded))
}
