package attachments_test

import (
	"path/filepath"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/blobstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Every Blobs of the package passes the conformance suite: FSBlobs,
// MemBlobs, SQLBlobs on both engines and s3blobs.Blobs against a local S3
// server (versitygw; skipped, saying so, when it is not installed).
func TestBlobsConformance(t *testing.T) {
	t.Run("fs", func(t *testing.T) {
		b, err := attachments.NewFSBlobs(filepath.Join(t.TempDir(), "files"))
		if err != nil {
			t.Fatal(err)
		}
		blobstest.Run(t, func(*testing.T) attachments.Blobs { return b }, blobstest.Options{})
	})
	t.Run("mem", func(t *testing.T) {
		b := attachments.NewMemBlobs()
		blobstest.Run(t, func(*testing.T) attachments.Blobs { return b }, blobstest.Options{HoldsInMemory: true})
	})
	t.Run("sql", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			b := attachments.NewSQLBlobs(db)
			blobstest.Run(t, func(*testing.T) attachments.Blobs { return b }, blobstest.Options{})
		}, attachments.BlobMigrations)
	})
}
