// Package integrationsapi is the integrations area as a Kit and its HTTP
// API take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *integrations.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: the integration catalogue,
// each tenant's state, API version and credentials, and the integration
// log.
//
// # Decisions
//
// It is built on no other area. Once the Kit's areas are built (Wire),
// the catalogue gets the built-in integrations of the areas present
// (IntegrationGatewayMock and IntegrationGatewayStripe when the payments
// area has those providers, IntegrationWebhooks,
// IntegrationSyncHTTPJSON); it learns of the payment providers through
// the payments area's HasProvider, without importing it.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package integrationsapi
