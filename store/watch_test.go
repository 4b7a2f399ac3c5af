package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

type bumpSeen struct {
	name string
	v    int64
}

// Two processes on one PostgreSQL database: the second's listener hears
// the first's committed bumps (not its rolled-back one), reports each
// (re)connection as ("", 0), reconnects after its connection is killed,
// and stops with Close.
func TestWatchVersions(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	url := storetest.IsolatedPostgresURL(t)
	open := func() *store.DB {
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db1, db2 := open(), open()
	is.NoErr(db1.Migrate(ctx))

	seen := make(chan bumpSeen, 100)
	stop := db2.WatchVersions(func(name string, v int64) { seen <- bumpSeen{name, v} })
	next := func(what string) bumpSeen {
		t.Helper()
		select {
		case b := <-seen:
			return b
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
			return bumpSeen{}
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case b := <-seen:
			t.Fatalf("%s: heard %+v", what, b)
		case <-time.After(300 * time.Millisecond):
		}
	}
	bump := func(name string) int64 {
		t.Helper()
		var v int64
		is.NoErr(db1.Tx(ctx, func(tx *store.Tx) (err error) {
			v, err = tx.BumpVersion(ctx, name)
			return err
		}))
		return v
	}

	is.Equal(next("the first connection"), bumpSeen{"", 0})
	st := db2.WatchStatus()
	is.True(st.Started && st.Listening && st.PID != 0)

	name := "test." + store.NewID()
	v := bump(name)
	start := time.Now()
	is.Equal(next("a bump"), bumpSeen{name, v})
	t.Logf("one bump heard after %v", time.Since(start))

	// A rolled-back bump notifies nothing.
	errBack := errors.New("roll back")
	err := db1.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.BumpVersion(ctx, name); err != nil {
			return err
		}
		return errBack
	})
	is.True(errors.Is(err, errBack))
	quiet("a rolled-back bump")

	// The listener's connection is killed: it reconnects, says so, and
	// hears the next bump.
	var killed bool
	is.NoErr(db1.QueryRow(ctx, `SELECT pg_terminate_backend($1, 5000)`, int64(st.PID)).Scan(&killed))
	is.True(killed)
	is.Equal(next("the reconnection"), bumpSeen{"", 0})
	st2 := db2.WatchStatus()
	is.True(st2.Listening && st2.PID != st.PID && st2.Reconnects == 1 && st2.LastError != "")
	v = bump(name)
	is.Equal(next("a bump after the reconnection"), bumpSeen{name, v})

	// An ended subscription hears nothing; Close stops the listener.
	stop()
	bump(name)
	quiet("an ended subscription")
	is.NoErr(db2.Close())
	st = db2.WatchStatus()
	is.True(!st.Started && !st.Listening)
}

// SQLite (one process) has no listener: WatchVersions does nothing.
func TestWatchVersionsSQLite(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := storetest.SQLite(t)
	called := false
	stop := db.WatchVersions(func(string, int64) { called = true })
	defer stop()
	is.NoErr(db.Tx(ctx, func(tx *store.Tx) error { _, err := tx.BumpVersion(ctx, "test.sqlite"); return err }))
	is.Equal(db.WatchStatus(), store.WatchStatus{})
	is.True(!called)
}
