// Package rulestest is a conformance suite for rules.Store
// implementations: Run checks every behaviour the rules Service relies on,
// as documented on rules.Store: tenant and organization scoping of every
// read and write (a rule of no organization is the whole tenant's; the
// scopes are store/storetest's OrgScopes grid), soft deletes of rules and
// what they hide (lists, entity plans, set members and member counts),
// ruleId uniqueness among a tenant's live rules, the filters, order,
// paging and totals of lists (a search's total counting at most
// store.SearchCap(ctx)+1 matches), the order of set members (sequence, then
// ruleId in byte order), conflicts, the execution log's rows, filters,
// retention and per-set summary, and that every method runs on the
// Querier it is given.
//
// newStore is called once per subtest. It may return the same database
// each time: every subtest works in tenants of its own, except LogPrune,
// which deletes the log rows of every tenant from before June 2001 (its
// own executions are around then), so nothing else should log rows that
// old in a shared database. Subtests run in parallel.
package rulestest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, rules.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *fixture)
	}{
		{"RuleRoundTrip", testRuleRoundTrip},
		{"RuleUpdate", testRuleUpdate},
		{"RuleTenantScoped", testRuleTenantScoped},
		{"RuleOrganizationScoped", testRuleOrganizationScoped},
		{"RuleSoftDelete", testRuleSoftDelete},
		{"RuleIDUnique", testRuleIDUnique},
		{"RuleListFilters", testRuleListFilters},
		{"RuleListOrderAndPaging", testRuleListOrder},
		{"EntityRules", testEntityRules},
		{"SetRoundTrip", testSetRoundTrip},
		{"SetList", testSetList},
		{"SetDeleteDetachesMembers", testSetDelete},
		{"MemberRoundTrip", testMemberRoundTrip},
		{"MemberOrder", testMemberOrder},
		{"MemberOrganizationScoped", testMemberOrganizationScoped},
		{"MembersOfDeletedRules", testMembersOfDeletedRules},
		{"LogRoundTrip", testLogRoundTrip},
		{"LogScoped", testLogScoped},
		{"LogListFilters", testLogListFilters},
		{"LogPrune", testLogPrune},
		{"LogTotalsOverTime", testLogTotalsOverTime},
		{"RuleAndSetTotals", testRuleAndSetTotals},
		{"SearchTotalsCapped", testSearchTotalsCapped},
		{"ExecutionSummary", testExecutionSummary},
		{"Transaction", testTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			if db == nil || st == nil {
				t.Fatal("newStore returned nil")
			}
			c.test(t, &fixture{t: t, db: db, st: st, tenant: store.NewID(), base: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)})
		})
	}
}

// fixture writes rows through the Store under test and checks results.
type fixture struct {
	t      *testing.T
	db     *store.DB
	st     rules.Store
	tenant string // the subtest's own tenant
	base   time.Time
}

// at is the fixture's clock: base plus seconds.
func (f *fixture) at(seconds int) time.Time { return f.base.Add(time.Duration(seconds) * time.Second) }

func (f *fixture) must(err error, what string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

// wantErr fails unless err is kind.
func (f *fixture) wantErr(err, kind error, what string) {
	f.t.Helper()
	if !errors.Is(err, kind) {
		f.t.Errorf("%s: error %v, want %v", what, err, kind)
	}
}

// scope is the whole tenant's scope (every organization).
func (f *fixture) scope() store.Scope { return store.Scope{TenantID: f.tenant} }

// newRule is a valid rule of the fixture's tenant, not yet stored.
func (f *fixture) newRule(ruleID string) *rules.Rule {
	return &rules.Rule{ID: store.NewID(), TenantID: f.tenant, RuleID: ruleID, RuleName: "Rule " + ruleID, RuleType: rules.Guard,
		EntityType: "order", ConditionExpression: json.RawMessage(`{"field":"status","operator":"=","value":"OPEN"}`),
		Enabled: true, Priority: 10, Version: 1, CreatedAt: f.at(0), UpdatedAt: f.at(0)}
}

// rule stores r (after edit, if any) and returns it.
func (f *fixture) rule(ruleID string, edit func(r *rules.Rule)) *rules.Rule {
	f.t.Helper()
	r := f.newRule(ruleID)
	if edit != nil {
		edit(r)
	}
	f.must(f.st.InsertRule(f.t.Context(), f.db, r), "InsertRule "+ruleID)
	return r
}

func (f *fixture) set(id string, edit func(rs *rules.RuleSet)) *rules.RuleSet {
	f.t.Helper()
	rs := &rules.RuleSet{ID: id, Name: "Set " + id, Enabled: true, CreatedAt: f.at(0), UpdatedAt: f.at(0)}
	if edit != nil {
		edit(rs)
	}
	f.must(f.st.InsertSet(f.t.Context(), f.db, f.tenant, rs), "InsertSet "+id)
	return rs
}

func (f *fixture) member(setID string, r *rules.Rule, sequence int, enabled bool) *rules.SetMember {
	f.t.Helper()
	m := &rules.SetMember{SetID: setID, RuleID: r.RuleID, RuleName: r.RuleName, RuleType: r.RuleType, Sequence: sequence,
		Enabled: enabled, AddedAt: f.at(1), RuleUUID: r.ID}
	f.must(f.st.InsertMember(f.t.Context(), f.db, f.tenant, m), "InsertMember "+r.RuleID)
	return m
}

// listRuleIDs lists the ruleIds ListRules returns, and the total.
func (f *fixture) listRuleIDs(sc store.Scope, filter rules.RuleFilter) ([]string, int) {
	f.t.Helper()
	if filter.Limit == 0 {
		filter.Limit = 100
	}
	rs, total, err := f.st.ListRules(f.t.Context(), f.db, sc, filter)
	f.must(err, "ListRules")
	return ruleIDs(rs), total
}

func ruleIDs(rs []*rules.Rule) []string {
	ids := []string{}
	for _, r := range rs {
		ids = append(ids, r.RuleID)
	}
	return ids
}

func memberRuleIDs(ms []*rules.SetMember) []string {
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.RuleID)
	}
	return ids
}

func (f *fixture) equal(what string, got, want any) {
	f.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func testRuleRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	from, to := f.at(60), f.at(3600)
	r := f.rule("ROUND_TRIP", func(r *rules.Rule) {
		r.OrganizationID, r.CreatedBy = store.NewID(), "user-1"
		r.Description, r.RuleCategory, r.EventType, r.RuleType = "desc ünï", "cat", "beforeUpdate", rules.Calculation
		r.SuccessActions = []action.Action{{Type: action.SetField, Config: map[string]any{"field": "total", "value": 3.0}}}
		r.FailureActions = []action.Action{{Type: action.ShowError, Config: map[string]any{"message": "no"}}}
		r.Enabled, r.Priority, r.Version, r.EffectiveFrom, r.EffectiveTo = false, 42, 7, &from, &to
		r.UpdatedAt = f.at(5)
	})
	bare := f.rule("BARE", nil) // no organization, no actions, no window
	got, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID)
	f.must(err, "GetRule")
	f.sameRule(got, r)
	byRuleID, err := f.st.GetRuleByRuleID(ctx, f.db, f.scope(), "ROUND_TRIP")
	f.must(err, "GetRuleByRuleID")
	f.sameRule(byRuleID, r)
	got, err = f.st.GetRule(ctx, f.db, f.scope(), bare.ID)
	f.must(err, "GetRule bare")
	f.sameRule(got, bare)
	if got.SuccessActions != nil || got.FailureActions != nil || got.EffectiveFrom != nil || got.OrganizationID != "" {
		t.Errorf("bare rule read back with %+v", got)
	}
	_, err = f.st.GetRule(ctx, f.db, f.scope(), store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetRule of an unknown id")
	_, err = f.st.GetRule(ctx, f.db, f.scope(), "not an id \x00")
	f.wantErr(err, store.ErrNotFound, "GetRule of a key that cannot be stored")
	_, err = f.st.GetRuleByRuleID(ctx, f.db, f.scope(), "NOPE")
	f.wantErr(err, store.ErrNotFound, "GetRuleByRuleID of an unknown ruleId")
}

// sameRule compares every stored field.
func (f *fixture) sameRule(got, want *rules.Rule) {
	f.t.Helper()
	g, w := *got, *want
	var gcond, wcond any
	_ = json.Unmarshal(g.ConditionExpression, &gcond)
	_ = json.Unmarshal(w.ConditionExpression, &wcond)
	f.equal("conditionExpression", gcond, wcond)
	f.equal("successActions", g.SuccessActions, w.SuccessActions)
	f.equal("failureActions", g.FailureActions, w.FailureActions)
	for _, p := range []struct {
		name     string
		got, wnt *time.Time
	}{{"effectiveFrom", g.EffectiveFrom, w.EffectiveFrom}, {"effectiveTo", g.EffectiveTo, w.EffectiveTo}} {
		if (p.got == nil) != (p.wnt == nil) || p.got != nil && !p.got.Equal(*p.wnt) {
			f.t.Errorf("%s: got %v, want %v", p.name, p.got, p.wnt)
		}
	}
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
		f.t.Errorf("times: got %v/%v, want %v/%v", g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt)
	}
	g.ConditionExpression, w.ConditionExpression = nil, nil
	g.SuccessActions, w.SuccessActions, g.FailureActions, w.FailureActions = nil, nil, nil, nil
	g.EffectiveFrom, w.EffectiveFrom, g.EffectiveTo, w.EffectiveTo = nil, nil, nil, nil
	g.CreatedAt, w.CreatedAt, g.UpdatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if fmt.Sprintf("%+v", g) != fmt.Sprintf("%+v", w) {
		f.t.Errorf("rule read back:\n got %+v\nwant %+v", g, w)
	}
}

