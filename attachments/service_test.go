package attachments_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

func boolp(b bool) *bool { return &b }

// The defaults are made on first use, once, however many ask at once;
// partitions are created, updated and deleted under the rules of the
// area.
func TestPartitions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)

		// Ten first requests at once make the two defaults once.
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for range 10 {
			wg.Go(func() {
				_, err := svc.Partitions(tn.ctx)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			is.NoErr(err)
		}
		list, err := svc.Partitions(tn.ctx)
		is.NoErr(err)
		is.Equal(len(list), 2)
		byCode := map[string]*attachments.Partition{}
		for _, p := range list {
			byCode[p.Code] = p
		}
		pub, priv := byCode[attachments.PublicPartition], byCode[attachments.PrivatePartition]
		is.True(pub != nil && priv != nil)
		is.True(pub.IsPublic)     // productsMedia is public
		is.True(!priv.IsPublic)   // privateAttachments is private
		is.True(pub.RequiresOcr)  // defaults extract text
		is.True(priv.RequiresOcr) // defaults extract text
		is.Equal(pub.EnvKey, "ATTACHMENTS_PARTITION_PRODUCTS_MEDIA_ROOT")
		is.Equal(priv.EnvKey, "ATTACHMENTS_PARTITION_PRIVATE_ATTACHMENTS_ROOT")

		// Create: the flags default (public off, OCR on), the code is unique.
		_, err = svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: " invoices ", Title: "Invoices"})
		is.True(errors.Is(err, store.ErrInvalid)) // the code is taken as it is: surrounding space is refused
		p, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "invoices", Title: " Invoices ", Description: "Bills"})
		is.NoErr(err)
		is.Equal(p.Code, "invoices")
		is.Equal(p.Title, "Invoices")
		is.True(!p.IsPublic)
		is.True(p.RequiresOcr)
		is.Equal(p.EnvKey, "ATTACHMENTS_PARTITION_INVOICES_ROOT")
		is.True(store.IsID(p.ID))
		_, err = svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "invoices", Title: "Again"})
		is.True(errors.Is(err, attachments.ErrPartitionExists))
		is.True(errors.Is(err, store.ErrConflict))
		_, err = svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: attachments.PublicPartition, Title: "Clash"})
		is.True(errors.Is(err, attachments.ErrPartitionExists)) // a default's code is taken too
		for _, bad := range []attachments.PartitionInput{
			{Code: "has space", Title: "x"},
			{Code: "", Title: "x"},
			{Code: strings.Repeat("a", 61), Title: "x"},
			{Code: "ok", Title: " "},
			{Code: "ok", Title: strings.Repeat("t", 201)},
			{Code: "ok", Title: "x", Description: strings.Repeat("d", 1001)},
		} {
			_, err := svc.CreatePartition(tn.ctx, bad)
			is.True(errors.Is(err, store.ErrInvalid)) // a bad partition input
		}
		scans, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "scans", Title: "Scans", IsPublic: boolp(true), RequiresOcr: boolp(false)})
		is.NoErr(err)
		is.True(scans.IsPublic && !scans.RequiresOcr)
		list, err = svc.Partitions(tn.ctx)
		is.NoErr(err)
		is.Equal(len(list), 4)

		// Update: title, description and flags change; the code cannot.
		upd, err := svc.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: p.ID, Code: "invoices", Title: "Bills", Description: "All bills",
			IsPublic: boolp(true)})
		is.NoErr(err)
		is.Equal(upd.Title, "Bills")
		is.Equal(upd.Description, "All bills")
		is.True(upd.IsPublic)
		is.True(upd.RequiresOcr) // a flag not given stays
		is.True(!upd.UpdatedAt.Before(p.UpdatedAt))
		_, err = svc.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: p.ID, Code: "renamed", Title: "Bills"})
		is.True(errors.Is(err, attachments.ErrCodeImmutable))
		_, err = svc.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: store.NewID(), Code: "invoices", Title: "Bills"})
		is.True(errors.Is(err, attachments.ErrPartitionNotFound))
		_, err = svc.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: "not-an-id", Code: "invoices", Title: "Bills"})
		is.True(errors.Is(err, store.ErrInvalid))
		list, err = svc.Partitions(tn.ctx)
		is.NoErr(err)
		for _, x := range list {
			if x.ID == p.ID {
				is.Equal(x.Title, "Bills") // the update is stored
				is.True(x.IsPublic)
			}
		}

		// Delete: not the defaults, not one in use; then it is gone.
		is.True(errors.Is(svc.DeletePartition(tn.ctx, pub.ID), attachments.ErrDefaultPartition))
		is.True(errors.Is(svc.DeletePartition(tn.ctx, priv.ID), attachments.ErrDefaultPartition))
		a := upload(t, svc, tn.ctx, "R1", "bill.txt", []byte("a bill"), func(in *attachments.UploadInput) { in.PartitionCode = "invoices" })
		err = svc.DeletePartition(tn.ctx, p.ID)
		is.True(errors.Is(err, attachments.ErrPartitionInUse))
		is.True(errors.Is(err, store.ErrConflict))
		is.NoErr(svc.Delete(tn.ctx, a.ID))
		is.NoErr(svc.DeletePartition(tn.ctx, p.ID))
		is.True(errors.Is(svc.DeletePartition(tn.ctx, p.ID), attachments.ErrPartitionNotFound))
		is.True(errors.Is(svc.DeletePartition(tn.ctx, "nope"), attachments.ErrPartitionNotFound))
		list, err = svc.Partitions(tn.ctx)
		is.NoErr(err)
		is.Equal(len(list), 3)

		// Without a scope nothing happens.
		_, err = svc.Partitions(t.Context())
		is.True(errors.Is(err, store.ErrNoScope))
		_, err = svc.CreatePartition(t.Context(), attachments.PartitionInput{Code: "x", Title: "x"})
		is.True(errors.Is(err, store.ErrNoScope))
	}, attachments.Migrations)
}

