package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/rules/condition"
	"github.com/tenantkit/tenantkit/store"
)

// Input is what an execution runs against: the entity and event, the
// entity's data the conditions read, and whether to carry the actions out.
type Input struct {
	EntityType string `json:"entityType" jsonschema:"maxLength=50"`
	EntityID   string `json:"entityId" jsonschema:"maxLength=255"`
	EventType  string `json:"eventType" jsonschema:"maxLength=50"`
	// Data is the entity's data: JSON-shaped (maps, slices, strings,
	// float64 or json.Number, bool, nil). The execution never modifies it;
	// SET_FIELD works on a copy, returned as Result.Data.
	Data map[string]any `json:"data" jsonschema:"required"`
	// DryRun evaluates and plans without side effects: no log rows, no
	// events, no webhook calls, no SET_FIELD.
	DryRun bool `json:"dryRun"`
	// Context is extra execution context that "{{name}}" values and
	// placeholders read by name, beside user, tenant, organization,
	// entityType, entityId and eventType (which it cannot replace).
	Context map[string]any `json:"context,omitempty"`
}

// Status is a rule's result in an execution.
type Status string

// The results of a rule in an execution.
const (
	// StatusSuccess: the condition held (a GUARD: it let the transition
	// through).
	StatusSuccess Status = "SUCCESS"
	// StatusFailure: the condition did not hold (a GUARD: it blocked).
	StatusFailure Status = "FAILURE"
	// StatusError: the condition could not be evaluated.
	StatusError Status = "ERROR"
	// StatusSkipped: the rule did not run; Reason says why.
	StatusSkipped Status = "SKIPPED"
)

// Skip reasons.
const (
	ReasonBlocked  = "Previous rule blocked execution"
	ReasonDisabled = "Rule is disabled"
)

// Result is the outcome of an execution.
type Result struct {
	// SetID and SetName name the executed set (set executions only).
	SetID   string `json:"setId,omitempty"`
	SetName string `json:"setName,omitempty"`
	// Allowed is false when a GUARD rule blocked.
	Allowed bool `json:"allowed"`
	// ExecutedRules has one entry per rule, in the order they ran.
	ExecutedRules        []RuleResult `json:"executedRules"`
	TotalExecutionTimeMs float64      `json:"totalExecutionTimeMs"` // the whole execution, in milliseconds
	// Data is the entity data after the SET_FIELD actions (not in a dry
	// run).
	Data map[string]any `json:"data,omitzero"`
	// LogIDs are the execution log rows written (not in a dry run).
	LogIDs []string `json:"logIds,omitzero"`

	// dataJSON is Data's JSON and logRows the log rows written, as the
	// execution left them, for AppendReturnedJSON ("" and nil: none).
	dataJSON string
	logRows  []RuleRecord
}

// RuleResult is one rule's part in an execution. A skipped rule has only
// the identifying fields, Result and Reason.
type RuleResult struct {
	RuleID   string `json:"ruleId"`
	RuleName string `json:"ruleName"`
	RuleType Type   `json:"ruleType"` // the rule's type
	// Sequence is the member's place in the set (set executions only).
	Sequence *int   `json:"sequence,omitempty"`
	Result   Status `json:"result"` // SUCCESS, FAILURE, SKIPPED or ERROR
	// Reason says why a rule was skipped.
	Reason string `json:"reason,omitempty"`
	// ConditionResult reports whether the condition held.
	ConditionResult bool `json:"conditionResult"`
	// ActionsPlanned are the actions the outcome calls for (success
	// actions when the condition held, failure actions otherwise), with
	// their placeholders resolved.
	ActionsPlanned []action.Outcome `json:"actionsPlanned"`
	// ActionsExecuted reports each planned action carried out (not in a
	// dry run).
	ActionsExecuted []ActionResult `json:"actionsExecuted,omitzero"`
	ExecutionTimeMs float64        `json:"executionTimeMs"` // the rule's evaluation, in milliseconds
	// Error says why the condition could not be evaluated (StatusError).
	Error string `json:"error,omitempty"`
	// LogID is the rule's execution log row (not in a dry run).
	LogID string `json:"logId,omitempty"`
}

// ActionResult reports one action carried out.
type ActionResult struct {
	Type    action.Type `json:"type"`            // the action's type
	Success bool        `json:"success"`         // whether the action took effect
	Error   string      `json:"error,omitempty"` // why it did not
}

// Execution limits.
const (
	maxEntityID = 255
	// maxApplicable is the most rules Execute runs at once.
	maxApplicable = 100
	// maxLoggedRules is the most rules a logged execution evaluates: a
	// rule log row's id holds its index in four hex digits (rowID).
	maxLoggedRules = 1 << 16
)

