// Package auth is the built-in identity of the standalone server: tenants,
// organizations (a tree per tenant), roles granting features, users with
// passwords, API keys, session tokens and password reset. A host with its
// own identity system replaces it by giving httpapi an Authenticator that
// returns *Identity values.
//
// # Credentials
//
// API keys travel in X-Api-Key, "Authorization: ApiKey <key>" or
// "Authorization: Bearer <key>"; session tokens from Login (HS256 JWTs
// signed with Config.SecretKey) in "Authorization: Bearer". Keys are
// stored as SHA-256 hashes and compared in constant time; passwords as
// Argon2id hashes. A verified credential is cached for Config.CacheTTL (5 s),
// keyed by its digest, and the cache is cleared by every identity change
// made through the Service.
//
// # Authorization
//
// Roles grant features ("x.y.z", with "*" and "x.*" wildcards); super
// admins hold every feature. Management methods take the acting identity
// and enforce the model's own rules: only super admins manage tenants and
// grant super-admin roles, and a caller manages only its own tenant. A
// super admin acts in another tenant by sending SelectedTenantCookie; any
// caller may narrow to an organization it can read with
// SelectedOrganizationCookie.
//
// # Sign-in and reset
//
// A wrong password and an unknown email get the same answer. A reset
// request answers the same whether or not the account exists; with
// Config.Jobs the mail is sent from a durable job, so the timing does not
// tell either. Reset tokens are single-use, stored hashed, and expire
// after Config.ResetTTL (1 h); a password change invalidates every session
// token issued before it.
//
// # Events
//
// directory.tenant.*, directory.organization.*, auth.role.*, auth.user.*
// and api_keys.key.* (see the Event constants), written in the transaction
// of the change.
package auth
