package webhooks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestDeliveryHealthAtScale measures the delivery health (the dashboard
// widget "webhooks.delivery_health": each webhook's deliveries of a window
// by state) at several sizes of a tenant's deliveries, on each engine. It
// is a measurement, not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the delivery counts to measure at (for example "100000,1000000").
// Each size is a tenant of its own in one fresh database, its deliveries
// spread evenly over the last 30 hours (so the widget's window holds
// about 80% of them: the table grows within the window, as in a soak)
// over two webhooks and a third deleted one, inserted through the Store
// (1,000 per transaction), with the statuses of TestListDeliveriesAtScale.
// The cases, each checked against a count of the seeded deliveries on
// every call, and timed alternately between the sizes:
//
//   - the widget's window, from the start of the hour 24 hours ago, with
//     the counts as the inserts left them, then folded as the sweep
//     keeps them;
//   - exactly the last 24 hours (the deliveries of the first, partial
//     hour counted from the tenant's index);
//   - the widget's window again once PostgreSQL's VACUUM has run on the
//     counts (storetest.Vacuum), as autovacuum does on a live server
//     after the sweep's deletes: the tests' server runs without it, so
//     the folded rows' dead versions stay otherwise;
//   - the statement the store ran before the counts by hour (every
//     delivery of the window read), for comparison (20 calls at most).
//
// TENANTKIT_BENCH_LIST_CALLS is the number of timed calls per case and
// size (200 when unset). With TENANTKIT_BENCH_EXPLAIN set it logs the
// plan of the widget window's read at each size before each case
// (PostgreSQL). Each line it logs is a row of BENCHMARKS.md's tables.
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./webhooks -run TestDeliveryHealthAtScale -v -timeout 2h
func TestDeliveryHealthAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleDeliveryHealth(t, db, engine, sizes, calls) },
		webhooks.Migrations)
}

// healthSpan is how far back TestDeliveryHealthAtScale's deliveries go.
const healthSpan = 30 * time.Hour

type scaleHealth struct {
	tenant   string
	hooks    []*webhooks.Webhook // the live ones, then the deleted one
	at       []time.Time         // each delivery's creation
	statuses []string            // and status
}

// want is what DeliveryHealth must return for sh from since: the live
// webhooks in name order.
func (sh scaleHealth) want(since time.Time) []webhooks.DeliveryHealth {
	var out []webhooks.DeliveryHealth
	for _, w := range sh.hooks[:2] {
		out = append(out, webhooks.DeliveryHealth{WebhookID: w.ID, Name: w.Name, URL: w.URL})
	}
	for i, at := range sh.at {
		j := i % 3
		if j == 2 || at.Before(since) {
			continue
		}
		switch sh.statuses[i] {
		case webhooks.StatusDelivered:
			out[j].Delivered++
		case webhooks.StatusFailed, webhooks.StatusExpired:
			out[j].Failed++
		default:
			out[j].Pending++
		}
	}
	return out
}

// healthBefore is the statement DeliveryHealth ran before the counts by
// hour of creation: every delivery of the window read.
const healthBefore = `SELECT w.id, w.name, w.url,
		count(CASE WHEN d.status = 'delivered' THEN 1 END),
		count(CASE WHEN d.status IN ('failed', 'expired') THEN 1 END),
		count(CASE WHEN d.status IN ('pending', 'sending') THEN 1 END)
		FROM webhooks w LEFT JOIN webhook_deliveries d
		ON d.tenant_id = w.tenant_id AND d.webhook_id = w.id AND d.created_at >= $2
		WHERE w.tenant_id = $1 AND w.deleted_at IS NULL GROUP BY w.id, w.name, w.url ORDER BY w.name`

// healthWindow is DeliveryHealth's statement for a window that starts at
// an hour in a scope of the whole tenant, for its plan
// (storetest.Explain): the window's kept counts by hour.
const healthWindow = `SELECT w.id, w.name, w.url,
		CAST(COALESCE(sum(CASE WHEN x.state = 'delivered' THEN x.n END), 0) AS BIGINT),
		CAST(COALESCE(sum(CASE WHEN x.state IN ('failed', 'expired') THEN x.n END), 0) AS BIGINT),
		CAST(COALESCE(sum(CASE WHEN x.state = '' THEN x.n END), 0) AS BIGINT)
		FROM webhooks w LEFT JOIN (SELECT k.webhook_id, k.state, k.n FROM webhook_delivery_kept_counts k
			WHERE k.tenant_id = $1 AND k.created_hour >= $2) x ON x.webhook_id = w.id
		WHERE w.tenant_id = $1 AND w.deleted_at IS NULL GROUP BY w.id, w.name, w.url`

