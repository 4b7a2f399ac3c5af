package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/tenantkit/tenantkit/store"
)

// webhookColumnsForDeliveryOf adds what a delivery needs to the webhook
// columns (qualified with alias when given): whether the webhook is
// deleted, and its sealed secrets.
func webhookColumnsForDeliveryOf(alias string) string {
	deleted := "deleted_at IS NOT NULL"
	if alias != "" {
		deleted = alias + "." + deleted
	}
	return webhookColumnsOf(alias) + ", " + deleted + ", " + store.Columns(alias, []string{"previous_secret"}, "secret", "previous_secret")
}

// deliveryWebhookScan holds the values of webhookColumnsForDeliveryOf.
type deliveryWebhookScan struct {
	webhookScan
	deleted          bool
	secret, previous string
}

func (x *deliveryWebhookScan) dest() []any {
	return append(x.webhookScan.dest(), &x.deleted, &x.secret, &x.previous)
}

func (x *deliveryWebhookScan) finish() (*Webhook, error) {
	w, err := x.webhookScan.finish()
	if err != nil {
		return nil, err
	}
	w.deleted, w.sealedSecret, w.sealedPrevious = x.deleted, x.secret, x.previous
	return w, nil
}

func scanWebhookForDelivery(s store.Scanner) (*Webhook, error) {
	var x deliveryWebhookScan
	if err := s.Scan(x.dest()...); err != nil {
		return nil, err
	}
	return x.finish()
}

// activeWebhooks returns the tenant's live, active webhooks with their
// secrets.
func activeWebhooks(ctx context.Context, q store.Querier, tenantID string) ([]*Webhook, error) {
	return store.Many(ctx, q, scanWebhookForDelivery, `SELECT `+webhookColumnsForDeliveryOf("")+` FROM webhooks
		WHERE tenant_id = $1 AND deleted_at IS NULL AND is_active`, tenantID)
}

const deliveryColumns = `d.id, d.webhook_id, w.name, d.event_id, d.event_type, d.message_id, d.status, d.attempt, d.max_attempts,
	d.target_url, d.payload, d.response_status, COALESCE(d.response_body, ''), d.response_headers, COALESCE(d.error_message, ''),
	d.duration_ms, d.next_retry_at, d.enqueued_at, d.last_attempt_at, d.delivered_at, d.tenant_id, COALESCE(d.organization_id, ''),
	d.created_at, d.updated_at`

const deliveryFrom = ` FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id WHERE `

