package progress

import (
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/jobstatus"
	"github.com/tenantkit/tenantkit/store"
)

// Status is a job's state: the status of long-running work
// (jobstatus.Status), the type a data sync run's status also has. A job
// starts pending, runs, and ends in one of the terminal states
// completed, failed or cancelled (Status.Terminal).
type Status = jobstatus.Status

// The job statuses.
const (
	// StatusPending: created, not begun.
	StatusPending = jobstatus.Pending
	// StatusRunning: begun (Begin), reporting progress.
	StatusRunning = jobstatus.Running
	// StatusCompleted: finished successfully.
	StatusCompleted = jobstatus.Completed
	// StatusFailed: finished with an error, or shown so because its
	// worker stopped sending heartbeats (Job.Stale).
	StatusFailed = jobstatus.Failed
	// StatusCancelled: finished early after a cancellation.
	StatusCancelled = jobstatus.Cancelled
)

// Job is one long-running piece of work and its progress, in one tenant
// (and the organization active when it was created).
type Job struct {
	// ID is a UUIDv7 (store.NewID).
	ID       string
	TenantID string
	// OrganizationID is the scope's active organization at creation; ""
	// (stored NULL) makes the job visible to every organization of the
	// tenant.
	OrganizationID string
	// JobType names the kind of work ("entities.export").
	JobType string
	// Name and Description are shown to people.
	Name        string
	Description string
	// Status is the job's status as shown: the stored one, except that a
	// running job whose heartbeat is older than Options.StaleAfter is
	// shown failed (see Stale).
	Status Status
	// ProcessedCount is how many items were processed.
	ProcessedCount int64
	// TotalCount is how many items there are; nil when unknown.
	TotalCount *int64
	// ProgressPercent is 0…100: ⌊processed·100/total⌋ capped at 100 while
	// the total is known and not 0, 0 while it is unknown (or 0), and 100
	// once completed.
	ProgressPercent int
	// ETASeconds estimates the seconds left, from the rate since
	// StartedAt; nil when it cannot be estimated (not running, unknown
	// total, nothing processed yet, no time elapsed).
	ETASeconds *int64
	// Cancellable jobs may be asked to stop (Service.RequestCancel).
	Cancellable bool
	// CancelRequested is set by RequestCancel; the worker reads it
	// (Service.CancelRequested, the job Report returns, Reporter.Report)
	// and finishes the job as cancelled.
	CancelRequested bool
	// Meta is the creator's own data about the job: a JSON object, {}
	// when none. It is not shown by the HTTP API.
	Meta json.RawMessage
	// StartedAt is when the job began (nil while pending, or when it was
	// finished without beginning).
	StartedAt *time.Time
	// FinishedAt is when the job reached a terminal status; for a stale
	// job, its last heartbeat plus Options.StaleAfter.
	FinishedAt *time.Time
	// HeartbeatAt is the last sign of life from the worker: creation,
	// Begin, Report, Heartbeat, Finish.
	HeartbeatAt time.Time
	// ErrorMessage says why a job failed or was cancelled ("" for none).
	// It is shown to the tenant's users: pass a message meant for them.
	ErrorMessage string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Stale is true when the stored status is running but the heartbeat
	// is older than Options.StaleAfter: Status then reads failed,
	// ErrorMessage "No heartbeat for 60 s" and FinishedAt heartbeat plus
	// StaleAfter. Nothing of this is written; a later Report, Heartbeat or
	// Begin makes the job running again, and Finish finishes it as usual.
	Stale bool
}

// scope is the job's own scope, which its events carry.
func (j *Job) scope() store.Scope {
	return store.Scope{TenantID: j.TenantID, OrganizationID: j.OrganizationID}
}

// CreateInput describes a new job.
type CreateInput struct {
	// JobType is required: a lowercase letter, then lowercase letters,
	// digits, '.', '_' or '-'; at most MaxJobTypeLength characters.
	JobType string
	// Name is required, at most MaxNameLength characters.
	Name string
	// Description is optional, at most MaxDescriptionLength characters.
	Description string
	// Total is the number of items, when known at creation (≥ 0).
	Total *int64
	// Cancellable allows RequestCancel.
	Cancellable bool
	// Meta is a JSON object (nil means {}), at most MaxMetaBytes.
	Meta json.RawMessage
}

// Active is what GET /progress/active answers: the scope's pending and
// running jobs and the ones that finished lately.
type Active struct {
	// Active are the pending and running (not stale) jobs, newest
	// created first, at most ActiveLimit.
	Active []*Job
	// RecentlyCompleted are the jobs that finished (completed, failed,
	// cancelled, or stale) within Options.RecentWindow, latest finished
	// first, at most RecentLimit.
	RecentlyCompleted []*Job
}

