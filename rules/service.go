package rules

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/rules/condition"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables.
var Migrations = store.Migrations{Line: "rules", FS: migrationsFS, Dir: "migrations"}

// Service manages rules, rule sets and their members, executes them and
// keeps the execution log. Every method reads the tenant (and
// organization) from the context's store.Scope.
type Service struct {
	db      *store.DB
	store   Store
	opts    Options
	plans   *plans
	commits *logWriter
}

// New returns the service over db, whose migrations include Migrations
// (for the default store; a store of the host's own needs only the store
// package's line). It starts nothing. Executions work at once;
// CALL_WEBHOOK actions and the log retention need a job engine
// (RegisterJobs).
// It returns an error only for options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	st := opts.Store
	if st == nil {
		st = NewSQLStore()
	}
	return &Service{db: db, store: st, opts: opts, plans: newPlans(db, st, planCheckInterval), commits: newLogWriter(db, st)}, nil
}

// planCheckInterval is how often an execution reads the version counter
// to see changes made by other processes.
const planCheckInterval = 250 * time.Millisecond

// Options configure the area. The zero value is ready to use.
type Options struct {
	// LogRetention is how long execution log rows are kept; zero means 90
	// days, negative keeps them forever.
	LogRetention time.Duration
	// AllowPrivateURLs lets CALL_WEBHOOK reach loopback, private and
	// link-local addresses (refused by default).
	AllowPrivateURLs bool
	// Signer signs CALL_WEBHOOK requests; nil sends them unsigned. The Kit
	// sets the webhooks area's, which signs a call with the secrets of the
	// tenant's active webhook registered for the call's URL.
	Signer CallSigner
	// Store holds rules, sets, members and the execution log; nil is the
	// SQL store (NewSQLStore) in the service's database. Another store must
	// pass rulestest.Run.
	Store Store
}

// DefaultLogRetention is the execution log's retention by default.
const DefaultLogRetention = 90 * 24 * time.Hour

// RegisterJobs registers the CALL_WEBHOOK worker and the hourly log
// retention job on e; call it before e starts.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	opts := s.opts
	if err := jobs.Register(e, newWebhookWorker(opts.AllowPrivateURLs, opts.Signer), &jobs.RegisterOpts{MaxAttempts: 8}); err != nil {
		return err
	}
	s.commits.jobs = e
	retention := opts.LogRetention
	if retention == 0 {
		retention = DefaultLogRetention
	}
	if retention < 0 {
		return nil
	}
	if err := jobs.Register(e, &pruneWorker{svc: s, retention: retention}, nil); err != nil {
		return err
	}
	e.Periodic(time.Hour, func() jobs.Args { return PruneLogs{} })
	return nil
}

// record ends a change's transaction: it emits the change's event and
// bumps the definitions version, which drops this process's cached plans
// once the change commits; on PostgreSQL the commit then waits until
// every live process has acknowledged it (plans.changed).
func (s *Service) record(ctx context.Context, tx *store.Tx, event string, sc store.Scope, data any) error {
	if err := s.plans.changed(ctx, tx); err != nil {
		return err
	}
	_, err := tx.EmitData(ctx, event, sc, data)
	return err
}

// Field limits, in characters (maxPriority is the largest priority).
const (
	maxSetID          = 50
	maxSetName        = 200
	maxSetDescription = 2000
	maxRuleID         = 50
	maxRuleName       = 200
	maxRuleText       = 5000
	maxRuleShort      = 50
	maxPriority       = 9999
)

var setIDPattern = regexp.MustCompile(`^[A-Z_]+$`)

// RuleInput is a rule as a caller writes it (create, or full update): the
// fields are Rule's, with their limits. Enabled, Priority and Version are
// required; nil means missing. EffectiveFrom and EffectiveTo are a date
// ("2025-01-31") or an RFC 3339 date-time; nil or "" is unbounded.
type RuleInput struct {
	RuleID      string `json:"ruleId" jsonschema:"required,minLength=1,maxLength=50"`
	RuleName    string `json:"ruleName" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=5000"`
	// RuleType is required: one of Types.
	RuleType Type `json:"ruleType" jsonschema:"required"`
	// RuleCategory is free text rules are grouped by.
	RuleCategory string `json:"ruleCategory" jsonschema:"maxLength=50"`
	EntityType   string `json:"entityType" jsonschema:"required,minLength=1,maxLength=50"`
	EventType    string `json:"eventType" jsonschema:"maxLength=50"`
	// ConditionExpression is required: a condition tree (package condition).
	ConditionExpression json.RawMessage `json:"conditionExpression" jsonschema:"required"`
	// SuccessActions and FailureActions are JSON lists of actions (package
	// action); null or absent is none.
	SuccessActions json.RawMessage `json:"successActions"`
	// FailureActions: see SuccessActions.
	FailureActions json.RawMessage `json:"failureActions"`
	// Enabled is required.
	Enabled *bool `json:"enabled" jsonschema:"required"`
	// Priority is required: 0 to 9999, the highest runs first.
	Priority *int `json:"priority" jsonschema:"required,minimum=0,maximum=9999"`
	// Version is required: the host's revision number, at least 1.
	Version *int `json:"version" jsonschema:"required,minimum=1,maximum=2147483647"`
	// EffectiveFrom and EffectiveTo: see the type comment.
	EffectiveFrom *string `json:"effectiveFrom"`
	// EffectiveTo: see the type comment.
	EffectiveTo *string `json:"effectiveTo"`
}

