package rules

import (
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// Type is a rule's kind. Only GUARD changes an execution's outcome (it
// can block); the others report success or failure.
type Type string

// The rule types.
const (
	Guard       Type = "GUARD"
	Validation  Type = "VALIDATION"
	Calculation Type = "CALCULATION"
	Action      Type = "ACTION"
	Assignment  Type = "ASSIGNMENT"
)

// Types lists every rule type.
var Types = []Type{Guard, Validation, Calculation, Action, Assignment}

// Rule is a business rule: a condition and the actions its outcome calls
// for.
type Rule struct {
	// ID is the rule's UUID, made by the service; the API's {id}.
	ID string `json:"id"`
	// RuleID is the business id, unique among the tenant's live rules (at
	// most 50 characters); sets name their members by it.
	RuleID   string `json:"ruleId"`
	RuleName string `json:"ruleName"`
	// Description is free text, at most 5,000 characters.
	Description string `json:"description"`
	RuleType    Type   `json:"ruleType"` // one of Types
	// RuleCategory is free text a host groups rules by (at most 50
	// characters); it does not change execution.
	RuleCategory string `json:"ruleCategory"`
	// EntityType is what the rule applies to ("order"); Execute runs the
	// rules of one entity type.
	EntityType string `json:"entityType"`
	// EventType limits the rule to one event ("beforeUpdate"); empty
	// applies to every event.
	EventType string `json:"eventType"`
	// ConditionExpression is the condition as package condition parses
	// it (compact JSON).
	ConditionExpression json.RawMessage `json:"conditionExpression"`
	// SuccessActions run when the condition holds, FailureActions when it
	// does not; nil is none.
	SuccessActions []action.Action `json:"successActions" jsonschema:"nullable"`
	FailureActions []action.Action `json:"failureActions" jsonschema:"nullable"` // see SuccessActions
	// Enabled false keeps the rule from running (a set reports it
	// SKIPPED).
	Enabled bool `json:"enabled"`
	// Priority orders Execute's rules, highest first: 0 to 9999.
	Priority int `json:"priority"`
	// Version is the host's own revision number of the rule (at least 1);
	// the service stores it and does not change it.
	Version int `json:"version"`
	// EffectiveFrom and EffectiveTo bound when the rule applies, both
	// inclusive, in UTC; nil is unbounded.
	EffectiveFrom *time.Time `json:"effectiveFrom"`
	EffectiveTo   *time.Time `json:"effectiveTo"` // see EffectiveFrom
	TenantID      string     `json:"tenantId"`
	// OrganizationID is the organization the rule was created in (the
	// scope's active one); empty makes it the whole tenant's. It decides
	// who may read it and where it applies.
	OrganizationID string `json:"organizationId"`
	// CreatedBy is the creating actor (store.Scope.ActorID): a user id or
	// "api_key:<id>"; may be empty.
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt changes with every update (and the soft delete); compiled
	// conditions are reused while it is unchanged.
	UpdatedAt time.Time `json:"updatedAt"`
}

// RuleSet is a named, ordered group of rules executed together.
type RuleSet struct {
	// ID is the set's id, chosen by its creator: uppercase letters and
	// underscores, at most 50, unique in the tenant.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Description is free text, at most 2,000 characters.
	Description string `json:"description"`
	// Enabled false refuses the set's execution (SET_DISABLED).
	Enabled bool `json:"enabled"`
	// MemberCount counts the members whose rules are live, of every
	// organization.
	MemberCount int       `json:"memberCount"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// Members are filled in by GetSet only: those the scope may read, by
	// sequence.
	Members []SetMember `json:"members,omitempty"`
}

// SetMember is a rule's place in a set.
type SetMember struct {
	// SetID is the set's id; empty in GetSet's member list.
	SetID string `json:"setId,omitempty"`
	// RuleID, RuleName and RuleType are the member rule's.
	RuleID   string `json:"ruleId"`
	RuleName string `json:"ruleName"`
	RuleType Type   `json:"ruleType"` // see RuleID
	// Sequence orders the set's members, ascending (ties by ruleId): 0 to
	// 2147483647.
	Sequence int `json:"sequence"`
	// Enabled false leaves the member out of the set's executions.
	Enabled bool      `json:"enabled"`
	AddedAt time.Time `json:"addedAt"` // when the rule joined the set
	// UpdatedAt is the last UpdateMember's time; nil until then.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// RuleUUID is the member rule's id (Rule.ID), which keys the
	// membership in a Store; not part of the JSON.
	RuleUUID string `json:"-"`
}

// The event types the area emits.
const (
	EventRuleCreated   = "business_rules.rule.created"
	EventRuleUpdated   = "business_rules.rule.updated"
	EventRuleDeleted   = "business_rules.rule.deleted"
	EventSetCreated    = "business_rules.set.created"
	EventSetUpdated    = "business_rules.set.updated"
	EventSetDeleted    = "business_rules.set.deleted"
	EventMemberAdded   = "business_rules.set_member.added"
	EventMemberUpdated = "business_rules.set_member.updated"
	EventMemberRemoved = "business_rules.set_member.removed"
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventRuleCreated, Label: "Business rule created", Description: "A business rule was created."},
	{ID: EventRuleUpdated, Label: "Business rule updated", Description: "A business rule was changed."},
	{ID: EventRuleDeleted, Label: "Business rule deleted", Description: "A business rule was deleted."},
	{ID: EventSetCreated, Label: "Rule set created", Description: "A rule set was created."},
	{ID: EventSetUpdated, Label: "Rule set updated", Description: "A rule set's name, description or enabled flag changed."},
	{ID: EventSetDeleted, Label: "Rule set deleted", Description: "A rule set was deleted (its members detached)."},
	{ID: EventMemberAdded, Label: "Rule added to set", Description: "A rule became a member of a rule set."},
	{ID: EventMemberUpdated, Label: "Rule set member updated", Description: "A member's sequence or enabled flag changed."},
	{ID: EventMemberRemoved, Label: "Rule removed from set", Description: "A rule was removed from a rule set."},
	{ID: EventNotificationCreated, Label: "Rule notification", Description: "A rule's NOTIFY action asks for a notification (recipients, subject, message)."},
	{ID: EventEmitted, Label: "Rule event", Description: "A rule's EMIT_EVENT action emitted the event named in data.event."},
	{ID: EventExecutionFailed, Label: "Rule execution failed", Description: "A rule's condition could not be evaluated during an execution."},
}

// Error codes of the rule-set API.
const (
	CodeSetNotFound      = "SET_NOT_FOUND"
	CodeRuleNotFound     = "RULE_NOT_FOUND"
	CodeRuleAlreadyInSet = "RULE_ALREADY_IN_SET"
	CodeSetHasMembers    = "SET_HAS_MEMBERS"
	CodeSetExists        = "SET_ALREADY_EXISTS"
	CodeMemberNotFound   = "MEMBER_NOT_FOUND"
	CodeSetDisabled      = "SET_DISABLED"
)

// CodedError is a rule-set error with its code: errors.Is matches Kind
// (store.ErrNotFound, store.ErrConflict), and Details carries extra facts
// (memberCount).
type CodedError struct {
	Kind    error  // the store error errors.Is matches
	Code    string // a stable machine-readable code (the Code constants)
	Message string
	Details map[string]any // extra facts, or nil
}

// Error returns the message.
func (e *CodedError) Error() string { return e.Message }

// Unwrap returns Kind, so errors.Is matches it.
func (e *CodedError) Unwrap() error { return e.Kind }

// PublicMessage returns the message, which is safe to show the caller.
func (e *CodedError) PublicMessage() string { return e.Message }
