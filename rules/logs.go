package rules

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// LogEntry is one execution log row: a rule evaluated by an execution
// that was not a dry run.
type LogEntry struct {
	ID string `json:"id"`
	// ExecutionID is shared by the rows of one execution.
	ExecutionID string `json:"executionId"`
	// SetID is the executed set, empty for other executions.
	SetID string `json:"setId,omitempty"`
	// RuleUUID is the rule's id (Rule.ID), RuleID its business id; both,
	// and the name and type, as they were when it ran.
	RuleUUID   string `json:"ruleUuid"`
	RuleID     string `json:"ruleId"`
	RuleName   string `json:"ruleName"`
	RuleType   Type   `json:"ruleType"` // the rule's type when it ran
	EntityType string `json:"entityType"`
	EntityID   string `json:"entityId"`
	EventType  string `json:"eventType"`
	Result     Status `json:"result"` // SUCCESS, FAILURE, SKIPPED or ERROR
	// InputContext is {data (secrets redacted), entityType, entityId,
	// eventType, user:{id}}.
	InputContext json.RawMessage `json:"inputContext"`
	// OutputContext is {conditionResult, actionsPlanned, actionsExecuted}.
	OutputContext json.RawMessage `json:"outputContext"`
	// ErrorMessage says why the condition could not be evaluated
	// (result ERROR).
	ErrorMessage string `json:"errorMessage,omitempty"`
	// ExecutionTimeMs is the rule's evaluation time in milliseconds (to
	// the microsecond).
	ExecutionTimeMs float64 `json:"executionTimeMs"`
	// ExecutedAt is when the execution began (UTC), the instant its id
	// encodes.
	ExecutedAt time.Time `json:"executedAt"`
	TenantID   string    `json:"tenantId"`
	// OrganizationID is the scope's active organization when it ran;
	// empty: the whole tenant's. It decides who may read the row.
	OrganizationID string `json:"organizationId,omitempty"`
	// ExecutedBy is the acting user's id ("api_key:<id>" for a key).
	ExecutedBy string `json:"executedBy,omitempty"`
}

// LogFilter selects log rows, newest first. Zero fields do not filter.
type LogFilter struct {
	// RuleID is the rule's business id.
	RuleID, EntityType, EntityID string
	Result                       Status // "" selects every result
	// From and To bound executedAt, inclusive.
	From, To *time.Time
	// Limit is the page size (0: 50); Offset skips that many rows.
	Limit, Offset int
}

// ListLogs returns a page of the scope's execution log, newest first, and
// the total. Rows are visible to the scopes that may read the
// organization they were written in.
func (s *Service) ListLogs(ctx context.Context, f LogFilter) ([]*LogEntry, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	f.Limit = cmp.Or(f.Limit, 50)
	var items []*LogEntry
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error { // the page and its total agree
		items, total, err = s.store.ListLogs(ctx, tx, sc, f)
		return err
	})
	return items, total, err
}

// GetLog returns one log row of the scope; "Log entry not found"
// (store.ErrNotFound) otherwise.
func (s *Service) GetLog(ctx context.Context, id string) (*LogEntry, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	l, err := s.store.GetLog(ctx, s.db, sc, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Errorf(store.ErrNotFound, "Log entry not found")
	}
	return l, err
}

// DeleteLogsBefore deletes every tenant's executions (and their rule log
// rows) whose ids are from before t's millisecond, and returns how many
// rule rows went. An execution's id is made as it starts, so this is the
// executions before t, to the millisecond. The retention job calls it.
func (s *Service) DeleteLogsBefore(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		n, err = s.store.DeleteLogsBefore(ctx, tx, t)
		return err
	})
	return n, err
}

// PruneLogs is the periodic job that enforces the log retention.
type PruneLogs struct{}

// Kind names the job.
func (PruneLogs) Kind() string { return "business_rules.prune_logs" }

type pruneWorker struct {
	svc       *Service
	retention time.Duration
}

func (w *pruneWorker) Work(ctx context.Context, _ *jobs.Job[PruneLogs]) error {
	_, err := w.svc.DeleteLogsBefore(ctx, time.Now().Add(-w.retention))
	return err
}
