// Package dashboards is the dashboards area: a widget registry, one widget
// layout per user (or API key) and tenant, and which widgets each role and
// user may see.
//
// # The area's shape
//
// As in every area (see package toggles): dashboards.go holds the domain
// types, store.go the Store interface, sql.go SQLStore (the only SQL),
// service.go, visibility.go and validate.go the Service, registry.go the
// widget registry, area.go its part in a Kit's lifecycle, and
// dashboardstest the Store conformance suite, run on both engines.
//
// # Widgets
//
// Widget definitions are registered in Go (Service.Register): an id, a
// title and description, the features a caller must hold to see it,
// whether it seeds new layouts (DefaultEnabled), its default grid and
// config, and an optional Data provider that answers
// GET /dashboards/widgets/{definitionId}/data in the caller's scope. The
// Kit registers built-ins over its areas (package tenantkit, widgets.go):
// webhook delivery health, rule executions, attachment storage use and
// payments. A layout places widgets: {id, definitionId, grid: {x, y, w,
// h}, config}. A definition may be placed several times.
//
// # Decisions
//
//   - Owner: a layout belongs to the calling user, or to the API key when
//     the call uses a key ("api_key:<id>"), within the caller's tenant. A
//     caller that is neither (a host's own identity without a user or key)
//     gets 403 on the layout routes.
//   - First read: GET /dashboards/layout of an owner without a layout
//     stores one seeded with the DefaultEnabled widgets the caller sees,
//     at their default grids, with new UUIDs. Seeding is not a change of
//     the owner's and emits no event.
//   - Reads show only the widgets the caller may still see; widgets hidden
//     since they were placed stay stored (they come back if visibility is
//     restored) and a PUT of what GET returned drops them.
//   - Validation of PUT /dashboards/layout (400, details naming
//     "widgets[<i>].<field>"): at most 100 widgets; id a UUID (any version,
//     stored lower-case), unique in the layout; definitionId registered
//     and visible to the caller; grid an object with the integers x, y
//     (0…10000) and w, h (1…1000), all four required (2.0 counts as 2, a
//     quoted "2" does not); config a JSON object of at most 16 KiB, absent
//     or null meaning {}, without NUL characters (PostgreSQL cannot store
//     them in the event's JSON, so both engines refuse them).
//   - ETag and If-Match: every layout has a version, 1 when seeded and
//     one more at each change; its ETag is the quoted version ("3"). GET,
//     PUT and DELETE of an item return it. PUT and DELETE with If-Match
//     naming another version (or a list of others) answer 412 and write
//     nothing; "*" and W/ tags are accepted. The check is repeated by the
//     write itself (a compare-and-set on the version), so of many writers
//     holding the same ETag exactly one commits and the others get 412,
//     on both engines. Without If-Match the last write wins: a write that
//     loses the compare-and-set reads the layout again and retries (after
//     50 lost rounds in a row it gives up with 409).
//   - Hidden widgets: GET and DELETE of an item the caller may no longer
//     see answer 404, as for an unknown id.
//   - GET /dashboards/widgets lists the definitions the caller sees:
//     {items: [{id, title, description, features, defaultEnabled,
//     defaultGrid, defaultConfig, hasData}]}. The data route answers 404
//     for an unknown definition or one without a Data provider and 403
//     for one the caller may not see.
//
// # Visibility
//
// What a principal sees (visibleTo): a user with an override record sees
// exactly its widgets; otherwise the union of the records of its roles
// applies; when none of its roles has a record, every widget. Then each
// widget's Features must all be held (super admins bypass). API keys have
// no override: their roles decide. The same resolution answers GET
// /dashboards/widgets, the layout reads and PUT's check.
//
//   - GET /dashboards/roles/widgets?roleId previews what the role alone
//     makes available: its record's widgets (every widget without one)
//     whose features the role holds. PUT {roleId, widgetIds} stores the
//     record and answers {ok: true, widgetIds} (duplicates removed); an
//     id of no registered widget is 400 naming "widgetIds[<i>]"; an empty
//     list is a record of no widget (the role makes none available), and
//     a missing or null widgetIds is 400. DELETE ?roleId= removes the
//     record, so the role restricts nothing again ({ok: true}).
//   - GET /dashboards/users/widgets?userId answers {mode, items}: mode is
//     override when the user has an override record, inherit otherwise;
//     items are what the user sees (the resolution above). PUT {userId,
//     mode, widgetIds}: override stores widgetIds (an empty list hides
//     every widget); inherit removes the record and ignores widgetIds.
//     It answers {ok: true, mode, widgetIds}.
//   - Roles and users are looked up through a Directory (the identity
//     service's, wired when the Kit opens): an unknown role or user, or
//     another tenant's, is 404 "Role not found" / "User not found"; a
//     missing roleId or userId is 400. Without a Directory those routes
//     answer 501.
//   - A user belongs to an organization (Access.OrganizationID, from the
//     Directory): a caller whose scope may not read it gets 404 "User not
//     found" from both user methods, as for another tenant's user. Roles
//     belong to the tenant: over HTTP only a caller of the whole tenant
//     may change a role's record (httpapi's tenant-wide rule: 403
//     requiredScope "tenant"); any caller with the view feature may read
//     it.
//   - The records of a role or user are removed in the transaction that
//     deletes it (ForgetRole, ForgetUser: the Kit hooks them into the
//     identity service's deletes; a host with its own identity system
//     calls them).
//
// # Events
//
// dashboards.layout.updated (data {ownerId, widgets, version}) after a PUT
// or an item's removal; dashboards.visibility.updated (data {roleId,
// widgetIds} or {userId, mode, widgetIds}) after a PUT of either record.
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass dashboardstest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package dashboards