// CreateRule stores a new rule in the scope's tenant and organization.
// Invalid input is a *store.ValidationError naming each field; a ruleId a
// live rule of the tenant has is store.ErrConflict.
func (s *Service) CreateRule(ctx context.Context, in RuleInput) (*Rule, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	r := &Rule{ID: store.NewID(), TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, CreatedBy: sc.ActorID}
	if err := r.apply(in, action.Options{AllowPrivateURLs: s.opts.AllowPrivateURLs}); err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.checkRuleIDFree(ctx, tx, r); err != nil {
			return err
		}
		r.CreatedAt, r.UpdatedAt = tx.Now(), tx.Now()
		if err := s.store.InsertRule(ctx, tx, r); err != nil {
			return conflictAsDuplicate(err, r.RuleID)
		}
		return s.record(ctx, tx, EventRuleCreated, sc, r)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// UpdateRule replaces a rule's fields (the id, scope and creation stay).
func (s *Service) UpdateRule(ctx context.Context, id string, in RuleInput) (*Rule, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var r *Rule
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if r, err = s.store.GetRule(ctx, tx, sc, id); err != nil {
			return ruleNotFound(err)
		}
		if err := r.apply(in, action.Options{AllowPrivateURLs: s.opts.AllowPrivateURLs}); err != nil {
			return err
		}
		if err := s.checkRuleIDFree(ctx, tx, r); err != nil {
			return err
		}
		r.UpdatedAt = tx.Now()
		if err := s.store.UpdateRule(ctx, tx, r); err != nil {
			return conflictAsDuplicate(err, r.RuleID)
		}
		return s.record(ctx, tx, EventRuleUpdated, sc, r)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// GetRule returns a live rule of the scope.
func (s *Service) GetRule(ctx context.Context, id string) (*Rule, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.store.GetRule(ctx, s.db, sc, id)
	return r, ruleNotFound(err)
}

// DeleteRule soft-deletes a rule; it leaves every set it was in.
func (s *Service) DeleteRule(ctx context.Context, id string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		r, err := s.store.GetRule(ctx, tx, sc, id)
		if err != nil {
			return ruleNotFound(err)
		}
		if err := s.store.DeleteRule(ctx, tx, sc.TenantID, id, tx.Now()); err != nil {
			return err
		}
		tx.AfterCommit(func() { s.plans.forget(r.ID) })
		return s.record(ctx, tx, EventRuleDeleted, sc, r)
	})
}

// RuleFilter selects and orders rules. Search matches names and ids
// case-insensitively; the other text filters are exact.
type RuleFilter struct {
	Search, RuleID, EntityType, EventType, RuleCategory string // non-empty fields must match; Search matches name or rule id
	RuleType                                            Type   // "" matches every type
	// Enabled, when not nil, selects enabled or disabled rules.
	Enabled *bool
	// SortField is ruleName, priority, createdAt (default) or updatedAt;
	// ties go by id (creation order).
	SortField string
	SortDesc  bool // descending instead of ascending
	// Limit is the page size (the caller's to bound; 0 returns no rows,
	// only the total); Offset skips that many rules.
	Limit, Offset int
}

// ListRules returns a page of the scope's live rules and the total.
// With a search, the total counts at most
// store.SearchCap(ctx)+1 matches: store.CapTotal turns it into the total
// to report (store.SearchTotalCap) and whether it is capped.
func (s *Service) ListRules(ctx context.Context, f RuleFilter) ([]*Rule, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	return s.store.ListRules(ctx, s.db, sc, f)
}

