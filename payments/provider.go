package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
)

// Provider is a payment gateway: it opens payment sessions at the provider
// and acts on them, and it verifies and reads the provider's webhooks. The
// Service owns the transaction and its status; a Provider only talks to
// the provider and reports what it answered.
//
// Amounts are integers in the currency's minor units (cents for USD, yen
// for JPY; MinorUnits gives the exponent), currencies upper-case ISO 4217
// codes. Every call carries the tenant's credentials for the provider
// (Credentials) and an idempotency key: the Service may repeat a call with
// the same key after a failure it could not classify, and a provider that
// supports idempotency (Stripe) must answer the repeat without acting
// twice.
//
// A provider's errors are logged in full and shown to API callers only as
// a vague 502; wrap ErrDeclined for a refusal the caller should see as
// such (a card declined, an amount over the provider's limit).
type Provider interface {
	// Key is the provider's key in routes and stored transactions
	// ("stripe", "mock").
	Key() string
	// CreateSession opens a payment at the provider.
	CreateSession(ctx context.Context, in SessionInput) (*SessionResult, error)
	// Capture captures in.Amount of an authorized payment.
	Capture(ctx context.Context, in CaptureInput) (*CaptureResult, error)
	// Refund refunds in.Amount of a captured payment.
	Refund(ctx context.Context, in RefundInput) (*RefundResult, error)
	// Cancel cancels a payment that is not captured.
	Cancel(ctx context.Context, in CancelInput) (*CancelResult, error)
	// Status reads the payment's current state at the provider.
	Status(ctx context.Context, in StatusInput) (*StatusResult, error)
	// WebhookSessionID reads which session a webhook body is about,
	// before it is verified: the Service uses it to find the tenant (and
	// so the credentials) to verify it with. A body it cannot read is an
	// error.
	WebhookSessionID(body []byte) (string, error)
	// VerifyWebhook checks the webhook's signature with the tenant's
	// credentials and reads the event. A bad signature or a body that is
	// not one of the provider's events is an error wrapping
	// ErrVerification.
	VerifyWebhook(ctx context.Context, in WebhookInput) (*WebhookEvent, error)
	// MapStatus maps a provider status (and the event type, for providers
	// whose events say more than their status) to a unified status;
	// StatusUnknown when it has none.
	MapStatus(providerStatus, eventType string) Status
}

// WebhookSharer is implemented by a provider whose webhook route also
// receives the webhooks of sessions opened with other providers, because
// they share one webhook format and secret: /webhook/mock and
// /webhook/mock_processing each take both mock providers' webhooks.
// Verification uses the credentials of the session's own provider.
type WebhookSharer interface {
	// SharesWebhooksWith returns the keys of the other providers whose
	// webhooks this provider's route receives.
	SharesWebhooksWith() []string
}

// Credentials are a tenant's settings for one provider, by key
// ("secretKey", "webhookSecret", "publishableKey").
type Credentials map[string]string

// SessionInput opens a payment.
type SessionInput struct {
	// TransactionID is the Service's id of the payment; providers may
	// record it (Stripe metadata) and use it as the idempotency key.
	TransactionID string
	Amount        int64  // in minor units of Currency
	Currency      string // ISO 4217 code, upper case
	// CaptureMethod is CaptureAutomatic or CaptureManual.
	CaptureMethod string
	Description   string
	// Metadata is the caller's; a provider passes on what it can.
	Metadata       map[string]any
	Credentials    Credentials // the tenant's settings for this provider
	IdempotencyKey string      // the key the provider deduplicates the call by
}

// SessionResult is a provider's answer to CreateSession.
type SessionResult struct {
	// SessionID is the provider's id of the payment (Stripe's
	// PaymentIntent id).
	SessionID    string
	ClientSecret string // what a client-side SDK confirms the payment with; "" when none
	RedirectURL  string // where to send the payer; "" when none
	// ProviderData is shown to the caller (paymentIntentId,
	// publishableKey): never put a secret in it.
	ProviderData map[string]any
	// Status is the payment's unified status; GatewayStatus the
	// provider's own word for it.
	Status        Status
	GatewayStatus string // see Status
}

