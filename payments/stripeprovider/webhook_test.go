package stripeprovider

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/tenantkit/tenantkit/payments"
)

const testWebhookSecret = "whsec_test_tenantA"

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed returns body's webhook input signed with secret at ts.
func signed(body []byte, secret string, ts time.Time) payments.WebhookInput {
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	h := http.Header{}
	h.Set("Stripe-Signature", sp.Header)
	return payments.WebhookInput{Body: body, Header: h, Credentials: payments.Credentials{
		CredSecretKey: testKey, CredWebhookSecret: testWebhookSecret,
	}}
}

func amount(n int64) *int64 { return &n }

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	p := New(Options{})
	tests := []struct {
		file   string
		want   payments.WebhookEvent
		mapped payments.Status
	}{
		{"payment_intent.succeeded", payments.WebhookEvent{EventType: "payment_intent.succeeded", EventID: "evt_pi_succeeded",
			SessionID: "pi_3Abc", ProviderStatus: "succeeded", Amount: amount(2000), IdempotencyKey: "evt_pi_succeeded"},
			payments.StatusCaptured},
		{"payment_intent.amount_capturable_updated", payments.WebhookEvent{EventType: "payment_intent.amount_capturable_updated",
			EventID: "evt_pi_capturable", SessionID: "pi_3Man", ProviderStatus: "requires_capture", Amount: amount(0),
			IdempotencyKey: "evt_pi_capturable"}, payments.StatusAuthorized},
		{"charge.refunded.partial", payments.WebhookEvent{EventType: "charge.refunded", EventID: "evt_ch_refunded_partial",
			SessionID: "pi_3Abc", ProviderStatus: "partially_refunded", Amount: amount(500), IdempotencyKey: "evt_ch_refunded_partial"},
			payments.StatusPartiallyRefunded},
		{"charge.refunded.full", payments.WebhookEvent{EventType: "charge.refunded", EventID: "evt_ch_refunded_full",
			SessionID: "pi_3Abc", ProviderStatus: "refunded", Amount: amount(2000), IdempotencyKey: "evt_ch_refunded_full"},
			payments.StatusRefunded},
		{"charge.dispute.created", payments.WebhookEvent{EventType: "charge.dispute.created", EventID: "evt_dispute_created",
			SessionID: "pi_3Abc", ProviderStatus: "needs_response", IdempotencyKey: "evt_dispute_created"},
			payments.StatusFailed},
		{"charge.refund.updated", payments.WebhookEvent{EventType: "charge.refund.updated", EventID: "evt_refund_updated",
			SessionID: "pi_3Abc", ProviderStatus: "succeeded", IdempotencyKey: "evt_refund_updated"},
			payments.StatusRefunded},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			body := readEvent(t, tt.file)
			ev, err := p.VerifyWebhook(context.Background(), signed(body, testWebhookSecret, time.Now()))
			is.NoErr(err)
			is.Equal(ev.Amount == nil, tt.want.Amount == nil)
			if ev.Amount != nil {
				is.Equal(*ev.Amount, *tt.want.Amount)
			}
			ev.Amount, tt.want.Amount = nil, nil
			is.Equal(*ev, tt.want)
			is.Equal(p.MapStatus(ev.ProviderStatus, ev.EventType), tt.mapped)

			id, err := p.WebhookSessionID(body)
			is.NoErr(err)
			is.Equal(id, tt.want.SessionID)
		})
	}
}

func TestVerifyWebhookRejects(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p := New(Options{})
	ctx := context.Background()
	body := readEvent(t, "payment_intent.succeeded")

	// Signed with another tenant's secret.
	_, err := p.VerifyWebhook(ctx, signed(body, "whsec_other_tenant", time.Now()))
	is.True(errors.Is(err, payments.ErrVerification))

	// Tampered after signing.
	in := signed(body, testWebhookSecret, time.Now())
	in.Body = []byte(strings.Replace(string(body), `"amount_received": 2000`, `"amount_received": 1`, 1))
	is.True(string(in.Body) != string(body))
	_, err = p.VerifyWebhook(ctx, in)
	is.True(errors.Is(err, payments.ErrVerification))

	// Signed too long ago (a replay).
	_, err = p.VerifyWebhook(ctx, signed(body, testWebhookSecret, time.Now().Add(-10*time.Minute)))
	is.True(errors.Is(err, payments.ErrVerification))
	// ... unless the tolerance allows it.
	_, err = New(Options{WebhookTolerance: time.Hour}).VerifyWebhook(ctx, signed(body, testWebhookSecret, time.Now().Add(-10*time.Minute)))
	is.NoErr(err)

	// No signature header.
	in = signed(body, testWebhookSecret, time.Now())
	in.Header = http.Header{}
	_, err = p.VerifyWebhook(ctx, in)
	is.True(errors.Is(err, payments.ErrVerification))

	// No webhook secret: nothing to verify with.
	in = signed(body, testWebhookSecret, time.Now())
	delete(in.Credentials, CredWebhookSecret)
	_, err = p.VerifyWebhook(ctx, in)
	is.True(errors.Is(err, payments.ErrVerification))

	// Well signed but not an event.
	_, err = p.VerifyWebhook(ctx, signed([]byte(`{"hello":"world"}`), testWebhookSecret, time.Now()))
	is.True(errors.Is(err, payments.ErrVerification))
	_, err = p.VerifyWebhook(ctx, signed([]byte(`not json`), testWebhookSecret, time.Now()))
	is.True(errors.Is(err, payments.ErrVerification))
}

