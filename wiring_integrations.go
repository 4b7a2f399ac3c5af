package tenantkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
)

// Built-in integrations the Kit registers.
const (
	IntegrationGatewayMock   = "gateway_mock"
	IntegrationGatewayStripe = "gateway_stripe"
	IntegrationWebhooks      = "webhooks_custom"
	IntegrationSyncHTTPJSON  = "sync_http_json"
)

// builtinIntegrations are the Kit's integrations, each with the area it
// serves: the payment gateways (whose credentials the payments area
// reads), the custom webhooks and the HTTP JSON data source. The Kit
// registers those whose area it has.
var builtinIntegrations = []struct {
	area string
	integrations.Definition
}{
	{AreaPayments, integrations.Definition{
		ID: IntegrationGatewayMock, Title: "Mock payment gateway", Category: "payment", Hub: "payment_gateways", ProviderKey: payments.KeyMock,
		Description: "A gateway for development and tests: sessions succeed at once (mock) or wait for a webhook (mock_processing).",
		Credentials: []integrations.Field{{Key: "webhookSecret", Label: "Webhook signing secret", Type: integrations.FieldSecret}},
	}},
	{AreaPayments, integrations.Definition{
		ID: IntegrationGatewayStripe, Title: "Stripe", Category: "payment", Hub: "payment_gateways", ProviderKey: "stripe",
		Description: "Card payments through Stripe PaymentIntents.",
		Credentials: []integrations.Field{
			{Key: "secretKey", Label: "Secret key", Type: integrations.FieldSecret, Required: true},
			{Key: "publishableKey", Label: "Publishable key", Type: integrations.FieldText, Required: true},
			{Key: "webhookSecret", Label: "Webhook signing secret", Type: integrations.FieldSecret},
		},
	}},
	{AreaWebhooks, integrations.Definition{
		ID: IntegrationWebhooks, Title: "Custom webhooks", Category: "webhook", Hub: "webhook_endpoints",
		Description: "Outbound webhooks of the tenant's domain events.",
	}},
	{AreaDataSync, integrations.Definition{
		ID: IntegrationSyncHTTPJSON, Title: "HTTP JSON source", Category: "data_sync", Hub: "data_sync", ProviderKey: IntegrationSyncHTTPJSON,
		Description: "Imports and exports custom entity records from and to an HTTP API speaking JSON.",
		APIVersions: []integrations.APIVersion{{ID: "v1", Label: "v1", Status: "stable", Default: true}},
		Credentials: []integrations.Field{
			{Key: "baseUrl", Label: "Base URL", Type: integrations.FieldURL, Required: true},
			{Key: "token", Label: "Bearer token", Type: integrations.FieldSecret},
		},
	}},
}

// registerIntegrations registers the built-in integrations of the areas
// the Kit has, a payment gateway's only when the payments area has its
// provider (Stripe's with package full), so the catalogue offers no
// gateway that cannot take a payment.
func (k *Kit) registerIntegrations() error {
	if k.Integrations == nil {
		return nil
	}
	present := map[string]bool{}
	for _, a := range k.areas {
		present[a.Name()] = true
	}
	for _, d := range builtinIntegrations {
		if !present[d.area] {
			continue
		}
		if d.Hub == "payment_gateways" && !k.hasProvider(d.ProviderKey) {
			continue
		}
		if err := k.Integrations.Register(d.Definition); err != nil {
			return err
		}
	}
	return nil
}

// hasProvider reports whether the payments area takes payments through
// the provider key.
func (k *Kit) hasProvider(key string) bool {
	if k.Payments == nil {
		return false
	}
	_, ok := k.Payments.Providers().Get(key)
	return ok
}

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
			return nil, fmt.Errorf("tenantkit: credentials of %s: %w", providerKey, err)
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
