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

// Each process's look for lapsed leases (Lapsed, once a second) reads the
// queues being drained (migration 0012's index), not a row per webhook
// ever drained: with 2,000 idle queues beside two held and one lapsed, it
// reads the held ones. (It scanned every queue before: 5 → 33 buffers a
// read over a 30-minute soak that creates webhooks all along.)
func TestLapsedReadsHeldQueues(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, webhooks.Migrations)
	ctx := t.Context()
	tenant := store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := func(i int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012d", i) }
	storetest.SeedRows(t, db, "webhooks", `id, tenant_id, name, url, subscribed_events, http_method, custom_headers, max_retries,
		timeout_ms, rate_limit_per_minute, auto_disable_threshold, is_active, secret, created_at, updated_at`, 0, 2003,
		func(i int) []any {
			return []any{id(i), tenant, "h", "https://example.com/h", `["*"]`, "POST", `{}`, 3, 1000, 0, 0, true, "sealed", now, now}
		})
	storetest.SeedRows(t, db, "webhook_queues", "webhook_id, tenant_id, owner, lease_until", 0, 2003, func(i int) []any {
		switch i {
		case 500, 1500: // held
			return []any{id(i), tenant, "holder", now.Add(time.Minute)}
		case 1000: // lapsed
			return []any{id(i), tenant, "holder", now.Add(-time.Minute)}
		}
		return []any{id(i), tenant, nil, nil}
	})
	storetest.Vacuum(t, db, "webhook_queues")

	lapsed, err := webhooks.NewSQLStore().Lapsed(trips.Mark(ctx), db, now, 100)
	is.NoErr(err)
	is.Equal(len(lapsed), 1)
	is.Equal(lapsed[0].Key.ID, id(1000))
	is.Equal(storetest.CheckRowsRead(t, db, trips, "lease_until <", "webhook_queues", 3, "enable_seqscan = off"), 1)
}
