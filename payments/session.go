package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/store"
)

// SessionRequest opens a payment.
type SessionRequest struct {
	// ProviderKey names a registered provider ("mock", "stripe").
	ProviderKey string `json:"providerKey" jsonschema:"required,minLength=1"`
	// Amount is a positive decimal in the currency, with no more decimal
	// places than its minor unit ("10.50").
	Amount json.Number `json:"amount" jsonschema:"required,type=number,exclusiveMinimum=0"`
	// CurrencyCode is an ISO 4217 code (any case; stored upper-case).
	CurrencyCode string `json:"currencyCode" jsonschema:"required,pattern=^[A-Za-z]{3}$"`
	// CaptureMethod is CaptureAutomatic (default) or CaptureManual.
	CaptureMethod string `json:"captureMethod" jsonschema:"enum=,enum=automatic,enum=manual"`
	// Description is at most 500 characters.
	Description string `json:"description" jsonschema:"maxLength=500"`
	// Metadata is the caller's, at most 16 KiB of JSON, kept with the
	// transaction and passed to the provider.
	Metadata map[string]any `json:"metadata"`
}

// Session is a new payment session: what the caller needs to confirm the
// payment (clientSecret, redirectUrl) and to act on it (transactionId).
type Session struct {
	TransactionID string         `json:"transactionId"`
	SessionID     string         `json:"sessionId"`
	ProviderKey   string         `json:"providerKey"`                        // the provider the payment runs at
	ClientSecret  *string        `json:"clientSecret"`                       // what a client-side SDK confirms the payment with; nil when none
	RedirectURL   *string        `json:"redirectUrl"`                        // where to send the payer; nil when none
	ProviderData  map[string]any `json:"providerData" jsonschema:"nullable"` // shown to the caller; never a secret
	Status        Status         `json:"status"`                             // the unified status
	PaymentID     string         `json:"paymentId"`
}

// Limits of a session request.
const (
	maxDescription   = 500
	maxMetadataBytes = 16 << 10
)

// msgNUL refuses text neither engine can store alike (PostgreSQL stores
// no U+0000).
const msgNUL = "must not contain the NUL character"

var currencyPattern = regexp.MustCompile(`^[A-Za-z]{3}$`)

// check validates the request and returns its amount in minor units. An
// error is a *store.ValidationError naming each bad field.
func (r *SessionRequest) check() (int64, error) {
	ve := &store.ValidationError{}
	if strings.TrimSpace(r.ProviderKey) == "" {
		ve.Add("providerKey", "is required")
	}
	if !currencyPattern.MatchString(r.CurrencyCode) {
		ve.Add("currencyCode", "must be a 3-letter ISO 4217 code")
	}
	r.CurrencyCode = strings.ToUpper(r.CurrencyCode)
	var minor int64
	if r.Amount == "" {
		ve.Add("amount", "is required")
	} else if m, msg := ParseAmount(r.Amount, r.CurrencyCode); msg != "" {
		ve.Add("amount", msg)
	} else {
		minor = m
	}
	switch r.CaptureMethod {
	case "":
		r.CaptureMethod = CaptureAutomatic
	case CaptureAutomatic, CaptureManual:
	default:
		ve.Add("captureMethod", "must be automatic or manual")
	}
	if utf8.RuneCountInString(r.Description) > maxDescription {
		ve.Add("description", fmt.Sprintf("must be at most %d characters", maxDescription))
	} else if store.HasNUL(r.Description) {
		ve.Add("description", msgNUL)
	}
	if store.HasNUL(r.ProviderKey) {
		ve.Add("providerKey", msgNUL)
	}
	if b, err := jsonenc.AppendObject(nil, r.Metadata); err != nil || len(b) > maxMetadataBytes {
		ve.Add("metadata", fmt.Sprintf("must be at most %d bytes of JSON", maxMetadataBytes))
	} else if store.JSONHasNUL(b) {
		ve.Add("metadata", msgNUL)
	}
	return minor, ve.Err()
}

