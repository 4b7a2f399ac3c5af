//go:build !tenantkit_nopostgres

package attachments_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/internal/testing/pgproxy"
	"github.com/tenantkit/tenantkit/store"
)

// TestUploadKeepsFileWhenCommitUnknown: when an upload's COMMIT reaches
// PostgreSQL but its answer is lost (a killed connection, a request
// cancelled while it waited), the upload fails with ErrCommitUnknown and
// keeps its file: the row did commit here, and it must not name a file
// that is gone. The orphan sweep then leaves the file, as a row names it.
func TestUploadKeepsFileWhenCommitUnknown(t *testing.T) {
	t.Parallel()
	direct, db, proxy := pgproxy.Databases(t, attachments.Migrations)
	blobs := attachments.NewMemBlobs()
	svc := bareService(db, attachments.Options{Blobs: blobs})
	tn := newTenant(t)
	upload(t, svc, tn.ctx, "R0", "first.txt", []byte("first"), nil) // the tenant's partitions exist

	staged, err := svc.Stage(tn.ctx, "lost.txt", bytes.NewReader([]byte("lost answer")))
	if err != nil {
		t.Fatal(err)
	}
	proxy.LoseNextCommitAnswer()
	_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", Staged: staged})
	if !errors.Is(err, store.ErrCommitUnknown) {
		t.Fatalf("upload whose COMMIT answer was lost: %v, want ErrCommitUnknown", err)
	}
	var id string
	if err := direct.QueryRow(t.Context(), `SELECT id FROM attachments WHERE tenant_id = $1 AND file_name = 'lost.txt'`, tn.id).Scan(&id); err != nil {
		t.Fatalf("the upload's row: %v (the COMMIT reached the server, it should be there)", err)
	}
	key := tn.id + "/" + id + "/original"
	if got := blobBytes(t, blobs, key); string(got) != "lost answer" {
		t.Fatalf("the committed row's file holds %q, want the upload's bytes", got)
	}
	if _, err := svc.SweepOrphans(t.Context(), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := blobBytes(t, blobs, key); string(got) != "lost answer" {
		t.Errorf("after the orphan sweep the row's file holds %q", got)
	}
}
