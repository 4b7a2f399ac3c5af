package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestClaim: across processes (database handles) on one database, claims
// of one name with the same value coexist, a claim with another value
// conflicts while they are held, and a release withdraws a claim. On
// SQLite, one process's database, nothing conflicts.
func TestClaim(t *testing.T) {
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
		name := "claim-test-" + hex.EncodeToString(nonce[:]) // advisory locks span the database's schemas
		claim := func(db *store.DB, value string) (func(), bool) {
			t.Helper()
			release, conflict, err := db.Claim(ctx, name, value)
			if err != nil {
				t.Fatal(err)
			}
			return release, conflict
		}
		single := a.Dialect().SingleWriter()
		check := func(what string, conflict, want bool) {
			t.Helper()
			if single {
				want = false
			}
			if conflict != want {
				t.Errorf("%s: conflict %v, want %v", what, conflict, want)
			}
		}
		relA, conflict := claim(a, "shared store")
		check("the first claim", conflict, false)
		relB, conflict := claim(b, "shared store")
		check("the same value again", conflict, false)
		relC, conflict := claim(c, "this machine's disk")
		check("another value beside two", conflict, true)
		relC()
		relA()
		relB()
		relC, conflict = claim(c, "this machine's disk")
		check("another value once the others are released", conflict, false)
		relA, conflict = claim(a, "shared store")
		check("the first value beside the second", conflict, true)
		relA() // a claim holds a connection of the pool until released
		relC()
	})
}
