package payments_test

import (
	"errors"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestNULRefused: text PostgreSQL cannot store (U+0000) is refused with
// the field named on both engines, never a 5xx; a verified webhook whose
// fields hold it is refused as unverifiable, and nothing is stored.
func TestNULRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(db, payments.Options{})
		tn := newTenant(t)
		field := func(err error) string {
			t.Helper()
			var ve *store.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 {
				t.Fatalf("err %v, want one field refused", err)
			}
			for f := range ve.Fields {
				return f
			}
			return ""
		}
		base := payments.SessionRequest{ProviderKey: payments.KeyMock, Amount: "10", CurrencyCode: "USD", CaptureMethod: payments.CaptureManual}
		withDesc, withMeta := base, base
		withDesc.Description = "a\x00b"
		withMeta.Metadata = map[string]any{"k": []any{"x\x00"}}
		for want, req := range map[string]payments.SessionRequest{"description": withDesc, "metadata": withMeta} {
			if _, err := svc.CreateSession(tn.ctx, req); field(err) != want {
				t.Errorf("session with NUL in %s: %v", want, err)
			}
		}
		s := session(t, svc, tn, payments.KeyMock, "10", payments.CaptureAutomatic)
		if _, err := svc.Refund(tn.ctx, payments.RefundRequest{TransactionID: s.TransactionID, Reason: "x\x00"}); field(err) != "reason" {
			t.Errorf("refund reason with NUL: %v", err)
		}
		if _, err := svc.Refund(tn.ctx, payments.RefundRequest{TransactionID: s.TransactionID, OperationID: "op\x00"}); field(err) != "operationId" {
			t.Errorf("operationId with NUL: %v", err)
		}

		p := session(t, svc, tn, payments.KeyMockProcessing, "10", "")
		body := mockEvent("evt_\u0000", p.SessionID, payments.StatusCaptured, nil)
		if _, err := svc.Receive(t.Context(), payments.KeyMockProcessing, signed(body, secretOf(tn.id)), body); !errors.Is(err, payments.ErrVerification) {
			t.Errorf("webhook with NUL in its id: %v, want ErrVerification", err)
		}
		d, err := svc.GetDetail(tn.ctx, p.TransactionID)
		if err != nil || len(d.Webhooks) != 0 {
			t.Errorf("detail %v, %+v: want no webhook stored", err, d)
		}
	}, payments.Migrations)
}
