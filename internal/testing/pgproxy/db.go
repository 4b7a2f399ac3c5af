package pgproxy

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Databases opens a fresh PostgreSQL schema (storetest.IsolatedPostgresURL,
// skipped without one) with lines applied, twice: direct, connected to
// the server, to check what committed, and proxied, through a new Proxy.
// Both are closed when the test ends.
func Databases(t testing.TB, lines ...store.Migrations) (direct, proxied *store.DB, p *Proxy) {
	t.Helper()
	url := storetest.IsolatedPostgresURL(t)
	direct = open(t, url)
	if err := direct.Migrate(t.Context(), lines...); err != nil {
		t.Fatal(err)
	}
	p = New(t, url)
	return direct, open(t, p.URL()), p
}

func open(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
