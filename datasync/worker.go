package datasync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// RunArgs is the durable job that carries a run through its batches.
type RunArgs struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
}

// Kind implements jobs.Args.
func (RunArgs) Kind() string { return "data_sync.run" }

// RegisterJobs registers the run worker on e; the Kit calls it.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	err := jobs.Register(e, jobs.WorkFunc[RunArgs](func(ctx context.Context, j *jobs.Job[RunArgs]) error {
		return s.work(ctx, j.Args.TenantID, j.Args.RunID)
	}), &jobs.RegisterOpts{Queue: "data_sync", MaxAttempts: 25, Workers: 2, Background: true})
	if err != nil {
		return err
	}
	s.jobs = e
	return nil
}

// recordNamespace derives record ids from external ids (UUIDv5).
var recordNamespace = uuid.MustParse("6f1d7c1e-3b0a-4c55-9b7e-2f4a8d1c9e01")

// RecordID is the id of the record an import writes for an item: derived
// from the tenant, the integration, the entity type and the external id,
// so that every run (a re-run, a retry, a resumed job) writes the same
// record, never a duplicate.
func RecordID(tenantID, integrationID, entityType, externalID string) string {
	return uuid.NewSHA1(recordNamespace, []byte(tenantID+"\x00"+integrationID+"\x00"+entityType+"\x00"+externalID)).String()
}

// work carries a run through its batches until it ends or ctx does (the
// process stops: the job runs again later and resumes at the run's last
// committed cursor). Each batch commits its records, the run's cursor and
// counters and the progress in one transaction.
func (s *Service) work(ctx context.Context, tenantID, runID string) error {
	sc := store.Scope{TenantID: tenantID}
	r, err := s.store.GetRun(ctx, s.db, tenantID, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // nothing to do: the run is gone
	}
	if err != nil {
		return err
	}
	sc.OrganizationID, sc.OrganizationIDs = r.OrganizationID, r.OrganizationIDs
	ctx = store.WithScope(ctx, sc)
	if r.Status.Terminal() {
		return nil
	}
	in, err := s.opts.Integrations.Integration(ctx, tenantID, r.IntegrationID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var a Adapter
	if err == nil {
		a, _ = s.adapter(in.ProviderKey)
	}
	if err := s.begin(ctx, r); err != nil {
		return err
	}
	switch {
	case in == nil || a == nil:
		return s.fail(ctx, r, "the integration or its adapter is no longer available")
	case !in.Enabled:
		return s.fail(ctx, r, "the integration was disabled")
	}
	call := s.call(in, r.EntityType)
	sl := &slice{start: time.Now(), budget: sliceBudget, pageLimit: s.opts.PageTimeout}
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		sl.deadline = deadline
		sl.budget, sl.pageLimit = min(sl.budget, left/2), min(sl.pageLimit, left/2)
	}
	var ahead *readAhead
	for {
		done, next, err := s.batch(ctx, r, a, call, sl, ahead)
		if err != nil || done {
			next.drop()
			return err
		}
		ahead = next
		if ahead == nil && time.Since(sl.start) > sl.budget {
			// Hand the run back to the queue well within the job's time
			// limit; it continues at once, at the committed cursor. (A
			// page read ahead, counted as an attempt, is written first.)
			return jobs.Snooze(0)
		}
	}
}

// readAhead is an import's next page, read while the batch before it is
// written. Its attempt is counted in that batch's transaction, which
// moves the run's cursor to it with page_attempts 1.
type readAhead struct {
	cursor   string
	page     *ImportBatch
	err      error
	timedOut bool // the read ran out of its page time limit
	done     chan struct{}
	cancel   context.CancelFunc
}