// ExecuteSet runs the enabled members of an enabled set against in, in
// ascending sequence. Members that are rules of another organization than
// the scope's active one are left out, as Execute leaves them out. An unknown set is SET_NOT_FOUND (store.ErrNotFound),
// a disabled one SET_DISABLED (store.ErrConflict). entityType, entityId,
// eventType and data are required.
//
// Without DryRun the actions take effect and one execution log row per
// evaluated rule is written; they are durable when ExecuteSet returns.
func (s *Service) ExecuteSet(ctx context.Context, setID string, in Input) (*Result, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.validate(true); err != nil {
		return nil, err
	}
	if !in.DryRun {
		if err := s.plans.sync(ctx); err != nil {
			return nil, err
		}
	}
	plan, err := s.plans.set(ctx, sc.TenantID, setID)
	if err != nil {
		return nil, err
	}
	if !plan.enabled {
		return nil, &CodedError{Kind: store.ErrConflict, Code: CodeSetDisabled, Message: "Rule set is disabled"}
	}
	if !in.DryRun && len(plan.members) > maxLoggedRules {
		return nil, store.Errorf(store.ErrInvalid, "Rule count limit exceeded: the set has %d rules, at most %d run in one logged execution",
			len(plan.members), maxLoggedRules)
	}
	x, err := newExecution(sc, &in, len(plan.members))
	if err != nil {
		return nil, err
	}
	x.setID = plan.id
	sequences := make([]int, len(plan.members)) // the results' own, not the cached plan's
	for i := range plan.members {
		if !appliesToOrganization(plan.members[i].rule.rule, sc) {
			continue // another organization's rule: neither run nor shown
		}
		sequences[i] = plan.members[i].sequence
		x.run(plan.members[i].rule, &sequences[i])
	}
	return s.finish(ctx, x, plan.id, plan.name)
}

// Execute runs every enabled rule of in.EntityType that applies to
// in.EventType (a rule without an event type applies to every event; an
// empty in.EventType runs them all), highest priority first, ties by
// ruleId. Rules outside their effective window, and rules of another
// organization than the scope's active one, do not apply. entityType and
// data are required. More than 100 applicable rules is refused
// (store.ErrInvalid) rather than run in part.
func (s *Service) Execute(ctx context.Context, in Input) (*Result, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.validate(false); err != nil {
		return nil, err
	}
	if !in.DryRun {
		if err := s.plans.sync(ctx); err != nil {
			return nil, err
		}
	}
	plan, err := s.plans.entity(ctx, sc.TenantID, in.EntityType)
	if err != nil {
		return nil, err
	}
	x, err := newExecution(sc, &in, min(len(plan.rules), maxApplicable))
	if err != nil {
		return nil, err
	}
	applicable := make([]*compiledRule, 0, len(plan.rules))
	for _, c := range plan.rules {
		if c.rule.EventType != "" && in.EventType != "" && c.rule.EventType != in.EventType ||
			!appliesToOrganization(c.rule, sc) || c.window(x.now) != "" {
			continue
		}
		applicable = append(applicable, c)
	}
	if len(applicable) > maxApplicable {
		return nil, store.Errorf(store.ErrInvalid, "Rule count limit exceeded: %d rules apply, at most %d run in one execution",
			len(applicable), maxApplicable)
	}
	for _, c := range applicable {
		x.run(c, nil)
	}
	return s.finish(ctx, x, "", "")
}

// ExecuteRule runs one rule, by its id (the UUID), against in.
// in.EntityType defaults to the rule's; data is required. A disabled rule,
// one outside its effective window, or one written for another entity
// type or (when in.EventType is given) another event is reported SKIPPED
// with the reason.
func (s *Service) ExecuteRule(ctx context.Context, id string, in Input) (*Result, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.plans.rule(ctx, sc, id)
	if err != nil {
		return nil, ruleNotFound(err)
	}
	if in.EntityType == "" {
		in.EntityType = c.rule.EntityType
	}
	if err := in.validate(false); err != nil {
		return nil, err
	}
	x, err := newExecution(sc, &in, 1)
	if err != nil {
		return nil, err
	}
	x.run(c, nil)
	return s.finish(ctx, x, "", "")
}

