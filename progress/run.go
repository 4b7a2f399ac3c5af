package progress

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// reportInterval is how often a Reporter writes: Report calls in between
// only keep the counts, which the next write (or the finish) records.
const reportInterval = time.Second

// Run runs fn as a job of its own, for work that has no transaction of
// its own to report in: it creates the job and begins it (one
// transaction: events created and started), calls fn with a Reporter,
// and finishes the job from fn's result (another transaction, which also
// records the last counts reported): nil completes it; an error wrapping
// ErrCancelRequested cancels it; any other error fails it, with the
// error's public message (store.PublicMessage) or "The job failed" as
// its ErrorMessage, since other errors' text is not shown to users.
//
// While fn runs, a heartbeat is sent every StaleAfter/4, so that a long
// step without Report does not make the job look stale; if the process
// dies, the heartbeats stop and the job shows failed after StaleAfter.
// The finish is written even when ctx was cancelled meanwhile.
//
// Run returns the finished job and fn's error (joined with the finish's,
// if that failed). Invalid input fails before fn is called.
func (s *Service) Run(ctx context.Context, in CreateInput, fn func(ctx context.Context, r *Reporter) error) (*Job, error) {
	var j *Job
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		created, err := s.CreateTx(ctx, tx, in)
		if err != nil {
			return err
		}
		j, err = s.BeginTx(ctx, tx, created.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := &Reporter{s: s, id: j.ID}

	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	var beats sync.WaitGroup
	beats.Go(func() { r.heartbeats(beatCtx, s.staleAfter/4) })
	runErr := func() error {
		defer func() { stopBeats(); beats.Wait() }()
		return fn(ctx, r)
	}()

	status, msg := StatusCompleted, ""
	switch {
	case runErr == nil:
	case errors.Is(runErr, ErrCancelRequested):
		status, msg = StatusCancelled, store.PublicMessage(runErr)
	default:
		status, msg = StatusFailed, store.PublicMessage(runErr)
		if msg == "" {
			msg = "The job failed"
		}
	}
	finishCtx := context.WithoutCancel(ctx)
	err = s.db.Tx(finishCtx, func(tx *store.Tx) error {
		if processed, total, dirty := r.pending(); dirty {
			if _, err := s.ReportTx(finishCtx, tx, r.id, processed, total); err != nil {
				return err
			}
		}
		var err error
		j, err = s.FinishTx(finishCtx, tx, r.id, status, msg)
		return err
	})
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	return j, runErr
}

// Reporter reports the progress of the job Run runs. Its methods are
// safe for concurrent use.
type Reporter struct {
	s  *Service
	id string

	mu              sync.Mutex
	processed       int64
	total           *int64
	dirty           bool
	lastWrite       time.Time
	cancelRequested bool
}

// ID is the job's id.
func (r *Reporter) ID() string { return r.id }

// Report records processed items and, when total is not nil, the total
// (nil keeps the last one given, or the job's). It writes at most once a
// second (reportInterval), in a transaction of its own; the counts of
// the calls in between are kept and written by the next write or when
// Run finishes the job. It returns ErrCancelRequested once the job's
// cancellation was requested (as seen by the last write or heartbeat):
// fn should then stop and return it. Negative counts are a
// store.ValidationError.
func (r *Reporter) Report(ctx context.Context, processed int64, total *int64) error {
	if err := checkCounts(processed, total); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processed, r.dirty = processed, true
	if total != nil {
		r.total = clone(total)
	}
	if time.Since(r.lastWrite) >= reportInterval {
		j, err := r.s.Report(ctx, r.id, r.processed, r.total)
		if err != nil {
			return err
		}
		r.dirty, r.lastWrite = false, time.Now()
		r.cancelRequested = r.cancelRequested || j.CancelRequested
	}
	if r.cancelRequested {
		return ErrCancelRequested
	}
	return nil
}

// CancelRequested reports whether the job's cancellation was requested,
// as seen by the last write or heartbeat.
func (r *Reporter) CancelRequested() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelRequested
}

// pending returns the counts not written yet.
func (r *Reporter) pending() (int64, *int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.processed, r.total, r.dirty
}

// heartbeats renews the job's heartbeat every interval until ctx ends,
// and notes a requested cancellation. A failed heartbeat is retried at
// the next tick.
func (r *Reporter) heartbeats(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(max(interval, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j, err := r.s.Heartbeat(ctx, r.id)
		if err == nil && j.CancelRequested {
			r.mu.Lock()
			r.cancelRequested = true
			r.mu.Unlock()
		}
	}
}
