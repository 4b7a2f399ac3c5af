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
	ID                  string          `json:"id"`
	RuleID              string          `json:"ruleId"`
	RuleName            string          `json:"ruleName"`
	Description         string          `json:"description"`
	RuleType            Type            `json:"ruleType"`
	RuleCategory        string          `json:"ruleCategory"`
	EntityType          string          `json:"entityType"`
	EventType           string          `json:"eventType"`
	ConditionExpression json.RawMessage `json:"conditionExpression"`
	SuccessActions      []action.Action `json:"successActions"`
	FailureActions      []action.Action `json:"failureActions"`
	Enabled             bool            `json:"enabled"`
	Priority            int             `json:"priority"`
	Version             int             `json:"version"`
	EffectiveFrom       *time.Time      `json:"effectiveFrom"`
	EffectiveTo         *time.Time      `json:"effectiveTo"`
	TenantID            string          `json:"tenantId"`
	OrganizationID      string          `json:"organizationId"`
	CreatedBy           string          `json:"createdBy,omitempty"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
}

// RuleSet is a named, ordered group of rules executed together.
type RuleSet struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Enabled     bool        `json:"enabled"`
	MemberCount int         `json:"memberCount"`
	CreatedAt   time.Time   `json:"createdAt"`
	UpdatedAt   time.Time   `json:"updatedAt"`
	Members     []SetMember `json:"members,omitempty"`
}

// SetMember is a rule's place in a set.
type SetMember struct {
	SetID     string     `json:"setId,omitempty"`
	RuleID    string     `json:"ruleId"`
	RuleName  string     `json:"ruleName"`
	RuleType  Type       `json:"ruleType"`
	Sequence  int        `json:"sequence"`
	Enabled   bool       `json:"enabled"`
	AddedAt   time.Time  `json:"addedAt"`
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
	Kind    error
	Code    string
	Message string
	Details map[string]any
}

func (e *CodedError) Error() string         { return e.Message }
func (e *CodedError) Unwrap() error         { return e.Kind }
func (e *CodedError) PublicMessage() string { return e.Message }
