package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tenantkit/tenantkit/internal/netguard"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// Delivery statuses.
const (
	StatusPending   = "pending"   // waiting for its (next) attempt
	StatusSending   = "sending"   // an attempt is under way
	StatusDelivered = "delivered" // the target answered 2xx
	StatusFailed    = "failed"    // given up: a response that is not retried, or the attempts are used up
	StatusExpired   = "expired"   // not sent: the webhook was disabled or deleted first
)

// Delivery is one event sent (or to be sent) to one webhook.
type Delivery struct {
	ID          string `json:"id"`
	WebhookID   string `json:"webhookId"`
	WebhookName string `json:"webhookName"`
	// EventID is the domain event's id; empty for a test send.
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"`
	// MessageID is the webhook-id header, the same on every attempt.
	MessageID   string `json:"messageId"`
	Status      string `json:"status"`
	Attempt     int    `json:"attemptNumber"`
	MaxAttempts int    `json:"maxAttempts"`
	TargetURL   string `json:"targetUrl"`
	// Payload is the body sent: {type, timestamp, data}.
	Payload         json.RawMessage   `json:"payload,omitempty"`
	ResponseStatus  *int              `json:"responseStatus"`
	ResponseBody    string            `json:"responseBody,omitempty"`
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	ErrorMessage    string            `json:"errorMessage,omitempty"`
	// DurationMs is how long the last attempt took.
	DurationMs     *int64     `json:"durationMs"`
	NextRetryAt    *time.Time `json:"nextRetryAt"`
	EnqueuedAt     time.Time  `json:"enqueuedAt"`
	LastAttemptAt  *time.Time `json:"lastAttemptAt"`
	DeliveredAt    *time.Time `json:"deliveredAt"`
	TenantID       string     `json:"tenantId"`
	OrganizationID string     `json:"organizationId,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
}

// EventWebhookDisabled is a webhook disabled by its deliveries: a 410
// answer, or consecutive failures reaching its autoDisableThreshold.
const EventWebhookDisabled = "webhooks.webhook.disabled"

// TestEventType is the event type of a test send.
const TestEventType = "webhooks.test.ping"

// Limits of what a delivery keeps of a response.
const (
	maxResponseBody    = 4096
	maxResponseHeaders = 50
)

// DeliverJob is the durable job of one delivery attempt.
type DeliverJob struct {
	TenantID   string `json:"tenantId"`
	DeliveryID string `json:"deliveryId"`
}

// Kind names the job.
func (DeliverJob) Kind() string { return "webhooks.deliver" }

// DeliveryQueue is the job queue of deliveries, apart from other work so
// that neither waits behind the other (jobs.Config.Queues sets its
// workers).
const DeliveryQueue = "webhooks"

// retryDelays are the waits after each failed attempt (the first attempt
// is immediate); after the last, 14 to 24 hours.
var retryDelays = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour}

// retryDelay is the wait after attempt (1-based), with ±10% jitter.
func retryDelay(attempt int) time.Duration {
	if attempt-1 < len(retryDelays) {
		d := retryDelays[attempt-1]
		return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
	}
	return 14*time.Hour + time.Duration(rand.Int64N(int64(10*time.Hour)))
}

// dispatch turns a committed domain event into one delivery (and its job)
// per active webhook of the event's tenant that subscribes to it. An
// event of an organization reaches the tenant's webhooks of no
// organization and of that one. A repeated event creates nothing more.
func (s *Service) dispatch(ctx context.Context, ev store.Event) error {
	if ev.TenantID == "" {
		return nil
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		hooks, err := activeWebhooks(ctx, tx, ev.TenantID)
		if err != nil {
			return err
		}
		payload, err := json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp time.Time       `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{ev.Type, ev.OccurredAt, ev.Data})
		if err != nil {
			return err
		}
		var deliveries []jobs.Args
		for _, w := range hooks {
			if w.OrganizationID != "" && ev.OrganizationID != "" && w.OrganizationID != ev.OrganizationID || !w.subscribes(ev.Type) {
				continue
			}
			d := newDelivery(w, ev.ID, ev.Type, payload, tx.Now())
			d.OrganizationID = ev.OrganizationID
			inserted, err := insertDelivery(ctx, tx, d)
			if err != nil {
				return err
			}
			if inserted {
				deliveries = append(deliveries, DeliverJob{TenantID: d.TenantID, DeliveryID: d.ID})
			}
		}
		if len(deliveries) == 0 {
			return nil
		}
		_, err = s.jobs.EnqueueManyTx(ctx, tx, deliveries, nil)
		return err
	})
}

