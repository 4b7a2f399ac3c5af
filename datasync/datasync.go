package datasync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tenantkit/tenantkit/jobstatus"
	"github.com/tenantkit/tenantkit/store"
)

// Status is a run's status: the status of long-running work
// (jobstatus.Status), the type a progress job's status also has, so a
// run's final status passes to its progress job as it is.
type Status = jobstatus.Status

// Run statuses. Completed, failed and cancelled are terminal
// (Status.Terminal); paused is a status the API may show but nothing sets
// it.
const (
	StatusPending   = jobstatus.Pending
	StatusRunning   = jobstatus.Running
	StatusCompleted = jobstatus.Completed
	StatusFailed    = jobstatus.Failed
	StatusCancelled = jobstatus.Cancelled
	StatusPaused    = Status("paused")
)

// Run is one import or export of an integration's records of one entity
// type.
type Run struct {
	ID             string `json:"id"`
	TenantID       string `json:"-"`
	OrganizationID string `json:"-"`
	// OrganizationIDs are the organizations whose records the run may
	// read and write, those the caller who started it may read (records
	// of no organization are always readable); nil means every
	// organization of the tenant. An export sends only such records; an
	// import updates only such records (ErrOutsideScope for others'); the
	// job that carries the run, resumed or rescued, reads them from the
	// run.
	OrganizationIDs []string  `json:"-"`
	ProgressJobID   *string   `json:"progressJobId"`
	IntegrationID   string    `json:"integrationId"`
	EntityType      string    `json:"entityType"`
	Direction       Direction `json:"direction"`                       // import or export
	Status          Status    `json:"status" jsonschema:"enum=paused"` // see Status; the tag adds paused to the shared statuses in the API document
	// Cursor is where the next batch starts: the source's cursor for an
	// import, the last exported record's id for an export.
	Cursor           string  `json:"-"`
	FullSync         bool    `json:"-"`                // see RunInput.FullSync
	BatchSize        int     `json:"-"`                // records per batch (page)
	CreatedCount     int64   `json:"createdCount"`     // records created so far
	UpdatedCount     int64   `json:"updatedCount"`     // records updated so far
	SkippedCount     int64   `json:"skippedCount"`     // records left alone (see Outcome.Skipped)
	FailedCount      int64   `json:"failedCount"`      // records not written (see Outcome.Err)
	BatchesCompleted int64   `json:"batchesCompleted"` // batches committed
	LastError        *string `json:"lastError"`        // why the run failed; nil otherwise
	TriggeredBy      *string `json:"-"`                // who or what started it, as given; nil when not given
	// StartedBy is the caller who started the run (or asked for the
	// retry): store.Scope.ActorID, a user id or "api_key:<id>"; "" when
	// unknown. The Kit tells it when the run fails.
	StartedBy string `json:"-"`
	// RetryOf is the run this one retries, if any.
	RetryOf *string `json:"-"`
	// PageAttempts counts the attempts made at the source call of the
	// batch at Cursor (an import's page, an export's batch), each counted
	// before it is made, so that a job stopped during one (its time limit,
	// a restart) never starts the count again. A committed batch resets
	// it: to 1 when the worker reads the next page ahead, 0 otherwise.
	PageAttempts int `json:"-"`
	// Cursors is what the run remembers of the cursors it read pages at
	// (an import), to catch cursors that come back.
	Cursors         CursorHistory `json:"-"`
	CancelRequested bool          `json:"-"` // a cancel of the running run is asked; the job stops it
	CreatedAt       time.Time     `json:"createdAt"`
	UpdatedAt       time.Time     `json:"updatedAt"`
}

// Integration is what a run needs to know of its integration for a
// tenant (the Kit answers it from the integrations area).
type Integration struct {
	ID          string
	ProviderKey string // names the adapter
	Enabled     bool   // the tenant's state: a disabled integration runs nothing
	APIVersion  string // the version in use; "" when unversioned
	// Credentials are the tenant's credentials in clear; nil when none
	// are stored.
	Credentials map[string]any
}

// LogEntry is an integration log line a run writes.
type LogEntry struct {
	IntegrationID string
	RunID         string
	Level         string // info, warn or error
	Message       string
	Code          string          // a machine-readable code; "" when none
	Payload       json.RawMessage // JSON details; nil when none
	EntityType    string
	EntityID      string
}

// Integrations is how runs reach the integrations area: the integration
// of a tenant, and its log (written in the run's transaction).
type Integrations interface {
	// Integration returns the tenant's integration; an unknown id is an
	// error wrapping store.ErrNotFound.
	Integration(ctx context.Context, tenantID, integrationID string) (*Integration, error)
	// Log writes a log line of the tenant in ctx's scope on q.
	Log(ctx context.Context, q store.Querier, e LogEntry) error
}

// HealthRecorder is an Integrations that also keeps the outcome of
// connection checks: Validate reports each one it runs (healthy when the
// adapter's check passed, unhealthy otherwise, and how long it took) for
// the tenant in ctx's scope. A failure to record is logged, not returned.
type HealthRecorder interface {
	// RecordHealth stores one check's outcome for integrationID.
	RecordHealth(ctx context.Context, integrationID string, healthy bool, latency time.Duration) error
}

