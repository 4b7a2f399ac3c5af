//go:build !tenantkit_nopostgres

package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	clientMakers = append(clientMakers, newPgxClient)
}

// newPgxClient runs River on the store's pgx pool, with its tables in a
// schema of their own. River's migrations run one transaction per version
// (a new enum value cannot be used in the transaction that adds it).
func newPgxClient(ctx context.Context, db *store.DB, cfg *river.Config, schema string) (client, bool, error) {
	pool, ok := db.PgxPool()
	if !ok {
		return nil, false, nil
	}
	driver := riverpgxv5.New(pool)
	err := db.WithLock(ctx, "tenantkit.migrate", func() error {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("jobs: create schema %s: %w", schema, err)
		}
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: quiet(cfg.Logger)})
		if err != nil {
			return err
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	})
	if err != nil {
		return nil, true, err
	}
	c, err := river.NewClient[pgx.Tx](driver, cfg)
	if err != nil {
		return nil, true, err
	}
	return riverClient[pgx.Tx]{c}, true, nil
}
