package stripeprovider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/tenantkit/tenantkit/payments"
)

// Credential keys read from payments.Credentials.
const (
	CredSecretKey      = "secretKey"
	CredPublishableKey = "publishableKey"
	CredWebhookSecret  = "webhookSecret"
)

// DefaultTimeout bounds each call to Stripe (retries included) when
// Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// DefaultMaxNetworkRetries is the number of retries stripe-go makes of a
// request that failed in a way worth retrying, when
// Options.MaxNetworkRetries is nil. Retries reuse the idempotency key.
const DefaultMaxNetworkRetries int64 = 2

// Stripe's metadata limits.
const (
	maxMetadataKeys     = 50
	maxMetadataKeyLen   = 40
	maxMetadataValueLen = 500
	maxIdempotencyKey   = 255
)

// StatusPartiallyRefunded is the ProviderStatus VerifyWebhook reports for a
// charge.refunded event whose charge is only partly refunded (Stripe's
// charge status stays "succeeded"; its amount_refunded is below its
// amount). A fully refunded charge reports "refunded".
const (
	StatusPartiallyRefunded = "partially_refunded"
	// StatusPartiallyCaptured is the ProviderStatus of a succeeded
	// PaymentIntent that received less than its amount (a partial
	// capture, the rest released): partially_captured, so that the
	// Service does not count the whole amount as captured.
	StatusPartiallyCaptured = "partially_captured"
	StatusRefunded          = "refunded"
)

// Options configure a Provider. The zero value talks to Stripe's API with a
// 30-second bound on each call.
type Options struct {
	// Backend, when set, serves every call (tests: an in-memory fake).
	Backend stripe.Backend
	// Backends, when set (and Backend is not), serve the calls.
	Backends *stripe.Backends
	// URL replaces Stripe's API base URL (tests: stripe-mock on loopback).
	URL string
	// HTTPClient is used for the requests; by default a client whose
	// Timeout is Timeout.
	HTTPClient *http.Client
	// Timeout bounds each provider call, retries included (default 30s).
	Timeout time.Duration
	// MaxNetworkRetries is stripe-go's retry count (default 2).
	MaxNetworkRetries *int64
	// Logger receives stripe-go's own logging; by default nothing is
	// logged.
	Logger stripe.LeveledLoggerInterface
	// WebhookTolerance is how old a webhook's signature timestamp may be
	// (default webhook.DefaultTolerance, 5 minutes).
	WebhookTolerance time.Duration
}

// Provider is the Stripe payments.Provider. It is safe for concurrent use:
// it holds no tenant state, every call carries the tenant's credentials.
type Provider struct {
	backends  *stripe.Backends
	timeout   time.Duration
	tolerance time.Duration
}

var _ payments.Provider = (*Provider)(nil)

// New returns a Stripe provider configured by opts.
func New(opts Options) *Provider {
	p := &Provider{timeout: opts.Timeout, tolerance: opts.WebhookTolerance}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.tolerance <= 0 {
		p.tolerance = webhook.DefaultTolerance
	}
	switch {
	case opts.Backend != nil:
		b := opts.Backend
		p.backends = &stripe.Backends{API: b, Connect: b, Uploads: b, MeterEvents: b}
	case opts.Backends != nil:
		p.backends = opts.Backends
	default:
		cfg := &stripe.BackendConfig{
			HTTPClient:        opts.HTTPClient,
			LeveledLogger:     opts.Logger,
			MaxNetworkRetries: opts.MaxNetworkRetries,
			EnableTelemetry:   stripe.Bool(false),
		}
		if cfg.HTTPClient == nil {
			cfg.HTTPClient = &http.Client{Timeout: p.timeout}
		}
		if cfg.LeveledLogger == nil {
			cfg.LeveledLogger = &stripe.LeveledLogger{Level: stripe.LevelNull}
		}
		if cfg.MaxNetworkRetries == nil {
			cfg.MaxNetworkRetries = stripe.Int64(DefaultMaxNetworkRetries)
		}
		if opts.URL != "" {
			cfg.URL = stripe.String(strings.TrimRight(opts.URL, "/"))
		}
		p.backends = stripe.NewBackendsWithConfig(cfg)
	}
	return p
}

