//go:build !tenantkit_nosqlite

package webhooks_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// unindexedRead is a step of SQLite's plan that reads webhook_deliveries
// (aliased d or i) by scanning the table, or through the (tenant,
// webhook) index, which holds every delivery ever made to the webhook.
var unindexedRead = regexp.MustCompile(`^SCAN [di]$|webhook_deliveries_webhook_idx`)

// On SQLite, what a drain and the sweeps read of the deliveries still to
// send (Due, ClaimDeliveries, Stuck, Owners) walks the indexes of the
// deliveries never attempted and of the retries (migrations 0009 and
// 0010): never the table, nor the webhook's whole history. SQLite plans
// an OR of two partial indexes' predicates as a scan of the table, and
// an EXISTS over the webhook's deliveries through the (tenant, webhook)
// index (both seen before the queries took their present form).
func TestDrainReadsWalkTheirIndexesOnSQLite(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := storetest.SQLite(t, webhooks.Migrations)
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := insertWebhookOf(t, db, tenant, "e.0", now)
	k := drain.Key{Group: tenant, ID: w.ID}

	rec := &storetest.Recorder{Querier: db}
	_, err := st.Due(ctx, rec, k, now)
	is.NoErr(err)
	_, err = st.Stuck(ctx, rec, now, now)
	is.NoErr(err)
	_, err = st.Owners(ctx, rec, now)
	is.NoErr(err)
	_, err = st.ClaimDeliveries(ctx, rec, tenant, w.ID, now, 10) // nothing to claim: its UPDATE does not run
	is.NoErr(err)
	is.Equal(len(rec.Reads()), 4)
	for _, r := range rec.Reads() {
		plan := storetest.SQLitePlan(t, db, r.SQL, r.Args...)
		for _, step := range plan {
			if unindexedRead.MatchString(step) {
				t.Errorf("%q in the plan of\n%s\nplan:\n%s", step, r.SQL, strings.Join(plan, "\n"))
			}
		}
	}
}

// On SQLite, the look for lapsed leases reads the queues being drained
// through migration 0012's index, not every webhook's queue.
func TestLapsedPlanOnSQLite(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := storetest.SQLite(t, webhooks.Migrations)
	rec := &storetest.Recorder{Querier: db}
	_, err := webhooks.NewSQLStore().Lapsed(t.Context(), rec, time.Now(), 100)
	is.NoErr(err)
	is.Equal(len(rec.Reads()), 1)
	plan := storetest.SQLitePlan(t, db, rec.Reads()[0].SQL, rec.Reads()[0].Args...)
	is.True(strings.Contains(strings.Join(plan, "\n"), "webhook_queues_lapsed_idx")) // the plan's steps
}
