package payments

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEventDataAsMarshaled: the events' payload written by hand is, byte
// for byte, what json.Marshal writes for the same object (the form the
// area's events had), for every currency's minor units, a status change
// or none, and text that JSON escapes.
func TestEventDataAsMarshaled(t *testing.T) {
	for _, c := range []struct {
		t        Transaction
		previous Status
	}{
		{Transaction{ID: "5f0c6d1e-0000-4000-8000-000000000001", PaymentID: "p1", ProviderKey: "mock", SessionID: "mock_pi_1",
			Status: StatusCaptured, Amount: 1999, CapturedAmount: 1999, Currency: "USD"}, StatusPending},
		{Transaction{ID: "t2", PaymentID: "p2", ProviderKey: "stripe", SessionID: "pi_<&>\u2028\"\\é",
			Status: StatusPartiallyRefunded, Amount: 1000, CapturedAmount: 1000, RefundedAmount: 5, Currency: "JPY"}, StatusCaptured},
		{Transaction{ID: "t3", PaymentID: "p3", ProviderKey: "my\tprovider", SessionID: "s", Status: StatusPending,
			Amount: 1, Currency: "KWD"}, ""},
		{Transaction{ID: "t4", Status: StatusFailed, Amount: 123456789012, Currency: "CLF"}, StatusAuthorized},
	} {
		data := map[string]any{
			"transactionId":  c.t.ID,
			"paymentId":      c.t.PaymentID,
			"providerKey":    c.t.ProviderKey,
			"sessionId":      c.t.SessionID,
			"status":         c.t.Status,
			"amount":         FormatAmount(c.t.Amount, c.t.Currency),
			"amountReceived": FormatAmount(c.t.CapturedAmount, c.t.Currency),
			"refundedAmount": FormatAmount(c.t.RefundedAmount, c.t.Currency),
			"currencyCode":   c.t.Currency,
		}
		if c.previous != "" {
			data["previousStatus"] = c.previous
		}
		want, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEventData(nil, &c.t, c.previous); !bytes.Equal(got, want) {
			t.Errorf("appendEventData:\n got %s\nwant %s", got, want)
		}
	}
}
