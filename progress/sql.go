package progress

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL. Meta is kept as JSON text: it
// is always read and written whole.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const jobColumns = `id, tenant_id, COALESCE(organization_id, ''), job_type, name, description, status, processed_count,
	total_count, progress_percent, eta_seconds, cancellable, cancel_requested, meta, started_at, finished_at, heartbeat_at,
	COALESCE(error_message, ''), created_at, updated_at`

func scanJob(s store.Scanner) (*Job, error) {
	var j Job
	var meta string
	if err := s.Scan(&j.ID, &j.TenantID, &j.OrganizationID, &j.JobType, &j.Name, &j.Description, &j.Status,
		&j.ProcessedCount, &j.TotalCount, &j.ProgressPercent, &j.ETASeconds, &j.Cancellable, &j.CancelRequested, &meta,
		&j.StartedAt, &j.FinishedAt, &j.HeartbeatAt, &j.ErrorMessage, &j.CreatedAt, &j.UpdatedAt); err != nil {
		return nil, err
	}
	j.Meta = []byte(meta)
	for _, t := range []*time.Time{j.StartedAt, j.FinishedAt, &j.HeartbeatAt, &j.CreatedAt, &j.UpdatedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return &j, nil
}

func metaText(j *Job) string {
	if len(j.Meta) == 0 {
		return "{}"
	}
	return string(j.Meta)
}

// Insert implements Store.
func (*SQLStore) Insert(ctx context.Context, q store.Querier, j *Job) error {
	_, err := q.Exec(ctx, `INSERT INTO progress_jobs (id, tenant_id, organization_id, job_type, name, description, status,
			processed_count, total_count, progress_percent, eta_seconds, cancellable, cancel_requested, meta, started_at,
			finished_at, heartbeat_at, error_message, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
		j.ID, j.TenantID, store.NullIfEmpty(j.OrganizationID), j.JobType, j.Name, j.Description, string(j.Status),
		j.ProcessedCount, j.TotalCount, j.ProgressPercent, j.ETASeconds, j.Cancellable, j.CancelRequested, metaText(j),
		j.StartedAt, j.FinishedAt, j.HeartbeatAt, store.NullIfEmpty(j.ErrorMessage), j.CreatedAt, j.UpdatedAt)
	return err
}

// Get implements Store.
func (*SQLStore) Get(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Job, error) {
	c := sc.Readable("tenant_id", "organization_id").And("id = ?", id)
	return store.One(ctx, q, scanJob, `SELECT `+jobColumns+` FROM progress_jobs WHERE `+c.SQL(), c.Values()...)
}

// Lock implements Store.
func (*SQLStore) Lock(ctx context.Context, tx *store.Tx, sc store.Scope, id string) (*Job, error) {
	c := sc.Readable("tenant_id", "organization_id").And("id = ?", id)
	return store.One(ctx, tx, scanJob, `SELECT `+jobColumns+` FROM progress_jobs WHERE `+c.SQL()+tx.Dialect().ForUpdate(), c.Values()...)
}

// Update implements Store.
func (*SQLStore) Update(ctx context.Context, q store.Querier, j *Job) error {
	return store.ExecOne(ctx, q, `UPDATE progress_jobs SET status = $3, processed_count = $4, total_count = $5,
			progress_percent = $6, eta_seconds = $7, cancel_requested = $8, started_at = $9, finished_at = $10,
			heartbeat_at = $11, error_message = $12, updated_at = $13
		WHERE tenant_id = $1 AND id = $2`,
		j.TenantID, j.ID, string(j.Status), j.ProcessedCount, j.TotalCount, j.ProgressPercent, j.ETASeconds,
		j.CancelRequested, j.StartedAt, j.FinishedAt, j.HeartbeatAt, store.NullIfEmpty(j.ErrorMessage), j.UpdatedAt)
}

// ListActive implements Store: the pending jobs and the fresh running
// ones, each read from the status index (one branch of a UNION ALL
// each), so that neither the finished jobs nor the stale ones are read
// (an OR of the two made SQLite read every job of the tenant).
func (*SQLStore) ListActive(ctx context.Context, q store.Querier, sc store.Scope, freshAfter time.Time, limit int) ([]*Job, error) {
	c := sc.Readable("tenant_id", "organization_id")
	scope := c.SQL() // its placeholders serve both branches
	pending, running, fresh := c.Add(string(StatusPending)), c.Add(string(StatusRunning)), c.Add(freshAfter)
	return store.Many(ctx, q, scanJob, `SELECT `+jobColumns+` FROM (
			SELECT * FROM progress_jobs WHERE `+scope+` AND status = `+pending+`
			UNION ALL
			SELECT * FROM progress_jobs WHERE `+scope+` AND status = `+running+` AND heartbeat_at > `+fresh+`
		) j ORDER BY created_at DESC, id DESC LIMIT `+c.Add(limit), c.Values()...)
}

// ListFinished implements Store.
func (*SQLStore) ListFinished(ctx context.Context, q store.Querier, sc store.Scope, since time.Time, limit int) ([]*Job, error) {
	c := sc.Readable("tenant_id", "organization_id").
		And("status IN (?, ?, ?)", string(StatusCompleted), string(StatusFailed), string(StatusCancelled)).
		And("finished_at >= ?", since)
	return store.Many(ctx, q, scanJob, `SELECT `+jobColumns+` FROM progress_jobs WHERE `+c.SQL()+
		` ORDER BY finished_at DESC, id DESC LIMIT `+c.Add(limit), c.Values()...)
}

// ListStale implements Store.
func (*SQLStore) ListStale(ctx context.Context, q store.Querier, sc store.Scope, staleAt, since time.Time, limit int) ([]*Job, error) {
	c := sc.Readable("tenant_id", "organization_id").
		And("status = ?", string(StatusRunning)).
		And("heartbeat_at <= ?", staleAt).
		And("heartbeat_at >= ?", since)
	return store.Many(ctx, q, scanJob, `SELECT `+jobColumns+` FROM progress_jobs WHERE `+c.SQL()+
		` ORDER BY heartbeat_at DESC, id DESC LIMIT `+c.Add(limit), c.Values()...)
}
