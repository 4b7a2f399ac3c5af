package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestPoolStatsWaits: a transaction that finds the pool's connections
// taken is counted as a wait, with the time it waited, on each engine: a
// PostgreSQL request pool of one connection (which migrations do not
// deadlock: their lock is taken outside the pool), SQLite's one writer.
func TestPoolStatsWaits(t *testing.T) {
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		if strings.HasPrefix(url, "postgres") {
			url += "&pool_max_conns=1"
		}
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		defer db.Close()
		is.NoErr(db.Migrate(ctx))

		before := db.PoolStats()
		held, release := make(chan struct{}), make(chan struct{})
		holder := make(chan error, 1)
		go func() {
			holder <- db.Tx(ctx, func(tx *store.Tx) error {
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		waiter, waiting := make(chan error, 1), make(chan struct{})
		go func() {
			close(waiting)
			waiter <- db.Tx(ctx, func(tx *store.Tx) error { return nil })
		}()
		<-waiting
		// pgx counts a wait when it ends: hold the connection long enough
		// for the second transaction to be waiting for it.
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-waiter:
			t.Fatalf("the second transaction ended (%v) while the connection was held", err)
		default:
		}
		close(release)
		is.NoErr(<-holder)
		is.NoErr(<-waiter)

		after := db.PoolStats()
		is.Equal(after.Waits-before.Waits, int64(1))
		is.True(after.WaitTime > before.WaitTime) // the wait's time is counted
	})
}
