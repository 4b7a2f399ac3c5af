// Package toggles is the feature toggle area: global toggle definitions of
// type boolean, string, number or json, per-tenant overrides, and the
// resolution of a toggle's effective value for a tenant.
//
// # Evaluation
//
// Service.Bool, String, Number, JSON and Resolve answer from an in-process
// cache: every live toggle with its default and its overrides, decoded
// once, behind an atomic pointer. A typed check is a context lookup and two
// map lookups, with no allocation. Every change runs in a transaction that
// also bumps a one-row version counter; after it commits, the Service that
// made it reloads the cache before returning, so the next check in this
// process sees it. Every Service also reads the counter every PollInterval
// (250 ms by default) and reloads when another process on the same
// database changed it, so such changes show within about a quarter of a
// second. A reload reads every toggle and override: changes are rare and
// the set is small, checks are many. If a reload fails, the previous values
// keep being served and the next poll retries.
//
// # Decisions where the spec is silent
//
//   - Identifier: starts with a lowercase letter; lowercase letters,
//     digits, '_', '.' and '-'; at most 100 characters; unique among all
//     toggles, deleted ones included (a deleted toggle keeps its identifier
//     reserved, as in the system the spec was written from). A duplicate
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
//     resolve.
//   - For typed reads null is false, "" or 0; Resolve and JSON return the
//     null itself.
//
// # Events
//
// feature_toggles.toggle.created, .updated and .deleted (global: no
// tenant; the toggle as data) and feature_toggles.override.updated (the
// tenant's; data toggleId, identifier, tenantId, isOverride and value).
package toggles
