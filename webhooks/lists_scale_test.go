package webhooks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestListDeliveriesAtScale measures the deliveries list's first page (20
// rows) with its exact total as a tenant's deliveries grow: unfiltered,
// filtered by webhook and filtered by status, on each engine. It is a
// measurement, not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the delivery counts to measure at (for example "100000,1000000");
// the rows are inserted through the Store (multi-row INSERTs, 1,000 per
// transaction, so one kept-count row per webhook and transaction) into a
// fresh database, grown from one count to the next (PostgreSQL's statistics
// gathered after each, storetest.Analyze), over two webhooks,
// 80% delivered, 15% failed, 5% pending. TENANTKIT_BENCH_LIST_CALLS is
// the number of timed calls per case (200 when unset). The unfiltered
// list is measured first with the counts as the inserts left them, then,
// like every case after it, once the counts are folded (as the sweep
// does). Each line it logs is a row of BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./webhooks -run TestListDeliveriesAtScale -v -timeout 2h
func TestListDeliveriesAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListDeliveries(t, db, engine, sizes, calls) },
		webhooks.Migrations)
}

func scaleListDeliveries(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	sc := store.Scope{TenantID: tenant}
	now := time.Now().UTC().Truncate(time.Microsecond)
	var hooks []string
	for i := range 2 {
		w := &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, Name: fmt.Sprint("hook ", i), URL: "https://example.com/h",
			SubscribedEvents: []string{"order.created"}, HTTPMethod: "POST", MaxRetries: 3, TimeoutMs: 1000, IsActive: true,
			CreatedAt: now, UpdatedAt: now}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertWebhook(ctx, tx, w, "sealed") }); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w.ID)
	}
	status := func(i int) string {
		switch {
		case i%20 == 0:
			return "pending"
		case i%20 < 4:
			return "failed"
		}
		return "delivered"
	}
	seeded := 0
	for _, rows := range sizes {
		start := time.Now()
		batch := make([]*webhooks.Delivery, 0, 1000)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.InsertDeliveries(ctx, tx, batch); return err }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		for ; seeded < rows; seeded++ {
			at := now.Add(-time.Duration(rows-seeded) * time.Millisecond)
			batch = append(batch, &webhooks.Delivery{ID: store.NewIDAt(at), TenantID: tenant, WebhookID: hooks[seeded%2],
				EventID: store.NewID(), EventType: "order.created", MessageID: store.NewID(), Payload: []byte(`{"n":1}`),
				Status: status(seeded), MaxAttempts: 3, TargetURL: "https://example.com/h", EnqueuedAt: at, CreatedAt: at, UpdatedAt: at})
			if len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		storetest.Analyze(t, db)
		t.Logf("seeded %d deliveries in %s", seeded, time.Since(start).Round(time.Second))
		failed := 0
		for i := range seeded {
			if status(i) == "failed" {
				failed++
			}
		}
		type listCase struct {
			name   string
			filter webhooks.DeliveryFilter
			total  int
		}
		cases := []listCase{{"unfiltered, counts unfolded", webhooks.DeliveryFilter{}, seeded}}
		for _, c := range []listCase{
			{"unfiltered", webhooks.DeliveryFilter{}, seeded},
			{"webhookId", webhooks.DeliveryFilter{WebhookID: hooks[1]}, seeded / 2},
			{"status", webhooks.DeliveryFilter{Status: "failed"}, failed},
		} {
			cases = append(cases, c)
		}
		for i, c := range cases {
			if i == 1 { // what the sweep does between measurements
				if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.FoldDeliveryCounts(ctx, tx, 100); return err }); err != nil {
					t.Fatal(err)
				}
			}
			f := c.filter
			f.Limit = 20
			p50, p95 := storetest.Percentiles(t, calls, func() error {
				items, total, err := st.ListDeliveries(ctx, db, sc, f)
				if err == nil && (len(items) != 20 || total != c.total) {
					err = fmt.Errorf("%s: %d rows of %d, want 20 of %d", c.name, len(items), total, c.total)
				}
				return err
			})
			t.Logf("| webhook deliveries, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, seeded,
				storetest.Milliseconds(p50), storetest.Milliseconds(p95))
		}
	}
}
