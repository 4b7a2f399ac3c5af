//go:build !tenantkit_nopostgres

package storetest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantkit/tenantkit/store"
)

// VersionReads counts the reads of the store's version counters
// (store_versions) a PostgreSQL pool runs, alone or in a batch: a
// pgx.QueryTracer and pgx.BatchTracer for tests
// that prove a cache serves without reading its counter.
type VersionReads struct {
	N atomic.Int64 // the reads so far
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *VersionReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	if strings.Contains(q.SQL, "FROM store_versions") {
		c.N.Add(1)
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *VersionReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer: a transaction's queued
// statements (store.Tx.ExecLater) go to the server in a batch with the
// statement after them, which may be such a read.
func (c *VersionReads) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *VersionReads) TraceBatchQuery(_ context.Context, _ *pgx.Conn, q pgx.TraceBatchQueryData) {
	if strings.Contains(q.SQL, "FROM store_versions") {
		c.N.Add(1)
	}
}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *VersionReads) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// PostgresTraced opens a DB over url (IsolatedPostgresURL's, so that two
// such DBs share one database as two processes do) with tracer (nil for
// none) on its connections, migrated with lines and closed when the test
// ends.
func PostgresTraced(t testing.TB, url string, tracer pgx.QueryTracer, lines ...store.Migrations) *store.DB {
	t.Helper()
	db, _ := PostgresPool(t, url, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer }, lines...)
	return db
}

// PostgresPool opens a DB over url through a pgx pool whose configuration
// configure adjusts first (a tracer, a size), migrated with lines and
// closed when the test ends; it returns the pool too, for a test that
// reaches its connections (a server process's PID, idle connections'
// statistics). Without lines nothing is migrated, not even the store's
// own bookkeeping.
func PostgresPool(t testing.TB, url string, configure func(*pgxpool.Config), lines ...store.Migrations) (*store.DB, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, err := store.FromPool(t.Context(), pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if len(lines) > 0 {
		migrate(t, db, lines)
	}
	return db, pool
}