func (w *Webhook) subscribes(eventType string) bool {
	for _, p := range w.SubscribedEvents {
		if Matches(p, eventType) {
			return true
		}
	}
	return false
}

func newDelivery(w *Webhook, eventID, eventType string, payload []byte, now time.Time) *Delivery {
	return &Delivery{ID: store.NewID(), WebhookID: w.ID, WebhookName: w.Name, EventID: eventID, EventType: eventType,
		MessageID: NewMessageID(), Status: StatusPending, MaxAttempts: max(1, w.MaxRetries), TargetURL: w.URL,
		Payload: payload, EnqueuedAt: now, TenantID: w.TenantID, OrganizationID: w.OrganizationID, CreatedAt: now, UpdatedAt: now}
}

// deliverWorker runs delivery attempts.
type deliverWorker struct{ svc *Service }

func (w deliverWorker) Work(ctx context.Context, job *jobs.Job[DeliverJob]) error {
	_, err := w.svc.attempt(ctx, job.Args.TenantID, job.Args.DeliveryID, true)
	return err
}

// Timeout leaves room for the longest webhook timeout.
func (deliverWorker) Timeout(*jobs.Job[DeliverJob]) time.Duration {
	return time.Duration(maxTimeoutMs)*time.Millisecond + 30*time.Second
}

// limiters enforce each webhook's rateLimitPerMinute in this process.
type limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// delay reserves a send for the webhook and returns how long to wait for
// it (zero: send now). A reservation that must wait is given back.
func (l *limiters) delay(webhookID string, perMinute int) time.Duration {
	l.mu.Lock()
	lim := l.m[webhookID]
	limit := rate.Every(time.Minute / time.Duration(perMinute))
	if lim == nil {
		lim = rate.NewLimiter(limit, 1)
		l.m[webhookID] = lim
	} else if lim.Limit() != limit {
		lim.SetLimit(limit)
	}
	l.mu.Unlock()
	r := lim.Reserve()
	d := r.Delay()
	if d > 0 {
		r.Cancel()
	}
	return d
}

// attempt makes a delivery's next attempt and records its outcome; when
// retries is set, a retryable failure schedules the next attempt as a new
// job (in the transaction that records the failure). It returns the
// delivery as recorded.
func (s *Service) attempt(ctx context.Context, tenantID, id string, retries bool) (*Delivery, error) {
	d, w, err := loadDelivery(ctx, s.db, tenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // gone: nothing to send
	}
	if err != nil {
		return nil, err
	}
	switch d.Status {
	case StatusDelivered, StatusFailed, StatusExpired:
		return d, nil // a repeated job: already settled
	}
	switch {
	case w.deleted:
		return d, s.settle(ctx, d, StatusExpired, "Webhook was deleted")
	case !w.IsActive:
		return d, s.settle(ctx, d, StatusExpired, "Webhook is inactive")
	case !s.Enabled():
		return d, s.settle(ctx, d, StatusExpired, store.PublicMessage(ErrDisabled))
	}
	if w.RateLimitPerMinute > 0 && retries {
		if wait := s.limits.delay(w.ID, w.RateLimitPerMinute); wait > 0 {
			return d, jobs.Snooze(wait)
		}
	}
	return s.sendAndRecord(ctx, w, d, retries, true)
}

