package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// The SQL below serves both engines. Every query names the tenant first.

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

func getWebhook(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Webhook, error) {
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

func insertWebhook(ctx context.Context, q store.Querier, w *Webhook, sealedSecret string) error {
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

func updateWebhook(ctx context.Context, q store.Querier, w *Webhook) error {
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

// rotateSecret makes sealed the current secret and the current one the
// previous, signing until r.PreviousSecretExpiresAt.
func rotateSecret(ctx context.Context, q store.Querier, tenantID, id, sealed string, r *Rotation) error {
	return store.ExecOne(ctx, q, `UPDATE webhooks SET previous_secret = secret, secret = $3, previous_secret_set_at = $4,
		previous_secret_expires_at = $5, updated_at = $4 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		tenantID, id, sealed, r.PreviousSecretSetAt, r.PreviousSecretExpiresAt)
}

func deleteWebhook(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE webhooks SET deleted_at = $3, updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

func listWebhooks(ctx context.Context, db *store.DB, sc store.Scope, f Filter) ([]*Webhook, int, error) {
	if !store.Storable(f.Search) {
		return nil, 0, nil
	}
	d := db.Dialect()
	c := visible(sc)
	if f.Search != "" {
		p := store.LikeContains(f.Search)
		c.And("("+d.ContainsFold("name", "?")+" OR "+d.ContainsFold("url", "?")+")", p, p)
	}
	if f.IsActive != nil {
		c.And("is_active = ?", *f.IsActive)
	}
	var items []*Webhook
	var total int
	err := db.ReadTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
			return err
		}
		var err error
		items, err = store.Many(ctx, tx, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks WHERE `+c.SQL()+
			c.OrderPage("created_at", "id", true, f.Limit, f.Offset), c.Values()...)
		return err
	})
	return items, total, err
}
