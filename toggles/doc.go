// Package toggles is the feature toggle area: global toggle definitions of
// type boolean, string, number or json, per-tenant overrides, and the
// resolution of a toggle's effective value for a tenant.
//
// # The area's shape
//
// toggles is the worked example of how an area is laid out; the others
// follow it:
//
//   - toggles.go holds the domain types (Toggle, Override, the events).
//   - store.go defines Store, the storage the Service needs in the area's
//     terms (toggles CRUD, identifier reservation, overrides upsert, delete
//     and list, the filtered, sorted, paged lists, LoadAll for the cache),
//     each method taking ctx and the store.Querier to run on.
//   - sql.go is SQLStore, the Store on the area's tables (Migrations) for
//     SQLite and PostgreSQL, and the only SQL of the package.
//   - service.go is the Service: validation, transactions, domain events
//     and the cache, over a Store held in a field; resolve.go answers
//     checks from the cache; area.go is its part in the Kit's lifecycle
//     (tenantkit.Area).
//   - togglestest is the Store conformance suite: every behaviour the
//     Service relies on, run against SQLStore on both engines, and shown
//     to fail against deliberately broken stores.
//
// A host with its own storage passes it as Options.Store (the default is
// NewSQLStore()) and runs togglestest.Run against it. Its tables live in
// the Service's database, since every write gets the transaction that
// also records the domain event and bumps the cache's version counter;
// the Service keeps every rule (validation, reserved identifiers, type
// checks, events), so a Store only stores, filters and orders.
//
// # Evaluation
//
// Service.Bool, String, Number, JSON and Resolve answer from an in-process
// cache: every live toggle with its default and its overrides (LoadAll),
// decoded once, behind an atomic pointer (an internal/vcache Value). A
// typed check is a context lookup, two atomic loads and two map lookups,
// with no lock and no allocation. Every change runs in a transaction that
// also bumps the store's version counter "toggles" (store.Tx.BumpVersion);
// after it commits, the Service that made it reloads the cache before
// returning, so the next check in this process sees it. A check also reads
// the counter when PollInterval (250 ms by default) has passed since the
// last read, and reloads when another process on the same database changed
// it; on PostgreSQL a notification (store.DB.WatchVersions) has other
// processes reload within milliseconds, the poll being the fallback.
// Service.Sync reads the counter at once, for a host that gates a write
// on a toggle. The interval is kept by a timer, so a check that is not due reads
// no clock. There is no poll goroutine: Start and Stop do nothing, and a
// Service nobody checks reads nothing. A reload reads every toggle and
// override: changes are rare and the set is small, checks are many. If a
// reload fails, the previous values keep being served (the failure is
// logged) and the next check after the interval, or the next change,
// retries.
//
// # Decisions
//
//   - Identifier: starts with a lowercase letter; lowercase letters,
//     digits, '_', '.' and '-'; at most 100 characters; unique among all
//     toggles, deleted ones included (a deleted toggle keeps its identifier
//     reserved). A duplicate
//     is a validation error on "identifier" (400).
//   - name is required (≤ 200 characters); description ≤ 2000 and
//     category ≤ 100 characters.
//   - defaultValue and override values must be of the toggle's type; JSON
//     null is allowed for every type and json accepts any JSON. Absent
//     means null.
//   - The type is fixed at creation: an update may repeat it but not change
//     it (the overrides were checked against it).
//   - An update changes only the fields it carries; an explicit null
//     defaultValue sets the default to null.
//   - Delete is soft; overrides of a deleted toggle are kept but no longer
//     resolve. Deleted toggles stay in the table for good, so the cache's
//     load and the list (its default order and its count) read the live
//     toggles from an index of those alone (migration 0003), and cost the
//     same however many toggles were deleted (TestReadsSkipDeletedToggles).
//   - For typed reads null is false, "" or 0; Resolve and JSON return the
//     null itself.
//   - A list with a search counts at most store.SearchTotalCap (10,000)
//     matching toggles (store.CountCapped); when more match, the HTTP list
//     reports 10,000 with "totalCapped": true beside the total (absent when
//     exact), as every list with a free-text search does.
//
// # Events
//
// feature_toggles.toggle.created, .updated and .deleted (global: no
// tenant; the toggle as data) and feature_toggles.override.updated (the
// tenant's; data toggleId, identifier, tenantId, isOverride and value).
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass togglestest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package toggles
