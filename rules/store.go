package rules

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage the service runs on. Every method runs on the
// Querier it is given: the database, or the transaction the service holds,
// so that what it writes commits with the rest of the change (the event,
// the version bump). The service opens the transactions; a Store never
// does.
//
// SQLStore is the implementation on both of the store package's engines,
// and the default (Options.Store); rulestest.Run is the conformance suite
// a Store must pass.
//
// Conventions every method keeps:
//   - Reads and writes are confined to one tenant; reads given a scope
//     return only what it may read: rows of no organization (the whole
//     tenant's) or of one sc.AllowsOrganization accepts.
//   - A rule is live until DeleteRule; a deleted rule is found by no read,
//     and its memberships disappear from every set read and member count.
//   - A read by key of something missing (or not the scope's), and a write
//     that finds nothing to change, return store.ErrNotFound; keys and
//     filter values the store cannot hold (NUL characters, invalid UTF-8)
//     find nothing rather than failing.
//   - Text filters ("Search") match case-insensitively as plain text (%, _
//     and \ are not wildcards).
type Store interface {
	// InsertRule adds r (its ID, scope, CreatedAt and UpdatedAt set). A
	// ruleId a live rule of the tenant has, or a taken ID, is
	// store.ErrConflict.
	InsertRule(ctx context.Context, q store.Querier, r *Rule) error
	// GetRule returns the live rule with id that sc may read.
	GetRule(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Rule, error)
	// GetRuleByRuleID returns the live rule with that business id that sc
	// may read.
	GetRuleByRuleID(ctx context.Context, q store.Querier, sc store.Scope, ruleID string) (*Rule, error)
	// RuleIDTaken reports whether a live rule of the tenant other than the
	// one with id except has ruleID.
	RuleIDTaken(ctx context.Context, q store.Querier, tenantID, ruleID, except string) (bool, error)
	// UpdateRule stores every field of a live rule but its ID, scope,
	// CreatedBy and CreatedAt, found by r.TenantID and r.ID. A ruleId
	// another live rule of the tenant has is store.ErrConflict.
	UpdateRule(ctx context.Context, q store.Querier, r *Rule) error
	// DeleteRule soft-deletes a live rule of the tenant at at (its
	// UpdatedAt too): no read finds it any more, and its ruleId is free.
	DeleteRule(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) error
	// ListRules returns the page f selects of the live rules sc may read,
	// ordered by f.SortField (ruleName, priority, updatedAt; createdAt
	// otherwise), then id, both in f.SortDesc's direction, and how many f
	// selects in all. Search matches ruleName or ruleId; the other text
	// filters are exact. With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	ListRules(ctx context.Context, q store.Querier, sc store.Scope, f RuleFilter) ([]*Rule, int, error)
	// EntityRules returns the tenant's enabled live rules of entityType,
	// every organization's, highest priority first, ties by ruleId (byte
	// order): what Execute's plan holds.
	EntityRules(ctx context.Context, q store.Querier, tenantID, entityType string) ([]*Rule, error)

	// InsertSet adds a set (CreatedAt and UpdatedAt set) to the tenant. A
	// set id the tenant has is store.ErrConflict.
	InsertSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error
	// GetSet returns the tenant's set, without Members, with its
	// MemberCount: its members whose rules are live, whatever their
	// organization.
	GetSet(ctx context.Context, q store.Querier, tenantID, id string) (*RuleSet, error)
	// UpdateSet stores a set's name, description, enabled flag and
	// UpdatedAt.
	UpdateSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error
	// DeleteSet deletes a set of the tenant and detaches its members (the
	// rules stay).
	DeleteSet(ctx context.Context, q store.Querier, tenantID, id string) error
	// ListSets returns the page f selects of the tenant's sets (with
	// MemberCount, without Members), oldest first (CreatedAt, then id),
	// and how many f selects in all. Search matches name or description.
	// With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	ListSets(ctx context.Context, q store.Querier, tenantID string, f SetFilter) ([]*RuleSet, int, error)

	// InsertMember adds m (m.RuleUUID a live rule of the tenant, AddedAt
	// set, UpdatedAt nil) to a set of the tenant. A rule already in the
	// set is store.ErrConflict.
	InsertMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error
	// GetMember returns the membership of the live rule with business id
	// ruleID in the tenant's set, whatever the rule's organization.
	GetMember(ctx context.Context, q store.Querier, tenantID, setID, ruleID string) (*SetMember, error)
	// UpdateMember stores a membership's sequence, enabled flag and
	// UpdatedAt, found by set and m.RuleUUID.
	UpdateMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error
	// DeleteMember takes the rule with id ruleUUID out of the tenant's set.
	DeleteMember(ctx context.Context, q store.Querier, tenantID, setID, ruleUUID string) error
	// ListMembers returns a set's members (enabled or not) whose rules are
	// live and readable by sc, by ascending sequence, then ruleId (byte
	// order).
	ListMembers(ctx context.Context, q store.Querier, sc store.Scope, setID string) ([]*SetMember, error)
	// EnabledMemberRules returns the tenant's set's enabled members with
	// their live rules (every organization's), by ascending sequence, then
	// ruleId (byte order): what ExecuteSet's plan holds.
	EnabledMemberRules(ctx context.Context, q store.Querier, tenantID, setID string) ([]MemberRule, error)

	// PrepareLogWrites readies InsertExecutions (it may do nothing). It is
	// called outside any transaction before each group commit of log rows.
	PrepareLogWrites(ctx context.Context, db *store.DB)
	// InsertExecutions writes executions and their rule rows (at most
	// 65,536 per execution: a rule row's id holds its index in four hex
	// digits).
	InsertExecutions(ctx context.Context, q store.Querier, xs []*ExecutionRecord) error
	// GetLog returns the rule log row with id, joined with its execution,
	// when sc may read the organization the execution was in.
	GetLog(ctx context.Context, q store.Querier, sc store.Scope, id string) (*LogEntry, error)
	// ListLogs returns the page f selects of the rule log rows sc may read
	// (as GetLog), newest first (by id descending: ids sort by time), and
	// how many f selects in all. f.From and f.To bound ExecutedAt,
	// inclusive; the text filters are exact.
	ListLogs(ctx context.Context, q store.Querier, sc store.Scope, f LogFilter) ([]*LogEntry, int, error)
	// ExecutionSummary counts the rule log rows sc may read (as ListLogs)
	// whose executions' ExecutedAt is at or after since (to the
	// microsecond), grouped by their executions' SetID: one entry per set
	// with at least one row, RuleSetID "" for the rows of executions of no
	// set. Executions counts the rows, Failures those whose Result is
	// FAILURE or ERROR. Name is the tenant's set's current name ("" when
	// the set is gone, and for no set). Entries are ordered by Executions,
	// descending, then Name, then RuleSetID (byte order).
	ExecutionSummary(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]SetExecutions, error)
	// DeleteLogsBefore deletes, in every tenant, the executions whose ids
	// were made before t's millisecond (store.IDTimeBound), with all their
	// rule rows, and returns how many rule rows went. q is a transaction
	// (Service.DeleteLogsBefore runs it in one).
	DeleteLogsBefore(ctx context.Context, q store.Querier, t time.Time) (int64, error)
}

