package paymentsapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
)

// TestSessionWrittenJSON: a session's answer written by hand is, byte for
// byte, what apikit.Encode (a json.Encoder) wrote for it: with and
// without the optional fields, provider data of every JSON kind, and
// text that JSON escapes.
func TestSessionWrittenJSON(t *testing.T) {
	secret, redirect := "mock_secret_<&>", "https://pay.example.com/c?a=1&b=\u2028é"
	for _, s := range []payments.Session{
		{TransactionID: "5f0c6d1e-0000-4000-8000-000000000001", SessionID: "mock_pi_1", ProviderKey: "mock",
			ClientSecret: &secret, ProviderData: map[string]any{"mockPaymentIntentId": "mock_pi_1"}, Status: payments.StatusCaptured,
			PaymentID: "5f0c6d1e-0000-4000-8000-000000000002"},
		{TransactionID: "t2", SessionID: "cs_\"quoted\"\\", ProviderKey: "stripe", RedirectURL: &redirect, Status: payments.StatusPending},
		{TransactionID: "t3", ProviderData: map[string]any{"n": 1.5, "b": true, "z": nil, "list": []any{"x", 2.0},
			"nested": map[string]any{"k": "<v>"}}, Status: payments.StatusAuthorized},
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(s); err != nil {
			t.Fatal(err)
		}
		got, err := appendSession(nil, &s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendSession:\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
