package datasync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const runColumns = `id, tenant_id, COALESCE(organization_id, ''), integration_id, entity_type, direction, status, cursor, full_sync,
	batch_size, created_count, updated_count, skipped_count, failed_count, batches_completed, last_error, progress_job_id,
	triggered_by, retry_of, cancel_requested, created_at, updated_at, organization_ids, page_attempts, seen_cursors,
	COALESCE(started_by, '')`

func scanRun(s store.Scanner) (*Run, error) {
	var r Run
	var orgs *string
	var seen string
	if err := s.Scan(&r.ID, &r.TenantID, &r.OrganizationID, &r.IntegrationID, &r.EntityType, &r.Direction, &r.Status, &r.Cursor,
		&r.FullSync, &r.BatchSize, &r.CreatedCount, &r.UpdatedCount, &r.SkippedCount, &r.FailedCount, &r.BatchesCompleted,
		&r.LastError, &r.ProgressJobID, &r.TriggeredBy, &r.RetryOf, &r.CancelRequested, &r.CreatedAt, &r.UpdatedAt,
		&orgs, &r.PageAttempts, &seen, &r.StartedBy); err != nil {
		return nil, err
	}
	if orgs != nil {
		if err := json.Unmarshal([]byte(*orgs), &r.OrganizationIDs); err != nil || r.OrganizationIDs == nil {
			return nil, fmt.Errorf("datasync: run %s: unreadable organization_ids", r.ID)
		}
	}
	if seen != "" {
		if err := json.Unmarshal([]byte(seen), &r.Cursors); err != nil {
			return nil, fmt.Errorf("datasync: run %s: unreadable seen_cursors: %w", r.ID, err)
		}
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return &r, nil
}

// orgsColumn is organization_ids of r: NULL for every organization, a
// JSON array otherwise.
func orgsColumn(r *Run) (*string, error) {
	if r.OrganizationIDs == nil {
		return nil, nil
	}
	b, err := json.Marshal(r.OrganizationIDs)
	s := string(b)
	return &s, err
}

// seenColumn is seen_cursors of r: empty text without history, a JSON object
// otherwise.
func seenColumn(r *Run) (string, error) {
	if r.Cursors.empty() {
		return "", nil
	}
	b, err := json.Marshal(r.Cursors)
	return string(b), err
}

// InsertRun implements Store.
func (*SQLStore) InsertRun(ctx context.Context, q store.Querier, r *Run) error {
	orgs, err := orgsColumn(r)
	if err != nil {
		return err
	}
	seen, err := seenColumn(r)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO data_sync_runs (id, tenant_id, organization_id, integration_id, entity_type, direction, status,
			cursor, full_sync, batch_size, created_count, updated_count, skipped_count, failed_count, batches_completed, last_error,
			progress_job_id, triggered_by, retry_of, cancel_requested, created_at, updated_at, organization_ids, page_attempts, seen_cursors,
			started_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)`,
		r.ID, r.TenantID, store.NullIfEmpty(r.OrganizationID), r.IntegrationID, r.EntityType, string(r.Direction), string(r.Status),
		r.Cursor, r.FullSync, r.BatchSize, r.CreatedCount, r.UpdatedCount, r.SkippedCount, r.FailedCount, r.BatchesCompleted,
		r.LastError, r.ProgressJobID, r.TriggeredBy, r.RetryOf, r.CancelRequested, r.CreatedAt, r.UpdatedAt, orgs, r.PageAttempts, seen,
		store.NullIfEmpty(r.StartedBy))
	if err != nil {
		return err
	}
	if err := runCounts.Add(ctx, q, store.CountDelta{Key: runKey(r.TenantID, r.IntegrationID, r.EntityType, string(r.Direction), string(r.Status)), N: 1}); err != nil {
		return err
	}
	return runHourCounts.Add(ctx, q, store.CountDelta{Key: runHourKey(r.TenantID, r.CreatedAt, r.IntegrationID, string(r.Status)), N: 1})
}

// runCounts keeps how many runs each tenant has per integration, entity
// type, direction and status (migration 0004).
var runCounts = store.NewCounts("data_sync_run_counts", "tenant_id", "integration_id", "entity_type", "direction", "status")

func runKey(tenantID, integrationID, entityType, direction, status string) []string {
	return []string{tenantID, integrationID, entityType, direction, status}
}

// runHourCounts keeps how many runs each tenant has per UTC hour of
// creation (its start in Unix seconds), integration and status
// (migration 0006): the data sync widget's counts (RunSummary).
var runHourCounts = store.NewCounts("data_sync_run_hour_counts", "tenant_id", "hour", "integration_id", "status")

func runHourKey(tenantID string, createdAt time.Time, integrationID, status string) []string {
	return []string{tenantID, strconv.FormatInt(floorHour(createdAt), 10), integrationID, status}
}

// hourSeconds is an hour in seconds.
const hourSeconds = int64(time.Hour / time.Second)

// floorHour is the start, in Unix seconds, of the UTC hour t falls in.
func floorHour(t time.Time) int64 {
	u := t.Unix()
	return u - ((u%hourSeconds)+hourSeconds)%hourSeconds
}

// GetRun implements Store.
func (*SQLStore) GetRun(ctx context.Context, q store.Querier, tenantID, id string) (*Run, error) {
	return store.One(ctx, q, scanRun, `SELECT `+runColumns+` FROM data_sync_runs WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// LockRun implements Store.
func (*SQLStore) LockRun(ctx context.Context, tx *store.Tx, tenantID, id string) (*Run, error) {
	return store.One(ctx, tx, scanRun, `SELECT `+runColumns+` FROM data_sync_runs WHERE tenant_id = $1 AND id = $2`+
		tx.Dialect().ForUpdate(), tenantID, id)
}

// UpdateRun implements Store. An update that keeps the stored status is
// one statement; one that changes it reads the run's stored key (locking
// the row) and moves the run between the kept counts.
func (*SQLStore) UpdateRun(ctx context.Context, q store.Querier, r *Run) error {
	seen, err := seenColumn(r)
	if err != nil {
		return err
	}
	const update = `UPDATE data_sync_runs SET status = $3, cursor = $4, created_count = $5, updated_count = $6,
			skipped_count = $7, failed_count = $8, batches_completed = $9, last_error = $10, cancel_requested = $11,
			progress_job_id = $12, updated_at = $13, page_attempts = $14, seen_cursors = $15
		WHERE tenant_id = $1 AND id = $2`
	args := []any{r.TenantID, r.ID, string(r.Status), r.Cursor, r.CreatedCount, r.UpdatedCount, r.SkippedCount, r.FailedCount,
		r.BatchesCompleted, r.LastError, r.CancelRequested, r.ProgressJobID, r.UpdatedAt, r.PageAttempts, seen}
	if n, err := q.Exec(ctx, update+` AND status = $3`, args...); err != nil || n > 0 {
		return err
	}
	var was [4]string
	var created time.Time
	if err := q.QueryRow(ctx, `SELECT integration_id, entity_type, direction, status, created_at FROM data_sync_runs
		WHERE tenant_id = $1 AND id = $2`+q.Dialect().ForUpdate(), r.TenantID, r.ID).Scan(&was[0], &was[1], &was[2], &was[3], &created); err != nil {
		return err
	}
	if err := store.ExecOne(ctx, q, update, args...); err != nil {
		return err
	}
	if err := runCounts.Add(ctx, q, store.CountDelta{Key: runKey(r.TenantID, was[0], was[1], was[2], was[3]), N: -1},
		store.CountDelta{Key: runKey(r.TenantID, was[0], was[1], was[2], string(r.Status)), N: 1}); err != nil {
		return err
	}
	return runHourCounts.Add(ctx, q, store.CountDelta{Key: runHourKey(r.TenantID, created, was[0], was[3]), N: -1},
		store.CountDelta{Key: runHourKey(r.TenantID, created, was[0], string(r.Status)), N: 1})
}

// RunSummary implements Store: the kept counts by hour, integration and
// status (data_sync_run_hour_counts) of the hours from the first whole
// hour at or after since, and the runs of the part of an hour before it
// (read from the runs' (tenant, created_at) index), summed per
// integration and status in one GROUP BY; then each counted
// integration's newest run of the window, one entry of its
// (tenant, integration, created_at, id) index.
func (*SQLStore) RunSummary(ctx context.Context, q store.Querier, tenantID string, since time.Time) ([]IntegrationRuns, error) {
	since = since.UTC().Truncate(time.Microsecond)
	kept := floorHour(since) // the first hour the counts give
	if since.After(time.Unix(kept, 0)) {
		kept += hourSeconds
	}
	edge := time.Unix(kept, 0).UTC()
	from := `SELECT integration_id, status, n FROM data_sync_run_hour_counts WHERE tenant_id = $1 AND hour >= $2`
	args := []any{tenantID, kept}
	if since.Before(edge) {
		from += `
			UNION ALL
			SELECT integration_id, status, 1 FROM data_sync_runs WHERE tenant_id = $1 AND created_at >= $3 AND created_at < $4`
		args = append(args, since, edge)
	}
	type count struct {
		integration string
		status      Status
		n           int64
	}
	counts, err := store.Many(ctx, q, func(s store.Scanner) (count, error) {
		var c count
		return c, s.Scan(&c.integration, &c.status, &c.n)
	}, `SELECT c.integration_id, c.status, CAST(sum(c.n) AS BIGINT) FROM (`+from+`) c
		GROUP BY c.integration_id, c.status HAVING sum(c.n) > 0`, args...)
	if err != nil {
		return nil, err
	}
	byID := map[string]*IntegrationRuns{}
	for _, c := range counts {
		ir := byID[c.integration]
		if ir == nil {
			ir = &IntegrationRuns{IntegrationID: c.integration, ByStatus: map[Status]int{}}
			byID[c.integration] = ir
		}
		ir.ByStatus[c.status] = int(c.n)
	}
	out := make([]IntegrationRuns, 0, len(byID))
	for _, ir := range byID {
		ir.Latest, err = store.One(ctx, q, scanRun, `SELECT `+runColumns+` FROM data_sync_runs
			WHERE tenant_id = $1 AND integration_id = $2 AND created_at >= $3 ORDER BY created_at DESC, id DESC LIMIT 1`,
			tenantID, ir.IntegrationID, since)
		if err != nil {
			return nil, err
		}
		out = append(out, *ir)
	}
	slices.SortFunc(out, func(a, b IntegrationRuns) int { return strings.Compare(a.IntegrationID, b.IntegrationID) })
	return out, nil
}

// LastCursor implements Store.
func (*SQLStore) LastCursor(ctx context.Context, q store.Querier, tenantID, integrationID, entityType string, d Direction) (string, error) {
	rows, err := store.Many(ctx, q, func(s store.Scanner) (string, error) {
		var c string
		return c, s.Scan(&c)
	}, `SELECT cursor FROM data_sync_runs WHERE tenant_id = $1 AND integration_id = $2 AND entity_type = $3 AND direction = $4
		AND status = 'completed' ORDER BY updated_at DESC, id DESC LIMIT 1`, tenantID, integrationID, entityType, string(d))
	if err != nil || len(rows) == 0 {
		return "", err
	}
	return rows[0], nil
}

// ListRuns implements Store.
func (*SQLStore) ListRuns(ctx context.Context, q store.Querier, tenantID string, f RunFilter) ([]*Run, int, error) {
	c := store.Where("tenant_id = ?", tenantID)
	for col, v := range map[string]string{"integration_id": f.IntegrationID, "entity_type": f.EntityType,
		"direction": string(f.Direction), "status": string(f.Status)} {
		if v != "" {
			c.And(col+" = ?", v)
		}
	}
	// The kept counts have the runs' columns: c selects them as well.
	total, err := runCounts.Sum(ctx, q, c)
	if err != nil {
		return nil, 0, err
	}
	page := c.OrderPage("created_at", "id", true, f.Limit, f.Offset)
	runs, err := store.Many(ctx, q, scanRun, `SELECT `+runColumns+` FROM data_sync_runs WHERE `+c.SQL()+page, c.Values()...)
	return runs, total, err
}
