package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
)

// TestBackgroundCheckpoint: what a file database commits reaches the
// database file from its write-ahead log without the writer checkpointing
// (its automatic checkpoint waits for a log about 40 MiB long), and the
// database closes with its checkpoints stopped.
func TestBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ckpt.db")
	db, err := store.Open(ctx, "sqlite:"+path, nil)
	is.NoErr(err)
	_, err = db.Exec(ctx, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`)
	is.NoErr(err)

	sizeOf := func(name string) int64 {
		fi, err := os.Stat(name)
		is.NoErr(err)
		return fi.Size()
	}
	before := sizeOf(path)
	body := strings.Repeat("x", 1000)
	for range 20 { // 2,000 KB in 20 commits: 500 pages, far below the writer's backstop
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			for range 100 {
				if _, err := tx.Exec(ctx, `INSERT INTO blobs (body) VALUES ($1)`, body); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	is.True(sizeOf(path+"-wal") > 2_000_000) // the commits are in the log

	deadline := time.Now().Add(10 * time.Second)
	for sizeOf(path) < before+2_000_000 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes 10 s after the commits (%d before them): nothing checkpointed it", sizeOf(path), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	is.NoErr(db.Close())

	// Reopened, everything is there.
	db, err = store.Open(ctx, "sqlite:"+path, nil)
	is.NoErr(err)
	defer db.Close()
	var n int
	is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM blobs`).Scan(&n))
	is.Equal(n, 2000)
}
