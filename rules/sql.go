package rules

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on the store package's engines, SQLite and
// PostgreSQL: the SQL below serves both. Every query names the tenant
// first. It holds no state; the zero value is ready to use.
//
// The execution log is a row per execution holding its rule rows (see
// logRows). Ids are UUIDv7 text, which sorts by time: newest first is id
// descending, a time filter is narrowed by an id range, and retention
// deletes an id range of the primary key, so no index on time is needed.
type SQLStore struct{}

// NewSQLStore returns the SQL store.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

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

// GetRule implements Store.
func (SQLStore) GetRule(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Rule, error) {
	if !store.Storable(id) {
		return nil, store.ErrNotFound
	}
	c := visible(sc)
	c.And("id = ?", id)
	return store.One(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL(), c.Values()...)
}

// GetRuleByRuleID implements Store.
func (SQLStore) GetRuleByRuleID(ctx context.Context, q store.Querier, sc store.Scope, ruleID string) (*Rule, error) {
	if !store.Storable(ruleID) {
		return nil, store.ErrNotFound
	}
	c := visible(sc)
	c.And("rule_id = ?", ruleID)
	return store.One(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL(), c.Values()...)
}

// RuleIDTaken implements Store.
func (SQLStore) RuleIDTaken(ctx context.Context, q store.Querier, tenantID, ruleID, except string) (bool, error) {
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

// InsertRule implements Store.
func (SQLStore) InsertRule(ctx context.Context, q store.Querier, r *Rule) error {
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

// UpdateRule implements Store.
func (SQLStore) UpdateRule(ctx context.Context, q store.Querier, r *Rule) error {
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

// DeleteRule implements Store.
func (SQLStore) DeleteRule(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) error {
	if !allStorable(tenantID, id) {
		return store.ErrNotFound
	}
	return store.ExecOne(ctx, q, `UPDATE business_rules SET deleted_at = $3, updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id, at)
}

// ruleSortColumns maps the rules list's sortField values.
var ruleSortColumns = map[string]string{"ruleName": "rule_name", "priority": "priority", "createdAt": "created_at", "updatedAt": "updated_at"}

// ListRules implements Store.
func (SQLStore) ListRules(ctx context.Context, q store.Querier, sc store.Scope, f RuleFilter) ([]*Rule, int, error) {
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
	// The total: the kept counts (business_rule_list_counts, by
	// organization, type, entity type, event type, category and
	// enabled), unless a search or a rule id (unique among live rules:
	// at most one row of the index) is counted. A search counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped).
	var total int
	var err error
	if f.Search != "" {
		total, err = store.CountCapped(ctx, q, `FROM business_rules WHERE `+c.SQL(), c.Values()...)
		if err != nil {
			return nil, 0, err
		}
	} else if f.RuleID == "" {
		k := sc.Readable("tenant_id", "NULLIF(organization_id, '')")
		for col, v := range map[string]string{"rule_type": string(f.RuleType), "entity_type": f.EntityType,
			"event_type": f.EventType, "rule_category": f.RuleCategory} {
			if v != "" {
				k.And(col+" = ?", v)
			}
		}
		if f.Enabled != nil {
			k.And("enabled = ?", *f.Enabled)
		}
		if err := q.QueryRow(ctx, `SELECT CAST(COALESCE(sum(n), 0) AS BIGINT) FROM business_rule_list_counts WHERE `+k.SQL(),
			k.Values()...).Scan(&total); err != nil {
			return nil, 0, err
		}
	} else if err := q.QueryRow(ctx, `SELECT count(*) FROM business_rules WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if f.Limit <= 0 || total <= f.Offset && total <= store.SearchCap(ctx) { // no page to read (a capped total does not say)
		return nil, total, nil
	}
	page := c.OrderPage(cmp.Or(ruleSortColumns[f.SortField], "created_at"), "id", f.SortDesc, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, scanRule, `SELECT `+ruleColumns+` FROM business_rules WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

// setColumns are a set's columns (business_rule_sets s) with its member
// count, in scanSet's order.
var setColumns = `s.id, s.name, s.description, s.enabled, s.created_at, s.updated_at, ` + memberCount("s.tenant_id", "s.id")

// memberCount is the number of a set's members whose rules are live,
// whatever their organization (RuleSet.MemberCount): a scalar subquery
// on the set's tenant and id, columns or placeholders.
func memberCount(tenant, set string) string {
	return `(SELECT count(*) FROM business_rule_set_members cm
		JOIN business_rules cr ON cr.id = cm.rule_uuid AND cr.deleted_at IS NULL
		WHERE cm.tenant_id = ` + tenant + ` AND cm.set_id = ` + set + `)`
}

func scanSet(s store.Scanner) (*RuleSet, error) {
	var rs RuleSet
	return &rs, s.Scan(&rs.ID, &rs.Name, &rs.Description, &rs.Enabled, &rs.CreatedAt, &rs.UpdatedAt, &rs.MemberCount)
}

// GetSet implements Store.
func (SQLStore) GetSet(ctx context.Context, q store.Querier, tenantID, id string) (*RuleSet, error) {
	if !store.Storable(id) {
		return nil, store.ErrNotFound
	}
	return store.One(ctx, q, scanSet, `SELECT `+setColumns+` FROM business_rule_sets s WHERE s.tenant_id = $1 AND s.id = $2`, tenantID, id)
}

// InsertSet implements Store.
func (SQLStore) InsertSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error {
	_, err := q.Exec(ctx, `INSERT INTO business_rule_sets (tenant_id, id, name, description, enabled, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, tenantID, rs.ID, rs.Name, rs.Description, rs.Enabled, rs.CreatedAt, rs.UpdatedAt)
	return err
}

// UpdateSet implements Store.
func (SQLStore) UpdateSet(ctx context.Context, q store.Querier, tenantID string, rs *RuleSet) error {
	return store.ExecOne(ctx, q, `UPDATE business_rule_sets SET name = $3, description = $4, enabled = $5, updated_at = $6
		WHERE tenant_id = $1 AND id = $2`, tenantID, rs.ID, rs.Name, rs.Description, rs.Enabled, rs.UpdatedAt)
}

// DeleteSet implements Store.
func (SQLStore) DeleteSet(ctx context.Context, q store.Querier, tenantID, id string) error {
	if _, err := q.Exec(ctx, `DELETE FROM business_rule_set_members WHERE tenant_id = $1 AND set_id = $2`, tenantID, id); err != nil {
		return err
	}
	return store.ExecOne(ctx, q, `DELETE FROM business_rule_sets WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// ListSets implements Store.
func (SQLStore) ListSets(ctx context.Context, q store.Querier, tenantID string, f SetFilter) ([]*RuleSet, int, error) {
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
	// The total: the kept counts by enabled (business_rule_set_counts),
	// unless a search is counted (at most store.SearchCap(ctx)+1 matches).
	var total int
	var err error
	if f.Search == "" {
		k := store.Where("tenant_id = ?", tenantID)
		if f.Enabled != nil {
			k.And("enabled = ?", *f.Enabled)
		}
		if err := q.QueryRow(ctx, `SELECT CAST(COALESCE(sum(n), 0) AS BIGINT) FROM business_rule_set_counts WHERE `+k.SQL(),
			k.Values()...).Scan(&total); err != nil {
			return nil, 0, err
		}
	} else if total, err = store.CountCapped(ctx, q, `FROM business_rule_sets s WHERE `+c.SQL(), c.Values()...); err != nil {
		return nil, 0, err
	}
	page := c.OrderPage("s.created_at", "s.id", false, f.Limit, f.Offset)
	items, err := store.Many(ctx, q, scanSet, `SELECT `+setColumns+` FROM business_rule_sets s WHERE `+c.SQL()+page, c.Values()...)
	return items, total, err
}

const memberColumns = `m.set_id, r.rule_id, r.rule_name, r.rule_type, m.sequence, m.enabled, m.added_at, m.updated_at, m.rule_uuid`

// setWithMembers reads the tenant's set with the members sc may read
// (ListMembers' members, in its order) in one statement: the set's row
// joined with each member's, so that Service.GetSet needs no read
// transaction (on PostgreSQL one round trip instead of BEGIN, two reads
// and COMMIT). When the join has no row (no such set, or none of its
// members readable) the set is read alone, without members: a second
// statement, which may see a later state than the first (a member added
// between the two is then missing from Members, and counted in
// MemberCount, which counts every organization's members anyway).
func (st SQLStore) setWithMembers(ctx context.Context, q store.Querier, sc store.Scope, id string) (*RuleSet, error) {
	if !store.Storable(id) {
		return nil, store.ErrNotFound
	}
	c := sc.Readable("m.tenant_id", "r.organization_id")
	c.And("m.set_id = ?", id)
	// The member count is a table of one row, so that it is counted once
	// rather than once per member row (as setColumns' would be).
	count := `(SELECT ` + memberCount(c.Add(sc.TenantID), c.Add(id)) + ` AS n) k`
	var rs *RuleSet
	members, err := store.Many(ctx, q, func(s store.Scanner) (*SetMember, error) {
		var set RuleSet
		m, err := scanMember(store.ScanThen(s, &set.ID, &set.Name, &set.Description, &set.Enabled, &set.CreatedAt,
			&set.UpdatedAt, &set.MemberCount))
		if err == nil && rs == nil {
			rs = &set
		}
		return m, err
	}, `SELECT `+memberColumns+`, s.id, s.name, s.description, s.enabled, s.created_at, s.updated_at, k.n
		FROM business_rule_set_members m
		JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
		JOIN business_rule_sets s ON s.tenant_id = m.tenant_id AND s.id = m.set_id
		CROSS JOIN `+count+` WHERE `+c.SQL(), c.Values()...)
	if err != nil {
		return nil, err
	}
	if rs == nil {
		return st.GetSet(ctx, q, sc.TenantID, id)
	}
	slices.SortFunc(members, func(a, b *SetMember) int { return bySequence(a.Sequence, a.RuleID, b.Sequence, b.RuleID) })
	rs.Members = make([]SetMember, len(members))
	for i, m := range members {
		rs.Members[i] = *m
	}
	return rs, nil
}

func scanMember(s store.Scanner) (*SetMember, error) {
	var m SetMember
	return &m, s.Scan(&m.SetID, &m.RuleID, &m.RuleName, &m.RuleType, &m.Sequence, &m.Enabled, &m.AddedAt, &m.UpdatedAt, &m.RuleUUID)
}

const memberFrom = ` FROM business_rule_set_members m JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
	WHERE m.tenant_id = $1 AND m.set_id = $2`

// ListMembers implements Store.
func (SQLStore) ListMembers(ctx context.Context, q store.Querier, sc store.Scope, setID string) ([]*SetMember, error) {
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

// GetMember implements Store.
func (SQLStore) GetMember(ctx context.Context, q store.Querier, tenantID, setID, ruleID string) (*SetMember, error) {
	if !allStorable(setID, ruleID) {
		return nil, store.ErrNotFound
	}
	return store.One(ctx, q, scanMember, `SELECT `+memberColumns+memberFrom+` AND r.rule_id = $3`, tenantID, setID, ruleID)
}

// InsertMember implements Store.
func (SQLStore) InsertMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error {
	_, err := q.Exec(ctx, `INSERT INTO business_rule_set_members (tenant_id, set_id, rule_uuid, sequence, enabled, added_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, tenantID, m.SetID, m.RuleUUID, m.Sequence, m.Enabled, m.AddedAt)
	return err
}

// UpdateMember implements Store.
func (SQLStore) UpdateMember(ctx context.Context, q store.Querier, tenantID string, m *SetMember) error {
	return store.ExecOne(ctx, q, `UPDATE business_rule_set_members SET sequence = $4, enabled = $5, updated_at = $6
		WHERE tenant_id = $1 AND set_id = $2 AND rule_uuid = $3`, tenantID, m.SetID, m.RuleUUID, m.Sequence, m.Enabled, m.UpdatedAt)
}

// DeleteMember implements Store.
func (SQLStore) DeleteMember(ctx context.Context, q store.Querier, tenantID, setID, ruleUUID string) error {
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

// EnabledMemberRules implements Store.
func (SQLStore) EnabledMemberRules(ctx context.Context, q store.Querier, tenantID, setID string) ([]MemberRule, error) {
	if !allStorable(tenantID, setID) {
		return nil, nil
	}
	ms, err := store.Many(ctx, q, func(s store.Scanner) (MemberRule, error) {
		var m MemberRule
		var err error
		m.Rule, err = scanRule(store.ScanThen(s, &m.Sequence))
		return m, err
	}, `SELECT `+ruleColumnsOf("r")+`, m.sequence FROM business_rule_set_members m
		JOIN business_rules r ON r.id = m.rule_uuid AND r.deleted_at IS NULL
		WHERE m.tenant_id = $1 AND m.set_id = $2 AND m.enabled`, tenantID, setID)
	slices.SortFunc(ms, func(a, b MemberRule) int { return bySequence(a.Sequence, a.Rule.RuleID, b.Sequence, b.Rule.RuleID) })
	return ms, err
}

// EntityRules implements Store.
func (SQLStore) EntityRules(ctx context.Context, q store.Querier, tenantID, entityType string) ([]*Rule, error) {
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

// The execution log is one row per execution (business_rule_executions)
// whose rules column holds its evaluated rules, a JSON array of
// [rule_uuid, rule_id, rule_name, rule_type, result, input_context,
// output_context, error_message, execution_time_ms] in the order they ran
// (the contexts are JSON texts in JSON strings; a null input is the
// execution's; an output that is a default one, outputHeld or
// outputNotHeld, is the number 1 or 0, and an element without an error
// and with a zero execution time ends after its output: logSelect reads
// what it lacks as those defaults). The log's rule rows are the array's elements: a rule row's
// id is its execution's with the element's index in its last four hex
// digits (rowID). Reads expand the array in SQL (the Dialect's
// JSONArrayElements).

// logRows is the FROM clause of the rule rows (alias r: value, the
// element, and key, its index) with their executions (alias x), followed
// by WHERE.
func logRows(q store.Querier) string {
	return ` FROM business_rule_executions x CROSS JOIN ` + q.Dialect().JSONArrayElements("x.rules") + ` r WHERE `
}

// logSelect reads the rule rows of logRows. Members are read as text (one
// engine types ->> by the member, the other always as text) and the
// execution's input beside the rule's, which scanLog chooses between.
func logSelect(q store.Querier) string {
	return `SELECT x.id, r.key, COALESCE(x.set_id, ''), r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3,
		x.entity_type, x.entity_id, x.event_type, r.value ->> 4, r.value ->> 5, x.input_context, r.value ->> 6,
		COALESCE(r.value ->> 7, ''), COALESCE(r.value ->> 8, '0'), x.executed_at, x.tenant_id, COALESCE(x.organization_id, ''),
		COALESCE(x.executed_by, '')` + logRows(q)
}

// scanLog reads a row of logSelect; a rule row without an input has its
// execution's.
func scanLog(s store.Scanner) (*LogEntry, error) {
	var l LogEntry
	var key int
	var in *string
	var execIn, out, ms string
	err := s.Scan(&l.ExecutionID, &key, &l.SetID, &l.RuleUUID, &l.RuleID, &l.RuleName, &l.RuleType, &l.EntityType, &l.EntityID,
		&l.EventType, &l.Result, &in, &execIn, &out, &l.ErrorMessage, &ms, &l.ExecutedAt, &l.TenantID,
		&l.OrganizationID, &l.ExecutedBy)
	if err != nil {
		return nil, err
	}
	if l.ExecutionTimeMs, err = strconv.ParseFloat(ms, 64); err != nil {
		return nil, fmt.Errorf("rules: execution log row %s: execution time %q: %w", l.ExecutionID, ms, err)
	}
	if in == nil {
		in = &execIn
	}
	l.ID = rowID(l.ExecutionID, key)
	l.InputContext, l.OutputContext = json.RawMessage(*in), json.RawMessage(storedOutput(out))
	return &l, nil
}

// logScope is the predicate of the executions a scope may read: its
// tenant's, in no organization or one it may read.
func logScope(sc store.Scope) *store.Conds {
	return sc.Readable("x.tenant_id", "x.organization_id")
}

// idMargin widens the id range that narrows a time filter: an execution's
// id is made just after its time is read.
const idMargin = time.Second

// GetLog implements Store: the execution whose id the row's is, and its
// element at the index the id ends with.
func (SQLStore) GetLog(ctx context.Context, q store.Querier, sc store.Scope, id string) (*LogEntry, error) {
	if !store.IsID(id) {
		return nil, store.ErrNotFound
	}
	index, err := strconv.ParseUint(id[len(id)-4:], 16, 16)
	if err != nil {
		return nil, store.ErrNotFound
	}
	c := logScope(sc)
	c.And("x.id = ?", rowID(id, 0))
	c.And("r.key = ?", int(index))
	return store.One(ctx, q, scanLog, logSelect(q)+c.SQL(), c.Values()...)
}

// ListLogs implements Store. The page reads the executions newest first
// from the (tenant_id, id) index, or an entity's from (tenant_id,
// entity_id, id), and their elements last first; the total is logTotal.
func (SQLStore) ListLogs(ctx context.Context, q store.Querier, sc store.Scope, f LogFilter) ([]*LogEntry, int, error) {
	if !allStorable(f.RuleID, f.EntityType, f.EntityID, string(f.Result)) {
		return nil, 0, nil
	}
	total, err := logTotal(ctx, q, sc, f)
	if err != nil || total <= int64(f.Offset) || f.Limit <= 0 { // no page to read
		return nil, int(total), err
	}
	items, err := logPage(ctx, q, sc, f)
	return items, int(total), err
}

// logPage reads the page of f: the rule rows newest first (execution id,
// then index, descending). The query orders by execution id only, which
// the index gives as it is read: ordering by the index too made
// PostgreSQL's generic plan (a prepared statement's, which cannot see a
// time range's width) expand and sort every execution of the range. An
// execution's rows come together, so the first Offset+Limit rows are
// whole executions but the last, whose other matching rows a second
// query reads; the page is cut from them, ordered here.
func logPage(ctx context.Context, q store.Querier, sc store.Scope, f LogFilter) ([]*LogEntry, error) {
	conds := func() *store.Conds {
		c := logConds(sc, f, f.From, timeBound{f.To, true})
		elementConds(c, f)
		return c
	}
	c := conds()
	n := f.Offset + f.Limit
	rows, err := store.Many(ctx, q, scanLog, logSelect(q)+c.SQL()+" ORDER BY x.id DESC LIMIT "+c.Add(n), c.Values()...)
	if err != nil {
		return nil, err
	}
	if len(rows) == n {
		last := rows[n-1].ExecutionID
		c := conds()
		c.And("x.id = ?", last)
		rest, err := store.Many(ctx, q, scanLog, logSelect(q)+c.SQL(), c.Values()...)
		if err != nil {
			return nil, err
		}
		rows = append(slices.DeleteFunc(rows, func(l *LogEntry) bool { return l.ExecutionID == last }), rest...)
	}
	// A row's id is its execution's with its index in the last four hex
	// digits: descending ids are the list's order.
	slices.SortFunc(rows, func(a, b *LogEntry) int { return strings.Compare(b.ID, a.ID) })
	if f.Offset >= len(rows) {
		return nil, nil
	}
	return rows[f.Offset:min(n, len(rows))], nil
}

// timeBound is the end of a time range (nil: none), which includes its
// instant or not.
type timeBound struct {
	at        *time.Time
	inclusive bool
}

// logConds is the predicate of the executions sc may read that f's
// entity filters select and that began from from (nil: unbounded) to
// end. Ids sort by time: a range of them narrows a time filter to part
// of the index.
func logConds(sc store.Scope, f LogFilter, from *time.Time, end timeBound) *store.Conds {
	c := logScope(sc)
	if f.EntityID != "" {
		c.And("x.entity_id = ?", f.EntityID)
	}
	if f.EntityType != "" {
		c.And("x.entity_type = ?", f.EntityType)
	}
	if from != nil {
		c.And("x.id >= ?", store.IDTimeBound(from.Add(-idMargin)))
		c.And("x.executed_at >= ?", from.UTC())
	}
	if end.at != nil {
		c.And("x.id < ?", store.IDTimeBound(end.at.Add(idMargin)))
		if end.inclusive {
			c.And("x.executed_at <= ?", end.at.UTC())
		} else {
			c.And("x.executed_at < ?", end.at.UTC())
		}
	}
	return c
}

// elementConds adds f's rule and result filters: first on the
// executions' rule_results text (a LIKE, which keeps the executions that
// hold a matching rule row without parsing their JSON; SQLite's LIKE
// folds ASCII case, so there it may keep a few more), then on the rule
// rows (r).
func elementConds(c *store.Conds, f LogFilter) {
	if p := resultsPattern(f); p != "" {
		c.And(`x.rule_results LIKE ? ESCAPE '\'`, "%"+likeEscaper.Replace(p)+"%")
	}
	if f.RuleID != "" {
		c.And("r.value ->> 1 = ?", f.RuleID)
	}
	if f.Result != "" {
		c.And("r.value ->> 4 = ?", string(f.Result))
	}
}

// countLogRows counts the rule rows f selects among the executions that
// began from from to end: the executions' kept rule_count, or, filtered
// by rule or result, the occurrences of the filter's pattern in their
// rule_results (resultsPattern: each is one matching rule row), so that
// no JSON is parsed.
func countLogRows(ctx context.Context, q store.Querier, sc store.Scope, f LogFilter, from *time.Time, end timeBound) (int64, error) {
	c := logConds(sc, f, from, end)
	var n int64
	p := resultsPattern(f)
	if p == "" {
		err := q.QueryRow(ctx, `SELECT COALESCE(sum(x.rule_count), 0) FROM business_rule_executions x WHERE `+c.SQL(),
			c.Values()...).Scan(&n)
		return n, err
	}
	c.And(`x.rule_results LIKE ? ESCAPE '\'`, "%"+likeEscaper.Replace(p)+"%")
	occurrences := "(length(x.rule_results) - length(replace(x.rule_results, " + c.Add(p) + ", ''))) / " +
		c.Add(utf8.RuneCountInString(p))
	err := q.QueryRow(ctx, `SELECT COALESCE(sum(`+occurrences+`), 0) FROM business_rule_executions x WHERE `+c.SQL(),
		c.Values()...).Scan(&n)
	return n, err
}

// The rule_results column of an execution is, for each of its rule rows
// in order, "|" + the rule id (resultsEscaper: with \, | and : escaped)
// + ":" + the result + "|". A rule id holds no | or : then, and a result
// neither, so a pattern "|id:", ":RESULT|" or "|id:RESULT|" occurs once
// in each matching rule row's part and nowhere else: a LIKE finds the
// executions holding one, and the occurrences count the rows.
var (
	resultsEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\p`, `:`, `\c`)
	likeEscaper    = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
)

// resultsPattern is f's pattern in rule_results, "" without a rule or
// result filter.
func resultsPattern(f LogFilter) string {
	switch {
	case f.RuleID != "" && f.Result != "":
		return "|" + resultsEscaper.Replace(f.RuleID) + ":" + string(f.Result) + "|"
	case f.RuleID != "":
		return "|" + resultsEscaper.Replace(f.RuleID) + ":"
	case f.Result != "":
		return ":" + string(f.Result) + "|"
	}
	return ""
}

// The spans of the kept log counts (business_rule_log_counts): the whole
// log (bucket 0), a UTC day and a UTC hour (bucket: its start in Unix
// seconds), and an hour's pending counts (bucket: the hour's start):
// what writes added that FoldLogCounts has not yet moved into the three
// others. A total sums the pending rows of its range beside the others
// (logTotal).
const (
	spanAll, spanDay, spanHour, spanPending = 0, 1, 2, 3
	daySeconds, hourSeconds                 = 86400, 3600
)

// floorTo and ceilTo round Unix seconds down and up to a multiple of
// size.
func floorTo(sec, size int64) int64 { return sec - ((sec%size)+size)%size }
func ceilTo(sec, size int64) int64 {
	if f := floorTo(sec, size); f != sec {
		return f + size
	}
	return sec
}

// logTotal is the number of rule rows f selects in sc. Filtered by
// entity id, it counts that entity's rule rows (countLogRows, from the
// entity index). Otherwise it reads the kept counts: the whole log's
// without a time filter; with one, the days and hours wholly inside the
// range (bucket starts [a, b), a and b whole hours), plus the rule rows
// of the less than an hour before a and after b, counted. With only an
// end, it is the whole log's less the days and hours from b on, so that
// it reads as many rows however long ago the log began. Each sum adds
// the pending counts of its range (spanPending): those
// FoldLogCounts has not yet folded (the log writer folds once a minute).
func logTotal(ctx context.Context, q store.Querier, sc store.Scope, f LogFilter) (int64, error) {
	to := timeBound{f.To, true}
	if f.EntityID != "" {
		return countLogRows(ctx, q, sc, f, f.From, to)
	}
	var total int64
	sum := func(span int, lo, hi int64) error {
		if lo >= hi {
			return nil
		}
		k := sc.Readable("tenant_id", "NULLIF(organization_id, '')")
		if span != spanAll {
			k.And("bucket >= ?", lo)
			k.And("bucket < ?", hi)
		}
		for col, v := range map[string]string{"entity_type": f.EntityType, "rule_id": f.RuleID, "result": string(f.Result)} {
			if v != "" {
				k.And(col+" = ?", v)
			}
		}
		where := k.SQL()
		spanP, pendingP := k.Add(span), k.Add(spanPending)
		// The span's rows and the pending ones of its range: by rule id
		// from the kept counts, through their index by rule (migration
		// 0014); over every rule from the totals (migration 0013), whose
		// rows do not grow with the rules executed. Without statistics
		// SQLite prefers the primary key (its rows hold n, the index's
		// entries lead back to them), which walks every rule's rows of
		// the span: the statement names the index (Dialect.IndexedBy).
		var query string
		if f.RuleID != "" {
			query = `SELECT CAST(COALESCE(sum(n), 0) AS BIGINT) FROM ` +
				q.Dialect().IndexedBy("business_rule_log_counts", "business_rule_log_counts_rule_idx") + `
				WHERE span IN (` + spanP + `, ` + pendingP + `) AND ` + where
		} else {
			query = `SELECT CAST(COALESCE(sum(n), 0) AS BIGINT) FROM (
				SELECT n FROM business_rule_log_totals WHERE span = ` + spanP + ` AND ` + where + `
				UNION ALL
				SELECT n FROM business_rule_log_counts WHERE span = ` + pendingP + ` AND ` + where + `) t`
		}
		var n int64
		err := q.QueryRow(ctx, query, k.Values()...).Scan(&n)
		total += n
		return err
	}
	if f.From == nil && f.To == nil {
		return total, sum(spanAll, 0, 1)
	}
	a, b := int64(math.MinInt64), int64(math.MaxInt64)
	if f.From != nil {
		a = ceilTo(f.From.Unix(), hourSeconds)
		if f.From.Nanosecond() > 0 && a == f.From.Unix() {
			a += hourSeconds
		}
	}
	if f.To != nil {
		// The last hour start at or before To's next instant (a day's
		// last instant, as a date filter ends, ends the day's hours).
		b = floorTo(f.To.Add(time.Nanosecond).Unix(), hourSeconds)
	}
	if f.From != nil && f.To != nil && a >= b { // within an hour or two: counted
		return countLogRows(ctx, q, sc, f, f.From, to)
	}
	if f.From == nil { // only an end: the whole log less what began from b on (bounded by b's distance to now)
		if err := sum(spanAll, 0, 1); err != nil {
			return 0, err
		}
		all := total
		total = 0
		d := ceilTo(b, daySeconds)
		for _, part := range []func() error{func() error { return sum(spanHour, b, d) },
			func() error { return sum(spanDay, d, math.MaxInt64) }} {
			if err := part(); err != nil {
				return 0, err
			}
		}
		total = all - total
		edge := time.Unix(b, 0)
		if f.To.Before(edge) {
			return total, nil
		}
		n, err := countLogRows(ctx, q, sc, f, &edge, to)
		return total + n, err
	}
	d0, d1 := a, b
	if f.From != nil {
		d0 = ceilTo(a, daySeconds)
	}
	if f.To != nil {
		d1 = floorTo(b, daySeconds)
	}
	parts := []func() error{}
	if d0 < d1 {
		parts = append(parts, func() error { return sum(spanDay, d0, d1) },
			func() error { return sum(spanHour, a, d0) }, func() error { return sum(spanHour, d1, b) })
	} else {
		parts = append(parts, func() error { return sum(spanHour, a, b) })
	}
	if f.From != nil {
		parts = append(parts, func() error {
			edge := time.Unix(a, 0)
			if !f.From.Before(edge) {
				return nil
			}
			n, err := countLogRows(ctx, q, sc, f, f.From, timeBound{&edge, false})
			total += n
			return err
		})
	}
	if f.To != nil {
		parts = append(parts, func() error {
			edge := time.Unix(b, 0)
			if f.To.Before(edge) {
				return nil
			}
			n, err := countLogRows(ctx, q, sc, f, &edge, to)
			total += n
			return err
		})
	}
	for _, p := range parts {
		if err := p(); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// ExecutionSummary implements Store: the kept counts by set and hour
// (business_rule_execution_counts) of the hours from the first whole
// hour at or after since, and the executions of the part of an hour
// before it (an id range of their key bounded at both ends, so only that
// part's executions are read, then their exact time), summed
// per set in one GROUP BY. The order is made in Go, byte order on both
// engines.
func (SQLStore) ExecutionSummary(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]SetExecutions, error) {
	since = since.UTC().Truncate(time.Microsecond)
	kept := ceilTo(since.Unix(), hourSeconds) // the first hour the counts give
	if since.Nanosecond() > 0 && kept == since.Unix() {
		kept += hourSeconds
	}
	// Both parts read the scope's rows through the same placeholders: a
	// scope's ReadableCounted numbers its values alike each time.
	k := sc.ReadableCounted("k.tenant_id", "k.organization_id")
	x := sc.ReadableCounted("x.tenant_id", "COALESCE(x.organization_id, '')")
	from := `SELECT k.set_id, k.executions, k.failures FROM business_rule_execution_counts k
			WHERE ` + k.SQL() + ` AND k.hour >= ` + k.Add(kept)
	if edge := time.Unix(kept, 0).UTC(); since.Before(edge) {
		from += `
			UNION ALL
			SELECT COALESCE(x.set_id, ''), x.rule_count, x.failure_count FROM business_rule_executions x
			WHERE ` + x.SQL() + ` AND x.id >= ` + k.Add(store.IDTimeBound(since.Add(-idMargin))) +
			` AND x.id < ` + k.Add(store.IDTimeBound(edge.Add(idMargin))) +
			` AND x.executed_at >= ` + k.Add(since) + ` AND x.executed_at < ` + k.Add(edge)
	}
	sums, err := store.Many(ctx, q, func(s store.Scanner) (SetExecutions, error) {
		var e SetExecutions
		return e, s.Scan(&e.RuleSetID, &e.Name, &e.Executions, &e.Failures)
	}, `SELECT e.set_id, COALESCE(s.name, ''), CAST(sum(e.executions) AS BIGINT), CAST(sum(e.failures) AS BIGINT)
		FROM (`+from+`) e
		LEFT JOIN business_rule_sets s ON s.tenant_id = $1 AND s.id = e.set_id
		GROUP BY e.set_id, s.name HAVING sum(e.executions) > 0`, k.Values()...)
	slices.SortFunc(sums, func(a, b SetExecutions) int {
		return cmp.Or(cmp.Compare(b.Executions, a.Executions), strings.Compare(a.Name, b.Name), strings.Compare(a.RuleSetID, b.RuleSetID))
	})
	return sums, err
}

// DeleteLogsBefore implements Store: the old executions are a range of
// the executions' primary key, and their rule rows go with them. The
// kept counts lose them: the whole log's by tenant, organization, entity
// type, rule and result; the days and hours that end before the cut go
// whole (every execution in them goes), and the day and hour the cut
// falls in lose the rows that go. The pending counts of the hours up to
// the cut's are folded first (FoldLogCounts), so that they hold none of
// the rows that go.
func (SQLStore) DeleteLogsBefore(ctx context.Context, q store.Querier, t time.Time) (int64, error) {
	bound := store.IDTimeBound(t)
	var n int64
	if err := q.QueryRow(ctx, `SELECT COALESCE(sum(rule_count), 0) FROM business_rule_executions WHERE id < $1`, bound).Scan(&n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	// An execution's id encodes its start to the millisecond: the rows
	// that go began before cut.
	cut := t.UTC().Truncate(time.Millisecond)
	day, hour := floorTo(cut.Unix(), daySeconds), floorTo(cut.Unix(), hourSeconds)
	// The counts of the rows that go are in the whole log's, days' and
	// hours' rows once the hours up to the cut's are folded.
	if err := (SQLStore{}).FoldLogCounts(ctx, q, "", time.Unix(hour+hourSeconds, 0)); err != nil {
		return 0, err
	}
	type gone struct {
		key logCountKey
		n   int64
	}
	scan := func(span int) func(store.Scanner) (gone, error) {
		return func(s store.Scanner) (gone, error) {
			g := gone{key: logCountKey{span: span}}
			return g, s.Scan(&g.key.tenant, &g.key.org, &g.key.entityType, &g.key.rule, &g.key.result, &g.n)
		}
	}
	const groups = ` GROUP BY x.tenant_id, COALESCE(x.organization_id, ''), x.entity_type, r.value ->> 1, r.value ->> 4`
	const columns = `SELECT x.tenant_id, COALESCE(x.organization_id, ''), x.entity_type, r.value ->> 1, r.value ->> 4, count(*)`
	goes, err := store.Many(ctx, q, scan(spanAll), columns+logRows(q)+`x.id < $1`+groups, bound)
	if err != nil {
		return 0, err
	}
	for _, p := range []struct {
		span  int
		start int64
	}{{spanDay, day}, {spanHour, hour}} {
		start := time.Unix(p.start, 0).UTC()
		part, err := store.Many(ctx, q, scan(p.span), columns+logRows(q)+`x.id < $1 AND x.id >= $2 AND x.executed_at >= $3`+groups,
			bound, store.IDTimeBound(start.Add(-idMargin)), start)
		if err != nil {
			return 0, err
		}
		for i := range part {
			part[i].key.bucket = p.start
		}
		goes = append(goes, part...)
	}
	slices.SortFunc(goes, func(a, b gone) int { return a.key.compare(b.key) }) // one lock order for every writer
	for _, g := range goes {
		if _, err := q.Exec(ctx, `UPDATE business_rule_log_counts SET n = n - $8 WHERE tenant_id = $1 AND span = $2
			AND bucket = $3 AND organization_id = $4 AND entity_type = $5 AND rule_id = $6 AND result = $7`,
			g.key.tenant, g.key.span, g.key.bucket, g.key.org, g.key.entityType, g.key.rule, g.key.result, g.n); err != nil {
			return 0, err
		}
	}
	// The counts by set and hour: the hour the cut falls in loses the
	// executions that go (in key order, after the log counts: the order of
	// InsertExecutions' writers too).
	hourStart := time.Unix(hour, 0).UTC()
	setGoes, err := store.Many(ctx, q, func(s store.Scanner) (executionCount, error) {
		c := executionCount{key: executionCountKey{hour: hour}}
		return c, s.Scan(&c.key.tenant, &c.key.org, &c.key.set, &c.executions, &c.failures)
	}, `SELECT x.tenant_id, COALESCE(x.organization_id, ''), COALESCE(x.set_id, ''), sum(x.rule_count), sum(x.failure_count)
		FROM business_rule_executions x WHERE x.id < $1 AND x.id >= $2 AND x.executed_at >= $3 AND x.rule_count > 0
		GROUP BY x.tenant_id, COALESCE(x.organization_id, ''), COALESCE(x.set_id, '')`,
		bound, store.IDTimeBound(hourStart.Add(-idMargin)), hourStart)
	if err != nil {
		return 0, err
	}
	slices.SortFunc(setGoes, func(a, b executionCount) int { return a.key.compare(b.key) })
	for _, g := range setGoes {
		if _, err := q.Exec(ctx, `UPDATE business_rule_execution_counts SET executions = executions - $5, failures = failures - $6
			WHERE tenant_id = $1 AND hour = $2 AND organization_id = $3 AND set_id = $4`,
			g.key.tenant, g.key.hour, g.key.org, g.key.set, g.executions, g.failures); err != nil {
			return 0, err
		}
		if _, err := q.Exec(ctx, `DELETE FROM business_rule_execution_counts
			WHERE tenant_id = $1 AND hour = $2 AND organization_id = $3 AND set_id = $4 AND executions <= 0`,
			g.key.tenant, g.key.hour, g.key.org, g.key.set); err != nil {
			return 0, err
		}
	}
	// Then the counts that reached zero, and the days and hours before
	// the cut, of each tenant that lost rows (read by the key's prefix).
	var tenants []string
	for _, g := range goes {
		if _, err := q.Exec(ctx, `DELETE FROM business_rule_log_counts WHERE tenant_id = $1 AND span = $2 AND bucket = $3
			AND organization_id = $4 AND entity_type = $5 AND rule_id = $6 AND result = $7 AND n <= 0`,
			g.key.tenant, g.key.span, g.key.bucket, g.key.org, g.key.entityType, g.key.rule, g.key.result); err != nil {
			return 0, err
		}
		if len(tenants) == 0 || tenants[len(tenants)-1] != g.key.tenant {
			tenants = append(tenants, g.key.tenant)
		}
	}
	for _, tenant := range tenants {
		for _, before := range [][2]int64{{spanDay, day}, {spanHour, hour}} {
			if _, err := q.Exec(ctx, `DELETE FROM business_rule_log_counts WHERE tenant_id = $1 AND span = $2 AND bucket < $3`,
				tenant, before[0], before[1]); err != nil {
				return 0, err
			}
		}
		if _, err := q.Exec(ctx, `DELETE FROM business_rule_execution_counts WHERE tenant_id = $1 AND hour < $2`, tenant, hour); err != nil {
			return 0, err
		}
	}
	if _, err := q.Exec(ctx, `DELETE FROM business_rule_executions WHERE id < $1`, bound); err != nil {
		return 0, err
	}
	return n, nil
}

// executionInserts writes the log: a row per execution.
var executionInserts = store.NewBatchInsert("business_rule_executions",
	"id, tenant_id, organization_id, set_id, entity_type, entity_id, event_type, input_context, executed_at, executed_by, "+
		"rules, rule_count, failure_count, rule_results", "")

// PrepareLogWrites implements Store: it has the log's multi-row INSERTs
// and the engine's logStatements prepared (store.BatchInsert.Prepare,
// DB.Prepare).
func (SQLStore) PrepareLogWrites(ctx context.Context, db *store.DB) {
	executionInserts.Prepare(ctx, db)
	executionCountUpserts.Prepare(ctx, db)
	for _, q := range logStatements {
		_ = db.Prepare(ctx, q)
	}
}

// InsertExecutions implements Store: a row per execution (its rule rows
// are its rules column) and what they add to the kept counts, summed per
// key first (pendingCounts, and executionCounts for the counts by set and
// hour), written by the engine's writer in logWriters (PostgreSQL: one
// statement; SQLite: multi-row INSERTs and an upsert per count row).
func (SQLStore) InsertExecutions(ctx context.Context, q store.Querier, xs []*ExecutionRecord) error {
	rows := make([]executionRow, len(xs))
	for i, x := range xs {
		if len(x.Rules) > maxLoggedRules {
			return fmt.Errorf("rules: an execution of %d rules: a log row's id holds at most %d", len(x.Rules), maxLoggedRules)
		}
		failures := 0
		for i := range x.Rules {
			if r := x.Rules[i].Result; r == StatusFailure || r == StatusError {
				failures++
			}
		}
		rows[i] = executionRow{x: x, failures: failures}
	}
	write := logWriters[q.Dialect()]
	if write == nil {
		return fmt.Errorf("rules: no execution log writer for the %s engine", q.Dialect().Name())
	}
	return write(ctx, q, rows)
}

// executionCountKey is a row of business_rule_execution_counts: a
// tenant's executions of a set ("" for none) in an organization ("" for
// none) that began in an hour (its start, Unix seconds).
type executionCountKey struct {
	tenant   string
	hour     int64
	org, set string
}

// compare orders keys as the table's primary key does.
func (k executionCountKey) compare(o executionCountKey) int {
	return cmp.Or(strings.Compare(k.tenant, o.tenant), cmp.Compare(k.hour, o.hour), strings.Compare(k.org, o.org),
		strings.Compare(k.set, o.set))
}

// executionCount is what a write adds to (or DeleteLogsBefore takes
// from) the counts of a key: rule rows, and those FAILURE or ERROR.
type executionCount struct {
	key                  executionCountKey
	executions, failures int64
}

// executionCountUpserts adds to the kept counts by set and hour.
var executionCountUpserts = store.NewBatchInsert("business_rule_execution_counts",
	"tenant_id, hour, organization_id, set_id, executions, failures",
	"ON CONFLICT (tenant_id, hour, organization_id, set_id) DO UPDATE SET "+
		"executions = business_rule_execution_counts.executions + excluded.executions, "+
		"failures = business_rule_execution_counts.failures + excluded.failures")

// executionCounts returns what rows add to the kept counts by set and
// hour, written with them: summed per key (a batch of one set's
// executions in one hour writes one row) and in key order, the one order
// of every writer. Executions of no rule rows add nothing.
func executionCounts(rows []executionRow) []executionCount {
	counts := map[executionCountKey]*executionCount{}
	var out []executionCount
	var keys []executionCountKey
	for _, r := range rows {
		x := r.x
		if len(x.Rules) == 0 {
			continue
		}
		k := executionCountKey{tenant: x.TenantID, hour: floorTo(x.ExecutedAt.Unix(), hourSeconds), org: x.OrganizationID, set: x.SetID}
		c := counts[k]
		if c == nil {
			c = &executionCount{key: k}
			counts[k] = c
			keys = append(keys, k)
		}
		c.executions += int64(len(x.Rules))
		c.failures += int64(r.failures)
	}
	out = make([]executionCount, 0, len(keys))
	for _, k := range keys {
		out = append(out, *counts[k])
	}
	slices.SortFunc(out, func(a, b executionCount) int { return a.key.compare(b.key) })
	return out
}

// insertExecutionCounts writes what rows add to the kept counts by set
// and hour with executionCountUpserts' multi-row upserts.
func insertExecutionCounts(ctx context.Context, q store.Querier, rows []executionRow) error {
	counts := executionCounts(rows)
	values := make([]any, 0, len(counts)*executionCountUpserts.Columns())
	for _, c := range counts {
		values = append(values, c.key.tenant, c.key.hour, c.key.org, c.key.set, c.executions, c.failures)
	}
	_, err := executionCountUpserts.InsertValues(ctx, q, values)
	return err
}

// insertsExecutionsInOneStatement reports whether InsertExecutions is
// one statement on d (an engine whose logWriters entry is), which a
// group commit of log rows alone then runs outside a transaction of its
// own (logWriter.single).
func (SQLStore) insertsExecutionsInOneStatement(d store.Dialect) bool { return oneStatementLog[d] }

// executionRow is an execution as InsertExecutions writes it: its
// failure count and, once setTexts made them, its rules column's JSON
// and its rule_results (PostgreSQL's writer writes both straight into its
// parameters instead).
type executionRow struct {
	x        *ExecutionRecord
	rules    string
	failures int
	results  string
}

// setTexts sets every row's rules (appendRuleRows) and results
// (appendRuleResults), written into one buffer made into one string that
// they are parts of: three allocations for a batch rather than two or
// more per execution.
func setTexts(rows []executionRow) {
	size := 0
	for i := range rows {
		size += ruleRowsSize(rows[i].x.Rules)
		for j := range rows[i].x.Rules {
			size += 3 + len(rows[i].x.Rules[j].RuleID)*2 + len(rows[i].x.Rules[j].Result)
		}
	}
	b := make([]byte, 0, size)
	ends := make([]int, 2*len(rows))
	for i := range rows {
		b = appendRuleRows(b, rows[i].x.Rules)
		ends[2*i] = len(b)
		b = appendRuleResults(b, rows[i].x.Rules)
		ends[2*i+1] = len(b)
	}
	s, start := string(b), 0
	for i := range rows {
		rows[i].rules, rows[i].results = s[start:ends[2*i]], s[ends[2*i]:ends[2*i+1]]
		start = ends[2*i+1]
	}
}

// ruleRowsSize is about the length of appendRuleRows' JSON of rows (a
// little more for the escaping of their JSON texts), so that a buffer
// sized with it rarely grows.
func ruleRowsSize(rows []RuleRecord) int {
	n := 2
	for i := range rows {
		r := &rows[i]
		n += 64 + len(r.RuleUUID) + len(r.RuleID) + len(r.RuleName) + len(r.RuleType) + len(r.Result) +
			(len(r.Input)+len(r.Output))*5/4 + len(r.ErrorMessage)
	}
	return n
}

// logWriters holds, by Dialect, each engine's write of executions and
// the counts they add (sql_postgres.go, sql_sqlite.go; an engine left out
// of the build by its tag has none, and cannot be opened either).
// logStatements are statement texts they run, which PrepareLogWrites
// prepares. oneStatementLog holds the engines whose logWriters entry
// writes in one statement.
var (
	logWriters      = map[store.Dialect]func(ctx context.Context, q store.Querier, rows []executionRow) error{}
	logStatements   []string
	oneStatementLog = map[store.Dialect]bool{}
)

// logCountKey is a row of business_rule_log_counts.
type logCountKey struct {
	tenant                        string
	span                          int
	bucket                        int64
	org, entityType, rule, result string
}

// compare orders keys as the table's primary key does.
func (k logCountKey) compare(o logCountKey) int {
	return cmp.Or(strings.Compare(k.tenant, o.tenant), cmp.Compare(k.span, o.span), cmp.Compare(k.bucket, o.bucket),
		strings.Compare(k.org, o.org), strings.Compare(k.entityType, o.entityType), strings.Compare(k.rule, o.rule),
		strings.Compare(k.result, o.result))
}

// logCount is what a write adds to the count of a key.
type logCount struct {
	key logCountKey
	n   int64
}

// upsertLogCounts adds counts to their rows with logCountUpserts'
// multi-row upserts, in the order given.
func upsertLogCounts(ctx context.Context, q store.Querier, counts []logCount) error {
	values := make([]any, 0, len(counts)*logCountUpserts.Columns())
	for _, c := range counts {
		k := c.key
		values = append(values, k.tenant, k.span, k.bucket, k.org, k.entityType, k.rule, k.result, c.n)
	}
	_, err := logCountUpserts.InsertValues(ctx, q, values)
	return err
}

// logCountUpserts adds to the kept counts.
var logCountUpserts = store.NewBatchInsert("business_rule_log_counts",
	"tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n",
	"ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, rule_id, result) "+
		"DO UPDATE SET n = business_rule_log_counts.n + excluded.n")

// countGroup is what the count rows of an execution's rule rows share
// but their rule and result: the tenant, the organization, the entity
// type and the hour the execution began in (its start, Unix seconds).
type countGroup struct {
	tenant, org, entityType string
	hour                    int64
}

// ruleResult is a rule row's rule id and result.
type ruleResult struct{ rule, result string }

// groupCounts is what a batch adds to the pending counts of a
// countGroup: n[i] rule rows of keys[i], keys in the order first met.
type groupCounts struct {
	group countGroup
	keys  []ruleResult
	n     []int64
	index map[ruleResult]int // every key's position: a key new to the group is added through it
}

// add counts a rule row of key k, the i-th rule row of its execution.
// The executions of one set list their rules in one order, so the i-th
// key is tried first (no hashing for most rule rows of a batch); other
// keys are looked up, or added, in index.
func (c *groupCounts) add(i int, k ruleResult) {
	if i < len(c.keys) && c.keys[i] == k {
		c.n[i]++
		return
	}
	if c.index == nil {
		c.index = make(map[ruleResult]int, len(c.keys)+8)
		for j, key := range c.keys {
			c.index[key] = j
		}
	}
	if j, ok := c.index[k]; ok {
		c.n[j]++
		return
	}
	c.index[k] = len(c.keys)
	c.keys = append(c.keys, k)
	c.n = append(c.n, 1)
}

// pendingCounts returns what the rule rows of xs add to the pending
// counts (spanPending), summed per countGroup, rule and result, so that
// each count row is written once per batch however many of its
// executions share it. An execution's hour is that of its ExecutedAt (to
// the millisecond, as its id).
func pendingCounts(xs []*ExecutionRecord) []groupCounts {
	var out []groupCounts
	for _, x := range xs {
		g := countGroup{tenant: x.TenantID, org: x.OrganizationID, entityType: x.EntityType,
			hour: floorTo(x.ExecutedAt.Unix(), hourSeconds)}
		var c *groupCounts
		for i := range out { // a batch holds few groups: mostly one
			if out[i].group == g {
				c = &out[i]
				break
			}
		}
		if c == nil {
			out = append(out, groupCounts{group: g})
			c = &out[len(out)-1]
		}
		for i := range x.Rules {
			c.add(i, ruleResult{x.Rules[i].RuleID, string(x.Rules[i].Result)})
		}
	}
	return out
}

// logCounts returns pendingCounts(xs) as count rows, in one order for
// every writer (the table's key order), so that two never wait on each
// other's rows crosswise.
func logCounts(xs []*ExecutionRecord) []logCount {
	groups := pendingCounts(xs)
	size := 0
	for i := range groups {
		size += len(groups[i].keys)
	}
	out := make([]logCount, 0, size)
	for _, c := range groups {
		for i, k := range c.keys {
			out = append(out, logCount{logCountKey{tenant: c.group.tenant, span: spanPending, bucket: c.group.hour,
				org: c.group.org, entityType: c.group.entityType, rule: k.rule, result: k.result}, c.n[i]})
		}
	}
	slices.SortFunc(out, func(a, b logCount) int { return a.key.compare(b.key) })
	return out
}

// FoldLogCounts moves the pending counts (what InsertExecutions wrote)
// of the hours before before (every hour bucket starting earlier) into
// the whole log's, the days' and the hours' counts: of tenantID, or of
// every tenant when tenantID is "". Run it in a transaction. The totals
// read the same before and after; what it saves is reads: a total sums
// the pending rows beside the whole log's, day's or hour's, and after a
// fold only the last hour's are pending. The pending rows are deleted
// and their counts read in one statement (DELETE … RETURNING), so a
// concurrent write's new pending row is either folded or left pending,
// never lost.
func (SQLStore) FoldLogCounts(ctx context.Context, q store.Querier, tenantID string, before time.Time) error {
	query := `DELETE FROM business_rule_log_counts WHERE span = $1 AND bucket < $2`
	args := []any{spanPending, before.Unix()}
	if tenantID != "" {
		query += ` AND tenant_id = $3`
		args = append(args, tenantID)
	}
	pending, err := store.Many(ctx, q, func(s store.Scanner) (logCount, error) {
		var c logCount
		return c, s.Scan(&c.key.tenant, &c.key.bucket, &c.key.org, &c.key.entityType, &c.key.rule, &c.key.result, &c.n)
	}, query+` RETURNING tenant_id, bucket, organization_id, entity_type, rule_id, result, n`, args...)
	if err != nil || len(pending) == 0 {
		return err
	}
	sums := make(map[logCountKey]int64, 3*len(pending))
	for _, c := range pending {
		k := c.key
		k.span, k.bucket = spanHour, c.key.bucket
		sums[k] += c.n
		k.span, k.bucket = spanDay, floorTo(c.key.bucket, daySeconds)
		sums[k] += c.n
		k.span, k.bucket = spanAll, 0
		sums[k] += c.n
	}
	folded := make([]logCount, 0, len(sums))
	for k, n := range sums {
		folded = append(folded, logCount{k, n})
	}
	slices.SortFunc(folded, func(a, b logCount) int { return a.key.compare(b.key) })
	return upsertLogCounts(ctx, q, folded)
}

// appendRuleResults appends an execution's rule_results column (see
// resultsPattern) to b.
func appendRuleResults(b []byte, rows []RuleRecord) []byte {
	for i := range rows {
		b = append(b, '|')
		b = append(b, resultsEscaper.Replace(rows[i].RuleID)...)
		b = append(b, ':')
		b = append(b, rows[i].Result...)
		b = append(b, '|')
	}
	return b
}

// appendRuleRows appends the JSON of an execution's rules column.
func appendRuleRows(b []byte, rows []RuleRecord) []byte {
	if b == nil {
		b = make([]byte, 0, ruleRowsSize(rows))
	}
	b = append(b, '[')
	for i := range rows {
		r := &rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for _, s := range [...]string{r.RuleUUID, r.RuleID, r.RuleName, string(r.RuleType), string(r.Result)} {
			b = jsonenc.AppendString(b, s)
			b = append(b, ',')
		}
		b = appendStringOrNull(b, r.Input)
		b = append(b, ',')
		switch r.Output {
		case outputHeld:
			b = append(b, '1')
		case outputNotHeld:
			b = append(b, '0')
		default:
			b = jsonenc.AppendString(b, r.Output)
		}
		if r.ErrorMessage == "" && r.ExecutionTimeMs == 0 { // their defaults, as logSelect reads a shorter element
			b = append(b, ']')
			continue
		}
		b = append(b, ',')
		b = appendStringOrNull(b, strings.ReplaceAll(r.ErrorMessage, "\x00", "\uFFFD")) // PostgreSQL's ->> refuses \u0000
		b = append(b, ',')
		b = jsonenc.AppendFloat(b, r.ExecutionTimeMs)
		b = append(b, ']')
	}
	return append(b, ']')
}

// The output of a rule row that planned no actions, by whether its
// condition held: most rule rows' output, which the rules column holds as
// the number 1 or 0 rather than as a JSON string (77 bytes, with its
// quotes escaped), and scanLog reads back as this text. Rows written
// before hold the string, which reads back as it is.
const (
	outputHeld    = `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`
	outputNotHeld = `{"conditionResult":false,"actionsPlanned":[],"actionsExecuted":[]}`
)

// storedOutput is the output of a rule row as the rules column's element
// holds it (->> 6): the output's JSON text, or 1 or 0 for outputHeld and
// outputNotHeld.
func storedOutput(s string) string {
	switch s {
	case "1":
		return outputHeld
	case "0":
		return outputNotHeld
	}
	return s
}

// appendStringOrNull appends s as a JSON string, or null when empty.
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, s)
}
