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
	SetID      string `json:"setId,omitempty"`
	RuleUUID   string `json:"ruleUuid"`
	RuleID     string `json:"ruleId"`
	RuleName   string `json:"ruleName"`
	RuleType   Type   `json:"ruleType"`
	EntityType string `json:"entityType"`
	EntityID   string `json:"entityId"`
	EventType  string `json:"eventType"`
	Result     Status `json:"result"`
	// InputContext is {data (secrets redacted), entityType, entityId,
	// eventType, user:{id}}.
	InputContext json.RawMessage `json:"inputContext"`
	// OutputContext is {conditionResult, actionsPlanned, actionsExecuted}.
	OutputContext   json.RawMessage `json:"outputContext"`
	ErrorMessage    string          `json:"errorMessage,omitempty"`
	ExecutionTimeMs float64         `json:"executionTimeMs"`
	ExecutedAt      time.Time       `json:"executedAt"`
	TenantID        string          `json:"tenantId"`
	OrganizationID  string          `json:"organizationId,omitempty"`
	ExecutedBy      string          `json:"executedBy,omitempty"`
}

// LogFilter selects log rows, newest first. Zero fields do not filter.
type LogFilter struct {
	// RuleID is the rule's business id.
	RuleID, EntityType, EntityID string
	Result                       Status
	// From and To bound executedAt, inclusive.
	From, To      *time.Time
	Limit, Offset int
}

// logSelect reads rule log rows with their executions; a row without an
// input has its execution's.
const logSelect = `SELECT l.id, x.id, COALESCE(x.set_id, ''), l.rule_uuid, l.rule_id, l.rule_name, l.rule_type, x.entity_type,
	x.entity_id, x.event_type, l.result, COALESCE(l.input_context, x.input_context), l.output_context,
	COALESCE(l.error_message, ''), l.execution_time_ms, x.executed_at, l.tenant_id, COALESCE(x.organization_id, ''),
	COALESCE(x.executed_by, '')` + logFrom

// logFrom joins each rule row to its execution, whose id is the row's
// with 0000 for its last four digits (see rowID).
const logFrom = ` FROM business_rule_execution_logs l
	JOIN business_rule_executions x ON x.id = substr(l.id, 1, 32) || '0000' AND x.tenant_id = l.tenant_id WHERE `

func scanLog(s store.Scanner) (*LogEntry, error) {
	var l LogEntry
	var in, out string
	err := s.Scan(&l.ID, &l.ExecutionID, &l.SetID, &l.RuleUUID, &l.RuleID, &l.RuleName, &l.RuleType, &l.EntityType, &l.EntityID,
		&l.EventType, &l.Result, &in, &out, &l.ErrorMessage, &l.ExecutionTimeMs, &l.ExecutedAt, &l.TenantID,
		&l.OrganizationID, &l.ExecutedBy)
	l.InputContext, l.OutputContext = json.RawMessage(in), json.RawMessage(out)
	return &l, err
}

// logScope is the predicate of the log rows a scope may read: its
// tenant's, of executions in no organization or one it may read.
func logScope(sc store.Scope) *store.Conds {
	return sc.Readable("l.tenant_id", "x.organization_id")
}

// idMargin widens the id range that narrows a time filter: a row's id is
// made just after its execution's time is read.
const idMargin = time.Second

// ListLogs returns a page of the scope's execution log, newest first, and
// the total. Rows are visible to the scopes that may read the
// organization they were written in.
func (s *Service) ListLogs(ctx context.Context, f LogFilter) ([]*LogEntry, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	if !allStorable(f.RuleID, f.EntityType, f.EntityID, string(f.Result)) {
		return nil, 0, nil
	}
	c := logScope(sc)
	for col, v := range map[string]string{"l.rule_id": f.RuleID, "x.entity_type": f.EntityType, "x.entity_id": f.EntityID, "l.result": string(f.Result)} {
		if v != "" {
			c.And(col+" = ?", v)
		}
	}
	// Ids sort by time: a range of them narrows a time filter to part of
	// the primary key.
	if f.From != nil {
		c.And("l.id >= ?", store.IDTimeBound(f.From.Add(-idMargin)))
		c.And("x.executed_at >= ?", f.From.UTC())
	}
	if f.To != nil {
		c.And("l.id < ?", store.IDTimeBound(f.To.Add(idMargin)))
		c.And("x.executed_at <= ?", f.To.UTC())
	}
	var items []*LogEntry
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*)`+logFrom+c.SQL(), c.Values()...).Scan(&total); err != nil {
			return err
		}
		page := c.OrderPage("l.id", "l.id", true, cmp.Or(f.Limit, 50), f.Offset)
		items, err = store.Many(ctx, tx, scanLog, logSelect+c.SQL()+page, c.Values()...)
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
	notFound := store.Errorf(store.ErrNotFound, "Log entry not found")
	if !store.IsID(id) {
		return nil, notFound
	}
	c := logScope(sc)
	c.And("l.id = ?", id)
	l, err := store.One(ctx, s.db, scanLog, logSelect+c.SQL(), c.Values()...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	return l, err
}

// DeleteLogsBefore deletes every tenant's executions (and their rule log
// rows) whose ids are from before t's millisecond, and returns how many
// rule rows went. An execution's id is made as it starts, so this is the
// executions before t, to the millisecond. The retention job calls it.
//
// Ids sort by time, so the old executions are a range of the executions'
// primary key, and each of their tenants' old rule rows a range of the
// rule rows' (tenant, id) key: no index on time is needed, and an
// execution's rows always go with it.
func (s *Service) DeleteLogsBefore(ctx context.Context, t time.Time) (int64, error) {
	bound := store.IDTimeBound(t)
	var n int64
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		tenants, err := store.Many(ctx, tx, func(sc store.Scanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		}, `SELECT DISTINCT tenant_id FROM business_rule_executions WHERE id < $1`, bound)
		if err != nil {
			return err
		}
		for _, tenant := range tenants {
			deleted, err := tx.Exec(ctx, `DELETE FROM business_rule_execution_logs WHERE tenant_id = $1 AND id < $2`, tenant, bound)
			if err != nil {
				return err
			}
			n += deleted
		}
		_, err = tx.Exec(ctx, `DELETE FROM business_rule_executions WHERE id < $1`, bound)
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
