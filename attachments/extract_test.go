package attachments_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// testdata reads a file of testdata/: a text file with a byte-order mark,
// a PDF with a text layer (report.pdf), one without (scan.pdf) and a
// .docx document (minutes.docx).
func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// content reads an attachment's content ("<nil>" for none).
func content(t testing.TB, svc *attachments.Service, tn tenant, id string) string {
	t.Helper()
	a, _, err := svc.Get(tn.ctx, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	if a.Content == nil {
		return "<nil>"
	}
	return *a.Content
}

// ExtractContent fills the content of text files, PDFs with a text layer
// and .docx documents; leaves it null for other formats, files the
// extractors refuse, partitions without extraction; and does nothing for
// another tenant's id or a missing attachment or file.
func TestExtractContent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		extracted := func(name string, body []byte, edit func(*attachments.UploadInput)) string {
			t.Helper()
			a := upload(t, svc, tn.ctx, "R1", name, body, edit)
			is.NoErr(svc.ExtractContent(ctx, tn.id, a.ID))
			return content(t, svc, tn, a.ID)
		}
		is.Equal(extracted("notes.txt", testdata(t, "notes.txt"), nil), "Shopping list: äpfel, Birnen\nand more")
		pdf := extracted("report.pdf", testdata(t, "report.pdf"), nil)
		if !strings.Contains(pdf, "Quarterly report") || !strings.Contains(pdf, "Invoice total 1234 EUR") {
			t.Errorf("report.pdf: content %q", pdf)
		}
		docx := extracted("minutes.docx", testdata(t, "minutes.docx"), nil)
		is.Equal(docx, "Meeting minutes\nGrüße aus Zürich")
		// Named otherwise, the sniffed type still picks the extractor.
		renamed := extracted("report.bin", testdata(t, "report.pdf"), nil)
		is.True(strings.Contains(renamed, "Quarterly report"))

		is.Equal(extracted("photo.png", pngImage(t, 8, 8), nil), "<nil>")      // no OCR plugged: images stay null
		is.Equal(extracted("scan.pdf", testdata(t, "scan.pdf"), nil), "<nil>") // a PDF without a text layer (and no OCR): null
		is.Equal(extracted("broken.pdf", []byte("%PDF-1.4\nthis is not a pdf at all\n%%EOF"), nil), "<nil>")
		is.Equal(extracted("broken.docx", []byte("PK\x03\x04 not a zip"), nil), "<nil>")
		is.Equal(extracted("sheet.xlsx", []byte("a,b\n1,2\n"), nil), "<nil>") // no extractor for spreadsheets

		// A partition without extraction keeps content null.
		_, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "raw", Title: "Raw", RequiresOcr: boolp(false)})
		is.NoErr(err)
		is.Equal(extracted("raw.txt", []byte("raw text"), func(in *attachments.UploadInput) { in.PartitionCode = "raw" }), "<nil>")

		// Another tenant's id does nothing; the owner's fills it.
		a := upload(t, svc, tn.ctx, "R1", "mine.txt", []byte("mine"), nil)
		other := newTenant(t)
		is.NoErr(svc.ExtractContent(ctx, other.id, a.ID))
		is.Equal(content(t, svc, tn, a.ID), "<nil>")
		is.NoErr(svc.ExtractContent(ctx, tn.id, a.ID))
		is.Equal(content(t, svc, tn, a.ID), "mine")
		// Each recorded outcome emitted extraction_finished with its status.
		finished := events(t, db, tn.id, attachments.EventExtractionFinished)
		last := finished[len(finished)-1]
		is.Equal(last["id"], a.ID)
		is.Equal(last["extractionStatus"], attachments.ExtractionDone)
		is.Equal(len(events(t, db, other.id, attachments.EventExtractionFinished)), 0)

		// Gone meanwhile: no error, nothing to retry.
		is.NoErr(svc.ExtractContent(ctx, tn.id, store.NewID()))
		// A file missing while its attachment exists is an error (retried
		// by the job), never "done".
		b := upload(t, svc, tn.ctx, "R1", "lost.txt", []byte("lost"), nil)
		is.NoErr(blobs.Delete(ctx, tn.id+"/"+b.ID+"/original"))
		is.True(errors.Is(svc.ExtractContent(ctx, tn.id, b.ID), attachments.ErrFileMissing))
		is.Equal(content(t, svc, tn, b.ID), "<nil>")
		lost, _, err := svc.Get(tn.ctx, b.ID)
		is.NoErr(err)
		is.Equal(lost.ExtractionStatus, "")
		c := upload(t, svc, tn.ctx, "R1", "deleted.txt", []byte("deleted"), nil)
		is.NoErr(svc.Delete(tn.ctx, c.ID))
		is.NoErr(svc.ExtractContent(ctx, tn.id, c.ID))
	}, attachments.Migrations)
}

