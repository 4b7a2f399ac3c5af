package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// CaptureRequest captures an authorized payment.
type CaptureRequest struct {
	TransactionID string `json:"transactionId" jsonschema:"required,format=uuid"`
	// Amount, when set, captures part of the payment; omitted captures
	// what is left.
	Amount json.Number `json:"amount" jsonschema:"type=number,exclusiveMinimum=0,nullable"`
	// OperationID makes the capture idempotent: the same id on the
	// transaction again returns the first answer and changes nothing.
	OperationID string `json:"operationId" jsonschema:"maxLength=200"`
}

// CaptureResponse is a capture's answer.
type CaptureResponse struct {
	Status Status `json:"status"` // the payment's status after the capture
	// CapturedAmount is the payment's total captured.
	CapturedAmount json.Number `json:"capturedAmount" jsonschema:"type=number,minimum=0"`
}

// RefundRequest refunds a captured payment.
type RefundRequest struct {
	TransactionID string `json:"transactionId" jsonschema:"required,format=uuid"`
	// Amount, when set, refunds part of the payment; omitted refunds what
	// is left.
	Amount json.Number `json:"amount" jsonschema:"type=number,exclusiveMinimum=0,nullable"`
	// Reason is free text, at most 200 characters.
	Reason      string `json:"reason" jsonschema:"maxLength=200"`
	OperationID string `json:"operationId" jsonschema:"maxLength=200"`
}

// RefundResponse is a refund's answer.
type RefundResponse struct {
	// RefundID is the provider's id of the refund.
	RefundID string `json:"refundId"`
	Status   Status `json:"status"` // the payment's status after the refund
	// RefundedAmount is this refund's amount.
	RefundedAmount json.Number `json:"refundedAmount" jsonschema:"type=number,exclusiveMinimum=0"`
}

// CancelRequest cancels a payment before capture.
type CancelRequest struct {
	TransactionID string `json:"transactionId" jsonschema:"required,format=uuid"`
	OperationID   string `json:"operationId" jsonschema:"maxLength=200"`
}

// CancelResponse is a cancel's answer.
type CancelResponse struct {
	Status Status `json:"status"` // the payment's status after the cancel
}

// RefreshRequest reads a payment's state from its provider.
type RefreshRequest struct {
	TransactionID string `json:"transactionId" jsonschema:"required,format=uuid"`
}

// Limits of the actions' fields.
const (
	maxReason      = 200
	maxOperationID = 200
)

// checkIDs validates the transaction and operation ids every action takes.
func checkIDs(ve *store.ValidationError, transactionID, operationID string) {
	if transactionID == "" {
		ve.Add("transactionId", "is required")
	} else if !store.IsID(transactionID) {
		ve.Add("transactionId", "must be a UUID")
	}
	if len(operationID) > maxOperationID {
		ve.Add("operationId", fmt.Sprintf("must be at most %d bytes", maxOperationID))
	} else if store.HasNUL(operationID) {
		ve.Add("operationId", msgNUL)
	}
}

// optionalAmount reads an optional amount: 0 when omitted.
func optionalAmount(ve *store.ValidationError, n json.Number, currency string) int64 {
	if n == "" {
		return 0
	}
	minor, msg := ParseAmount(n, currency)
	if msg != "" {
		ve.Add("amount", msg)
	}
	return minor
}

