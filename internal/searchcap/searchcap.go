// Package searchcap carries a lower cap on free-text searches' totals in
// a context (storetest.WithSearchCap), so that a test can show a capped
// total with a few rows instead of seeding store.SearchTotalCap of them,
// without changing the cap of any other test running beside it.
package searchcap

import "context"

type key struct{}

// With returns ctx carrying the cap n.
func With(ctx context.Context, n int) context.Context { return context.WithValue(ctx, key{}, n) }

// Get returns the cap ctx carries, or def when it carries none.
func Get(ctx context.Context, def int) int {
	if n, ok := ctx.Value(key{}).(int); ok && n > 0 {
		return n
	}
	return def
}
