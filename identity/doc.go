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
// authn.go, credentials.go (the credential cache), bootstrap.go, grant.go
// and password.go) validates, decides, owns transactions and emits
// events, and runs no SQL; store.go is the
// Store interface, the storage operations the Service needs in domain
// terms, each on the store.Querier (database or transaction) the Service
// passes; sql.go is its implementation over both engines (NewSQLStore,
// the default; Options.Store replaces it); migrations/ holds its tables.
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
// # Revocation
//
// A verified credential is cached, keyed by its digest, so that a request
// does not verify it again (two to five queries). What is cached must
// never outlive a revocation: a deleted or expired API key, a deleted
// tenant or organization, a role whose features or organizations changed,
// a password changed by reset is refused by every process sharing the
// database for every request that starts after the change commits. How:
//
//   - Every Service write that may change what an existing credential
//     grants (DeleteAPIKey, SetRoleACL, DeleteTenant, DeleteOrganization,
//     ConfirmPasswordReset, Bootstrap) bumps the version counter
//     "identity.credentials" in its transaction (CredentialsChanged). The
//     writes that only add rows (Create*) do not: a new row changes no
//     verified credential, and other processes keep their caches.
//   - The cache is a vcache.Cache on that counter. Before serving a
//     cached identity, a request makes the cache as new as the counter
//     (vcache's Sync): on PostgreSQL, where several processes share the
//     database, that is one single-row read of the counter per request
//     (shared by concurrent requests; BENCHMARKS.md "Credentials revoked
//     everywhere at once" has its cost), and a newer version drops the
//     cache. It does not wait for the version listener: a notification
//     arrives a millisecond or so after the commit, and a request that
//     starts within it would be served stale. So the listener's state does
//     not matter to credentials: while it is down, revocation is as
//     immediate as while it is up. A failed read of the counter fails the
//     request (an error, not a stale identity).
//   - On SQLite, whose database one process owns, the Service's own
//     commits drop the cache before they return, at no cost per request.
//     Another process on the same file (not a supported deployment) is
//     seen when the cache next reads the counter, every 250 ms.
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
//     needs access to it and to every organization under it. Its key list
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
