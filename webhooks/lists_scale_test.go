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
// rows) with its exact total at several sizes of a tenant's deliveries:
// unfiltered and with each filter the list takes (webhook, event type,
// each status) and their combinations, on each engine. It is a
// measurement, not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the delivery counts to measure at (for example
// "100000,1000000"). Each size is a tenant of its own in one fresh
// database, its deliveries inserted through the Store (multi-row INSERTs,
// 1,000 per transaction, so one kept-count row per webhook, event type
// and state and transaction; PostgreSQL's statistics gathered after,
// storetest.Analyze), over two webhooks and two event types (order.created
// 90%, order.paid 10%): 15% failed, 2% expired, the rest delivered except
// the newest 1,000, which are still to send (980 pending, 20 sending: a
// backlog of a fixed size). Each case's timed calls alternate between the
// sizes, so that every size is timed under the same load of a shared
// machine. TENANTKIT_BENCH_LIST_CALLS is the number of timed calls per
// case and size (200 when unset). The unfiltered list is measured first
// with the counts as the inserts left them, then, like every case after
// it, once the counts are folded (as the sweep does). Each line it logs
// is a row of BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./webhooks -run TestListDeliveriesAtScale -v -timeout 2h
func TestListDeliveriesAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListDeliveries(t, db, engine, sizes, calls) },
		webhooks.Migrations)
}

// backlog is how many of the newest deliveries TestListDeliveriesAtScale
// leaves to send.
const backlog = 1000

// scaleDeliveries is a tenant's deliveries of TestListDeliveriesAtScale.
type scaleDeliveries struct {
	tenant   string
	hooks    []string
	statuses []string // each delivery's
}

// TestListDeliveriesStayFlat runs TestListDeliveriesAtScale's cases at two sizes and
// fails when one reads more rows as the table grows (storetest.FlatLists).
func TestListDeliveriesStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListDeliveries, webhooks.Migrations)
}

