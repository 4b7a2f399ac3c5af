package rules

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// The SQL below serves both engines. Every query names the tenant first.

// ruleColumns are the columns scanRule reads.
var ruleColumns = ruleColumnsOf("")

// ruleColumnsOf lists scanRule's columns, qualified with alias when given.
func ruleColumnsOf(alias string) string {
	return store.Columns(alias, []string{"organization_id", "created_by"}, "id", "tenant_id", "organization_id", "rule_id",
		"rule_name", "description", "rule_type", "rule_category", "entity_type", "event_type", "condition_expression",
		"success_actions", "failure_actions", "enabled", "priority", "version", "effective_from", "effective_to", "created_by",
		"created_at", "updated_at")
}

func scanRule(s store.Scanner) (*Rule, error) {
	var r Rule
	var cond string
	var success, failure sql.NullString
	err := s.Scan(&r.ID, &r.TenantID, &r.OrganizationID, &r.RuleID, &r.RuleName, &r.Description, &r.RuleType, &r.RuleCategory,
		&r.EntityType, &r.EventType, &cond, &success, &failure, &r.Enabled, &r.Priority, &r.Version,
		&r.EffectiveFrom, &r.EffectiveTo, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return nil, err
	}
	r.ConditionExpression = json.RawMessage(cond)
	if r.SuccessActions, err = actionsOf(success); err != nil {
		return nil, err
	}
	r.FailureActions, err = actionsOf(failure)
	return &r, err
}

func actionsOf(s sql.NullString) ([]action.Action, error) {
	if !s.Valid {
		return nil, nil
	}
	var as []action.Action
	err := json.Unmarshal([]byte(s.String), &as)
	return as, err
}

func actionsText(as []action.Action) (any, error) {
	if as == nil {
		return nil, nil
	}
	b, err := json.Marshal(as)
	return string(b), err
}

// visible is the predicate of the live rules a scope may read.
func visible(sc store.Scope) *store.Conds {
	c := inScope(sc)
	c.And("deleted_at IS NULL")
	return c
}

// inScope is the predicate of the rules a scope may read: its tenant's,
// of no organization or of one it may read.
func inScope(sc store.Scope) *store.Conds {
	return sc.Readable("tenant_id", "organization_id")
}

// Keys and search terms that are not storable (NUL, invalid UTF-8) match
// nothing, without a query: PostgreSQL refuses them and SQLite's LIKE
// stops at a NUL.

func getRule(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Rule, error) {
	if !store.Storable(id) {
		return nil, store.ErrNotFound
	}
	c := visible(sc)
	c.And("id = ?", id)
	return store.One(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL(), c.Values()...)
}

func getRuleByRuleID(ctx context.Context, q store.Querier, sc store.Scope, ruleID string) (*Rule, error) {
	if !store.Storable(ruleID) {
		return nil, store.ErrNotFound
	}
	c := visible(sc)
	c.And("rule_id = ?", ruleID)
	return store.One(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL(), c.Values()...)
}

func ruleIDTaken(ctx context.Context, q store.Querier, tenantID, ruleID, except string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM business_rules WHERE tenant_id = $1 AND rule_id = $2 AND id <> $3 AND deleted_at IS NULL`,
		tenantID, ruleID, except).Scan(&n)
	return n > 0, err
}

// actionColumns is a rule's two action lists as stored: JSON text or NULL.
func actionColumns(r *Rule) (success, failure any, err error) {
	if success, err = actionsText(r.SuccessActions); err != nil {
		return nil, nil, err
	}
	failure, err = actionsText(r.FailureActions)
	return success, failure, err
}

func insertRule(ctx context.Context, q store.Querier, r *Rule) error {
	success, failure, err := actionColumns(r)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO business_rules (id, tenant_id, organization_id, rule_id, rule_name, description, rule_type,
		rule_category, entity_type, event_type, condition_expression, success_actions, failure_actions, enabled, priority, version,
		effective_from, effective_to, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		r.ID, r.TenantID, store.NullIfEmpty(r.OrganizationID), r.RuleID, r.RuleName, r.Description, string(r.RuleType),
		r.RuleCategory, r.EntityType, r.EventType, string(r.ConditionExpression), success, failure, r.Enabled, r.Priority, r.Version,
		r.EffectiveFrom, r.EffectiveTo, store.NullIfEmpty(r.CreatedBy), r.CreatedAt, r.UpdatedAt)
	return err
}

func updateRule(ctx context.Context, q store.Querier, r *Rule) error {
	success, failure, err := actionColumns(r)
	if err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `UPDATE business_rules SET rule_id = $3, rule_name = $4, description = $5, rule_type = $6,
		rule_category = $7, entity_type = $8, event_type = $9, condition_expression = $10, success_actions = $11,
		failure_actions = $12, enabled = $13, priority = $14, version = $15, effective_from = $16, effective_to = $17,
		updated_at = $18 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
		r.TenantID, r.ID, r.RuleID, r.RuleName, r.Description, string(r.RuleType), r.RuleCategory, r.EntityType, r.EventType,
		string(r.ConditionExpression), success, failure, r.Enabled, r.Priority, r.Version, r.EffectiveFrom, r.EffectiveTo, r.UpdatedAt)
}