func testRuleUpdate(t *testing.T, f *fixture) {
	ctx := t.Context()
	org := store.NewID()
	r := f.rule("BEFORE", func(r *rules.Rule) { r.OrganizationID, r.CreatedBy = org, "creator" })
	changed := *r
	changed.RuleID, changed.RuleName, changed.Priority, changed.Enabled, changed.EventType = "AFTER", "renamed", 99, false, "e"
	changed.UpdatedAt = f.at(30)
	changed.OrganizationID, changed.CreatedBy, changed.CreatedAt = "", "someone else", f.at(99) // not for UpdateRule to change
	f.must(f.st.UpdateRule(ctx, f.db, &changed), "UpdateRule")
	got, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID)
	f.must(err, "GetRule")
	want := changed
	want.OrganizationID, want.CreatedBy, want.CreatedAt = org, "creator", r.CreatedAt
	f.sameRule(got, &want)
	missing := f.newRule("MISSING")
	f.wantErr(f.st.UpdateRule(ctx, f.db, missing), store.ErrNotFound, "UpdateRule of a rule never stored")
}

func testRuleTenantScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	r := f.rule("MINE", nil)
	other := store.Scope{TenantID: store.NewID()}
	_, err := f.st.GetRule(ctx, f.db, other, r.ID)
	f.wantErr(err, store.ErrNotFound, "GetRule from another tenant")
	_, err = f.st.GetRuleByRuleID(ctx, f.db, other, "MINE")
	f.wantErr(err, store.ErrNotFound, "GetRuleByRuleID from another tenant")
	if ids, total := f.listRuleIDs(other, rules.RuleFilter{}); len(ids) != 0 || total != 0 {
		t.Errorf("another tenant lists %v (total %d)", ids, total)
	}
	if rs, err := f.st.EntityRules(ctx, f.db, other.TenantID, "order"); err != nil || len(rs) != 0 {
		t.Errorf("another tenant's EntityRules: %d rules, %v", len(rs), err)
	}
	if taken, err := f.st.RuleIDTaken(ctx, f.db, other.TenantID, "MINE", ""); err != nil || taken {
		t.Errorf("RuleIDTaken in another tenant = %v, %v; want false", taken, err)
	}
	hijack := *r
	hijack.TenantID, hijack.RuleName = other.TenantID, "hijacked"
	f.wantErr(f.st.UpdateRule(ctx, f.db, &hijack), store.ErrNotFound, "UpdateRule naming another tenant")
	f.wantErr(f.st.DeleteRule(ctx, f.db, other.TenantID, r.ID, f.at(9)), store.ErrNotFound, "DeleteRule naming another tenant")
	got, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID)
	f.must(err, "GetRule after another tenant's writes")
	f.equal("ruleName after another tenant's update", got.RuleName, r.RuleName)
}

func testRuleOrganizationScoped(t *testing.T, f *fixture) {
	o1, o2 := store.NewID(), store.NewID()
	r := f.rule("O1_RULE", func(r *rules.Rule) { r.OrganizationID = o1 })
	f.rule("TENANT_RULE", nil)
	grid := storetest.NewOrgScopes(f.tenant, o1, o2)
	check := func(see bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, _ := store.ScopeFrom(ctx)
			_, err := f.st.GetRule(ctx, f.db, sc, r.ID)
			if see != (err == nil) {
				t.Errorf("GetRule of o1's rule: %v (see: %v)", err, see)
			}
			_, err = f.st.GetRuleByRuleID(ctx, f.db, sc, "O1_RULE")
			if see != (err == nil) {
				t.Errorf("GetRuleByRuleID of o1's rule: %v (see: %v)", err, see)
			}
			if _, err := f.st.GetRuleByRuleID(ctx, f.db, sc, "TENANT_RULE"); err != nil {
				t.Errorf("the tenant's rule (no organization) is hidden: %v", err)
			}
			want := []string{"TENANT_RULE"}
			if see {
				want = []string{"O1_RULE", "TENANT_RULE"}
			}
			ids, total := f.listRuleIDs(sc, rules.RuleFilter{SortField: "ruleName"})
			f.equal("ListRules", ids, want)
			f.equal("ListRules total", total, len(want))
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))
}

func testRuleSoftDelete(t *testing.T, f *fixture) {
	ctx := t.Context()
	r := f.rule("GONE", nil)
	f.rule("KEPT", nil)
	f.must(f.st.DeleteRule(ctx, f.db, f.tenant, r.ID, f.at(10)), "DeleteRule")
	_, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID)
	f.wantErr(err, store.ErrNotFound, "GetRule of a deleted rule")
	_, err = f.st.GetRuleByRuleID(ctx, f.db, f.scope(), "GONE")
	f.wantErr(err, store.ErrNotFound, "GetRuleByRuleID of a deleted rule")
	ids, total := f.listRuleIDs(f.scope(), rules.RuleFilter{})
	f.equal("ListRules after delete", ids, []string{"KEPT"})
	f.equal("ListRules total after delete", total, 1)
	rs, err := f.st.EntityRules(ctx, f.db, f.tenant, "order")
	f.must(err, "EntityRules")
	f.equal("EntityRules after delete", ruleIDs(rs), []string{"KEPT"})
	f.wantErr(f.st.UpdateRule(ctx, f.db, r), store.ErrNotFound, "UpdateRule of a deleted rule")
	f.wantErr(f.st.DeleteRule(ctx, f.db, f.tenant, r.ID, f.at(11)), store.ErrNotFound, "DeleteRule twice")
	if taken, err := f.st.RuleIDTaken(ctx, f.db, f.tenant, "GONE", ""); err != nil || taken {
		t.Errorf("a deleted rule's ruleId is taken: %v, %v", taken, err)
	}
	again := f.rule("GONE", nil) // the ruleId is free again
	got, err := f.st.GetRuleByRuleID(ctx, f.db, f.scope(), "GONE")
	f.must(err, "GetRuleByRuleID of the new rule")
	f.equal("the live rule with the freed ruleId", got.ID, again.ID)
}

func testRuleIDUnique(t *testing.T, f *fixture) {
	ctx := t.Context()
	a := f.rule("TAKEN", nil)
	f.rule("OTHER", nil)
	dup := f.newRule("TAKEN")
	f.wantErr(f.st.InsertRule(ctx, f.db, dup), store.ErrConflict, "InsertRule of a taken ruleId")
	dupID := f.newRule("FRESH")
	dupID.ID = a.ID
	f.wantErr(f.st.InsertRule(ctx, f.db, dupID), store.ErrConflict, "InsertRule of a taken id")
	elsewhere := f.newRule("TAKEN")
	elsewhere.TenantID = store.NewID()
	f.must(f.st.InsertRule(ctx, f.db, elsewhere), "InsertRule of the ruleId in another tenant")
	for _, c := range []struct {
		ruleID, except string
		want           bool
	}{{"TAKEN", "", true}, {"TAKEN", a.ID, false}, {"TAKEN", store.NewID(), true}, {"FREE", "", false}} {
		taken, err := f.st.RuleIDTaken(ctx, f.db, f.tenant, c.ruleID, c.except)
		f.must(err, "RuleIDTaken")
		if taken != c.want {
			t.Errorf("RuleIDTaken(%s, except %s) = %v, want %v", c.ruleID, c.except, taken, c.want)
		}
	}
	clash := *a
	clash.RuleID = "OTHER"
	f.wantErr(f.st.UpdateRule(ctx, f.db, &clash), store.ErrConflict, "UpdateRule to a taken ruleId")
}

func testRuleListFilters(t *testing.T, f *fixture) {
	f.rule("ALPHA_1", func(r *rules.Rule) {
		r.RuleName, r.RuleCategory, r.EventType, r.RuleType = "Ünïcode Shipping", "pricing", "beforeCreate", rules.Validation
	})
	f.rule("BETA_2", func(r *rules.Rule) { r.RuleName, r.EntityType, r.Enabled = "50% off_sale", "invoice", false })
	f.rule("GAMMA_3", func(r *rules.Rule) { r.RuleName, r.RuleCategory = "gamma", "pricing" })
	sc := f.scope()
	for _, c := range []struct {
		name   string
		filter rules.RuleFilter
		want   []string
	}{
		{"none", rules.RuleFilter{}, []string{"ALPHA_1", "BETA_2", "GAMMA_3"}},
		{"search name, folded", rules.RuleFilter{Search: "ünïCODE"}, []string{"ALPHA_1"}},
		{"search ruleId", rules.RuleFilter{Search: "ta_2"}, []string{"BETA_2"}},
		{"search % is text", rules.RuleFilter{Search: "50%"}, []string{"BETA_2"}},
		{"search _ is text", rules.RuleFilter{Search: "a_1"}, []string{"ALPHA_1"}},
		{"search % matches no other", rules.RuleFilter{Search: "%"}, []string{"BETA_2"}},
		{"ruleId exact", rules.RuleFilter{RuleID: "GAMMA_3"}, []string{"GAMMA_3"}},
		{"ruleId is not a search", rules.RuleFilter{RuleID: "GAMMA"}, []string{}},
		{"entityType", rules.RuleFilter{EntityType: "invoice"}, []string{"BETA_2"}},
		{"eventType", rules.RuleFilter{EventType: "beforeCreate"}, []string{"ALPHA_1"}},
		{"category", rules.RuleFilter{RuleCategory: "pricing"}, []string{"ALPHA_1", "GAMMA_3"}},
		{"type", rules.RuleFilter{RuleType: rules.Guard}, []string{"BETA_2", "GAMMA_3"}},
		{"enabled", rules.RuleFilter{Enabled: new(true)}, []string{"ALPHA_1", "GAMMA_3"}},
		{"disabled", rules.RuleFilter{Enabled: new(false)}, []string{"BETA_2"}},
		{"combined", rules.RuleFilter{RuleCategory: "pricing", Search: "gam"}, []string{"GAMMA_3"}},
		{"unstorable search", rules.RuleFilter{Search: "a\x00"}, []string{}},
		{"unstorable filter", rules.RuleFilter{EntityType: "\xff"}, []string{}},
	} {
		c.filter.SortField = "ruleName"
		ids, total := f.listRuleIDs(sc, c.filter)
		slices.Sort(ids)
		f.equal(c.name, ids, c.want)
		f.equal(c.name+" total", total, len(c.want))
	}
}

