// Package integrations is the integration catalogue: integrations
// registered in Go (Service.Register) and, per tenant, whether each is
// enabled, which API version it uses, its credentials (sealed at rest)
// and its log.
//
// # The area's shape
//
// As in every area (see package toggles): integrations.go holds the
// domain types, store.go the Store interface, sql.go SQLStore (the only
// SQL), service.go, credentials.go and logs.go the Service, registry.go
// the definitions, area.go its part in a Kit's lifecycle, and
// integrationstest the Store conformance suite.
//
// # Definitions
//
// A Definition has an id, title, description, category, hub, provider
// key, optional bundle, API versions and credential fields (key, label,
// type text|secret|select|boolean|url, required, options). An
// integration without fields of its own takes its bundle's. The Kit
// registers gateway_mock and, when the payments area has the stripe
// provider (package full adds it), gateway_stripe (their credentials are
// what the payments area uses for the tenant, before the environment),
// webhooks_custom, and sync_http_json (the data sync area's HTTP JSON
// source: baseUrl, token; API version v1).
//
// # Scope
//
// An integration's state, API version and credentials belong to the
// tenant and serve every organization of it (payment gateway secrets,
// sync sources, the custom webhooks switch). Over HTTP any caller with
// the view feature may read them, but only a caller of the whole tenant
// (no organization limit) may change them (httpapi's tenant-wide rule: 403
// requiredScope "tenant"); the Service itself trusts the scope its caller
// puts in the context.
//
// # Decisions
//
//   - State: a tenant that never changed an integration has the defaults:
//     enabled, the default API version (the one marked Default, else the
//     first; null when unversioned), no re-authentication, no health
//     check, no notifications to admins. The first change stores a row.
//     Enabling a disabled integration stamps enabledAt. PUT /state needs
//     isEnabled, reauthRequired or notifyAdminsOnFailure (else 422) and
//     answers {isEnabled, reauthRequired, notifyAdminsOnFailure,
//     apiVersion, updatedAt}.
//   - notifyAdminsOnFailure (default false, a column added by migration
//     0002): the Kit's notification feeds tell the tenant's admins of the
//     integration's failures while it is on (the custom webhooks
//     integration: an endpoint disabled, a delivery failed for good).
//   - Health: RecordHealth keeps the last connection check's outcome
//     (lastHealthStatus healthy or unhealthy, lastHealthCheckedAt,
//     lastHealthLatencyMs) in the tenant's state, with the state event.
//     POST /data_sync/validate runs one for a sync integration whose
//     adapter can check its connection; a validate refused before any
//     check (no credentials, bad target) records nothing.
//   - PUT /version answers {apiVersion, previousVersion}: 422 "This
//     integration is not versioned" when it declares none, "Unknown
//     integration version" for another id.
//   - Credentials are one JSON object per tenant and integration, sealed
//     with the Kit's key (internal/secretbox, AES-GCM) before it is
//     stored. GET /credentials answers {integrationId, schema,
//     credentials}: {} when none are stored, each secret field shown as
//     "••••••••" (Mask). PUT {credentials} replaces them: an unknown key,
//     a value of the wrong JSON type (strings for text, secret, select and
//     url; a boolean for boolean), a select value outside its options, a
//     url that is not absolute http(s), a string over 20,000 bytes or with
//     NUL, or a required field missing is 422 with details naming
//     "credentials.<key>". null leaves a key out. A secret sent back as
//     the mask keeps the stored value. The event
//     integrations.credentials.updated names the keys, never a value.
//   - Values (the credentials in clear, for each provider call: every
//     payment session reads them) is served from a cache of the opened
//     credentials by tenant and integration, so they are read and opened
//     once per change, not once per call. SetCredentials bumps the version
//     counter "integrations.credentials" in its transaction, so a change
//     that returned before a call, through this process or another, is
//     what the call uses (see "Credentials acknowledged" below). A tenant
//     without credentials is cached as such.
//   - GET /credentials needs integrations.view, PUT integrations.credentials.manage. Responses that carry
//     credentials are marked Cache-Control: no-store.
//   - The list answers {items, total, page, pageSize, totalPages} ordered
//     by title, then id; q matches id, title or description
//     (case-insensitive); isEnabled takes true, false, 1 or 0 (else 400);
//     pageSize defaults to 100 and above 100 is 400.
//   - Logs: GET /integrations/logs filters by integrationId, level
//     (info|warn|error, else 400), runId, entityType and entityId; newest
//     first; pageSize defaults to 20, above 100 is 400. Items are {id,
//     integrationId, runId, level, message, code, payload, entityType,
//     entityId, createdAt}. Other areas write through Logger (Log, or
//     LogTx inside their own transaction); a message is cut at 4,000
//     bytes and a payload that is not JSON or exceeds 64 KiB is replaced
//     by a note, so logging never fails on what a provider sent.
//
// # Credentials acknowledged
//
// Values must honour every credentials change that returned before it,
// through any process: a payment session must never reach a provider with
// replaced credentials. On SQLite, whose database one process owns, the
// Service's own commit drops the cache before SetCredentials returns, at
// no cost per call. On PostgreSQL Values read the counter before each use
// (vcache.Cache.Sync, one read shared by concurrent callers: 0.19 reads
// per payment session under load) until this change; since, each Service
// that serves Values registers in integration_servers (migration 0005) on
// its first call and beats there every second with the version it has
// applied (vcache.Acks, identity's mechanism for revocations), and
// SetCredentials, once committed, waits until every live Service has
// acknowledged its version (vcache.AwaitAcks): a millisecond or two while
// the listeners are up, up to a second for a Service cut off from
// notifications, at most 5 s for one cut off from the database, whose
// lease has lapsed by then. While its lease holds a Service serves Values
// from its cache without reading the counter; otherwise (before its first
// beat, after failed ones) it syncs as before. Decision: the cost moves
// from every provider call to the rare credentials change.
//
// # The log's totals
//
// ListLogs returns a page, newest first, and the exact total. SQLStore
// keeps how many entries each integration has at each level for each
// entity type (store.Counts, migrations 0003 and 0004), written by
// InsertLog in the caller's transaction, so that the total of the
// unfiltered log and of one filtered by integration, level and/or entity
// type sums a few rows. Filtered by run or entity id, the total counts
// the matching entries in the run's or the entity id's index: their
// number is the run's or the entity's, not the log's.
// Log entries are never deleted today; a retention that deletes them must
// subtract from the counts in its transaction.
//
// # Events
//
// integrations.state.updated and integrations.version.updated (data: the
// integration id and its new state), integrations.credentials.updated
// (the integration id and the stored keys).
package integrations
