//go:build !tenantkit_nopostgres

package rules_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestSetReadsSkipDeletedRules: the statements that join a set's members
// to their rules (the set's detail with its member count, the sets list,
// the plan an execution loads) read the live rules only, however many
// deleted rules the table keeps (it keeps them all). PostgreSQL's generic
// plan may join through the rules in id order (a merge join it expects to
// stop early); without the live rules' id index (migration 0012) that
// scan skipped every deleted rule between the members and the next live
// rule: 3,000 here, and in a 30-minute soak more every minute. The work
// is counted in rules read and left out (EXPLAIN ANALYZE of each statement
// as the server prepares it: a generic plan), not timed.
func TestSetReadsSkipDeletedRules(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, rules.Migrations)
	svc := must(rules.New(db, rules.Options{}))
	// Four tenants' sets of three members come first in id order (ids are
	// time-ordered), then 3,000 deleted rules of the last tenant, then its
	// one live rule after them. The sets are read as the last tenant.
	var tenant string
	var ctx context.Context
	for range 4 {
		tenant = store.NewID()
		ctx = store.WithScope(t.Context(), store.Scope{TenantID: tenant})
		createSet(t, svc, ctx, "SET")
		for i, id := range []string{"A", "B", "C"} {
			createRule(t, svc, ctx, ruleInput(id))
			addMember(t, svc, ctx, "SET", id, 10*(i+1))
		}
	}
	// Created live and then deleted, as the service deletes (an update of
	// deleted_at), and vacuumed: the indexes of live rules keep the pages
	// their entries had, as they do in a server's database.
	const deleted = 3000
	now := time.Now().UTC()
	storetest.SeedRows(t, db, "business_rules", `id, tenant_id, rule_id, rule_name, rule_type, entity_type,
		condition_expression, enabled, priority, version, created_at, updated_at`, 0, deleted, func(i int) []any {
		return []any{store.NewID(), tenant, fmt.Sprintf("GONE_%d", i), "Deleted rule", "GUARD", "order", "{}", true, 10, 1, now, now}
	})
	_, err := db.Exec(ctx, `UPDATE business_rules SET deleted_at = $2, updated_at = $2 WHERE tenant_id = $1 AND rule_id LIKE 'GONE%'`,
		tenant, now)
	is.NoErr(err)
	createRule(t, svc, ctx, ruleInput("LATE"))
	for _, table := range []string{"business_rules", "business_rule_set_members", "business_rule_sets"} {
		_, err = db.Exec(ctx, `VACUUM (ANALYZE) `+table)
		is.NoErr(err)
	}

	read := trips.Mark(ctx)
	rs, err := svc.GetSet(read, "SET")
	is.NoErr(err)
	is.Equal(rs.MemberCount, 3)
	is.Equal(len(rs.Members), 3)
	sets, total, err := svc.ListSets(read, rules.SetFilter{Limit: 20})
	is.NoErr(err)
	is.Equal(total, 1)
	is.Equal(sets[0].MemberCount, 3)
	_, err = svc.ExecuteSet(read, "SET", rules.Input{EntityType: "order", EntityID: "o-1", EventType: "created", Data: map[string]any{"status": "OPEN"}, DryRun: true})
	is.NoErr(err)

	// The plan PostgreSQL picks depends on the tables' statistics: the
	// soak's server chose a merge join, which a test's small tables seldom
	// get. So the joins are made merge joins here (nested loops and hash
	// joins off), the plan whose scan met the deleted rules.
	joins := storetest.CheckRowsSkipped(t, db, trips, "business_rule_set_members", "business_rules", 100,
		"enable_nestloop = off", "enable_hashjoin = off")
	is.True(joins >= 3) // the detail, the list's page, the execution's plan
}
