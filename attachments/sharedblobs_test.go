package attachments_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/internal/s3test"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The service works the same on the stores several processes can share:
// text extraction (PDF and .docx parsers read through lazy ranged
// reads), resized images kept in the store, deletes, and the orphan
// sweep.
func TestServiceOnSharedBlobs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Run("sql", func(t *testing.T) { serviceOnBlobs(t, db, attachments.NewSQLBlobs(db)) })
		t.Run("s3", func(t *testing.T) { serviceOnBlobs(t, db, s3test.Start(t).Blobs(t, "svc")) })
	}, attachments.Migrations, attachments.BlobMigrations)
}

func serviceOnBlobs(t *testing.T, db *store.DB, blobs attachments.Blobs) {
	is := is.New(t)
	ctx := t.Context()
	svc := newService(db, attachments.Options{Blobs: blobs})
	tn := newTenant(t)

	pdf := upload(t, svc, tn.ctx, "R1", "report.pdf", testdata(t, "report.pdf"), nil)
	docx := upload(t, svc, tn.ctx, "R1", "minutes.docx", testdata(t, "minutes.docx"), nil)
	is.NoErr(svc.ExtractContent(ctx, tn.id, pdf.ID))
	is.NoErr(svc.ExtractContent(ctx, tn.id, docx.ID))
	is.True(strings.Contains(content(t, svc, tn, pdf.ID), "Invoice total 1234 EUR"))
	is.Equal(content(t, svc, tn, docx.ID), "Meeting minutes\nGrüße aus Zürich")

	img := upload(t, svc, tn.ctx, "R1", "p.png", pngImage(t, 90, 60), nil)
	f, err := svc.Lookup(tn.ctx, img.ID, attachments.Scoped)
	is.NoErr(err)
	b, typ, err := svc.Image(ctx, f, 30, 30, thumbs.Contain)
	is.NoErr(err)
	first, err := io.ReadAll(b)
	is.NoErr(err)
	b.Close()
	is.Equal(typ, "image/png")
	b, _, err = svc.Image(ctx, f, 30, 30, thumbs.Contain) // from the store now
	is.NoErr(err)
	again, err := io.ReadAll(b)
	is.NoErr(err)
	b.Close()
	is.True(bytes.Equal(first, again))
	is.Equal(len(blobKeys(t, blobs, tn.id+"/"+img.ID+"/")), 2) // the original and one size

	is.NoErr(svc.Delete(tn.ctx, img.ID))
	is.Equal(len(blobKeys(t, blobs, tn.id+"/"+img.ID+"/")), 0)

	// A file no attachment names goes at the sweep.
	orphan := tn.id + "/" + store.NewID() + "/original"
	_, err = blobs.Put(ctx, orphan, strings.NewReader("orphan"))
	is.NoErr(err)
	removed, err := svc.SweepOrphans(ctx, time.Now().Add(time.Minute))
	is.NoErr(err)
	is.True(removed >= 1)
	_, err = blobs.Stat(ctx, orphan)
	is.True(err != nil)
	is.Equal(len(blobKeys(t, blobs, tn.id+"/"+pdf.ID+"/")), 1) // named files stay
}
