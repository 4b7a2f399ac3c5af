package integrations

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const stateColumns = `integration_id, is_enabled, api_version, reauth_required, last_health_status, last_health_checked_at,
	last_health_latency_ms, enabled_at, updated_at, notify_admins_on_failure`

func scanState(s store.Scanner) (*State, error) {
	var st State
	var updated time.Time
	if err := s.Scan(&st.IntegrationID, &st.IsEnabled, &st.APIVersion, &st.ReauthRequired, &st.LastHealthStatus,
		&st.LastHealthCheckedAt, &st.LastHealthLatencyMs, &st.EnabledAt, &updated, &st.NotifyAdminsOnFailure); err != nil {
		return nil, err
	}
	updated = updated.UTC()
	st.UpdatedAt = &updated
	for _, t := range []*time.Time{st.LastHealthCheckedAt, st.EnabledAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return &st, nil
}

// GetState implements Store.
func (*SQLStore) GetState(ctx context.Context, q store.Querier, tenantID, integrationID string) (*State, error) {
	return store.One(ctx, q, scanState, `SELECT `+stateColumns+` FROM integration_states
		WHERE tenant_id = $1 AND integration_id = $2`, tenantID, integrationID)
}

// ListStates implements Store.
func (*SQLStore) ListStates(ctx context.Context, q store.Querier, tenantID string) ([]*State, error) {
	return store.Many(ctx, q, scanState, `SELECT `+stateColumns+` FROM integration_states WHERE tenant_id = $1`, tenantID)
}

// PutState implements Store.
func (*SQLStore) PutState(ctx context.Context, q store.Querier, tenantID string, s *State) error {
	_, err := q.Exec(ctx, `INSERT INTO integration_states (tenant_id, integration_id, is_enabled, api_version, reauth_required,
			last_health_status, last_health_checked_at, last_health_latency_ms, enabled_at, updated_at, notify_admins_on_failure)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (tenant_id, integration_id) DO UPDATE SET is_enabled = excluded.is_enabled, api_version = excluded.api_version,
			reauth_required = excluded.reauth_required, last_health_status = excluded.last_health_status,
			last_health_checked_at = excluded.last_health_checked_at, last_health_latency_ms = excluded.last_health_latency_ms,
			enabled_at = excluded.enabled_at, updated_at = excluded.updated_at,
			notify_admins_on_failure = excluded.notify_admins_on_failure`,
		tenantID, s.IntegrationID, s.IsEnabled, s.APIVersion, s.ReauthRequired, s.LastHealthStatus, s.LastHealthCheckedAt,
		s.LastHealthLatencyMs, s.EnabledAt, s.UpdatedAt, s.NotifyAdminsOnFailure)
	return err
}

// GetCredentials implements Store.
func (*SQLStore) GetCredentials(ctx context.Context, q store.Querier, tenantID, integrationID string) (string, time.Time, error) {
	var sealed string
	var at time.Time
	err := q.QueryRow(ctx, `SELECT sealed, updated_at FROM integration_credentials WHERE tenant_id = $1 AND integration_id = $2`,
		tenantID, integrationID).Scan(&sealed, &at)
	return sealed, at.UTC(), err
}

// CredentialIntegrations implements Store.
func (*SQLStore) CredentialIntegrations(ctx context.Context, q store.Querier, tenantID string) ([]string, error) {
	return store.Many(ctx, q, func(s store.Scanner) (string, error) {
		var id string
		return id, s.Scan(&id)
	}, `SELECT integration_id FROM integration_credentials WHERE tenant_id = $1`, tenantID)
}

// PutCredentials implements Store.
func (*SQLStore) PutCredentials(ctx context.Context, q store.Querier, tenantID, integrationID, sealed string, at time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO integration_credentials (tenant_id, integration_id, sealed, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, integration_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		tenantID, integrationID, sealed, at)
	return err
}

// InsertLog implements Store.
func (*SQLStore) InsertLog(ctx context.Context, q store.Querier, e *LogEntry) error {
	var payload *string
	if len(e.Payload) > 0 {
		p := string(e.Payload)
		payload = &p
	}
	_, err := q.Exec(ctx, `INSERT INTO integration_logs (id, tenant_id, integration_id, run_id, level, message, code, payload,
			entity_type, entity_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		e.ID, e.TenantID, e.IntegrationID, e.RunID, e.Level, e.Message, e.Code, payload, e.EntityType, e.EntityID, e.CreatedAt)
	if err != nil {
		return err
	}
	return logCounts.Add(ctx, q, store.CountDelta{Key: []string{e.TenantID, e.IntegrationID, e.Level, valueOr(e.EntityType)}, N: 1})
}

// valueOr returns *p, or "" for nil.
func valueOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// logCounts keeps how many log entries each tenant's integration has at
// each level for each entity type (the empty type: entries of no entity;
// migrations 0003 and 0004).
var logCounts = store.NewCounts("integration_log_counts_by_type", "tenant_id", "integration_id", "level", "entity_type")

// ListLogs implements Store.
func (*SQLStore) ListLogs(ctx context.Context, q store.Querier, tenantID string, f LogFilter) ([]*LogEntry, int, error) {
	c := store.Where("tenant_id = ?", tenantID)
	for col, v := range map[string]string{"integration_id": f.IntegrationID, "level": f.Level, "run_id": f.RunID,
		"entity_type": f.EntityType, "entity_id": f.EntityID} {
		if v != "" {
			c.And(col+" = ?", v)
		}
	}
	total, err := logTotal(ctx, q, tenantID, f, c)
	if err != nil {
		return nil, 0, err
	}
	page := c.OrderPage("created_at", "id", true, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, func(s store.Scanner) (*LogEntry, error) {
		e := &LogEntry{TenantID: tenantID}
		var payload *string
		err := s.Scan(&e.ID, &e.IntegrationID, &e.RunID, &e.Level, &e.Message, &e.Code, &payload, &e.EntityType, &e.EntityID, &e.CreatedAt)
		e.CreatedAt = e.CreatedAt.UTC()
		if payload != nil {
			e.Payload = json.RawMessage(*payload)
		}
		return e, err
	}, `SELECT id, integration_id, run_id, level, message, code, payload, entity_type, entity_id, created_at
		FROM integration_logs WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

// logTotal returns how many entries c (ListLogs' predicate for tenantID
// and f) selects: unfiltered or filtered by integration, level and/or
// entity type, the sum of their kept counts; filtered by run or entity id
// too, a count of the entries in the run's or the entity's index.
func logTotal(ctx context.Context, q store.Querier, tenantID string, f LogFilter, c *store.Conds) (int, error) {
	if f.RunID != "" || f.EntityID != "" {
		var total int
		err := q.QueryRow(ctx, `SELECT count(*) FROM integration_logs WHERE `+c.SQL(), c.Values()...).Scan(&total)
		return total, err
	}
	k := store.Where("tenant_id = ?", tenantID)
	if f.IntegrationID != "" {
		k.And("integration_id = ?", f.IntegrationID)
	}
	if f.Level != "" {
		k.And("level = ?", f.Level)
	}
	if f.EntityType != "" {
		k.And("entity_type = ?", f.EntityType)
	}
	return logCounts.Sum(ctx, q, k)
}
