package storetest

import (
	"context"

	"github.com/tenantkit/tenantkit/internal/searchcap"
)

// WithSearchCap returns ctx with the cap on free-text searches' totals
// (store.SearchTotalCap) lowered to n (positive) for the lists called with
// it, so that a test shows a capped total with a few rows. Nothing outside
// tests sets it: the cap is not a setting.
func WithSearchCap(ctx context.Context, n int) context.Context {
	if n <= 0 {
		panic("storetest.WithSearchCap: the cap must be positive")
	}
	return searchcap.With(ctx, n)
}
