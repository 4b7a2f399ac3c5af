package storetest

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// SQLitePlan returns the steps of SQLite's EXPLAIN QUERY PLAN of q with
// args bound, one a step ("SEARCH d USING INDEX …", "SCAN i"), for tests
// that a statement reads through the index meant for it.
func SQLitePlan(t testing.TB, db *store.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}
