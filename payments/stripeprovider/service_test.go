package stripeprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestThroughTheService runs the provider inside the payments Service, on
// both engines, against the stateful fake: a manual-capture session, the
// customer's confirmation reported by a signed webhook, a partial
// capture, partial refunds, and Stripe's own refund webhook. Two tenants
// share the fake Stripe account but not their webhook secrets: one
// tenant's signature never moves the other's payment.
func TestThroughTheService(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := context.Background()
		fake := newFakeStripe(testKey)
		secrets := map[string]string{}
		creds := payments.CredentialFunc(func(_ context.Context, tenantID, _ string) (payments.Credentials, error) {
			return payments.Credentials{CredSecretKey: testKey, CredPublishableKey: "pk_test_" + tenantID,
				CredWebhookSecret: secrets[tenantID]}, nil
		})
		svc := must(payments.New(db, payments.Options{Providers: payments.NewRegistry(New(Options{Backend: fake})), Credentials: creds}))
		tenantA, tenantB := store.NewID(), store.NewID()
		secrets[tenantA], secrets[tenantB] = "whsec_A_"+tenantA, "whsec_B_"+tenantB
		ctxA := store.WithScope(ctx, store.Scope{TenantID: tenantA})

		s, err := svc.CreateSession(ctxA, payments.SessionRequest{ProviderKey: "stripe", Amount: "20.00", CurrencyCode: "eur",
			CaptureMethod: payments.CaptureManual})
		is.NoErr(err)
		is.Equal(s.Status, payments.StatusPending) // requires_payment_method until the customer confirms
		is.True(s.ClientSecret != nil && *s.ClientSecret == s.SessionID+"_secret_fake")
		is.Equal(s.ProviderData["paymentIntentId"], s.SessionID)
		is.Equal(s.ProviderData["publishableKey"], "pk_test_"+tenantA)

		// Capturing before the customer pays is the provider's refusal.
		_, err = svc.Capture(ctxA, payments.CaptureRequest{TransactionID: s.TransactionID})
		is.True(errors.Is(err, payments.ErrDeclined))

		// The customer confirms; Stripe says so with a webhook.
		fake.confirm(s.SessionID)
		event := func(id, typ, object string) []byte {
			return fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2025-01-27","type":%q,"data":{"object":%s}}`, id, typ, object)
		}
		send := func(body []byte, secret string) error {
			sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
			h := http.Header{}
			h.Set("Stripe-Signature", sp.Header)
			dup, err := svc.Receive(ctx, "stripe", h, body)
			if err != nil || dup {
				return fmt.Errorf("receive: duplicate %v, %w", dup, err)
			}
			d, err := svc.GetDetail(ctxA, s.TransactionID)
			if err != nil {
				return err
			}
			last := d.Webhooks[len(d.Webhooks)-1]
			return svc.ApplyWebhook(ctx, tenantA, last.ID)
		}
		authorized := event("evt_auth", "payment_intent.amount_capturable_updated",
			fmt.Sprintf(`{"id":%q,"object":"payment_intent","status":"requires_capture","amount":2000,"amount_received":0}`, s.SessionID))
		is.True(errors.Is(send(authorized, secrets[tenantB]), payments.ErrVerification)) // tenant B's secret
		is.NoErr(send(authorized, secrets[tenantA]))
		st, err := svc.Status(ctxA, s.TransactionID)
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusAuthorized)

		// A partial capture, then two partial refunds.
		c, err := svc.Capture(ctxA, payments.CaptureRequest{TransactionID: s.TransactionID, Amount: "15"})
		is.NoErr(err)
		is.Equal(c.Status, payments.StatusPartiallyCaptured)
		is.Equal(string(c.CapturedAmount), "15")
		// Stripe then says succeeded, with 15 of 20 received: by refresh
		// and by webhook, still a partial capture of 15, not the whole.
		st, err = svc.Refresh(ctxA, payments.RefreshRequest{TransactionID: s.TransactionID})
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusPartiallyCaptured)
		is.Equal(string(st.AmountReceived), "15")
		succeeded := event("evt_succ", "payment_intent.succeeded",
			fmt.Sprintf(`{"id":%q,"object":"payment_intent","status":"succeeded","amount":2000,"amount_received":1500}`, s.SessionID))
		is.NoErr(send(succeeded, secrets[tenantA]))
		st, err = svc.Status(ctxA, s.TransactionID)
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusPartiallyCaptured)
		is.Equal(string(st.AmountReceived), "15")

		r, err := svc.Refund(ctxA, payments.RefundRequest{TransactionID: s.TransactionID, Amount: "5", Reason: "duplicate"})
		is.NoErr(err)
		is.Equal(r.Status, payments.StatusPartiallyRefunded)
		n, total := fake.refundTotal(s.SessionID)
		is.Equal(n, 1)
		is.Equal(total, int64(500))
		// More than is left is refused before Stripe is asked.
		_, err = svc.Refund(ctxA, payments.RefundRequest{TransactionID: s.TransactionID, Amount: "10.01"})
		is.True(errors.Is(err, store.ErrConflict))
		n, _ = fake.refundTotal(s.SessionID)
		is.Equal(n, 1)

		// Stripe's charge.refunded of the first refund (500 of 1500) is a
		// partial refund; the payment stays partially refunded.
		partial := event("evt_ref1", "charge.refunded", fmt.Sprintf(
			`{"id":"ch_1","object":"charge","payment_intent":%q,"status":"succeeded","amount":1500,"amount_refunded":500,"refunded":false}`, s.SessionID))
		is.NoErr(send(partial, secrets[tenantA]))
		st, err = svc.Status(ctxA, s.TransactionID)
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusPartiallyRefunded)

		r, err = svc.Refund(ctxA, payments.RefundRequest{TransactionID: s.TransactionID})
		is.NoErr(err)
		is.Equal(r.Status, payments.StatusRefunded)
		is.Equal(string(r.RefundedAmount), "10")
		_, total = fake.refundTotal(s.SessionID)
		is.Equal(total, int64(1500))

		d, err := svc.GetDetail(ctxA, s.TransactionID)
		is.NoErr(err)
		is.Equal(len(d.Refunds), 2)
		is.Equal(len(d.Webhooks), 3)
		is.Equal(d.Webhooks[0].Outcome, payments.OutcomeApplied)
		is.Equal(d.Webhooks[1].Outcome, payments.OutcomeIgnored) // succeeded, partially: no change
		is.Equal(d.RefundedAmount, int64(1500))
		is.Equal(d.CapturedAmount, int64(1500))

		// Without webhooks, a refresh after the customer's confirmation
		// reads the state from Stripe: automatic capture, so captured.
		auto, err := svc.CreateSession(ctxA, payments.SessionRequest{ProviderKey: "stripe", Amount: "7.5", CurrencyCode: "USD"})
		is.NoErr(err)
		st, err = svc.Refresh(ctxA, payments.RefreshRequest{TransactionID: auto.TransactionID})
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusPending) // not paid yet
		fake.confirm(auto.SessionID)
		st, err = svc.Refresh(ctxA, payments.RefreshRequest{TransactionID: auto.TransactionID})
		is.NoErr(err)
		is.Equal(st.Status, payments.StatusCaptured)
		is.Equal(st.GatewayStatus, "succeeded")
		is.Equal(string(st.AmountReceived), "7.5")

		// Tenant B sees none of it.
		_, err = svc.Status(store.WithScope(ctx, store.Scope{TenantID: tenantB}), s.TransactionID)
		is.True(errors.Is(err, store.ErrNotFound))
	}, payments.Migrations)
}
