package attachments_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The chunks of a Put that never completed (a crash before its row was
// written) are removed by a full listing (the orphan sweep's) once an
// hour old; younger ones (a Put in progress) stay, and so do stored
// blobs.
func TestSQLBlobsRemovesOrphanChunks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		b := attachments.NewSQLBlobs(db)
		key := "orphans" + store.NewID()[:8] + "/a/original"
		if _, err := b.Put(ctx, key, bytes.NewReader([]byte("stored"))); err != nil {
			t.Fatal(err)
		}
		old, young := store.NewIDAt(time.Now().Add(-2*time.Hour)), store.NewID()
		for _, id := range []string{old, young} {
			if _, err := db.Exec(ctx, `INSERT INTO attachment_blob_chunks (blob_id, seq, data) VALUES ($1, 0, $2)`, id, []byte("crashed")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.List(ctx, ""); err != nil {
			t.Fatal(err)
		}
		count := func(id string) int {
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM attachment_blob_chunks WHERE blob_id = $1`, id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if count(old) != 0 || count(young) != 1 {
			t.Fatalf("after List(\"\"): %d chunks of the old crashed Put (want 0), %d of the young one (want 1)", count(old), count(young))
		}
		r, err := b.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Info().Size != 6 {
			t.Fatalf("the stored blob: %+v", r.Info())
		}
	}, attachments.BlobMigrations)
}
