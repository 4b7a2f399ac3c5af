// Package openfeature is an OpenFeature provider for the feature toggle
// area: it lets code written against the OpenFeature Go SDK
// (github.com/open-feature/go-sdk) read tenantkit toggles, resolved
// in-process by a [toggles.Service] from its cache.
//
// Switching a host to OpenFeature is one line:
//
//	openfeature.SetProviderAndWait(tkopenfeature.NewProvider(kit.Toggles))
//
// (openfeature being the SDK's package and tkopenfeature this one), after
// which
//
//	client := openfeature.NewDefaultClient()
//	on := client.Boolean(ctx, "new-checkout", false, openfeature.NewEvaluationContext(tenantID, nil))
//
// answers for that tenant. The flag key is the toggle's identifier.
//
// # The tenant
//
// The tenant is taken, in this order, from
//
//  1. the evaluation context's "tenantId" attribute ([TenantAttribute]),
//     when it is a non-empty string;
//  2. the evaluation context's targeting key;
//  3. the tenant of the store scope already in ctx (store.WithScope), as
//     inside an httpapi handler.
//
// The explicit attribute comes first because OpenFeature's targeting key is
// often the end user, with the tenant as an attribute beside it; a host
// that uses the tenant as the targeting key and sets no attribute gets the
// targeting key. With no tenant at all the evaluation answers the caller's
// default value with error TARGETING_KEY_MISSING (reason ERROR); a
// "tenantId" attribute that is present but not a string gives
// INVALID_CONTEXT. The provider calls the Service with
// store.WithScope(ctx, store.Scope{TenantID: tenant}).
//
// # Errors
//
// Every error answers the caller's default value with reason ERROR:
//
//   - no live toggle has the identifier (a deleted toggle is not found):
//     FLAG_NOT_FOUND;
//   - the toggle is of another type than the one asked for: TYPE_MISMATCH.
//     Boolean reads boolean toggles, String string toggles, Float number
//     toggles, Int number toggles whose value is a whole number that fits
//     an int64 (3, 3.0 and 1e3 do; 3.5 and 1e19 give TYPE_MISMATCH), and
//     Object json toggles only (a json toggle may hold any JSON, a scalar
//     included; a boolean, string or number toggle asked as Object is a
//     TYPE_MISMATCH, as it is for Service.Check);
//   - no tenant: TARGETING_KEY_MISSING, or INVALID_CONTEXT (above);
//   - a stored value that does not parse (it cannot happen: values are
//     checked on write): PARSE_ERROR; any other error: GENERAL.
//
// # Reasons and variants
//
//   - The tenant's override: reason TARGETING_MATCH (the per-tenant
//     override is this system's targeting), variant "override".
//   - The toggle's default value: reason DEFAULT, variant "default". The
//     SDK defines DEFAULT as a value "configured statically, or otherwise
//     fell back to a pre-configured value", and the specification as the
//     value a dynamic evaluation fell back to when it yielded no result,
//     which is what a tenant without an override gets. STATIC ("no dynamic
//     evaluation") is not used: the answer does depend on the tenant, and
//     STATIC invites caching one value for every context.
//
// Flag metadata carries "toggleId", "tenantId" and "source" ("override" or
// "default") on every answer that found the toggle.
//
// # Null values
//
// A toggle's default and an override may be JSON null ("unset").
//
//   - Boolean: null is false, with the reason and variant of where it came
//     from. This is Service.Bool's rule and the check endpoint's
//     (enabled: false), so switching a boolean read to OpenFeature keeps
//     its answer.
//   - String, Float, Int and Object: null resolves to the caller's default
//     value with reason DEFAULT and an empty variant (no variant of the
//     toggle was used); the metadata's "source" still tells which layer
//     was null. This differs from Service.String and Service.Number, which
//     read null as "" and 0: an OpenFeature caller passes the value it
//     wants when there is none, and null is "none" (the check endpoints
//     return it as null, not as "" or 0). A host that wants "" or 0 passes
//     them as the default.
//
// # Lifecycle
//
// The Service is ready once toggles.New returns, so the provider has no
// Init: the SDK reports it READY at once. It has no Shutdown either: the
// Service belongs to the host (tenantkit.Kit closes it), and shutting the
// OpenFeature API down leaves it running. It emits no events; changes show
// in the next evaluation, as they do for the Service's own reads.
package openfeature