func testRuleListOrder(t *testing.T, f *fixture) {
	// Created in this order; names and priorities order them otherwise,
	// with ties broken by id (the creation order: ids are time-ordered).
	specs := []struct {
		ruleID, name string
		priority     int
	}{{"R1", "b", 5}, {"R2", "a", 5}, {"R3", "c", 1}, {"R4", "a", 9}}
	for i, s := range specs {
		f.rule(s.ruleID, func(r *rules.Rule) {
			r.RuleName, r.Priority = s.name, s.priority
			r.CreatedAt, r.UpdatedAt = f.at(i), f.at(100-i)
		})
	}
	sc := f.scope()
	for _, c := range []struct {
		sort string
		desc bool
		want []string
	}{
		{"", false, []string{"R1", "R2", "R3", "R4"}},
		{"createdAt", true, []string{"R4", "R3", "R2", "R1"}},
		{"updatedAt", false, []string{"R4", "R3", "R2", "R1"}},
		{"ruleName", false, []string{"R2", "R4", "R1", "R3"}},
		{"ruleName", true, []string{"R3", "R1", "R4", "R2"}},
		{"priority", false, []string{"R3", "R1", "R2", "R4"}},
		{"priority", true, []string{"R4", "R2", "R1", "R3"}},
		{"unknown", false, []string{"R1", "R2", "R3", "R4"}},
	} {
		ids, total := f.listRuleIDs(sc, rules.RuleFilter{SortField: c.sort, SortDesc: c.desc})
		f.equal(fmt.Sprintf("order by %q desc=%v", c.sort, c.desc), ids, c.want)
		f.equal("total", total, 4)
	}
	for _, c := range []struct {
		limit, offset int
		want          []string
	}{{2, 0, []string{"R1", "R2"}}, {2, 2, []string{"R3", "R4"}}, {3, 3, []string{"R4"}}, {2, 9, []string{}}} {
		ids, total := f.listRuleIDs(sc, rules.RuleFilter{Limit: c.limit, Offset: c.offset})
		f.equal(fmt.Sprintf("page limit %d offset %d", c.limit, c.offset), ids, c.want)
		f.equal("total of a page", total, 4)
	}
}

func testEntityRules(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.rule("b_low", func(r *rules.Rule) { r.Priority = 1 })
	f.rule("B_TIE", func(r *rules.Rule) { r.Priority = 50; r.OrganizationID = store.NewID() }) // every organization's
	f.rule("a_tie", func(r *rules.Rule) { r.Priority = 50 })
	f.rule("TOP", func(r *rules.Rule) { r.Priority = 9999; r.EventType = "afterCreate" })
	f.rule("DISABLED", func(r *rules.Rule) { r.Priority = 100; r.Enabled = false })
	f.rule("INVOICE", func(r *rules.Rule) { r.EntityType = "invoice" })
	gone := f.rule("DELETED", func(r *rules.Rule) { r.Priority = 100 })
	f.must(f.st.DeleteRule(ctx, f.db, f.tenant, gone.ID, f.at(1)), "DeleteRule")
	rs, err := f.st.EntityRules(ctx, f.db, f.tenant, "order")
	f.must(err, "EntityRules")
	// Ties by ruleId in byte order: "B_TIE" < "a_tie".
	f.equal("EntityRules", ruleIDs(rs), []string{"TOP", "B_TIE", "a_tie", "b_low"})
	rs, err = f.st.EntityRules(ctx, f.db, f.tenant, "nothing")
	f.must(err, "EntityRules of an unknown entity type")
	f.equal("EntityRules of an unknown entity type", ruleIDs(rs), []string{})
	rs, err = f.st.EntityRules(ctx, f.db, f.tenant, "or\x00der")
	f.must(err, "EntityRules of an unstorable entity type")
	f.equal("EntityRules of an unstorable entity type", len(rs), 0)
}

func testSetRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	rs := f.set("ROUND", func(rs *rules.RuleSet) { rs.Description, rs.Enabled = "described", false })
	got, err := f.st.GetSet(ctx, f.db, f.tenant, "ROUND")
	f.must(err, "GetSet")
	if got.ID != rs.ID || got.Name != rs.Name || got.Description != "described" || got.Enabled || got.MemberCount != 0 ||
		!got.CreatedAt.Equal(rs.CreatedAt) || !got.UpdatedAt.Equal(rs.UpdatedAt) || got.Members != nil {
		t.Errorf("set read back as %+v, want %+v", got, rs)
	}
	dup := &rules.RuleSet{ID: "ROUND", Name: "again", CreatedAt: f.at(1), UpdatedAt: f.at(1)}
	f.wantErr(f.st.InsertSet(ctx, f.db, f.tenant, dup), store.ErrConflict, "InsertSet of a taken id")
	other := store.NewID()
	f.must(f.st.InsertSet(ctx, f.db, other, dup), "InsertSet of the id in another tenant")
	got, err = f.st.GetSet(ctx, f.db, f.tenant, "ROUND")
	f.must(err, "GetSet")
	f.equal("name after another tenant's insert", got.Name, rs.Name)
	_, err = f.st.GetSet(ctx, f.db, f.tenant, "NOPE")
	f.wantErr(err, store.ErrNotFound, "GetSet of an unknown id")
	_, err = f.st.GetSet(ctx, f.db, f.tenant, "NO\x00PE")
	f.wantErr(err, store.ErrNotFound, "GetSet of an unstorable id")

	rs.Name, rs.Description, rs.Enabled, rs.UpdatedAt = "renamed", "", true, f.at(20)
	f.must(f.st.UpdateSet(ctx, f.db, f.tenant, rs), "UpdateSet")
	got, err = f.st.GetSet(ctx, f.db, f.tenant, "ROUND")
	f.must(err, "GetSet")
	if got.Name != "renamed" || got.Description != "" || !got.Enabled || !got.UpdatedAt.Equal(f.at(20)) || !got.CreatedAt.Equal(f.at(0)) {
		t.Errorf("set after UpdateSet: %+v", got)
	}
	f.wantErr(f.st.UpdateSet(ctx, f.db, store.NewID(), rs), store.ErrNotFound, "UpdateSet naming another tenant")
	f.wantErr(f.st.UpdateSet(ctx, f.db, f.tenant, &rules.RuleSet{ID: "NOPE", Name: "x"}), store.ErrNotFound, "UpdateSet of an unknown set")
	f.wantErr(f.st.DeleteSet(ctx, f.db, store.NewID(), "ROUND"), store.ErrNotFound, "DeleteSet naming another tenant")
	f.must(f.st.DeleteSet(ctx, f.db, f.tenant, "ROUND"), "DeleteSet")
	_, err = f.st.GetSet(ctx, f.db, f.tenant, "ROUND")
	f.wantErr(err, store.ErrNotFound, "GetSet of a deleted set")
	f.wantErr(f.st.DeleteSet(ctx, f.db, f.tenant, "ROUND"), store.ErrNotFound, "DeleteSet twice")
	if _, err := f.st.GetSet(ctx, f.db, other, "ROUND"); err != nil {
		t.Errorf("another tenant's set went too: %v", err)
	}
}

