//go:build !tenantkit_nopostgres

package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	clientMakers = append(clientMakers, newPgxClient)
}

// newPgxClient runs River on the pgx pool of the store's background work
// (store.DB.Background: its own connections, so that leader election and
// fetches never wait behind requests), with its tables in a schema of
// their own. Jobs inserted in a request's transaction go through that
// transaction's connection.
func newPgxClient(ctx context.Context, db *store.DB, cfg *river.Config, schema string) (client, bool, error) {
	pool, ok := db.Background().PgxPool()
	if !ok {
		return nil, false, nil
	}
	createSchema := func() error {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("jobs: create schema %s: %w", schema, err)
		}
		return nil
	}
	c, err := migrateAndConnect[pgx.Tx](ctx, db, riverpgxv5.New(pool), cfg, createSchema, nil)
	return c, true, err
}
