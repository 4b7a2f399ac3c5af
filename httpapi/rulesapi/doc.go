// Package rulesapi is the business rules area as a Kit and its HTTP API
// take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *rules.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: rules, rule sets, execution
// and the execution log.
//
// # Decisions
//
// It is built on no other area. When the Kit has the webhooks area,
// CALL_WEBHOOK calls are signed with the secrets of the tenant's webhook
// registered for the call's URL (rules.Options.Signer, found among the
// Kit's areas without importing them).
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package rulesapi
