//go:build !tenantkit_nopostgres

package httpapi

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// countedPostgres opens a fresh PostgreSQL schema (skipped without
// TENANTKIT_TEST_POSTGRES_URL) through a pool whose every statement is
// counted, so that a benchmark reports its statements and round trips
// per request (pgCost). Each Exec, Query and QueryRow is one statement
// and one round trip, BEGIN and COMMIT included; a batch (a transaction's
// queued statements and the one after them, store.Tx.ExecLater) is one
// round trip of several statements.
func countedPostgres(b *testing.B) (*store.DB, *pgCost) {
	b.Helper()
	cost := &pgCost{}
	db, pool := storetest.PostgresPool(b, storetest.IsolatedPostgresURL(b), func(cfg *pgxpool.Config) {
		cfg.ConnConfig.Tracer = cost
		cfg.MaxConns = int32(store.DefaultMaxConns())
	})
	cost.pool = pool
	return db, cost
}