// validate checks an execution's input; full is the set execution's
// contract, where entityId and eventType are required too.
func (in *Input) validate(full bool) error {
	v := &store.ValidationError{}
	text := func(field, value string, required bool, limit int) {
		switch {
		case required && strings.TrimSpace(value) == "":
			v.Add(field, "is required")
		case utf8.RuneCountInString(value) > limit:
			v.Add(field, fmt.Sprintf("must be at most %d characters", limit))
		case !store.Storable(value):
			v.Add(field, "must be valid UTF-8 text without NUL characters")
		}
	}
	text("entityType", in.EntityType, true, maxRuleShort)
	text("entityId", in.EntityID, full, maxEntityID)
	text("eventType", in.EventType, full, maxRuleShort)
	if in.Data == nil {
		v.Add("data", "is required (an object)")
	}
	return v.Err()
}

// appliesToOrganization: a rule of no organization applies to the whole
// tenant, one of an organization only when it is the scope's active one.
func appliesToOrganization(r *Rule, sc store.Scope) bool {
	return r.OrganizationID == "" || r.OrganizationID == sc.OrganizationID
}

// execution is one run of rules against an input.
type execution struct {
	sc      store.Scope
	in      *Input
	now     time.Time
	start   time.Time
	env     condition.Env
	data    map[string]any // in.Data until a SET_FIELD copies it
	blocked bool
	setID   string
	id      string // the execution's id; its log rows' ids derive from it (rowID)
	results []RuleResult
	writes  *writes
	// planned and executed are where the rules' ActionsPlanned and
	// ActionsExecuted are cut from (plannedSlice, executedSlice).
	planned  []action.Outcome
	executed []ActionResult
}

// actionsPerRule is how many actions per rule an execution's first
// planned and executed are made for.
const actionsPerRule = 2

// plannedSlice returns a rule's ActionsPlanned: n entries, cut from
// x.planned rather than allocated one slice per rule. Its capacity is n,
// so an append to one rule's never writes into the next's.
func (x *execution) plannedSlice(n int) []action.Outcome {
	if n == 0 {
		return []action.Outcome{} // not nil: the results and log write [] for it
	}
	if n > cap(x.planned)-len(x.planned) {
		x.planned = make([]action.Outcome, 0, max(n, actionsPerRule*(cap(x.results)-len(x.results))))
	}
	start := len(x.planned)
	x.planned = x.planned[:start+n]
	return x.planned[start : start+n : start+n]
}

// executedSlice returns a rule's ActionsExecuted: empty, with capacity
// for n, cut from x.executed as plannedSlice cuts from x.planned.
func (x *execution) executedSlice(n int) []ActionResult {
	if n == 0 {
		return []ActionResult{}
	}
	if n > cap(x.executed)-len(x.executed) {
		x.executed = make([]ActionResult, 0, max(n, actionsPerRule*(cap(x.results)-len(x.results))))
	}
	start := len(x.executed)
	x.executed = x.executed[:start+n]
	return x.executed[start : start : start+n]
}

// newExecution starts an execution of at most rules rules. Outside a dry
// run the data and the context must be storable in the log and events
// (JSON without NUL characters): they are checked here, before any rule
// runs.
func newExecution(sc store.Scope, in *Input, rules int) (*execution, error) {
	start := time.Now()
	now := start
	var id string
	if !in.DryRun {
		// executedAt is the instant the id encodes, so that retention's cut
		// by id (DeleteLogsBefore) and a cut by executedAt agree.
		id, now = store.NewIDWithTime()
	}
	x := &execution{sc: sc, in: in, now: now.UTC().Truncate(time.Microsecond), start: start, data: in.Data, results: make([]RuleResult, 0, rules)}
	x.env = condition.Env{Now: x.now} // Context: made by the first rule that reads it (run)
	if !in.DryRun {
		x.id = rowID(id, 0) // UUIDv7s are increasing within a process
		x.writes = &writes{scope: sc, execution: ExecutionRecord{Rules: make([]RuleRecord, 0, rules)}}
		if _, err := x.writes.inputContext(x); err != nil {
			return nil, err
		}
		if len(in.Context) > 0 { // its values reach log rows and events through placeholders
			b, err := json.Marshal(in.Context)
			if err := storableJSON("context", b, err); err != nil {
				return nil, err
			}
		}
	}
	return x, nil
}

// contextNames are the names "{{…}}" values and placeholders read besides
// the data: the caller's context, then the execution's own names, which
// the caller's cannot replace.
func (x *execution) contextNames() map[string]any {
	names := make(map[string]any, len(x.in.Context)+6)
	for k, v := range x.in.Context {
		names[k] = v
	}
	names["user"] = map[string]any{"id": x.sc.ActorID}
	names["tenant"] = map[string]any{"id": x.sc.TenantID}
	names["organization"] = map[string]any{"id": x.sc.OrganizationID}
	names["entityType"], names["entityId"], names["eventType"] = x.in.EntityType, x.in.EntityID, x.in.EventType
	return names
}

