package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestHoldLock: across processes (database handles) on one database, an
// exclusive hold excludes every other hold and a shared one every
// exclusive one; a release frees the lock. On SQLite, one process's
// database, every hold is granted.
func TestHoldLock(t *testing.T) {
	storetest.EachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		open := func() *store.DB {
			db, err := store.Open(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
		a, b, c := open(), open(), open()
		var nonce [6]byte
		_, _ = rand.Read(nonce[:])
		name := "holdlock-test-" + hex.EncodeToString(nonce[:]) // advisory locks span the database's schemas
		hold := func(db *store.DB, shared bool) (func(), bool) {
			t.Helper()
			release, ok, err := db.HoldLock(ctx, name, shared)
			if err != nil {
				t.Fatal(err)
			}
			return release, ok
		}
		single := a.Dialect().SingleWriter()
		check := func(what string, got, contended bool) {
			t.Helper()
			if want := single || !contended; got != want {
				t.Errorf("%s: granted %v, want %v", what, got, want)
			}
		}
		relA, ok := hold(a, false)
		check("the first exclusive hold", ok, false)
		_, ok = hold(b, false)
		check("an exclusive hold beside an exclusive one", ok, true)
		_, ok = hold(b, true)
		check("a shared hold beside an exclusive one", ok, true)
		relA()
		relB, ok := hold(b, true)
		check("a shared hold once the exclusive one is released", ok, false)
		relC, ok := hold(c, true)
		check("a second shared hold", ok, false)
		_, ok = hold(a, false)
		check("an exclusive hold beside shared ones", ok, true)
		relB()
		relC()
		relA, ok = hold(a, false)
		check("an exclusive hold once every shared one is released", ok, false)
		relA()
	})
}