// Locked partitions refuse every change with 403 and still list;
// NoDefaultOCR makes new partitions (the defaults too) skip extraction.
func TestPartitionOptions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		tn := newTenant(t)
		open := newService(db, attachments.Options{NoDefaultOCR: true})
		p, err := open.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "docs", Title: "Docs"})
		is.NoErr(err)
		is.True(!p.RequiresOcr) // NoDefaultOCR: a new partition skips extraction
		withOCR, err := open.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "scans", Title: "Scans", RequiresOcr: boolp(true)})
		is.NoErr(err)
		is.True(withOCR.RequiresOcr) // unless it asks for it
		list, err := open.Partitions(tn.ctx)
		is.NoErr(err)
		for _, x := range list {
			if attachments.IsDefaultPartition(x.Code) {
				is.True(!x.RequiresOcr) // NoDefaultOCR: the defaults skip extraction
			}
		}

		locked := newService(db, attachments.Options{PartitionsLocked: true})
		_, err = locked.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "more", Title: "More"})
		is.True(errors.Is(err, attachments.ErrPartitionsLocked))
		is.True(errors.Is(err, store.ErrForbidden))
		_, err = locked.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: p.ID, Code: "docs", Title: "Changed"})
		is.True(errors.Is(err, attachments.ErrPartitionsLocked))
		is.True(errors.Is(locked.DeletePartition(tn.ctx, p.ID), attachments.ErrPartitionsLocked))
		list, err = locked.Partitions(tn.ctx)
		is.NoErr(err)
		is.Equal(len(list), 4)
		for _, x := range list {
			if x.ID == p.ID {
				is.Equal(x.Title, "Docs") // the locked update changed nothing
			}
		}
	}, attachments.Migrations)
}

// An upload stores the file under a fresh id with its sniffed type, the
// uploader's organization, the record's link first, and emits the created
// event.
func TestUpload(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		img := pngImage(t, 8, 8)
		a := upload(t, svc, tn.ctx, "R1", "photo.txt", img, func(in *attachments.UploadInput) {
			in.Tags = []string{" red ", "blue", "red"}
			in.Assignments = []attachments.Assignment{{Type: "notes", ID: "N1", Label: "Note"}, {Type: "notes", ID: "N1"}}
		})
		is.True(store.IsID(a.ID))
		is.Equal(a.TenantID, tn.id)
		is.Equal(a.OrganizationID, tn.org)
		is.Equal(a.EntityID, "orders")
		is.Equal(a.RecordID, "R1")
		is.Equal(a.FileName, "photo.txt")
		is.Equal(a.FileSize, int64(len(img)))
		is.Equal(a.MimeType, "image/png") // sniffed from the bytes, not the name
		is.Equal(a.PartitionCode, attachments.PrivatePartition)
		is.Equal(a.Tags, []string{"red", "blue"})
		is.Equal(a.Assignments, []attachments.Assignment{{Type: "orders", ID: "R1"}, {Type: "notes", ID: "N1", Label: "Note"}})
		is.True(a.Content == nil)
		is.True(!a.CreatedAt.IsZero())

		got, p, err := svc.Get(tn.ctx, a.ID)
		is.NoErr(err)
		is.Equal(got.FileSize, a.FileSize)
		is.Equal(got.Tags, a.Tags)
		is.Equal(p.Code, attachments.PrivatePartition)
		is.Equal(blobKeys(t, blobs, ""), []string{tn.id + "/" + a.ID + "/original"})
		is.Equal(blobBytes(t, blobs, tn.id+"/"+a.ID+"/original"), img)
		is.Equal(usage(t, db, tn.id), int64(len(img)))

		evs := events(t, db, tn.id, attachments.EventCreated)
		is.Equal(len(evs), 1)
		is.Equal(evs[0]["id"], a.ID)
		is.Equal(evs[0]["organizationId"], tn.org)
		is.Equal(evs[0]["fileName"], "photo.txt")
		is.Equal(evs[0]["fileSize"], float64(len(img)))
		is.Equal(evs[0]["mimeType"], "image/png")
		is.Equal(evs[0]["partitionCode"], attachments.PrivatePartition)
		is.Equal(evs[0]["recordId"], "R1")

		// A named partition; a public one may be named.
		pub := upload(t, svc, tn.ctx, "R1", "logo.png", img, func(in *attachments.UploadInput) { in.PartitionCode = attachments.PublicPartition })
		is.Equal(pub.PartitionCode, attachments.PublicPartition)

		// Refusals keep nothing.
		before := blobKeys(t, blobs, "")
		for name, in := range map[string]attachments.UploadInput{
			"unknown partition": {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), PartitionCode: "nope"},
			"no entity":         {RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x")},
			"no record":         {EntityID: "orders", RecordID: " ", FileName: "a.txt", File: strings.NewReader("x")},
			"no file":           {EntityID: "orders", RecordID: "R1", FileName: "a.txt"},
			"no file name":      {EntityID: "orders", RecordID: "R1", FileName: " ", File: strings.NewReader("x")},
			"long file name":    {EntityID: "orders", RecordID: "R1", FileName: strings.Repeat("n", 252) + ".txt", File: strings.NewReader("x")},
			"empty tag":         {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), Tags: []string{"ok", " "}},
			"51 tags":           {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), Tags: manyTags(51)},
			"assignment, no id": {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), Assignments: []attachments.Assignment{{Type: "notes"}}},
			"custom field":      {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), CustomFields: map[string]any{"color": "red"}},
			"field key":         {EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x"), FieldKey: "photo"},
		} {
			_, err := svc.Upload(tn.ctx, in)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		is.Equal(blobKeys(t, blobs, ""), before) // no refused upload left a file
		is.Equal(usage(t, db, tn.id), int64(2*len(img)))
		is.Equal(len(events(t, db, tn.id, attachments.EventCreated)), 2)

		_, err = svc.Upload(t.Context(), attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: strings.NewReader("x")})
		is.True(errors.Is(err, store.ErrNoScope))
	}, attachments.Migrations)
}

