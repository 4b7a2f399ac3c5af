package paymentsapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
)

// gatewayIntegration names the integration holding a payment provider's
// credentials: gateway_<key>, the two mock providers sharing gateway_mock.
func gatewayIntegration(providerKey string) string {
	if providerKey == payments.KeyMockProcessing {
		providerKey = payments.KeyMock
	}
	return "gateway_" + providerKey
}

// integrationCredentials is the payments area's CredentialSource over the
// tenant's credentials of the provider's gateway integration (string
// values only; a provider without an integration has none).
func integrationCredentials(svc *integrations.Service) payments.CredentialSource {
	return payments.CredentialFunc(func(ctx context.Context, tenantID, providerKey string) (payments.Credentials, error) {
		values, err := svc.Values(ctx, tenantID, gatewayIntegration(providerKey))
		if errors.Is(err, store.ErrNotFound) {
			return payments.Credentials{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("payments: credentials of %s: %w", providerKey, err)
		}
		out := payments.Credentials{}
		for k, v := range values {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out, nil
	})
}

// paymentsLog writes the payments area's integration log lines under the
// provider's gateway integration (providers without one log nothing).
func paymentsLog(svc *integrations.Service) func(context.Context, store.Querier, payments.IntegrationLogEntry) error {
	return func(ctx context.Context, q store.Querier, e payments.IntegrationLogEntry) error {
		id := gatewayIntegration(e.ProviderKey)
		if _, ok := svc.Definition(id); !ok {
			return nil
		}
		entry := integrations.LogEntry{IntegrationID: id, Level: e.Level, Message: e.Message, Payload: e.Payload}
		if e.Code != "" {
			entry.Code = &e.Code
		}
		if e.TransactionID != "" {
			kind := "payment_transaction"
			entry.EntityType, entry.EntityID = &kind, &e.TransactionID
		}
		return svc.LogTx(store.WithScope(ctx, store.Scope{TenantID: e.TenantID}), q, entry)
	}
}
