package webhooks

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
)

// sealedWebhookColumns adds what sending needs to the webhook columns:
// whether the webhook is deleted, and its sealed secrets.
var sealedWebhookColumns = webhookColumns + ", deleted_at IS NOT NULL, " + store.Columns("", []string{"previous_secret"}, "secret", "previous_secret")

func scanSealedWebhook(s store.Scanner) (*SealedWebhook, error) {
	var ws webhookScan
	x := &SealedWebhook{}
	if err := s.Scan(append(ws.dest(), &x.Deleted, &x.Secret, &x.PreviousSecret)...); err != nil {
		return nil, err
	}
	var err error
	x.Webhook, err = ws.finish()
	return x, err
}

// ActiveWebhooks implements Store.
func (*SQLStore) ActiveWebhooks(ctx context.Context, q store.Querier, tenantID string) ([]*Webhook, error) {
	return store.Many(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks
		WHERE tenant_id = $1 AND deleted_at IS NULL AND is_active`, tenantID)
}

// SealedWebhook implements Store.
func (*SQLStore) SealedWebhook(ctx context.Context, q store.Querier, tenantID, id string) (*SealedWebhook, error) {
	if !store.IsID(id) {
		return nil, store.ErrNotFound
	}
	return store.One(ctx, q, scanSealedWebhook, `SELECT `+sealedWebhookColumns+` FROM webhooks
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// SigningWebhook implements Store.
func (*SQLStore) SigningWebhook(ctx context.Context, q store.Querier, tenantID, url string) (*SealedWebhook, error) {
	return store.One(ctx, q, scanSealedWebhook, `SELECT `+sealedWebhookColumns+` FROM webhooks
		WHERE tenant_id = $1 AND url = $2 AND deleted_at IS NULL AND is_active ORDER BY created_at, id LIMIT 1`, tenantID, url)
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

// deliveryInserts writes new deliveries.
var deliveryInserts = store.NewBatchInsert("webhook_deliveries", `id, tenant_id, organization_id, webhook_id, event_id,
	event_type, message_id, payload, status, attempt, max_attempts, target_url, enqueued_at, created_at, updated_at`, "")

// InsertDeliveries implements Store.
func (*SQLStore) InsertDeliveries(ctx context.Context, q store.Querier, ds []*Delivery) (int64, error) {
	rows := make([][]any, len(ds))
	for i, d := range ds {
		rows[i] = []any{d.ID, d.TenantID, store.NullIfEmpty(d.OrganizationID), d.WebhookID, d.EventID, d.EventType, d.MessageID,
			string(d.Payload), d.Status, 0, d.MaxAttempts, d.TargetURL, d.EnqueuedAt, d.CreatedAt, d.UpdatedAt}
	}
	n, err := deliveryInserts.Insert(ctx, q, rows)
	if err != nil || n == 0 {
		return n, err
	}
	// One count row per webhook, event type and state written to, and
	// one per webhook, hour of creation and state, in this transaction.
	type key struct {
		tenant, webhook, eventType, state string
		hour                              int64
	}
	added := map[key]int64{}
	var order []key
	add := func(k key) {
		if added[k] == 0 {
			order = append(order, k)
		}
		added[k]++
	}
	for _, d := range ds {
		state := countState(d.Status)
		add(key{d.TenantID, d.WebhookID, d.EventType, state, 0})
		add(key{d.TenantID, d.WebhookID, "", state, hourOf(d.CreatedAt)})
	}
	counts := make([][]any, len(order))
	for i, k := range order {
		counts[i] = []any{store.NewID(), k.tenant, k.webhook, k.eventType, k.state, k.hour, added[k]}
	}
	_, err = countInserts.Insert(ctx, q, counts)
	return n, err
}

// countState is the state a delivery of status is counted in: "" while
// it is still to send (pending or sending), else its status. (Migration
// 0006's trigger computes the same for each change of status.)
func countState(status string) string {
	if status == StatusPending || status == StatusSending {
		return ""
	}
	return status
}

// hourOf is the start of the hour t is in, in Unix seconds: the
// created_hour of the counts of a delivery created at t (migration 0007's
// trigger computes the same from created_at).
func hourOf(t time.Time) int64 {
	s := t.Unix()
	return s - ((s%3600)+3600)%3600
}

// hoursKept is how long the counts by hour of creation are kept: the sweep
// deletes the older ones (FoldDeliveryCounts). hoursRead is how far back
// DeliveryHealth reads them; a window starting earlier counts the
// deliveries of its first hours. The difference leaves room for the
// processes' clocks.
const hoursKept, hoursRead = 48 * time.Hour, 36 * time.Hour

// countInserts writes delta rows of the deliveries' counts.
var countInserts = store.NewBatchInsert("webhook_delivery_counts", "id, tenant_id, webhook_id, event_type, state, created_hour, delta", "")

// foldBatch is how many of a count's delta rows one fold takes at most.
const foldBatch = 1000

// FoldDeliveryCounts implements Store: for each of up to limit counts
// (webhook, event type, state and hour) with delta rows
// (webhook_delivery_counts, which holds those written since the last
// fold), it deletes up to foldBatch of them and adds their sum to the
// count's row of webhook_delivery_folded_counts (an upsert; a sum that
// comes to zero leaves no row), and returns how many delta rows it
// folded. The sum is of the rows the DELETE removed (RETURNING), so a
// concurrent fold of the same count, which removes none of them, cannot
// count a row twice. Its reads follow the deltas since the last fold,
// not the counts kept (migration 0008).
//
// It first deletes the folded counts by hour of creation older than
// hoursKept (counted in what it returns), from their index by hour.
//
// The counts are folded in the order of their rows in the sums by
// organization (migration 0011's webhook_delivery_totals, which a
// trigger updates from each fold of a count by event type and state):
// by tenant, the webhook's organization, event type and state first, so
// that two folds running at once lock those shared rows in one order and
// never wait on each other in a cycle.
func (*SQLStore) FoldDeliveryCounts(ctx context.Context, q store.Querier, limit int) (int64, error) {
	folded, err := q.Exec(ctx, `DELETE FROM webhook_delivery_folded_counts WHERE created_hour > 0 AND created_hour < $1`,
		hourOf(time.Now().Add(-hoursKept)))
	if err != nil {
		return 0, err
	}
	type key struct {
		tenant, webhook, eventType, state string
		hour                              int64
	}
	keys, err := store.Many(ctx, q, func(s store.Scanner) (key, error) {
		var k key
		return k, s.Scan(&k.tenant, &k.hour, &k.webhook, &k.eventType, &k.state)
	}, `SELECT k.tenant_id, k.created_hour, k.webhook_id, k.event_type, k.state
		FROM (SELECT DISTINCT tenant_id, created_hour, webhook_id, event_type, state FROM webhook_delivery_counts) k
		LEFT JOIN webhooks w ON w.id = k.webhook_id AND w.tenant_id = k.tenant_id
		ORDER BY k.tenant_id, COALESCE(w.organization_id, ''), k.event_type, k.state, k.created_hour, k.webhook_id
		LIMIT $1`, limit)
	if err != nil {
		return folded, err
	}
	for _, k := range keys {
		deltas, err := store.Many(ctx, q, func(s store.Scanner) (int64, error) {
			var d int64
			return d, s.Scan(&d)
		}, `DELETE FROM webhook_delivery_counts WHERE id IN (SELECT id FROM webhook_delivery_counts
			WHERE tenant_id = $1 AND created_hour = $2 AND webhook_id = $3 AND event_type = $4 AND state = $5 LIMIT $6)
			RETURNING delta`,
			k.tenant, k.hour, k.webhook, k.eventType, k.state, foldBatch)
		if err != nil {
			return folded, err
		}
		folded += int64(len(deltas))
		var sum int64
		for _, d := range deltas {
			sum += d
		}
		if sum == 0 {
			continue
		}
		var n int64
		if err := q.QueryRow(ctx, `INSERT INTO webhook_delivery_folded_counts AS f (tenant_id, created_hour, webhook_id, event_type, state, n)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant_id, created_hour, webhook_id, event_type, state) DO UPDATE SET n = f.n + excluded.n
			RETURNING n`, k.tenant, k.hour, k.webhook, k.eventType, k.state, sum).Scan(&n); err != nil {
			return folded, err
		}
		if n == 0 {
			if _, err := q.Exec(ctx, `DELETE FROM webhook_delivery_folded_counts
				WHERE tenant_id = $1 AND created_hour = $2 AND webhook_id = $3 AND event_type = $4 AND state = $5 AND n = 0`,
				k.tenant, k.hour, k.webhook, k.eventType, k.state); err != nil {
				return folded, err
			}
		}
	}
	return folded, nil
}

// GetDelivery implements Store.
func (*SQLStore) GetDelivery(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Delivery, error) {
	if !store.IsID(id) {
		return nil, store.ErrNotFound
	}
	c := sc.Readable("d.tenant_id", "w.organization_id")
	c.And("d.id = ?", id)
	return store.One(ctx, q, scanDelivery, `SELECT `+deliveryColumns+deliveryFrom+c.SQL(), c.Values()...)
}

// MarkSending implements Store.
func (*SQLStore) MarkSending(ctx context.Context, q store.Querier, d *Delivery) error {
	return store.ExecOne(ctx, q, `UPDATE webhook_deliveries SET status = $3, attempt = $4, last_attempt_at = $5, updated_at = $5
		WHERE tenant_id = $1 AND id = $2`, d.TenantID, d.ID, d.Status, d.Attempt, d.LastAttemptAt)
}

// UpdateDelivery implements Store.
func (*SQLStore) UpdateDelivery(ctx context.Context, q store.Querier, d *Delivery) error {
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

// ListDeliveries implements Store.
func (*SQLStore) ListDeliveries(ctx context.Context, q store.Querier, sc store.Scope, f DeliveryFilter) ([]*Delivery, int, error) {
	if !store.Storable(f.EventType) || !store.Storable(f.Status) || f.WebhookID != "" && !store.IsID(f.WebhookID) {
		return nil, 0, nil
	}
	c := sc.Readable("d.tenant_id", "w.organization_id")
	if f.WebhookID != "" {
		c.And("d.webhook_id = ?", f.WebhookID)
	}
	if f.EventType != "" {
		c.And("d.event_type = ?", f.EventType)
	}
	if f.Status != "" {
		c.And("d.status = ?", f.Status)
	}
	from := deliveryFrom
	if f.Status == StatusPending || f.Status == StatusSending {
		// The deliveries still to send are the newest and few beside
		// the history: their total and page read the status index,
		// newest first. Without statistics, or with SQLite's (an average
		// per value), SQLite may choose the webhook's or the event type's
		// index instead and read their whole history (418 ms at 1,000,000
		// deliveries by webhook, event type and pending, 0.8 ms through
		// the status index).
		from = ` FROM ` + q.Dialect().IndexedBy("webhook_deliveries d", "webhook_deliveries_status_idx") +
			` JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id WHERE `
	}
	total, err := deliveryTotal(ctx, q, sc, f, from, c)
	if err != nil || total <= f.Offset || f.Limit <= 0 { // no page to read
		return nil, total, err
	}
	items, err := store.Many(ctx, q, scanDelivery, `SELECT `+deliveryColumns+from+c.SQL()+
		c.OrderPage("d.created_at", "d.id", true, f.Limit, f.Offset), c.Values()...)
	for _, d := range items { // the list leaves out payloads and responses
		d.Payload, d.ResponseBody, d.ResponseHeaders = nil, "", nil
	}
	return items, total, err
}

// deliveryTotal returns how many deliveries c (ListDeliveries' predicate
// for sc and f, over its FROM clause from) selects, from the kept counts,
// except filtered by status pending or sending, which the counts keep as
// one state: it counts those deliveries, which are the ones still to
// send, through the status index that from names. Filtered by webhook,
// it sums that webhook's count rows (by event type and state); otherwise
// the sums by organization of the webhooks sc may read (migration 0011: a
// few rows per organization, event type and state, however many webhooks
// there were).
func deliveryTotal(ctx context.Context, q store.Querier, sc store.Scope, f DeliveryFilter, from string, c *store.Conds) (int, error) {
	var total int64
	if f.Status == StatusPending || f.Status == StatusSending {
		err := q.QueryRow(ctx, `SELECT count(*)`+from+c.SQL(), c.Values()...).Scan(&total)
		return int(total), err
	}
	counts, k := `webhook_delivery_kept_totals t`, sc.ReadableCounted("t.tenant_id", "t.organization_id")
	if f.WebhookID != "" {
		counts = `webhook_delivery_kept_counts t JOIN webhooks w ON w.id = t.webhook_id AND w.tenant_id = t.tenant_id`
		k = sc.Readable("t.tenant_id", "w.organization_id").And("t.created_hour = 0").And("t.webhook_id = ?", f.WebhookID)
	}
	if f.EventType != "" {
		k.And("t.event_type = ?", f.EventType)
	}
	if f.Status != "" {
		k.And("t.state = ?", f.Status)
	}
	err := q.QueryRow(ctx, `SELECT COALESCE(sum(t.n), 0) FROM `+counts+` WHERE `+k.SQL(), k.Values()...).Scan(&total)
	return int(total), err
}

// The deliveries a drain sends at $3 (the webhook's tenant and id being
// $1 and $2) are two sets, each read from an index of its own, so that
// neither read walks the retries not yet due (migrations 0009 and 0010):
// freshDeliveries, never attempted, in event order; and retries, those
// waiting for a retry in retry order, due up to $3. Each read is written
// so that PostgreSQL's generic plan of the prepared statement (which
// cannot know $3) still walks its index: an ORDER BY the index's order
// with a LIMIT. A bare "next_retry_at <= $3" measured a sequential scan
// of the table in that plan.
const (
	freshDeliveries = `d.tenant_id = $1 AND d.webhook_id = $2 AND d.status IN ('pending', 'sending') AND d.next_retry_at IS NULL`
	retries         = `d.tenant_id = $1 AND d.webhook_id = $2 AND d.status IN ('pending', 'sending') AND d.next_retry_at IS NOT NULL`
)

// dueRetriesRead bounds the retries due that a claim reads (those that
// came due first): the first deliveries in event order are taken from
// among them and the deliveries never attempted.
const dueRetriesRead = 1000

// claimDeliveries reads ClaimDeliveries' deliveries ($4 of them). Each
// set is read with its columns (no join back by id, which the generic
// plan made a scan of the table); in event order, that is by the 4th
// column (event_id), then the 1st (id).
var claimDeliveries = `SELECT * FROM (SELECT ` + deliveryColumns + deliveryFrom + freshDeliveries + `
		ORDER BY d.event_id, d.id LIMIT $4) f
	UNION ALL
	SELECT * FROM (SELECT * FROM (SELECT ` + deliveryColumns + deliveryFrom + retries + ` AND d.next_retry_at <= $3
		ORDER BY d.next_retry_at LIMIT ` + strconv.Itoa(dueRetriesRead) + `) r0 ORDER BY 4, 1 LIMIT $4) r
	ORDER BY 4, 1 LIMIT $4`

// ClaimDeliveries implements Store: the first n due deliveries in event
// order are among the first n of each of the two sets (freshDeliveries,
// and the first dueRetriesRead retries due), so each set gives at most n
// rows and the union's first n are taken.
func (*SQLStore) ClaimDeliveries(ctx context.Context, q store.Querier, tenantID, webhookID string, now time.Time, n int) ([]*Delivery, error) {
	ds, err := store.Many(ctx, q, scanDelivery, claimDeliveries, tenantID, webhookID, now, n)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	var ids store.Args
	ids.Add(now)
	marks := make([]string, len(ds))
	for i, d := range ds {
		if d.Status == StatusPending {
			d.Attempt++
		}
		d.Status, d.LastAttemptAt, d.UpdatedAt = StatusSending, &now, now
		marks[i] = ids.Add(d.ID)
	}
	// By id alone (they are the tenant's, just read): with tenant_id too,
	// SQLite would walk the tenant's index rather than look the ids up.
	_, err = q.Exec(ctx, `UPDATE webhook_deliveries SET attempt = attempt + (CASE WHEN status = 'pending' THEN 1 ELSE 0 END),
		status = 'sending', last_attempt_at = $1, updated_at = $1 WHERE id IN (`+strings.Join(marks, ", ")+`)`,
		ids.Values()...)
	return ds, err
}

// UnclaimDelivery implements Store.
func (*SQLStore) UnclaimDelivery(ctx context.Context, q store.Querier, d *Delivery, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE webhook_deliveries SET status = 'pending', attempt = $3, updated_at = $4
		WHERE tenant_id = $1 AND id = $2`, d.TenantID, d.ID, max(0, d.Attempt-1), now)
}

// ExpireDeliveries implements Store.
func (*SQLStore) ExpireDeliveries(ctx context.Context, q store.Querier, tenantID, webhookID, reason string, now time.Time) (int64, error) {
	return q.Exec(ctx, `UPDATE webhook_deliveries SET status = 'expired', error_message = $3, next_retry_at = NULL,
		updated_at = $4 WHERE tenant_id = $1 AND webhook_id = $2 AND status IN ('pending', 'sending')`,
		tenantID, webhookID, reason, now)
}

// DeliveryHealth implements Store: the scope's live webhooks, each with
// its deliveries since, counted by state group in one GROUP BY. The
// whole hours of the window are read from the kept counts by hour of
// creation (migration 0007: a few rows per webhook and hour); the
// deliveries before the first whole hour (since is not at the start of
// an hour), or before the hours DeliveryHealth reads (hoursRead), are
// counted from the tenant's index. The order is made in Go, byte order
// on both engines (PostgreSQL's text order follows its collation).
func (*SQLStore) DeliveryHealth(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]DeliveryHealth, error) {
	since = since.UTC().Truncate(time.Microsecond)
	kept := time.Unix(hourOf(since), 0).UTC() // the first hour the counts give
	if kept.Before(since) {
		kept = kept.Add(time.Hour)
	}
	if oldest := time.Unix(hourOf(time.Now().Add(-hoursRead)), 0).UTC(); kept.Before(oldest) {
		kept = oldest
	}
	c := sc.Readable("w.tenant_id", "w.organization_id")
	c.And("w.deleted_at IS NULL")
	tenant := c.Add(sc.TenantID)
	from := `SELECT k.webhook_id, k.state, k.n FROM webhook_delivery_kept_counts k
			WHERE k.tenant_id = ` + tenant + ` AND k.created_hour >= ` + c.Add(kept.Unix())
	if since.Before(kept) {
		from += `
			UNION ALL
			SELECT d.webhook_id, CASE WHEN d.status IN ('pending', 'sending') THEN '' ELSE d.status END, 1
			FROM webhook_deliveries d WHERE d.tenant_id = ` + tenant + ` AND d.created_at >= ` + c.Add(since) +
			` AND d.created_at < ` + c.Add(kept)
	}
	hs, err := store.Many(ctx, q, func(s store.Scanner) (DeliveryHealth, error) {
		var h DeliveryHealth
		return h, s.Scan(&h.WebhookID, &h.Name, &h.URL, &h.Delivered, &h.Failed, &h.Pending)
	}, `SELECT w.id, w.name, w.url,
		CAST(COALESCE(sum(CASE WHEN x.state = 'delivered' THEN x.n END), 0) AS BIGINT),
		CAST(COALESCE(sum(CASE WHEN x.state IN ('failed', 'expired') THEN x.n END), 0) AS BIGINT),
		CAST(COALESCE(sum(CASE WHEN x.state = '' THEN x.n END), 0) AS BIGINT)
		FROM webhooks w LEFT JOIN (`+from+`) x ON x.webhook_id = w.id
		WHERE `+c.SQL()+` GROUP BY w.id, w.name, w.url`, c.Values()...)
	slices.SortFunc(hs, func(a, b DeliveryHealth) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.WebhookID, b.WebhookID))
	})
	return hs, err
}

// Due implements drain.Items: k has a delivery ClaimDeliveries would
// take at now: the first entry of either index. (Each is read in its
// index's order: with an EXISTS instead, SQLite walked the webhook's
// every delivery through its (tenant, webhook) index.)
func (*SQLStore) Due(ctx context.Context, q store.Querier, k drain.Key, now time.Time) (bool, error) {
	due, err := store.Many(ctx, q, func(sc store.Scanner) (int, error) {
		var one int
		return one, sc.Scan(&one)
	}, `SELECT 1 WHERE (SELECT d.id FROM webhook_deliveries d WHERE `+freshDeliveries+` ORDER BY d.event_id, d.id LIMIT 1) IS NOT NULL
		OR (SELECT d.next_retry_at FROM webhook_deliveries d WHERE `+retries+` ORDER BY d.next_retry_at LIMIT 1) <= $3`, k.Group, k.ID, now)
	return len(due) > 0, err
}

// NextDue implements drain.Items: k's earliest retry after now.
func (*SQLStore) NextDue(ctx context.Context, q store.Querier, k drain.Key, now time.Time) (time.Time, bool, error) {
	next, err := store.Many(ctx, q, func(sc store.Scanner) (time.Time, error) {
		var t time.Time
		return t, sc.Scan(&t)
	}, `SELECT next_retry_at FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND status IN ('pending', 'sending')
		AND next_retry_at > $3 ORDER BY next_retry_at LIMIT 1`, k.Group, k.ID, now)
	if err != nil || len(next) == 0 {
		return time.Time{}, false, err
	}
	return next[0], true, nil
}

// dueItems are the deliveries due at the sweep's now, for drain.Table.Stuck
// and OwnersDue. A delivery became due when it was enqueued, or, once
// an attempt failed (or Retry queued it again), at its next retry.
//
// They are two sets, each with the whole predicate of its partial index
// (migrations 0009 and 0010), both led by webhook_id: the sweep (Stuck)
// walks each index's webhooks, one entry per webhook, and looks up one
// due delivery of each (for the retries, by next_retry_at, the index's
// second column), so it reads a few entries per webhook with deliveries
// to send, however long their backlog (it read every delivery due and
// every retry not yet due before: 76 → 124 buffers a sweep over a
// 30-minute soak). OwnersDue, which counts them, reads each set's.
var dueItems = drain.DueItems{Table: "webhook_deliveries", Group: "tenant_id", Key: "webhook_id",
	ByKey: []drain.KeySet{{Items: `i.status IN ('pending', 'sending') AND i.next_retry_at IS NULL`},
		{Items: `i.status IN ('pending', 'sending') AND i.next_retry_at IS NOT NULL`, Due: `i.next_retry_at <= $1`}},
	Since: `COALESCE(i.next_retry_at, i.enqueued_at)`}

// Stuck implements drain.Items.
func (s *SQLStore) Stuck(ctx context.Context, q store.Querier, now, flaggedBefore time.Time) ([]drain.Key, error) {
	return s.Table.Stuck(ctx, q, dueItems, now, flaggedBefore)
}

// Owners implements drain.Inspector: the queues held or flagged, and
// those with due deliveries, with how many are due and since when the
// oldest is (drain.Table.OwnersDue), across tenants, in webhook id
// order. It counts every due delivery.
func (s *SQLStore) Owners(ctx context.Context, q store.Querier, now time.Time) ([]drain.QueueState, error) {
	return s.Table.OwnersDue(ctx, q, dueItems, now)
}