func manyTags(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tag%d", i)
	}
	return out
}

// A 30 MB upload over the 25 MB limit streams: it is refused with
// ErrTooLarge once past the limit, without reading the rest or holding
// the file in memory, and leaves no file (nor temporary file) behind.
// Not parallel: it measures the process's allocations.
func TestUploadTooLargeStreams(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		root := filepath.Join(t.TempDir(), "files")
		blobs, err := attachments.NewFSBlobs(root)
		is.NoErr(err)
		svc := newService(db, attachments.Options{Blobs: blobs})
		is.Equal(svc.MaxUploadBytes(), int64(25<<20)) // the default limit
		tn := newTenant(t)
		src := &countingReader{n: 30 << 20}

		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "big.txt", File: src})
		runtime.ReadMemStats(&after)
		is.True(errors.Is(err, attachments.ErrTooLarge))
		is.True(errors.Is(err, store.ErrTooLarge))
		is.True(!errors.Is(err, attachments.ErrQuota)) // the limit, not the quota
		if src.read > 25<<20+1<<20 {
			t.Errorf("read %d bytes of the file: the refusal came late", src.read)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("the refused upload allocated %d MB: the file was held in memory", alloc>>20)
		}
		is.Equal(blobKeys(t, blobs, ""), []string{})
		is.Equal(filesUnder(t, root), []string{}) // no file or temporary file on disk
		is.Equal(usage(t, db, tn.id), int64(0))
		page, err := svc.Library(tn.ctx, attachments.LibraryQuery{})
		is.NoErr(err)
		is.Equal(page.Total, 0)

		// A smaller limit is the service's own.
		small := newService(db, attachments.Options{Blobs: blobs, MaxUploadBytes: 1000})
		_, err = small.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: &countingReader{n: 1001}})
		is.True(errors.Is(err, attachments.ErrTooLarge))
		a, err := small.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "a.txt", File: &countingReader{n: 1000}})
		is.NoErr(err) // exactly the limit
		is.Equal(a.FileSize, int64(1000))
		is.Equal(filesUnder(t, root), []string{tn.id + "/" + a.ID + "/original"})
	}, attachments.Migrations)
}

// The quota bounds a tenant's total: an upload past what is left is
// refused while it streams (ErrQuota) and keeps nothing; a delete makes
// room again.
func TestUploadQuota(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: 1000})
		tn := newTenant(t)
		first := upload(t, svc, tn.ctx, "R1", "a.txt", bytes.Repeat([]byte("a"), 600), nil)
		_, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "b.txt",
			File: &countingReader{n: 600}})
		is.True(errors.Is(err, attachments.ErrQuota))
		is.True(errors.Is(err, store.ErrTooLarge))
		is.Equal(blobKeys(t, blobs, ""), []string{tn.id + "/" + first.ID + "/original"})
		is.Equal(usage(t, db, tn.id), int64(600))
		// Up to the quota exactly.
		upload(t, svc, tn.ctx, "R1", "c.txt", bytes.Repeat([]byte("c"), 400), nil)
		is.Equal(usage(t, db, tn.id), int64(1000))
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "d.txt", File: strings.NewReader("d")})
		is.True(errors.Is(err, attachments.ErrQuota))

		// Another tenant has its own quota.
		other := newTenant(t)
		upload(t, svc, other.ctx, "R1", "a.txt", bytes.Repeat([]byte("a"), 900), nil)

		is.NoErr(svc.Delete(tn.ctx, first.ID))
		is.Equal(usage(t, db, tn.id), int64(400))
		upload(t, svc, tn.ctx, "R1", "e.txt", bytes.Repeat([]byte("e"), 600), nil)
		is.Equal(usage(t, db, tn.id), int64(1000))

		// No quota at all.
		free := newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: -1, MaxUploadBytes: 5000})
		upload(t, free, tn.ctx, "R1", "f.txt", bytes.Repeat([]byte("f"), 4000), nil)
		is.Equal(usage(t, db, tn.id), int64(5000))
	}, attachments.Migrations)
}

