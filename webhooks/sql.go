package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on the store package's engines, SQLite and
// PostgreSQL: the same SQL serves both. Every query names the tenant
// first. Its tables are Migrations'.
type SQLStore struct {
	// Table is the queues' lease rows, webhook_queues.
	*drain.Table
}

// NewSQLStore returns the SQL store.
func NewSQLStore() *SQLStore {
	return &SQLStore{Table: drain.NewTable("webhook_queues", "webhook_id", "tenant_id")}
}

// webhookColumns are the columns scanWebhook reads.
var webhookColumns = webhookColumnsOf("")

// webhookColumnsOf lists scanWebhook's columns, qualified with alias when
// given.
func webhookColumnsOf(alias string) string {
	return store.Columns(alias, []string{"organization_id"}, "id", "tenant_id", "organization_id", "name", "description", "url",
		"subscribed_events", "http_method", "custom_headers", "max_retries", "timeout_ms", "rate_limit_per_minute",
		"auto_disable_threshold", "is_active", "consecutive_failures", "last_success_at", "last_failure_at",
		"previous_secret_set_at", "previous_secret_expires_at", "created_at", "updated_at")
}

// webhookScan holds a webhook row's values until finish decodes its JSON
// columns.
type webhookScan struct {
	w               Webhook
	events, headers string
}

// dest lists the destinations of webhookColumns, in order.
func (ws *webhookScan) dest() []any {
	w := &ws.w
	return []any{&w.ID, &w.TenantID, &w.OrganizationID, &w.Name, &w.Description, &w.URL, &ws.events, &w.HTTPMethod,
		&ws.headers, &w.MaxRetries, &w.TimeoutMs, &w.RateLimitPerMinute, &w.AutoDisableThreshold, &w.IsActive,
		&w.ConsecutiveFailures, &w.LastSuccessAt, &w.LastFailureAt, &w.PreviousSecretSetAt, &w.PreviousSecretExpiresAt,
		&w.CreatedAt, &w.UpdatedAt}
}

func (ws *webhookScan) finish() (*Webhook, error) {
	if err := json.Unmarshal([]byte(ws.events), &ws.w.SubscribedEvents); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(ws.headers), &ws.w.CustomHeaders); err != nil {
		return nil, err
	}
	ws.w.MaskedSecret = MaskedSecret
	return &ws.w, nil
}

func scanWebhook(s store.Scanner) (*Webhook, error) {
	var ws webhookScan
	if err := s.Scan(ws.dest()...); err != nil {
		return nil, err
	}
	return ws.finish()
}

// visible is the predicate of the live webhooks a scope may read.
func visible(sc store.Scope) *store.Conds {
	c := sc.Readable("tenant_id", "organization_id")
	c.And("deleted_at IS NULL")
	return c
}

// GetWebhook implements Store.
func (*SQLStore) GetWebhook(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Webhook, error) {
	if !store.IsID(id) {
		return nil, store.ErrNotFound
	}
	c := visible(sc)
	c.And("id = ?", id)
	return store.One(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks WHERE `+c.SQL(), c.Values()...)
}

// jsonColumns are a webhook's JSON columns as text (the columns bind JSON
// as a string).
func jsonColumns(w *Webhook) (events, headers string, err error) {
	e, err := json.Marshal(w.SubscribedEvents)
	if err != nil {
		return "", "", err
	}
	h, err := json.Marshal(w.CustomHeaders)
	return string(e), string(h), err
}

// InsertWebhook implements Store.
func (*SQLStore) InsertWebhook(ctx context.Context, q store.Querier, w *Webhook, sealedSecret string) error {
	events, headers, err := jsonColumns(w)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO webhooks (id, tenant_id, organization_id, name, description, url, subscribed_events,
		http_method, custom_headers, max_retries, timeout_ms, rate_limit_per_minute, auto_disable_threshold, is_active, secret,
		created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		w.ID, w.TenantID, store.NullIfEmpty(w.OrganizationID), w.Name, w.Description, w.URL, events, w.HTTPMethod, headers,
		w.MaxRetries, w.TimeoutMs, w.RateLimitPerMinute, w.AutoDisableThreshold, w.IsActive, sealedSecret, w.CreatedAt, w.UpdatedAt)
	return err
}

// UpdateWebhook implements Store.
func (*SQLStore) UpdateWebhook(ctx context.Context, q store.Querier, w *Webhook) error {
	events, headers, err := jsonColumns(w)
	if err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `UPDATE webhooks SET name = $3, description = $4, url = $5, subscribed_events = $6,
		http_method = $7, custom_headers = $8, max_retries = $9, timeout_ms = $10, rate_limit_per_minute = $11,
		auto_disable_threshold = $12, is_active = $13, updated_at = $14 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		w.TenantID, w.ID, w.Name, w.Description, w.URL, events, w.HTTPMethod, headers, w.MaxRetries, w.TimeoutMs,
		w.RateLimitPerMinute, w.AutoDisableThreshold, w.IsActive, w.UpdatedAt)
}

