package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Args is the payload of a job. Kind names the worker that handles it
// (letters, digits, '.', '_', '-'; for example "webhooks.delivery"); the
// value is stored as JSON, so keep it small and give it JSON tags.
type Args interface {
	// Kind names the job's worker; it must be constant per type.
	Kind() string
}

// Job is a job being worked.
type Job[T Args] struct {
	// ID identifies the job; Engine.Cancel and Engine.Get take it.
	ID int64
	// Args is the payload given at enqueue time.
	Args T
	// Attempt counts from 1 for the first run.
	Attempt int
	// Run numbers the job's runs, one higher at each (River's attempt
	// plus the job's snoozes): the fencing token of its lease. Only the
	// run holding the lease records anything (see Fence).
	Run int
	// MaxAttempts is the number of attempts after which the job is given up.
	MaxAttempts int
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time
	// Errors holds the errors of the earlier attempts, oldest first.
	Errors []string
}

// Worker handles jobs of one kind. A returned error schedules a retry
// (unless it is wrapped with Cancel, or the attempts are used up); returning
// nil completes the job. Work must return promptly when ctx is done.
//
// A worker may also implement
//
//	NextRetry(job *Job[T]) time.Time      // its own retry schedule
//	Timeout(job *Job[T]) time.Duration    // its own time limit (default 1 minute)
type Worker[T Args] interface {
	// Work runs one attempt of job.
	Work(ctx context.Context, job *Job[T]) error
}

// WorkFunc adapts a function to Worker.
type WorkFunc[T Args] func(ctx context.Context, job *Job[T]) error