// Two files staged while there was room for one: the insert's quota check
// is the one that counts, so the second is refused and its file removed.
func TestUploadQuotaAtInsert(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: 1000})
		tn := newTenant(t)
		f1, err := svc.Stage(tn.ctx, "one.txt", strings.NewReader(strings.Repeat("1", 600)))
		is.NoErr(err)
		f2, err := svc.Stage(tn.ctx, "two.txt", strings.NewReader(strings.Repeat("2", 600)))
		is.NoErr(err)
		is.Equal(len(blobKeys(t, blobs, "")), 2)
		a, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", Staged: f1})
		is.NoErr(err)
		is.Equal(a.FileName, "one.txt")
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", Staged: f2})
		is.True(errors.Is(err, attachments.ErrQuota))
		is.Equal(blobKeys(t, blobs, ""), []string{tn.id + "/" + a.ID + "/original"}) // the refused file is discarded
		is.Equal(usage(t, db, tn.id), int64(600))

		// Concurrent uploads never pass the quota together.
		other := newTenant(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range 8 {
			wg.Go(func() {
				_, err := svc.Upload(other.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1",
					FileName: fmt.Sprintf("c%d.txt", i), File: strings.NewReader(strings.Repeat("c", 300))})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, attachments.ErrQuota):
					t.Errorf("concurrent upload: %v", err)
				}
			})
		}
		wg.Wait()
		is.Equal(ok, 3)
		is.Equal(usage(t, db, other.id), int64(900))
		is.Equal(len(blobKeys(t, blobs, other.id+"/")), 3) // the refused ones' files are gone
		// A staged file of another tenant is not this tenant's.
		f3, err := svc.Stage(other.ctx, "three.txt", strings.NewReader("3"))
		is.NoErr(err)
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", Staged: f3})
		is.True(errors.Is(err, store.ErrInvalid))
	}, attachments.Migrations)
}

// Executable extensions in any segment and active content, by extension,
// by sniffed type or by leading markup, are refused and keep nothing;
// executable names before a byte is read.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		for _, c := range []struct {
			name, body string
			want       error
		}{
			{"setup.exe", "MZ", attachments.ErrExecutable},
			{"Setup.EXE", "MZ", attachments.ErrExecutable},
			{"invoice.exe.pdf", "%PDF-1.4", attachments.ErrExecutable},
			{"run.sh", "echo", attachments.ErrExecutable},
			{"lib.Dll", "x", attachments.ErrExecutable},
			{"app.js", "alert(1)", attachments.ErrExecutable},
			{"archive.tar.bat.gz", "x", attachments.ErrExecutable},
			{"x.ps1", "x", attachments.ErrExecutable},
			{"page.html", "hello", attachments.ErrActiveContent},
			{"page.HTM", "hello", attachments.ErrActiveContent},
			{"logo.svg", "hello", attachments.ErrActiveContent},
			{"feed.xml", "hello", attachments.ErrActiveContent},
			{"doc.xhtml.txt", "hello", attachments.ErrActiveContent},
			{"notes.txt", "<!DOCTYPE html><html><body><script>alert(1)</script></body></html>", attachments.ErrActiveContent},
			{"data.txt", `<?xml version="1.0"?><a/>`, attachments.ErrActiveContent},
			{"image.png", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, attachments.ErrActiveContent},
			{"bom.txt", "\ufeff \n <svg onload=alert(1)>", attachments.ErrActiveContent},
			{"upper.txt", "  <HTML><BODY>x</BODY></HTML>", attachments.ErrActiveContent},
			{"script.txt", "<script>alert(1)</script>", attachments.ErrActiveContent},
		} {
			src := &countReads{r: strings.NewReader(c.body)}
			_, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: c.name, File: src})
			if !errors.Is(err, c.want) || !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
			if c.want == attachments.ErrExecutable && src.reads > 0 {
				t.Errorf("%s: the file was read before its name was refused", c.name)
			}
		}
		if keys := blobKeys(t, blobs, ""); len(keys) != 0 {
			t.Errorf("refused uploads left files: %v", keys)
		}
		if n := usage(t, db, tn.id); n != 0 {
			t.Errorf("refused uploads used %d bytes", n)
		}
		// Harmless names that merely resemble those pass.
		for _, name := range []string{"exe-notes.txt", "my.executable.txt", "shell.txt", "xml-guide.pdf", "html.md"} {
			upload(t, svc, tn.ctx, "R1", name, []byte("plain text"), nil)
		}
	}, attachments.Migrations)
}

// countReads counts the reads of r.
type countReads struct {
	r     io.Reader
	reads int
}