// CaptureInput captures Amount (minor units, at most what is authorized).
type CaptureInput struct {
	SessionID      string
	Amount         int64       // to capture, in minor units of Currency
	Currency       string      // the payment's
	Credentials    Credentials // the tenant's settings for this provider
	IdempotencyKey string      // the key the provider deduplicates the call by
}

// CaptureResult is a provider's answer to Capture.
type CaptureResult struct {
	// CapturedAmount is the payment's total captured after the call.
	CapturedAmount int64
	GatewayStatus  string         // the provider's status after the capture
	ProviderData   map[string]any // shown to the caller; never a secret
}

// RefundInput refunds Amount (minor units) of a captured payment.
type RefundInput struct {
	SessionID string
	Amount    int64  // to refund, in minor units of Currency
	Currency  string // the payment's
	// Reason is the caller's, free text; providers map it to theirs.
	Reason         string
	Credentials    Credentials // the tenant's settings for this provider
	IdempotencyKey string      // the key the provider deduplicates the call by
}

// RefundResult is a provider's answer to Refund.
type RefundResult struct {
	// RefundID is the provider's id of the refund.
	RefundID      string
	GatewayStatus string         // the provider's status of the refund
	ProviderData  map[string]any // shown to the caller; never a secret
}

// CancelInput cancels a payment that is not captured.
type CancelInput struct {
	SessionID      string
	Credentials    Credentials // the tenant's settings for this provider
	IdempotencyKey string      // the key the provider deduplicates the call by
}

// CancelResult is a provider's answer to Cancel.
type CancelResult struct {
	GatewayStatus string         // the provider's status after the cancel
	ProviderData  map[string]any // shown to the caller; never a secret
}

// StatusInput reads a payment's state at the provider.
type StatusInput struct {
	SessionID   string
	Currency    string      // the payment's, to read amounts in
	Credentials Credentials // the tenant's settings for this provider
}

// StatusResult is a payment's state at the provider.
type StatusResult struct {
	Status         Status // the unified status
	GatewayStatus  string // the provider's own word for it
	Amount         int64  // the payment amount, in minor units
	AmountReceived int64  // the amount captured so far, in minor units
}

// WebhookInput is a received webhook: its exact body and headers, and the
// credentials of the tenant whose session it names.
type WebhookInput struct {
	Body        []byte      // the raw request body, as signed
	Header      http.Header // the request headers (signature, timestamp)
	Credentials Credentials // the tenant's settings, with the webhook secret
}

// WebhookEvent is what a verified webhook says.
type WebhookEvent struct {
	// EventType is the provider's ("payment_intent.succeeded").
	EventType string
	// EventID is the provider's id of the event.
	EventID string
	// SessionID is the payment it is about.
	SessionID string
	// ProviderStatus is the provider's status word, for MapStatus.
	ProviderStatus string
	// Amount, when the event carries one, in minor units.
	Amount *int64
	// IdempotencyKey identifies the event across redeliveries: the Service
	// processes one key once.
	IdempotencyKey string
}

// Errors providers return.
var (
	// ErrVerification is a webhook whose signature or body does not
	// verify.
	ErrVerification = errors.New("payments: webhook verification failed")
	// ErrDeclined is a refusal by the provider that the caller should see
	// (409): the provider's message is shown.
	ErrDeclined = errors.New("payments: declined by the provider")
	// ErrNotConfigured is a provider without the credentials it needs
	// (422).
	ErrNotConfigured = errors.New("payments: provider not configured")
)

// Registry holds the providers by key. It is safe for concurrent use; a
// host adds its own with Register.
type Registry struct {
	mu        sync.RWMutex
	providers map[string]Provider
}

// NewRegistry returns a registry holding ps.
func NewRegistry(ps ...Provider) *Registry {
	r := &Registry{providers: map[string]Provider{}}
	for _, p := range ps {
		r.Register(p)
	}
	return r
}

// Register adds p, replacing a provider with its key.
func (r *Registry) Register(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.providers[p.Key()] = p
}

// Get returns the provider with the key.
func (r *Registry) Get(key string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.providers[key]
	return p, ok
}

// Keys returns the registered keys, sorted.
func (r *Registry) Keys() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]string, 0, len(r.providers))
	for k := range r.providers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DeclinedError is a provider refusal with the provider's message.
func DeclinedError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDeclined, fmt.Sprintf(format, args...))
}