// CreateSession opens a payment at the request's provider and stores its
// transaction, in the caller's tenant and active organization. It emits
// payment_gateways.session.created, and the status's event when the
// provider confirmed the payment at once (the mock providers do).
//
// A bad request is a *store.ValidationError; an unknown provider
// ErrUnknownProvider; a provider failure ErrProvider (logged), ErrDeclined
// or ErrNotConfigured.
func (s *Service) CreateSession(ctx context.Context, req SessionRequest) (*Session, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	amount, err := req.check()
	if err != nil {
		return nil, err
	}
	p, ok := s.providers.Get(req.ProviderKey)
	if !ok {
		return nil, fmt.Errorf("%w: No gateway adapter for provider: %s", ErrUnknownProvider, req.ProviderKey)
	}
	creds, err := s.creds.Credentials(ctx, sc.TenantID, p.Key())
	if err != nil {
		return nil, err
	}
	id := store.NewID()
	res, err := p.CreateSession(ctx, SessionInput{TransactionID: id, Amount: amount, Currency: req.CurrencyCode,
		CaptureMethod: req.CaptureMethod, Description: req.Description, Metadata: req.Metadata, Credentials: creds,
		IdempotencyKey: id})
	if err != nil {
		return nil, s.providerError(ctx, p.Key(), "create session", err)
	}
	if !res.Status.Valid() || res.SessionID == "" {
		return nil, s.providerError(ctx, p.Key(), "create session",
			fmt.Errorf("provider answered status %q, session %q", res.Status, res.SessionID))
	}
	t := &Transaction{ID: id, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, PaymentID: store.NewID(),
		ProviderKey: p.Key(), SessionID: res.SessionID, Status: res.Status, GatewayStatus: res.GatewayStatus,
		Amount: amount, Currency: req.CurrencyCode, CaptureMethod: req.CaptureMethod, Description: req.Description,
		Metadata: req.Metadata, RedirectURL: res.RedirectURL, ProviderData: res.ProviderData}
	if t.Status == StatusCaptured {
		t.CapturedAmount = amount
	}
	s.prepareWrites(ctx)
	if err := s.sessions.Do(t); err != nil {
		return nil, err
	}
	return &Session{TransactionID: t.ID, SessionID: t.SessionID, ProviderKey: t.ProviderKey,
		ClientSecret: optional(res.ClientSecret), RedirectURL: optional(res.RedirectURL), ProviderData: res.ProviderData,
		Status: t.Status, PaymentID: t.PaymentID}, nil
}

