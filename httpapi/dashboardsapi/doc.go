// Package dashboardsapi is the dashboards area as a Kit and its HTTP API
// take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *dashboards.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: the caller's layout, the
// widget registry and its data, and who sees which widget.
//
// # Decisions
//
// It is built on no other area. With the identity area, roles and users
// are looked up there (Directory) and deleting one removes its visibility
// records in the same transaction. Once the Kit's areas are built (Wire),
// the built-in widgets of those present are registered
// (WidgetWebhookHealth, WidgetRuleExecutions, WidgetStorageUse,
// WidgetPayments, WidgetDataSync): this package imports those areas'
// services to read their figures, so a host of dashboards links them; a
// host of the other areas without dashboards does not.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package dashboardsapi
