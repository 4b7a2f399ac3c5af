package store_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

func TestVersions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		name := "test." + store.NewID() // counters are global: a name of the test's own
		read := func(name string) int64 {
			v, err := store.ReadVersion(ctx, db, name)
			is.NoErr(err)
			return v
		}
		bump := func(name string) int64 {
			var v int64
			is.NoErr(db.Tx(ctx, func(tx *store.Tx) (err error) {
				v, err = tx.BumpVersion(ctx, name)
				return err
			}))
			return v
		}
		is.Equal(read(name), int64(0)) // unknown: 0
		is.Equal(bump(name), int64(1))
		is.Equal(bump(name), int64(2))
		is.Equal(read(name), int64(2))
		is.Equal(read(name+".other"), int64(0)) // counters are independent

		// A rolled-back bump leaves no trace.
		errBack := errors.New("roll back")
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.BumpVersion(ctx, name); err != nil {
				return err
			}
			return errBack
		})
		is.True(errors.Is(err, errBack))
		is.Equal(read(name), int64(2))

		// Concurrent bumps each get their own value.
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				v := bump(name)
				mu.Lock()
				defer mu.Unlock()
				seen[v] = true
			})
		}
		wg.Wait()
		is.Equal(len(seen), 8)
		is.Equal(read(name), int64(10))
	})
}