func (c *countReads) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// A field key applies the field's size limit, accepted extensions and
// partition; custom fields go through Options.Fields.
func TestUploadFieldAndCustomFields(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs, Fields: fakeFields{}})
		tn := newTenant(t)
		field := func(name string, body []byte) (*attachments.Attachment, error) {
			return svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "products", RecordID: "P1", FieldKey: "cf_photo",
				FileName: name, File: bytes.NewReader(body)})
		}
		small := pngImage(t, 4, 4)
		a, err := field("shot.PNG", small)
		is.NoErr(err)
		is.Equal(a.PartitionCode, attachments.PublicPartition) // the field's partition
		_, err = field("shot.jpg", small)
		is.NoErr(err) // the extension matches case-insensitively
		_, err = field("notes.txt", []byte("text"))
		is.True(errors.Is(err, attachments.ErrFileType))
		big := bytes.Repeat([]byte("x"), 3000) // over 0.002 MB
		_, err = field("big.png", big)
		is.True(errors.Is(err, attachments.ErrTooLarge))
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "products", RecordID: "P1", FieldKey: "nope",
			FileName: "a.png", File: bytes.NewReader(small)})
		is.True(errors.Is(err, store.ErrInvalid)) // an unknown field
		is.Equal(len(blobKeys(t, blobs, "")), 2)  // refused files are discarded

		// An explicit partition wins over the field's.
		b, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "products", RecordID: "P1", FieldKey: "photo",
			PartitionCode: attachments.PrivatePartition, FileName: "c.png", File: bytes.NewReader(small)})
		is.NoErr(err)
		is.Equal(b.PartitionCode, attachments.PrivatePartition)

		c := upload(t, svc, tn.ctx, "R1", "c.txt", []byte("c"), func(in *attachments.UploadInput) {
			in.CustomFields = map[string]any{"cf_color": "red", "count": float64(2)}
		})
		is.Equal(c.CustomFields, map[string]any{"color": "red", "count": float64(2)})
		_, err = svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "d.txt",
			File: strings.NewReader("d"), CustomFields: map[string]any{"size": 1}})
		var v *store.ValidationError
		is.True(errors.As(err, &v))
		is.True(v.Fields["cf_size"] != "") // the undeclared key is named

		// An update merges; null clears.
		upd, err := svc.Update(tn.ctx, c.ID, attachments.Patch{CustomFields: map[string]any{"color": nil, "count": float64(5)}})
		is.NoErr(err)
		is.Equal(upd.CustomFields, map[string]any{"count": float64(5)})
		got, _, err := svc.Get(tn.ctx, c.ID)
		is.NoErr(err)
		is.Equal(got.CustomFields, map[string]any{"count": float64(5)})
		_, err = svc.Update(tn.ctx, c.ID, attachments.Patch{CustomFields: map[string]any{"size": 1}})
		is.True(errors.Is(err, store.ErrInvalid))
	}, attachments.Migrations)
}

// ForRecord lists a record's attachments newest first; the library
// searches, filters, sorts and pages, with the tags and partitions to
// filter by.
func TestForRecordAndLibrary(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)
		_, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "docs", Title: "Docs"})
		is.NoErr(err)
		up := func(record, name string, size int, code string, tags ...string) *attachments.Attachment {
			return upload(t, svc, tn.ctx, record, name, bytes.Repeat([]byte("z"), size), func(in *attachments.UploadInput) {
				in.PartitionCode, in.Tags = code, tags
			})
		}
		up("R1", "alpha.txt", 30, "docs", "red")
		up("R1", "bravo.txt", 10, "", "red", "blue")
		up("R2", "Überblick.txt", 20, "docs", "blue")
		up("R1", "charlie.txt", 40, "")

		list, err := svc.ForRecord(tn.ctx, "orders", "R1")
		is.NoErr(err)
		is.Equal(fileNames(list), []string{"charlie.txt", "bravo.txt", "alpha.txt"})
		list, err = svc.ForRecord(tn.ctx, " orders ", " R2 ")
		is.NoErr(err)
		is.Equal(fileNames(list), []string{"Überblick.txt"})
		_, err = svc.ForRecord(tn.ctx, "", "R1")
		is.True(errors.Is(err, store.ErrInvalid))

		page, err := svc.Library(tn.ctx, attachments.LibraryQuery{})
		is.NoErr(err)
		is.Equal(page.Total, 4)
		is.Equal(page.Page, 1)
		is.Equal(page.PageSize, attachments.DefaultPageSize)
		is.Equal(page.TotalPages, 1)
		is.Equal(page.AvailableTags, []string{"blue", "red"})
		is.Equal(len(page.Partitions), 3)
		is.Equal(fileNames(page.Items), []string{"alpha.txt", "bravo.txt", "Überblick.txt", "charlie.txt"}) // oldest first by default

		page, err = svc.Library(tn.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{SortField: "fileSize", SortDesc: true},
			Page: 2, PageSize: 3})
		is.NoErr(err)
		is.Equal(fileNames(page.Items), []string{"bravo.txt"})
		is.Equal(page.Total, 4)
		is.Equal(page.TotalPages, 2)
		page, err = svc.Library(tn.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Search: "ÜBER"}})
		is.NoErr(err)
		is.Equal(fileNames(page.Items), []string{"Überblick.txt"})
		page, err = svc.Library(tn.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Partition: "docs", Tags: []string{"red"}}})
		is.NoErr(err)
		is.Equal(fileNames(page.Items), []string{"alpha.txt"})
		// A page past the end is empty; one whose offset would overflow is
		// refused as invalid (not a database error).
		page, err = svc.Library(tn.ctx, attachments.LibraryQuery{Page: 1 << 40, PageSize: 100})
		is.NoErr(err)
		is.Equal(len(page.Items), 0)
		is.Equal(page.Total, 4)
		for _, p := range []int{math.MaxInt / 50, math.MaxInt} {
			page, err = svc.Library(tn.ctx, attachments.LibraryQuery{Page: p, PageSize: 100})
			if !errors.Is(err, store.ErrInvalid) && (err != nil || len(page.Items) != 0) {
				t.Errorf("Library page %d of 100: %v, %d items; want ErrInvalid or an empty page", p, err, len(page.Items))
			}
		}
		for _, q := range []attachments.LibraryQuery{
			{Page: -1}, {PageSize: 101}, {PageSize: -5},
			{LibraryFilter: attachments.LibraryFilter{SortField: "content"}},
			{LibraryFilter: attachments.LibraryFilter{Search: strings.Repeat("s", 501)}},
			{LibraryFilter: attachments.LibraryFilter{Tags: []string{strings.Repeat("t", 101)}}},
		} {
			_, err := svc.Library(tn.ctx, q)
			is.True(errors.Is(err, store.ErrInvalid)) // a bad library query
		}
	}, attachments.Migrations)
}

