package payments

import (
	"embed"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables.
var Migrations = store.Migrations{Line: "payments", FS: migrationsFS, Dir: "migrations"}

// The events the area emits, each in the transaction that causes it.
const (
	EventSessionCreated    = "payment_gateways.session.created"
	EventSessionExpired    = "payment_gateways.session.expired"
	EventPaymentAuthorized = "payment_gateways.payment.authorized"
	EventPaymentCaptured   = "payment_gateways.payment.captured"
	EventPaymentFailed     = "payment_gateways.payment.failed"
	EventPaymentRefunded   = "payment_gateways.payment.refunded"
	EventPaymentCancelled  = "payment_gateways.payment.cancelled"
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventSessionCreated, Label: "Payment session created", Description: "A payment session was opened at a provider."},
	{ID: EventSessionExpired, Label: "Payment session expired", Description: "A payment's session expired before it was paid.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
	{ID: EventPaymentAuthorized, Label: "Payment authorized", Description: "A payment was authorized and waits for capture.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
	{ID: EventPaymentCaptured, Label: "Payment captured", Description: "A payment was captured, in full or in part.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
	{ID: EventPaymentFailed, Label: "Payment failed", Description: "A payment failed or was disputed.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
	{ID: EventPaymentRefunded, Label: "Payment refunded", Description: "A payment was refunded, in full or in part.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
	{ID: EventPaymentCancelled, Label: "Payment cancelled", Description: "A payment was cancelled before capture.",
		ClientBroadcast: true, ViewFeature: "payment_gateways.view"},
}

// statusEvents names the event of each status a payment moves to (pending
// and unknown have none: a payment never moves back to pending).
var statusEvents = map[Status]string{
	StatusAuthorized:        EventPaymentAuthorized,
	StatusCaptured:          EventPaymentCaptured,
	StatusPartiallyCaptured: EventPaymentCaptured,
	StatusFailed:            EventPaymentFailed,
	StatusRefunded:          EventPaymentRefunded,
	StatusPartiallyRefunded: EventPaymentRefunded,
	StatusCancelled:         EventPaymentCancelled,
	StatusExpired:           EventSessionExpired,
}

// Transaction is a payment: one session at one provider.
type Transaction struct {
	// ID is the transactionId every later operation names.
	ID             string `json:"transactionId"`
	TenantID       string `json:"-"`
	OrganizationID string `json:"-"`
	// PaymentID is the internal payment reference.
	PaymentID   string `json:"paymentId"`
	ProviderKey string `json:"providerKey"` // the provider the payment runs at (mock, stripe, ...)
	// SessionID is the provider's id of the payment.
	SessionID     string `json:"sessionId"`
	Status        Status `json:"status"`        // the unified status (see Status)
	GatewayStatus string `json:"gatewayStatus"` // the provider's own word for the status
	// Amount, CapturedAmount and RefundedAmount are in minor units of
	// Currency; the JSON shows them as decimals (MarshalJSON).
	Amount         int64          `json:"-"`
	CapturedAmount int64          `json:"-"`             // see Amount
	RefundedAmount int64          `json:"-"`             // see Amount
	Currency       string         `json:"currencyCode"`  // ISO 4217 code, upper case
	CaptureMethod  string         `json:"captureMethod"` // CaptureAutomatic or CaptureManual
	Description    string         `json:"description"`
	Metadata       map[string]any `json:"metadata"`                           // the caller's, returned as given
	RedirectURL    string         `json:"-"`                                  // where to send the payer; "" when none
	ProviderData   map[string]any `json:"providerData" jsonschema:"nullable"` // shown to the caller; never a secret
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`

	// locked is the counted key SQLStore.LockTransaction read (or
	// InsertTransaction or UpdateTransaction wrote) and in which database
	// transaction: the key the next update in that transaction moves the
	// transaction from, without reading it again.
	locked *countedAs
}

// MarshalJSON writes the transaction with its amounts as decimals:
// amount, amountReceived (captured) and refundedAmount; and redirectUrl
// null when the provider gave none, as session create answers.
func (t *Transaction) MarshalJSON() ([]byte, error) {
	type plain Transaction
	return json.Marshal(struct {
		*plain
		Amount         json.Number `json:"amount"`
		AmountReceived json.Number `json:"amountReceived"`
		RefundedAmount json.Number `json:"refundedAmount"`
		RedirectURL    *string     `json:"redirectUrl"`
	}{(*plain)(t), FormatAmount(t.Amount, t.Currency), FormatAmount(t.CapturedAmount, t.Currency),
		FormatAmount(t.RefundedAmount, t.Currency), optional(t.RedirectURL)})
}

// Refund is one refund of a transaction.
type Refund struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	TenantID      string `json:"-"`
	// ProviderRefundID is the provider's id, the refundId of the API.
	ProviderRefundID string    `json:"refundId"`
	Amount           int64     `json:"-"`             // in minor units of Currency
	Currency         string    `json:"-"`             // the payment's
	Reason           string    `json:"reason"`        // the caller's, free text
	GatewayStatus    string    `json:"gatewayStatus"` // the provider's status of the refund
	CreatedAt        time.Time `json:"createdAt"`
}

// MarshalJSON writes the refund with its amount as a decimal.
func (r *Refund) MarshalJSON() ([]byte, error) {
	type plain Refund
	return json.Marshal(struct {
		*plain
		Amount json.Number `json:"amount"`
	}{(*plain)(r), FormatAmount(r.Amount, r.Currency)})
}

// Outcomes of a processed webhook.
const (
	OutcomeApplied = "applied"
	OutcomeIgnored = "ignored"
)

// Webhook is one received provider webhook: an entry of a transaction's
// history.
type Webhook struct {
	ID             string `json:"id"`
	TenantID       string `json:"-"`
	TransactionID  string `json:"transactionId"`
	ProviderKey    string `json:"providerKey"`    // the provider that sent it
	IdempotencyKey string `json:"idempotencyKey"` // the provider event id it is deduplicated by
	EventType      string `json:"eventType"`
	EventID        string `json:"eventId"`
	ProviderStatus string `json:"providerStatus"` // the status the event reports, in the provider's words
	// Amount is the event's, in minor units, when it carries one.
	Amount *int64 `json:"amount,omitempty"`
	// MappedStatus is the unified status the event reports.
	MappedStatus Status `json:"mappedStatus"`
	// Outcome is empty until processed, then OutcomeApplied (the status
	// changed) or OutcomeIgnored (not a valid move from StatusBefore).
	Outcome      string     `json:"outcome" jsonschema:"enum=,enum=applied,enum=ignored"`
	StatusBefore Status     `json:"statusBefore" jsonschema:"enum="` // the payment's status before processing
	StatusAfter  Status     `json:"statusAfter" jsonschema:"enum="`  // the payment's status after processing
	ReceivedAt   time.Time  `json:"receivedAt"`                      // when it arrived
	ProcessedAt  *time.Time `json:"processedAt"`                     // when it was processed; nil until then
}

// Operation is the kept answer of an operation sent with an operationId.
type Operation struct {
	TenantID      string
	TransactionID string
	OperationID   string
	Action        Action          // capture, refund or cancel
	Response      json.RawMessage // the JSON answer returned again for the same operationId
	CreatedAt     time.Time
}

// Filter selects a page of transactions.
type Filter struct {
	Status      Status // "" matches every status
	ProviderKey string // "" matches every provider
	// Limit is the page size; Offset the rows skipped before it.
	Limit, Offset int
}

// marshalWith writes v's JSON object with extra's fields added.
func marshalWith(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range extra {
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		m[k] = raw
	}
	return json.Marshal(m)
}
