package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/rules/condition"
	"github.com/tenantkit/tenantkit/store"
)

// compiledRule is a rule ready to run: its condition parsed once. It is
// shared by concurrent executions and never modified.
type compiledRule struct {
	rule    *Rule
	cond    *condition.Condition
	condErr error // the stored condition does not parse: every run is ERROR
	// readsContext: its condition or actions read the execution's context
	// names (execution.contextNames), which are made only for such rules.
	readsContext bool
}

func compile(r *Rule) *compiledRule {
	c := &compiledRule{rule: r}
	if c.cond, c.condErr = condition.Parse(r.ConditionExpression); c.condErr != nil {
		c.condErr = fmt.Errorf("condition cannot be evaluated: %w", c.condErr)
	}
	c.readsContext = c.cond != nil && c.cond.ReadsContext() || actionsReadContext(r.SuccessActions) || actionsReadContext(r.FailureActions)
	return c
}

// actionsReadContext reports whether planning as may read the context
// names: whether a text of their settings holds a placeholder ("{{"),
// the only way action.Plan reads them. Making the names costs four maps
// per execution, which rules whose actions are plain texts do without.
func actionsReadContext(as []action.Action) bool {
	for _, a := range as {
		if mayHoldPlaceholder(a.Config) {
			return true
		}
	}
	return false
}

// mayHoldPlaceholder reports whether v, a setting's value, holds a text
// with "{{"; a value of a type it does not know counts as one that may.
func mayHoldPlaceholder(v any) bool {
	switch t := v.(type) {
	case nil, bool, float64, int, int64, json.Number:
		return false
	case string:
		return strings.Contains(t, "{{")
	case []string:
		return slices.ContainsFunc(t, func(s string) bool { return strings.Contains(s, "{{") })
	case []any:
		return slices.ContainsFunc(t, mayHoldPlaceholder)
	case map[string]string:
		for _, s := range t {
			if strings.Contains(s, "{{") {
				return true
			}
		}
		return false
	case map[string]any:
		for _, e := range t {
			if mayHoldPlaceholder(e) {
				return true
			}
		}
		return false
	}
	return true
}

// eval evaluates the condition; a failure (a stored condition that no
// longer parses, a panic) is an error, never a crash.
func (c *compiledRule) eval(data map[string]any, env *condition.Env) (held bool, err error) {
	if c.condErr != nil {
		return false, c.condErr
	}
	defer func() {
		if p := recover(); p != nil {
			held, err = false, fmt.Errorf("condition evaluation failed: %v", p)
		}
	}()
	return c.cond.Eval(data, env), nil
}

// window says why the rule is outside its effective window at now, or "".
// Both bounds are inclusive.
func (c *compiledRule) window(now time.Time) string {
	r := c.rule
	switch {
	case r.EffectiveFrom != nil && now.Before(*r.EffectiveFrom):
		return "Rule is not yet effective (starts " + r.EffectiveFrom.Format(time.RFC3339) + ")"
	case r.EffectiveTo != nil && now.After(*r.EffectiveTo):
		return "Rule has expired (ended " + r.EffectiveTo.Format(time.RFC3339) + ")"
	}
	return ""
}

// setPlan is a set ready to execute: its enabled members' compiled rules
// in ascending sequence (then ruleId).
type setPlan struct {
	id, name string
	enabled  bool
	members  []planMember
}

type planMember struct {
	rule     *compiledRule
	sequence int
}

// entityPlan is every enabled live rule of one entity type, highest
// priority first, ties by ruleId.
type entityPlan struct {
	rules []*compiledRule
}

type planKey struct{ tenantID, name string }

// definitionsCounter is the store version counter every change to rules,
// sets or members bumps (store.Tx.BumpVersion).
const definitionsCounter = "rules.definitions"

// plans caches execution plans so that an execution reads no rows: sets
// by tenant and id, entity types' rules by tenant and entity type (two
// internal/vcache caches over one version counter), and compiled rules by
// id, reused while their updatedAt is unchanged. A change bumps the
// counter once (changed) and invalidates both caches with the version it
// made; other processes' changes are noticed by notification (PostgreSQL)
// or at each cache's next check, and at once by executions that take
// effect (sync).
type plans struct {
	db       *store.DB
	store    Store
	sets     *vcache.Cache[planKey, *setPlan]
	entities *vcache.Cache[planKey, *entityPlan]
	// acks registers this process among those a change waits for (the
	// package doc, "Cached plans"); nil unless other processes may share
	// the database.
	acks *vcache.Acks

	mu       sync.RWMutex
	compiled map[string]*compiledRule // by rule UUID
}

// Bounds of the caches: past them a cache starts over.
const (
	maxCachedPlans = 10000
	// maxCompiled bounds the compiled rules kept (about 2 KB each).
	maxCompiled = 20000
)

// serversTable is where the processes that cache plans beat
// (vcache.Acks; migration 0010).
const serversTable = "business_rule_servers"

