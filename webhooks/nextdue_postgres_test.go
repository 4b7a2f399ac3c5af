//go:build !tenantkit_nopostgres

package webhooks_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// A webhook's next retry time is read from the retry index (migration
// 0009) in retry order: with 3,000 of its deliveries waiting for a retry,
// NextDue reads a few rows of webhook_deliveries, not the backlog.
// (Without the index it read the 3,000 and sorted them: checked.)
func TestNextDueReadsTheFirstRetry(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := insertWebhookOf(t, db, tenant, "e.0", now)
	ds := make([]*webhooks.Delivery, 3000)
	for i := range ds {
		ds[i] = pendingDelivery(w, "e.0", now)
	}
	is.NoErr(db.Tx(ctx, func(tx *store.Tx) error { _, err := st.InsertDeliveries(ctx, tx, ds); return err }))
	// Each waits for a retry, one second apart from an hour on; the
	// earliest is the last written.
	_, err := db.Exec(ctx, `UPDATE webhook_deliveries SET next_retry_at = $2::timestamptz + make_interval(secs => 3600 + 3000 - n)
		FROM (SELECT id AS d, row_number() OVER (ORDER BY id) AS n FROM webhook_deliveries WHERE webhook_id = $1) o
		WHERE id = o.d`, w.ID, now)
	is.NoErr(err)
	storetest.Vacuum(t, db, "webhook_deliveries")

	next, ok, err := st.NextDue(trips.Mark(ctx), db, drain.Key{Group: tenant, ID: w.ID}, now)
	is.NoErr(err)
	is.True(ok)
	is.Equal(next, now.Add(time.Hour))
	is.Equal(storetest.CheckRowsRead(t, db, trips, "ORDER BY next_retry_at", "webhook_deliveries", 10), 1) // the one statement
}
