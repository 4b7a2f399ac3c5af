package attachments_test

import (
	"bytes"
	"errors"
	"strings"
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

// bidiControls are the characters that change the direction text is
// shown in, which file names may not carry.
var bidiControls = []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c}

// fieldError is the message a validation error gives field, or "".
func fieldError(err error, field string) string {
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return ve.Fields[field]
	}
	return ""
}

// A name carrying a bidirectional control ("cat_\u202Egnp.zip" reads as
// "cat_piz.png") is refused, naming the file field; nothing is stored.
func TestUploadRefusesBidiControls(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	blobs := attachments.NewMemBlobs()
	svc := newService(storetest.SQLite(t, attachments.Migrations), attachments.Options{Blobs: blobs})
	tn := newTenant(t)
	for _, r := range bidiControls {
		name := "cat_" + string(r) + "gnp.zip"
		_, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: name, File: bytes.NewReader([]byte("x"))})
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(fieldError(err, "file"), "bidirectional") {
			t.Errorf("upload of %q: %v, want 400 naming file", name, err)
		}
	}
	is.Equal(blobKeys(t, blobs, tn.id+"/"), []string{})
	// Other non-ASCII names stay.
	is.Equal(upload(t, svc, tn.ctx, "R1", "Ärger – résumé.txt", []byte("x"), nil).FileName, "Ärger – résumé.txt")
}

// A PATCH may rename a file under an upload's rules, keeping its
// extension; a refusal names fileName and changes nothing.
func TestRename(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)
		a := upload(t, svc, tn.ctx, "R1", "report.pdf", []byte("%PDF-1.4\n%%EOF\n"), nil)
		rename := func(name string) (*attachments.Attachment, error) {
			return svc.Update(tn.ctx, a.ID, attachments.Patch{FileName: &name})
		}
		got, err := rename(`C:\tmp\Annual report 2025.PDF `)
		is.NoErr(err)
		is.Equal(got.FileName, "Annual report 2025.PDF") // last element, trimmed; the extension's case may change
		stored, _, err := svc.Get(tn.ctx, a.ID)
		is.NoErr(err)
		is.Equal(stored.FileName, "Annual report 2025.PDF")
		evs := events(t, db, tn.id, attachments.EventUpdated)
		is.Equal(len(evs), 1)
		is.Equal(evs[0]["fileName"], "Annual report 2025.PDF")
		_, err = rename("Annual report 2025.PDF") // the same name: nothing changes
		is.NoErr(err)
		is.Equal(len(events(t, db, tn.id, attachments.EventUpdated)), 1)

		for _, c := range []struct{ name, want string }{
			{"report\u202Efdp.txt", "bidirectional"},
			{"report\u2066.pdf", "bidirectional"},
			{"report.exe.pdf", "Executable"},
			{"report.html.pdf", "Active content"},
			{"  ", "no name"},
			{"report.txt", "keeps its extension"},
			{"report", "keeps its extension"},
		} {
			_, err := rename(c.name)
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(fieldError(err, "fileName"), c.want) {
				t.Errorf("rename to %q: %v, want 400 naming fileName (%s)", c.name, err, c.want)
			}
		}
		stored, _, err = svc.Get(tn.ctx, a.ID)
		is.NoErr(err)
		is.Equal(stored.FileName, "Annual report 2025.PDF")
		is.Equal(len(events(t, db, tn.id, attachments.EventUpdated)), 1)
	}, attachments.Migrations)
}