func newPlans(db *store.DB, st Store, interval time.Duration) *plans {
	p := &plans{db: db, store: st, compiled: map[string]*compiledRule{},
		sets:     vcache.New[planKey, *setPlan](db, definitionsCounter, interval, maxCachedPlans),
		entities: vcache.New[planKey, *entityPlan](db, definitionsCounter, interval, maxCachedPlans)}
	if db.Dialect().Notifies() {
		p.acks = vcache.NewAcks(db, serversTable, definitionsCounter, p.invalidate, nil, "rules")
	}
	return p
}

// invalidate has both caches drop what is older than version v.
func (p *plans) invalidate(v int64) {
	p.sets.Invalidate(v)
	p.entities.Invalidate(v)
}

// changed records a change to rules, sets or members in tx: one bump of
// the counter, and once tx commits both caches drop what is older and,
// where other processes may share the database, the commit waits until
// every live one has acknowledged the change (vcache.AwaitAcks), so that
// an execution that starts after the change returned, on any process,
// runs it.
func (p *plans) changed(ctx context.Context, tx *store.Tx) error {
	v, err := p.sets.Changed(ctx, tx)
	if err != nil {
		return err
	}
	tx.AfterCommit(func() { p.entities.Invalidate(v) })
	if p.acks != nil {
		tx.AfterCommit(func() {
			if err := vcache.AwaitAcks(ctx, p.db, serversTable, p.acks, v); err != nil {
				p.db.Logger().ErrorContext(ctx, "rules: waiting for processes to acknowledge a definitions change failed",
					"version", v, "err", err)
			}
		})
	}
	return nil
}

// sync makes both caches honour every change to rules, sets or members
// that returned before this call, by any process: an execution that takes
// effect (not a dry run) calls it before it takes its plan, so a rule
// changed or a set disabled through one server is honoured by the next
// execution through another. While this process's lease holds
// (vcache.Acks.Trusted) every such change was acknowledged by it before
// returning, and sync reads nothing; otherwise it reads the counter
// (vcache.Cache.Sync; one read serves both caches, which share it). On
// SQLite it does nothing.
func (p *plans) sync(ctx context.Context) error {
	if p.acks != nil && p.acks.Trusted() {
		return nil
	}
	if err := p.sets.Sync(ctx); err != nil {
		return err
	}
	p.entities.Invalidate(p.sets.Version())
	return nil
}

// compiledFor returns r compiled, reusing the cached compilation while
// r's updatedAt is unchanged.
func (p *plans) compiledFor(r *Rule) *compiledRule {
	p.mu.RLock()
	c := p.compiled[r.ID]
	p.mu.RUnlock()
	if c != nil && c.rule.UpdatedAt.Equal(r.UpdatedAt) {
		return c
	}
	c = compile(r)
	p.mu.Lock()
	if len(p.compiled) >= maxCompiled {
		p.compiled = map[string]*compiledRule{}
	}
	p.compiled[r.ID] = c
	p.mu.Unlock()
	return c
}

// forget drops a deleted rule's compilation (a process that did not
// delete it drops it when the map starts over, at maxCompiled).
func (p *plans) forget(id string) {
	p.mu.Lock()
	delete(p.compiled, id)
	p.mu.Unlock()
}

// set returns the tenant's set id ready to execute.
func (p *plans) set(ctx context.Context, tenantID, id string) (*setPlan, error) {
	return p.sets.Get(ctx, planKey{tenantID, id}, func(tx *store.Tx) (*setPlan, error) {
		rs, err := p.store.GetSet(ctx, tx, tenantID, id)
		if err != nil {
			return nil, setNotFound(err, id)
		}
		members, err := p.store.EnabledMemberRules(ctx, tx, tenantID, id)
		if err != nil {
			return nil, err
		}
		plan := &setPlan{id: rs.ID, name: rs.Name, enabled: rs.Enabled, members: make([]planMember, len(members))}
		for i, m := range members {
			plan.members[i] = planMember{rule: p.compiledFor(m.Rule), sequence: m.Sequence}
		}
		return plan, nil
	})
}

// entity returns the tenant's enabled rules of an entity type.
func (p *plans) entity(ctx context.Context, tenantID, entityType string) (*entityPlan, error) {
	return p.entities.Get(ctx, planKey{tenantID, entityType}, func(tx *store.Tx) (*entityPlan, error) {
		rs, err := p.store.EntityRules(ctx, tx, tenantID, entityType)
		if err != nil {
			return nil, err
		}
		plan := &entityPlan{rules: make([]*compiledRule, len(rs))}
		for i, r := range rs {
			plan.rules[i] = p.compiledFor(r)
		}
		return plan, nil
	})
}

// rule returns one live rule the scope may read, compiled.
func (p *plans) rule(ctx context.Context, sc store.Scope, id string) (*compiledRule, error) {
	r, err := p.store.GetRule(ctx, p.db, sc, id)
	if err != nil {
		return nil, err
	}
	return p.compiledFor(r), nil
}
