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
	WebhookName string `json:"webhookName"` // the webhook's name when the delivery was made
	// EventID is the domain event's id; empty for a test send.
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"` // the domain event's type, or TestEventType
	// MessageID is the webhook-id header, the same on every attempt.
	MessageID string `json:"messageId"`
	// Status is one of the Status constants.
	Status      string `json:"status" jsonschema:"enum=pending,enum=sending,enum=delivered,enum=failed,enum=expired"`
	Attempt     int    `json:"attemptNumber"` // the attempts made so far (1 after the first)
	MaxAttempts int    `json:"maxAttempts"`   // the attempts it may get (the webhook's MaxRetries, 1 for a test send)
	TargetURL   string `json:"targetUrl"`     // the URL it is sent to
	// Payload is the body sent: {type, timestamp, data}.
	Payload json.RawMessage `json:"payload,omitempty"`
	// ResponseStatus is the last attempt's HTTP status; nil when none
	// answered.
	ResponseStatus  *int              `json:"responseStatus"`
	ResponseBody    string            `json:"responseBody,omitempty"`    // the last response's body, its first 4096 bytes
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"` // the last response's headers
	ErrorMessage    string            `json:"errorMessage,omitempty"`    // why the last attempt failed
	// DurationMs is how long the last attempt took.
	DurationMs     *int64     `json:"durationMs"`
	NextRetryAt    *time.Time `json:"nextRetryAt"`   // when the next attempt is due; nil when none is
	EnqueuedAt     time.Time  `json:"enqueuedAt"`    // when the delivery was queued
	LastAttemptAt  *time.Time `json:"lastAttemptAt"` // when the last attempt started; nil before the first
	DeliveredAt    *time.Time `json:"deliveredAt"`   // when the target answered 2xx; nil until then
	TenantID       string     `json:"tenantId"`
	OrganizationID string     `json:"organizationId,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
}

// EventWebhookDisabled is a webhook disabled by its deliveries: a 410
// answer, or consecutive failures reaching its autoDisableThreshold.
const EventWebhookDisabled = "webhooks.webhook.disabled"

// EventDeliveryFailed is a delivery of a domain event that failed for
// good: its last attempt failed (or got an answer that is not retried).
// Test sends and manual retries sent once are not counted. Its data is
// DeliveryFailed.
const EventDeliveryFailed = "webhooks.delivery.failed"

// DeliveryFailed is the data of webhooks.delivery.failed.
type DeliveryFailed struct {
	DeliveryID     string `json:"deliveryId"`
	WebhookID      string `json:"webhookId"`
	WebhookName    string `json:"webhookName"`
	EventID        string `json:"eventId"`                // the domain event the delivery carried
	EventType      string `json:"eventType"`              // its type
	Attempts       int    `json:"attempts"`               // the attempts made
	ResponseStatus *int   `json:"responseStatus"`         // the last attempt's HTTP status; nil when none came
	ErrorMessage   string `json:"errorMessage,omitempty"` // why the last attempt failed
}

// TestEventType is the event type of a test send.
const TestEventType = "webhooks.test.ping"

// Limits of what a delivery keeps of a response.
const (
	maxResponseBody    = 4096
	maxResponseHeaders = 50
)

// DeliveryQueue is the job queue of the webhooks' drains (DrainJob),
// apart from other work so that neither waits behind the other; each
// drain holds a worker while it sends one webhook's deliveries
// (jobs.Config.Queues sets how many).
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

// dispatch runs inside every transaction that emits a domain event (a
// store emit hook): it adds one pending delivery per active webhook of the
// event's tenant that subscribes to it, so that the deliveries commit (or
// vanish) with the event. An event of an organization reaches the
// tenant's webhooks of no organization and of that one. The area's own
// events are not delivered (a webhook would echo its own changes).
//
// Once the transaction has committed, the webhooks' queues are woken
// (once per webhook and transaction), outside it: a transaction that
// emits events never waits on a queue's row. Should the process die in
// between, the sweep wakes them.
func (s *Service) dispatch(ctx context.Context, tx *store.Tx, ev store.Event) error {
	if ev.TenantID == "" || strings.HasPrefix(ev.Type, "webhooks.") {
		return nil
	}
	hooks, err := s.activeWebhooksOnce(ctx, tx, ev.TenantID)
	if err != nil || len(hooks) == 0 {
		return err
	}
	payload, err := Payload(ev)
	if err != nil {
		return err
	}
	var ds []*Delivery
	for _, w := range hooks {
		if w.OrganizationID != "" && ev.OrganizationID != "" && w.OrganizationID != ev.OrganizationID || !w.subscribes(ev.Type) {
			continue
		}
		d := newDelivery(w, ev.ID, ev.Type, payload, tx.Now())
		d.OrganizationID = ev.OrganizationID
		ds = append(ds, d)
		s.queues.WakeAfterCommit(tx, queueKey(w.TenantID, w.ID))
	}
	if len(ds) == 0 {
		return nil
	}
	_, err = s.store.InsertDeliveries(ctx, tx, ds)
	return err
}

// activeWebhooksKey keeps a transaction's lookups of active webhooks
// (Tx.SetValue): map[tenant id][]*Webhook.
type activeWebhooksKey struct{}

// activeWebhooksOnce returns the tenant's active webhooks, looked up once
// per transaction however many events it emits.
func (s *Service) activeWebhooksOnce(ctx context.Context, tx *store.Tx, tenantID string) ([]*Webhook, error) {
	seen, _ := tx.Value(activeWebhooksKey{}).(map[string][]*Webhook)
	if hooks, ok := seen[tenantID]; ok {
		return hooks, nil
	}
	hooks, err := s.store.ActiveWebhooks(ctx, tx, tenantID)
	if err != nil {
		return nil, err
	}
	if seen == nil {
		seen = map[string][]*Webhook{}
		tx.SetValue(activeWebhooksKey{}, seen)
	}
	seen[tenantID] = hooks
	return hooks, nil
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

// limiters enforce each webhook's rateLimitPerMinute in this process.
type limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// limiter returns webhookID's limiter at perMinute.
func (l *limiters) limiter(webhookID string, perMinute int) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[webhookID]
	limit := rate.Every(time.Minute / time.Duration(perMinute))
	if lim == nil {
		lim = rate.NewLimiter(limit, 1)
		l.m[webhookID] = lim
	} else if lim.Limit() != limit {
		lim.SetLimit(limit)
	}
	return lim
}

// peek returns how long the webhook's next send would wait, reserving
// nothing.
func (l *limiters) peek(webhookID string, perMinute int) time.Duration {
	lim := l.limiter(webhookID, perMinute)
	tokens := lim.Tokens()
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(lim.Limit()) * float64(time.Second))
}

// wait reserves the webhook's next send, sleeping for it when that takes
// at most maxWait, and returns 0; a longer wait is given back and
// returned.
func (l *limiters) wait(ctx context.Context, webhookID string, perMinute int, maxWait time.Duration) time.Duration {
	r := l.limiter(webhookID, perMinute).Reserve()
	d := r.Delay()
	if d == 0 {
		return 0
	}
	if d > maxWait {
		r.Cancel()
		return d
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		r.Cancel()
	}
	return 0
}

// sendOnce makes a test send's one attempt of d to w and records it,
// without retries and without counting against the webhook.
func (s *Service) sendOnce(ctx context.Context, w *SealedWebhook, d *Delivery) error {
	secrets, err := s.secretsOf(w)
	if err != nil {
		return err
	}
	d.Attempt++
	start := s.opts.Now().UTC()
	d.LastAttemptAt, d.Status = &start, StatusSending
	if err := s.batch.Do(func(ctx context.Context, tx *store.Tx) error { return s.store.MarkSending(ctx, tx, d) }); err != nil {
		return err
	}
	out := s.send(ctx, w.Webhook, d, secrets)
	out.took = s.opts.Now().Sub(start)
	return s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		s.applyOutcome(d, out, false, tx.Now())
		return s.store.UpdateDelivery(ctx, tx, d)
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
	took       time.Duration // how long the attempt took
}

func (o outcome) delivered() bool { return o.status != nil && *o.status >= 200 && *o.status < 300 }

// send makes the HTTP request of one attempt.
func (s *Service) send(ctx context.Context, w *Webhook, d *Delivery, secrets []string) outcome {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(w.TimeoutMs)*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, w.HTTPMethod, w.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return s.failed(w, d, err, false)
	}
	for name, value := range w.CustomHeaders {
		req.Header.Set(name, value)
	}
	signed, err := SignatureHeaders(d.MessageID, s.opts.Now(), d.Payload, secrets)
	if err != nil {
		return s.failed(w, d, err, false)
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
		return s.failed(w, d, err, !errors.Is(err, netguard.ErrBlocked))
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

// failed is the outcome of an attempt that got no response. The tenant
// reads the delivery's error message, so it is only netguard.Reason's
// generic text (blocked address, DNS failure, timeout, connection
// refused, TLS failure, connection failed): the error itself, which may
// name the server's resolver or the address a name resolved to, goes to
// the server's log.
func (s *Service) failed(w *Webhook, d *Delivery, err error, retryable bool) outcome {
	reason := netguard.Reason(err)
	s.db.Logger().Warn("webhooks: delivery attempt failed", "delivery", d.ID, "webhook", w.ID, "attempt", d.Attempt,
		"reason", reason, "err", err)
	return outcome{errText: reason, retryable: retryable}
}

// applyOutcome sets d's status from its attempt's outcome: delivered;
// pending with its next attempt's time, when the outcome is retryable,
// retries is set and attempts remain; failed otherwise.
func (s *Service) applyOutcome(d *Delivery, out outcome, retries bool, now time.Time) {
	ms := out.took.Milliseconds()
	d.DurationMs, d.ResponseStatus, d.ResponseBody, d.ResponseHeaders, d.ErrorMessage = &ms, out.status, out.body, out.headers, out.errText
	d.UpdatedAt, d.NextRetryAt, d.DeliveredAt = now, nil, nil
	switch {
	case out.delivered():
		d.Status, d.DeliveredAt = StatusDelivered, &now
	case out.retryable && retries && d.Attempt < d.MaxAttempts:
		next := now.Add(max(s.opts.RetryDelay(d.Attempt), out.retryAfter))
		d.Status, d.NextRetryAt = StatusPending, &next
	default:
		d.Status = StatusFailed
	}
	if s.observe != nil {
		result := map[string]string{StatusDelivered: OutcomeDelivered, StatusPending: OutcomeRetrying}[d.Status]
		s.observe(cmp.Or(result, OutcomeFailed), now.Sub(d.CreatedAt))
	}
}

// Outcomes of a delivery attempt, as Observe reports them.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetrying  = "retrying" // failed, another attempt is scheduled
	OutcomeFailed    = "failed"   // failed, no attempt follows
)

// Observe has fn told of every delivery attempt this process makes: its
// outcome (OutcomeDelivered, OutcomeRetrying, OutcomeFailed) and its lag,
// from the delivery's creation (its event) to the attempt's end. Call it
// before the Kit starts; fn must be fast and safe for concurrent use.
func (s *Service) Observe(fn func(outcome string, lag time.Duration)) { s.observe = fn }

// secretsOf opens the secrets that sign w's deliveries now.
func (s *Service) secretsOf(w *SealedWebhook) ([]string, error) {
	secret, err := s.box.Open(w.Secret)
	if err != nil {
		return nil, fmt.Errorf("webhooks: open the secret of %s: %w", w.ID, err)
	}
	out := []string{secret}
	if w.PreviousSecret != "" && w.PreviousSecretExpiresAt != nil && s.opts.Now().Before(*w.PreviousSecretExpiresAt) {
		if old, err := s.box.Open(w.PreviousSecret); err == nil {
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
	if !s.Enabled() || !s.tenantEnabled(ctx, sc.TenantID) {
		return nil, ErrDisabled
	}
	w, err := s.store.GetWebhook(ctx, s.db, sc, id)
	if err != nil {
		return nil, notFound(err)
	}
	now := s.opts.Now().UTC()
	payload, err := json.Marshal(map[string]any{"type": TestEventType, "timestamp": now,
		"data": map[string]any{"ping": true, "webhookId": w.ID, "testedAt": now}, "idempotencyKey": store.NewID()})
	if err != nil {
		return nil, err
	}
	d := newDelivery(w, "", TestEventType, payload, now)
	d.MaxAttempts = 1
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		_, err := s.store.InsertDeliveries(ctx, tx, []*Delivery{d})
		return err
	})
	if err != nil {
		return nil, err
	}
	// The webhook with its secrets, as a drain loads it.
	full, err := s.store.SealedWebhook(ctx, s.db, w.TenantID, w.ID)
	if err != nil {
		return nil, err
	}
	if err := s.sendOnce(ctx, full, d); err != nil {
		return nil, err
	}
	return s.GetDelivery(ctx, d.ID)
}

// Retry gives a failed or expired delivery one more attempt (the same
// message id), queued with the webhook's other deliveries in order of its
// event, and returns it as queued (pending). Other statuses are
// store.ErrConflict.
func (s *Service) Retry(ctx context.Context, id string) (*Delivery, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !s.Enabled() || !s.tenantEnabled(ctx, sc.TenantID) {
		return nil, ErrDisabled
	}
	var out *Delivery
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		d, err := s.store.GetDelivery(ctx, tx, sc, id)
		if err != nil {
			return deliveryNotFound(err)
		}
		out = d
		if d.Status != StatusFailed && d.Status != StatusExpired {
			return store.Errorf(store.ErrConflict, "Only a failed or expired delivery can be retried (this one is %s)", d.Status)
		}
		now := tx.Now()
		d.Status, d.MaxAttempts, d.NextRetryAt, d.UpdatedAt = StatusPending, d.Attempt+1, &now, now
		if err := s.store.UpdateDelivery(ctx, tx, d); err != nil {
			return err
		}
		return s.wake(ctx, tx, d.TenantID, d.WebhookID)
	})
	if err != nil {
		return nil, err
	}
	// As queued: a drain may already be sending it by the time a re-read
	// would run.
	return out, nil
}

// DeliveryFilter selects deliveries, newest first. Limit defaults to 50.
type DeliveryFilter struct {
	WebhookID, EventType, Status string // empty fields match everything
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
	var items []*Delivery
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error { // the page and the total of one snapshot
		var err error
		items, total, err = s.store.ListDeliveries(ctx, tx, sc, f)
		return err
	})
	return items, total, err
}

// GetDelivery returns one delivery of the scope with its payload and
// response; "Delivery not found" (store.ErrNotFound) otherwise.
func (s *Service) GetDelivery(ctx context.Context, id string) (*Delivery, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.store.GetDelivery(ctx, s.db, sc, id)
	return d, deliveryNotFound(err)
}

func deliveryNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Delivery not found")
	}
	return err
}
