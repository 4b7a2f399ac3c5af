package dashboards_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/dashboards/dashboardstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		dashboardstest.Run(t, func(*testing.T) (*store.DB, dashboards.Store) { return db, dashboards.NewSQLStore() })
	}, dashboards.Migrations)
}
