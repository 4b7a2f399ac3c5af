//go:build !tenantkit_nopostgres

package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantkit/tenantkit/store"
)

// RowsSkipped is ExplainRows' Skipped: how many rows of table st's plan
// read and then left out by a filter, for tests that a list or a join
// reads the rows it returns, not every row of a table that keeps deleted
// ones.
func RowsSkipped(t testing.TB, db *store.DB, st Statement, table string, settings ...string) int {
	t.Helper()
	return ExplainRows(t, db, st, table, settings...).Skipped
}

// PlanRows is what a statement's plan did with the rows of a table, as
// ExplainRows counts them over every loop of every scan of the table.
type PlanRows struct {
	// Read is how many rows the scans read: those they returned and
	// those a filter left out.
	Read int
	// Skipped is how many of those a filter left out.
	Skipped int
	// Pages is how many pages the scans read (shared buffers hit or
	// read), their indexes' included: what a scan costs when an index
	// condition on a column after the first the scan ranges over leaves
	// entries out within the index, which Read does not count.
	Pages int
}

// ExplainRows runs st on db's PostgreSQL server as the server runs a
// prepared statement (its generic plan; planned for its values when the
// store sent it so, store.PlanEachRun) under EXPLAIN ANALYZE, and
// returns what the plan did with the rows of table (of every table when
// table is ""). settings are set
// first for the statement alone ("enable_nestloop = off", to force the
// plan a server was seen to choose). The statement runs in a transaction
// rolled back after, so a write (a DELETE the test examines) changes
// nothing. Work is counted in rows, not timed.
func ExplainRows(t testing.TB, db *store.DB, st Statement, table string, settings ...string) PlanRows {
	t.Helper()
	pool, ok := db.PgxPool()
	if !ok {
		t.Fatal("ExplainRows needs a PostgreSQL DB")
	}
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer func() { // best effort: the pool is the test's
		_, _ = conn.Exec(context.Background(), "ROLLBACK")
		_, _ = conn.Exec(context.Background(), "RESET ALL")
		_, _ = conn.Exec(context.Background(), "DEALLOCATE skipped_rows")
	}()
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	// A statement the store runs planned for its values (store.PlanEachRun,
	// sent as pgx's mode ahead of its arguments) is explained so.
	planMode := "plan_cache_mode = force_generic_plan"
	args := st.Args
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			planMode, args = "plan_cache_mode = force_custom_plan", args[1:]
		}
	}
	for _, s := range append([]string{planMode}, settings...) {
		if _, err := conn.Exec(ctx, "SET LOCAL "+s); err != nil {
			t.Fatalf("SET %s: %v", s, err)
		}
	}
	if _, err := conn.Exec(ctx, "PREPARE skipped_rows AS "+st.SQL); err != nil {
		t.Fatalf("PREPARE %s: %v", st.SQL, err)
	}
	params := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			params[i] = "NULL"
		case string:
			params[i] = sqlText(v)
		case []string: // an array literal, its elements quoted
			elems := make([]string, len(v))
			for j, e := range v {
				elems[j] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`
			}
			params[i] = sqlText("{" + strings.Join(elems, ",") + "}")
		case int, int32, int64, float64, bool:
			params[i] = fmt.Sprint(v)
		case time.Time: // an untyped literal: the prepared statement's parameter type reads it
			params[i] = "'" + v.UTC().Format(time.RFC3339Nano) + "'"
		default:
			t.Fatalf("ExplainRows: no SQL literal for a %T argument of %s", a, st.SQL)
		}
	}
	// EXECUTE takes no bound parameters: the arguments are literals.
	execute := "EXECUTE skipped_rows"
	if len(params) > 0 {
		execute += "(" + strings.Join(params, ", ") + ")"
	}
	var out []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+execute).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN %s: %v", st.SQL, err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) == 0 {
		t.Fatalf("EXPLAIN's plan %s: %v", out, err)
	}
	var rows PlanRows
	plans[0].Plan.count(table, &rows)
	return rows
}

// sqlText is v as a quoted SQL literal.
func sqlText(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// planNode is a node of EXPLAIN's JSON plan, with what ExplainRows
// counts. Its row counts are averages per loop.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Rows     int        `json:"Actual Rows"`
	Loops    int        `json:"Actual Loops"`
	Removed  int        `json:"Rows Removed by Filter"`
	Hit      int        `json:"Shared Hit Blocks"`
	Read     int        `json:"Shared Read Blocks"`
	Plans    []planNode `json:"Plans"`
}

// count adds what the plan's scans of table (of every table when table
// is "") did to rows (a write's own node names its table too, but reads
// nothing itself).
func (n planNode) count(table string, rows *PlanRows) {
	if n.Relation != "" && (table == "" || n.Relation == table) && strings.HasSuffix(n.Type, "Scan") {
		rows.Read += (n.Rows + n.Removed) * n.Loops
		rows.Skipped += n.Removed * n.Loops
		rows.Pages += n.Hit + n.Read
	}
	for _, c := range n.Plans {
		c.count(table, rows)
	}
}

// CheckRowsSkipped runs RowsSkipped, with settings, on each statement
// trips kept (RoundTrips.MarkedStatements) whose text holds part, and
// fails t for each whose plan read and left out more than most rows of
// table. It returns how many statements it checked, for the test to
// confirm that the reads it means were among them.
func CheckRowsSkipped(t testing.TB, db *store.DB, trips *RoundTrips, part, table string, most int, settings ...string) int {
	t.Helper()
	return checkPlans(t, db, trips, part, table, most, "rows read and left out", func(r PlanRows) int { return r.Skipped }, settings)
}

// CheckRowsRead is CheckRowsSkipped for every row the plans read, kept
// or left out: for a statement whose cost must follow what changed, not
// the table (a fold of the rows written since the last one).
func CheckRowsRead(t testing.TB, db *store.DB, trips *RoundTrips, part, table string, most int, settings ...string) int {
	t.Helper()
	return checkPlans(t, db, trips, part, table, most, "rows read", func(r PlanRows) int { return r.Read }, settings)
}

// CheckPagesRead is CheckRowsSkipped for the pages the plans' scans of
// table read (PlanRows.Pages).
func CheckPagesRead(t testing.TB, db *store.DB, trips *RoundTrips, part, table string, most int, settings ...string) int {
	t.Helper()
	return checkPlans(t, db, trips, part, table, most, "pages read", func(r PlanRows) int { return r.Pages }, settings)
}

// checkPlans is CheckRowsSkipped, CheckRowsRead and CheckPagesRead:
// measure picks what they bound, and what names it in a failure.
func checkPlans(t testing.TB, db *store.DB, trips *RoundTrips, part, table string, most int, what string,
	measure func(PlanRows) int, settings []string) int {
	t.Helper()
	checked := 0
	for _, st := range trips.MarkedStatements() {
		if !strings.Contains(st.SQL, part) {
			continue
		}
		checked++
		if n := measure(ExplainRows(t, db, st, table, settings...)); n > most {
			t.Errorf("%d %s of %s by\n%s", n, what, table, st.SQL)
		}
	}
	return checked
}