// run evaluates one rule (or records why it was skipped) and, outside a
// dry run, carries out its actions.
func (x *execution) run(c *compiledRule, sequence *int) {
	r := c.rule
	res := RuleResult{RuleID: r.RuleID, RuleName: r.RuleName, RuleType: r.RuleType, Sequence: sequence}
	if reason := x.skipReason(c); reason != "" {
		res.Result, res.Reason = StatusSkipped, reason
		x.results = append(x.results, res)
		return
	}
	if c.readsContext && x.env.Context == nil {
		x.env.Context = x.contextNames()
	}
	began := time.Now()
	held, evalErr := c.eval(x.data, &x.env)
	outcome := r.FailureActions
	if held {
		outcome = r.SuccessActions
	}
	if evalErr != nil {
		outcome = nil // an evaluation that did not complete calls for nothing
	}
	res.ConditionResult = held
	var input string
	if x.writes != nil {
		input, _ = x.writes.inputContext(x) // as the rule saw it, before its own SET_FIELDs; checked up front
	}
	res.ActionsPlanned = x.plannedSlice(len(outcome))
	if x.writes != nil {
		res.ActionsExecuted = x.executedSlice(len(outcome))
	}
	actx := action.Context{RuleID: r.RuleID, RuleName: r.RuleName, EntityType: x.in.EntityType, EntityID: x.in.EntityID,
		EventType: x.in.EventType, Data: x.data, Extra: x.env.Context, Now: x.now}
	guardVerdict := 0 // +1 an ALLOW_TRANSITION, -1 a BLOCK_TRANSITION
	for i, a := range outcome {
		res.ActionsPlanned[i] = action.Plan(a, &actx)
		switch a.Type {
		case action.BlockTransition:
			guardVerdict = -1
		case action.AllowTransition:
			if guardVerdict == 0 {
				guardVerdict = 1
			}
		}
		if x.writes != nil {
			res.ActionsExecuted = append(res.ActionsExecuted, x.carryOut(res.ActionsPlanned[i], &actx))
		}
	}
	switch {
	case evalErr != nil:
		res.Result, res.Error = StatusError, evalErr.Error()
	case r.RuleType == Guard && (guardVerdict < 0 || guardVerdict == 0 && !held):
		res.Result = StatusFailure
		x.blocked = true
	case r.RuleType == Guard || held:
		res.Result = StatusSuccess
	default:
		res.Result = StatusFailure
	}
	if evalErr != nil && r.RuleType == Guard {
		x.blocked = true // a guard that cannot decide does not let anything through
	}
	res.ExecutionTimeMs = millis(time.Since(began))
	if x.writes != nil {
		res.LogID = x.writes.log(x, c, &res, input)
	}
	x.results = append(x.results, res)
}

// skipReason says why a rule does not run, or "".
func (x *execution) skipReason(c *compiledRule) string {
	r := c.rule
	switch {
	case x.blocked:
		return ReasonBlocked
	case !r.Enabled:
		return ReasonDisabled
	}
	if reason := c.window(x.now); reason != "" {
		return reason
	}
	if r.EntityType != x.in.EntityType {
		return fmt.Sprintf("Rule applies to entity type %s, not %s", r.EntityType, x.in.EntityType)
	}
	if r.EventType != "" && x.in.EventType != "" && r.EventType != x.in.EventType {
		return fmt.Sprintf("Rule applies to event %s, not %s", r.EventType, x.in.EventType)
	}
	return ""
}

// finish completes an execution: totals, and outside a dry run the
// durable writes.
func (s *Service) finish(ctx context.Context, x *execution, setID, setName string) (*Result, error) {
	res := &Result{SetID: setID, SetName: setName, Allowed: !x.blocked, ExecutedRules: x.results}
	if x.writes != nil {
		res.Data, res.LogIDs = x.data, make([]string, 0, len(x.writes.execution.Rules))
		res.dataJSON, res.logRows = x.writes.answerData, x.writes.execution.Rules
		if err := s.commits.write(ctx, x.writes); err != nil {
			return nil, err
		}
		for _, r := range x.results {
			if r.LogID != "" {
				res.LogIDs = append(res.LogIDs, r.LogID)
			}
		}
	}
	res.TotalExecutionTimeMs = millis(time.Since(x.start))
	return res, nil
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
