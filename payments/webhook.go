package payments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// ProcessWebhook is the job that applies a received webhook to its
// payment.
type ProcessWebhook struct {
	TenantID  string `json:"tenantId"`
	WebhookID string `json:"webhookId"`
}

// Kind implements jobs.Args.
func (ProcessWebhook) Kind() string { return "payments.webhook" }

// RegisterJobs registers the webhook processing worker on e; call it
// before e starts. Without it received webhooks are stored and never
// applied.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	err := jobs.Register(e, jobs.WorkFunc[ProcessWebhook](func(ctx context.Context, j *jobs.Job[ProcessWebhook]) error {
		return s.ApplyWebhook(ctx, j.Args.TenantID, j.Args.WebhookID)
	}), &jobs.RegisterOpts{Queue: "payments", MaxAttempts: 10, Workers: 4, Background: true})
	if err != nil {
		return err
	}
	s.jobs = e
	return nil
}

// Receive verifies a provider's webhook and stores it for processing.
// The payment it names (Provider.WebhookSessionID) tells the tenant, whose
// credentials must verify it; a webhook therefore never reaches another
// tenant's payment. It returns once the webhook is stored durably, with
// its processing job; duplicate reports a webhook whose idempotency key
// the tenant already has (stored once, processed once).
//
// An unknown provider is ErrUnknownProvider; a body the provider cannot
// read, an unknown session or a signature that does not verify is
// ErrVerification.
func (s *Service) Receive(ctx context.Context, providerKey string, header http.Header, body []byte) (duplicate bool, err error) {
	p, ok := s.providers.Get(providerKey)
	if !ok {
		return false, fmt.Errorf("%w: No webhook handler for provider: %s", ErrUnknownProvider, providerKey)
	}
	sessionID, err := p.WebhookSessionID(body)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrVerification, err)
	}
	if !store.Storable(sessionID) {
		// No payment's session id holds NUL or invalid UTF-8, so no
		// payment verifies it; refused before a lookup that one engine
		// would reject as invalid text and the other answer with nothing.
		return false, fmt.Errorf("%w: the session id must be UTF-8 text without NUL", ErrVerification)
	}
	keys := []string{p.Key()}
	if shared, ok := p.(WebhookSharer); ok {
		keys = append(keys, shared.SharesWebhooksWith()...)
	}
	var candidates []*Transaction
	for _, key := range keys {
		found, err := s.store.FindBySession(ctx, s.db, key, sessionID)
		if err != nil {
			return false, err
		}
		candidates = append(candidates, found...)
	}
	var t *Transaction
	var ev *WebhookEvent
	for _, c := range candidates {
		creds, err := s.creds.Credentials(ctx, c.TenantID, c.ProviderKey)
		if err != nil {
			return false, err
		}
		if ev, err = p.VerifyWebhook(ctx, WebhookInput{Body: body, Header: header, Credentials: creds}); err == nil {
			t = c
			break
		}
	}
	if t == nil || ev.SessionID != sessionID {
		return false, fmt.Errorf("%w: no payment of session %q verifies it", ErrVerification, sessionID)
	}
	for _, field := range []string{ev.EventType, ev.EventID, ev.ProviderStatus, ev.IdempotencyKey} {
		if !store.Storable(field) {
			return false, fmt.Errorf("%w: the event's fields must be UTF-8 text without NUL", ErrVerification)
		}
	}
	// Stored under the payment's provider, so that one event is one
	// event whichever shared route brought it.
	w := &Webhook{ID: store.NewID(), TenantID: t.TenantID, TransactionID: t.ID, ProviderKey: t.ProviderKey,
		IdempotencyKey: ev.IdempotencyKey, EventType: ev.EventType, EventID: ev.EventID, ProviderStatus: ev.ProviderStatus,
		Amount: ev.Amount, MappedStatus: p.MapStatus(ev.ProviderStatus, ev.EventType)}
	if w.IdempotencyKey == "" {
		// Without a key from the provider, the same body is the same event.
		sum := sha256.Sum256(body)
		w.IdempotencyKey = "sha256:" + hex.EncodeToString(sum[:])
	}
	var inserted bool
	s.prepareWrites(ctx)
	err = s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		w.ReceivedAt = tx.Now()
		ok, err := s.store.InsertWebhook(ctx, tx, w)
		if err != nil || !ok {
			inserted = false
			return err
		}
		inserted = true
		s.enqueueProcessing(tx, ProcessWebhook{TenantID: w.TenantID, WebhookID: w.ID})
		return nil
	})
	return !inserted, err
}

