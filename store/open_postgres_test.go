//go:build !tenantkit_nopostgres

package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

func TestFromPool(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	url := storetest.IsolatedPostgresURL(t)
	pool, err := pgxpool.New(ctx, url)
	is.NoErr(err)
	defer pool.Close()

	db, err := store.FromPool(ctx, pool, nil)
	is.NoErr(err)
	is.True(db.Schema() != "public") // the URL's search_path
	is.NoErr(db.Migrate(ctx, widgets))
	_, sc := storetest.NewScope(t)
	id, err := insertWidget(ctx, db, sc, "from a host pool", nil)
	is.NoErr(err)
	w, err := store.One(ctx, db, scanWidget, `SELECT id, name, enabled, data, note, created_at FROM widgets WHERE tenant_id = $1 AND id = $2`, sc.TenantID, id)
	is.NoErr(err)
	is.Equal(w.Name, "from a host pool")

	is.NoErr(db.Close())
	is.NoErr(pool.Ping(ctx)) // the host's pool stays open
}

// TestPostgresPools: the request pool's default size, and a Background
// pool of its own that shares the DB's commit listeners and closes with
// it.
func TestPostgresPools(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	url := storetest.IsolatedPostgresURL(t)
	db, err := store.Open(ctx, url, nil)
	is.NoErr(err)
	pool, _ := db.PgxPool()
	is.Equal(int(pool.Config().MaxConns), store.DefaultMaxConns())
	bg := db.Background()
	is.True(bg != db)
	bgPool, ok := bg.PgxPool()
	is.True(ok)
	is.True(bgPool != pool)
	is.Equal(int(bgPool.Config().MaxConns), store.DefaultBackgroundConns)
	var heard int
	db.OnCommit(func(context.Context, []store.Event) { heard++ })
	is.NoErr(db.Migrate(ctx))
	is.NoErr(bg.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.Emit(ctx, store.Event{Type: "test.background", TenantID: "t1"})
		return err
	}))
	is.Equal(heard, 1)   // the view's commits reach the DB's listeners
	is.NoErr(bg.Close()) // does nothing
	is.NoErr(bg.Ping(ctx))
	is.NoErr(db.Close())
	is.True(bg.Ping(ctx) != nil) // closed with the DB

	url += "&pool_max_conns=3"
	db, err = store.Open(ctx, url, &store.Options{BackgroundConns: -1})
	is.NoErr(err)
	defer db.Close()
	pool, _ = db.PgxPool()
	is.Equal(pool.Config().MaxConns, int32(3)) // the URL's size wins
	is.True(db.Background() == db)             // -1: one pool
}