func scaleDeliveryHealth(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var tenants []scaleHealth
	for _, rows := range sizes {
		start := time.Now()
		sh := scaleHealth{tenant: store.NewID()}
		sh.hooks = scaleWebhooks(t, db, sh.tenant, 3, now)
		batch := make([]*webhooks.Delivery, 0, 1000)
		flush := func() {
			if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := st.InsertDeliveries(ctx, tx, batch); return err }); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
		step := healthSpan / time.Duration(rows)
		for i := range rows {
			at := now.Add(-step * time.Duration(rows-i))
			sh.at, sh.statuses = append(sh.at, at), append(sh.statuses, scaleStatus(i, rows))
			w := sh.hooks[i%3]
			batch = append(batch, &webhooks.Delivery{ID: store.NewIDAt(at), TenantID: sh.tenant, WebhookID: w.ID,
				EventID: store.NewID(), EventType: "order.created", MessageID: store.NewID(), Payload: []byte(`{"n":1}`),
				Status: sh.statuses[i], MaxAttempts: 3, TargetURL: w.URL, EnqueuedAt: at, CreatedAt: at, UpdatedAt: at})
			if len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.DeleteWebhook(ctx, tx, sh.tenant, sh.hooks[2].ID, now) }); err != nil {
			t.Fatal(err)
		}
		t.Logf("seeded %d deliveries in %s", rows, time.Since(start).Round(time.Second))
		tenants = append(tenants, sh)
	}
	storetest.Analyze(t, db)
	widget := now.Add(-24 * time.Hour).Truncate(time.Hour) // the dashboards' window
	check := func(name string, got, want []webhooks.DeliveryHealth) error {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: got %v, want %v", name, got, want)
		}
		return nil
	}
	cases := []struct {
		name   string
		since  time.Time
		before bool // the statement of before the counts by hour
	}{
		{"widget window, counts unfolded", widget, false},
		{"widget window", widget, false},
		{"exactly 24 hours", now.Add(-24 * time.Hour), false},
		{"widget window, counts folded and vacuumed", widget, false},
		{"widget window, the statement before", widget, true},
	}
	for i, c := range cases {
		if i == 3 { // what autovacuum does after the sweep's deletes
			storetest.Vacuum(t, db, "webhook_delivery_counts", "webhook_delivery_folded_counts")
		}
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
		}
		var fns []func() error
		for _, sh := range tenants {
			sc := store.Scope{TenantID: sh.tenant}
			if c.since.Equal(widget) && !c.before {
				storetest.Explain(t, db, fmt.Sprintf("%s at %d", c.name, len(sh.at)), healthWindow, sh.tenant, widget.Unix())
			}
			want := sh.want(c.since) // counted before the timed calls
			fns = append(fns, func() error {
				if c.before {
					hs, err := store.Many(ctx, db, func(s store.Scanner) (webhooks.DeliveryHealth, error) {
						var h webhooks.DeliveryHealth
						return h, s.Scan(&h.WebhookID, &h.Name, &h.URL, &h.Delivered, &h.Failed, &h.Pending)
					}, healthBefore, sh.tenant, c.since)
					if err != nil {
						return err
					}
					return check(c.name, hs, want)
				}
				hs, err := st.DeliveryHealth(ctx, db, sc, c.since)
				if err != nil {
					return err
				}
				return check(c.name, hs, want)
			})
		}
		n := calls
		if c.before {
			n = min(n, 20) // seconds a call at 1,000,000
		}
		p50, p95 := storetest.Interleaved(t, n, fns)
		for j, sh := range tenants {
			t.Logf("| delivery health, %s | %s | %d | %.2f ms | %.2f ms |", c.name, engine, len(sh.at),
				storetest.Milliseconds(p50[j]), storetest.Milliseconds(p95[j]))
		}
	}
}
