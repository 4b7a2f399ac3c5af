package notifications_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/notifications/notificationstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		notificationstest.Run(t, func(*testing.T) (*store.DB, notifications.Store) { return db, notifications.NewSQLStore() })
	}, notifications.Migrations)
}