// pendingJobsKey keys, in a transaction, the processing jobs of the
// webhooks it stored.
type pendingJobsKey struct{}

// enqueueProcessing adds a webhook's processing job to tx. The jobs of a
// shared transaction's webhooks are inserted together, in one statement,
// just before it commits: River's insert costs far more to prepare than
// to run.
func (s *Service) enqueueProcessing(tx *store.Tx, job ProcessWebhook) {
	if s.jobs == nil {
		return
	}
	pending, _ := tx.Value(pendingJobsKey{}).(*[]jobs.Args)
	if pending == nil {
		pending = &[]jobs.Args{}
		tx.SetValue(pendingJobsKey{}, pending)
		tx.BeforeCommit(func(ctx context.Context) error {
			_, err := s.jobs.EnqueueManyTx(ctx, tx, *pending, nil)
			return err
		})
	}
	*pending = append(*pending, job)
}

// ApplyWebhook processes the tenant's received webhook: the status it
// reports (Provider.MapStatus) applies when the status machine allows the
// move from the payment's status (Decide), with the amounts it implies,
// and the status's event; otherwise the payment stays as it is (a late
// "authorized" never undoes a capture). Either way the webhook's outcome
// joins the payment's history. A webhook processed already is skipped.
func (s *Service) ApplyWebhook(ctx context.Context, tenantID, webhookID string) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		w, err := s.store.GetWebhook(ctx, tx, tenantID, webhookID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil || w.ProcessedAt != nil {
			return err
		}
		t, err := s.store.LockTransaction(ctx, tx, tenantID, w.TransactionID)
		if err != nil {
			return err
		}
		w.StatusBefore = t.Status
		target := w.MappedStatus
		if target == StatusRefunded && w.Amount != nil && *w.Amount < t.CapturedAmount {
			// A refund event of less than was captured (one of several
			// refunds) is a partial refund.
			target = StatusPartiallyRefunded
		}
		// The history records the status applied: its entry's statusAfter
		// is Decide(statusBefore, mappedStatus).
		w.MappedStatus = target
		next, changed := Decide(t.Status, target)
		w.Outcome = OutcomeIgnored
		if changed {
			w.Outcome = OutcomeApplied
			if err := s.applyReported(ctx, tx, t, next, w.ProviderStatus, w.Amount); err != nil {
				return err
			}
		}
		now := tx.Now()
		w.StatusAfter, w.ProcessedAt = t.Status, &now
		return s.store.FinishWebhook(ctx, tx, w)
	})
}

// applyReported moves t to next, a status its provider reported (by
// webhook or refresh), with the amounts it implies (webhookAmounts). A
// refund only the provider reports joins the refunds, so that they add up
// to the refunded amount.
func (s *Service) applyReported(ctx context.Context, tx *store.Tx, t *Transaction, next Status, gatewayStatus string, amount *int64) error {
	refunded := t.RefundedAmount
	if err := s.change(ctx, tx, t, next, gatewayStatus, nil, func() { webhookAmounts(t, next, amount) }); err != nil {
		return err
	}
	if t.RefundedAmount <= refunded {
		return nil
	}
	r := &Refund{ID: store.NewID(), TransactionID: t.ID, TenantID: t.TenantID, Amount: t.RefundedAmount - refunded,
		Currency: t.Currency, GatewayStatus: gatewayStatus, CreatedAt: tx.Now()}
	r.ProviderRefundID = r.ID
	return s.store.InsertRefund(ctx, tx, r)
}

// webhookAmounts sets the captured and refunded amounts a webhook's
// status implies: a capture without an amount is of the whole payment, a
// refund without one of what was captured.
func webhookAmounts(t *Transaction, status Status, amount *int64) {
	of := func(def int64) int64 {
		if amount == nil {
			return def
		}
		return *amount
	}
	switch status {
	case StatusCaptured:
		t.CapturedAmount = t.Amount
	case StatusPartiallyCaptured:
		t.CapturedAmount = max(t.CapturedAmount, min(of(t.Amount), t.Amount))
	case StatusRefunded:
		if t.CapturedAmount == 0 {
			t.CapturedAmount = t.Amount
		}
		t.RefundedAmount = t.CapturedAmount
	case StatusPartiallyRefunded:
		t.RefundedAmount = max(t.RefundedAmount, min(of(t.CapturedAmount), t.CapturedAmount))
	}
}