// RotateSecret implements Store.
func (*SQLStore) RotateSecret(ctx context.Context, q store.Querier, tenantID, id, sealed string, r *Rotation) error {
	return store.ExecOne(ctx, q, `UPDATE webhooks SET previous_secret = secret, secret = $3, previous_secret_set_at = $4,
		previous_secret_expires_at = $5, updated_at = $4 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		tenantID, id, sealed, r.PreviousSecretSetAt, r.PreviousSecretExpiresAt)
}

// DeleteWebhook implements Store.
func (*SQLStore) DeleteWebhook(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE webhooks SET deleted_at = $3, updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, at)
}

// ListWebhooks implements Store.
func (*SQLStore) ListWebhooks(ctx context.Context, q store.Querier, sc store.Scope, f Filter) ([]*Webhook, int, error) {
	if !store.Storable(f.Search) {
		return nil, 0, nil
	}
	d := q.Dialect()
	c := visible(sc)
	if f.Search != "" {
		p := store.LikeContains(f.Search)
		c.And("("+d.ContainsFold("name", "?")+" OR "+d.ContainsFold("url", "?")+")", p, p)
	}
	if f.IsActive != nil {
		c.And("is_active = ?", *f.IsActive)
	}
	// The total: without a search, the kept counts by organization and
	// activity (webhook_list_counts); a search counts its matches, at
	// most store.SearchCap(ctx)+1 of them (store.CountCapped).
	var total int
	var err error
	if f.Search == "" {
		k := sc.Readable("tenant_id", "NULLIF(organization_id, '')")
		if f.IsActive != nil {
			k.And("is_active = ?", *f.IsActive)
		}
		if err := q.QueryRow(ctx, `SELECT CAST(COALESCE(sum(n), 0) AS BIGINT) FROM webhook_list_counts WHERE `+k.SQL(),
			k.Values()...).Scan(&total); err != nil {
			return nil, 0, err
		}
	} else if total, err = store.CountCapped(ctx, q, `FROM webhooks WHERE `+c.SQL(), c.Values()...); err != nil {
		return nil, 0, err
	}
	if f.Limit <= 0 || total <= f.Offset && total <= store.SearchCap(ctx) { // no page to read (a capped total does not say)
		return nil, total, nil
	}
	items, err := store.Many(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks WHERE `+c.SQL()+
		c.OrderPage("created_at", "id", true, f.Limit, f.Offset), c.Values()...)
	return items, total, err
}

// DropExpiredSecrets implements Store.
func (*SQLStore) DropExpiredSecrets(ctx context.Context, q store.Querier, now time.Time) (int64, error) {
	return q.Exec(ctx, `UPDATE webhooks SET previous_secret = NULL, previous_secret_set_at = NULL, previous_secret_expires_at = NULL
		WHERE previous_secret_expires_at IS NOT NULL AND previous_secret_expires_at <= $1`, now)
}

// RecordResults implements Store.
func (*SQLStore) RecordResults(ctx context.Context, q store.Querier, tenantID, id string, failures int, lastSuccess, lastFailure *time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE webhooks SET consecutive_failures = $3, last_success_at = COALESCE($4, last_success_at),
		last_failure_at = COALESCE($5, last_failure_at) WHERE tenant_id = $1 AND id = $2`,
		tenantID, id, failures, lastSuccess, lastFailure)
	return n > 0, err
}

// Deactivate implements Store.
func (*SQLStore) Deactivate(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE webhooks SET is_active = FALSE, updated_at = $3 WHERE tenant_id = $1 AND id = $2 AND is_active`,
		tenantID, id, at)
	return n > 0, err
}

// InsertInbound implements Store.
func (*SQLStore) InsertInbound(ctx context.Context, q store.Querier, r *InboundReceipt) (bool, error) {
	n, err := q.Exec(ctx, `INSERT INTO webhook_inbound_receipts (endpoint_id, message_id, tenant_id, organization_id,
		event_type, payload, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (endpoint_id, message_id) DO NOTHING`,
		r.EndpointID, r.Message.ID, store.NullIfEmpty(r.TenantID), store.NullIfEmpty(r.OrganizationID), r.Message.Type,
		string(r.Message.Payload), r.ReceivedAt)
	return n > 0, err
}

// GetInbound implements Store.
func (*SQLStore) GetInbound(ctx context.Context, q store.Querier, endpointID, messageID string) (*InboundReceipt, error) {
	r := &InboundReceipt{EndpointID: endpointID}
	var payload string
	err := q.QueryRow(ctx, `SELECT message_id, COALESCE(tenant_id, ''), COALESCE(organization_id, ''), event_type, payload,
		received_at, processed_at FROM webhook_inbound_receipts WHERE endpoint_id = $1 AND message_id = $2`, endpointID, messageID).
		Scan(&r.Message.ID, &r.TenantID, &r.OrganizationID, &r.Message.Type, &payload, &r.ReceivedAt, &r.ProcessedAt)
	if err != nil {
		return nil, err
	}
	r.Message.Payload = json.RawMessage(payload)
	return r, nil
}

// MarkInboundProcessed implements Store.
func (*SQLStore) MarkInboundProcessed(ctx context.Context, q store.Querier, endpointID, messageID string, at time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE webhook_inbound_receipts SET processed_at = $3
		WHERE endpoint_id = $1 AND message_id = $2 AND processed_at IS NULL`, endpointID, messageID, at)
}
