package rules_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/rulestest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines, each in one
// database shared by the suite's subtests (they keep to tenants of their
// own).
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rulestest.Run(t, func(*testing.T) (*store.DB, rules.Store) { return db, rules.NewSQLStore() })
	}, rules.Migrations)
}

// Broken stores: the SQL store with one behaviour wrong. Each must make
// the suite fail in the subtest named.

// ignoresOrganization reads a rule whatever the scope's organizations.
type ignoresOrganization struct{ rules.Store }

func (s ignoresOrganization) GetRule(ctx context.Context, q store.Querier, sc store.Scope, id string) (*rules.Rule, error) {
	sc.OrganizationIDs = nil
	return s.Store.GetRule(ctx, q, sc, id)
}

// membersBySequenceOnly orders members by sequence but breaks ties in
// reverse ruleId order.
type membersBySequenceOnly struct{ rules.Store }

func (s membersBySequenceOnly) ListMembers(ctx context.Context, q store.Querier, sc store.Scope, setID string) ([]*rules.SetMember, error) {
	ms, err := s.Store.ListMembers(ctx, q, sc, setID)
	slices.SortStableFunc(ms, func(a, b *rules.SetMember) int {
		if a.Sequence != b.Sequence {
			return a.Sequence - b.Sequence
		}
		return strings.Compare(b.RuleID, a.RuleID)
	})
	return ms, err
}

// prunesADayTooMuch deletes a day's more log rows than asked.
type prunesADayTooMuch struct{ rules.Store }

func (s prunesADayTooMuch) DeleteLogsBefore(ctx context.Context, q store.Querier, t time.Time) (int64, error) {
	return s.Store.DeleteLogsBefore(ctx, q, t.Add(24*time.Hour))
}

// deleteKeepsVisible "deletes" a rule by finding it only.
type deleteKeepsVisible struct{ rules.Store }

func (s deleteKeepsVisible) DeleteRule(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) error {
	_, err := s.GetRule(ctx, q, store.Scope{TenantID: tenantID}, id)
	return err
}

// brokenStores are the broken stores by name, with the subtest of
// rulestest.Run that must fail against each.
var brokenStores = map[string]struct {
	wrap    func(rules.Store) rules.Store
	subtest string
}{
	"ignoresOrganization":   {func(s rules.Store) rules.Store { return ignoresOrganization{s} }, "RuleOrganizationScoped"},
	"membersBySequenceOnly": {func(s rules.Store) rules.Store { return membersBySequenceOnly{s} }, "MemberOrder"},
	"prunesADayTooMuch":     {func(s rules.Store) rules.Store { return prunesADayTooMuch{s} }, "LogPrune"},
	"deleteKeepsVisible":    {func(s rules.Store) rules.Store { return deleteKeepsVisible{s} }, "RuleSoftDelete"},
}

// TestBrokenStoreHelper runs the suite against the broken store
// storetest.Broken names, on SQLite, in the child process
// TestSuiteCatchesBrokenStores starts; otherwise it does nothing.
func TestBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenStores's child process")
	}
	broken, ok := brokenStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	db := storetest.SQLite(t, rules.Migrations)
	rulestest.Run(t, func(*testing.T) (*store.DB, rules.Store) { return db, broken.wrap(rules.NewSQLStore()) })
}

// TestSuiteCatchesBrokenStores proves the suite bites: against each
// broken store it fails, in the subtest that checks the broken behaviour.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name, b := range brokenStores {
		subtests[name] = b.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStoreHelper", subtests)
}