// mayReadAhead reports whether an import may read the page at next while
// it writes the page before it: there is one, the run has not read it
// (a cycle, which the batch ends the run for), the job has the time for
// it and one more batch, and the run is neither ended nor asked to cancel
// (so that no page is read after a cancel, as without the read ahead).
func (s *Service) mayReadAhead(ctx context.Context, r *Run, sl *slice, next string) bool {
	if next == "" || next == r.Cursor || r.Cursors.Seen(next) || time.Since(sl.start) > sl.budget || !sl.fits(sl.pageLimit) {
		return false
	}
	fresh, err := s.store.GetRun(ctx, s.db, r.TenantID, r.ID)
	return err == nil && !fresh.Status.Terminal() && !fresh.CancelRequested
}

// startReadAhead starts reading the page at cursor, within limit.
func startReadAhead(ctx context.Context, a Adapter, call Call, cursor string, size int, limit time.Duration) *readAhead {
	actx, cancel := context.WithTimeout(ctx, limit)
	ra := &readAhead{cursor: cursor, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(ra.done)
		ra.page, ra.err = a.Import(actx, call, cursor, size)
		ra.timedOut = errors.Is(actx.Err(), context.DeadlineExceeded)
	}()
	return ra
}

// wait waits for the read to end (or ctx) and returns its error, and
// whether it ran out of time.
func (ra *readAhead) wait(ctx context.Context) (timedOut bool, err error) {
	select {
	case <-ra.done:
		return ra.timedOut, ra.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// drop stops a read no batch will use and waits for it to return; nil is
// a no-op.
func (ra *readAhead) drop() {
	if ra == nil {
		return
	}
	ra.cancel()
	<-ra.done
}

// slice is one job attempt's share of a run: when it started, how long
// it moves batches, how long one source call may take, and when the job's
// time is up (zero: no limit).
type slice struct {
	start     time.Time
	budget    time.Duration
	pageLimit time.Duration
	deadline  time.Time
}

// fits reports whether d more fits in the job's time.
func (sl *slice) fits(d time.Duration) bool {
	return sl.deadline.IsZero() || time.Until(sl.deadline) > d
}

// sliceBudget is how long one job attempt moves batches before it snoozes
// (at most half the attempt's time limit, one minute by default, leaving
// room for a batch's retries).
const sliceBudget = 20 * time.Second

// begin moves a pending run to running, with its event.
func (s *Service) begin(ctx context.Context, r *Run) error {
	if r.Status != StatusPending {
		return nil
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		fresh, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		*r = *fresh
		if r.Status != StatusPending {
			return nil
		}
		r.Status, r.UpdatedAt = StatusRunning, tx.Now()
		if err := s.store.UpdateRun(ctx, tx, r); err != nil {
			return err
		}
		if r.ProgressJobID != nil && s.opts.Progress != nil {
			if err := s.opts.Progress.Begin(ctx, tx, *r.ProgressJobID); err != nil {
				return err
			}
		}
		_, err = tx.EmitData(ctx, EventRunStarted, store.Scope{TenantID: r.TenantID, OrganizationID: r.OrganizationID}, r)
		return err
	})
}

// fail ends the run failed with message (the job itself succeeds: the
// failure is the run's).
func (s *Service) fail(ctx context.Context, r *Run, message string) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		fresh, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		if fresh.Status.Terminal() {
			return nil
		}
		return s.finish(ctx, tx, fresh, StatusFailed, message)
	})
}

