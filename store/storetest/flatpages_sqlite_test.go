//go:build !tenantkit_nosqlite

package storetest

import (
	"testing"
)

// What FlatLists counts on SQLite follows what a read does: a count of a
// tenant's rows looks up every page of its index, so its pages grow with
// the tenant's rows and FlatLists would fail it; a page in the index's
// order looks up the same few pages at 20,000 rows as at 100,000.
func TestPagesReadFollowTheTable(t *testing.T) {
	t.Parallel()
	db, counter := openFlatSQLite(t, nil)
	count, page := flatItems(t, db, flatSQLiteSizes[0], flatSQLiteSizes[1])
	read := func(fn func() error) int {
		n, err := counter.read(t, fn)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small, large := read(count("small")), read(count("large"))
	t.Logf("a count: %d → %d pages", small, large)
	if small < 10 || !counter.grew(small, large) {
		t.Errorf("a count read %d pages of 20,000 rows and %d of 100,000; want them grown", small, large)
	}
	small, large = read(page("small")), read(page("large"))
	t.Logf("a page: %d → %d pages", small, large)
	if small == 0 || counter.grew(small, large) {
		t.Errorf("a page of 20 read %d pages of 20,000 rows and %d of 100,000; want a few, not grown", small, large)
	}
}