func testSetList(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.set("S_ONE", func(rs *rules.RuleSet) { rs.Name, rs.CreatedAt = "Orders", f.at(3) })
	f.set("S_TWO", func(rs *rules.RuleSet) {
		rs.Name, rs.Description, rs.CreatedAt = "Invoices", "checks ÖRDERS too", f.at(1)
	})
	f.set("S_THREE", func(rs *rules.RuleSet) { rs.Name, rs.Enabled, rs.CreatedAt = "100%_off", false, f.at(1) })
	r := f.rule("MEMBER", nil)
	f.member("S_ONE", r, 1, false)
	list := func(filter rules.SetFilter) ([]string, int) {
		t.Helper()
		if filter.Limit == 0 {
			filter.Limit = 100
		}
		sets, total, err := f.st.ListSets(ctx, f.db, f.tenant, filter)
		f.must(err, "ListSets")
		ids := []string{}
		for _, s := range sets {
			ids = append(ids, s.ID)
			if s.ID == "S_ONE" && s.MemberCount != 1 {
				t.Errorf("S_ONE listed with memberCount %d, want 1", s.MemberCount)
			}
			if s.Members != nil {
				t.Errorf("%s listed with members", s.ID)
			}
		}
		return ids, total
	}
	// Oldest first; S_TWO and S_THREE were created at the same time, so
	// their set ids decide: S_THREE < S_TWO.
	for _, c := range []struct {
		name   string
		filter rules.SetFilter
		want   []string
	}{
		{"all", rules.SetFilter{}, []string{"S_THREE", "S_TWO", "S_ONE"}},
		{"search name or description", rules.SetFilter{Search: "rders"}, []string{"S_TWO", "S_ONE"}},
		{"search description, folded", rules.SetFilter{Search: "öRDers"}, []string{"S_TWO"}},
		{"search is text", rules.SetFilter{Search: "%_"}, []string{"S_THREE"}},
		{"enabled", rules.SetFilter{Enabled: new(true)}, []string{"S_TWO", "S_ONE"}},
		{"disabled", rules.SetFilter{Enabled: new(false)}, []string{"S_THREE"}},
		{"unstorable", rules.SetFilter{Search: "\x00"}, []string{}},
		{"page", rules.SetFilter{Limit: 1, Offset: 1}, []string{"S_TWO"}},
	} {
		ids, total := list(c.filter)
		f.equal(c.name, ids, c.want)
		wantTotal := len(c.want)
		if c.name == "page" {
			wantTotal = 3
		}
		f.equal(c.name+" total", total, wantTotal)
	}
	sets, total, err := f.st.ListSets(ctx, f.db, store.NewID(), rules.SetFilter{Limit: 100})
	f.must(err, "ListSets of another tenant")
	if len(sets) != 0 || total != 0 {
		t.Errorf("another tenant lists %d sets (total %d)", len(sets), total)
	}
}

func testSetDelete(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.set("FULL", nil)
	a, b := f.rule("A", nil), f.rule("B", nil)
	f.member("FULL", a, 1, true)
	f.member("FULL", b, 2, false)
	f.must(f.st.DeleteSet(ctx, f.db, f.tenant, "FULL"), "DeleteSet of a set with members")
	for _, r := range []*rules.Rule{a, b} {
		if _, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID); err != nil {
			t.Errorf("rule %s went with its set: %v", r.RuleID, err)
		}
	}
	f.set("FULL", nil) // the same id again starts empty
	got, err := f.st.GetSet(ctx, f.db, f.tenant, "FULL")
	f.must(err, "GetSet")
	f.equal("memberCount of the new set", got.MemberCount, 0)
	ms, err := f.st.ListMembers(ctx, f.db, f.scope(), "FULL")
	f.must(err, "ListMembers")
	f.equal("members of the new set", memberRuleIDs(ms), []string{})
	_, err = f.st.GetMember(ctx, f.db, f.tenant, "FULL", "A")
	f.wantErr(err, store.ErrNotFound, "GetMember of a detached member")
}

func testMemberRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.set("SET", nil)
	r := f.rule("RULE", func(r *rules.Rule) { r.RuleName, r.RuleType = "Named", rules.Action })
	m := f.member("SET", r, 7, false)
	got, err := f.st.GetMember(ctx, f.db, f.tenant, "SET", "RULE")
	f.must(err, "GetMember")
	if got.SetID != "SET" || got.RuleID != "RULE" || got.RuleName != "Named" || got.RuleType != rules.Action || got.Sequence != 7 ||
		got.Enabled || !got.AddedAt.Equal(m.AddedAt) || got.UpdatedAt != nil || got.RuleUUID != r.ID {
		t.Errorf("member read back as %+v", got)
	}
	dup := *m
	dup.Sequence = 8
	f.wantErr(f.st.InsertMember(ctx, f.db, f.tenant, &dup), store.ErrConflict, "InsertMember of a rule already in the set")

	now := f.at(40)
	m.Sequence, m.Enabled, m.UpdatedAt = 3, true, &now
	f.must(f.st.UpdateMember(ctx, f.db, f.tenant, m), "UpdateMember")
	got, err = f.st.GetMember(ctx, f.db, f.tenant, "SET", "RULE")
	f.must(err, "GetMember")
	if got.Sequence != 3 || !got.Enabled || got.UpdatedAt == nil || !got.UpdatedAt.Equal(now) {
		t.Errorf("member after UpdateMember: %+v", got)
	}

	other := store.NewID()
	_, err = f.st.GetMember(ctx, f.db, other, "SET", "RULE")
	f.wantErr(err, store.ErrNotFound, "GetMember from another tenant")
	f.wantErr(f.st.UpdateMember(ctx, f.db, other, m), store.ErrNotFound, "UpdateMember naming another tenant")
	f.wantErr(f.st.DeleteMember(ctx, f.db, other, "SET", r.ID), store.ErrNotFound, "DeleteMember naming another tenant")
	_, err = f.st.GetMember(ctx, f.db, f.tenant, "SET", "NOPE")
	f.wantErr(err, store.ErrNotFound, "GetMember of a rule not in the set")
	_, err = f.st.GetMember(ctx, f.db, f.tenant, "SET", "RU\x00LE")
	f.wantErr(err, store.ErrNotFound, "GetMember of an unstorable ruleId")

	f.must(f.st.DeleteMember(ctx, f.db, f.tenant, "SET", r.ID), "DeleteMember")
	_, err = f.st.GetMember(ctx, f.db, f.tenant, "SET", "RULE")
	f.wantErr(err, store.ErrNotFound, "GetMember after DeleteMember")
	f.wantErr(f.st.DeleteMember(ctx, f.db, f.tenant, "SET", r.ID), store.ErrNotFound, "DeleteMember twice")
	f.wantErr(f.st.UpdateMember(ctx, f.db, f.tenant, m), store.ErrNotFound, "UpdateMember of a removed member")
	if _, err := f.st.GetRule(ctx, f.db, f.scope(), r.ID); err != nil {
		t.Errorf("the rule went with its membership: %v", err)
	}
	f.member("SET", r, 1, true) // and may join again
}

func testMemberOrder(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.set("ORDERED", nil)
	f.set("OTHER", nil)
	// Inserted out of order; ties on sequence go by ruleId in byte order
	// ("Z" < "a").
	for _, m := range []struct {
		ruleID   string
		sequence int
		enabled  bool
	}{{"c", 30, true}, {"a", 10, true}, {"Z", 10, true}, {"b", 20, false}, {"d", 5, false}, {"e", 100, true}} {
		f.member("ORDERED", f.rule(m.ruleID, nil), m.sequence, m.enabled)
	}
	f.member("OTHER", f.rule("x", nil), 1, true)
	ms, err := f.st.ListMembers(ctx, f.db, f.scope(), "ORDERED")
	f.must(err, "ListMembers")
	f.equal("ListMembers", memberRuleIDs(ms), []string{"d", "Z", "a", "b", "c", "e"})
	mrs, err := f.st.EnabledMemberRules(ctx, f.db, f.tenant, "ORDERED")
	f.must(err, "EnabledMemberRules")
	var got []string
	for _, m := range mrs {
		got = append(got, fmt.Sprintf("%s@%d", m.Rule.RuleID, m.Sequence))
	}
	f.equal("EnabledMemberRules", got, []string{"Z@10", "a@10", "c@30", "e@100"})
	rs, err := f.st.GetSet(ctx, f.db, f.tenant, "ORDERED")
	f.must(err, "GetSet")
	f.equal("memberCount (enabled or not)", rs.MemberCount, 6)
	mrs, err = f.st.EnabledMemberRules(ctx, f.db, store.NewID(), "ORDERED")
	f.must(err, "EnabledMemberRules of another tenant")
	f.equal("another tenant's EnabledMemberRules", len(mrs), 0)
	ms, err = f.st.ListMembers(ctx, f.db, store.Scope{TenantID: store.NewID()}, "ORDERED")
	f.must(err, "ListMembers of another tenant")
	f.equal("another tenant's ListMembers", len(ms), 0)
}

func testMemberOrganizationScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	o1, o2 := store.NewID(), store.NewID()
	f.set("MIXED", nil)
	f.member("MIXED", f.rule("O1_RULE", func(r *rules.Rule) { r.OrganizationID = o1 }), 1, true)
	f.member("MIXED", f.rule("TENANT_RULE", nil), 2, true)
	grid := storetest.NewOrgScopes(f.tenant, o1, o2)
	check := func(see bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, _ := store.ScopeFrom(ctx)
			ms, err := f.st.ListMembers(ctx, f.db, sc, "MIXED")
			f.must(err, "ListMembers")
			want := []string{"TENANT_RULE"}
			if see {
				want = []string{"O1_RULE", "TENANT_RULE"}
			}
			f.equal("ListMembers", memberRuleIDs(ms), want)
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))
	// What the tenant as a whole reads: plans, counts, memberships.
	mrs, err := f.st.EnabledMemberRules(ctx, f.db, f.tenant, "MIXED")
	f.must(err, "EnabledMemberRules")
	f.equal("EnabledMemberRules (every organization)", len(mrs), 2)
	rs, err := f.st.GetSet(ctx, f.db, f.tenant, "MIXED")
	f.must(err, "GetSet")
	f.equal("memberCount (every organization)", rs.MemberCount, 2)
	if _, err := f.st.GetMember(ctx, f.db, f.tenant, "MIXED", "O1_RULE"); err != nil {
		t.Errorf("GetMember of o1's rule: %v", err)
	}
}

