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
// The built-in widgets that count a recent window (webhooks, rules,
// payments, data sync) count from the start of the hour (UTC) 24 hours
// before the read: 24 to 25 hours, the data's since saying where it
// starts. A window of whole hours is what the webhooks, rules, payments
// and data sync areas keep counts by (hour of creation or execution), so
// those widgets read a few rows per hour rather than every row of the
// window, which made them grow with the rows written in the last day; an
// exact 24 hours would count the rows of its first, partial hour. The
// data sync widget's counts by status are those of every run of the
// window (they were those of the tenant's newest 1,000 runs only, fewer
// than the window's on a busy tenant).
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package dashboardsapi