func TestWebhookSessionID(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p := New(Options{})
	for body, want := range map[string]string{
		`{"type":"payment_intent.created","data":{"object":{"id":"pi_1","object":"payment_intent"}}}`:                "pi_1",
		`{"type":"payment_intent.payment_failed","data":{"object":{"id":"pi_2","payment_intent":"pi_other"}}}`:       "pi_2",
		`{"type":"charge.succeeded","data":{"object":{"id":"ch_1","payment_intent":"pi_3"}}}`:                        "pi_3",
		`{"type":"charge.dispute.closed","data":{"object":{"id":"dp_1","payment_intent":"pi_4"}}}`:                   "pi_4",
		`{"type":"charge.refund.updated","data":{"object":{"id":"re_1","payment_intent":{"id":"pi_5"}}}}`:            "pi_5",
		`{"type":"refund.updated","data":{"object":{"id":"re_2","object":"refund","payment_intent":"pi_6"}}}`:        "pi_6",
		`{"id":"evt_1","type":"charge.refunded","data":{"object":{"id":"ch_2","payment_intent":"pi_7","amount":1}}}`: "pi_7",
	} {
		got, err := p.WebhookSessionID([]byte(body))
		is.NoErr(err)
		is.Equal(got, want)
	}
	for _, body := range []string{
		``,
		`not json`,
		`[]`,
		`{"type":"charge.succeeded"}`,
		`{"data":{"object":{"id":"pi_1"}}}`,
		`{"type":"charge.succeeded","data":{"object":{"id":"ch_1","payment_intent":null}}}`,
		`{"type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent"}}}`,
		`{"type":"payment_intent.succeeded","data":{"object":"pi_1"}}`,
		string(readEvent(t, "customer.created")),
	} {
		_, err := p.WebhookSessionID([]byte(body))
		is.True(err != nil) // body
	}
}

func TestMapStatus(t *testing.T) {
	t.Parallel()
	p := New(Options{})
	tests := []struct {
		status, event string
		want          payments.Status
	}{
		// By event type first, whatever the status.
		{"succeeded", "payment_intent.succeeded", payments.StatusCaptured},
		{"requires_payment_method", "payment_intent.payment_failed", payments.StatusFailed},
		{"canceled", "payment_intent.canceled", payments.StatusCancelled},
		{"requires_action", "payment_intent.requires_action", payments.StatusPending},
		{"requires_capture", "payment_intent.amount_capturable_updated", payments.StatusAuthorized},
		{"refunded", "charge.refunded", payments.StatusRefunded},
		{"succeeded", "charge.refunded", payments.StatusRefunded},
		{"partially_refunded", "charge.refunded", payments.StatusPartiallyRefunded},
		{"succeeded", "charge.refund.updated", payments.StatusRefunded},
		{"partially_refunded", "charge.refund.updated", payments.StatusRefunded},
		{"needs_response", "charge.dispute.created", payments.StatusFailed},
		{"won", "charge.dispute.closed", payments.StatusCaptured},
		{"", "payment_intent.succeeded", payments.StatusCaptured},
		// Otherwise by PaymentIntent status.
		{"requires_payment_method", "", payments.StatusPending},
		{"requires_confirmation", "", payments.StatusPending},
		{"requires_action", "", payments.StatusPending},
		{"processing", "", payments.StatusPending},
		{"requires_capture", "", payments.StatusAuthorized},
		{"succeeded", "", payments.StatusCaptured},
		{"canceled", "", payments.StatusCancelled},
		{"processing", "payment_intent.processing", payments.StatusPending},
		{"requires_capture", "payment_intent.created", payments.StatusAuthorized},
		{"succeeded", "charge.succeeded", payments.StatusCaptured},
		{"partially_refunded", "", payments.StatusUnknown},
		{"needs_response", "", payments.StatusUnknown},
		{"", "", payments.StatusUnknown},
		{"", "customer.created", payments.StatusUnknown},
	}
	for _, tt := range tests {
		if got := p.MapStatus(tt.status, tt.event); got != tt.want {
			t.Errorf("MapStatus(%q, %q) = %q, want %q", tt.status, tt.event, got, tt.want)
		}
	}
}
