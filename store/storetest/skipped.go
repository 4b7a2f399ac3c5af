//go:build !tenantkit_nopostgres

package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// RowsSkipped runs st on db's PostgreSQL server as the server runs a
// prepared statement (its generic plan) under EXPLAIN ANALYZE, and returns
// how many rows of table the plan read and then left out by a filter: for
// tests that a list or a join reads the rows it returns, not every row of
// a table that keeps deleted ones. settings are run first on the same
// connection ("enable_nestloop = off", to force the plan a server was seen
// to choose) and reset after. Work is counted in rows, not timed.
func RowsSkipped(t testing.TB, db *store.DB, st Statement, table string, settings ...string) int {
	t.Helper()
	pool, ok := db.PgxPool()
	if !ok {
		t.Fatal("RowsSkipped needs a PostgreSQL DB")
	}
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer func() { // best effort: the pool is the test's
		_, _ = conn.Exec(context.Background(), "RESET ALL")
		_, _ = conn.Exec(context.Background(), "DEALLOCATE skipped_rows")
	}()
	for _, s := range append([]string{"plan_cache_mode = force_generic_plan"}, settings...) {
		if _, err := conn.Exec(ctx, "SET "+s); err != nil {
			t.Fatalf("SET %s: %v", s, err)
		}
	}
	if _, err := conn.Exec(ctx, "PREPARE skipped_rows AS "+st.SQL); err != nil {
		t.Fatalf("PREPARE %s: %v", st.SQL, err)
	}
	params := make([]string, len(st.Args))
	for i, a := range st.Args {
		switch v := a.(type) {
		case string:
			params[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case int, int32, int64, bool:
			params[i] = fmt.Sprint(v)
		default:
			t.Fatalf("RowsSkipped: no SQL literal for a %T argument of %s", a, st.SQL)
		}
	}
	// EXECUTE takes no bound parameters: the arguments are literals.
	execute := "EXECUTE skipped_rows"
	if len(params) > 0 {
		execute += "(" + strings.Join(params, ", ") + ")"
	}
	var out []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+execute).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN %s: %v", st.SQL, err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) == 0 {
		t.Fatalf("EXPLAIN's plan %s: %v", out, err)
	}
	return plans[0].Plan.removed(table)
}

// planNode is a node of EXPLAIN's JSON plan, with what RowsSkipped counts.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Removed  int        `json:"Rows Removed by Filter"`
	Plans    []planNode `json:"Plans"`
}

// removed sums the rows of table the plan's nodes left out by a filter.
func (n planNode) removed(table string) int {
	r := 0
	if n.Relation == table {
		r = n.Removed
	}
	for _, c := range n.Plans {
		r += c.removed(table)
	}
	return r
}

// CheckRowsSkipped runs RowsSkipped, with settings, on each statement
// trips kept (RoundTrips.MarkedStatements) whose text holds part, and
// fails t for each whose plan read and left out more than most rows of
// table. It returns how many statements it checked, for the test to
// confirm that the reads it means were among them.
func CheckRowsSkipped(t testing.TB, db *store.DB, trips *RoundTrips, part, table string, most int, settings ...string) int {
	t.Helper()
	checked := 0
	for _, st := range trips.MarkedStatements() {
		if !strings.Contains(st.SQL, part) {
			continue
		}
		checked++
		if skipped := RowsSkipped(t, db, st, table, settings...); skipped > most {
			t.Errorf("%d rows of %s read and left out by\n%s", skipped, table, st.SQL)
		}
	}
	return checked
}
