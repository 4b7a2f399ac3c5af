package rules

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SetExecutions is the execution log of one rule set over a window,
// counted (Service.ExecutionSummary).
type SetExecutions struct {
	// RuleSetID is the executed set's id; "" gathers the executions of no
	// set (Execute and ExecuteRule).
	RuleSetID string `json:"ruleSetId"`
	// Name is the set's name now; "" for no set, and for a set deleted
	// since.
	Name string `json:"name"`
	// Executions counts the rule executions logged: one per rule
	// evaluated (not skipped) by a logged execution of the set.
	Executions int `json:"executions"`
	// Failures counts those whose result was FAILURE or ERROR.
	Failures int `json:"failures"`
}

// ExecutionSummary counts the execution log of the context's scope from
// since (inclusive, to the microsecond) per rule set: the log rows
// ListLogs would list with From since, grouped by the set their execution
// ran, each set listed once it has at least one row in the window,
// ordered by Executions, descending, then Name and RuleSetID (byte
// order). A missing scope is store.ErrNoScope.
//
// The log has one row per rule an execution evaluated (SKIPPED rules, and
// dry runs, write none), and records the executed set on the execution
// (ExecuteSet); so a set's Executions are rule executions, its rules'
// rows, not calls of ExecuteSet: one call of a set whose three members
// ran counts three. Execute and ExecuteRule run no set: their rows are
// counted under RuleSetID "" and Name "". The set is the one executed,
// not the sets a rule belongs to: a rule that is a member of two sets
// counts only under the set that ran it.
//
// Failures are the rows whose result is FAILURE (the condition did not
// hold; for a GUARD, it blocked the transition) or ERROR (the condition
// could not be evaluated); SUCCESS rows are the rest of Executions.
//
// Rows are visible, as in ListLogs, to scopes that may read the
// organization the execution ran in. Sets belong to the tenant, so Name
// is the set's whatever the scope; a set deleted since keeps its id here,
// with Name "". Rows older than the log retention (Options.LogRetention)
// are gone and count nowhere.
func (s *Service) ExecutionSummary(ctx context.Context, since time.Time) ([]SetExecutions, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	sums, err := s.store.ExecutionSummary(ctx, s.db, sc, since)
	if err != nil {
		return nil, err
	}
	if sums == nil {
		sums = []SetExecutions{} // [] in JSON, not null
	}
	return sums, nil
}
