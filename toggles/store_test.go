package toggles_test

import (
	"os"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/toggles/togglestest"
)

// The SQL store passes the conformance suite on both engines, each
// subtest on a database of its own (toggles are global).
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	for _, engine := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", storetest.SQLiteURL},
		{"postgres", storetest.IsolatedPostgresURL},
	} {
		t.Run(engine.name, func(t *testing.T) {
			if engine.name == "postgres" && os.Getenv(storetest.PostgresEnv) == "" {
				t.Skipf("set %s to run the suite on PostgreSQL", storetest.PostgresEnv)
			}
			togglestest.Run(t, func(t *testing.T) (*store.DB, toggles.Store) {
				db, err := store.Open(t.Context(), engine.url(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				if err := db.Migrate(t.Context(), toggles.Migrations); err != nil {
					t.Fatal(err)
				}
				return db, toggles.NewSQLStore()
			})
		})
	}
}