// A plugged OCR reads images and PDFs without a text layer (from the
// file's first byte), and only those; its text is cleaned.
func TestExtractContentOCR(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		ocr := &fakeOCR{text: "\x00 text from OCR\x00 \n"}
		svc := newService(db, attachments.Options{OCR: ocr})
		tn := newTenant(t)
		run := func(name string, body []byte) string {
			t.Helper()
			a := upload(t, svc, tn.ctx, "R1", name, body, nil)
			is.NoErr(svc.ExtractContent(ctx, tn.id, a.ID))
			return content(t, svc, tn, a.ID)
		}
		is.Equal(run("photo.png", pngImage(t, 8, 8)), "text from OCR")
		is.Equal(ocr.Calls(), []string{"image/png \x89PNG\r\n\x1a\n"})
		is.Equal(run("notes.txt", []byte("typed text")), "typed text") // text files need no OCR
		is.True(strings.Contains(run("report.pdf", testdata(t, "report.pdf")), "Quarterly report"))
		is.Equal(len(ocr.Calls()), 1) // nor PDFs with a text layer
		is.Equal(run("scan.pdf", testdata(t, "scan.pdf")), "text from OCR")
		calls := ocr.Calls()
		is.Equal(len(calls), 2)
		is.True(strings.HasPrefix(calls[1], "application/pdf %PDF-1.4")) // a PDF without text goes to OCR, from its start
		is.Equal(run("sheet.xlsx", []byte("a,b")), "<nil>")
		is.Equal(len(ocr.Calls()), 2) // other formats do not

		// A partition without extraction skips OCR too.
		_, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "raw", Title: "Raw", RequiresOcr: boolp(false)})
		is.NoErr(err)
		a := upload(t, svc, tn.ctx, "R1", "raw.png", pngImage(t, 8, 8), func(in *attachments.UploadInput) { in.PartitionCode = "raw" })
		is.NoErr(svc.ExtractContent(ctx, tn.id, a.ID))
		is.Equal(content(t, svc, tn, a.ID), "<nil>")
		is.Equal(len(ocr.Calls()), 2)
	}, attachments.Migrations)
}

// With the jobs registered, an upload enqueues its extraction in its
// transaction and the worker fills the content.
func TestExtractionJob(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		ocr := &fakeOCR{text: "from the job"}
		svc := newService(db, attachments.Options{OCR: ocr})
		e, err := jobs.New(ctx, db, jobs.Config{Logger: quiet()})
		is.NoErr(err)
		is.NoErr(svc.RegisterJobs(e))
		tn := newTenant(t)
		// Enqueued before the engine starts, worked once it does.
		txt := upload(t, svc, tn.ctx, "R1", "notes.txt", testdata(t, "notes.txt"), nil)
		is.NoErr(e.Start(ctx))
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Stop(stop)
		})
		img := upload(t, svc, tn.ctx, "R1", "photo.png", pngImage(t, 8, 8), nil)
		deadline := time.Now().Add(20 * time.Second)
		for content(t, svc, tn, txt.ID) == "<nil>" || content(t, svc, tn, img.ID) == "<nil>" {
			if time.Now().After(deadline) {
				t.Fatalf("contents not filled: %q, %q", content(t, svc, tn, txt.ID), content(t, svc, tn, img.ID))
			}
			time.Sleep(20 * time.Millisecond)
		}
		is.Equal(content(t, svc, tn, txt.ID), "Shopping list: äpfel, Birnen\nand more")
		is.Equal(content(t, svc, tn, img.ID), "from the job")
	}, attachments.Migrations)
}