// batch moves one batch: it reads the page (or the local records) outside
// any transaction, with retries, then commits the writes, the cursor, the
// counters and the progress together. done reports that the run ended.
//
// An import's batch uses the page read ahead for it (ahead, nil when
// none), and starts reading the page after it before it writes, so that
// the source's answer and the batch's writes overlap; next is that read
// when the run goes on.
func (s *Service) batch(ctx context.Context, r *Run, a Adapter, call Call, sl *slice, ahead *readAhead) (done bool, next *readAhead, err error) {
	defer ahead.drop() // used by now, or not to be
	if ahead != nil && (ahead.cursor != r.Cursor || r.PageAttempts == 0) {
		ahead.drop() // not this batch's page, or not counted
		ahead = nil
	}
	if ahead == nil {
		// A cancel request (or a cancel by another process) shows in the
		// row. (A page read ahead was started after the same check.)
		fresh, err := s.store.GetRun(ctx, s.db, r.TenantID, r.ID)
		if err != nil {
			return false, nil, err
		}
		if fresh.Status.Terminal() {
			return true, nil, nil
		}
		if fresh.CancelRequested {
			return true, nil, s.cancel(ctx, r)
		}
	}
	if r.Direction == Export {
		done, err := s.exportBatch(ctx, r, a, call, sl)
		return done, nil, err
	}
	var page *ImportBatch
	done, err = s.attempts(ctx, r, sl, ahead, func(ctx context.Context) error {
		var err error
		page, err = a.Import(ctx, call, r.Cursor, r.BatchSize)
		return err
	})
	if done || err != nil {
		return done, nil, err
	}
	if page == nil {
		page = ahead.page // the read ahead was the attempt that succeeded
	}
	var ra *readAhead
	if s.mayReadAhead(ctx, r, sl, page.NextCursor) {
		ra = startReadAhead(ctx, a, call, page.NextCursor, r.BatchSize, sl.pageLimit)
	}
	// The transaction may run more than once (store.DB.Tx retries a
	// deadlock): each try starts from the row and the page, and r takes
	// the row as the try that committed left it.
	from := r.Cursor
	var written Run
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := jobs.Fence(ctx, tx); err != nil {
			return err // this job's run lost its lease: another process runs it
		}
		cur, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		if cur.Status.Terminal() || cur.Cursor != from {
			return errStale
		}
		ups := make([]Upsert, len(page.Items))
		for i, it := range page.Items {
			ups[i] = Upsert{RecordID: RecordID(r.TenantID, r.IntegrationID, r.EntityType, it.ExternalID), Values: it.Data}
		}
		outcomes, err := s.opts.Records.Upsert(ctx, tx, r.EntityType, ups)
		if err != nil {
			return err
		}
		for i, o := range outcomes {
			switch {
			case o.Err != nil:
				cur.FailedCount++
				if err := s.opts.Integrations.Log(ctx, tx, LogEntry{IntegrationID: r.IntegrationID, RunID: r.ID, Level: "warn",
					Message: fmt.Sprintf("Item %s was not imported: %v", page.Items[i].ExternalID, o.Err), Code: "item_failed",
					EntityType: r.EntityType, EntityID: ups[i].RecordID}); err != nil {
					return err
				}
			case o.Skipped:
				cur.SkippedCount++
			case o.Created:
				cur.CreatedCount++
			default:
				cur.UpdatedCount++
			}
		}
		cur.BatchesCompleted++
		cur.PageAttempts, cur.LastError = 0, nil
		last := page.NextCursor == ""
		var cycle bool
		if !last {
			cur.Cursors.add(cur.Cursor, cur.BatchesCompleted, s.opts.CursorMemory)
			cycle = cur.Cursors.Seen(page.NextCursor)
			cur.Cursor = page.NextCursor
			if ra != nil {
				cur.PageAttempts = 1 // the next page's read, under way
			}
		}
		cur.UpdatedAt = tx.Now()
		if err := s.progress(ctx, tx, cur, page.TotalEstimate); err != nil {
			return err
		}
		switch {
		case last:
			err = s.finish(ctx, tx, cur, StatusCompleted, "")
		case cycle:
			// The page's records stay, as any committed page's do; the
			// source would only send the same pages again.
			err = s.finish(ctx, tx, cur, StatusFailed, fmt.Sprintf("the source's nextCursor %s was already read in this run: "+
				"its pages go round in a cycle, so the run stopped", quoteCursor(page.NextCursor)))
		default:
			err = s.store.UpdateRun(ctx, tx, cur)
		}
		written = *cur
		return err
	})
	if err == nil {
		*r = written
	}
	if err != nil || r.Status.Terminal() {
		ra.drop()
		ra = nil
	}
	switch {
	case errors.Is(err, errStale):
		return true, nil, nil // another worker moved the run on
	case errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrInvalid):
		// The batch cannot be written as it is (a record id taken by
		// another entity, the entity gone): retrying would fail again.
		return true, nil, s.fail(ctx, r, cmp.Or(store.PublicMessage(err), err.Error()))
	}
	return err == nil && r.Status.Terminal(), ra, err
}

