package datasync

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "datasync", FS: migrationsFS, Dir: "migrations"}

// Options configures a Service. Integrations and Records are required;
// the Kit passes its own.
type Options struct {
	Store        Store        // nil: the SQL store
	Integrations Integrations // required
	Records      Records      // required
	// Progress, when set, gets a progress job per run.
	Progress Progress
	// Backoff are the waits before each retry of a failing source call
	// (retryable errors only): Backoff[n-1] after the n-th attempt, the
	// last wait repeated when MaxAttempts asks for more. Default 1 s,
	// 4 s, 15 s.
	Backoff []time.Duration
	// MaxAttempts bounds the attempts at one source call (an import's
	// page, an export's batch): after that many, the run fails with the
	// last error. The count is kept with the run, so a job stopped during
	// an attempt and resumed goes on counting. Zero means len(Backoff)+1.
	MaxAttempts int
	// PageTimeout bounds one attempt, from the request to the last byte
	// of the answer; an attempt that takes longer is a retryable failure
	// ("no complete answer within …"). It is never more than half the
	// job's time limit (a job hands the run back to the queue rather than
	// start an attempt it could not finish). Zero means
	// DefaultPageTimeout.
	PageTimeout time.Duration
	// MinBytesPerSecond is the slowest average rate at which an answer's
	// body may arrive once ThroughputGrace has passed since it began
	// (Call.MinBytesPerSecond; sync_http_json fails such a call, not
	// retryably). Zero means DefaultMinBytesPerSecond; negative, no
	// floor.
	MinBytesPerSecond int64
	// ThroughputGrace: see MinBytesPerSecond. Zero means
	// DefaultThroughputGrace.
	ThroughputGrace time.Duration
	// CursorMemory is how many of its last cursors a run remembers
	// exactly (CursorHistory). Zero means DefaultCursorMemory.
	CursorMemory int
	Logger       *slog.Logger // nil: slog.Default()
}

// Defaults of Options: with them a page that never completes fails its
// run after at most 4 attempts of 30 s and 20 s of waits (2 min 20 s),
// a source sending less than 512 bytes a second after 10 s fails it at
// once.
const (
	DefaultPageTimeout       = 30 * time.Second
	DefaultMinBytesPerSecond = 512
	DefaultThroughputGrace   = 10 * time.Second
)

// Service starts, runs, cancels and retries sync runs.
type Service struct {
	db       *store.DB
	store    Store
	opts     Options
	adapters adapters
	jobs     *jobs.Engine
	logger   *slog.Logger
}

