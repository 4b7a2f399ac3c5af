package progress_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/progress/progresstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		progresstest.Run(t, func(*testing.T) (*store.DB, progress.Store) { return db, progress.NewSQLStore() })
	}, progress.Migrations)
}