// Limits.
const (
	// MaxJobTypeLength bounds CreateInput.JobType.
	MaxJobTypeLength = 100
	// MaxNameLength bounds CreateInput.Name.
	MaxNameLength = 200
	// MaxDescriptionLength bounds CreateInput.Description.
	MaxDescriptionLength = 2000
	// MaxErrorMessageLength is where Finish cuts an error message.
	MaxErrorMessageLength = 2000
	// MaxMetaBytes bounds CreateInput.Meta.
	MaxMetaBytes = 16 << 10
	// ActiveLimit bounds Active.Active.
	ActiveLimit = 50
	// RecentLimit bounds Active.RecentlyCompleted.
	RecentLimit = 20
)

// Defaults of Options.
const (
	// DefaultStaleAfter is how long a running job may go without a
	// heartbeat before it is shown failed.
	DefaultStaleAfter = 60 * time.Second
	// DefaultRecentWindow is how long a finished job stays in
	// Active.RecentlyCompleted.
	DefaultRecentWindow = 10 * time.Minute
)

// Errors a caller can test with errors.Is. Each wraps a store error kind,
// which httpapi maps to a status.
var (
	// ErrJobNotFound: no job of that id in the caller's scope (another
	// tenant's, or an organization the scope cannot read, included). It
	// is a store.ErrNotFound.
	ErrJobNotFound = store.Errorf(store.ErrNotFound, "Job not found")
	// ErrFinished: the job already reached a terminal status (Begin,
	// Report, Heartbeat, RequestCancel, or Finish with another status).
	// It is a store.ErrConflict.
	ErrFinished = store.Errorf(store.ErrConflict, "The job has already finished")
	// ErrNotRunning: Report or Heartbeat of a job that has not begun. It
	// is a store.ErrConflict.
	ErrNotRunning = store.Errorf(store.ErrConflict, "The job has not begun")
	// ErrNotCancellable: RequestCancel of a job created without
	// Cancellable. It is a store.ErrConflict.
	ErrNotCancellable = store.Errorf(store.ErrConflict, "The job cannot be cancelled")
	// ErrCancelRequested is what Reporter.Report returns once the job's
	// cancellation was requested; a Run function that returns it (or an
	// error wrapping it) finishes its job as cancelled. It is a
	// store.ErrConflict.
	ErrCancelRequested = store.Errorf(store.ErrConflict, "The job was cancelled")
)

// Event types emitted by the area, one per status change (never per
// Report).
const (
	EventJobCreated   = "progress.job.created"
	EventJobStarted   = "progress.job.started"
	EventJobCompleted = "progress.job.completed"
	EventJobFailed    = "progress.job.failed"
	EventJobCancelled = "progress.job.cancelled"
)

// EventTypes describes the events the area emits.
var EventTypes = []store.EventType{
	{ID: EventJobCreated, Label: "Job created", Description: "A long-running job was created (pending).",
		ClientBroadcast: true, ViewFeature: "progress.view"},
	{ID: EventJobStarted, Label: "Job started", Description: "A job began running.",
		ClientBroadcast: true, ViewFeature: "progress.view"},
	{ID: EventJobCompleted, Label: "Job completed", Description: "A job finished successfully.",
		ClientBroadcast: true, ViewFeature: "progress.view"},
	{ID: EventJobFailed, Label: "Job failed", Description: "A job finished with an error.",
		ClientBroadcast: true, ViewFeature: "progress.view"},
	{ID: EventJobCancelled, Label: "Job cancelled", Description: "A job stopped after its cancellation was requested.",
		ClientBroadcast: true, ViewFeature: "progress.view"},
}

// JobEvent is the data of every progress.job.* event: the job after the
// change.
type JobEvent struct {
	ID             string `json:"id"`
	JobType        string `json:"jobType"` // the job's kind, as given to Create
	Name           string `json:"name"`
	Status         Status `json:"status"`                 // the job's status after the change
	ProcessedCount int64  `json:"processedCount"`         // items processed so far
	TotalCount     *int64 `json:"totalCount"`             // items in all; nil while unknown
	ErrorMessage   string `json:"errorMessage,omitempty"` // why a failed or cancelled job ended
}

func eventOf(j *Job) JobEvent {
	return JobEvent{ID: j.ID, JobType: j.JobType, Name: j.Name, Status: j.Status, ProcessedCount: j.ProcessedCount,
		TotalCount: j.TotalCount, ErrorMessage: j.ErrorMessage}
}

// finishEvents maps a terminal status to its event.
var finishEvents = map[Status]string{
	StatusCompleted: EventJobCompleted,
	StatusFailed:    EventJobFailed,
	StatusCancelled: EventJobCancelled,
}
