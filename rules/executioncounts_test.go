package rules_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// summaryExecution is an execution of set of n rule rows, the first
// failures of them FAILURE, at at.
func summaryExecution(tenant, set string, at time.Time, n, failures int) *rules.ExecutionRecord {
	id := store.NewIDAt(at)
	id = id[:32] + "0000"
	x := &rules.ExecutionRecord{ID: id, TenantID: tenant, SetID: set, EntityType: "order", EntityID: "o-1", EventType: "e",
		Input: `{}`, ExecutedAt: at}
	for i := range n {
		result := rules.StatusSuccess
		if i < failures {
			result = rules.StatusFailure
		}
		x.Rules = append(x.Rules, rules.RuleRecord{ID: id[:32] + fmt.Sprintf("%04x", i), RuleUUID: "u", RuleID: fmt.Sprint("R", i),
			RuleName: "R", RuleType: rules.Validation, Result: result, Output: "{}"})
	}
	return x
}

// The execution summary of a window that starts at an hour reads the
// counts kept by set and hour, written with the executions, not the
// executions: rows removed behind the store's back still count in the
// whole hours, and only the part of an hour before a window's first whole
// hour is counted from the log.
func TestExecutionSummaryReadsKeptCounts(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		st, tenant := rules.NewSQLStore(), store.NewID()
		hour := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
		xs := []*rules.ExecutionRecord{
			summaryExecution(tenant, "A", hour.Add(10*time.Minute), 3, 1),
			summaryExecution(tenant, "A", hour.Add(70*time.Minute), 2, 2),
			summaryExecution(tenant, "", hour.Add(130*time.Minute), 1, 0),
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertExecutions(ctx, tx, xs) }); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `DELETE FROM business_rule_executions WHERE tenant_id = $1`, tenant); err != nil {
			t.Fatal(err)
		}
		sc := store.Scope{TenantID: tenant}
		for _, c := range []struct {
			since time.Time
			want  string
		}{
			{hour, "[{A  5 3} {  1 0}]"},
			{hour.Add(time.Hour), "[{A  2 2} {  1 0}]"},
			{hour.Add(time.Minute), "[{A  2 2} {  1 0}]"}, // the first hour's part counted from the (emptied) log
		} {
			got, err := st.ExecutionSummary(ctx, db, sc, c.since)
			if err != nil || fmt.Sprint(got) != c.want {
				t.Errorf("ExecutionSummary from %s: %v, %v; want %s", c.since, got, err, c.want)
			}
		}
	})
}

// Migration 0008 counts the executions already logged by set and hour:
// the summary is right at once.
func TestExecutionCountsMigrationCountsExistingExecutions(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, rules.Migrations, "0008")); err != nil {
			t.Fatal(err)
		}
		tenant, org := store.NewID(), store.NewID()
		hour := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
		for _, x := range []struct {
			org, set        string
			at              time.Duration
			rules, failures int
		}{
			{"", "A", 10 * time.Minute, 3, 1},
			{org, "A", 70 * time.Minute, 2, 2},
			{"", "", 130 * time.Minute, 1, 0},
			{"", "B", 131 * time.Minute, 0, 0}, // no rule rows: counts nowhere
		} {
			at := hour.Add(x.at)
			id := store.NewIDAt(at)
			if _, err := db.Exec(ctx, `INSERT INTO business_rule_executions (id, tenant_id, organization_id, set_id, entity_type,
				entity_id, event_type, input_context, executed_at, rules, rule_count, failure_count)
				VALUES ($1, $2, $3, $4, 'order', 'o-1', 'e', '{}', $5, '[]', $6, $7)`,
				id[:32]+"0000", tenant, store.NullIfEmpty(x.org), store.NullIfEmpty(x.set), at, x.rules, x.failures); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx, rules.Migrations); err != nil {
			t.Fatal(err)
		}
		st := rules.NewSQLStore()
		for _, c := range []struct {
			sc    store.Scope
			since time.Time
			want  string
		}{
			{store.Scope{TenantID: tenant}, hour, "[{A  5 3} {  1 0}]"},
			{store.Scope{TenantID: tenant}, hour.Add(time.Hour), "[{A  2 2} {  1 0}]"},
			{store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, hour, "[{A  3 1} {  1 0}]"},
		} {
			got, err := st.ExecutionSummary(ctx, db, c.sc, c.since)
			if err != nil || fmt.Sprint(got) != c.want {
				t.Errorf("ExecutionSummary of %+v from %s: %v, %v; want %s", c.sc, c.since, got, err, c.want)
			}
		}
		// The emptied log: what the summary gives comes from the counts.
		if _, err := db.Exec(ctx, `DELETE FROM business_rule_executions WHERE tenant_id = $1`, tenant); err != nil {
			t.Fatal(err)
		}
		if got, err := st.ExecutionSummary(ctx, db, store.Scope{TenantID: tenant}, hour); err != nil || fmt.Sprint(got) != "[{A  5 3} {  1 0}]" {
			t.Errorf("ExecutionSummary of the emptied log: %v, %v", got, err)
		}
	})
}
