package payments_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
)

// quiet is a logger that drops everything (the refusals tests provoke).
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// secretOf is the mock webhook secret of a tenant: every tenant has its
// own.
func secretOf(tenantID string) string { return "whsec_" + tenantID }

// tenantSecrets gives every tenant its own mock webhook secret.
var tenantSecrets = payments.CredentialFunc(func(_ context.Context, tenantID, _ string) (payments.Credentials, error) {
	return payments.Credentials{"webhookSecret": secretOf(tenantID)}, nil
})

// newService returns a Kit-less service over db (no job engine: received
// webhooks wait for ApplyWebhook) with per-tenant secrets, quiet.
func newService(db *store.DB, opts payments.Options) *payments.Service {
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	if opts.Credentials == nil {
		opts.Credentials = tenantSecrets
	}
	return must(payments.New(db, opts))
}

// tenant is a tenant of the test acting in an organization of its own.
type tenant struct {
	id, org string
	ctx     context.Context
}

func newTenant(t testing.TB) tenant {
	tn := tenant{id: store.NewID(), org: store.NewID()}
	tn.ctx = store.WithScope(t.Context(), store.Scope{TenantID: tn.id, OrganizationID: tn.org})
	return tn
}

// mockEvent is a mock webhook body: id, type and data {id, status,
// amount (minor units) when not nil}.
func mockEvent(id, sessionID string, status payments.Status, amount *int64) []byte {
	data := map[string]any{"id": sessionID, "status": string(status)}
	if amount != nil {
		data["amount"] = *amount
	}
	b, err := json.Marshal(map[string]any{"id": id, "type": "payment." + string(status), "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

// signed is the header of a mock webhook body signed with secret.
func signed(body []byte, secret string) http.Header {
	h := http.Header{}
	h.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
	return h
}

// session opens a payment of amount (a decimal) USD at provider with the
// capture method, failing the test on an error.
func session(t testing.TB, svc *payments.Service, tn tenant, provider, amount, method string) *payments.Session {
	t.Helper()
	s, err := svc.CreateSession(tn.ctx, payments.SessionRequest{ProviderKey: provider, Amount: json.Number(amount),
		CurrencyCode: "USD", CaptureMethod: method, Description: "test"})
	if err != nil {
		t.Fatalf("CreateSession %s %s %s: %v", provider, amount, method, err)
	}
	return s
}
