package webhooks_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Migration 0008 moves the kept delivery counts written before it (delta
// rows and earlier folds' sums alike) into the table of folded sums: the
// deliveries list's totals and the delivery health read the same after
// it, the deltas' table is left empty, and deltas written after it fold
// onto the moved sums.
func TestCountsMigrationKeepsTotals(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		is.NoErr(db.Migrate(ctx, storetest.MigrationsBefore(t, webhooks.Migrations, "0008")))
		st := webhooks.NewSQLStore()
		tenant := store.NewID()
		now := time.Now().UTC().Truncate(time.Microsecond)
		w := insertWebhookOf(t, db, tenant, "a.b", now)
		for range 3 {
			insertPendingDelivery(t, db, w, "a.b", now)
		}
		// What an earlier fold left: 4 delivered, by event type and by
		// hour, and a failed count whose sum came to 0.
		hour := now.Unix() - now.Unix()%3600
		_, err := db.Exec(ctx, `INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, event_type, state, created_hour, delta)
			VALUES ($1, $2, $3, 'a.b', 'delivered', 0, 4), ($4, $2, $3, '', 'delivered', $5, 4), ($6, $2, $3, 'a.b', 'failed', 0, 0)`,
			store.NewID(), tenant, w.ID, store.NewID(), hour, store.NewID())
		is.NoErr(err)

		is.NoErr(db.Migrate(ctx, webhooks.Migrations))
		var deltas, sums int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_counts`).Scan(&deltas))
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_folded_counts`).Scan(&sums))
		is.Equal(deltas, 0)
		is.Equal(sums, 4) // pending and delivered, by event type and by hour; no row of a zero sum

		totals := func(want, delivered int) {
			t.Helper()
			sc := store.Scope{TenantID: tenant}
			_, total, err := st.ListDeliveries(ctx, db, sc, webhooks.DeliveryFilter{Limit: 1})
			is.NoErr(err)
			is.Equal(total, want)
			_, total, err = st.ListDeliveries(ctx, db, sc, webhooks.DeliveryFilter{Status: webhooks.StatusDelivered, Limit: 1})
			is.NoErr(err)
			is.Equal(total, delivered)
			hs, err := st.DeliveryHealth(ctx, db, sc, time.Unix(hour, 0))
			is.NoErr(err)
			is.Equal(len(hs), 1)
			is.Equal(hs[0].Delivered, delivered)
		}
		totals(7, 4) // 3 pending (counted as to send) and the earlier fold's 4 delivered
		insertPendingDelivery(t, db, w, "a.b", now)
		svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
		is.NoErr(err)
		_, err = svc.FoldCounts(ctx)
		is.NoErr(err)
		totals(8, 4)
	})
}