// Key returns "stripe".
func (p *Provider) Key() string { return "stripe" }

// client returns a stripe-go client for the tenant's secret key, and the
// call's context bounded by the provider's timeout.
func (p *Provider) client(ctx context.Context, creds payments.Credentials) (*stripe.Client, context.Context, context.CancelFunc, error) {
	key := strings.TrimSpace(creds[CredSecretKey])
	if key == "" {
		return nil, nil, nil, fmt.Errorf("%w: stripe: the tenant has no %s", payments.ErrNotConfigured, CredSecretKey)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	return stripe.NewClient(key, stripe.WithBackends(p.backends)), ctx, cancel, nil
}

// CreateSession creates a PaymentIntent.
func (p *Provider) CreateSession(ctx context.Context, in payments.SessionInput) (*payments.SessionResult, error) {
	captureMethod, err := captureMethod(in.CaptureMethod)
	if err != nil {
		return nil, err
	}
	sc, ctx, cancel, err := p.client(ctx, in.Credentials)
	if err != nil {
		return nil, err
	}
	defer cancel()
	params := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(in.Amount),
		Currency:      stripe.String(strings.ToLower(in.Currency)),
		CaptureMethod: stripe.String(captureMethod),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled: stripe.Bool(true),
		},
		Metadata: Metadata(in.TransactionID, in.Metadata),
	}
	if in.Description != "" {
		params.Description = stripe.String(in.Description)
	}
	idem := in.IdempotencyKey
	if idem == "" {
		idem = in.TransactionID
	}
	setIdempotencyKey(&params.Params, idem)
	pi, err := sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return nil, mapError("create payment intent", err)
	}
	data := map[string]any{"paymentIntentId": pi.ID}
	if pk := strings.TrimSpace(in.Credentials[CredPublishableKey]); pk != "" {
		data["publishableKey"] = pk
	}
	return &payments.SessionResult{
		SessionID:     pi.ID,
		ClientSecret:  pi.ClientSecret,
		ProviderData:  data,
		Status:        p.MapStatus(string(pi.Status), ""),
		GatewayStatus: string(pi.Status),
	}, nil
}

// Capture captures in.Amount of a PaymentIntent in requires_capture (all
// of it when in.Amount is 0).
func (p *Provider) Capture(ctx context.Context, in payments.CaptureInput) (*payments.CaptureResult, error) {
	sc, ctx, cancel, err := p.client(ctx, in.Credentials)
	if err != nil {
		return nil, err
	}
	defer cancel()
	params := &stripe.PaymentIntentCaptureParams{}
	if in.Amount > 0 {
		params.AmountToCapture = stripe.Int64(in.Amount)
	}
	setIdempotencyKey(&params.Params, in.IdempotencyKey)
	pi, err := sc.V1PaymentIntents.Capture(ctx, in.SessionID, params)
	if err != nil {
		return nil, mapError("capture payment intent", err)
	}
	return &payments.CaptureResult{
		CapturedAmount: pi.AmountReceived,
		GatewayStatus:  string(pi.Status),
		ProviderData:   map[string]any{"paymentIntentId": pi.ID},
	}, nil
}

// Refund refunds in.Amount of a PaymentIntent (what remains of it when
// in.Amount is 0).
func (p *Provider) Refund(ctx context.Context, in payments.RefundInput) (*payments.RefundResult, error) {
	sc, ctx, cancel, err := p.client(ctx, in.Credentials)
	if err != nil {
		return nil, err
	}
	defer cancel()
	params := &stripe.RefundCreateParams{
		PaymentIntent: stripe.String(in.SessionID),
		Reason:        stripe.String(RefundReason(in.Reason)),
	}
	if in.Amount > 0 {
		params.Amount = stripe.Int64(in.Amount)
	}
	setIdempotencyKey(&params.Params, in.IdempotencyKey)
	r, err := sc.V1Refunds.Create(ctx, params)
	if err != nil {
		return nil, mapError("create refund", err)
	}
	return &payments.RefundResult{
		RefundID:      r.ID,
		GatewayStatus: string(r.Status),
		ProviderData:  map[string]any{"refundId": r.ID, "paymentIntentId": in.SessionID},
	}, nil
}

