package integrationsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/integrations"
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
	{tenantkit.AreaPayments, integrations.Definition{
		ID: IntegrationGatewayMock, Title: "Mock payment gateway", Category: "payment", Hub: "payment_gateways", ProviderKey: "mock",
		Description: "A gateway for development and tests: sessions succeed at once (mock) or wait for a webhook (mock_processing).",
		Credentials: []integrations.Field{{Key: "webhookSecret", Label: "Webhook signing secret", Type: integrations.FieldSecret}},
	}},
	{tenantkit.AreaPayments, integrations.Definition{
		ID: IntegrationGatewayStripe, Title: "Stripe", Category: "payment", Hub: "payment_gateways", ProviderKey: "stripe",
		Description: "Card payments through Stripe PaymentIntents.",
		Credentials: []integrations.Field{
			{Key: "secretKey", Label: "Secret key", Type: integrations.FieldSecret, Required: true},
			{Key: "publishableKey", Label: "Publishable key", Type: integrations.FieldText, Required: true},
			{Key: "webhookSecret", Label: "Webhook signing secret", Type: integrations.FieldSecret},
		},
	}},
	{tenantkit.AreaWebhooks, integrations.Definition{
		ID: IntegrationWebhooks, Title: "Custom webhooks", Category: "webhook", Hub: "webhook_endpoints",
		Description: "Outbound webhooks of the tenant's domain events.",
	}},
	{tenantkit.AreaDataSync, integrations.Definition{
		ID: IntegrationSyncHTTPJSON, Title: "HTTP JSON source", Category: "data_sync", Hub: "data_sync", ProviderKey: IntegrationSyncHTTPJSON,
		Description: "Imports and exports custom entity records from and to an HTTP API speaking JSON.",
		APIVersions: []integrations.APIVersion{{ID: "v1", Label: "v1", Status: "stable", Default: true}},
		Credentials: []integrations.Field{
			{Key: "baseUrl", Label: "Base URL", Type: integrations.FieldURL, Required: true},
			{Key: "token", Label: "Bearer token", Type: integrations.FieldSecret},
		},
	}},
}

// registerBuiltins registers the built-in integrations of the areas the
// Kit has, a payment gateway's only when the payments area has its
// provider (Stripe's with package full), so the catalogue offers no
// gateway that cannot take a payment.
func registerBuiltins(k *tenantkit.Kit, svc *integrations.Service) error {
	present := map[string]bool{}
	for _, m := range k.Modules() {
		present[m.Name()] = true
	}
	for _, d := range builtinIntegrations {
		if !present[d.area] {
			continue
		}
		if d.Hub == "payment_gateways" && !hasProvider(k, d.ProviderKey) {
			continue
		}
		if err := svc.Register(d.Definition); err != nil {
			return err
		}
	}
	return nil
}

// providers is the payments area as the catalogue sees it.
type providers interface {
	HasProvider(key string) bool
}

// hasProvider reports whether the Kit's payments area takes payments
// through the provider key.
func hasProvider(k *tenantkit.Kit, key string) bool {
	for _, a := range k.Areas() {
		if p, ok := a.(providers); ok {
			return p.HasProvider(key)
		}
	}
	return false
}