// sendAndRecord makes one attempt of d to w and records it (see record
// for retries and count).
func (s *Service) sendAndRecord(ctx context.Context, w *Webhook, d *Delivery, retries, count bool) (*Delivery, error) {
	secrets, err := s.secretsOf(w)
	if err != nil {
		return d, err
	}
	d.Attempt++
	start := s.opts.Now().UTC()
	d.LastAttemptAt, d.Status = &start, StatusSending
	if err := s.batch.Do(func(ctx context.Context, tx *store.Tx) error { return markSending(ctx, tx, d) }); err != nil {
		return d, err
	}
	out := s.send(ctx, w, d, secrets)
	ms := s.opts.Now().Sub(start).Milliseconds()
	d.DurationMs, d.ResponseStatus, d.ResponseBody, d.ResponseHeaders, d.ErrorMessage = &ms, out.status, out.body, out.headers, out.errText
	return d, s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		return s.record(ctx, tx, w, d, out, retries, count)
	})
}

// outcome is what an attempt got.
type outcome struct {
	status     *int
	body       string
	headers    map[string]string
	errText    string
	retryable  bool
	gone       bool          // 410: the target asks not to be called again
	retryAfter time.Duration // from a 429 or 503
}

// send makes the HTTP request of one attempt.
func (s *Service) send(ctx context.Context, w *Webhook, d *Delivery, secrets []string) outcome {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(w.TimeoutMs)*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, w.HTTPMethod, w.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return outcome{errText: err.Error()}
	}
	for name, value := range w.CustomHeaders {
		req.Header.Set(name, value)
	}
	signed, err := SignatureHeaders(d.MessageID, s.opts.Now(), d.Payload, secrets)
	if err != nil {
		return outcome{errText: err.Error()}
	}
	for name, values := range signed {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tenantkit-webhooks")
	resp, err := s.client.Do(req)
	if err != nil {
		// A refused address stays refused; a timeout or a broken
		// connection may not.
		return outcome{errText: err.Error(), retryable: !errors.Is(err, netguard.ErrBlocked)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	out := outcome{status: &resp.StatusCode, body: strings.ToValidUTF8(string(body), "\uFFFD"), headers: map[string]string{}}
	for name, values := range resp.Header {
		if len(out.headers) == maxResponseHeaders {
			break
		}
		out.headers[name] = strings.Join(values, ", ")
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
	case code == http.StatusGone:
		out.gone = true
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		out.retryable = true
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
				out.retryAfter = time.Duration(secs) * time.Second
			}
		}
	}
	if code < 200 || code >= 300 {
		out.errText = fmt.Sprintf("HTTP %d", code)
	}
	return out
}

// record stores an attempt's outcome: the delivery's status, the next
// attempt's job when retries allow one, and when count is set the
// webhook's success or failure count (disabling it at a 410 or at its
// threshold; test sends do not count).
func (s *Service) record(ctx context.Context, tx *store.Tx, w *Webhook, d *Delivery, out outcome, retries, count bool) error {
	now := tx.Now()
	d.UpdatedAt, d.NextRetryAt = now, nil
	delivered := out.status != nil && *out.status >= 200 && *out.status < 300
	switch {
	case delivered:
		d.Status, d.DeliveredAt = StatusDelivered, &now
	case out.retryable && retries && d.Attempt < d.MaxAttempts:
		wait := max(s.opts.RetryDelay(d.Attempt), out.retryAfter)
		next := now.Add(wait)
		d.Status, d.NextRetryAt = StatusPending, &next
		if _, err := s.jobs.EnqueueTx(ctx, tx, DeliverJob{TenantID: d.TenantID, DeliveryID: d.ID}, &jobs.Opts{ScheduledAt: next}); err != nil {
			return err
		}
	default:
		d.Status = StatusFailed
	}
	if err := updateDelivery(ctx, tx, d); err != nil {
		return err
	}
	if !count {
		return nil
	}
	disable, err := recordResult(ctx, tx, w, delivered, out.gone, now)
	if err != nil || !disable {
		return err
	}
	w.IsActive = false
	_, err = tx.EmitData(ctx, EventWebhookDisabled, store.Scope{TenantID: w.TenantID, OrganizationID: w.OrganizationID}, w)
	return err
}