// The organization grid at the service: an attachment uploaded in o1 is
// read by the scopes that may read o1 only.
func TestOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)
		o1, o2 := tn.org, store.NewID()
		a := upload(t, svc, tn.in(t, o1, []string{o1}), "R1", "o1.txt", []byte("o1"), func(in *attachments.UploadInput) { in.Tags = []string{"o1tag"} })
		wide := upload(t, svc, tn.in(t, "", nil), "R1", "wide.txt", []byte("wide"), nil)
		if wide.OrganizationID != "" {
			t.Fatalf("an upload without an organization is stamped %q", wide.OrganizationID)
		}
		grid := storetest.NewOrgScopes(tn.id, o1, o2)
		check := func(see bool) func(t *testing.T, ctx context.Context) {
			return func(t *testing.T, ctx context.Context) {
				_, _, err := svc.Get(ctx, a.ID)
				if see != (err == nil) || !see && !errors.Is(err, attachments.ErrNotFound) {
					t.Errorf("Get: %v (see %v)", err, see)
				}
				if _, err := svc.Lookup(ctx, a.ID, attachments.Scoped); see != (err == nil) {
					t.Errorf("Lookup: %v (see %v)", err, see)
				}
				list, err := svc.ForRecord(ctx, "orders", "R1")
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"wide.txt"}
				if see {
					want = []string{"wide.txt", "o1.txt"}
				}
				if got := fileNames(list); !slices.Equal(got, want) {
					t.Errorf("ForRecord: %v, want %v", got, want)
				}
				page, err := svc.Library(ctx, attachments.LibraryQuery{})
				if err != nil {
					t.Fatal(err)
				}
				if page.Total != len(want) || slices.Contains(page.AvailableTags, "o1tag") != see {
					t.Errorf("Library: total %d, tags %v (see %v)", page.Total, page.AvailableTags, see)
				}
				if !see {
					if _, err := svc.Update(ctx, a.ID, attachments.Patch{Tags: &[]string{"changed"}}); !errors.Is(err, attachments.ErrNotFound) {
						t.Errorf("Update by a blind scope: %v", err)
					}
					if err := svc.Delete(ctx, a.ID); !errors.Is(err, attachments.ErrNotFound) {
						t.Errorf("Delete by a blind scope: %v", err)
					}
					if _, err := svc.Transfer(ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{a.ID}, ToRecordID: "R9"}); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("Transfer by a blind scope: %v", err)
					}
				}
			}
		}
		grid.RunBlind(t, check(false))
		grid.RunSeeing(t, check(true))
		got, _, err := svc.Get(tn.ctx, a.ID)
		if err != nil || got.RecordID != "R1" || !slices.Equal(got.Tags, []string{"o1tag"}) {
			t.Errorf("after the grid: %v, %v", got, err)
		}
	}, attachments.Migrations)
}

// Update replaces tags and assignments, keeps the record's link, and
// emits the updated event.
func TestUpdate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)
		a := upload(t, svc, tn.ctx, "R1", "a.txt", []byte("a"), func(in *attachments.UploadInput) {
			in.Tags = []string{"old"}
			in.Assignments = []attachments.Assignment{{Type: "notes", ID: "N1"}}
		})
		upd, err := svc.Update(tn.ctx, a.ID, attachments.Patch{Tags: &[]string{"new", " new ", "two"},
			Assignments: &[]attachments.Assignment{{Type: "notes", ID: "N2", Href: "/n/2"}}})
		is.NoErr(err)
		is.Equal(upd.Tags, []string{"new", "two"})
		is.Equal(upd.Assignments, []attachments.Assignment{{Type: "orders", ID: "R1"}, {Type: "notes", ID: "N2", Href: "/n/2"}}) // the record's link stays
		for _, c := range []struct {
			typ, id string
			want    int
		}{{"orders", "R1", 1}, {"notes", "N1", 0}, {"notes", "N2", 1}} {
			list, err := svc.ForRecord(tn.ctx, c.typ, c.id)
			is.NoErr(err)
			is.Equal(len(list), c.want) // links after the update
		}
		page, err := svc.Library(tn.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Tags: []string{"old"}}})
		is.NoErr(err)
		is.Equal(page.Total, 0) // the old tag no longer matches
		is.Equal(page.AvailableTags, []string{"new", "two"})

		// Nil fields stay, and an update that changes nothing writes
		// nothing: no event, the same updatedAt.
		same, err := svc.Update(tn.ctx, a.ID, attachments.Patch{})
		is.NoErr(err)
		is.Equal(same.Tags, []string{"new", "two"})
		is.Equal(len(same.Assignments), 2)
		is.Equal(same.UpdatedAt, upd.UpdatedAt)
		_, err = svc.Update(tn.ctx, a.ID, attachments.Patch{Tags: &[]string{"two", "new", "new"}})
		is.NoErr(err) // the same tags in another order are a change (order is kept)
		evs := events(t, db, tn.id, attachments.EventUpdated)
		is.Equal(len(evs), 2) // the first update's and the reorder's
		is.Equal(evs[0]["id"], a.ID)

		_, err = svc.Update(tn.ctx, store.NewID(), attachments.Patch{})
		is.True(errors.Is(err, attachments.ErrNotFound))
		_, err = svc.Update(tn.ctx, "nope", attachments.Patch{})
		is.True(errors.Is(err, attachments.ErrNotFound))
		_, err = svc.Update(tn.ctx, a.ID, attachments.Patch{Tags: &[]string{""}})
		is.True(errors.Is(err, store.ErrInvalid))
	}, attachments.Migrations)
}