// quoteCursor quotes a cursor for a message, cut to 64 bytes.
func quoteCursor(c string) string {
	if len(c) > 64 {
		c = strings.ToValidUTF8(c[:64], "") + "…"
	}
	return strconv.Quote(c)
}

// errStale: the run changed under the batch (another process ran it).
var errStale = errors.New("datasync: the run moved on")

// cancel ends the run cancelled (a cancel was requested).
func (s *Service) cancel(ctx context.Context, r *Run) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		cur, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil || cur.Status.Terminal() {
			return err
		}
		return s.finish(ctx, tx, cur, StatusCancelled, "")
	})
}

// exportBatch sends the next batch of local records (those of the
// organizations the run may read, by the scope in ctx).
func (s *Service) exportBatch(ctx context.Context, r *Run, a Adapter, call Call, sl *slice) (bool, error) {
	items, err := s.opts.Records.Read(ctx, r.EntityType, r.Cursor, r.BatchSize)
	if err != nil {
		return false, err
	}
	var results []ExportResult
	if len(items) > 0 {
		done, err := s.attempts(ctx, r, sl, nil, func(ctx context.Context) error {
			var err error
			results, err = a.Export(ctx, call, items)
			return err
		})
		if done || err != nil {
			return done, err
		}
	}
	from := r.Cursor // as in batch: a retried transaction starts over
	var written Run
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := jobs.Fence(ctx, tx); err != nil {
			return err // this job's run lost its lease: another process runs it
		}
		cur, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		if cur.Status.Terminal() || cur.Cursor != from {
			return errStale
		}
		for _, res := range results {
			switch res.Status {
			case "success":
				cur.UpdatedCount++
			case "skipped":
				cur.SkippedCount++
			default:
				cur.FailedCount++
			}
		}
		if len(items) > 0 {
			cur.BatchesCompleted++
			cur.Cursor = items[len(items)-1].LocalID
		}
		cur.PageAttempts, cur.LastError = 0, nil
		cur.UpdatedAt = tx.Now()
		if err := s.progress(ctx, tx, cur, nil); err != nil {
			return err
		}
		if len(items) < cur.BatchSize {
			err = s.finish(ctx, tx, cur, StatusCompleted, "")
		} else {
			err = s.store.UpdateRun(ctx, tx, cur)
		}
		written = *cur
		return err
	})
	if errors.Is(err, errStale) {
		return true, nil
	}
	if err == nil {
		*r = written
	}
	return err == nil && r.Status.Terminal(), err
}

// progress reports the run's processed count to its progress job.
func (s *Service) progress(ctx context.Context, tx *store.Tx, r *Run, total *int64) error {
	if r.ProgressJobID == nil || s.opts.Progress == nil {
		return nil
	}
	processed := r.CreatedCount + r.UpdatedCount + r.SkippedCount + r.FailedCount
	return s.opts.Progress.Report(ctx, tx, *r.ProgressJobID, processed, total)
}