func testMembersOfDeletedRules(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.set("SET", nil)
	gone, kept := f.rule("GONE", nil), f.rule("KEPT", nil)
	f.member("SET", gone, 1, true)
	f.member("SET", kept, 2, true)
	f.must(f.st.DeleteRule(ctx, f.db, f.tenant, gone.ID, f.at(5)), "DeleteRule")
	ms, err := f.st.ListMembers(ctx, f.db, f.scope(), "SET")
	f.must(err, "ListMembers")
	f.equal("ListMembers", memberRuleIDs(ms), []string{"KEPT"})
	mrs, err := f.st.EnabledMemberRules(ctx, f.db, f.tenant, "SET")
	f.must(err, "EnabledMemberRules")
	f.equal("EnabledMemberRules", len(mrs), 1)
	rs, err := f.st.GetSet(ctx, f.db, f.tenant, "SET")
	f.must(err, "GetSet")
	f.equal("memberCount", rs.MemberCount, 1)
	sets, _, err := f.st.ListSets(ctx, f.db, f.tenant, rules.SetFilter{Limit: 10})
	f.must(err, "ListSets")
	if len(sets) != 1 || sets[0].MemberCount != 1 {
		t.Errorf("ListSets: %d sets, want 1 with memberCount 1", len(sets))
	}
	_, err = f.st.GetMember(ctx, f.db, f.tenant, "SET", "GONE")
	f.wantErr(err, store.ErrNotFound, "GetMember of a deleted rule")
}

// execution builds an execution at at with n rule rows; the ids follow
// rules.ExecutionRecord's convention.
func (f *fixture) execution(tenant, org string, at time.Time, n int, edit func(x *rules.ExecutionRecord)) *rules.ExecutionRecord {
	id := store.NewIDAt(at)
	id = id[:len(id)-4] + "0000"
	x := &rules.ExecutionRecord{ID: id, TenantID: tenant, OrganizationID: org, EntityType: "order", EntityID: "o-1",
		EventType: "beforeUpdate", Input: `{"data":{"n":1}}`, ExecutedAt: at.UTC().Truncate(time.Microsecond)}
	for i := range n {
		x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:len(id)-4] + fmt.Sprintf("%04x", i), RuleUUID: store.NewID(),
			RuleID: fmt.Sprintf("R%d", i), RuleName: fmt.Sprintf("Rule %d", i), RuleType: rules.Validation,
			Result: rules.StatusSuccess, Output: `{"conditionResult":true}`, ExecutionTimeMs: 0.25})
	}
	if edit != nil {
		edit(x)
	}
	return x
}

func (f *fixture) insertExecutions(xs ...*rules.ExecutionRecord) {
	f.t.Helper()
	err := f.db.Tx(f.t.Context(), func(tx *store.Tx) error { return f.st.InsertExecutions(f.t.Context(), tx, xs) })
	f.must(err, "InsertExecutions")
}

