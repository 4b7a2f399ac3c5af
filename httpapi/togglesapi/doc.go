// Package togglesapi is the feature toggles area as a Kit and its HTTP
// API take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *toggles.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: the toggle admin routes (super
// admins) and the check routes (any authenticated caller of the tenant).
//
// # Decisions
//
// It is built on no other area.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package togglesapi