// Capture captures an authorized payment: all of what is left, or
// req.Amount. A payment captured already answers its status again and
// calls nothing. More than is left to capture is ErrConflict; a status
// that allows no capture (cancelled, refunded) a *StatusConflictError.
func (s *Service) Capture(ctx context.Context, req CaptureRequest) (*CaptureResponse, error) {
	ve := &store.ValidationError{}
	checkIDs(ve, req.TransactionID, req.OperationID)
	if err := ve.Err(); err != nil {
		return nil, err
	}
	var out CaptureResponse
	err := s.act(ctx, req.TransactionID, ActionCapture, req.OperationID, &out, func(ctx context.Context, t *Transaction, p Provider, creds Credentials, key string) (commitFunc, error) {
		ve := &store.ValidationError{}
		amount := optionalAmount(ve, req.Amount, t.Currency)
		if err := ve.Err(); err != nil {
			return nil, err
		}
		left := t.Amount - t.CapturedAmount
		if t.Status == StatusCaptured || left == 0 {
			return func(tx *store.Tx, t *Transaction) error {
				out = CaptureResponse{Status: t.Status, CapturedAmount: FormatAmount(t.CapturedAmount, t.Currency)}
				return nil
			}, nil
		}
		if amount == 0 {
			amount = left
		}
		if amount > left {
			return nil, store.Errorf(store.ErrConflict, "Capture amount %s exceeds the amount left to capture (%s)",
				FormatAmount(amount, t.Currency), FormatAmount(left, t.Currency))
		}
		// A part of a pending payment: pending never becomes
		// partially_captured, so the books could not record it.
		if amount < left && !CanMove(t.Status, StatusPartiallyCaptured) && t.Status != StatusPartiallyCaptured {
			return nil, &StatusConflictError{Action: ActionCapture, Status: t.Status}
		}
		res, err := p.Capture(ctx, CaptureInput{SessionID: t.SessionID, Amount: amount, Currency: t.Currency,
			Credentials: creds, IdempotencyKey: key})
		if err != nil {
			return nil, s.providerError(ctx, p.Key(), "capture", err)
		}
		return func(tx *store.Tx, t *Transaction) error {
			captured := min(t.CapturedAmount+amount, t.Amount)
			target := StatusCaptured
			if captured < t.Amount {
				target = StatusPartiallyCaptured
			}
			if next, _ := Decide(t.Status, target); next != target {
				// Only a webhook between the check and now (SQLite) can
				// get here (a refund of what was captured so far): the
				// provider captured, but the status the webhook set
				// cannot take it; recording the amount under it would
				// leave a refunded payment with more captured than
				// refunded.
				return store.Errorf(store.ErrConflict, "The payment changed while it was captured; check its status")
			}
			if err := s.change(ctx, tx, t, target, res.GatewayStatus, res.ProviderData, func() { t.CapturedAmount = captured }); err != nil {
				return err
			}
			out = CaptureResponse{Status: t.Status, CapturedAmount: FormatAmount(t.CapturedAmount, t.Currency)}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Refund refunds a captured payment: all of what is left, or req.Amount.
// The payment becomes partially_refunded, or refunded once its refunds
// add up to what was captured. More than is left is ErrConflict; a status
// that allows no refund (not captured, refunded) a *StatusConflictError.
func (s *Service) Refund(ctx context.Context, req RefundRequest) (*RefundResponse, error) {
	ve := &store.ValidationError{}
	checkIDs(ve, req.TransactionID, req.OperationID)
	if utf8.RuneCountInString(req.Reason) > maxReason {
		ve.Add("reason", fmt.Sprintf("must be at most %d characters", maxReason))
	} else if store.HasNUL(req.Reason) {
		ve.Add("reason", msgNUL)
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	var out RefundResponse
	err := s.act(ctx, req.TransactionID, ActionRefund, req.OperationID, &out, func(ctx context.Context, t *Transaction, p Provider, creds Credentials, key string) (commitFunc, error) {
		ve := &store.ValidationError{}
		amount := optionalAmount(ve, req.Amount, t.Currency)
		if err := ve.Err(); err != nil {
			return nil, err
		}
		left := t.CapturedAmount - t.RefundedAmount
		if amount == 0 {
			amount = left
		}
		if amount > left || left == 0 {
			return nil, store.Errorf(store.ErrConflict, "Refund amount %s exceeds the amount left to refund (%s)",
				FormatAmount(amount, t.Currency), FormatAmount(left, t.Currency))
		}
		res, err := p.Refund(ctx, RefundInput{SessionID: t.SessionID, Amount: amount, Currency: t.Currency,
			Reason: strings.TrimSpace(req.Reason), Credentials: creds, IdempotencyKey: key})
		if err != nil {
			return nil, s.providerError(ctx, p.Key(), "refund", err)
		}
		return func(tx *store.Tx, t *Transaction) error {
			refunded := t.RefundedAmount + amount
			if refunded > t.CapturedAmount {
				// Only a webhook between the check and now (SQLite) can
				// get here: the provider refunded, our books cannot.
				return store.Errorf(store.ErrConflict, "The payment changed while it was refunded; check its status")
			}
			target := StatusRefunded
			if refunded < t.CapturedAmount {
				target = StatusPartiallyRefunded
			}
			if err := s.change(ctx, tx, t, target, res.GatewayStatus, nil, func() { t.RefundedAmount = refunded }); err != nil {
				return err
			}
			r := &Refund{ID: store.NewID(), TransactionID: t.ID, TenantID: t.TenantID, ProviderRefundID: res.RefundID,
				Amount: amount, Currency: t.Currency, Reason: req.Reason, GatewayStatus: res.GatewayStatus, CreatedAt: tx.Now()}
			if r.ProviderRefundID == "" {
				r.ProviderRefundID = r.ID
			}
			if err := s.store.InsertRefund(ctx, tx, r); err != nil {
				return err
			}
			out = RefundResponse{RefundID: r.ProviderRefundID, Status: t.Status, RefundedAmount: FormatAmount(amount, t.Currency)}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Cancel cancels a payment that is pending or authorized (or partially
// captured); any other status is a *StatusConflictError.
func (s *Service) Cancel(ctx context.Context, req CancelRequest) (*CancelResponse, error) {
	ve := &store.ValidationError{}
	checkIDs(ve, req.TransactionID, req.OperationID)
	if err := ve.Err(); err != nil {
		return nil, err
	}
	var out CancelResponse
	err := s.act(ctx, req.TransactionID, ActionCancel, req.OperationID, &out, func(ctx context.Context, t *Transaction, p Provider, creds Credentials, key string) (commitFunc, error) {
		res, err := p.Cancel(ctx, CancelInput{SessionID: t.SessionID, Credentials: creds, IdempotencyKey: key})
		if err != nil {
			return nil, s.providerError(ctx, p.Key(), "cancel", err)
		}
		return func(tx *store.Tx, t *Transaction) error {
			if err := s.change(ctx, tx, t, StatusCancelled, res.GatewayStatus, res.ProviderData, nil); err != nil {
				return err
			}
			out = CancelResponse{Status: t.Status}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// actionRefresh is the status refresh: any payment that is not terminal
// may be refreshed.
const actionRefresh Action = "refresh"

// Refresh asks the payment's provider for its state and applies the status
// it reports through the status machine (Decide), with the amount received
// as the captured amount: what a webhook would have said, for a host that
// polls after the customer's confirmation instead of waiting for one. A
// terminal payment is answered as it is, without a call. The answer is the
// payment's status view.
func (s *Service) Refresh(ctx context.Context, req RefreshRequest) (*StatusView, error) {
	ve := &store.ValidationError{}
	checkIDs(ve, req.TransactionID, "")
	if err := ve.Err(); err != nil {
		return nil, err
	}
	var out StatusView
	err := s.act(ctx, req.TransactionID, actionRefresh, "", &out, func(ctx context.Context, t *Transaction, p Provider, creds Credentials, _ string) (commitFunc, error) {
		if t.Status.Terminal() {
			return func(_ *store.Tx, t *Transaction) error { out = *statusView(t); return nil }, nil
		}
		res, err := p.Status(ctx, StatusInput{SessionID: t.SessionID, Currency: t.Currency, Credentials: creds})
		if err != nil {
			return nil, s.providerError(ctx, p.Key(), "status", err)
		}
		return func(tx *store.Tx, t *Transaction) error {
			if next, changed := Decide(t.Status, res.Status); changed {
				// The amount received is what a partial capture took; the
				// other statuses imply their amounts, as a webhook's do.
				var amount *int64
				if next == StatusPartiallyCaptured && res.AmountReceived > 0 {
					amount = &res.AmountReceived
				}
				if err := s.applyReported(ctx, tx, t, next, res.GatewayStatus, amount); err != nil {
					return err
				}
			}
			out = *statusView(t)
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// commitFunc records an action's outcome in tx, on the payment as it is
// in tx (t).
type commitFunc func(tx *store.Tx, t *Transaction) error

// actFunc checks an action against the payment t, calls the provider and
// returns what to commit.
type actFunc func(ctx context.Context, t *Transaction, p Provider, creds Credentials, idempotencyKey string) (commitFunc, error)

// act runs one caller action on the caller's transaction id, serialised
// with every other action on it: within the process by a lock per
// payment, across processes (PostgreSQL) by the payment's row lock, held
// through the provider call. With an operationId, a kept answer is
// replayed into out instead, and a new answer is kept with the change.
func (s *Service) act(ctx context.Context, id string, action Action, operationID string, out any, fn actFunc) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	unlock := s.locks.lock(id)
	defer unlock()
	t, err := s.store.GetTransaction(ctx, s.db, sc, id)
	if err != nil {
		return notFound(err)
	}
	p, ok := s.providers.Get(t.ProviderKey)
	if !ok {
		return fmt.Errorf("%w: the payment's provider %q is no longer registered", ErrProvider, t.ProviderKey)
	}
	creds, err := s.creds.Credentials(ctx, t.TenantID, t.ProviderKey)
	if err != nil {
		return err
	}
	key := t.ID + ":" + string(action) + ":" + operationID
	if operationID == "" {
		key += store.NewID()
	}

	// run checks the action on t (read in q), calls the provider and
	// returns what to commit; nil with no error is a replay.
	run := func(q store.Querier, t *Transaction) (commitFunc, error) {
		if operationID != "" {
			op, err := s.store.GetOperation(ctx, q, t.TenantID, t.ID, operationID)
			switch {
			case err == nil && op.Action != action:
				return nil, store.Errorf(store.ErrConflict, "operationId %q was used for a %s of this payment", operationID, op.Action)
			case err == nil:
				return nil, json.Unmarshal(op.Response, out)
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		if action != actionRefresh && !Allows(t.Status, action) {
			return nil, &StatusConflictError{Action: action, Status: t.Status}
		}
		return fn(ctx, t, p, creds, key)
	}
	// commit records the outcome, and keeps the answer of an operation.
	commit := func(tx *store.Tx, t *Transaction, c commitFunc) error {
		if err := c(tx, t); err != nil {
			return err
		}
		if operationID == "" {
			return nil
		}
		response, err := json.Marshal(out)
		if err != nil {
			return err
		}
		return s.store.InsertOperation(ctx, tx, &Operation{TenantID: t.TenantID, TransactionID: t.ID,
			OperationID: operationID, Action: action, Response: response, CreatedAt: tx.Now()})
	}

	if s.holdRowLock {
		return s.db.Tx(ctx, func(tx *store.Tx) error {
			t, err := s.store.LockTransaction(ctx, tx, t.TenantID, t.ID)
			if err != nil {
				return err
			}
			c, err := run(tx, t)
			if err != nil || c == nil {
				return err
			}
			return commit(tx, t, c)
		})
	}
	c, err := run(s.db, t)
	if err != nil || c == nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		t, err := s.store.LockTransaction(ctx, tx, t.TenantID, t.ID)
		if err != nil {
			return err
		}
		return commit(tx, t, c)
	})
}

// change moves t to target when the status machine allows it (Decide),
// applies set (the amounts), stores t and emits the status's event.
func (s *Service) change(ctx context.Context, tx *store.Tx, t *Transaction, target Status, gatewayStatus string,
	providerData map[string]any, set func()) error {
	previous := t.Status
	t.Status, _ = Decide(t.Status, target)
	if set != nil {
		set()
	}
	if gatewayStatus != "" {
		t.GatewayStatus = gatewayStatus
	}
	if providerData != nil {
		merged := map[string]any{}
		for k, v := range t.ProviderData {
			merged[k] = v
		}
		for k, v := range providerData {
			merged[k] = v
		}
		t.ProviderData = merged
	}
	t.UpdatedAt = tx.Now()
	if err := s.store.UpdateTransaction(ctx, tx, t); err != nil {
		return err
	}
	return s.emitStatus(ctx, tx, t, previous)
}

// notFound gives a missing payment the API's message.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Transaction not found")
	}
	return err
}