// apply validates in and writes it into r. Unless opts allow private
// URLs, a CALL_WEBHOOK url that is plainly not public is refused here, at
// save time, as well as when the call connects.
func (r *Rule) apply(in RuleInput, opts action.Options) error {
	v := &store.ValidationError{}
	text := func(field, value string, required bool, limit int) string {
		switch {
		case required && strings.TrimSpace(value) == "":
			v.Add(field, "is required")
		case utf8.RuneCountInString(value) > limit:
			v.Add(field, fmt.Sprintf("must be at most %d characters", limit))
		case store.HasNUL(value):
			v.Add(field, "must not contain the NUL character")
		}
		return value
	}
	r.RuleID = text("ruleId", in.RuleID, true, maxRuleID)
	r.RuleName = text("ruleName", in.RuleName, true, maxRuleName)
	r.Description = text("description", in.Description, false, maxRuleText)
	r.RuleCategory = text("ruleCategory", in.RuleCategory, false, maxRuleShort)
	r.EntityType = text("entityType", in.EntityType, true, maxRuleShort)
	r.EventType = text("eventType", in.EventType, false, maxRuleShort)
	r.RuleType = in.RuleType
	if !slices.Contains(Types, in.RuleType) {
		v.Add("ruleType", "must be one of GUARD, VALIDATION, CALCULATION, ACTION, ASSIGNMENT")
	}
	for field, raw := range map[string]json.RawMessage{"conditionExpression": in.ConditionExpression,
		"successActions": in.SuccessActions, "failureActions": in.FailureActions} {
		if store.JSONHasNUL(raw) {
			v.Add(field, "must not contain the NUL character")
		}
	}
	if len(in.ConditionExpression) == 0 || string(in.ConditionExpression) == "null" {
		v.Add("conditionExpression", "is required")
	} else if _, err := condition.Parse(in.ConditionExpression); err != nil {
		v.Add("conditionExpression", err.Error())
	} else {
		r.ConditionExpression = compact(in.ConditionExpression)
	}
	var err error
	if r.SuccessActions, err = actions(in.SuccessActions, opts); err != nil {
		v.Add("successActions", err.Error())
	}
	if r.FailureActions, err = actions(in.FailureActions, opts); err != nil {
		v.Add("failureActions", err.Error())
	}
	if in.Enabled == nil {
		v.Add("enabled", "is required")
	} else {
		r.Enabled = *in.Enabled
	}
	switch {
	case in.Priority == nil:
		v.Add("priority", "is required")
	case *in.Priority < 0 || *in.Priority > maxPriority:
		v.Add("priority", "must be an integer from 0 to 9999")
	default:
		r.Priority = *in.Priority
	}
	switch {
	case in.Version == nil:
		v.Add("version", "is required")
	case *in.Version < 1 || *in.Version > math.MaxInt32:
		v.Add("version", "must be a positive integer (at most 2147483647)")
	default:
		r.Version = *in.Version
	}
	r.EffectiveFrom = date(v, "effectiveFrom", in.EffectiveFrom)
	r.EffectiveTo = date(v, "effectiveTo", in.EffectiveTo)
	if r.EffectiveFrom != nil && r.EffectiveTo != nil && r.EffectiveTo.Before(*r.EffectiveFrom) {
		v.Add("effectiveTo", "must not be before effectiveFrom")
	}
	return v.Err()
}

// actions decodes and validates an action list; null or absent is nil.
func actions(raw json.RawMessage, opts action.Options) ([]action.Action, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var as []action.Action
	if err := json.Unmarshal(raw, &as); err != nil {
		return nil, errors.New("must be an array of actions {type, config}")
	}
	if err := action.ValidateWith(as, opts); err != nil {
		return nil, err
	}
	return as, nil
}

// date reads an ISO 8601 date ("2025-01-31") or date-time; empty or null
// is none.
func date(v *store.ValidationError, field string, s *string) *time.Time {
	if s == nil || *s == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, *s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	v.Add(field, "must be an ISO 8601 date (2025-01-31) or date-time")
	return nil
}

// compact removes insignificant space from valid JSON.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func (s *Service) checkRuleIDFree(ctx context.Context, q store.Querier, r *Rule) error {
	taken, err := s.store.RuleIDTaken(ctx, q, r.TenantID, r.RuleID, r.ID)
	if err != nil {
		return err
	}
	if taken {
		return duplicateRuleID(r.RuleID)
	}
	return nil
}

func duplicateRuleID(ruleID string) error {
	return store.Errorf(store.ErrConflict, "A rule with ruleId %q already exists", ruleID)
}

// conflictAsDuplicate reports a unique-index violation (a concurrent
// create) as the duplicate it is.
func conflictAsDuplicate(err error, ruleID string) error {
	if errors.Is(err, store.ErrConflict) {
		return duplicateRuleID(ruleID)
	}
	return err
}

func ruleNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	return err
}
