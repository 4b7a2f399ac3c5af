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
	ctx := t.Context()
	trips, db, st, w, now := retryBacklog(t)
	tenant := w.TenantID
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

// A drain's "anything due?" (Due) and its claim (ClaimDeliveries) read
// the deliveries never attempted and the retries due from their own
// indexes (migrations 0009 and 0010): with 3,000 retries of a failing
// receiver not yet due, each reads a few rows, not the backlog, whether
// nothing else waits or a new delivery does. (Through the queue index of
// 0004 the claim read the 3,000 and the 3,001: checked.)
func TestDueAndClaimSkipRetriesNotDue(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	trips, db, st, w, now := retryBacklog(t)
	tenant := w.TenantID
	k := drain.Key{Group: tenant, ID: w.ID}
	_, err := db.Exec(ctx, `UPDATE webhook_deliveries SET attempt = 1, next_retry_at = $2 WHERE webhook_id = $1`, w.ID, now.Add(time.Hour))
	is.NoErr(err)
	storetest.Vacuum(t, db, "webhook_deliveries")

	check := func(wantDue bool, wantClaimed []string) {
		t.Helper()
		due, err := st.Due(trips.Mark(ctx), db, k, now)
		is.NoErr(err)
		is.Equal(due, wantDue)
		is.True(storetest.CheckRowsRead(t, db, trips, "SELECT 1 WHERE (SELECT d.id", "webhook_deliveries", 10) > 0) // this call's and the earlier
		var claimed []*webhooks.Delivery
		marked := trips.Mark(ctx)
		is.NoErr(db.Tx(marked, func(tx *store.Tx) error {
			claimed, err = st.ClaimDeliveries(marked, tx, tenant, w.ID, now, 10)
			return err
		}))
		ids := []string{}
		for _, d := range claimed {
			ids = append(ids, d.ID)
		}
		is.Equal(ids, wantClaimed)
		is.True(storetest.CheckRowsRead(t, db, trips, "UNION ALL", "webhook_deliveries", 10) > 0)
	}
	check(false, []string{})

	fresh := pendingDelivery(w, "e.0", now)
	is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
		_, err := st.InsertDeliveries(ctx, tx, []*webhooks.Delivery{fresh})
		return err
	}))
	storetest.Vacuum(t, db, "webhook_deliveries")
	check(true, []string{fresh.ID})
}

// retryBacklog opens a PostgreSQL database whose statements are traced
// (for storetest.CheckRowsRead) and writes a webhook with 3,000
// deliveries still to send, pending, at now; each test sets their
// retries.
func retryBacklog(t *testing.T) (*storetest.RoundTrips, *store.DB, *webhooks.SQLStore, *webhooks.Webhook, time.Time) {
	t.Helper()
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	st := webhooks.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := insertWebhookOf(t, db, store.NewID(), "e.0", now)
	ds := make([]*webhooks.Delivery, 3000)
	for i := range ds {
		ds[i] = pendingDelivery(w, "e.0", now)
	}
	if err := db.Tx(t.Context(), func(tx *store.Tx) error { _, err := st.InsertDeliveries(t.Context(), tx, ds); return err }); err != nil {
		t.Fatal(err)
	}
	return trips, db, st, w, now
}