func (f *fixture) listLogIDs(sc store.Scope, filter rules.LogFilter) ([]string, int) {
	f.t.Helper()
	if filter.Limit == 0 {
		filter.Limit = 100
	}
	ls, total, err := f.st.ListLogs(f.t.Context(), f.db, sc, filter)
	f.must(err, "ListLogs")
	ids := []string{}
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	return ids, total
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func testLogRoundTrip(t *testing.T, f *fixture) {
	ctx := t.Context()
	org := store.NewID()
	x := f.execution(f.tenant, org, f.at(0), 2, func(x *rules.ExecutionRecord) {
		x.SetID, x.ExecutedBy = "THE_SET", "user-9"
		x.Rules[1].Input, x.Rules[1].Result, x.Rules[1].ErrorMessage = `{"data":{"n":2}}`, rules.StatusError, "bad condition"
	})
	plain := f.execution(f.tenant, "", f.at(1), 1, nil)
	f.insertExecutions(x, plain)
	first, err := f.st.GetLog(ctx, f.db, f.scope(), x.Rules[0].ID)
	f.must(err, "GetLog")
	r := x.Rules[0]
	if first.ID != r.ID || first.ExecutionID != x.ID || first.SetID != "THE_SET" || first.RuleUUID != r.RuleUUID ||
		first.RuleID != r.RuleID || first.RuleName != r.RuleName || first.RuleType != r.RuleType || first.EntityType != "order" ||
		first.EntityID != "o-1" || first.EventType != "beforeUpdate" || first.Result != rules.StatusSuccess ||
		first.ErrorMessage != "" || first.ExecutionTimeMs != 0.25 || !first.ExecutedAt.Equal(x.ExecutedAt) ||
		first.TenantID != f.tenant || first.OrganizationID != org || first.ExecutedBy != "user-9" {
		t.Errorf("log row read back as %+v", first)
	}
	if !jsonEqual(string(first.InputContext), x.Input) || !jsonEqual(string(first.OutputContext), r.Output) {
		t.Errorf("a row without its own input: input %s, output %s", first.InputContext, first.OutputContext)
	}
	second, err := f.st.GetLog(ctx, f.db, f.scope(), x.Rules[1].ID)
	f.must(err, "GetLog")
	if !jsonEqual(string(second.InputContext), x.Rules[1].Input) || second.Result != rules.StatusError || second.ErrorMessage != "bad condition" {
		t.Errorf("a row with its own input read back as %+v", second)
	}
	p, err := f.st.GetLog(ctx, f.db, f.scope(), plain.Rules[0].ID)
	f.must(err, "GetLog")
	if p.SetID != "" || p.OrganizationID != "" || p.ExecutedBy != "" || p.ExecutionID != plain.ID {
		t.Errorf("an execution without set, organization or actor read back as %+v", p)
	}
	_, err = f.st.GetLog(ctx, f.db, f.scope(), store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetLog of an unknown id")
	_, err = f.st.GetLog(ctx, f.db, f.scope(), "not-an-id")
	f.wantErr(err, store.ErrNotFound, "GetLog of a malformed id")
}

func testLogScoped(t *testing.T, f *fixture) {
	ctx := t.Context()
	o1, o2 := store.NewID(), store.NewID()
	inO1 := f.execution(f.tenant, o1, f.at(0), 1, nil)
	tenantWide := f.execution(f.tenant, "", f.at(1), 1, nil)
	f.insertExecutions(inO1, tenantWide)
	other := store.Scope{TenantID: store.NewID()}
	_, err := f.st.GetLog(ctx, f.db, other, inO1.Rules[0].ID)
	f.wantErr(err, store.ErrNotFound, "GetLog from another tenant")
	if ids, total := f.listLogIDs(other, rules.LogFilter{}); len(ids) != 0 || total != 0 {
		t.Errorf("another tenant lists %d rows (total %d)", len(ids), total)
	}
	grid := storetest.NewOrgScopes(f.tenant, o1, o2)
	check := func(see bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, _ := store.ScopeFrom(ctx)
			_, err := f.st.GetLog(ctx, f.db, sc, inO1.Rules[0].ID)
			if see != (err == nil) {
				t.Errorf("GetLog of o1's row: %v (see: %v)", err, see)
			}
			if _, err := f.st.GetLog(ctx, f.db, sc, tenantWide.Rules[0].ID); err != nil {
				t.Errorf("GetLog of a row of no organization: %v", err)
			}
			want := []string{tenantWide.Rules[0].ID}
			if see {
				want = append(want, inO1.Rules[0].ID)
			}
			for name, filter := range map[string]rules.LogFilter{"": {}, " by ruleId": {RuleID: "R0"},
				" by result": {Result: rules.StatusSuccess}, " by ruleId and result": {RuleID: "R0", Result: rules.StatusSuccess}} {
				ids, total := f.listLogIDs(sc, filter)
				f.equal("ListLogs"+name, ids, want)
				f.equal("ListLogs total"+name, total, len(want))
			}
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))
}

func testLogListFilters(t *testing.T, f *fixture) {
	a := f.execution(f.tenant, "", f.at(0), 3, func(x *rules.ExecutionRecord) { x.Rules[2].Result = rules.StatusFailure })
	b := f.execution(f.tenant, "", f.at(10), 2, func(x *rules.ExecutionRecord) { x.EntityType, x.EntityID = "invoice", "i-7" })
	c := f.execution(f.tenant, "", f.at(20), 1, nil)
	f.insertExecutions(a, b)
	f.insertExecutions(c)
	id := func(x *rules.ExecutionRecord, i int) string { return x.Rules[i].ID }
	from, to := f.at(10), f.at(20)
	sc := f.scope()
	for _, cse := range []struct {
		name   string
		filter rules.LogFilter
		want   []string
	}{
		{"newest first; an execution's rows in reverse", rules.LogFilter{}, []string{id(c, 0), id(b, 1), id(b, 0), id(a, 2), id(a, 1), id(a, 0)}},
		{"ruleId", rules.LogFilter{RuleID: "R1"}, []string{id(b, 1), id(a, 1)}},
		{"entityType", rules.LogFilter{EntityType: "invoice"}, []string{id(b, 1), id(b, 0)}},
		{"entityId", rules.LogFilter{EntityID: "o-1"}, []string{id(c, 0), id(a, 2), id(a, 1), id(a, 0)}},
		{"result", rules.LogFilter{Result: rules.StatusFailure}, []string{id(a, 2)}},
		{"ruleId and result", rules.LogFilter{RuleID: "R2", Result: rules.StatusFailure}, []string{id(a, 2)}},
		{"ruleId and another result", rules.LogFilter{RuleID: "R1", Result: rules.StatusFailure}, []string{}},
		{"ruleId and entityType", rules.LogFilter{RuleID: "R1", EntityType: "invoice"}, []string{id(b, 1)}},
		{"a rule never run", rules.LogFilter{RuleID: "R9"}, []string{}},
		{"from, inclusive", rules.LogFilter{From: &from}, []string{id(c, 0), id(b, 1), id(b, 0)}},
		{"to, inclusive", rules.LogFilter{To: &from}, []string{id(b, 1), id(b, 0), id(a, 2), id(a, 1), id(a, 0)}},
		{"from and to", rules.LogFilter{From: &from, To: &to}, []string{id(c, 0), id(b, 1), id(b, 0)}},
		{"unstorable", rules.LogFilter{EntityID: "\x00"}, []string{}},
	} {
		ids, total := f.listLogIDs(sc, cse.filter)
		f.equal(cse.name, ids, cse.want)
		f.equal(cse.name+" total", total, len(cse.want))
	}
	ids, total := f.listLogIDs(sc, rules.LogFilter{Limit: 2, Offset: 2})
	f.equal("page", ids, []string{id(b, 0), id(a, 2)})
	f.equal("total of a page", total, 6)
}

func testLogPrune(t *testing.T, f *fixture) {
	ctx := t.Context()
	cut := time.Date(2001, 6, 1, 12, 0, 0, 0, time.UTC)
	other := store.NewID()
	old := f.execution(f.tenant, "", cut.Add(-time.Hour), 2, nil)
	oldElsewhere := f.execution(other, "", cut.Add(-time.Minute), 1, nil)
	atCut := f.execution(f.tenant, "", cut, 1, nil) // the cut's own millisecond stays
	recent := f.execution(f.tenant, "", cut.Add(time.Hour), 1, nil)
	f.insertExecutions(old, oldElsewhere, atCut, recent)
	var n int64
	err := f.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		n, err = f.st.DeleteLogsBefore(ctx, tx, cut)
		return err
	})
	f.must(err, "DeleteLogsBefore")
	if n < 3 {
		t.Errorf("DeleteLogsBefore reported %d rule rows, want at least 3 (this test's)", n)
	}
	ids, total := f.listLogIDs(f.scope(), rules.LogFilter{})
	f.equal("rows left", ids, []string{recent.Rules[0].ID, atCut.Rules[0].ID})
	f.equal("total left", total, 2)
	// The totals filtered by rule and result lose the old rows too.
	for _, c := range []struct {
		sc     store.Scope
		filter rules.LogFilter
		want   int
	}{
		{f.scope(), rules.LogFilter{RuleID: "R0"}, 2},
		{f.scope(), rules.LogFilter{RuleID: "R1"}, 0},
		{f.scope(), rules.LogFilter{Result: rules.StatusSuccess}, 2},
		{f.scope(), rules.LogFilter{RuleID: "R0", Result: rules.StatusSuccess}, 2},
		{store.Scope{TenantID: other}, rules.LogFilter{}, 0},
		{store.Scope{TenantID: other}, rules.LogFilter{RuleID: "R0"}, 0},
		{store.Scope{TenantID: other}, rules.LogFilter{Result: rules.StatusSuccess}, 0},
	} {
		ids, total := f.listLogIDs(c.sc, c.filter)
		f.equal(fmt.Sprintf("total after the prune of %+v", c.filter), []any{len(ids), total}, []any{c.want, c.want})
	}
	// The old executions went with their rows: their ids can be written
	// again, and count again.
	f.insertExecutions(old)
	_, total = f.listLogIDs(f.scope(), rules.LogFilter{RuleID: "R1"})
	f.equal("total of a rule written again", total, 1)
	_, total = f.listLogIDs(f.scope(), rules.LogFilter{Result: rules.StatusSuccess})
	f.equal("total of a result written again", total, 4)

	// A cut inside an hour and a day: the totals over time ranges (kept
	// per day and hour) lose exactly the rows that went.
	xs := []*rules.ExecutionRecord{old, atCut, recent}
	for i, d := range []time.Duration{5 * time.Minute, 35 * time.Minute, 50 * time.Minute, 26 * time.Hour, 49*time.Hour + 7*time.Minute} {
		xs = append(xs, f.execution(f.tenant, "", cut.Add(d), 1+i%3, func(x *rules.ExecutionRecord) {
			x.Rules[0].Result = rules.StatusFailure
			x.SetID = []string{"", "A", "B"}[i%3]
		}))
	}
	f.insertExecutions(xs[3:]...)
	second := cut.Add(40 * time.Minute)
	err = f.db.Tx(ctx, func(tx *store.Tx) error {
		_, err := f.st.DeleteLogsBefore(ctx, tx, second)
		return err
	})
	f.must(err, "DeleteLogsBefore")
	xs = slices.DeleteFunc(xs, func(x *rules.ExecutionRecord) bool { return x.ExecutedAt.Before(second) })
	at := func(d time.Duration) *time.Time { tm := cut.Add(d); return &tm }
	var filters []rules.LogFilter
	for _, r := range [][2]*time.Time{{nil, nil}, {at(0), nil}, {nil, at(24*time.Hour - time.Nanosecond)}, {at(-12 * time.Hour), nil},
		{at(-12 * time.Hour), at(36*time.Hour - time.Nanosecond)}, {at(30 * time.Minute), at(2 * time.Hour)}, {nil, at(72 * time.Hour)}} {
		for _, fl := range []rules.LogFilter{{}, {RuleID: "R0"}, {Result: rules.StatusFailure}, {RuleID: "R1", Result: rules.StatusSuccess}} {
			fl.From, fl.To = r[0], r[1]
			filters = append(filters, fl)
		}
	}
	f.wantLogTotals("after a cut inside an hour", f.scope(), filters, xs)
	// And the execution summary, kept by set and hour: windows from an
	// hour and from inside one, before, at and after the cut's hour.
	for _, d := range []time.Duration{-12 * time.Hour, 0, 30 * time.Minute, 40 * time.Minute, 45 * time.Minute, time.Hour,
		26 * time.Hour, 50 * time.Hour} {
		f.wantSummary(fmt.Sprintf("summary from the cut %+v, after a cut inside an hour", d), f.scope(), cut.Add(d), xs)
	}
}

func testExecutionSummary(t *testing.T, f *fixture) {
	o1 := store.NewID()
	f.set("ALPHA", func(rs *rules.RuleSet) { rs.Name = "Alpha" })
	f.set("BETA", func(rs *rules.RuleSet) { rs.Name = "beta" })
	f.set("CHARLIE", func(rs *rules.RuleSet) { rs.Name = "Charlie" })
	f.set("DUP", func(rs *rules.RuleSet) { rs.Name = "Charlie" })
	since := f.at(100)
	// run is an execution of set at at, its rows' results as given.
	run := func(tenant, org, set string, at time.Time, results ...rules.Status) *rules.ExecutionRecord {
		return f.execution(tenant, org, at, len(results), func(x *rules.ExecutionRecord) {
			x.SetID = set
			for i, r := range results {
				x.Rules[i].Result = r
			}
		})
	}
	ok, failed, errored := rules.StatusSuccess, rules.StatusFailure, rules.StatusError
	other := store.NewID()
	f.insertExecutions(
		run(f.tenant, "", "ALPHA", since, ok, failed, errored), // at since exactly: counted
		run(f.tenant, "", "ALPHA", f.at(150), ok),
		run(f.tenant, "", "ALPHA", since.Add(-time.Microsecond), failed, failed), // just before
		run(f.tenant, "", "BETA", f.at(120), ok, ok),
		run(f.tenant, "", "BETA", f.at(99), failed),
		run(f.tenant, o1, "BETA", f.at(160), errored), // o1's
		run(f.tenant, "", "", f.at(130), errored, ok), // no set
		run(f.tenant, "", "CHARLIE", f.at(140), ok, ok),
		run(f.tenant, "", "DUP", f.at(141), ok, ok),
		run(f.tenant, "", "GONE", f.at(110), failed), // a set that is no more
		run(other, "", "ALPHA", f.at(150), ok, ok, ok, ok, ok),
	)
	sum := func(sc store.Scope, since time.Time) []rules.SetExecutions {
		t.Helper()
		got, err := f.st.ExecutionSummary(t.Context(), f.db, sc, since)
		f.must(err, "ExecutionSummary")
		return got
	}
	row := func(set, name string, executions, failures int) rules.SetExecutions {
		return rules.SetExecutions{RuleSetID: set, Name: name, Executions: executions, Failures: failures}
	}
	alpha, none, charlie, dup, gone := row("ALPHA", "Alpha", 4, 2), row("", "", 2, 1), row("CHARLIE", "Charlie", 2, 0),
		row("DUP", "Charlie", 2, 0), row("GONE", "", 1, 1)
	// Most executions first; ties by name in byte order ("Charlie" before
	// "beta"), then by set id.
	withO1 := []rules.SetExecutions{alpha, row("BETA", "beta", 3, 1), none, charlie, dup, gone}
	withoutO1 := []rules.SetExecutions{alpha, none, charlie, dup, row("BETA", "beta", 2, 0), gone}
	for _, c := range []struct {
		name string
		sc   store.Scope
		want []rules.SetExecutions
	}{
		{"every organization", f.scope(), withO1},
		{"o1", store.Scope{TenantID: f.tenant, OrganizationIDs: []string{o1}}, withO1},
		{"another organization", store.Scope{TenantID: f.tenant, OrganizationIDs: []string{store.NewID()}}, withoutO1},
		{"no organization", store.Scope{TenantID: f.tenant, OrganizationIDs: []string{}}, withoutO1},
		// Its set ALPHA is not the fixture tenant's: no name.
		{"another tenant", store.Scope{TenantID: other}, []rules.SetExecutions{row("ALPHA", "", 5, 0)}},
		{"a tenant without executions", store.Scope{TenantID: store.NewID()}, []rules.SetExecutions{}},
	} {
		f.equal(c.name, sum(c.sc, since), c.want)
	}
	f.equal("since in another zone", sum(f.scope(), since.In(time.FixedZone("UTC-7", -7*3600))), withO1)
	f.equal("after every execution", sum(f.scope(), f.at(161)), []rules.SetExecutions{})
	f.equal("a wider window", sum(f.scope(), f.at(99)),
		[]rules.SetExecutions{row("ALPHA", "Alpha", 6, 4), row("BETA", "beta", 4, 2), none, charlie, dup, gone})
}