// attempts makes the batch's source call (fn) until it succeeds or the
// run ends (done: cancelled, failed, moved on by another process). Each
// attempt is counted in the run's row before it is made and gets
// sl.pageLimit; a retryable failure is tried again after the backoff
// wait, up to Options.MaxAttempts attempts in all, then the run fails
// with the last error. When the job has not the time for the wait and an
// attempt, it hands the run back to the queue (snooze), the count kept.
// A read ahead (nil when none) is the first attempt, already counted.
func (s *Service) attempts(ctx context.Context, r *Run, sl *slice, ahead *readAhead, fn func(context.Context) error) (done bool, err error) {
	for {
		var timedOut bool
		if ahead != nil {
			timedOut, err = ahead.wait(ctx)
			ahead = nil
		} else {
			if !sl.fits(sl.pageLimit) {
				return false, jobs.Snooze(0)
			}
			if done, err := s.countAttempt(ctx, r); done || err != nil {
				return done, err
			}
			actx, cancel := context.WithTimeout(ctx, sl.pageLimit)
			err = fn(actx)
			timedOut = errors.Is(actx.Err(), context.DeadlineExceeded)
			cancel()
		}
		switch {
		case err == nil:
			return false, nil
		case ctx.Err() != nil:
			// The process is stopping: the job runs again later and
			// resumes, this attempt counted.
			return false, ctx.Err()
		case timedOut:
			err = &SourceError{Retryable: true, Message: fmt.Sprintf("no complete answer within %s (the page time limit)",
				sl.pageLimit.Round(10*time.Millisecond))}
		}
		n := r.PageAttempts
		if !retryable(err) || n >= s.opts.MaxAttempts {
			msg := err.Error()
			if retryable(err) {
				msg += gaveUp(n)
			}
			return true, s.fail(context.WithoutCancel(ctx), r, msg)
		}
		wait := s.backoff(n)
		s.logger.Warn("datasync: source call failed; retrying", "run", r.ID, "attempt", n, "err", err)
		if done, err := s.noteError(ctx, r, err.Error()); done || err != nil {
			return done, err
		}
		if !sl.fits(wait + sl.pageLimit) {
			return false, jobs.Snooze(wait)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// backoff is the wait after the n-th failed attempt (from 1).
func (s *Service) backoff(n int) time.Duration {
	if len(s.opts.Backoff) == 0 {
		return 0
	}
	return s.opts.Backoff[min(n, len(s.opts.Backoff))-1]
}

// gaveUp is the note a run failed after n attempts ends its lastError with.
func gaveUp(n int) string {
	if n == 1 {
		return " (gave up after 1 attempt)"
	}
	return fmt.Sprintf(" (gave up after %d attempts)", n)
}

// countAttempt counts an attempt at the run's current batch in its row,
// unless the run ended, a cancel was asked for (the run ends cancelled)
// or the attempts are spent (a job stopped during the last one: the run
// fails with the last error noted).
func (s *Service) countAttempt(ctx context.Context, r *Run) (done bool, err error) {
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		cur, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		switch {
		case cur.Status.Terminal() || cur.Cursor != r.Cursor:
			return errStale
		case cur.CancelRequested:
			done = true
			return s.finish(ctx, tx, cur, StatusCancelled, "")
		case cur.PageAttempts >= s.opts.MaxAttempts:
			done = true
			last := "the source call did not finish"
			if cur.LastError != nil {
				last = *cur.LastError
			}
			return s.finish(ctx, tx, cur, StatusFailed, last+gaveUp(cur.PageAttempts))
		}
		cur.PageAttempts++
		cur.UpdatedAt = tx.Now()
		if err := s.store.UpdateRun(ctx, tx, cur); err != nil {
			return err
		}
		*r = *cur
		return nil
	})
	if errors.Is(err, errStale) {
		return true, nil
	}
	return done, err
}

// noteError keeps a failed attempt's error as the running run's
// lastError, so that a run retrying says why (and a resumed job knows).
func (s *Service) noteError(ctx context.Context, r *Run, message string) (done bool, err error) {
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		cur, err := s.store.LockRun(ctx, tx, r.TenantID, r.ID)
		if err != nil {
			return err
		}
		if cur.Status.Terminal() || cur.Cursor != r.Cursor {
			return errStale
		}
		cur.LastError, cur.UpdatedAt = &message, tx.Now()
		if err := s.store.UpdateRun(ctx, tx, cur); err != nil {
			return err
		}
		*r = *cur
		return nil
	})
	if errors.Is(err, errStale) {
		return true, nil
	}
	return false, err
}