// Upsert is one record to create or update: its id (derived from the
// integration and the external id, so a re-run finds it) and values.
type Upsert struct {
	RecordID string
	Values   map[string]any // field key to value
}

// Outcome is what became of one Upsert.
type Outcome struct {
	Created bool // a new record was written (false: updated)
	// Skipped: the record exists but may not be written (deleted
	// locally).
	Skipped bool
	// Err is why the record was not written (a validation error, or
	// ErrOutsideScope); the run counts it failed and goes on.
	Err error
}

// ErrOutsideScope is an Outcome's Err for an item whose record exists in
// an organization the run may not read (Run.OrganizationIDs): an import
// never writes such a record, and tells nothing else of it.
var ErrOutsideScope = store.Errorf(store.ErrForbidden, "record exists in an organization this run may not write")

// Records is how runs reach the entities area (the Kit answers it):
// which entity types a tenant has, writing a batch of records in the
// run's transaction, and reading records to export.
type Records interface {
	// EntityTypes lists the active custom entities of the tenant in ctx.
	EntityTypes(ctx context.Context) ([]string, error)
	// Upsert writes the items as records of entityType in tx, with
	// validation and domain events, one outcome per item in order. New
	// records belong to the organization of the scope in ctx; an
	// existing record is updated only when that scope may read its
	// organization (store.Scope.AllowsOrganization), any other's item
	// failing with ErrOutsideScope.
	Upsert(ctx context.Context, tx *store.Tx, entityType string, items []Upsert) ([]Outcome, error)
	// Read returns up to limit live records of entityType with an id
	// greater than afterID, in id order.
	Read(ctx context.Context, entityType, afterID string, limit int) ([]ExportItem, error)
}

// ProgressJob is the summary of a run's progress job.
type ProgressJob struct {
	ID              string `json:"id"`
	Status          string `json:"status"`          // the job's status
	ProgressPercent int    `json:"progressPercent"` // 0 to 100
	ProcessedCount  int64  `json:"processedCount"`  // records processed so far
	TotalCount      *int64 `json:"totalCount"`      // records in all; nil while unknown
	EtaSeconds      *int64 `json:"etaSeconds"`      // estimated seconds left; nil while unknown
}

// Progress is how runs report progress (the Kit answers it from the
// progress area): every call runs in the run's transaction.
type Progress interface {
	// Create records a pending job named name in the scope of ctx and
	// returns its id.
	Create(ctx context.Context, tx *store.Tx, name string) (id string, err error)
	// Begin marks the job running (again, after a retried run).
	Begin(ctx context.Context, tx *store.Tx, id string) error
	// Report stores how many items are processed and, when known, the
	// total.
	Report(ctx context.Context, tx *store.Tx, id string, processed int64, total *int64) error
	// Finish ends the job with status; message is shown to the tenant's
	// users when the run failed or was cancelled.
	Finish(ctx context.Context, tx *store.Tx, id string, status Status, message string) error
	// Get returns the job's summary, for a run's answer.
	Get(ctx context.Context, id string) (*ProgressJob, error)
}

// Errors a caller can test with errors.Is.
var (
	ErrRunNotFound         = store.Errorf(store.ErrNotFound, "Run not found")
	ErrIntegrationNotFound = store.Errorf(store.ErrNotFound, "Integration or providerKey not found")
	ErrNoAdapter           = store.Errorf(store.ErrNotFound, "No registered sync adapter for provider")
	ErrDisabled            = store.Errorf(store.ErrConflict, "Integration is disabled")
	ErrInProgress          = store.Errorf(store.ErrConflict, "A sync run is already in progress for this integration and entity direction")
	ErrNotCancellable      = store.Errorf(store.ErrConflict, "Only pending or running runs can be cancelled")
	ErrNotRetryable        = store.Errorf(store.ErrConflict, "Only failed or cancelled runs can be retried")
	ErrMissingCredentials  = store.Errorf(store.ErrInvalid, "Missing credentials")
)

// Event types emitted by the area.
const (
	EventRunStarted   = "data_sync.run.started"
	EventRunCompleted = "data_sync.run.completed"
	EventRunFailed    = "data_sync.run.failed"
	EventRunCancelled = "data_sync.run.cancelled"
)

// EventTypes describes the events the area emits.
var EventTypes = []store.EventType{
	{ID: EventRunStarted, Label: "Sync run started", Description: "A data sync run began its first batch.",
		ClientBroadcast: true, ViewFeature: "data_sync.view"},
	{ID: EventRunCompleted, Label: "Sync run completed", Description: "A data sync run went through its last batch.",
		ClientBroadcast: true, ViewFeature: "data_sync.view"},
	{ID: EventRunFailed, Label: "Sync run failed", Description: "A data sync run stopped on an error (lastError).",
		ClientBroadcast: true, ViewFeature: "data_sync.view"},
	{ID: EventRunCancelled, Label: "Sync run cancelled", Description: "A data sync run was cancelled.",
		ClientBroadcast: true, ViewFeature: "data_sync.view"},
}

func eventFor(s Status) string {
	switch s {
	case StatusCompleted:
		return EventRunCompleted
	case StatusFailed:
		return EventRunFailed
	case StatusCancelled:
		return EventRunCancelled
	}
	panic(fmt.Sprintf("datasync: no event for status %s", s))
}