func testTransaction(t *testing.T, f *fixture) {
	ctx := t.Context()
	kept := f.rule("KEPT", nil)
	f.set("SET", nil)
	errRollback := errors.New("roll back")
	r := f.newRule("ROLLED_BACK")
	x := f.execution(f.tenant, "", f.at(0), 1, nil)
	err := f.db.Tx(ctx, func(tx *store.Tx) error {
		f.must(f.st.InsertRule(ctx, tx, r), "InsertRule in a transaction")
		if _, err := f.st.GetRule(ctx, tx, f.scope(), r.ID); err != nil {
			t.Errorf("the transaction does not see its own rule: %v", err)
		}
		f.must(f.st.DeleteRule(ctx, tx, f.tenant, kept.ID, tx.Now()), "DeleteRule in a transaction")
		f.must(f.st.UpdateSet(ctx, tx, f.tenant, &rules.RuleSet{ID: "SET", Name: "changed", UpdatedAt: tx.Now()}), "UpdateSet")
		f.must(f.st.InsertMember(ctx, tx, f.tenant, &rules.SetMember{SetID: "SET", RuleID: r.RuleID, Sequence: 1, Enabled: true,
			AddedAt: tx.Now(), RuleUUID: r.ID}), "InsertMember in a transaction")
		f.must(f.st.InsertExecutions(ctx, tx, []*rules.ExecutionRecord{x}), "InsertExecutions in a transaction")
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Tx: %v", err)
	}
	_, err = f.st.GetRule(ctx, f.db, f.scope(), r.ID)
	f.wantErr(err, store.ErrNotFound, "a rolled-back insert")
	if _, err := f.st.GetRule(ctx, f.db, f.scope(), kept.ID); err != nil {
		t.Errorf("a rolled-back delete: %v", err)
	}
	rs, err := f.st.GetSet(ctx, f.db, f.tenant, "SET")
	f.must(err, "GetSet")
	if rs.Name == "changed" || rs.MemberCount != 0 {
		t.Errorf("a rolled-back set change: %+v", rs)
	}
	_, err = f.st.GetLog(ctx, f.db, f.scope(), x.Rules[0].ID)
	f.wantErr(err, store.ErrNotFound, "a rolled-back log row")
}

// wantLogTotals checks that the total of each filter under sc is the
// number of rows the list returns for it, and the number of rows of xs
// (the executions written and not pruned) it selects.
// wantSummary fails unless ExecutionSummary from since in sc counts, per
// set, the rule rows and failures of the executions of xs (those of f's
// tenant that sc may read) at or after since (names not compared).
func (f *fixture) wantSummary(what string, sc store.Scope, since time.Time, xs []*rules.ExecutionRecord) {
	f.t.Helper()
	sums := map[string]rules.SetExecutions{}
	for _, x := range xs {
		if x.TenantID != sc.TenantID || !sc.AllowsOrganization(x.OrganizationID) || x.ExecutedAt.Before(since) || len(x.Rules) == 0 {
			continue
		}
		e := sums[x.SetID]
		e.RuleSetID = x.SetID
		for _, r := range x.Rules {
			e.Executions++
			if r.Result == rules.StatusFailure || r.Result == rules.StatusError {
				e.Failures++
			}
		}
		sums[x.SetID] = e
	}
	got, err := f.st.ExecutionSummary(f.t.Context(), f.db, sc, since)
	f.must(err, what)
	gotSums := map[string]rules.SetExecutions{}
	for _, e := range got {
		e.Name = ""
		gotSums[e.RuleSetID] = e
	}
	f.equal(what, gotSums, sums)
}

func (f *fixture) wantLogTotals(what string, sc store.Scope, filters []rules.LogFilter, xs []*rules.ExecutionRecord) {
	f.t.Helper()
	for _, filter := range filters {
		want := 0
		for _, x := range xs {
			if !sc.AllowsOrganization(x.OrganizationID) || filter.EntityType != "" && x.EntityType != filter.EntityType ||
				filter.EntityID != "" && x.EntityID != filter.EntityID || filter.From != nil && x.ExecutedAt.Before(*filter.From) ||
				filter.To != nil && x.ExecutedAt.After(*filter.To) {
				continue
			}
			for _, r := range x.Rules {
				if (filter.RuleID == "" || r.RuleID == filter.RuleID) && (filter.Result == "" || r.Result == filter.Result) {
					want++
				}
			}
		}
		filter.Limit = 10000
		ids, total := f.listLogIDs(sc, filter)
		filter.Limit = 1
		_, first := f.listLogIDs(sc, filter)
		name := fmt.Sprintf("%s: rule %q, entity %q %q, result %q", what, filter.RuleID, filter.EntityType, filter.EntityID,
			filter.Result)
		if filter.From != nil {
			name += ", from " + filter.From.Format(time.RFC3339Nano)
		}
		if filter.To != nil {
			name += ", to " + filter.To.Format(time.RFC3339Nano)
		}
		f.equal(name+": total", total, len(ids))
		f.equal(name+": total of a short page", first, len(ids))
		f.equal(name+": rows", len(ids), want)
	}
}

// The log's totals with time ranges (over hours and days, from and to on
// and off the hour, a day's last instant, within one hour) and every
// other filter agree with the rows listed and the rows written. (A prune
// that cuts an hour and a day in two is testLogPrune's: a prune deletes
// every tenant's old rows.)
func testLogTotalsOverTime(t *testing.T, f *fixture) {
	o1 := store.NewID()
	start := time.Date(2031, 3, 4, 21, 10, 0, 0, time.UTC)
	var xs []*rules.ExecutionRecord
	for i := range 80 { // every 47 minutes: about two and a half days
		org := ""
		if i%5 == 1 {
			org = o1
		}
		xs = append(xs, f.execution(f.tenant, org, start.Add(time.Duration(i)*47*time.Minute+time.Duration(i)*time.Millisecond), 1+i%3,
			func(x *rules.ExecutionRecord) {
				if i%4 == 0 {
					x.EntityType, x.EntityID = "invoice", fmt.Sprint("i-", i%3)
				}
				for r := range x.Rules {
					if (i+r)%3 == 0 {
						x.Rules[r].Result = rules.StatusFailure
					}
				}
				switch i % 7 { // rule ids that LIKE patterns and case folding could confuse
				case 3:
					x.Rules[0].RuleID = "R%_1"
				case 5:
					x.Rules[0].RuleID = "r1"
				case 6:
					x.Rules[0].RuleID = `RX1\`
				}
			}))
	}
	f.insertExecutions(xs[:40]...)
	f.insertExecutions(xs[40:]...)
	at := func(s string) *time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		f.must(err, "time")
		return &tm
	}
	ranges := [][2]*time.Time{
		{nil, nil},
		{at("2031-03-05T00:00:00Z"), nil},
		{nil, at("2031-03-05T23:59:59.999999999Z")},
		{at("2031-03-05T00:00:00Z"), at("2031-03-05T23:59:59.999999999Z")},
		{at("2031-03-04T22:13:07.5Z"), at("2031-03-06T19:41:00Z")},
		{at("2031-03-04T21:57:00Z"), at("2031-03-07T01:00:00Z")},
		{at("2031-03-05T10:05:00Z"), at("2031-03-05T10:55:00Z")},
		{at("2031-03-05T10:05:00Z"), at("2031-03-05T13:55:00Z")},
		{at("2031-03-05T11:00:00Z"), at("2031-03-05T12:00:00Z")},
		{at("2031-03-06T04:00:00.001Z"), nil},
		{nil, at("2031-03-04T23:00:00Z")},
	}
	var filters []rules.LogFilter
	for _, r := range ranges {
		for _, fl := range []rules.LogFilter{{}, {RuleID: "R1"}, {RuleID: "R%_1"}, {RuleID: "r1"}, {RuleID: `RX1\`},
			{RuleID: "R%_1", Result: rules.StatusFailure}, {Result: rules.StatusFailure}, {EntityType: "invoice"},
			{EntityType: "order", RuleID: "R0", Result: rules.StatusSuccess}, {EntityID: "i-1"},
			{EntityID: "o-1", Result: rules.StatusFailure}} {
			fl.From, fl.To = r[0], r[1]
			filters = append(filters, fl)
		}
	}
	scopes := []store.Scope{f.scope(), {TenantID: f.tenant, OrganizationIDs: []string{}}}
	for _, sc := range scopes {
		f.wantLogTotals(fmt.Sprintf("organizations %v", sc.OrganizationIDs), sc, filters, xs)
	}
	// Pages cut executions anywhere: each is its slice of the whole list.
	for _, fl := range []rules.LogFilter{{}, {Result: rules.StatusFailure}, {From: ranges[4][0], To: ranges[4][1]}} {
		fl.Limit = 10000
		all, _ := f.listLogIDs(f.scope(), fl)
		for offset := 0; offset <= len(all); offset += 5 {
			fl.Limit, fl.Offset = 7, offset
			page, _ := f.listLogIDs(f.scope(), fl)
			f.equal(fmt.Sprintf("page at %d of %+v", offset, fl), page, all[offset:min(offset+7, len(all))])
		}
	}

}

// The rules and sets lists' totals agree with the rows listed, for each
// filter and scope, across creates, updates, deletes and concurrent
// creates.
func testRuleAndSetTotals(t *testing.T, f *fixture) {
	ctx := t.Context()
	o1 := store.NewID()
	var rs []*rules.Rule
	for i := range 12 {
		rs = append(rs, f.rule(fmt.Sprint("T_", i), func(r *rules.Rule) {
			if i%3 == 0 {
				r.OrganizationID = o1
			}
			if i%2 == 0 {
				r.RuleType = rules.Validation
			}
			if i%4 == 1 {
				r.EntityType, r.EventType, r.RuleCategory = "invoice", "beforeCreate", "pricing"
			}
			r.Enabled = i%5 != 2
		}))
	}
	f.set("S_A", nil)
	f.set("S_B", func(s *rules.RuleSet) { s.Enabled = false })
	f.set("S_C", nil)
	yes, no := true, false
	check := func(what string) {
		t.Helper()
		for _, sc := range []store.Scope{f.scope(), {TenantID: f.tenant, OrganizationIDs: []string{}}} {
			for _, fl := range []rules.RuleFilter{{}, {Enabled: &yes}, {Enabled: &no}, {RuleType: rules.Validation},
				{EntityType: "invoice"}, {EventType: "beforeCreate", Enabled: &yes}, {RuleCategory: "pricing"}, {RuleID: "T_4"},
				{RuleID: "T_3", EntityType: "order"}, {Search: "t_1"}} {
				for _, sort := range []string{"", "ruleName", "priority", "updatedAt"} {
					fl.SortField, fl.SortDesc = sort, sort == "priority"
					ids, total := f.listRuleIDs(sc, fl)
					fl.Limit = 1
					_, first := f.listRuleIDs(sc, fl)
					fl.Limit = 0
					name := fmt.Sprintf("%s, organizations %v, %+v", what, sc.OrganizationIDs, fl)
					f.equal(name+": total", total, len(ids))
					f.equal(name+": total of a short page", first, len(ids))
				}
			}
		}
		for _, fl := range []rules.SetFilter{{}, {Enabled: &yes}, {Enabled: &no}, {Search: "s_"}} {
			fl.Limit = 100
			sets, total, err := f.st.ListSets(ctx, f.db, f.tenant, fl)
			f.must(err, "ListSets")
			fl.Limit = 1
			_, first, err := f.st.ListSets(ctx, f.db, f.tenant, fl)
			f.must(err, "ListSets")
			f.equal(fmt.Sprintf("%s, sets %+v: total", what, fl), total, len(sets))
			f.equal(fmt.Sprintf("%s, sets %+v: total of a short page", what, fl), first, len(sets))
		}
	}
	check("created")
	rs[1].Enabled, rs[1].EntityType, rs[2].RuleType = false, "order", rules.Validation
	f.must(f.st.UpdateRule(ctx, f.db, rs[1]), "UpdateRule")
	f.must(f.st.UpdateRule(ctx, f.db, rs[2]), "UpdateRule")
	f.must(f.st.UpdateRule(ctx, f.db, rs[3]), "UpdateRule") // unchanged
	f.must(f.st.DeleteRule(ctx, f.db, f.tenant, rs[4].ID, f.at(9)), "DeleteRule")
	f.must(f.st.UpdateSet(ctx, f.db, f.tenant, &rules.RuleSet{ID: "S_A", Name: "A", Enabled: false, UpdatedAt: f.at(3)}), "UpdateSet")
	f.must(f.st.UpdateSet(ctx, f.db, f.tenant, &rules.RuleSet{ID: "S_B", Name: "B", Enabled: true, UpdatedAt: f.at(3)}), "UpdateSet")
	f.must(f.st.DeleteSet(ctx, f.db, f.tenant, "S_C"), "DeleteSet")
	check("updated and deleted")
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			r := f.newRule(fmt.Sprint("CONCURRENT_", i))
			r.Enabled = i%2 == 0
			errs <- f.db.Tx(ctx, func(tx *store.Tx) error {
				if err := f.st.InsertRule(ctx, tx, r); err != nil {
					return err
				}
				return f.st.InsertSet(ctx, tx, f.tenant, &rules.RuleSet{ID: fmt.Sprint("S_CONCURRENT_", i), Name: "c",
					Enabled: i%3 == 0, CreatedAt: f.at(4), UpdatedAt: f.at(4)})
			})
		}()
	}
	for range 8 {
		f.must(<-errs, "concurrent create")
	}
	check("after concurrent creates")
}

// testSearchTotalsCapped: with a search, ListRules and ListSets count at
// most store.SearchCap(ctx)+1 matches (here the cap is 3), exactly below
// it, and still read a page past a capped total; without a search the
// total stays exact.
func testSearchTotalsCapped(t *testing.T, f *fixture) {
	for i := range 5 {
		f.rule(fmt.Sprint("ALPHA-", i), func(r *rules.Rule) { r.CreatedAt = f.at(i) })
		f.set(fmt.Sprint("alpha-set-", i), func(rs *rules.RuleSet) { rs.CreatedAt = f.at(i) })
	}
	f.rule("OTHER", func(r *rules.Rule) { r.RuleName = "Other"; r.CreatedAt = f.at(9) })
	f.set("other", func(rs *rules.RuleSet) { rs.Name = "Other"; rs.CreatedAt = f.at(9) })
	capped := storetest.WithSearchCap(f.t.Context(), 3)
	sc := f.scope()
	for _, c := range []struct {
		name         string
		cap          int
		filter       rules.RuleFilter
		want         []string
		total        int
		reported     int
		reportCapped bool
	}{
		{"capped", 3, rules.RuleFilter{Search: "alpha", Limit: 2}, []string{"ALPHA-0", "ALPHA-1"}, 4, 3, true},
		{"page past the capped total", 3, rules.RuleFilter{Search: "alpha", Limit: 10, Offset: 4}, []string{"ALPHA-4"}, 4, 3, true},
		{"exact at the cap", 5, rules.RuleFilter{Search: "alpha", Limit: 2}, []string{"ALPHA-0", "ALPHA-1"}, 5, 5, false},
		{"no search", 3, rules.RuleFilter{Limit: 2}, []string{"ALPHA-0", "ALPHA-1"}, 6, 6, false},
	} {
		ctx := storetest.WithSearchCap(f.t.Context(), c.cap)
		rs, total, err := f.st.ListRules(ctx, f.db, sc, c.filter)
		f.must(err, "ListRules "+c.name)
		f.equal("ListRules "+c.name, ruleIDs(rs), c.want)
		f.equal("ListRules "+c.name+" total", total, c.total)
		reported, isCapped := store.CapTotal(ctx, total, c.filter.Search != "")
		f.equal("ListRules "+c.name+" reported total", reported, c.reported)
		f.equal("ListRules "+c.name+" capped", isCapped, c.reportCapped)
	}
	setIDs := func(sets []*rules.RuleSet) []string {
		ids := []string{}
		for _, s := range sets {
			ids = append(ids, s.ID)
		}
		return ids
	}
	sets, total, err := f.st.ListSets(capped, f.db, f.tenant, rules.SetFilter{Search: "alpha", Limit: 2})
	f.must(err, "ListSets capped")
	f.equal("ListSets capped", setIDs(sets), []string{"alpha-set-0", "alpha-set-1"})
	f.equal("ListSets capped total", total, 4)
	sets, total, err = f.st.ListSets(capped, f.db, f.tenant, rules.SetFilter{Search: "alpha", Limit: 10, Offset: 4})
	f.must(err, "ListSets past the capped total")
	f.equal("ListSets past the capped total", setIDs(sets), []string{"alpha-set-4"})
	f.equal("ListSets past the capped total: total", total, 4)
	_, total, err = f.st.ListSets(storetest.WithSearchCap(f.t.Context(), 5), f.db, f.tenant, rules.SetFilter{Search: "alpha", Limit: 2})
	f.must(err, "ListSets exact")
	f.equal("ListSets exact total", total, 5)
	_, total, err = f.st.ListSets(capped, f.db, f.tenant, rules.SetFilter{Limit: 2})
	f.must(err, "ListSets without a search")
	f.equal("ListSets without a search: total", total, 6)
}
