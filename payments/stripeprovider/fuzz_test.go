package stripeprovider

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
)

// FuzzWebhook: any body is read or refused by WebhookSessionID, and
// refused by VerifyWebhook with ErrVerification unless it is a Stripe
// event signed with the secret, whose session is then the one
// WebhookSessionID reads. Never a panic.
func FuzzWebhook(f *testing.F) {
	for _, name := range []string{"payment_intent.succeeded", "charge.refunded.partial", "charge.dispute.created"} {
		f.Add(readEventFile(f, name), true)
	}
	for _, seed := range []string{`{}`, `{"type":"charge.refunded","data":{"object":{"payment_intent":{"id":"pi_1"}}}}`,
		`{"type":"payment_intent.succeeded","data":{"object":"x"}}`, `[]`, `{`, ``} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	p := New(Options{})
	f.Fuzz(func(t *testing.T, body []byte, sign bool) {
		session, sessionErr := p.WebhookSessionID(body)
		in := signed(body, testWebhookSecret, time.Now())
		if !sign {
			in.Header.Del("Stripe-Signature")
		}
		ev, err := p.VerifyWebhook(t.Context(), in)
		if err != nil {
			if !errors.Is(err, payments.ErrVerification) {
				t.Fatalf("refused with %v, want ErrVerification", err)
			}
			return
		}
		if !sign {
			t.Fatal("an unsigned body verified")
		}
		if sessionErr == nil && ev.SessionID != session {
			t.Fatalf("verified session %q, WebhookSessionID %q", ev.SessionID, session)
		}
		_ = p.MapStatus(ev.ProviderStatus, ev.EventType)
	})
}

// readEventFile is readEvent for a fuzz target's seeds.
func readEventFile(f *testing.F, name string) []byte {
	f.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		f.Fatal(err)
	}
	return b
}
