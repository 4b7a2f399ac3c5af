//go:build !tenantkit_nopostgres

package storetest

import (
	"testing"
)

// What FlatLists counts follows what a read does: a count of a tenant's
// rows reads them all, so its reads grow with the tenant's rows and
// FlatLists would fail it; a page in an index's order reads the page,
// the same at 1,000 rows as at 5,000.
func TestRowsReadFollowTheTable(t *testing.T) {
	t.Parallel()
	db, counter := openFlatPostgres(t, nil)
	count, page := flatItems(t, db, 1000, 5000)
	read := func(fn func() error) int {
		n, err := counter.read(t, fn)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if small, large := read(count("small")), read(count("large")); small < 1000 || large < 5000 || !counter.grew(small, large) {
		t.Errorf("a count read %d rows of 1,000 and %d of 5,000; want all of them, and grown", small, large)
	}
	if small, large := read(page("small")), read(page("large")); small != 20 || large != 20 || counter.grew(small, large) {
		t.Errorf("a page of 20 read %d rows of 1,000 and %d of 5,000; want 20 each", small, large)
	}
}

// A bitmap index scan's rows are the entries its range holds, dead ones
// too; the table scan above it reads the live rows among them. Only the
// table scan counts, for one table or for every table.
func TestPlanRowsCountTableScansOnly(t *testing.T) {
	t.Parallel()
	plan := planNode{Type: "Aggregate", Rows: 1, Loops: 1, Plans: []planNode{{
		Type: "Bitmap Heap Scan", Relation: "counts", Rows: 35, Loops: 1, Removed: 2,
		Plans: []planNode{{Type: "Bitmap Index Scan", Rows: 490, Loops: 1}},
	}}}
	for _, table := range []string{"counts", ""} {
		var rows PlanRows
		plan.count(table, &rows)
		if rows.Read != 37 || rows.Skipped != 2 {
			t.Errorf("table %q: read %d, skipped %d; want 37 and 2", table, rows.Read, rows.Skipped)
		}
	}
	var rows PlanRows
	plan.count("other", &rows)
	if rows.Read != 0 {
		t.Errorf("another table's scans read %d rows of it", rows.Read)
	}
}
