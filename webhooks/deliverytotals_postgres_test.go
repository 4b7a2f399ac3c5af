//go:build !tenantkit_nopostgres

package webhooks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The deliveries list's totals not filtered by webhook read the sums by
// organization (migration 0011), whose rows do not grow with the
// webhooks: with 300 webhooks' counts folded, the unfiltered total and
// those by event type and by status read a few rows, and no webhook.
// (Summing the counts by webhook, they read each webhook's rows and the
// webhook itself: 205 → 446 buffers a call over a 30-minute soak that
// creates webhooks all along.)
func TestDeliveryTotalsReadNoWebhookRows(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	ctx := t.Context()
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
	is.NoErr(err)
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range 300 {
		w := insertWebhookOf(t, db, tenant, "a.x", now)
		insertPendingDelivery(t, db, w, []string{"a.x", "b.y", "c.z"}[i%3], now)
	}
	_, err = svc.FoldCounts(ctx)
	is.NoErr(err)
	w := insertWebhookOf(t, db, tenant, "a.x", now)
	insertPendingDelivery(t, db, w, "a.x", now) // deltas not yet folded
	storetest.Vacuum(t, db, "webhooks", "webhook_delivery_counts", "webhook_delivery_folded_counts", "webhook_delivery_totals")

	st := webhooks.NewSQLStore()
	for _, sc := range []store.Scope{{TenantID: tenant}, {TenantID: tenant, OrganizationIDs: []string{"org-a"}}} {
		for _, f := range []webhooks.DeliveryFilter{{}, {EventType: "b.y"}, {Status: webhooks.StatusDelivered}} {
			f.Limit = 1
			_, total, err := st.ListDeliveries(trips.Mark(ctx), db, sc, f)
			is.NoErr(err)
			is.True(total >= 0)
		}
	}
	// The tables are small enough here that the plan would read them
	// whole: the plan large tables get, through their indexes.
	const byKey = "enable_seqscan = off"
	for _, table := range []string{"webhook_delivery_totals", "webhooks", "webhook_delivery_folded_counts"} {
		is.True(storetest.CheckRowsRead(t, db, trips, "webhook_delivery_kept_totals", table, 9, byKey) == 6)
	}
}

// Folds running at once (the sweeps of several processes) while
// deliveries are written and sent keep the sums by organization exact,
// and none fails. (Each fold takes its counts in the order of those sums'
// rows, so two never wait on each other in a cycle; this run did not
// deadlock in the earlier order either: it checks the sums, not the
// order.) Three goroutines fold over and over while another writes
// deliveries to 40 webhooks of two organizations, of three event types,
// and sends some.
func TestConcurrentFoldsKeepTotals(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t, webhooks.Migrations)
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newDeliveryTotalsEnv(t, db, svc)
	e.insertOrgWebhook("a", e.tenant, "org-a")
	var names []string
	for i := range 40 {
		name := fmt.Sprintf("h%d", i)
		e.insertOrgWebhook(name, e.tenant, []string{"org-a", "org-b"}[i%2])
		names = append(names, name)
	}
	ctx := t.Context()
	errs := make(chan error, 4)
	done := make(chan struct{})
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := svc.FoldCounts(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() {
		defer close(done)
		for round := range 30 {
			if err := db.Tx(ctx, func(tx *store.Tx) error {
				var ds []*webhooks.Delivery
				for i := range 1 + round%7 { // a few webhooks' deliveries, not always the same ones
					h := e.hooks[names[(round*11+i*5)%len(names)]]
					ds = append(ds, pendingDelivery(h, []string{"a.x", "b.y", "c.z"}[(i+round)%3], e.now))
				}
				_, err := e.st.InsertDeliveries(ctx, tx, ds)
				return err
			}); err != nil {
				errs <- err
				return
			}
			if _, err := db.Exec(ctx, `UPDATE webhook_deliveries SET status = 'delivered' WHERE id IN (SELECT id
				FROM webhook_deliveries WHERE tenant_id = $1 AND status = 'pending' ORDER BY id DESC LIMIT 2)`, e.tenant); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.FoldCounts(ctx); err != nil {
		t.Fatal(err)
	}
	e.check("folded at once")
}
