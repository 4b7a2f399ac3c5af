package payments_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
)

// FuzzParseAmount: any text is either refused or read as an amount that
// formats back to the same minor units; never a panic.
func FuzzParseAmount(f *testing.F) {
	for _, seed := range []string{"10", "10.5", "0.001", "1e2", "1.5e-1", "-1", "0", "1e999999", "1e-999999",
		"9999999999999999999999", "0x10", "1/2", "", "NaN", "1.", ".5", "00012.3400"} {
		f.Add(seed, "USD")
		f.Add(seed, "JPY")
		f.Add(seed, "KWD")
	}
	f.Fuzz(func(t *testing.T, text, currency string) {
		minor, msg := payments.ParseAmount(json.Number(text), currency)
		if msg != "" {
			return
		}
		if minor <= 0 {
			t.Fatalf("ParseAmount(%q) = %d, accepted a non-positive amount", text, minor)
		}
		back, msg := payments.ParseAmount(payments.FormatAmount(minor, currency), currency)
		if msg != "" || back != minor {
			t.Fatalf("ParseAmount(%q) = %d, formats as %s, reads back as %d (%s)", text, minor,
				payments.FormatAmount(minor, currency), back, msg)
		}
	})
}

// FuzzMockWebhook: any body, signed or not, is verified or refused with
// ErrVerification; a verified one names the session WebhookSessionID
// read. Never a panic.
func FuzzMockWebhook(f *testing.F) {
	for _, seed := range []string{`{"id":"evt_1","type":"payment.captured","data":{"id":"mock_pi_1","status":"captured"}}`,
		`{"id":"evt_1","data":{"id":"mock_pi_1","status":"captured","amount":150}}`, `{"data":{"id":""}}`, `{"data":{"amount":-1,"id":"x"}}`,
		`{"data":{"amount":1.5,"id":"x"}}`, `null`, `[]`, `{`, ``} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	m := payments.NewMock(payments.KeyMock)
	const secret = "whsec_fuzz"
	f.Fuzz(func(t *testing.T, body []byte, sign bool) {
		h := http.Header{}
		if sign {
			h.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
		}
		ev, err := m.VerifyWebhook(t.Context(), payments.WebhookInput{Body: body, Header: h,
			Credentials: payments.Credentials{"webhookSecret": secret}})
		if err != nil {
			if !errors.Is(err, payments.ErrVerification) {
				t.Fatalf("refused with %v, want ErrVerification", err)
			}
			return
		}
		if !sign {
			t.Fatal("an unsigned body verified")
		}
		session, err := m.WebhookSessionID(body)
		if err != nil || session != ev.SessionID {
			t.Fatalf("verified session %q, WebhookSessionID %q, %v", ev.SessionID, session, err)
		}
		if ev.Amount != nil && *ev.Amount < 0 {
			t.Fatalf("a negative amount verified: %d", *ev.Amount)
		}
	})
}
