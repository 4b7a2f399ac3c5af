// Package notifications is the notifications area: each user's inbox in a
// tenant. Other areas' events feed it (the Kit subscribes to them, see
// tenantkit's notifications wiring), and each user reads and tidies their
// own inbox (GET /notifications, POST /notifications/{id}/read and
// /unread, POST /notifications/read-all, DELETE /notifications/{id}).
//
// # The area's shape
//
// As in every area (see package toggles): notifications.go holds the
// domain types (Notification, Severity, CreateInput, ListOptions, Page,
// the errors and the event), store.go the Store interface, sql.go
// SQLStore (the only SQL), service.go the Service, area.go its part in a
// Kit's lifecycle, and notificationstest the Store conformance suite, run
// on both engines and shown to catch broken stores.
// httpapi/notifications.go serves the routes.
//
// # The Go API
//
// Every method acts in the scope ctx carries (store.ScopeFrom).
//
//   - Create / CreateTx: adds a notification to any recipient's inbox in
//     the scope's tenant and emits notifications.notification.created in
//     the same transaction. CreateTx joins the caller's transaction, so a
//     notification commits with the change it tells of.
//   - List, Get, MarkRead, MarkUnread, MarkAllRead, Delete: act on the
//     inbox of the scope's actor (store.Scope.ActorID) and nobody else's.
//   - NotifyRefs / NotifyHolding: for the feeds: create one notification
//     for each user that a list of references names (user ids, emails,
//     role names) or that holds a feature, in one transaction. The area
//     knows no users: it asks a Recipients, which the Kit builds over the
//     identity area when it has one, and a host with its own identity
//     system passes in Options.Recipients. Without one, nothing is
//     delivered.
//
// # Feeds
//
// In a Kit, the area's module (httpapi/notificationsapi) subscribes to
// other areas' domain events and turns them into notifications, with the
// event id as the dedup key:
//
//   - a business rule's NOTIFY action (business_rules.notification.created):
//     type "rules.notify", the subject as title ("Rule <name>" when
//     empty), the message as body, severity info, to the users the
//     recipients name in the event's tenant: a user id, an email (any
//     case) or a role name (every user holding it); a reference naming
//     nobody is skipped. Text too long for a field is cut, ending in "…".
//   - webhook failures, while the tenant's custom webhooks integration
//     has notifyAdminsOnFailure on (PUT
//     /integrations/webhooks_custom/state; off by default), to the
//     tenant's users holding webhooks.manage, severity error: a webhook
//     disabled by its deliveries (webhooks.webhook.disabled; type
//     "webhooks.webhook_disabled"), and a delivery that failed for good
//     (webhooks.delivery.failed; type "webhooks.delivery_failed"). The
//     failures are told at most once per webhook and hour (the dedup key
//     names the webhook and the hour), so a failing endpoint cannot flood
//     the inboxes, and never for a delivery of a notifications.* event,
//     so a webhook subscribed to every event cannot feed itself. The
//     setting is read when the event is handled.
//   - a data sync run that failed (data_sync.run.failed): type
//     "data_sync.run_failed", severity error, the run's error as body, to
//     the caller who started the run or asked for its retry
//     (datasync.Run.StartedBy: a user, or an API key's own inbox). A run
//     whose starter is unknown (started before runs recorded it) tells
//     nobody.
//
// # Decisions
//
//   - Recipients: a notification belongs to one recipient in one tenant.
//     The recipient is a user id, or "api_key:<id>" for an API key: an API
//     key has an inbox of its own, keyed like its dashboard layout, so
//     every authenticated caller may read its inbox and no route needs a
//     feature. A scope without an actor has no inbox (ErrNoRecipient,
//     403).
//   - Not organization scoped: the inbox is the recipient's whatever
//     organization is active, like a dashboard layout. A feed decides who
//     may hear of what when it picks the recipients.
//   - Privacy: another recipient's or another tenant's notification id
//     is ErrNotificationNotFound (404), exactly like an unknown id, for
//     every read and write; lists hold only the caller's inbox.
//   - Order: newest CreatedAt first, then id descending (ids are UUIDv7),
//     so that pages are stable.
//   - Read state: ReadAt is nil while unread. Marking a read notification
//     read again keeps its first ReadAt; marking unread clears it.
//     MarkAllRead stamps only the unread ones. None of these emits an
//     event: only a new notification is a domain event.
//   - unreadCount in a page counts the whole inbox's unread
//     notifications, whatever the unread filter, for a badge.
//   - Duplicates: feeds are domain events, delivered at least once. A
//     feed sets CreateInput.DedupKey (for instance "event:<id>"): the
//     inbox keeps one notification per key, and a redelivered event adds
//     nothing (Create returns nil, nil).
//   - Links: Link is "", a path on the host's UI ("/webhooks/123", not
//     "//host") or an http(s) URL; never javascript: or data:, since a UI
//     renders it as a link.
//   - Limits: title ≤ 200 characters (required), body ≤ 4000, link ≤
//     2000, type ≤ 100 (a lowercase dotted name), recipient and dedup key
//     ≤ 200; text must be UTF-8 without NUL (both engines store it).
//     Pages hold at most 100 notifications (default 20).
//   - Retention: notifications stay until their recipient deletes them.
//   - The event notifications.notification.created carries the id,
//     recipient, type and severity, never the text: events reach every
//     webhook of the tenant subscribed to them, of any organization,
//     while a notification's text is its recipient's.
//   - Feeds that tell the holders of a feature (webhook failures) tell
//     only those who may read the organization the failure belongs to.
//
// # The inbox's totals
//
// List answers the inbox's total and unread count, both exact. SQLStore
// keeps how many notifications each inbox holds, read and unread
// (store.Counts, migration 0002), written by Insert, SetRead (only when
// the notification's state changes: the update first matches the state it
// leaves), ReadAll (by the rows it changed) and Delete (by the state its
// RETURNING reports) in the caller's transaction, so that Count sums a few
// rows however large the inbox. The unread page is read from an index of
// the unread notifications only.
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass notificationstest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package notifications
