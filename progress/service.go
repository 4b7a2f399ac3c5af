package progress

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's table. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "progress", FS: migrationsFS, Dir: "migrations"}

// Options tunes a Service. The zero value is ready to use.
type Options struct {
	// Store stores jobs (default NewSQLStore()). A host with its own
	// storage passes its Store; it must keep its data in db (see Store)
	// and pass progresstest.Run.
	Store Store
	// StaleAfter is how long a running job may go without a heartbeat
	// before reads show it failed (default DefaultStaleAfter, 60 s).
	StaleAfter time.Duration
	// RecentWindow is how long a finished job stays in
	// Active.RecentlyCompleted (default DefaultRecentWindow, 10 min).
	RecentWindow time.Duration
}

// Service records and answers the progress of long-running jobs. Every
// method acts in the scope ctx carries (store.ScopeFrom). Writes come in
// pairs: X runs in a transaction of its own, XTx joins the caller's, so
// that a job changes in the same transaction as the work it reports.
type Service struct {
	db           *store.DB
	store        Store
	staleAfter   time.Duration
	recentWindow time.Duration
}

// New returns the service over db, whose migrations include Migrations.
// It starts nothing and reads nothing.
// It returns an error only for options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	s := &Service{db: db, store: opts.Store, staleAfter: opts.StaleAfter, recentWindow: opts.RecentWindow}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	if s.staleAfter <= 0 {
		s.staleAfter = DefaultStaleAfter
	}
	if s.recentWindow <= 0 {
		s.recentWindow = DefaultRecentWindow
	}
	return s, nil
}

var jobTypePattern = regexp.MustCompile(`^[a-z][a-z0-9._-]*$`)

func validate(in CreateInput) error {
	v := &store.ValidationError{}
	switch {
	case in.JobType == "":
		v.Add("jobType", "is required")
	case len(in.JobType) > MaxJobTypeLength:
		v.Add("jobType", "must be at most 100 characters")
	case !jobTypePattern.MatchString(in.JobType):
		v.Add("jobType", "must start with a lowercase letter and hold only lowercase letters, digits, '.', '_' and '-'")
	}
	switch {
	case strings.TrimSpace(in.Name) == "":
		v.Add("name", "is required")
	case utf8.RuneCountInString(in.Name) > MaxNameLength:
		v.Add("name", "must be at most 200 characters")
	case !text(in.Name):
		v.Add("name", "must be UTF-8 text without NUL characters")
	}
	switch {
	case utf8.RuneCountInString(in.Description) > MaxDescriptionLength:
		v.Add("description", "must be at most 2000 characters")
	case !text(in.Description):
		v.Add("description", "must be UTF-8 text without NUL characters")
	}
	if in.Total != nil && *in.Total < 0 {
		v.Add("total", "must not be negative")
	}
	if meta := bytes.TrimSpace(in.Meta); len(meta) > 0 {
		var obj map[string]json.RawMessage
		switch {
		case len(meta) > MaxMetaBytes:
			v.Add("meta", "must be at most 16 KiB")
		case json.Unmarshal(meta, &obj) != nil || obj == nil:
			v.Add("meta", "must be a JSON object")
		case bytes.Contains(meta, []byte(`\u0000`)):
			v.Add("meta", "must not hold NUL characters")
		}
	}
	return v.Err()
}

// text reports whether s can be stored as text on both engines.
func text(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

// Create creates a pending job in the scope (stamped with its tenant and
// active organization) and emits progress.job.created. Invalid input is
// a store.ValidationError naming jobType, name, description, total or
// meta.
func (s *Service) Create(ctx context.Context, in CreateInput) (*Job, error) {
	var j *Job
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		j, err = s.CreateTx(ctx, tx, in)
		return err
	})
	return j, err
}

// CreateTx is Create in the caller's transaction.
func (s *Service) CreateTx(ctx context.Context, tx *store.Tx, in CreateInput) (*Job, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := validate(in); err != nil {
		return nil, err
	}
	meta := json.RawMessage(`{}`)
	if m := bytes.TrimSpace(in.Meta); len(m) > 0 {
		meta = slices.Clone(json.RawMessage(m))
	}
	now := tx.Now()
	j := &Job{ID: store.NewID(), TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, JobType: in.JobType,
		Name: in.Name, Description: in.Description, Status: StatusPending, TotalCount: clone(in.Total),
		Cancellable: in.Cancellable, Meta: meta, HeartbeatAt: now, CreatedAt: now, UpdatedAt: now}
	if err := s.store.Insert(ctx, tx, j); err != nil {
		return nil, err
	}
	return j, s.emit(ctx, tx, EventJobCreated, j)
}

