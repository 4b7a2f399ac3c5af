//go:build !tenantkit_nosqlite

package jobs

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	clientMakers = append(clientMakers, newSQLiteClient)
}

// newSQLiteClient runs River on the store's single writer connection: River
// does its own concurrent work, and SQLite allows one writer at a time.
func newSQLiteClient(ctx context.Context, db *store.DB, cfg *river.Config, _ string) (client, bool, error) {
	pool, ok := db.SQLPool()
	if !ok {
		return nil, false, nil
	}
	driver := riversqlite.New(pool)
	cfg.Schema = "" // SQLite has no schemas; River's tables sit beside ours.
	err := db.WithLock(ctx, "tenantkit.migrate", func() error {
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet(cfg.Logger)})
		if err != nil {
			return err
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	})
	if err != nil {
		return nil, true, err
	}
	c, err := river.NewClient[*sql.Tx](driver, cfg)
	if err != nil {
		return nil, true, err
	}
	return riverClient[*sql.Tx]{c}, true, nil
}
