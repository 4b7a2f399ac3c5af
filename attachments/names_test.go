package attachments_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A file keeps the last element of the name it was sent with, whatever
// the separator; names that are no names, and executables hidden behind a
// Windows stream suffix, are refused.
func TestUploadFileNames(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := newService(storetest.SQLite(t, attachments.Migrations), attachments.Options{})
	tn := newTenant(t)
	for sent, stored := range map[string]string{
		`..\..\win.ini`:       "win.ini",
		"../../etc/passwd":    "passwd",
		`C:\Users\me\a b.txt`: "a b.txt",
		"  report.txt ":       "report.txt",
	} {
		a := upload(t, svc, tn.ctx, "R1", sent, []byte("text"), nil)
		is.Equal(a.FileName, stored)
	}
	for _, name := range []string{"/", ".", "..", `a\`, "   "} {
		_, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: name, File: bytes.NewReader([]byte("x"))})
		is.True(errors.Is(err, store.ErrInvalid)) // not a file name
	}
	for _, name := range []string{"x.ExE::$DATA", "run.bat:stream", "page.html:x"} {
		_, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: name, File: bytes.NewReader([]byte("x"))})
		is.True(errors.Is(err, attachments.ErrExecutable) || errors.Is(err, attachments.ErrActiveContent)) // refused by its extension
	}
}

// Storage keeps at most 32 resized sizes of one attachment: asking for a
// 33rd drops the stored ones, and every request still gets its image.
func TestImageSizesStoredAreBounded(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	blobs := attachments.NewMemBlobs()
	svc := newService(storetest.SQLite(t, attachments.Migrations), attachments.Options{Blobs: blobs})
	tn := newTenant(t)
	a := upload(t, svc, tn.ctx, "R1", "p.png", pngImage(t, 40, 30), nil)
	f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
	is.NoErr(err)
	thumbs := func() int { return len(blobKeys(t, blobs, tn.id+"/"+a.ID+"/thumbs/")) }
	for w := 1; w <= 33; w++ {
		b, typ, err := svc.Image(tn.ctx, f, w, 10, "cover")
		is.NoErr(err)
		is.Equal(typ, "image/png")
		is.True(b.Info().Size > 0)
		is.NoErr(b.Close())
		if w <= 32 {
			is.Equal(thumbs(), w) // each size is stored
		}
	}
	is.Equal(thumbs(), 1) // the 33rd dropped the 32 before it
}