// Cancel cancels a PaymentIntent that is not captured.
func (p *Provider) Cancel(ctx context.Context, in payments.CancelInput) (*payments.CancelResult, error) {
	sc, ctx, cancel, err := p.client(ctx, in.Credentials)
	if err != nil {
		return nil, err
	}
	defer cancel()
	params := &stripe.PaymentIntentCancelParams{}
	setIdempotencyKey(&params.Params, in.IdempotencyKey)
	pi, err := sc.V1PaymentIntents.Cancel(ctx, in.SessionID, params)
	if err != nil {
		return nil, mapError("cancel payment intent", err)
	}
	return &payments.CancelResult{
		GatewayStatus: string(pi.Status),
		ProviderData:  map[string]any{"paymentIntentId": pi.ID},
	}, nil
}

// Status retrieves a PaymentIntent.
func (p *Provider) Status(ctx context.Context, in payments.StatusInput) (*payments.StatusResult, error) {
	sc, ctx, cancel, err := p.client(ctx, in.Credentials)
	if err != nil {
		return nil, err
	}
	defer cancel()
	pi, err := sc.V1PaymentIntents.Retrieve(ctx, in.SessionID, nil)
	if err != nil {
		return nil, mapError("retrieve payment intent", err)
	}
	status := p.MapStatus(string(pi.Status), "")
	if pi.Status == stripe.PaymentIntentStatusSucceeded && partialCapture(&pi.Amount, &pi.AmountReceived) {
		status = payments.StatusPartiallyCaptured
	}
	return &payments.StatusResult{
		Status:         status,
		GatewayStatus:  string(pi.Status),
		Amount:         pi.Amount,
		AmountReceived: pi.AmountReceived,
	}, nil
}

// eventStatus maps an event type to a unified status; events absent map
// by the object's status.
var eventStatus = map[string]payments.Status{
	"payment_intent.succeeded":                 payments.StatusCaptured,
	"payment_intent.payment_failed":            payments.StatusFailed,
	"payment_intent.canceled":                  payments.StatusCancelled,
	"payment_intent.requires_action":           payments.StatusPending,
	"payment_intent.amount_capturable_updated": payments.StatusAuthorized,
	"charge.refunded":                          payments.StatusRefunded,
	"charge.refund.updated":                    payments.StatusRefunded,
	"charge.dispute.created":                   payments.StatusFailed,
	"charge.dispute.closed":                    payments.StatusCaptured,
}

// intentStatus maps a PaymentIntent status to a unified status.
var intentStatus = map[string]payments.Status{
	"requires_payment_method": payments.StatusPending,
	"requires_confirmation":   payments.StatusPending,
	"requires_action":         payments.StatusPending,
	"processing":              payments.StatusPending,
	"requires_capture":        payments.StatusAuthorized,
	"succeeded":               payments.StatusCaptured,
	"canceled":                payments.StatusCancelled,
}

// MapStatus maps by the event type first, then by the PaymentIntent
// status. A charge.refunded event whose ProviderStatus is
// "partially_refunded" (see VerifyWebhook) maps to partially_refunded.
func (p *Provider) MapStatus(providerStatus, eventType string) payments.Status {
	if providerStatus == StatusPartiallyCaptured {
		return payments.StatusPartiallyCaptured
	}
	if s, ok := eventStatus[eventType]; ok {
		if eventType == "charge.refunded" && providerStatus == StatusPartiallyRefunded {
			return payments.StatusPartiallyRefunded
		}
		return s
	}
	if s, ok := intentStatus[providerStatus]; ok {
		return s
	}
	return payments.StatusUnknown
}

// partialCapture reports a PaymentIntent that received less than its
// amount, but something.
func partialCapture(amount, received *int64) bool {
	return amount != nil && received != nil && *received > 0 && *received < *amount
}

// event is the part of a Stripe event this provider reads.
type event struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data *struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// eventObject is the part of an event's data.object this provider reads:
// a PaymentIntent, a Charge, a Refund or a Dispute.
type eventObject struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"`
	Status         string          `json:"status"`
	PaymentIntent  json.RawMessage `json:"payment_intent"`
	Amount         *int64          `json:"amount"`
	AmountReceived *int64          `json:"amount_received"`
	AmountRefunded *int64          `json:"amount_refunded"`
	Refunded       *bool           `json:"refunded"`
}

