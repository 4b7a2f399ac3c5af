package attachments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// ExtractText is the job that fills an attachment's content.
type ExtractText struct {
	TenantID     string `json:"tenantId"`
	AttachmentID string `json:"attachmentId"`
	// ProgressJobID is the extraction's progress job ("" without one).
	ProgressJobID string `json:"progressJobId,omitempty"`
}

// Kind implements jobs.Args.
func (ExtractText) Kind() string { return "attachments.extract" }

// SweepOrphans is the periodic job that removes stored files no
// attachment names.
type SweepOrphans struct{}

// Kind implements jobs.Args.
func (SweepOrphans) Kind() string { return "attachments.sweep" }

// OrphanGrace is how old a stored file no attachment names must be before
// the sweep removes it: an upload stages its file before its row commits.
const OrphanGrace = time.Hour

// RegisterJobs registers the text extraction worker and the hourly orphan
// sweep on e; call it before e starts. Without it uploads extract nothing.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	if err := jobs.Register(e, &extractWorker{s}, &jobs.RegisterOpts{Queue: "attachments", MaxAttempts: 5, Workers: 2, Background: true}); err != nil {
		return err
	}
	if err := jobs.Register(e, jobs.WorkFunc[SweepOrphans](func(ctx context.Context, _ *jobs.Job[SweepOrphans]) error {
		_, err := s.SweepOrphans(ctx, time.Now().Add(-OrphanGrace))
		return err // SweepOrphans logs what it removed
	}), nil); err != nil {
		return err
	}
	e.Periodic(time.Hour, func() jobs.Args { return SweepOrphans{} })
	s.jobs = e
	return nil
}

// enqueueExtraction adds a's extraction job to tx.
func (s *Service) enqueueExtraction(ctx context.Context, tx *store.Tx, a *Attachment) error {
	if s.jobs == nil {
		return nil
	}
	progressJobID, err := s.createExtractionProgress(ctx, tx, a)
	if err != nil {
		return err
	}
	_, err = s.jobs.EnqueueTx(ctx, tx, ExtractText{TenantID: a.TenantID, AttachmentID: a.ID, ProgressJobID: progressJobID}, nil)
	return err
}

type extractWorker struct{ s *Service }

// Timeout gives an extraction its limit and a margin to store the result.
func (w *extractWorker) Timeout(*jobs.Job[ExtractText]) time.Duration {
	return w.s.opts.ExtractTimeout
}

// Work extracts, and records a failed attempt on the attachment: retrying
// while attempts are left, failed after the last, each with a log line.
func (w *extractWorker) Work(ctx context.Context, job *jobs.Job[ExtractText]) error {
	w.s.beginExtractionProgress(ctx, job.Args)
	err := w.s.ExtractContent(ctx, job.Args.TenantID, job.Args.AttachmentID)
	w.s.endExtractionProgress(ctx, job, err)
	if err == nil || ctx.Err() != nil {
		return err // done, or stopping: run again later
	}
	status, level := ExtractionRetrying, slog.LevelWarn
	if job.Attempt >= job.MaxAttempts {
		status, level = ExtractionFailed, slog.LevelError
	}
	message := "extraction failed"
	if errors.Is(err, ErrFileMissing) {
		message = "the stored file is missing"
	}
	w.s.logger.Log(ctx, level, "attachments: text extraction failed", "attachmentId", job.Args.AttachmentID,
		"tenantId", job.Args.TenantID, "attempt", job.Attempt, "maxAttempts", job.MaxAttempts, "status", status, "err", err)
	if serr := w.s.store.SetExtraction(context.WithoutCancel(ctx), w.s.db, job.Args.TenantID, job.Args.AttachmentID, status, &message); serr != nil &&
		!errors.Is(serr, store.ErrNotFound) {
		return errors.Join(err, serr)
	}
	return err
}

// ErrFileMissing is ExtractContent's error for an attachment whose row
// exists but whose stored file its Blobs does not have (a server that does
// not share the files, a file lost): retried, then recorded as failed.
var ErrFileMissing = errors.New("attachments: the attachment's stored file is missing")

