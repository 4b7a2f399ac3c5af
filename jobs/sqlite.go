//go:build !tenantkit_nosqlite

package jobs

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	clientMakers = append(clientMakers, newSQLiteClient)
}

// newSQLiteClient runs River on the store's single writer connection: River
// does its own concurrent work, and SQLite allows one writer at a time.
// SQLite has no schemas, so River's tables sit beside ours.
func newSQLiteClient(ctx context.Context, db *store.DB, cfg *river.Config, _ string) (client, bool, error) {
	pool, ok := db.SQLPool()
	if !ok {
		return nil, false, nil
	}
	cfg.Schema = ""
	c, err := migrateAndConnect[*sql.Tx](ctx, db, riversqlite.New(pool), cfg, nil)
	return c, true, err
}