// New returns the service over db, whose migrations include Migrations.
// It starts nothing and reads nothing. It fails when opts lacks
// Integrations or Records, which every run needs.
func New(db *store.DB, opts Options) (*Service, error) {
	if opts.Integrations == nil {
		return nil, errors.New("datasync: Options.Integrations is required")
	}
	if opts.Records == nil {
		return nil, errors.New("datasync: Options.Records is required")
	}
	s := &Service{db: db, store: opts.Store, opts: opts, logger: opts.Logger}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	if s.opts.Backoff == nil {
		s.opts.Backoff = []time.Duration{time.Second, 4 * time.Second, 15 * time.Second}
	}
	if s.opts.MaxAttempts <= 0 {
		s.opts.MaxAttempts = len(s.opts.Backoff) + 1
	}
	if s.opts.PageTimeout <= 0 {
		s.opts.PageTimeout = DefaultPageTimeout
	}
	switch {
	case s.opts.MinBytesPerSecond == 0:
		s.opts.MinBytesPerSecond = DefaultMinBytesPerSecond
	case s.opts.MinBytesPerSecond < 0:
		s.opts.MinBytesPerSecond = 0
	}
	if s.opts.ThroughputGrace <= 0 {
		s.opts.ThroughputGrace = DefaultThroughputGrace
	}
	if s.opts.CursorMemory <= 0 {
		s.opts.CursorMemory = DefaultCursorMemory
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	return s, nil
}

// Limits of a run.
const (
	DefaultBatchSize = 100
	MaxBatchSize     = 1000
)

// RunInput starts a run.
type RunInput struct {
	IntegrationID string    `json:"integrationId" jsonschema:"required,minLength=1"`
	EntityType    string    `json:"entityType" jsonschema:"required,minLength=1"`
	Direction     Direction `json:"direction" jsonschema:"required"` // import or export
	// FullSync starts an import from the source's first page; otherwise
	// it continues from the last completed run's cursor.
	FullSync bool `json:"fullSync"`
	// BatchSize is 1 to 1000; nil means 100.
	BatchSize   *int   `json:"batchSize" jsonschema:"minimum=1,maximum=1000"`
	TriggeredBy string `json:"triggeredBy"` // free text recorded with the run (who or what started it)
}

// checked is what a run needs once its input is accepted.
type checked struct {
	sc          store.Scope
	integration *Integration
	adapter     Adapter
}

// check validates a run's target: the integration exists and has an
// adapter supporting the direction and the entity type, and credentials.
func (s *Service) check(ctx context.Context, integrationID, entityType string, d Direction) (*checked, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	if integrationID == "" {
		v.Add("integrationId", "is required")
	}
	if entityType == "" {
		v.Add("entityType", "is required")
	}
	if d != Import && d != Export {
		v.Add("direction", "must be import or export")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	in, err := s.opts.Integrations.Integration(ctx, sc.TenantID, integrationID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && in.ProviderKey == "") {
		return nil, ErrIntegrationNotFound
	}
	if err != nil {
		return nil, err
	}
	a, ok := s.adapter(in.ProviderKey)
	if !ok {
		return nil, ErrNoAdapter
	}
	if !supports(a, d) {
		return nil, store.Invalid("direction", fmt.Sprintf("the %s adapter does not %s", in.ProviderKey, d))
	}
	types, err := s.opts.Records.EntityTypes(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(a.EntityTypes(ctx, types), entityType) {
		return nil, store.Invalid("entityType", fmt.Sprintf("%q is not an active custom entity this adapter supports", entityType))
	}
	return &checked{sc: sc, integration: in, adapter: a}, nil
}

// ValidateResult is the answer of Validate.
type ValidateResult struct {
	OK      bool   `json:"ok"` // whether the connection check passed; Message says why not
	Message string `json:"message"`
}

// Validate checks that a run could start: the integration, its adapter,
// the entity type, stored credentials (ErrMissingCredentials), and the
// adapter's own connection check when it has one (its failure is
// returned as a *SourceError or the adapter's error).
func (s *Service) Validate(ctx context.Context, integrationID, entityType string, d Direction) (*ValidateResult, error) {
	c, err := s.check(ctx, integrationID, entityType, d)
	if err != nil {
		return nil, err
	}
	if c.integration.Credentials == nil {
		return nil, ErrMissingCredentials
	}
	val, ok := c.adapter.(Validator)
	if !ok {
		return &ValidateResult{OK: true, Message: "Adapter does not implement active connection validation"}, nil
	}
	started := time.Now()
	err = val.Validate(ctx, s.call(c.integration, entityType))
	if hr, ok := s.opts.Integrations.(HealthRecorder); ok {
		if rerr := hr.RecordHealth(ctx, integrationID, err == nil, time.Since(started)); rerr != nil {
			s.logger.WarnContext(ctx, "datasync: could not record the health check", "integration", integrationID, "err", rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return &ValidateResult{OK: true, Message: "Connection validated"}, nil
}

func (s *Service) call(in *Integration, entityType string) Call {
	return Call{IntegrationID: in.ID, Credentials: in.Credentials, APIVersion: in.APIVersion, EntityType: entityType,
		MinBytesPerSecond: s.opts.MinBytesPerSecond, ThroughputGrace: s.opts.ThroughputGrace}
}

// StartRun creates a run (pending) with its progress job and its durable
// job, in one transaction. The integration must be enabled
// (ErrDisabled), have credentials, and have no run of the entity type
// and direction pending or running (ErrInProgress). The run keeps the
// organizations the caller may read (the scope's OrganizationIDs): an
// export sends only their records. Whether the caller may read the
// entity's records at all is the host's check (httpapi asks for the
// feature GET /entities/records asks for).
func (s *Service) StartRun(ctx context.Context, in RunInput) (*Run, error) {
	batchSize := DefaultBatchSize
	if in.BatchSize != nil {
		batchSize = *in.BatchSize
	}
	if batchSize < 1 || batchSize > MaxBatchSize {
		return nil, store.Invalid("batchSize", "must be an integer from 1 to 1000")
	}
	c, err := s.check(ctx, in.IntegrationID, in.EntityType, in.Direction)
	if err != nil {
		return nil, err
	}
	if !c.integration.Enabled {
		return nil, ErrDisabled
	}
	if c.integration.Credentials == nil {
		return nil, ErrMissingCredentials
	}
	r := &Run{ID: store.NewID(), TenantID: c.sc.TenantID, OrganizationID: c.sc.OrganizationID, OrganizationIDs: slices.Clone(c.sc.OrganizationIDs),
		IntegrationID: in.IntegrationID, EntityType: in.EntityType, Direction: in.Direction, Status: StatusPending, FullSync: in.FullSync,
		BatchSize: batchSize, StartedBy: c.sc.ActorID}
	if in.TriggeredBy != "" {
		r.TriggeredBy = &in.TriggeredBy
	}
	return r, s.insert(ctx, r, !in.FullSync)
}

// insert stores a new run, its progress job and its job; continueLast
// takes the cursor of the last completed run when the run has none.
func (s *Service) insert(ctx context.Context, r *Run, continueLast bool) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if continueLast && r.Cursor == "" {
			cursor, err := s.store.LastCursor(ctx, tx, r.TenantID, r.IntegrationID, r.EntityType, r.Direction)
			if err != nil {
				return err
			}
			r.Cursor = cursor
		}
		r.CreatedAt, r.UpdatedAt = tx.Now(), tx.Now()
		if s.opts.Progress != nil {
			id, err := s.opts.Progress.Create(ctx, tx, fmt.Sprintf("%s %s of %s", r.IntegrationID, r.Direction, r.EntityType))
			if err != nil {
				return err
			}
			r.ProgressJobID = &id
		}
		if err := s.store.InsertRun(ctx, tx, r); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return ErrInProgress
			}
			return err
		}
		if s.jobs == nil {
			return errors.New("datasync: no job engine (RegisterJobs was not called)")
		}
		_, err := s.jobs.EnqueueTx(ctx, tx, RunArgs{TenantID: r.TenantID, RunID: r.ID}, nil)
		return err
	})
}

// GetRun returns the caller's tenant's run and its progress job's summary
// (nil without one).
func (s *Service) GetRun(ctx context.Context, id string) (*Run, *ProgressJob, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.store.GetRun(ctx, s.db, sc.TenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrRunNotFound
	}
	if err != nil || r.ProgressJobID == nil || s.opts.Progress == nil {
		return r, nil, err
	}
	pj, err := s.opts.Progress.Get(ctx, *r.ProgressJobID)
	if errors.Is(err, store.ErrNotFound) {
		return r, nil, nil
	}
	return r, pj, err
}

// ListRuns returns a page of the caller's tenant's runs, newest first.
func (s *Service) ListRuns(ctx context.Context, f RunFilter) ([]*Run, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	for field, v := range map[string]string{"integrationId": f.IntegrationID, "entityType": f.EntityType} {
		if !store.Storable(v) {
			return nil, 0, store.Invalid(field, "must be valid UTF-8 text without NUL characters")
		}
	}
	if f.Direction != "" && f.Direction != Import && f.Direction != Export {
		return nil, 0, store.Invalid("direction", "must be import or export")
	}
	if f.Status != "" && !slices.Contains([]Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusPaused}, f.Status) {
		return nil, 0, store.Invalid("status", "must be pending, running, completed, failed, cancelled or paused")
	}
	runs, total, err := s.store.ListRuns(ctx, s.db, sc.TenantID, f)
	if runs == nil {
		runs = []*Run{}
	}
	return runs, total, err
}