func scaleListDeliveries(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	eventType := func(i int) string {
		if i%10 == 1 {
			return "order.paid"
		}
		return "order.created"
	}
	var tenants []scaleDeliveries
	for _, rows := range sizes {
		start := time.Now()
		sd := scaleDeliveries{tenant: store.NewID()}
		for _, w := range scaleWebhooks(t, db, sd.tenant, 2, now) {
			sd.hooks = append(sd.hooks, w.ID)
		}
		batch := make([]*webhooks.Delivery, 0, 1000)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.InsertDeliveries(ctx, tx, batch); return err }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		for i := range rows {
			at := now.Add(-time.Duration(rows-i) * time.Millisecond)
			sd.statuses = append(sd.statuses, scaleStatus(i, rows))
			batch = append(batch, &webhooks.Delivery{ID: store.NewIDAt(at), TenantID: sd.tenant, WebhookID: sd.hooks[i%2],
				EventID: store.NewID(), EventType: eventType(i), MessageID: store.NewID(), Payload: []byte(`{"n":1}`),
				Status: sd.statuses[i], MaxAttempts: 3, TargetURL: "https://example.com/h", EnqueuedAt: at, CreatedAt: at,
				UpdatedAt: at})
			if len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		t.Logf("seeded %d deliveries in %s", rows, time.Since(start).Round(time.Second))
		tenants = append(tenants, sd)
	}
	storetest.Analyze(t, db)
	// want counts the deliveries f selects in sd, as the list must.
	want := func(sd scaleDeliveries, f webhooks.DeliveryFilter) int {
		n := 0
		for i, s := range sd.statuses {
			if (f.WebhookID == "" || f.WebhookID == sd.hooks[i%2]) && (f.EventType == "" || f.EventType == eventType(i)) &&
				(f.Status == "" || f.Status == s) {
				n++
			}
		}
		return n
	}
	type listCase struct {
		name   string
		filter func(sd scaleDeliveries) webhooks.DeliveryFilter
	}
	none := func(scaleDeliveries) webhooks.DeliveryFilter { return webhooks.DeliveryFilter{} }
	cases := []listCase{{"unfiltered, counts unfolded", none}, {"unfiltered", none},
		{"webhookId", func(sd scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{WebhookID: sd.hooks[1]}
		}},
		{"eventType (10%)", func(scaleDeliveries) webhooks.DeliveryFilter { return webhooks.DeliveryFilter{EventType: "order.paid"} }}}
	for _, s := range []string{webhooks.StatusDelivered, webhooks.StatusFailed, webhooks.StatusExpired, webhooks.StatusPending,
		webhooks.StatusSending} {
		cases = append(cases, listCase{"status " + s, func(scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{Status: s}
		}})
	}
	cases = append(cases,
		listCase{"webhookId + status failed", func(sd scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{WebhookID: sd.hooks[1], Status: webhooks.StatusFailed}
		}},
		listCase{"webhookId + eventType", func(sd scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{WebhookID: sd.hooks[1], EventType: "order.paid"}
		}},
		listCase{"eventType + status failed", func(scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{EventType: "order.paid", Status: webhooks.StatusFailed}
		}},
		listCase{"webhookId + eventType + status pending", func(sd scaleDeliveries) webhooks.DeliveryFilter {
			return webhooks.DeliveryFilter{WebhookID: sd.hooks[1], EventType: "order.paid", Status: webhooks.StatusPending}
		}})
	for i, c := range cases {
		if i == 1 { // what the sweep does between measurements
			for {
				var n int64
				if err := db.Tx(ctx, func(tx *store.Tx) error {
					var err error
					n, err = st.FoldDeliveryCounts(ctx, tx, 100)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			// The fold deleted the deltas and updated the sums; a live
			// server's autovacuum clears the versions that leaves.
			storetest.Vacuum(t, db, "webhook_delivery_counts", "webhook_delivery_folded_counts", "webhook_delivery_totals")
		}
		if i == 0 && storetest.FlatLeftOut(t, db, "webhook deliveries, "+c.name,
			"the deltas written since the last fold are summed, and the sweep folds them every minute") {
			continue
		}
		var fns []func() error
		for _, sd := range tenants {
			f := c.filter(sd)
			total := want(sd, f)
			f.Limit = 20
			sc := store.Scope{TenantID: sd.tenant}
			fns = append(fns, func() error {
				items, got, err := st.ListDeliveries(ctx, db, sc, f)
				if err == nil {
					err = storetest.CheckPage(c.name, len(items), got, min(20, total), total)
				}
				return err
			})
		}
		if storetest.FlatCheck(t, db, "webhook deliveries, "+c.name, sizes, fns) {
			continue
		}
		p50, p95 := storetest.Interleaved(t, calls, fns)
		for j, sd := range tenants {
			t.Logf("| webhook deliveries, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, len(sd.statuses),
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}

// TestListWebhooksAtScale measures the webhooks list's first page (20
// rows) with its exact total at several sizes of a tenant's webhooks:
// unfiltered and by isActive (active, and the inactive 10%), on each
// engine; a search's total counts its matches and is not measured. Like
// TestListDeliveriesAtScale it runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the counts to measure at, each size a tenant of its own in one
// fresh database, the calls of each case alternating between the sizes;
// the webhooks are inserted with multi-row INSERTs (the kept counts
// maintained by the table's trigger, as for every write).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./webhooks -run TestListWebhooksAtScale -v -timeout 2h
func TestListWebhooksAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListWebhooks(t, db, engine, sizes, calls) },
		webhooks.Migrations)
}

// TestListWebhooksStayFlat runs TestListWebhooksAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListWebhooksStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListWebhooks, webhooks.Migrations)
}

func scaleListWebhooks(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	inserts := store.NewBatchInsert("webhooks", "id, tenant_id, name, url, subscribed_events, http_method, custom_headers, "+
		"max_retries, timeout_ms, rate_limit_per_minute, auto_disable_threshold, is_active, secret, created_at, updated_at", "")
	var tenants []string
	for _, rows := range sizes {
		start := time.Now()
		tenant := store.NewID()
		values := make([]any, 0, 1000*inserts.Columns())
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := inserts.InsertValues(ctx, tx, values); return err }); err != nil {
				t.Fatal(err)
			}
			values = values[:0]
		}
		for i := range rows {
			at := now.Add(-time.Duration(rows-i) * time.Millisecond)
			values = append(values, store.NewIDAt(at), tenant, fmt.Sprint("hook ", i), "https://example.com/h",
				`["order.created"]`, "POST", `{}`, 3, 1000, 0, 0, i%10 != 3, "sealed", at, at)
			if len(values) == cap(values) {
				flush()
			}
		}
		if len(values) > 0 {
			flush()
		}
		t.Logf("seeded %d webhooks in %s", rows, time.Since(start).Round(time.Second))
		tenants = append(tenants, tenant)
	}
	// The kept counts were updated once per webhook seeded; a live
	// server's autovacuum clears the versions that leaves.
	storetest.Vacuum(t, db, "webhook_list_counts")
	storetest.Analyze(t, db)
	yes, no := true, false
	for _, c := range []struct {
		name   string
		filter webhooks.Filter
	}{
		{"unfiltered", webhooks.Filter{}},
		{"isActive true", webhooks.Filter{IsActive: &yes}},
		{"isActive false (10%)", webhooks.Filter{IsActive: &no}},
	} {
		var fns []func() error
		for j, tenant := range tenants {
			inactive := (sizes[j] + 6) / 10
			total := map[*bool]int{nil: sizes[j], &yes: sizes[j] - inactive, &no: inactive}[c.filter.IsActive]
			f := c.filter
			f.Limit = 20
			sc := store.Scope{TenantID: tenant}
			fns = append(fns, func() error {
				items, got, err := st.ListWebhooks(ctx, db, sc, f)
				if err == nil {
					err = storetest.CheckPage(c.name, len(items), got, 20, total)
				}
				return err
			})
		}
		if storetest.FlatCheck(t, db, "webhooks, "+c.name, sizes, fns) {
			continue
		}
		p50, p95 := storetest.Interleaved(t, calls, fns)
		for j := range tenants {
			t.Logf("| webhooks, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, sizes[j],
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}

// scaleStatus is the status of the i-th of rows seeded deliveries: the
// last backlog pending (their last fiftieth sending), then 15% failed, 2%
// expired and the rest delivered.
func scaleStatus(i, rows int) string {
	switch {
	case i >= rows-backlog/50:
		return webhooks.StatusSending
	case i >= rows-backlog:
		return webhooks.StatusPending
	case i%20 < 3:
		return webhooks.StatusFailed
	case i%50 == 7:
		return webhooks.StatusExpired
	}
	return webhooks.StatusDelivered
}

// scaleWebhooks inserts n webhooks of tenant for the seeded deliveries.
func scaleWebhooks(t *testing.T, db *store.DB, tenant string, n int, now time.Time) []*webhooks.Webhook {
	t.Helper()
	st := webhooks.NewSQLStore()
	var hooks []*webhooks.Webhook
	for i := range n {
		w := &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, Name: fmt.Sprint("hook ", i), URL: "https://example.com/h",
			SubscribedEvents: []string{"order.created"}, HTTPMethod: "POST", MaxRetries: 3, TimeoutMs: 1000, IsActive: true,
			CreatedAt: now, UpdatedAt: now}
		if err := db.Tx(t.Context(), func(tx *store.Tx) error { return st.InsertWebhook(t.Context(), tx, w, "sealed") }); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w)
	}
	return hooks
}
