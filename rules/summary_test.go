package rules_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/rulestest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// ExecutionSummary counts the logged rule executions since a time per
// set: successes, FAILUREs (a condition that did not hold, a GUARD that
// blocked) and ERRORs (a condition that cannot be evaluated: a corrupted
// one, as in the other execution tests, since the API refuses such
// conditions), with the executions of no set (Execute, ExecuteRule) under
// "". Older executions, dry runs, skipped rules, another tenant's, and for
// a scope that may not read it another organization's, are left out.
func TestExecutionSummary(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		tenant, o1 := store.NewID(), store.NewID()
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: tenant})
		orgCtx := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationID: o1})
		otherCtx, _ := storetest.NewScope(t)

		// setUp makes the rules and sets in ctx's tenant and returns CHECK.
		setUp := func(ctx context.Context) *rules.Rule {
			createRule(t, svc, ctx, xRule("GATE", rules.Guard, condOpen, allowAct, blockAct))
			check := createRule(t, svc, ctx, xRule("CHECK", rules.Validation, `{"field":"total","operator":">","value":100}`, "", ""))
			broken := createRule(t, svc, ctx, xRule("BROKEN", rules.Validation, condOpen, "", ""))
			corruptCondition(t, db, broken.ID)
			for _, s := range []struct{ id, name string }{{"ORDERS", "Orders"}, {"AUDIT", "Audit"}, {"IDLE", "Idle"}} {
				_, err := svc.CreateSet(ctx, rules.SetInput{ID: s.id, Name: s.name})
				is.NoErr(err)
			}
			addMember(t, svc, ctx, "ORDERS", "GATE", 1)
			addMember(t, svc, ctx, "ORDERS", "CHECK", 2)
			addMember(t, svc, ctx, "AUDIT", "BROKEN", 1)
			addMember(t, svc, ctx, "AUDIT", "CHECK", 2)
			addMember(t, svc, ctx, "IDLE", "CHECK", 1)
			return check
		}
		check := setUp(ctx)
		setUp(otherCtx)
		order := func(status string, total float64) rules.Input {
			return orderInput(map[string]any{"status": status, "total": total})
		}

		// Before the window: IDLE and ORDERS run once each.
		wantSummary(t, execSet(t, svc, ctx, "IDLE", order("OPEN", 150)), "CHECK=SUCCESS")
		wantSummary(t, execSet(t, svc, ctx, "ORDERS", order("OPEN", 150)), "GATE=SUCCESS", "CHECK=SUCCESS")
		time.Sleep(5 * time.Millisecond)
		since := time.Now()
		time.Sleep(5 * time.Millisecond)

		// ORDERS: 5 rule executions, 2 failures.
		wantSummary(t, execSet(t, svc, ctx, "ORDERS", order("OPEN", 150)), "GATE=SUCCESS", "CHECK=SUCCESS")
		wantSummary(t, execSet(t, svc, ctx, "ORDERS", order("CLOSED", 150)), "GATE=FAILURE", "CHECK=SKIPPED (Previous rule blocked execution)")
		wantSummary(t, execSet(t, svc, ctx, "ORDERS", order("OPEN", 50)), "GATE=SUCCESS", "CHECK=FAILURE")
		dry := order("CLOSED", 5)
		dry.DryRun = true
		execSet(t, svc, ctx, "ORDERS", dry) // not logged
		// AUDIT: 2 and 1 here, 2 and 1 more in o1.
		wantSummary(t, execSet(t, svc, ctx, "AUDIT", order("OPEN", 150)), "BROKEN=ERROR", "CHECK=SUCCESS")
		wantSummary(t, execSet(t, svc, orgCtx, "AUDIT", order("OPEN", 150)), "BROKEN=ERROR", "CHECK=SUCCESS")
		// No set: 4 and 2.
		res, err := svc.Execute(ctx, order("OPEN", 150))
		is.NoErr(err)
		wantSummary(t, res, "BROKEN=ERROR", "CHECK=SUCCESS", "GATE=SUCCESS")
		res, err = svc.ExecuteRule(ctx, check.ID, order("OPEN", 5))
		is.NoErr(err)
		wantSummary(t, res, "CHECK=FAILURE")
		// The other tenant's executions.
		execSet(t, svc, otherCtx, "ORDERS", order("CLOSED", 5))
		execSet(t, svc, otherCtx, "AUDIT", order("OPEN", 150))

		row := func(set, name string, executions, failures int) rules.SetExecutions {
			return rules.SetExecutions{RuleSetID: set, Name: name, Executions: executions, Failures: failures}
		}
		sum := func(ctx context.Context, since time.Time) []rules.SetExecutions {
			t.Helper()
			got, err := svc.ExecutionSummary(ctx, since)
			if err != nil {
				t.Fatalf("ExecutionSummary: %v", err)
			}
			return got
		}
		// Ties (4) by name: "" before "Audit".
		got := sum(ctx, since)
		is.Equal(got, []rules.SetExecutions{row("ORDERS", "Orders", 5, 2), row("", "", 4, 2), row("AUDIT", "Audit", 4, 2)})

		// The counts agree with the log: its rows from since, and its
		// FAILURE and ERROR rows.
		logTotal := func(result rules.Status) int {
			t.Helper()
			_, total, err := svc.ListLogs(ctx, rules.LogFilter{From: &since, Result: result, Limit: 1})
			is.NoErr(err)
			return total
		}
		executions, failures := 0, 0
		for _, s := range got {
			executions, failures = executions+s.Executions, failures+s.Failures
		}
		is.Equal(executions, logTotal(""))
		is.Equal(failures, logTotal(rules.StatusFailure)+logTotal(rules.StatusError))

		// A scope that may not read o1 does not count its execution.
		blind := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationIDs: []string{}})
		is.Equal(sum(blind, since), []rules.SetExecutions{row("ORDERS", "Orders", 5, 2), row("", "", 4, 2), row("AUDIT", "Audit", 2, 1)})
		// The other tenant counts its own.
		is.Equal(sum(otherCtx, since), []rules.SetExecutions{row("AUDIT", "Audit", 2, 1), row("ORDERS", "Orders", 1, 1)})
		// From before the first execution, the older ones count too.
		is.Equal(sum(ctx, since.Add(-time.Hour)), []rules.SetExecutions{row("ORDERS", "Orders", 7, 2), row("", "", 4, 2),
			row("AUDIT", "Audit", 4, 2), row("IDLE", "Idle", 1, 0)})
		// A set deleted since keeps its id, without a name.
		is.NoErr(svc.DeleteSet(ctx, "AUDIT", true))
		is.Equal(sum(ctx, since), []rules.SetExecutions{row("ORDERS", "Orders", 5, 2), row("", "", 4, 2), row("AUDIT", "", 4, 2)})

		// Nothing in the window: an empty list (JSON []).
		none := sum(ctx, time.Now().Add(time.Hour))
		b, err := json.Marshal(none)
		is.NoErr(err)
		is.Equal(string(b), "[]")
		b, err = json.Marshal(row("ORDERS", "Orders", 5, 2))
		is.NoErr(err)
		is.Equal(string(b), `{"ruleSetId":"ORDERS","name":"Orders","executions":5,"failures":2}`)

		// Without a scope (or a tenant in it) there is nothing.
		for _, ctx := range []context.Context{t.Context(), store.WithScope(t.Context(), store.Scope{OrganizationID: o1})} {
			_, err := svc.ExecutionSummary(ctx, since)
			wantIs(t, err, store.ErrNoScope)
		}
	}, rules.Migrations)
}