func parseObject(raw json.RawMessage) (*eventObject, error) {
	var o eventObject
	if len(raw) == 0 {
		return nil, errors.New("the event has no data.object")
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("the event's data.object is unreadable: %w", err)
	}
	return &o, nil
}

// sessionID is the PaymentIntent id the event is about: the object's id
// for payment_intent.* events, its payment_intent (an id, or an expanded
// object) otherwise.
func sessionID(eventType string, o *eventObject) string {
	if strings.HasPrefix(eventType, "payment_intent.") {
		return o.ID
	}
	raw := o.PaymentIntent
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

// WebhookSessionID reads the PaymentIntent id an unverified event is
// about.
func (p *Provider) WebhookSessionID(body []byte) (string, error) {
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		return "", fmt.Errorf("stripe webhook: unreadable body: %w", err)
	}
	if e.Type == "" || e.Data == nil {
		return "", errors.New("stripe webhook: the body is not a Stripe event")
	}
	o, err := parseObject(e.Data.Object)
	if err != nil {
		return "", fmt.Errorf("stripe webhook: %w", err)
	}
	id := sessionID(e.Type, o)
	if id == "" {
		return "", fmt.Errorf("stripe webhook: the %s event names no payment intent", e.Type)
	}
	return id, nil
}

// VerifyWebhook checks the Stripe-Signature header with the tenant's
// webhookSecret and reads the event.
func (p *Provider) VerifyWebhook(_ context.Context, in payments.WebhookInput) (*payments.WebhookEvent, error) {
	secret := strings.TrimSpace(in.Credentials[CredWebhookSecret])
	if secret == "" {
		return nil, fmt.Errorf("%w: stripe: the tenant has no %s", payments.ErrVerification, CredWebhookSecret)
	}
	ev, err := webhook.ConstructEventWithOptions(in.Body, in.Header.Get("Stripe-Signature"), secret,
		webhook.ConstructEventOptions{Tolerance: p.tolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		return nil, fmt.Errorf("%w: stripe: %v", payments.ErrVerification, err)
	}
	if ev.ID == "" || ev.Type == "" || ev.Data == nil {
		return nil, fmt.Errorf("%w: stripe: the body is not a Stripe event", payments.ErrVerification)
	}
	o, err := parseObject(ev.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("%w: stripe: %v", payments.ErrVerification, err)
	}
	eventType := string(ev.Type)
	out := &payments.WebhookEvent{
		EventType:      eventType,
		EventID:        ev.ID,
		IdempotencyKey: ev.ID,
		SessionID:      sessionID(eventType, o),
		ProviderStatus: o.Status,
	}
	switch {
	case strings.HasPrefix(eventType, "payment_intent."):
		out.Amount = o.AmountReceived
		if o.Status == "succeeded" && partialCapture(o.Amount, o.AmountReceived) {
			out.ProviderStatus = StatusPartiallyCaptured
		}
	case eventType == "charge.refunded":
		out.Amount = o.AmountRefunded
		out.ProviderStatus = StatusRefunded
		partial := o.Refunded != nil && !*o.Refunded
		if o.AmountRefunded != nil && o.Amount != nil {
			partial = *o.AmountRefunded < *o.Amount
		}
		if partial {
			out.ProviderStatus = StatusPartiallyRefunded
		}
	}
	return out, nil
}

// RefundReason maps a caller's free-text reason to Stripe's: "duplicate"
// to duplicate, "fraud" and "fraudulent" to fraudulent, anything else
// (empty too) to requested_by_customer. Case and surrounding space are
// ignored.
func RefundReason(reason string) string {
	switch strings.ToLower(strings.TrimSpace(reason)) {
	case "duplicate":
		return string(stripe.RefundReasonDuplicate)
	case "fraud", "fraudulent":
		return string(stripe.RefundReasonFraudulent)
	}
	return string(stripe.RefundReasonRequestedByCustomer)
}

// Metadata builds a PaymentIntent's metadata within Stripe's limits:
// transactionId first (when set), then the caller's keys in sorted order
// until there are 50. Keys that are empty, longer than 40 characters, or
// hold a square bracket are dropped, as are the caller's own transactionId
// and nil values; values are stringified (strings as they are, anything
// else as JSON) and cut to 500 characters.
func Metadata(transactionID string, meta map[string]any) map[string]string {
	out := map[string]string{}
	if transactionID != "" {
		out["transactionId"] = truncate(transactionID, maxMetadataValueLen)
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(out) >= maxMetadataKeys {
			break
		}
		if k == "" || k == "transactionId" || utf8.RuneCountInString(k) > maxMetadataKeyLen || strings.ContainsAny(k, "[]") {
			continue
		}
		v, ok := stringify(meta[k])
		if !ok {
			continue
		}
		out[k] = truncate(v, maxMetadataValueLen)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func stringify(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), true
	}
	return string(b), true
}

// truncate cuts s to at most n characters (runes).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// captureMethod maps the unified capture method to Stripe's.
func captureMethod(m string) (string, error) {
	switch m {
	case "", payments.CaptureAutomatic:
		return string(stripe.PaymentIntentCaptureMethodAutomatic), nil
	case payments.CaptureManual:
		return string(stripe.PaymentIntentCaptureMethodManual), nil
	}
	return "", fmt.Errorf("stripe: unknown capture method %q", m)
}

// setIdempotencyKey sets the request's idempotency key; one longer than
// Stripe's 255 characters is replaced by its SHA-256, so that a repeat
// still finds it.
func setIdempotencyKey(params *stripe.Params, key string) {
	key = strings.TrimSpace(key)
	if key == "" {
		return
	}
	if len(key) > maxIdempotencyKey {
		sum := sha256.Sum256([]byte(key))
		key = hex.EncodeToString(sum[:])
	}
	params.SetIdempotencyKey(key)
}

// Error is a Stripe API error as this provider reports it: it wraps
// payments.ErrDeclined or payments.ErrNotConfigured (Kind) when it is one,
// and the *stripe.Error. Its message has Stripe's type, code and message
// but never the objects stripe-go's own message carries.
type Error struct {
	Kind   error         // payments.ErrDeclined, payments.ErrNotConfigured or nil
	Op     string        // the call that failed ("create refund", ...)
	Stripe *stripe.Error // Stripe's error
}

// Error returns the message: Stripe's type, code and message, never
// request or response objects.
func (e *Error) Error() string {
	se := e.Stripe
	switch e.Kind {
	case payments.ErrDeclined:
		msg := se.Msg
		if msg == "" {
			msg = string(se.Code)
		}
		return fmt.Sprintf("%s: %s", payments.ErrDeclined, msg)
	case payments.ErrNotConfigured:
		return fmt.Sprintf("%s: stripe refused the tenant's secret key (HTTP %d)", payments.ErrNotConfigured, se.HTTPStatusCode)
	}
	return fmt.Sprintf("stripe %s: %s (type %s, code %s, HTTP %d, request %s)", e.Op, se.Msg, se.Type, se.Code, se.HTTPStatusCode, se.RequestID)
}

// Unwrap returns the kind (when there is one) and the Stripe error.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Stripe}
	}
	return []error{e.Kind, e.Stripe}
}

// mapError classifies a stripe-go error: a bad or unauthorized key is
// ErrNotConfigured; a card error, or an invalid request about the payment
// (400, 402, 404), ErrDeclined with Stripe's message; anything else
// (network, rate limit, idempotency conflict, 5xx) a plain error.
func mapError(op string, err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("stripe %s: %w", op, err)
	}
	e := &Error{Op: op, Stripe: se}
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		e.Kind = payments.ErrNotConfigured
	case se.Type == stripe.ErrorTypeCard:
		e.Kind = payments.ErrDeclined
	case se.Type == stripe.ErrorTypeInvalidRequest:
		switch se.HTTPStatusCode {
		case http.StatusBadRequest, http.StatusPaymentRequired, http.StatusNotFound:
			e.Kind = payments.ErrDeclined
		}
	}
	return e
}
