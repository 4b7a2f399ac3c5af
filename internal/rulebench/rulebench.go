// Package rulebench forwards to internal/rulebenchtest, the benchmarks'
// fixture, for the one test that still imports it
// (httpapi/rules_bench_test.go). Delete it once that test imports
// rulebenchtest.
package rulebench

import (
	"context"

	"github.com/tenantkit/tenantkit/internal/rulebenchtest"
	"github.com/tenantkit/tenantkit/rules"
)

// Data is rulebenchtest.Data.
const Data = rulebenchtest.Data

// CreateSet is rulebenchtest.CreateSet.
func CreateSet(ctx context.Context, svc *rules.Service) error {
	return rulebenchtest.CreateSet(ctx, svc)
}