func scanDelivery(s store.Scanner) (*Delivery, error) {
	var d Delivery
	var payload string
	var headers sql.NullString
	err := s.Scan(&d.ID, &d.WebhookID, &d.WebhookName, &d.EventID, &d.EventType, &d.MessageID, &d.Status, &d.Attempt,
		&d.MaxAttempts, &d.TargetURL, &payload, &d.ResponseStatus, &d.ResponseBody, &headers, &d.ErrorMessage, &d.DurationMs,
		&d.NextRetryAt, &d.EnqueuedAt, &d.LastAttemptAt, &d.DeliveredAt, &d.TenantID, &d.OrganizationID, &d.CreatedAt, &d.UpdatedAt)
	if err != nil {
		return nil, err
	}
	d.Payload = json.RawMessage(payload)
	if headers.Valid {
		if err := json.Unmarshal([]byte(headers.String), &d.ResponseHeaders); err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// insertDelivery adds d and reports whether it did.
func insertDelivery(ctx context.Context, q store.Querier, d *Delivery) (bool, error) {
	n, err := insertDeliveries(ctx, q, []*Delivery{d})
	return n == 1, err
}

// deliveryInserts writes new deliveries.
var deliveryInserts = store.NewBatchInsert("webhook_deliveries", `id, tenant_id, organization_id, webhook_id, event_id,
	event_type, message_id, payload, status, attempt, max_attempts, target_url, enqueued_at, created_at, updated_at`, "")

// insertDeliveries adds ds and returns how many it added.
func insertDeliveries(ctx context.Context, q store.Querier, ds []*Delivery) (int64, error) {
	rows := make([][]any, len(ds))
	for i, d := range ds {
		rows[i] = []any{d.ID, d.TenantID, store.NullIfEmpty(d.OrganizationID), d.WebhookID, d.EventID, d.EventType, d.MessageID,
			string(d.Payload), d.Status, 0, d.MaxAttempts, d.TargetURL, d.EnqueuedAt, d.CreatedAt, d.UpdatedAt}
	}
	return deliveryInserts.Insert(ctx, q, rows)
}

// loadQueueWebhook returns a webhook, deleted or not, with its sealed
// secrets: what sending its deliveries needs.
func loadQueueWebhook(ctx context.Context, q store.Querier, tenantID, id string) (*Webhook, error) {
	return store.One(ctx, q, scanWebhookForDelivery, `SELECT `+webhookColumnsForDeliveryOf("")+` FROM webhooks
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

func getDelivery(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Delivery, error) {
	if !store.IsID(id) {
		return nil, store.ErrNotFound
	}
	c := sc.Readable("d.tenant_id", "w.organization_id")
	c.And("d.id = ?", id)
	return store.One(ctx, q, scanDelivery, `SELECT `+deliveryColumns+deliveryFrom+c.SQL(), c.Values()...)
}

// markSending records that an attempt started.
func markSending(ctx context.Context, tx *store.Tx, d *Delivery) error {
	return store.ExecOne(ctx, tx, `UPDATE webhook_deliveries SET status = $3, attempt = $4, last_attempt_at = $5, updated_at = $5
		WHERE tenant_id = $1 AND id = $2`, d.TenantID, d.ID, d.Status, d.Attempt, d.LastAttemptAt)
}

func updateDelivery(ctx context.Context, q store.Querier, d *Delivery) error {
	var headers any
	if d.ResponseHeaders != nil {
		b, err := json.Marshal(d.ResponseHeaders)
		if err != nil {
			return err
		}
		headers = string(b)
	}
	return store.ExecOne(ctx, q, `UPDATE webhook_deliveries SET status = $3, attempt = $4, max_attempts = $5, response_status = $6,
		response_body = $7, response_headers = $8, error_message = $9, duration_ms = $10, next_retry_at = $11,
		last_attempt_at = $12, delivered_at = $13, updated_at = $14 WHERE tenant_id = $1 AND id = $2`,
		d.TenantID, d.ID, d.Status, d.Attempt, d.MaxAttempts, d.ResponseStatus, store.NullIfEmpty(d.ResponseBody), headers,
		store.NullIfEmpty(d.ErrorMessage), d.DurationMs, d.NextRetryAt, d.LastAttemptAt, d.DeliveredAt, d.UpdatedAt)
}

func listDeliveries(ctx context.Context, db *store.DB, sc store.Scope, f DeliveryFilter) ([]*Delivery, int, error) {
	if !store.Storable(f.EventType) || !store.Storable(f.Status) || f.WebhookID != "" && !store.IsID(f.WebhookID) {
		return nil, 0, nil
	}
	c := sc.Readable("d.tenant_id", "w.organization_id")
	for col, v := range map[string]string{"d.webhook_id": f.WebhookID, "d.event_type": f.EventType, "d.status": f.Status} {
		if v != "" {
			c.And(col+" = ?", v)
		}
	}
	var items []*Delivery
	var total int
	err := db.ReadTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*)`+deliveryFrom+c.SQL(), c.Values()...).Scan(&total); err != nil {
			return err
		}
		var err error
		items, err = store.Many(ctx, tx, scanDelivery, `SELECT `+deliveryColumns+deliveryFrom+c.SQL()+
			c.OrderPage("d.created_at", "d.id", true, f.Limit, f.Offset), c.Values()...)
		return err
	})
	for _, d := range items { // the list leaves out payloads and responses
		d.Payload, d.ResponseBody, d.ResponseHeaders = nil, "", nil
	}
	return items, total, err
}
