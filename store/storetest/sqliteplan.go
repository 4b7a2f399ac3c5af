package storetest

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// SQLitePlan returns the steps of SQLite's EXPLAIN QUERY PLAN of q with
// args bound, one a step ("SEARCH d USING INDEX …", "SCAN i"), for tests
// that a statement reads through the index meant for it.
//
// An EXPLAIN does not check the connection's copy of the schema against
// the database's, as a statement that reads does (and is prepared again
// when it changed): on a connection of the pool that last ran before an
// index was made, it would plan without that index. So SQLitePlan reads
// sqlite_master first, in the same read transaction, which brings the
// connection's schema up to date.
func SQLitePlan(t testing.TB, db *store.DB, q string, args ...any) []string {
	t.Helper()
	var steps []string
	err := db.ReadTx(t.Context(), func(tx *store.Tx) error {
		var n int
		if err := tx.QueryRow(t.Context(), `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
			return err
		}
		rows, err := tx.Query(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			steps = append(steps, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return steps
}