// MemberRule is an enabled set member's rule and its sequence in the set.
type MemberRule struct {
	Rule     *Rule // the member rule
	Sequence int   // its place in the set, ascending
}

// ExecutionRecord is one logged execution as written: what its rules
// share, stored once, and a row per evaluated rule (SQLStore keeps them in
// a column of the execution's row).
type ExecutionRecord struct {
	// ID is a UUIDv7 whose last four hex digits are 0000; its rule rows'
	// ids are ID with their index there (so they sort in the order the
	// rules ran) and the time it encodes is ExecutedAt.
	ID             string
	TenantID       string
	OrganizationID string // the scope's active organization; may be empty
	SetID          string // the executed set; empty for other executions
	EntityType     string
	EntityID       string
	EventType      string
	// Input is the JSON {data (secrets redacted), entityType, entityId,
	// eventType, user:{id}} the rows without their own input share.
	Input      string
	ExecutedAt time.Time    // when the execution began (UTC)
	ExecutedBy string       // the scope's ActorID; may be empty
	Rules      []RuleRecord // one row per rule, in the order they ran
}

// RuleRecord is one evaluated rule's log row.
type RuleRecord struct {
	ID       string // see ExecutionRecord.ID
	RuleUUID string // the rule's Rule.ID
	RuleID   string
	RuleName string
	RuleType Type   // the rule's, when it ran
	Result   Status // SUCCESS, FAILURE, SKIPPED or ERROR
	// Input is the JSON input as this rule saw it; empty means the
	// execution's (it differs only after a SET_FIELD).
	Input string
	// Output is the JSON {conditionResult, actionsPlanned,
	// actionsExecuted}.
	Output          string
	ErrorMessage    string  // why the condition could not be evaluated
	ExecutionTimeMs float64 // the rule's evaluation, in milliseconds
}
