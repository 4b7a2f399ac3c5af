//go:build !tenantkit_nopostgres

package webhooks_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The sweep's read of the queues with deliveries due and no drain
// (Stuck) walks the webhooks of the two indexes of deliveries to send, a
// few entries each, however long their backlogs: beside a webhook being
// drained with 2,000 retries not yet due and 1,000 deliveries never
// attempted, and another with 500 retries not yet due, it finds the two
// webhooks with a delivery due and no drain, reading a few rows. (It read
// every due delivery and every retry, due or not, before: 76 → 124
// buffers a sweep over a 30-minute soak.)
func TestStuckReadsAFewRowsPerWebhook(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	drained, retried, dueRetry, fresh := insertWebhookOf(t, db, tenant, "a.x", now), insertWebhookOf(t, db, tenant, "a.x", now),
		insertWebhookOf(t, db, tenant, "a.x", now), insertWebhookOf(t, db, tenant, "a.x", now)
	deliver := func(w *webhooks.Webhook, n int, retryAt *time.Time) {
		t.Helper()
		ds := make([]*webhooks.Delivery, n)
		ids := make([]string, n)
		for i := range ds {
			ds[i] = pendingDelivery(w, "a.x", now)
			ids[i] = ds[i].ID
		}
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := st.InsertDeliveries(ctx, tx, ds); err != nil || retryAt == nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET next_retry_at = $1 WHERE id = ANY($2)`, *retryAt, ids)
			return err
		}))
	}
	later, earlier := now.Add(time.Hour), now.Add(-time.Minute)
	deliver(drained, 2000, &later)
	deliver(drained, 1000, nil)
	deliver(retried, 500, &later)
	deliver(dueRetry, 1, &earlier)
	deliver(dueRetry, 300, &later)
	deliver(fresh, 1, nil)
	_, err := db.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, tenant_id, owner, lease_until) VALUES ($1, $2, 'h:1:1/x', $3)`,
		drained.ID, tenant, now.Add(time.Minute))
	is.NoErr(err)
	storetest.Vacuum(t, db, "webhook_deliveries", "webhook_queues")

	stuck, err := st.Stuck(trips.Mark(ctx), db, now, now)
	is.NoErr(err)
	ours := slices.DeleteFunc(stuck, func(k drain.Key) bool { return k.Group != tenant })
	is.Equal(len(ours), 2)
	is.True(slices.Contains(ours, drain.Key{Group: tenant, ID: dueRetry.ID}) && slices.Contains(ours, drain.Key{Group: tenant, ID: fresh.ID}))
	// The table is small enough here that the plan would read it whole
	// for a key's due delivery: the plan a large table gets, through the
	// indexes.
	is.Equal(storetest.CheckRowsRead(t, db, trips, "LEFT JOIN webhook_queues q", "webhook_deliveries", 20, "enable_seqscan = off"), 1)
}
