// Package notificationsapi is the notifications area as a Kit and its
// HTTP API take it: Area returns its module, for tenantkit.Config.Areas.
// The module builds the area's service (a *notifications.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: each caller's inbox: list with
// the unread count, read, unread, read-all and delete.
//
// # Decisions
//
// It is built on no other area. With the identity area, the feeds address
// its users, by id, email or role name. Once the Kit's areas are built
// (Wire), the inboxes are fed by the other areas' events: a rule's NOTIFY
// (NotificationRule), a webhook disabled or a delivery failed for good
// when the tenant's custom webhooks integration has notifyAdminsOnFailure
// on (NotificationWebhookDisabled, NotificationWebhookFailed, at most one
// failure an hour per webhook), and a failed sync run, told to its
// starter (NotificationSyncFailed). This package imports the rules,
// webhooks, integrations and data sync services to read their events, so
// a host of notifications links them. Every feed sets the notification's
// dedup key to the event id, so a redelivered event adds nothing.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package notificationsapi
