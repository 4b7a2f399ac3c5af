// Package webhooksapi is the webhooks area as a Kit and its HTTP API take
// it: Area returns its module, for tenantkit.Config.Areas. The module
// builds the area's service (a *webhooks.Service, which tenantkit.AreaOf
// returns), connects it to the Kit's other areas, and gives
// httpapi.Handler the area's routes: outbound webhooks (CRUD, secret
// rotation, test sends, the delivery log, the event catalogue, the
// delivery queues) and inbound webhook endpoints.
//
// # Decisions
//
// It is built on no other area. When the Kit has the integrations area, a
// tenant's custom webhooks integration (webhooks_custom) switches its
// outbound webhooks on and off.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package webhooksapi
