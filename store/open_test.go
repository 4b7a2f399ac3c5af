package store_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store/storetest"
)

func TestSQLiteConnectionSettings(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	db := storetest.SQLite(t)

	writer, ok := db.SQLPool()
	is.True(ok)
	is.Equal(writer.Stats().MaxOpenConnections, 1) // one writer
	for name, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1", "busy_timeout": "10000"} {
		var got string
		is.NoErr(writer.QueryRowContext(ctx, "PRAGMA "+name).Scan(&got))
		if got != want {
			t.Errorf("writer PRAGMA %s = %s, want %s", name, got, want)
		}
		is.NoErr(db.QueryRow(ctx, "PRAGMA "+name).Scan(&got)) // a reader
		if got != want {
			t.Errorf("reader PRAGMA %s = %s, want %s", name, got, want)
		}
	}
	var autoCheckpoint int // a backstop: checkpoints run in the background
	is.NoErr(writer.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&autoCheckpoint))
	is.Equal(autoCheckpoint, 10000)
	var queryOnly string
	is.NoErr(db.QueryRow(ctx, "PRAGMA query_only").Scan(&queryOnly))
	is.Equal(queryOnly, "1") // readers cannot write
	_, err := db.Query(ctx, "CREATE TABLE nope (x INTEGER)")
	is.True(err != nil)
}