// CancelRun asks a pending or running run to stop (ErrNotCancellable
// otherwise). A pending run is cancelled at once; a running one ends
// cancelled after the batch in progress (its records stay).
func (s *Service) CancelRun(ctx context.Context, id string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		r, err := s.store.LockRun(ctx, tx, sc.TenantID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrRunNotFound
		}
		if err != nil {
			return err
		}
		switch r.Status {
		case StatusPending:
			return s.finish(ctx, tx, r, StatusCancelled, "")
		case StatusRunning:
			r.CancelRequested, r.UpdatedAt = true, tx.Now()
			return s.store.UpdateRun(ctx, tx, r)
		}
		return ErrNotCancellable
	})
}

// RetryRun starts a new run of a failed or cancelled one
// (ErrNotRetryable otherwise; the checks of StartRun apply too: an
// enabled integration, credentials), with its batch size, from its cursor
// (fromBeginning: from the first page): what the old run committed is
// not written again. The new run may read the organizations both the old
// run and the caller may read.
func (s *Service) RetryRun(ctx context.Context, id string, fromBeginning bool) (*Run, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	old, err := s.store.GetRun(ctx, s.db, sc.TenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrRunNotFound
	}
	if err != nil {
		return nil, err
	}
	if old.Status != StatusFailed && old.Status != StatusCancelled {
		return nil, ErrNotRetryable
	}
	// A retry is a new run: the same checks as StartRun.
	c, err := s.check(ctx, old.IntegrationID, old.EntityType, old.Direction)
	if err != nil {
		return nil, err
	}
	if !c.integration.Enabled {
		return nil, ErrDisabled
	}
	if c.integration.Credentials == nil {
		return nil, ErrMissingCredentials
	}
	r := &Run{ID: store.NewID(), TenantID: old.TenantID, OrganizationID: old.OrganizationID,
		OrganizationIDs: commonOrganizations(old.OrganizationIDs, sc.OrganizationIDs), IntegrationID: old.IntegrationID,
		EntityType: old.EntityType, Direction: old.Direction, Status: StatusPending, FullSync: fromBeginning || old.FullSync,
		BatchSize: old.BatchSize, RetryOf: &old.ID, TriggeredBy: old.TriggeredBy, StartedBy: sc.ActorID}
	if !fromBeginning {
		r.Cursor = old.Cursor
	}
	return r, s.insert(ctx, r, false)
}