// ExtractContent extracts an attachment's text and stores it as its
// content: what Options.Extractor reads (package extract: text files as
// UTF-8, PDFs' text layer and .docx documents, in-process), images and
// PDFs without text through Options.OCR when set. Nothing is extracted when the
// attachment's partition has requiresOcr false, or the attachment is gone.
// A file the extractors refuse (malformed, over a limit) keeps a null
// content, with ExtractionFailed recorded and the refusal logged. A file
// missing from Blobs while the attachment exists is ErrFileMissing.
func (s *Service) ExtractContent(ctx context.Context, tenantID, id string) error {
	a, p, err := s.store.GetAnyAttachment(ctx, s.db, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.TenantID != tenantID {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	if p == nil || !p.RequiresOcr {
		return nil
	}
	b, err := s.blobs.Open(ctx, a.StorageKey)
	if errors.Is(err, fs.ErrNotExist) {
		// A delete removes the row before the file: read the row again.
		if _, _, err := s.store.GetAnyAttachment(ctx, s.db, id); errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("%w (attachment %s, key %s)", ErrFileMissing, id, a.StorageKey)
	}
	if err != nil {
		return err
	}
	defer b.Close()
	var text string
	found := false
	if x := s.opts.Extractor; x != nil && x.Extracts(a.FileName, a.MimeType) {
		text, found, err = x.Extract(ctx, b, b.Info().Size, a.FileName, a.MimeType)
		if err != nil {
			if ctx.Err() != nil {
				return err // stopping: run again later
			}
			s.logger.InfoContext(ctx, "attachments: no text extracted", "attachmentId", a.ID, "err", err)
			refused := "the file could not be read for text (malformed, or over a limit)"
			return s.finishExtraction(ctx, tenantID, id, nil, ExtractionFailed, &refused)
		}
	}
	if !found && s.opts.OCR != nil && ocrable(a.MimeType) {
		if _, err := b.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if text, err = s.opts.OCR.Text(ctx, b, a.MimeType); err != nil {
			return err
		}
		found = text != ""
	}
	if !found {
		// Nothing read (a PDF without a text layer): content stays null.
		return s.finishExtraction(ctx, tenantID, id, nil, ExtractionDone, nil)
	}
	text = cleanText(text, s.opts.MaxContentBytes)
	return s.finishExtraction(ctx, tenantID, id, &text, ExtractionDone, nil)
}

// finishExtraction stores the content (when not nil) and the status in
// one transaction, fenced by the job's lease when a job runs it (so a run
// that lost its lease to another process records nothing). An attachment
// deleted meanwhile is no error.
func (s *Service) finishExtraction(ctx context.Context, tenantID, id string, content *string, status string, message *string) error {
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := jobs.Fence(ctx, tx); err != nil {
			return err
		}
		if content != nil {
			if err := s.store.SetContent(ctx, tx, tenantID, id, content); err != nil {
				return err
			}
		}
		if err := s.store.SetExtraction(ctx, tx, tenantID, id, status, message); err != nil {
			return err
		}
		a, _, err := s.store.GetAnyAttachment(ctx, tx, id)
		if err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventExtractionFinished, eventScope(a), extractionEvent{eventOf(a), status, message})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// extractionEvent is the data of EventExtractionFinished.
type extractionEvent struct {
	attachmentEvent
	ExtractionStatus string  `json:"extractionStatus"`
	ExtractionError  *string `json:"extractionError"`
}

// cleanText makes extracted text storable: valid UTF-8 without NUL bytes,
// trimmed, at most max bytes (cut at a character boundary).
func cleanText(text string, max int) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.TrimSpace(strings.ReplaceAll(text, "\x00", ""))
	if len(text) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return text
}

// ocrable reports whether OCR applies to a type: images and PDFs.
func ocrable(mime string) bool {
	return strings.HasPrefix(mime, "image/") || strings.HasPrefix(mime, "application/pdf")
}

// SweepOrphans removes stored files that no attachment names and that are
// older than before (files of uploads still in progress are younger). It
// returns how many it removed, and logs each removal (its key, size and
// age) and the run's count, so that an operator sees what a crash or a
// failed delete had left behind.
func (s *Service) SweepOrphans(ctx context.Context, before time.Time) (int, error) {
	blobs, err := s.blobs.List(ctx, "")
	if err != nil {
		return 0, err
	}
	byID := map[string][]BlobInfo{}
	var ids []string
	for _, b := range blobs {
		parts := strings.SplitN(b.Key, "/", 3)
		if len(parts) < 3 || !b.ModTime.Before(before) {
			continue
		}
		id := parts[1]
		if _, seen := byID[id]; !seen {
			ids = append(ids, id)
		}
		byID[id] = append(byID[id], b)
	}
	if len(ids) == 0 {
		s.logger.DebugContext(ctx, "attachments: orphan sweep done", "removed", 0, "checked", len(blobs))
		return 0, nil
	}
	live, err := s.store.Existing(ctx, s.db, ids)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, id := range ids {
		if live[id] {
			continue
		}
		for _, b := range byID[id] {
			if err := s.blobs.Delete(ctx, b.Key); err != nil {
				return removed, err
			}
			removed++
			s.logger.InfoContext(ctx, "attachments: orphan file removed", "key", b.Key, "bytes", b.Size,
				"age", time.Since(b.ModTime).Round(time.Second))
		}
	}
	s.logger.InfoContext(ctx, "attachments: orphan sweep done", "removed", removed, "checked", len(blobs))
	return removed, nil
}
