// Package paymentsapi is the payment gateways area as a Kit and its HTTP
// API take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *payments.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: payment sessions, capture,
// refund, cancel, status, the transaction lists and the providers'
// webhooks.
//
// # Decisions
//
// It is built on the integrations area, added with it: a tenant's
// credentials stored in the provider's gateway integration
// (gateway_<provider>; the two mock providers share gateway_mock) win
// over payments.Options.Credentials, and provider calls are logged under
// that integration.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package paymentsapi