// Work calls f.
func (f WorkFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// Cancel wraps err so that the job is not retried: it ends in state
// cancelled with err recorded. Use it for errors no retry can fix.
func Cancel(err error) error { return river.JobCancel(err) }

// Snooze makes the job run again after d without counting an attempt (for
// example to honour a Retry-After header).
func Snooze(d time.Duration) error { return river.JobSnooze(d) }

// ErrUnknownJob is returned by Get and Cancel for an id that does not exist.
var ErrUnknownJob = errors.New("jobs: no such job")

// State is where a job is in its life.
type State string

// Job states, as River names them.
const (
	StateAvailable State = "available" // waiting for a worker
	StateScheduled State = "scheduled" // waiting for its time
	StateRunning   State = "running"
	StateRetryable State = "retryable" // failed, will run again
	StateCompleted State = "completed"
	StateCancelled State = "cancelled"
	StateDiscarded State = "discarded" // attempts used up
	StatePending   State = "pending"
)

// Info describes a stored job.
type Info struct {
	ID          int64
	Kind        string          // the Args' Kind: which worker runs it
	State       State           // where the job is in its life (State constants)
	Attempt     int             // attempts started so far
	MaxAttempts int             // attempts after which the job is given up
	Args        json.RawMessage // the payload, as JSON
	// Progress is the last value recorded with Progress (or the job's
	// output at completion), as JSON; nil when none.
	Progress    json.RawMessage
	Errors      []string // the errors of the failed attempts, oldest first
	CreatedAt   time.Time
	ScheduledAt time.Time  // when the job is (or was) due to run
	FinalizedAt *time.Time // when it completed, was cancelled or given up; nil before
}

// Finalized reports whether the job will not run again.
func (i *Info) Finalized() bool {
	switch i.State {
	case StateCompleted, StateCancelled, StateDiscarded:
		return true
	}
	return false
}

func infoFromRow(row *rivertype.JobRow) *Info {
	info := &Info{
		ID:          row.ID,
		Kind:        row.Kind,
		State:       State(row.State),
		Attempt:     row.Attempt,
		MaxAttempts: row.MaxAttempts,
		Args:        row.EncodedArgs,
		CreatedAt:   row.CreatedAt.UTC(),
		ScheduledAt: row.ScheduledAt.UTC(),
		FinalizedAt: row.FinalizedAt,
		Progress:    row.Output(),
	}
	for _, e := range row.Errors {
		info.Errors = append(info.Errors, e.Error)
	}
	return info
}

func jobFromRiver[T Args](j *river.Job[T]) *Job[T] {
	job := &Job[T]{
		ID:          j.ID,
		Args:        j.Args,
		Attempt:     j.Attempt,
		Run:         runNumber(j.Attempt, j.Metadata),
		MaxAttempts: j.MaxAttempts,
		CreatedAt:   j.CreatedAt.UTC(),
	}
	for _, e := range j.JobRow.Errors {
		job.Errors = append(job.Errors, e.Error)
	}
	return job
}

// workerAdapter turns a Worker into River's worker interface.
type workerAdapter[T Args] struct {
	e *Engine
	w Worker[T]
}

func (a workerAdapter[T]) Middleware(*rivertype.JobRow) []rivertype.WorkerMiddleware { return nil }

func (a workerAdapter[T]) NextRetry(j *river.Job[T]) time.Time {
	if r, ok := a.w.(interface{ NextRetry(*Job[T]) time.Time }); ok {
		return r.NextRetry(jobFromRiver(j))
	}
	return time.Time{}
}

func (a workerAdapter[T]) Timeout(j *river.Job[T]) time.Duration {
	if r, ok := a.w.(interface{ Timeout(*Job[T]) time.Duration }); ok {
		return r.Timeout(jobFromRiver(j))
	}
	return 0
}

// Work runs the worker under a lease on the job (see lease.go): renewed
// while it runs, its outcome recorded only if this attempt still holds it.
func (a workerAdapter[T]) Work(ctx context.Context, j *river.Job[T]) error {
	ctx, cancelWork := context.WithCancelCause(ctx)
	defer cancelWork(nil)
	l := &lease{e: a.e, id: j.ID, run: runNumber(j.Attempt, j.Metadata), cancel: cancelWork}
	ctx = context.WithValue(ctx, runningKey{}, running{engine: a.e, id: j.ID, lease: l})
	start := time.Now()
	stop := l.keep()
	err := a.w.Work(ctx, jobFromRiver(j))
	stop()
	err = l.finish(ctx, err)
	if a.e.observe == nil {
		return err
	}
	outcome := OutcomeCompleted
	var cancel *rivertype.JobCancelError
	var snooze *rivertype.JobSnoozeError
	switch {
	case errors.As(err, &cancel):
		outcome = OutcomeCancelled
	case errors.As(err, &snooze):
		outcome = OutcomeSnoozed
	case err != nil:
		outcome = OutcomeFailed
	}
	a.e.observe(j.Kind, outcome, time.Since(start))
	return err
}

type runningKey struct{}

type running struct {
	engine *Engine
	id     int64
	lease  *lease
}

// Progress records v (JSON-encoded) as the running job's progress, visible
// at once through Engine.Get. Call it from Work.
func Progress(ctx context.Context, v any) error {
	r, ok := ctx.Value(runningKey{}).(running)
	if !ok {
		return errors.New("jobs: Progress called outside Work")
	}
	return r.engine.client.update(ctx, r.id, v)
}

// CancelRequested reports whether Engine.Cancel was called for the running
// job. On PostgreSQL a cancel also cancels Work's context; on SQLite it may
// not, so long-running workers call this between steps and stop (returning
// Cancel(…)) when it reports true.
func CancelRequested(ctx context.Context) (bool, error) {
	r, ok := ctx.Value(runningKey{}).(running)
	if !ok {
		return false, errors.New("jobs: CancelRequested called outside Work")
	}
	row, err := r.engine.client.get(context.WithoutCancel(ctx), r.id)
	if err != nil {
		return false, err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(row.Metadata, &meta); err != nil {
		return false, err
	}
	_, requested := meta["cancel_attempted_at"]
	return requested, nil
}

// JobID returns the id of the job Work is running, and false outside Work.
func JobID(ctx context.Context) (int64, bool) {
	r, ok := ctx.Value(runningKey{}).(running)
	return r.id, ok
}
