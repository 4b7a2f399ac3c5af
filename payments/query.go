package payments

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// StatusView is GET /payment_gateways/status's answer, these fields and
// no others.
type StatusView struct {
	TransactionID  string      `json:"transactionId"`
	PaymentID      string      `json:"paymentId"`
	ProviderKey    string      `json:"providerKey"` // see Transaction
	SessionID      string      `json:"sessionId"`
	Status         Status      `json:"status"`                                             // the unified status
	GatewayStatus  string      `json:"gatewayStatus"`                                      // the provider's own word for it
	Amount         json.Number `json:"amount" jsonschema:"type=number,exclusiveMinimum=0"` // a decimal in the currency (12.34)
	AmountReceived json.Number `json:"amountReceived" jsonschema:"type=number,minimum=0"`  // the amount captured, a decimal
	CurrencyCode   string      `json:"currencyCode"`                                       // ISO 4217 code
	CreatedAt      time.Time   `json:"createdAt"`
	UpdatedAt      time.Time   `json:"updatedAt"`
}

// Get returns the caller's transaction with the id.
func (s *Service) Get(ctx context.Context, id string) (*Transaction, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !store.IsID(id) {
		return nil, store.Errorf(store.ErrNotFound, "Transaction not found")
	}
	t, err := s.store.GetTransaction(ctx, s.db, sc, id)
	return t, notFound(err)
}

// Status returns the status view of the caller's transaction with the id.
func (s *Service) Status(ctx context.Context, id string) (*StatusView, error) {
	t, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return statusView(t), nil
}

func statusView(t *Transaction) *StatusView {
	return &StatusView{TransactionID: t.ID, PaymentID: t.PaymentID, ProviderKey: t.ProviderKey, SessionID: t.SessionID,
		Status: t.Status, GatewayStatus: t.GatewayStatus, Amount: FormatAmount(t.Amount, t.Currency),
		AmountReceived: FormatAmount(t.CapturedAmount, t.Currency), CurrencyCode: t.Currency,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// Detail is a transaction with its refunds and webhook history.
type Detail struct {
	*Transaction
	Refunds  []*Refund  `json:"refunds"`  // oldest first
	Webhooks []*Webhook `json:"webhooks"` // the received provider webhooks, oldest first
}

// MarshalJSON writes the transaction's fields beside refunds and webhooks.
func (d *Detail) MarshalJSON() ([]byte, error) {
	return marshalWith(d.Transaction, map[string]any{"refunds": nonNil(d.Refunds), "webhooks": nonNil(d.Webhooks)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// GetDetail returns the caller's transaction with its refunds and webhook
// history.
func (s *Service) GetDetail(ctx context.Context, id string) (*Detail, error) {
	t, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Transaction: t}
	if d.Refunds, err = s.store.ListRefunds(ctx, s.db, t.TenantID, t.ID); err != nil {
		return nil, err
	}
	if d.Webhooks, err = s.store.ListWebhooks(ctx, s.db, t.TenantID, t.ID); err != nil {
		return nil, err
	}
	return d, nil
}

// List returns a page of the caller's transactions matching f, newest
// first, and how many match.
func (s *Service) List(ctx context.Context, f Filter) ([]*Transaction, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.Invalid("status", "is not a payment status")
	}
	return s.store.ListTransactions(ctx, s.db, sc, f)
}
