package datasync_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/datasynctest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		datasynctest.Run(t, func(*testing.T) (*store.DB, datasync.Store) { return db, datasync.NewSQLStore() })
	}, datasync.Migrations)
}
