package rules

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/rules/condition"
	"github.com/tenantkit/tenantkit/store"
)

// compiledRule is a rule ready to run: its condition parsed once. It is
// shared by concurrent executions and never modified.
type compiledRule struct {
	rule    *Rule
	cond    *condition.Condition
	condErr error // the stored condition does not parse: every run is ERROR
}

func compile(r *Rule) *compiledRule {
	c := &compiledRule{rule: r}
	if c.cond, c.condErr = condition.Parse(r.ConditionExpression); c.condErr != nil {
		c.condErr = fmt.Errorf("condition cannot be evaluated: %w", c.condErr)
	}
	return c
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

// plans caches execution plans so that an execution reads no rows: sets
// by tenant and id, entity types' rules by tenant and entity type, and
// compiled rules by id, reused while their updatedAt is unchanged.
//
// Every change to rules, sets or members bumps the version counter in its
// transaction. A committed change in this process drops the cached plans
// at once (invalidate); changes by other processes are noticed by the
// first execution after each check interval, which reads the counter
// (refresh). A plan is cached only if no newer version was seen while it
// was loaded, so a slow load never publishes stale rules.
type plans struct {
	db       *store.DB
	interval time.Duration

	mu       sync.RWMutex
	version  int64 // the newest version seen
	sets     map[planKey]*setPlan
	entities map[planKey]*entityPlan
	compiled map[string]*compiledRule // by rule UUID

	lastCheck atomic.Int64 // unix nanoseconds of the last version read
	checking  atomic.Bool
}

// Bounds of the caches: past them a cache starts over.
const (
	maxCachedPlans = 10000
	maxCompiled    = 100000
)

func newPlans(db *store.DB, interval time.Duration) *plans {
	p := &plans{db: db, interval: interval, compiled: map[string]*compiledRule{}}
	p.reset()
	return p
}

func (p *plans) reset() {
	p.sets = map[planKey]*setPlan{}
	p.entities = map[planKey]*entityPlan{}
}

// invalidate records version v and drops every plan older than it.
func (p *plans) invalidate(v int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v > p.version {
		p.version = v
		p.reset()
	}
}

// refresh reads the version counter when the last read is older than the
// interval (one caller at a time; the others go on with the cache), so
// that other processes' changes show.
func (p *plans) refresh(ctx context.Context) {
	now := time.Now().UnixNano()
	if now-p.lastCheck.Load() < int64(p.interval) || !p.checking.CompareAndSwap(false, true) {
		return
	}
	defer p.checking.Store(false)
	v, err := readVersion(ctx, p.db)
	if err != nil {
		return // the next execution tries again
	}
	p.lastCheck.Store(now)
	p.invalidate(v)
}

// publish caches a plan loaded at version v, unless something newer was
// seen meanwhile.
func publish[T any](p *plans, m func() map[planKey]*T, key planKey, plan *T, v int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v < p.version {
		return
	}
	if v > p.version {
		p.version = v
		p.reset()
	}
	cache := m()
	if len(cache) >= maxCachedPlans {
		p.reset()
		cache = m()
	}
	cache[key] = plan
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

// set returns the tenant's set id ready to execute.
func (p *plans) set(ctx context.Context, tenantID, id string) (*setPlan, error) {
	return cached(ctx, p, func() map[planKey]*setPlan { return p.sets }, planKey{tenantID, id}, func(tx *store.Tx) (*setPlan, error) {
		rs, err := getSet(ctx, tx, tenantID, id)
		if err != nil {
			return nil, setNotFound(err, id)
		}
		members, err := listMemberRules(ctx, tx, tenantID, id)
		if err != nil {
			return nil, err
		}
		plan := &setPlan{id: rs.ID, name: rs.Name, enabled: rs.Enabled, members: make([]planMember, len(members))}
		for i, m := range members {
			plan.members[i] = planMember{rule: p.compiledFor(m.rule), sequence: m.sequence}
		}
		return plan, nil
	})
}

// entity returns the tenant's enabled rules of an entity type.
func (p *plans) entity(ctx context.Context, tenantID, entityType string) (*entityPlan, error) {
	return cached(ctx, p, func() map[planKey]*entityPlan { return p.entities }, planKey{tenantID, entityType}, func(tx *store.Tx) (*entityPlan, error) {
		rs, err := listEntityRules(ctx, tx, tenantID, entityType)
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

// cached returns the plan under key in the cache m returns, or loads it
// (reading the version first, see plans) and publishes it.
func cached[T any](ctx context.Context, p *plans, m func() map[planKey]*T, key planKey, load func(tx *store.Tx) (*T, error)) (*T, error) {
	p.refresh(ctx)
	p.mu.RLock()
	plan := m()[key]
	p.mu.RUnlock()
	if plan != nil {
		return plan, nil
	}
	var v int64
	err := p.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if v, err = readVersion(ctx, tx); err != nil {
			return err
		}
		plan, err = load(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	publish(p, m, key, plan, v)
	return plan, nil
}

// rule returns one live rule the scope may read, compiled.
func (p *plans) rule(ctx context.Context, sc store.Scope, id string) (*compiledRule, error) {
	r, err := getRule(ctx, p.db, sc, id)
	if err != nil {
		return nil, err
	}
	return p.compiledFor(r), nil
}
