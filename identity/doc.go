// Package identity is the identity area: tenants, organizations (a tree
// per tenant), roles granting features, users with passwords, API keys,
// session tokens and password reset, and the grant model (CheckGrant). It
// is usable from Go without HTTP; httpapi serves its routes and reads
// credentials from requests. A host with its own identity system replaces
// it by giving httpapi an Authenticator that returns *Identity values.
//
// # Shape
//
// identity.go holds the domain types, limits, features, events and
// errors; the Service (service.go, with directory.go, roles.go, keys.go,
// authn.go, credentials.go (the credential cache), users.go (the user
// lifecycle, role deletion, logout, delete hooks), bootstrap.go, grant.go
// and password.go) validates, decides, owns transactions and emits
// events, and runs no SQL; store.go is the
// Store interface, the storage operations the Service needs in domain
// terms, each on the store.Querier (database or transaction) the Service
// passes; sql.go is its implementation over both engines (NewSQLStore,
// the default, with sql_lifecycle.go; Options.Store replaces it);
// migrations/ holds its tables.
// identitytest.Run is the conformance suite any Store runs. area.go is
// the Service's part in a Kit's lifecycle.
//
// Decisions:
//
//   - The migration line keeps the name "auth" and its files are
//     unchanged, and the reset-mail job keeps its kind
//     "auth.password_reset", so databases and queued jobs from before the
//     package moved out of httpapi/auth keep working.
//   - Lookups that name a tenant are scoped to it in the Store. Where a
//     super admin names a row of any tenant (an organization, role or API
//     key by id), the Service first asks the Store for the row's tenant
//     (OrganizationTenant, RoleTenant, APIKeyTenant) and then looks it up
//     in that tenant. Lookups by a credential (API key prefix, reset token
//     hash, email at sign-in) are global by nature.
//   - The Service's methods take credentials and selections as values
//     (Authenticate(ctx, Credential, Selection)); reading them from an
//     HTTP request is httpapi's job.
//   - New(db, Options) builds the Service and touches nothing, like every
//     area's New; it fails only on options it can check up front (the
//     SecretKey's length). There is no one-call Open: a host uses the Kit
//     (tenantkit.Open with the identity area), or calls New, migrates
//     Migrations() (db.Migrate) and calls RegisterJobs before its job
//     engine starts. Start and Stop do nothing: the area's only background
//     work is the reset-mail job on the job engine.
//
// # Credentials
//
// API keys travel in X-Api-Key, "Authorization: ApiKey <key>" or
// "Authorization: Bearer <key>"; session tokens from Login (HS256 JWTs
// signed with Options.SecretKey) in "Authorization: Bearer". Keys are
// stored as SHA-256 hashes and compared in constant time; passwords as
// Argon2id hashes.
//
// A verified credential's Identity is cached and shared by the requests
// that present it, so what every request would otherwise derive from it
// is made once, when it is verified: its scope's actor for an API key,
// and Identity.Values, the context a server answers a request's identity
// and scope from.
//
// A deleted key stays in auth_api_keys (deleted_at set), as deleted
// tenants, organizations and users stay in theirs. The keys list and its
// count read the tenant's live keys from an index of those alone
// (migration 0004), so revoked keys, however many, cost them nothing
// (TestKeysListSkipsRevokedKeys).
//
// # Revocation
//
// A verified credential is cached, keyed by its digest, so that a request
// does not verify it again (two to five queries). What is cached must
// never outlive a revocation: a deleted or expired API key, a deleted
// tenant or organization, a role whose features or organizations changed,
// a password changed by reset is refused by every process sharing the
// database for every request that starts after the change returns (its
// commit, then the acknowledgements below). How:
//
//   - Every Service write that may change what an existing credential
//     grants (DeleteAPIKey, SetRoleACL, DeleteTenant, DeleteOrganization,
//     ConfirmPasswordReset, Bootstrap, UpdateUser, DeleteUser, DeleteRole,
//     Logout) bumps the version counter
//     "identity.credentials" in its transaction (CredentialsChanged). The
//     writes that only add rows (Create*) do not: a new row changes no
//     verified credential, and other processes keep their caches.
//   - The cache is a vcache.Cache on that counter; a newer version drops
//     it. A process learns of a version three ways: its own commits, the
//     version listener's notification (milliseconds after another
//     process's commit), and reading the counter.
//   - Acknowledgements, where several processes share the database
//     (PostgreSQL). Each Service that caches credentials registers in
//     auth_servers (on its first authentication) and beats there every
//     second from the store's background pool: it reads the counter, has
//     its cache drop what is older, and writes that version as seen, with
//     the database's time. A notified version is applied to the cache and
//     then written as seen at once. A revocation, once committed, waits
//     (CredentialsChanged, through the transaction's AfterCommit, so Tx
//     returns after it) until every live row has seen its version: a
//     millisecond or two while the listeners are up, up to a beat (1 s)
//     for a process whose listener is cut off. A process writes a version
//     as seen only after its cache dropped everything older, so when the
//     revocation returns no process holds what it revoked.
//   - Leases. A process serves cached credentials without reading the
//     counter only while its lease holds: 2.5 s from the moment it sent its
//     last beat that got through. A revocation counts a row whose last
//     beat is older than 5 s (the database's clock) as dead and stops
//     waiting for it; by then that process's lease has lapsed (it sent the
//     beat before the database stamped it; clocks may run apart by a factor
//     of two), so it reads the counter for every request, as before it
//     first beat, until a beat gets through, and a beat applies the counter
//     before it renews the lease. A failed read of the counter fails the
//     request (an error, not a stale identity). So a process cut off from
//     the database delays a revocation by at most 5 s and never serves it
//     stale; a killed process's row is dead 5 s after its last beat and
//     removed within the hour; a closed DB removes its row. A row is
//     written before the process first reads the counter, so a revocation
//     either sees the row and waits for it, or committed before that read.
//     Should a wait pass 7 s (clocks that disagree more than the lease
//     allows) it is logged as an error and the revocation returns.
//   - The cost per request: while the lease holds, none (an atomic load and
//     a monotonic clock read; the cache's 250 ms poll of the counter stays,
//     one request in that interval reads it); before, a single-row read of
//     the counter (shared by concurrent requests). The cost moves to the
//     revocation, which waits for the acknowledgements (BENCHMARKS.md
//     "Credentials revoked everywhere at once"), and to a beat a second per
//     process.
//   - On SQLite, whose database one process owns, the Service's own
//     commits drop the cache before they return, at no cost per request,
//     and nothing is acknowledged. Another process on the same file (not a
//     supported deployment) is seen when the cache next reads the counter,
//     every 250 ms.
//   - Expiry is time: a cached key or session past its expiry is refused
//     on every hit, whatever the cache holds.
//   - A change made directly in the database (a user soft-deleted by SQL,
//     a host's own Store) is invisible to the counter unless the host
//     calls CredentialsChanged in its transaction; otherwise it reaches a
//     process within Options.CacheTTL (5 s), the age after which a cached
//     credential is verified again whatever the counter says.
//   - A miss is verified in a read transaction that reads the counter
//     first, and is cached only if no newer version was seen meanwhile,
//     so a verification racing a revocation is not remembered past it.
//
// # Users, roles and logout
//
//   - Users are soft-deleted (DeleteUser): not found, listed or signed in
//     again; their sessions end as any revocation does. A caller cannot
//     delete itself (a conflict), so a tenant is not left without its
//     admin by accident.
//   - Roles are deleted for good (DeleteRole), only while no live user or
//     key holds them (a conflict naming how many do): the caller takes the
//     role from its holders first, and nobody loses access as a side
//     effect. Links from deleted users and keys go with the role. A
//     super-admin role is never deleted.
//   - Other areas keep data about users and roles (the dashboards'
//     visibility records). DeleteUser and DeleteRole run the OnDelete
//     hooks in their transaction, so that such data goes with the row or
//     the deletion fails as a whole; the Kit hooks the dashboards in
//     when it opens with both areas. A hook is told the kind, tenant and id.
//   - Session tokens are stateless signed tokens, each with its own id
//     (jti). Logout records the id in auth_revoked_sessions until the
//     token's own expiry and bumps the credentials' version in the same
//     transaction; verifying a session reads that table (on a cache miss
//     only), so the token is refused everywhere from the next request,
//     and the user's other sessions go on. Rows past their expiry are
//     removed by the next Logout. (A per-user "issued before" time would
//     have ended every session of the user; a sessions table would have
//     made every sign-in a write of a row per session.) API keys are not
//     sessions: Logout of one is refused and they end only when deleted.
//   - Login records the user's LastLoginAt, in a write of its own that
//     leaves the credentials' version alone.
//
// # Authorization
//
// Roles grant features ("x.y.z", with "*" and "x.*" wildcards) and may be
// limited to some organizations of the tenant; a caller holds the union of
// its roles' features, and is limited to the union of their organizations
// unless one of its roles is unlimited. Super admins hold every feature in
// every tenant. A super admin acts in another tenant by sending
// SelectedTenantCookie; any caller may narrow to an organization it can
// read with SelectedOrganizationCookie.
//
// Management methods take the acting identity and enforce these rules:
//
//   - Only super admins manage tenants, and a caller manages only its own
//     tenant.
//   - No escalation by delegation. CheckGrant is the one rule of every grant
//     path (roles given to API keys and users, a role's ACL): a caller grants
//     only features it holds itself, only organization limits at least as
//     narrow as its own (a limited caller never grants "every
//     organization"), and never super admin. A refused grant is
//     ErrEscalation (403).
//   - No reaching above one's own access: a caller changes only roles whose
//     current access it could grant, and deletes only API keys whose roles it
//     could grant.
//   - Organization scope on identity writes. A caller limited to some
//     organizations writes only inside them: it creates organizations only
//     under one of them (parentId), API keys and users only in one of them
//     (organizationId; no tenant-level keys), and the roles it creates are
//     limited to its organizations. Organizations, keys and roles outside them
//     are not found (404) to its writes; an organizationId or parentId in its
//     own request body that is outside them is 403. Deleting an organization
//     needs access to it and to every organization under it. Users are
//     listed, changed and deleted only in its organizations (others are
//     not found), only when it could grant every role they hold
//     (ErrEscalation otherwise: nobody changes a user above its own
//     access), and moved only to an organization it manages (403 naming
//     organizationId). Its key list
//     shows the tenant-level keys and those of its organizations.
//
// # Sign-in and reset
//
// A wrong password and an unknown email get the same answer. A reset
// request answers the same whether or not the account exists; once
// RegisterJobs has run the mail is sent from a durable job, so the timing
// does not tell either. Reset tokens are single-use, stored hashed, and
// expire after Options.ResetTTL (1 h); a password change invalidates
// every session token issued before it.
//
// # Events
//
// directory.tenant.*, directory.organization.*, auth.role.*, auth.user.*
// and api_keys.key.* (see the Event constants), written in the transaction
// of the change.
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass identitytest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package identity
