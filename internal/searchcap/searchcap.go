// Package searchcap holds how many matches a free-text search's total
// counts at most (store.SearchTotalCap unless a test lowered it through
// storetest.CapSearchTotals), so that tests can cap totals at a few rows
// instead of seeding 10,000.
package searchcap

import "sync/atomic"

var n atomic.Int64

// Get returns the cap in force, or def when none was set.
func Get(def int) int {
	if v := n.Load(); v > 0 {
		return int(v)
	}
	return def
}

// Set sets the cap (0: back to the default) and returns the previous
// setting.
func Set(v int) int { return int(n.Swap(int64(v))) }
