//go:build !tenantkit_nopostgres

package webhooks_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestFoldReadsWhatChanged: the sweep's fold of the kept delivery counts
// (and its deletion of the hour counts older than two days) reads the
// delta rows written since the last fold, however many counts the table
// of folded sums keeps (one per webhook, event type, state and hour ever
// counted; migration 0008). Before, it grouped every count kept once a
// second. The work is counted in rows its statements' plans read
// (storetest.CheckRowsRead), not timed.
func TestFoldReadsWhatChanged(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := insertWebhookOf(t, db, tenant, "e.0", now)

	// 3,000 counts already folded: the webhook's by 1,500 event types,
	// and 1,500 other webhooks' of this hour.
	hour := now.Unix() - now.Unix()%3600
	storetest.SeedRows(t, db, "webhook_delivery_folded_counts", "tenant_id, created_hour, webhook_id, event_type, state, n",
		0, 3000, func(i int) []any {
			if i%2 == 0 {
				return []any{tenant, int64(0), w.ID, fmt.Sprintf("e.%d", i/2), "", int64(1)}
			}
			return []any{tenant, hour, store.NewID(), "", "", int64(1)}
		})
	// Two deliveries since: delta rows of the count by event type e.0
	// (which has a sum) and of the webhook's count of this hour (which has
	// none).
	for range 2 {
		insertPendingDelivery(t, db, w, "e.0", now)
	}
	storetest.Vacuum(t, db, "webhook_delivery_counts", "webhook_delivery_folded_counts")

	// The fold runs in a transaction rolled back, so that each of its
	// statements is then examined on the rows it saw.
	rollback := errors.New("rollback")
	var n int64
	err := db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if n, err = st.FoldDeliveryCounts(trips.Mark(ctx), tx, 100); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("fold: %v", err)
	}
	if n != 4 { // two delta rows of each count
		t.Errorf("the fold folded %d rows, want 4", n)
	}
	for _, table := range []string{"webhook_delivery_counts", "webhook_delivery_folded_counts"} {
		statements := storetest.CheckRowsRead(t, db, trips, table, table, 100)
		is.True(statements >= 3) // the deletion by hour or the counts to fold, and each count's fold
	}

	// Folded for good, the counts are what they were.
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
	is.NoErr(err)
	n, err = svc.FoldCounts(ctx)
	is.NoErr(err)
	is.Equal(n, int64(4))
	_, total, err := st.ListDeliveries(ctx, db, store.Scope{TenantID: tenant}, webhooks.DeliveryFilter{EventType: "e.0", Limit: 1})
	is.NoErr(err)
	is.Equal(total, 3) // the sum seeded and the two deliveries
}
