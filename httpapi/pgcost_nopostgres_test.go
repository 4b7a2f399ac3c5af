//go:build tenantkit_nopostgres

package httpapi

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// countedPostgres skips: this build has no PostgreSQL engine.
func countedPostgres(b *testing.B) (*store.DB, *pgCost) {
	b.Helper()
	b.Skip("built with tenantkit_nopostgres: no PostgreSQL engine")
	return nil, nil
}