// writeSessions is the group commit of CreateSession: the transactions
// of concurrent sessions (any tenants), written with multi-row statements
// (SQLStore.InsertTransactions; another Store's InsertTransaction one by
// one), their counts, and their
// events in one insert, in one transaction. store.Group writes each
// session alone when the batch fails, so one bad row fails only its own
// session.
func (s *Service) writeSessions(ctx context.Context, tx *store.Tx, ts []*Transaction) error {
	now := tx.Now()
	for _, t := range ts {
		t.CreatedAt, t.UpdatedAt = now, now
	}
	// SQLStore's own multi-row write; any other store (a host's, which
	// may embed SQLStore and override InsertTransaction) one by one.
	if st, ok := s.store.(*SQLStore); ok {
		if err := st.InsertTransactions(ctx, tx, ts); err != nil {
			return err
		}
	} else {
		for _, t := range ts {
			if err := s.store.InsertTransaction(ctx, tx, t); err != nil {
				return err
			}
		}
	}
	// session.created, and the status's event when the provider
	// confirmed at once: one insert for the whole batch.
	evs := make([]store.Event, 0, 2*len(ts))
	for _, t := range ts {
		evs = append(evs, newEvent(EventSessionCreated, t, ""))
		if typ, ok := statusEvents[t.Status]; ok {
			evs = append(evs, newEvent(typ, t, StatusPending))
		}
	}
	_, err := tx.EmitMany(ctx, evs)
	return err
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// scope is the transaction's tenant and organization, for its events.
func (t *Transaction) scope() store.Scope {
	return store.Scope{TenantID: t.TenantID, OrganizationID: t.OrganizationID}
}

// appendEventData appends the payload of the area's events: the
// payment's ids, status (and the one before, for status changes) and
// amounts, as json.Marshal writes the object {transactionId, paymentId,
// providerKey, sessionId, status, amount, amountReceived, refundedAmount,
// currencyCode, previousStatus?} (keys sorted, strings HTML-escaped,
// amounts as numbers), without a map or reflection: every session writes
// two such payloads.
func appendEventData(b []byte, t *Transaction, previous Status) []byte {
	field := func(key, value string) {
		b = append(b, key...)
		b = jsonenc.AppendString(b, value)
	}
	b = append(b, `{"amount":`...)
	b = append(b, FormatAmount(t.Amount, t.Currency)...)
	b = append(b, `,"amountReceived":`...)
	b = append(b, FormatAmount(t.CapturedAmount, t.Currency)...)
	field(`,"currencyCode":`, t.Currency)
	field(`,"paymentId":`, t.PaymentID)
	if previous != "" {
		field(`,"previousStatus":`, string(previous))
	}
	field(`,"providerKey":`, t.ProviderKey)
	b = append(b, `,"refundedAmount":`...)
	b = append(b, FormatAmount(t.RefundedAmount, t.Currency)...)
	field(`,"sessionId":`, t.SessionID)
	field(`,"status":`, string(t.Status))
	field(`,"transactionId":`, t.ID)
	return append(b, '}')
}

// newEvent is the event typ of t (previous is the status before, for a
// status change; empty otherwise).
func newEvent(typ string, t *Transaction, previous Status) store.Event {
	sc := t.scope()
	data := appendEventData(make([]byte, 0, 320), t, previous)
	return store.Event{Type: typ, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, Data: data}
}

// emitStatus emits the event of t's status when it differs from
// previous and has one.
func (s *Service) emitStatus(ctx context.Context, tx *store.Tx, t *Transaction, previous Status) error {
	typ, ok := statusEvents[t.Status]
	if !ok || t.Status == previous {
		return nil
	}
	if _, err := tx.Emit(ctx, newEvent(typ, t, previous)); err != nil {
		return err
	}
	if s.integrationLog == nil {
		return nil
	}
	payload, _ := json.Marshal(map[string]any{"transactionId": t.ID, "from": previous, "to": t.Status, "gatewayStatus": t.GatewayStatus})
	return s.integrationLog(ctx, tx, IntegrationLogEntry{TenantID: t.TenantID, ProviderKey: t.ProviderKey, Level: "info",
		Message: fmt.Sprintf("Payment %s: %s → %s", t.ID, previous, t.Status), Code: "status_changed", TransactionID: t.ID, Payload: payload})
}

// providerError classifies a provider's error: a refusal or missing
// credentials pass through, anything else is logged and becomes
// ErrProvider.
func (s *Service) providerError(ctx context.Context, providerKey, op string, err error) error {
	switch {
	case errors.Is(err, ErrDeclined), errors.Is(err, ErrNotConfigured):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	s.logger.ErrorContext(ctx, "payments: provider call failed", "provider", providerKey, "op", op, "err", err)
	if sc, scErr := store.ScopeFrom(ctx); scErr == nil && s.integrationLog != nil {
		// The tenant sees that the call failed, not the provider's words
		// (they may carry details of the account).
		if logErr := s.integrationLog(ctx, s.db, IntegrationLogEntry{TenantID: sc.TenantID, ProviderKey: providerKey, Level: "error",
			Message: fmt.Sprintf("The %s call to %s failed", op, providerKey), Code: "provider_error"}); logErr != nil {
			s.logger.WarnContext(ctx, "payments: integration log write failed", "err", logErr)
		}
	}
	return fmt.Errorf("%w: %s %s", ErrProvider, providerKey, op)
}