func clone(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (s *Service) emit(ctx context.Context, tx *store.Tx, typ string, j *Job) error {
	_, err := tx.EmitData(ctx, typ, j.scope(), eventOf(j))
	return err
}

// change runs one read-modify-write of a job in tx: it locks the job,
// lets fn change it (fn returns whether to write, and the event to emit
// or ""), stamps UpdatedAt and writes it. It returns the job as read
// back (presented: a stale one shows failed).
func (s *Service) change(ctx context.Context, tx *store.Tx, id string, fn func(j *Job, now time.Time) (write bool, event string, err error)) (*Job, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	j, err := s.store.Lock(ctx, tx, sc, normalizeID(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrJobNotFound
	}
	if err != nil {
		return nil, err
	}
	now := tx.Now()
	write, event, err := fn(j, now)
	if err != nil {
		return nil, err
	}
	if !write {
		return s.present(j, now), nil
	}
	j.UpdatedAt = now
	if err := s.store.Update(ctx, tx, j); err != nil {
		return nil, err
	}
	if event != "" {
		if err := s.emit(ctx, tx, event, j); err != nil {
			return nil, err
		}
	}
	return s.present(j, now), nil
}

// normalizeID lower-cases a job id (ids are lower-case UUIDs).
func normalizeID(id string) string { return strings.ToLower(id) }

// Begin marks a pending job running: StartedAt and HeartbeatAt now, event
// progress.job.started. Beginning a running job again (a worker retried
// after a crash) only renews its heartbeat, so a job shown stale runs
// again. A finished job is ErrFinished, an unknown one ErrJobNotFound.
func (s *Service) Begin(ctx context.Context, id string) (*Job, error) {
	return s.inTx(ctx, func(tx *store.Tx) (*Job, error) { return s.BeginTx(ctx, tx, id) })
}

// BeginTx is Begin in the caller's transaction.
func (s *Service) BeginTx(ctx context.Context, tx *store.Tx, id string) (*Job, error) {
	return s.change(ctx, tx, id, func(j *Job, now time.Time) (bool, string, error) {
		switch {
		case j.Status.Terminal():
			return false, "", ErrFinished
		case j.Status == StatusRunning:
			j.HeartbeatAt = now
			j.ETASeconds = eta(j, now)
			return true, "", nil
		}
		j.Status, j.StartedAt, j.HeartbeatAt = StatusRunning, &now, now
		j.ProgressPercent, j.ETASeconds = percent(j), eta(j, now)
		return true, EventJobStarted, nil
	})
}

func (s *Service) inTx(ctx context.Context, fn func(tx *store.Tx) (*Job, error)) (*Job, error) {
	var j *Job
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		j, err = fn(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Report records a running job's progress: processed items and, when
// total is not nil, the total (nil keeps the stored one, which may be
// unknown). It recomputes ProgressPercent and ETASeconds, renews the
// heartbeat and emits nothing. The job returned carries CancelRequested.
// A pending job is ErrNotRunning, a finished one ErrFinished; negative
// counts are a store.ValidationError. processed may exceed total (an
// estimate): the percent stops at 100.
func (s *Service) Report(ctx context.Context, id string, processed int64, total *int64) (*Job, error) {
	return s.inTx(ctx, func(tx *store.Tx) (*Job, error) { return s.ReportTx(ctx, tx, id, processed, total) })
}

// ReportTx is Report in the caller's transaction: the progress commits
// with the work it counts, or not at all.
func (s *Service) ReportTx(ctx context.Context, tx *store.Tx, id string, processed int64, total *int64) (*Job, error) {
	if err := checkCounts(processed, total); err != nil {
		return nil, err
	}
	return s.change(ctx, tx, id, func(j *Job, now time.Time) (bool, string, error) {
		if err := running(j); err != nil {
			return false, "", err
		}
		j.ProcessedCount, j.HeartbeatAt = processed, now
		if total != nil {
			j.TotalCount = clone(total)
		}
		j.ProgressPercent, j.ETASeconds = percent(j), eta(j, now)
		return true, "", nil
	})
}

func checkCounts(processed int64, total *int64) error {
	v := &store.ValidationError{}
	if processed < 0 {
		v.Add("processed", "must not be negative")
	}
	if total != nil && *total < 0 {
		v.Add("total", "must not be negative")
	}
	return v.Err()
}

func running(j *Job) error {
	switch {
	case j.Status.Terminal():
		return ErrFinished
	case j.Status != StatusRunning:
		return ErrNotRunning
	}
	return nil
}

// Heartbeat renews a running job's heartbeat, so that it does not go
// stale during a long step without progress, and returns the job (with
// CancelRequested). A pending job is ErrNotRunning, a finished one
// ErrFinished.
func (s *Service) Heartbeat(ctx context.Context, id string) (*Job, error) {
	return s.inTx(ctx, func(tx *store.Tx) (*Job, error) { return s.HeartbeatTx(ctx, tx, id) })
}

// HeartbeatTx is Heartbeat in the caller's transaction.
func (s *Service) HeartbeatTx(ctx context.Context, tx *store.Tx, id string) (*Job, error) {
	return s.change(ctx, tx, id, func(j *Job, now time.Time) (bool, string, error) {
		if err := running(j); err != nil {
			return false, "", err
		}
		j.HeartbeatAt, j.ETASeconds = now, eta(j, now)
		return true, "", nil
	})
}

// Finish ends a pending or running job with status completed, failed or
// cancelled (anything else is a store.ValidationError on "status"):
// FinishedAt now, ETASeconds cleared, ProgressPercent 100 when completed,
// ErrorMessage errMsg for failed and cancelled (cut to
// MaxErrorMessageLength; ignored for completed), and the event
// progress.job.completed, .failed or .cancelled. errMsg is shown to the
// tenant's users. Finishing a finished job with its own status again
// changes nothing and returns it; with another status it is ErrFinished.
// A job shown stale can still be finished.
func (s *Service) Finish(ctx context.Context, id string, status Status, errMsg string) (*Job, error) {
	return s.inTx(ctx, func(tx *store.Tx) (*Job, error) { return s.FinishTx(ctx, tx, id, status, errMsg) })
}

// FinishTx is Finish in the caller's transaction.
func (s *Service) FinishTx(ctx context.Context, tx *store.Tx, id string, status Status, errMsg string) (*Job, error) {
	event, ok := finishEvents[status]
	if !ok {
		return nil, store.Invalid("status", "must be completed, failed or cancelled")
	}
	return s.change(ctx, tx, id, func(j *Job, now time.Time) (bool, string, error) {
		switch {
		case j.Status == status:
			return false, "", nil
		case j.Status.Terminal():
			return false, "", ErrFinished
		}
		j.Status, j.FinishedAt, j.HeartbeatAt, j.ETASeconds = status, &now, now, nil
		j.ErrorMessage = ""
		if status == StatusCompleted {
			j.ProgressPercent = 100
		} else {
			j.ErrorMessage = cleanMessage(errMsg)
		}
		return true, event, nil
	})
}

// cleanMessage makes an error message storable: valid UTF-8, no NUL, at
// most MaxErrorMessageLength characters.
func cleanMessage(msg string) string {
	msg = strings.ReplaceAll(strings.ToValidUTF8(msg, "\uFFFD"), "\x00", "")
	if utf8.RuneCountInString(msg) > MaxErrorMessageLength {
		msg = string([]rune(msg)[:MaxErrorMessageLength])
	}
	return msg
}

// RequestCancel asks a cancellable job to stop: it sets CancelRequested,
// which the worker sees and answers by finishing the job as cancelled.
// Nothing else changes and no event is emitted (the worker's Finish
// emits progress.job.cancelled). Asking again is a no-op. A job created
// without Cancellable is ErrNotCancellable, a finished one ErrFinished.
func (s *Service) RequestCancel(ctx context.Context, id string) (*Job, error) {
	return s.inTx(ctx, func(tx *store.Tx) (*Job, error) { return s.RequestCancelTx(ctx, tx, id) })
}

// RequestCancelTx is RequestCancel in the caller's transaction.
func (s *Service) RequestCancelTx(ctx context.Context, tx *store.Tx, id string) (*Job, error) {
	return s.change(ctx, tx, id, func(j *Job, _ time.Time) (bool, string, error) {
		switch {
		case !j.Cancellable:
			return false, "", ErrNotCancellable
		case j.Status.Terminal():
			return false, "", ErrFinished
		case j.CancelRequested:
			return false, "", nil
		}
		j.CancelRequested = true
		return true, "", nil
	})
}

// CancelRequested reports whether the job's cancellation was requested.
func (s *Service) CancelRequested(ctx context.Context, id string) (bool, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return false, err
	}
	return j.CancelRequested, nil
}

// CancelRequestedTx is CancelRequested in the caller's transaction.
func (s *Service) CancelRequestedTx(ctx context.Context, tx *store.Tx, id string) (bool, error) {
	j, err := s.GetTx(ctx, tx, id)
	if err != nil {
		return false, err
	}
	return j.CancelRequested, nil
}

// Get returns a job of the scope, as shown: a running job without a
// heartbeat for StaleAfter reads failed (Job.Stale). An unknown id, or a
// job of another tenant or of an organization the scope may not read, is
// ErrJobNotFound.
func (s *Service) Get(ctx context.Context, id string) (*Job, error) {
	return s.get(ctx, s.db, id)
}

// GetTx is Get in the caller's transaction (it sees the transaction's
// own changes; staleness is judged at the transaction's time).
func (s *Service) GetTx(ctx context.Context, tx *store.Tx, id string) (*Job, error) {
	return s.get(ctx, tx, id)
}

func (s *Service) get(ctx context.Context, q store.Querier, id string) (*Job, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	j, err := s.store.Get(ctx, q, sc, normalizeID(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrJobNotFound
	}
	if err != nil {
		return nil, err
	}
	return s.present(j, q.Now()), nil
}

// Active returns the scope's pending and running jobs (stale ones left
// out), newest first, at most ActiveLimit, and the jobs that finished
// within RecentWindow (stale ones included, as failed, finished at their
// heartbeat plus StaleAfter), latest first, at most RecentLimit. Both
// lists are read in one snapshot.
func (s *Service) Active(ctx context.Context) (*Active, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	out := &Active{}
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		staleAt, since := now.Add(-s.staleAfter), now.Add(-s.recentWindow)
		active, err := s.store.ListActive(ctx, tx, sc, staleAt, ActiveLimit)
		if err != nil {
			return err
		}
		finished, err := s.store.ListFinished(ctx, tx, sc, since, RecentLimit)
		if err != nil {
			return err
		}
		stale, err := s.store.ListStale(ctx, tx, sc, staleAt, since.Add(-s.staleAfter), RecentLimit)
		if err != nil {
			return err
		}
		out.Active = make([]*Job, 0, len(active))
		for _, j := range active {
			out.Active = append(out.Active, s.present(j, now))
		}
		recent := make([]*Job, 0, len(finished)+len(stale))
		for _, j := range slices.Concat(finished, stale) {
			recent = append(recent, s.present(j, now))
		}
		slices.SortStableFunc(recent, func(a, b *Job) int {
			if c := b.FinishedAt.Compare(*a.FinishedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		out.RecentlyCompleted = recent[:min(len(recent), RecentLimit)]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// present returns the job as shown at now: a running job whose heartbeat
// is StaleAfter old or older reads failed (see Job.Stale).
func (s *Service) present(j *Job, now time.Time) *Job {
	if j.Status != StatusRunning || now.Sub(j.HeartbeatAt) < s.staleAfter {
		return j
	}
	shown := *j
	finished := j.HeartbeatAt.Add(s.staleAfter)
	shown.Status, shown.Stale, shown.FinishedAt, shown.ETASeconds = StatusFailed, true, &finished, nil
	shown.ErrorMessage = staleMessage(s.staleAfter)
	return &shown
}

// staleMessage is the ErrorMessage of a stale job: "No heartbeat for
// 60 s".
func staleMessage(d time.Duration) string {
	return "No heartbeat for " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// percent is ⌊processed·100/total⌋, capped at 100; 0 for an unknown or 0
// total.
func percent(j *Job) int {
	if j.TotalCount == nil || *j.TotalCount == 0 {
		return 0
	}
	if j.ProcessedCount >= *j.TotalCount {
		return 100
	}
	return int(math.Floor(float64(j.ProcessedCount) * 100 / float64(*j.TotalCount)))
}

// eta estimates a running job's seconds left from its rate since
// StartedAt: ⌈(total − processed) · elapsed / processed⌉, 0 when
// processed reaches total; nil when the total is unknown, nothing was
// processed yet or no time has elapsed.
func eta(j *Job, now time.Time) *int64 {
	if j.Status != StatusRunning || j.TotalCount == nil || j.StartedAt == nil {
		return nil
	}
	left := *j.TotalCount - j.ProcessedCount
	if left <= 0 {
		zero := int64(0)
		return &zero
	}
	elapsed := now.Sub(*j.StartedAt)
	if j.ProcessedCount <= 0 || elapsed <= 0 {
		return nil
	}
	secs := math.Ceil(float64(left) * elapsed.Seconds() / float64(j.ProcessedCount))
	if secs > math.MaxInt32 {
		secs = math.MaxInt32
	}
	v := int64(secs)
	return &v
}
