// Package rules is the business-rules area: rules (a condition and the
// actions its outcome calls for), rule sets (named, ordered groups of
// rules) and their members. Subpackages condition and action parse,
// validate and evaluate the two parts of a rule.
//
// Status: definitions (rules, sets, members) are built, served by httpapi
// with the rule-set rate limits; executing rules and sets and execution
// logs are not yet (issue 4 continues).
//
// # Scope
//
// Every call reads the tenant from the context's store.Scope. Rules are
// stamped with the scope's organization and readable by scopes that may
// read that organization (a rule without one is the whole tenant's). Rule
// sets and their members belong to the tenant.
//
// # Decisions where the spec is silent
//
//   - A rule's ruleId is unique among the tenant's live rules; a deleted
//     rule frees it. A duplicate is store.ErrConflict ("409 {error}").
//   - PUT replaces every field of a rule (the body is the create body plus
//     id); enabled, priority (0–9999) and version (≥ 1) are required, and
//     conditionExpression and both action lists are validated as packages
//     condition and action describe, with the problem named under the
//     field.
//   - effectiveFrom and effectiveTo accept a date (2025-01-31) or an RFC
//     3339 date-time and are returned as UTC date-times; effectiveTo may
//     not precede effectiveFrom.
//   - Text fields are limited as the spec's Limits table says; NUL
//     characters are refused (PostgreSQL cannot store them), and keys or
//     filters that could not be stored match nothing. version and member
//     sequences fit in 32 bits.
//   - createdBy is the acting user's id ("api_key:<id>" for an API key),
//     from store.Scope.ActorID.
//   - A set id is uppercase letters and underscores (≤ 50); a duplicate is
//     SET_ALREADY_EXISTS (409). A member is added by the rule's business
//     id, with a sequence (≥ 0, required) and enabled (default true).
//     Members of deleted rules disappear from sets and member counts.
//   - Deleting a set with members needs force=true, which detaches them.
//
// # Events
//
// business_rules.rule.created|updated|deleted,
// business_rules.set.created|updated|deleted and
// business_rules.set_member.added|updated|removed, with the tenant, in
// the transaction of the change.
package rules
