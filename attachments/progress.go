package attachments

import (
	"context"
	"errors"
	"strings"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/jobstatus"
	"github.com/tenantkit/tenantkit/store"
)

// ExtractionJobType is the job type of an extraction's progress job.
const ExtractionJobType = "attachments.extract"

// Progress is how text extractions report progress (the Kit answers it
// from the progress area): one job of one item per extraction, created
// pending with the upload, begun by each attempt, finished by the attempt
// that ends the extraction. Begin and Finish run in the attachment's
// tenant (the scope of ctx names only the tenant).
type Progress interface {
	// Create records a pending job of one item named name in the scope of
	// ctx, in tx, and returns its id.
	Create(ctx context.Context, tx *store.Tx, name string) (id string, err error)
	// Begin marks the job running (again, on a later attempt).
	Begin(ctx context.Context, id string) error
	// Finish ends the job with status (its item done when completed);
	// message is shown to the tenant's users when it failed or was
	// cancelled.
	Finish(ctx context.Context, id string, status jobstatus.Status, message string) error
}

// createExtractionProgress creates the pending progress job of a's
// extraction in tx; "" without Options.Progress.
func (s *Service) createExtractionProgress(ctx context.Context, tx *store.Tx, a *Attachment) (string, error) {
	if s.opts.Progress == nil {
		return "", nil
	}
	// The job's name must be text both engines store: an odd file name
	// never fails the upload.
	name := strings.ReplaceAll(strings.ToValidUTF8(a.FileName, "\uFFFD"), "\x00", "")
	if r := []rune(name); len(r) > 150 {
		name = string(r[:150]) + "…"
	}
	return s.opts.Progress.Create(ctx, tx, "Text extraction of "+name)
}

// beginExtractionProgress marks the extraction's progress job running
// as an attempt starts. A progress failure is logged, never the
// extraction's.
func (s *Service) beginExtractionProgress(ctx context.Context, args ExtractText) {
	if s.opts.Progress == nil || args.ProgressJobID == "" {
		return
	}
	ctx = store.WithScope(ctx, store.Scope{TenantID: args.TenantID})
	if err := s.opts.Progress.Begin(ctx, args.ProgressJobID); err != nil {
		s.logger.WarnContext(ctx, "attachments: extraction progress not begun", "attachmentId", args.AttachmentID, "err", err)
	}
}

// endExtractionProgress finishes the extraction's progress job after an
// attempt whose error is err: nothing while another attempt follows (the
// job shows failed once its heartbeat is old, running again when the
// next attempt begins); failed after the last attempt; otherwise as the
// attempt recorded it: failed with the attachment's ExtractionError when
// the file was refused, cancelled when the attachment was deleted
// meanwhile, else completed.
func (s *Service) endExtractionProgress(ctx context.Context, job *jobs.Job[ExtractText], err error) {
	args := job.Args
	if s.opts.Progress == nil || args.ProgressJobID == "" || err != nil && (ctx.Err() != nil || job.Attempt < job.MaxAttempts) {
		return
	}
	ctx = store.WithScope(context.WithoutCancel(ctx), store.Scope{TenantID: args.TenantID})
	status, message := jobstatus.Completed, ""
	switch {
	case errors.Is(err, ErrFileMissing):
		status, message = jobstatus.Failed, "The stored file is missing"
	case err != nil:
		status, message = jobstatus.Failed, "The text could not be extracted"
	default:
		a, _, gerr := s.store.GetAnyAttachment(ctx, s.db, args.AttachmentID)
		switch {
		case errors.Is(gerr, store.ErrNotFound) || gerr == nil && a.TenantID != args.TenantID:
			status, message = jobstatus.Cancelled, "The attachment was deleted"
		case gerr != nil:
			s.logger.WarnContext(ctx, "attachments: extraction progress not finished", "attachmentId", args.AttachmentID, "err", gerr)
			return
		case a.ExtractionStatus == ExtractionFailed:
			status, message = jobstatus.Failed, "The text could not be extracted"
			if a.ExtractionError != nil {
				message = *a.ExtractionError
			}
		}
	}
	if ferr := s.opts.Progress.Finish(ctx, args.ProgressJobID, status, message); ferr != nil {
		s.logger.WarnContext(ctx, "attachments: extraction progress not finished", "attachmentId", args.AttachmentID, "err", ferr)
	}
}