// Delete removes the row, the file and its resized images, gives the
// bytes back to the quota and emits the deleted event.
func TestDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		root := filepath.Join(t.TempDir(), "files")
		blobs, err := attachments.NewFSBlobs(root)
		is.NoErr(err)
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		img := pngImage(t, 40, 30)
		a := upload(t, svc, tn.ctx, "R1", "photo.png", img, nil)
		kept := upload(t, svc, tn.ctx, "R1", "kept.png", img, nil)
		f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		for _, size := range [][2]int{{10, 10}, {20, 5}} {
			b, _, err := svc.Image(tn.ctx, f, size[0], size[1], "cover")
			is.NoErr(err)
			is.NoErr(b.Close())
		}
		prefix := tn.id + "/" + a.ID + "/"
		is.Equal(blobKeys(t, blobs, prefix), []string{prefix + "original", prefix + "thumbs/10x10-cover", prefix + "thumbs/20x5-cover"})

		is.NoErr(svc.Delete(tn.ctx, a.ID))
		is.Equal(blobKeys(t, blobs, prefix), []string{})
		is.Equal(dirsUnder(t, filepath.Join(root, tn.id)), []string{kept.ID}) // no empty directories left
		_, _, err = svc.Get(tn.ctx, a.ID)
		is.True(errors.Is(err, attachments.ErrNotFound))
		is.Equal(usage(t, db, tn.id), int64(len(img)))
		is.True(errors.Is(svc.Delete(tn.ctx, a.ID), attachments.ErrNotFound))
		is.True(errors.Is(svc.Delete(tn.ctx, "nope"), attachments.ErrNotFound))

		// Concurrent deletes of one attachment: one succeeds, the usage
		// is given back once.
		c := upload(t, svc, tn.ctx, "R1", "c.png", img, nil)
		var wg sync.WaitGroup
		results := make(chan error, 6)
		for range 6 {
			wg.Go(func() { results <- svc.Delete(tn.ctx, c.ID) })
		}
		wg.Wait()
		close(results)
		deleted := 0
		for err := range results {
			switch {
			case err == nil:
				deleted++
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("a concurrent delete: %v", err)
			}
		}
		is.Equal(deleted, 1)
		is.Equal(usage(t, db, tn.id), int64(len(img)))
		evs := events(t, db, tn.id, attachments.EventDeleted)
		is.Equal(len(evs), 2)
		is.Equal(evs[0]["id"], a.ID)
		is.Equal(evs[1]["id"], c.ID)
		is.Equal(blobKeys(t, blobs, tn.id+"/"), []string{tn.id + "/" + kept.ID + "/original"})
	}, attachments.Migrations)
}