// commonOrganizations are the organizations both a and b allow, nil
// meaning every one.
func commonOrganizations(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return slices.Clone(a)
	}
	out := []string{}
	for _, id := range a {
		if slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// finish ends a run in a final status with its event, progress job and
// (for a failure) an error log line, in tx.
func (s *Service) finish(ctx context.Context, tx *store.Tx, r *Run, status Status, message string) error {
	r.Status, r.UpdatedAt = status, tx.Now()
	if message != "" {
		r.LastError = &message
	}
	if err := s.store.UpdateRun(ctx, tx, r); err != nil {
		return err
	}
	if r.ProgressJobID != nil && s.opts.Progress != nil {
		if err := s.opts.Progress.Finish(ctx, tx, *r.ProgressJobID, status, message); err != nil {
			return err
		}
	}
	if status == StatusFailed {
		if err := s.opts.Integrations.Log(ctx, tx, LogEntry{IntegrationID: r.IntegrationID, RunID: r.ID, Level: "error",
			Message: "Sync run failed: " + message, Code: "run_failed", EntityType: r.EntityType}); err != nil {
			return err
		}
	}
	_, err := tx.EmitData(ctx, eventFor(status), store.Scope{TenantID: r.TenantID, OrganizationID: r.OrganizationID}, r)
	return err
}