func deleteRule(ctx context.Context, q store.Querier, tenantID, id string, now time.Time) error {
	return store.ExecOne(ctx, q, `UPDATE business_rules SET deleted_at = $3, updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, now)
}

// ruleSortColumns maps the rules list's sortField values.
var ruleSortColumns = map[string]string{"ruleName": "rule_name", "priority": "priority", "createdAt": "created_at", "updatedAt": "updated_at"}

func listRules(ctx context.Context, q store.Querier, sc store.Scope, f RuleFilter) ([]*Rule, int, error) {
	if !allStorable(f.Search, f.RuleID, string(f.RuleType), f.EntityType, f.EventType, f.RuleCategory) {
		return nil, 0, nil
	}
	d := q.Dialect()
	c := visible(sc)
	if f.Search != "" {
		p := store.LikeContains(f.Search)
		c.And("("+d.ContainsFold("rule_name", "?")+" OR "+d.ContainsFold("rule_id", "?")+")", p, p)
	}
	for col, v := range map[string]string{"rule_id": f.RuleID, "rule_type": string(f.RuleType), "entity_type": f.EntityType,
		"event_type": f.EventType, "rule_category": f.RuleCategory} {
		if v != "" {
			c.And(col+" = ?", v)
		}
	}
	if f.Enabled != nil {
		c.And("enabled = ?", *f.Enabled)
	}
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM business_rules WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	page := c.OrderPage(cmp.Or(ruleSortColumns[f.SortField], "created_at"), "id", f.SortDesc, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

const setColumns = `s.id, s.name, s.description, s.enabled, s.created_at, s.updated_at,
	(SELECT count(*) FROM business_rule_set_members m JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
	 WHERE m.tenant_id = s.tenant_id AND m.set_id = s.id)`

func scanSet(s store.Scanner) (*RuleSet, error) {
	var rs RuleSet
	return &rs, s.Scan(&rs.ID, &rs.Name, &rs.Description, &rs.Enabled, &rs.CreatedAt, &rs.UpdatedAt, &rs.MemberCount)
}

func getSet(ctx context.Context, q store.Querier, tenantID, id string) (*RuleSet, error) {
	if !store.Storable(id) {
		return nil, store.ErrNotFound
	}
	return store.One(ctx, q, scanSet, `SELECT `+setColumns+` FROM business_rule_sets s WHERE s.tenant_id = $1 AND s.id = $2`, tenantID, id)
}

func insertSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error {
	_, err := q.Exec(ctx, `INSERT INTO business_rule_sets (tenant_id, id, name, description, enabled, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, tenantID, rs.ID, rs.Name, rs.Description, rs.Enabled, rs.CreatedAt, rs.UpdatedAt)
	return err
}

func updateSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error {
	return store.ExecOne(ctx, q, `UPDATE business_rule_sets SET name = $3, description = $4, enabled = $5, updated_at = $6
		WHERE tenant_id = $1 AND id = $2`, tenantID, rs.ID, rs.Name, rs.Description, rs.Enabled, rs.UpdatedAt)
}

func deleteSet(ctx context.Context, q store.Querier, tenantID, id string) error {
	if _, err := q.Exec(ctx, `DELETE FROM business_rule_set_members WHERE tenant_id = $1 AND set_id = $2`, tenantID, id); err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `DELETE FROM business_rule_sets WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

func listSets(ctx context.Context, q store.Querier, tenantID string, f SetFilter) ([]*RuleSet, int, error) {
	if !store.Storable(f.Search) {
		return nil, 0, nil
	}
	d := q.Dialect()
	c := store.Where("s.tenant_id = ?", tenantID)
	if f.Search != "" {
		p := store.LikeContains(f.Search)
		c.And("("+d.ContainsFold("s.name", "?")+" OR "+d.ContainsFold("s.description", "?")+")", p, p)
	}
	if f.Enabled != nil {
		c.And("s.enabled = ?", *f.Enabled)
	}
	var total int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM business_rule_sets s WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	page := c.OrderPage("s.created_at", "s.id", false, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, scanSet, `SELECT `+setColumns+` FROM business_rule_sets s WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

const memberColumns = `m.set_id, r.rule_id, r.rule_name, r.rule_type, m.sequence, m.enabled, m.added_at, m.updated_at, m.rule_uuid`

func scanMember(s store.Scanner) (*SetMember, error) {
	var m SetMember
	return &m, s.Scan(&m.SetID, &m.RuleID, &m.RuleName, &m.RuleType, &m.Sequence, &m.Enabled, &m.AddedAt, &m.UpdatedAt, &m.ruleUUID)
}

const memberFrom = ` FROM business_rule_set_members m JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
	WHERE m.tenant_id = $1 AND m.set_id = $2`

// listMembers returns the members of a set whose rules sc may read, by
// sequence (then rule id).
func listMembers(ctx context.Context, q store.Querier, sc store.Scope, setID string) ([]*SetMember, error) {
	c := sc.Readable("m.tenant_id", "r.organization_id")
	c.And("m.set_id = ?", setID)
	ms, err := store.Many(ctx, q, scanMember, `SELECT `+memberColumns+` FROM business_rule_set_members m
		JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL WHERE `+c.SQL(), c.Values()...)
	slices.SortFunc(ms, func(a, b *SetMember) int { return bySequence(a.Sequence, a.RuleID, b.Sequence, b.RuleID) })
	return ms, err
}

// bySequence orders members by sequence, then ruleId in byte order (in Go
// rather than SQL, whose text order follows PostgreSQL's collation).
func bySequence(seqA int, ruleA string, seqB int, ruleB string) int {
	return cmp.Or(cmp.Compare(seqA, seqB), strings.Compare(ruleA, ruleB))
}

func getMember(ctx context.Context, q store.Querier, tenantID, setID, ruleID string) (*SetMember, error) {
	if !allStorable(setID, ruleID) {
		return nil, store.ErrNotFound
	}
	return store.One(ctx, q, scanMember, `SELECT `+memberColumns+memberFrom+` AND r.rule_id = $3`, tenantID, setID, ruleID)
}

func insertMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error {
	_, err := q.Exec(ctx, `INSERT INTO business_rule_set_members (tenant_id, set_id, rule_uuid, sequence, enabled, added_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, tenantID, m.SetID, m.ruleUUID, m.Sequence, m.Enabled, m.AddedAt)
	return err
}

func updateMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error {
	return store.ExecOne(ctx, q, `UPDATE business_rule_set_members SET sequence = $4, enabled = $5, updated_at = $6
		WHERE tenant_id = $1 AND set_id = $2 AND rule_uuid = $3`, tenantID, m.SetID, m.ruleUUID, m.Sequence, m.Enabled, m.UpdatedAt)
}

func deleteMember(ctx context.Context, q store.Querier, tenantID, setID, ruleUUID string) error {
	return store.ExecOne(ctx, q, `DELETE FROM business_rule_set_members WHERE tenant_id = $1 AND set_id = $2 AND rule_uuid = $3`,
		tenantID, setID, ruleUUID)
}

func allStorable(ss ...string) bool {
	for _, s := range ss {
		if !store.Storable(s) {
			return false
		}
	}
	return true
}

// readVersion reads the definitions version counter.
func readVersion(ctx context.Context, q store.Querier) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, `SELECT version FROM business_rules_version WHERE id = 1`).Scan(&v)
	return v, err
}

// bumpVersion advances the version counter in a change's transaction and
// returns the new version.
func bumpVersion(ctx context.Context, tx *store.Tx) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `UPDATE business_rules_version SET version = version + 1 WHERE id = 1 RETURNING version`).Scan(&v)
	return v, err
}

// memberRule is an enabled member's rule and sequence.
type memberRule struct {
	rule     *Rule
	sequence int
}

// listMemberRules returns a set's enabled members with their live rules,
// by sequence, then ruleId.
func listMemberRules(ctx context.Context, q store.Querier, tenantID, setID string) ([]memberRule, error) {
	ms, err := store.Many(ctx, q, func(s store.Scanner) (memberRule, error) {
		var m memberRule
		var err error
		m.rule, err = scanRule(store.ScanThen(s, &m.sequence))
		return m, err
	}, `SELECT `+ruleColumnsOf("r")+`, m.sequence FROM business_rule_set_members m
		JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
		WHERE m.tenant_id = $1 AND m.set_id = $2 AND m.enabled`, tenantID, setID)
	slices.SortFunc(ms, func(a, b memberRule) int { return bySequence(a.sequence, a.rule.RuleID, b.sequence, b.rule.RuleID) })
	return ms, err
}

// listEntityRules returns the tenant's enabled live rules of an entity
// type (every organization), highest priority first, ties by ruleId.
func listEntityRules(ctx context.Context, q store.Querier, tenantID, entityType string) ([]*Rule, error) {
	if !store.Storable(entityType) {
		return nil, nil
	}
	rs, err := store.Many(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules
		WHERE tenant_id = $1 AND entity_type = $2 AND enabled AND deleted_at IS NULL`, tenantID, entityType)
	slices.SortFunc(rs, func(a, b *Rule) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.RuleID, b.RuleID))
	})
	return rs, err
}