// Broken stores for the summary: each must make the conformance suite fail
// in ExecutionSummary.

// summaryAllTime counts every logged execution, whenever it ran.
type summaryAllTime struct{ rules.Store }

func (s summaryAllTime) ExecutionSummary(ctx context.Context, q store.Querier, sc store.Scope, _ time.Time) ([]rules.SetExecutions, error) {
	return s.Store.ExecutionSummary(ctx, q, sc, time.Time{})
}

// summaryFoldedNames breaks ties by name case-insensitively, as a
// PostgreSQL collation would order them.
type summaryFoldedNames struct{ rules.Store }

func (s summaryFoldedNames) ExecutionSummary(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]rules.SetExecutions, error) {
	sums, err := s.Store.ExecutionSummary(ctx, q, sc, since)
	slices.SortStableFunc(sums, func(a, b rules.SetExecutions) int {
		if a.Executions != b.Executions {
			return b.Executions - a.Executions
		}
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	return sums, err
}

// summaryOrgBlind counts every organization's executions.
type summaryOrgBlind struct{ rules.Store }

func (s summaryOrgBlind) ExecutionSummary(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]rules.SetExecutions, error) {
	sc.OrganizationIDs = nil
	return s.Store.ExecutionSummary(ctx, q, sc, since)
}

var brokenSummaryStores = map[string]func(rules.Store) rules.Store{
	"summaryAllTime":     func(s rules.Store) rules.Store { return summaryAllTime{s} },
	"summaryFoldedNames": func(s rules.Store) rules.Store { return summaryFoldedNames{s} },
	"summaryOrgBlind":    func(s rules.Store) rules.Store { return summaryOrgBlind{s} },
}

// TestSummaryBrokenStoreHelper runs the suite against the broken summary
// store storetest.Broken names, on SQLite, in the child process
// TestSummarySuiteCatchesBrokenStores starts; otherwise it does nothing.
func TestSummaryBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSummarySuiteCatchesBrokenStores's child process")
	}
	wrap, ok := brokenSummaryStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	db := storetest.SQLite(t, rules.Migrations)
	rulestest.Run(t, func(*testing.T) (*store.DB, rules.Store) { return db, wrap(rules.NewSQLStore()) })
}

// TestSummarySuiteCatchesBrokenStores proves the suite's ExecutionSummary
// case bites.
func TestSummarySuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name := range brokenSummaryStores {
		subtests[name] = "ExecutionSummary"
	}
	storetest.SuiteCatches(t, "TestSummaryBrokenStoreHelper", subtests)
}
