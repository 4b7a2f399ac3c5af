package integrations_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/integrations/integrationstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		integrationstest.Run(t, func(*testing.T) (*store.DB, integrations.Store) { return db, integrations.NewSQLStore() })
	}, integrations.Migrations)
}