// settle ends a delivery without sending it.
func (s *Service) settle(ctx context.Context, d *Delivery, status, reason string) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		d.Status, d.ErrorMessage, d.NextRetryAt, d.UpdatedAt = status, reason, nil, tx.Now()
		return updateDelivery(ctx, tx, d)
	})
}

// secretsOf opens the secrets that sign w's deliveries now.
func (s *Service) secretsOf(w *Webhook) ([]string, error) {
	secret, err := s.box.Open(w.sealedSecret)
	if err != nil {
		return nil, fmt.Errorf("webhooks: open the secret of %s: %w", w.ID, err)
	}
	out := []string{secret}
	if w.sealedPrevious != "" && w.PreviousSecretExpiresAt != nil && s.opts.Now().Before(*w.PreviousSecretExpiresAt) {
		if old, err := s.box.Open(w.sealedPrevious); err == nil {
			out = append(out, old)
		}
	}
	return out, nil
}

// Test sends one signed delivery of a test event to a webhook now,
// whether or not it is active, without retries, and returns it.
func (s *Service) Test(ctx context.Context, id string) (*Delivery, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, ErrDisabled
	}
	w, err := getWebhook(ctx, s.db, sc, id)
	if err != nil {
		return nil, notFound(err)
	}
	now := s.opts.Now().UTC()
	payload, err := json.Marshal(map[string]any{"type": TestEventType, "timestamp": now,
		"data": map[string]any{"ping": true, "webhookId": w.ID, "testedAt": now}})
	if err != nil {
		return nil, err
	}
	d := newDelivery(w, "", TestEventType, payload, now)
	d.MaxAttempts = 1
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		_, err := insertDelivery(ctx, tx, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.attemptActive(ctx, d); err != nil {
		return nil, err
	}
	return s.GetDelivery(ctx, d.ID)
}

// attemptActive makes a test send's one attempt, even to an inactive
// webhook, without retries and without counting against it.
func (s *Service) attemptActive(ctx context.Context, d *Delivery) (*Delivery, error) {
	_, w, err := loadDelivery(ctx, s.db, d.TenantID, d.ID)
	if err != nil {
		return nil, err
	}
	return s.sendAndRecord(ctx, w, d, false, false)
}

// Retry gives a failed or expired delivery one more attempt, as a new job
// (the same message id). Other statuses are store.ErrConflict.
func (s *Service) Retry(ctx context.Context, id string) (*Delivery, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, ErrDisabled
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		d, err := getDelivery(ctx, tx, sc, id)
		if err != nil {
			return deliveryNotFound(err)
		}
		if d.Status != StatusFailed && d.Status != StatusExpired {
			return store.Errorf(store.ErrConflict, "Only a failed or expired delivery can be retried (this one is %s)", d.Status)
		}
		now := tx.Now()
		d.Status, d.MaxAttempts, d.NextRetryAt, d.UpdatedAt = StatusPending, d.Attempt+1, &now, now
		if err := updateDelivery(ctx, tx, d); err != nil {
			return err
		}
		_, err = s.jobs.EnqueueTx(ctx, tx, DeliverJob{TenantID: d.TenantID, DeliveryID: d.ID}, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.GetDelivery(ctx, id)
}

// DeliveryFilter selects deliveries, newest first. Limit defaults to 50.
type DeliveryFilter struct {
	WebhookID, EventType, Status string
	Limit, Offset                int
}

// ListDeliveries returns a page of the scope's deliveries (without
// payloads and responses) and the total.
func (s *Service) ListDeliveries(ctx context.Context, f DeliveryFilter) ([]*Delivery, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	f.Limit = cmp.Or(f.Limit, 50)
	return listDeliveries(ctx, s.db, sc, f)
}

// GetDelivery returns one delivery of the scope with its payload and
// response; "Delivery not found" (store.ErrNotFound) otherwise.
func (s *Service) GetDelivery(ctx context.Context, id string) (*Delivery, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, err := getDelivery(ctx, s.db, sc, id)
	return d, deliveryNotFound(err)
}

func deliveryNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Delivery not found")
	}
	return err
}
