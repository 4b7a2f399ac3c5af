package storetest

import (
	"testing"

	"github.com/tenantkit/tenantkit/internal/searchcap"
)

// CapSearchTotals lowers the cap on free-text searches' totals
// (store.SearchTotalCap) to n for the rest of t, so that a test can show a
// capped total with a few rows. The cap is process-wide: a test that sets
// it must not run in parallel with tests whose searches match more than n
// rows.
func CapSearchTotals(t testing.TB, n int) {
	t.Helper()
	if n <= 0 {
		t.Fatalf("CapSearchTotals(%d): the cap must be positive", n)
	}
	prev := searchcap.Set(n)
	t.Cleanup(func() { searchcap.Set(prev) })
}
