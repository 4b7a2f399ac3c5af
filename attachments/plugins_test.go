package attachments_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Without plug-ins (no Images, no Extractor) the area still works: the
// image route's Image serves the original, unresized, for any valid size
// and makes nothing; web images are still images; sizes are checked
// alike; and no text is read (OCR apart), so content stays null.
func TestWithoutPlugins(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := bareService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		img := pngImage(t, 40, 30)
		a := upload(t, svc, tn.ctx, "R1", "photo.png", img, nil)
		f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		is.True(svc.IsImage(f))
		b, typ, err := svc.Image(tn.ctx, f, 16, 12, attachments.Cover)
		is.NoErr(err)
		got, err := io.ReadAll(b)
		is.NoErr(err)
		is.NoErr(b.Close())
		is.True(bytes.Equal(got, img)) // the original
		is.Equal(typ, "image/png")
		is.Equal(blobKeys(t, blobs, tn.id+"/"+a.ID+"/"), []string{tn.id + "/" + a.ID + "/original"})
		_, _, err = svc.Image(tn.ctx, f, attachments.MaxImageSize+1, 12, attachments.Contain)
		is.True(errors.Is(err, store.ErrInvalid))

		txt := upload(t, svc, tn.ctx, "R1", "notes.txt", testdata(t, "notes.txt"), nil)
		ft, err := svc.Lookup(tn.ctx, txt.ID, attachments.Scoped)
		is.NoErr(err)
		is.True(!svc.IsImage(ft))
		_, _, err = svc.Image(tn.ctx, ft, 10, 10, attachments.Cover)
		is.True(errors.Is(err, attachments.ErrNotImage))
		is.NoErr(svc.ExtractContent(t.Context(), tn.id, txt.ID))
		is.Equal(content(t, svc, tn, txt.ID), "<nil>")

		// OCR alone still reads images.
		ocr := bareService(db, attachments.Options{Blobs: blobs, OCR: answeringOCR{text: "from OCR"}})
		is.NoErr(ocr.ExtractContent(t.Context(), tn.id, a.ID))
		is.Equal(content(t, svc, tn, a.ID), "from OCR")
	}, attachments.Migrations)
}