// hidingBlobs is MemBlobs whose Open does not find the hidden keys, as a
// server that does not have a file another server stored.
type hidingBlobs struct {
	*attachments.MemBlobs
	mu     sync.Mutex
	hidden map[string]bool
}

func (b *hidingBlobs) Open(ctx context.Context, key string) (attachments.Blob, error) {
	b.mu.Lock()
	hidden := b.hidden[key]
	b.mu.Unlock()
	if hidden {
		return nil, fs.ErrNotExist
	}
	return b.MemBlobs.Open(ctx, key)
}

func (b *hidingBlobs) hide(key string, hide bool) {
	b.mu.Lock()
	b.hidden[key] = hide
	b.mu.Unlock()
}

// An extraction job that finds no file for an attachment that exists
// fails: the attachment shows "retrying" with the reason, the job retries,
// and a retry that finds the file fills the content ("done"). With no
// attempt left the attachment shows "failed", the job is discarded with
// the error, and the failure is logged; content stays null.
func TestExtractionMissingFile(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		blobs := &hidingBlobs{MemBlobs: attachments.NewMemBlobs(), hidden: map[string]bool{}}
		var logs logbuf.Buffer
		svc := newService(db, attachments.Options{Blobs: blobs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		tn := newTenant(t)
		// Uploaded before the jobs are registered: no extraction job of
		// their own; the test enqueues them.
		retried := upload(t, svc, tn.ctx, "R1", "retried.txt", []byte("found again"), nil)
		failed := upload(t, svc, tn.ctx, "R1", "failed.txt", []byte("never found"), nil)
		blobs.hide(tn.id+"/"+retried.ID+"/original", true)
		blobs.hide(tn.id+"/"+failed.ID+"/original", true)

		e, err := jobs.New(ctx, db, jobs.Config{Logger: quiet()})
		is.NoErr(err)
		is.NoErr(svc.RegisterJobs(e))
		is.NoErr(e.Start(ctx))
		t.Cleanup(func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Stop(stopCtx)
		})
		get := func(id string) *attachments.Attachment {
			t.Helper()
			a, _, err := svc.Get(tn.ctx, id)
			is.NoErr(err)
			return a
		}
		wait := func(what string, cond func() bool) {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for !cond() {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %s", what)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}

		retryJob, err := e.Enqueue(ctx, attachments.ExtractText{TenantID: tn.id, AttachmentID: retried.ID}, &jobs.Opts{MaxAttempts: 2})
		is.NoErr(err)
		wait("the first attempt to fail", func() bool { return get(retried.ID).ExtractionStatus == attachments.ExtractionRetrying })
		a := get(retried.ID)
		is.True(a.Content == nil)
		is.Equal(*a.ExtractionError, "the stored file is missing")
		var info *jobs.Info
		wait("the job to record the failed attempt", func() bool {
			info, err = e.Get(ctx, retryJob)
			return err == nil && len(info.Errors) == 1
		})
		is.True(strings.Contains(info.Errors[0], "stored file is missing"))
		is.True(!info.Finalized())                          // retried
		blobs.hide(tn.id+"/"+retried.ID+"/original", false) // the retry runs where the file is
		wait("the retry to fill the content", func() bool { return get(retried.ID).ExtractionStatus == attachments.ExtractionDone })
		a = get(retried.ID)
		is.Equal(*a.Content, "found again")
		is.True(a.ExtractionError == nil)

		failJob, err := e.Enqueue(ctx, attachments.ExtractText{TenantID: tn.id, AttachmentID: failed.ID}, &jobs.Opts{MaxAttempts: 1})
		is.NoErr(err)
		wait("the last attempt to fail", func() bool { return get(failed.ID).ExtractionStatus == attachments.ExtractionFailed })
		a = get(failed.ID)
		is.True(a.Content == nil)
		is.Equal(*a.ExtractionError, "the stored file is missing")
		wait("the job to be discarded", func() bool {
			info, err = e.Get(ctx, failJob)
			return err == nil && info.State == jobs.StateDiscarded
		})
		is.True(strings.Contains(logs.String(), "level=ERROR msg=\"attachments: text extraction failed\" attachmentId="+failed.ID))
		is.True(strings.Contains(logs.String(), "level=WARN msg=\"attachments: text extraction failed\" attachmentId="+retried.ID))
	}, attachments.Migrations)
}