// Transfer moves attachments to another record all or nothing.
func TestTransfer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newService(db, attachments.Options{})
		tn := newTenant(t)
		a1 := upload(t, svc, tn.ctx, "R1", "a1.txt", []byte("1"), nil)
		a2 := upload(t, svc, tn.ctx, "R1", "a2.txt", []byte("2"), nil)
		a3 := upload(t, svc, tn.ctx, "R9", "a3.txt", []byte("3"), func(in *attachments.UploadInput) {
			in.Assignments = []attachments.Assignment{{Type: "orders", ID: "R5", Href: "/orders/R5"}}
		})
		inv := upload(t, svc, tn.ctx, "R1", "inv.txt", []byte("i"), func(in *attachments.UploadInput) { in.EntityID = "invoices" })
		onR := func(record string) []string {
			t.Helper()
			list, err := svc.ForRecord(tn.ctx, "orders", record)
			is.NoErr(err)
			names := fileNames(list)
			slices.Sort(names)
			return names
		}

		// One bad id: nothing moves.
		for name, bad := range map[string]string{"unknown id": store.NewID(), "other entity": inv.ID} {
			n, err := svc.Transfer(tn.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{a1.ID, a2.ID, bad}, ToRecordID: "R2"})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("transfer with an %s: %v, want ErrNotFound", name, err)
			}
			if n != 0 {
				t.Errorf("transfer with an %s: %d attachments reported changed, but the transaction rolled back", name, n)
			}
			is.Equal(onR("R1"), []string{"a1.txt", "a2.txt"})
			is.Equal(onR("R2"), []string{})
		}
		is.Equal(len(events(t, db, tn.id, attachments.EventUpdated)), 0) // nor any event
		for _, in := range []attachments.TransferInput{
			{EntityID: "orders", ToRecordID: "R2"},
			{EntityID: "orders", AttachmentIDs: []string{"nope"}, ToRecordID: "R2"},
			{EntityID: "", AttachmentIDs: []string{a1.ID}, ToRecordID: "R2"},
			{EntityID: "orders", AttachmentIDs: []string{a1.ID}, ToRecordID: ""},
			{EntityID: "orders", AttachmentIDs: make([]string, 101), ToRecordID: "R2"},
		} {
			_, err := svc.Transfer(tn.ctx, in)
			is.True(errors.Is(err, store.ErrInvalid)) // a bad transfer
		}

		n, err := svc.Transfer(tn.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{a1.ID, a2.ID, a1.ID}, ToRecordID: "R2"})
		is.NoErr(err)
		is.Equal(n, 2)
		is.Equal(onR("R1"), []string{})
		is.Equal(onR("R2"), []string{"a1.txt", "a2.txt"})
		got, _, err := svc.Get(tn.ctx, a1.ID)
		is.NoErr(err)
		is.Equal(got.RecordID, "R2")
		is.Equal(got.Assignments, []attachments.Assignment{{Type: "orders", ID: "R2"}})
		is.Equal(len(events(t, db, tn.id, attachments.EventUpdated)), 2)

		// From a linked record: the link moves, the owner stays.
		n, err = svc.Transfer(tn.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{a3.ID}, FromRecordID: "R5", ToRecordID: "R6"})
		is.NoErr(err)
		is.Equal(n, 1)
		got, _, err = svc.Get(tn.ctx, a3.ID)
		is.NoErr(err)
		is.Equal(got.RecordID, "R9")
		is.Equal(got.Assignments, []attachments.Assignment{{Type: "orders", ID: "R9"}, {Type: "orders", ID: "R6"}})
		is.Equal(onR("R5"), []string{})
		is.Equal(onR("R6"), []string{"a3.txt"})
		is.Equal(onR("R9"), []string{"a3.txt"})

		// To the record it is on: nothing changes.
		n, err = svc.Transfer(tn.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{a1.ID}, ToRecordID: "R2"})
		is.NoErr(err)
		is.Equal(n, 0)
	}, attachments.Migrations)
}

// The orphan sweep removes stored files no attachment names once older
// than the cutoff, and keeps live and young ones.
func TestSweepOrphans(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		root := filepath.Join(t.TempDir(), "files")
		blobs, err := attachments.NewFSBlobs(root)
		is.NoErr(err)
		var logs logbuf.Buffer
		svc := newService(db, attachments.Options{Blobs: blobs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		tn := newTenant(t)
		live := upload(t, svc, tn.ctx, "R1", "live.txt", []byte("live"), nil)
		oldOrphan, youngOrphan := store.NewID(), store.NewID()
		put := func(key string) {
			_, err := blobs.Put(ctx, key, strings.NewReader(key))
			is.NoErr(err)
		}
		put(tn.id + "/" + oldOrphan + "/original")
		put(tn.id + "/" + oldOrphan + "/thumbs/10x10-cover")
		put(tn.id + "/" + youngOrphan + "/original")
		put("stray") // not an attachment's key: left alone
		twoHoursAgo := time.Now().Add(-2 * time.Hour)
		age := func(key string) {
			is.NoErr(os.Chtimes(filepath.Join(root, filepath.FromSlash(key)), twoHoursAgo, twoHoursAgo))
		}
		age(tn.id + "/" + live.ID + "/original")
		age(tn.id + "/" + oldOrphan + "/original")
		age(tn.id + "/" + oldOrphan + "/thumbs/10x10-cover")
		age("stray")

		n, err := svc.SweepOrphans(ctx, time.Now().Add(-attachments.OrphanGrace))
		is.NoErr(err)
		is.Equal(n, 2)
		is.Equal(blobKeys(t, blobs, ""), sortedKeys("stray", tn.id+"/"+live.ID+"/original", tn.id+"/"+youngOrphan+"/original"))
		// The sweep reports what it removed.
		for _, want := range []string{`orphan file removed" key=` + tn.id + "/" + oldOrphan + "/original",
			`orphan file removed" key=` + tn.id + "/" + oldOrphan + "/thumbs/10x10-cover", `orphan sweep done" removed=2`} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the sweep's log lacks %q:\n%s", want, logs.String())
			}
		}
		// Once old enough, the young orphan goes too; the live file stays.
		n, err = svc.SweepOrphans(ctx, time.Now().Add(time.Minute))
		is.NoErr(err)
		is.Equal(n, 1)
		is.Equal(blobKeys(t, blobs, ""), sortedKeys("stray", tn.id+"/"+live.ID+"/original"))
		_, _, err = svc.Get(tn.ctx, live.ID)
		is.NoErr(err)
	}, attachments.Migrations)
}

func sortedKeys(keys ...string) []string {
	slices.Sort(keys)
	return keys
}
