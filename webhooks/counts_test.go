package webhooks_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// linesBefore returns the webhooks' migrations without version and the
// ones after it.
func linesBefore(t *testing.T, version string) store.Migrations {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(webhooks.Migrations.FS, webhooks.Migrations.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() >= version {
			return err
		}
		b, err := fs.ReadFile(webhooks.Migrations.FS, p)
		m[strings.TrimPrefix(p, webhooks.Migrations.Dir+"/")] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return store.Migrations{Line: webhooks.Migrations.Line, FS: m}
}

// The migration that keeps the deliveries' counts fills them from the
// deliveries already there: the list's totals are right at once.
func TestDeliveryCountsMigrationCountsExistingDeliveries(t *testing.T) {
	t.Parallel()
	before := linesBefore(t, "0005")
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		st := webhooks.NewSQLStore()
		tenant := store.NewID()
		now := time.Now().UTC().Truncate(time.Microsecond)
		var hooks []string
		for range 2 {
			w := &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, Name: "h", URL: "https://example.com/h",
				SubscribedEvents: []string{"a.b"}, HTTPMethod: "POST", MaxRetries: 3, TimeoutMs: 1000, IsActive: true,
				CreatedAt: now, UpdatedAt: now}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertWebhook(ctx, tx, w, "sealed") }); err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, w.ID)
		}
		for i := range 5 { // as the store wrote them before the counts
			if _, err := db.Exec(ctx, `INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, message_id,
				payload, status, max_attempts, target_url, enqueued_at, created_at, updated_at)
				VALUES ($1, $2, $3, $4, 'a.b', $5, '{}', 'pending', 3, 'https://example.com/h', $6, $6, $6)`,
				store.NewID(), tenant, hooks[min(i, 1)], store.NewID(), store.NewID(), now); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx, webhooks.Migrations); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			webhook string
			want    int
		}{{"", 5}, {hooks[0], 1}, {hooks[1], 4}} {
			_, total, err := st.ListDeliveries(ctx, db, store.Scope{TenantID: tenant}, webhooks.DeliveryFilter{WebhookID: c.webhook, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if total != c.want {
				t.Errorf("webhook %q: total %d, want %d", c.webhook, total, c.want)
			}
		}
	}, before)
}

// FoldCounts (the sweep's) folds a webhook's count rows into one, keeping
// the totals, until there is nothing left to fold.
func TestFoldCounts(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
		if err != nil {
			t.Fatal(err)
		}
		st := webhooks.NewSQLStore()
		tenant := store.NewID()
		now := time.Now().UTC().Truncate(time.Microsecond)
		w := insertWebhookOf(t, db, tenant, "a.b", now)
		for range 3 {
			insertPendingDelivery(t, db, w, "a.b", now)
		}
		// Three delta rows of the count by event type and three of the
		// count by hour of creation are folded, into one sum each.
		for i, want := range []int64{6, 0} {
			n, err := svc.FoldCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("fold %d: %d rows folded, want %d", i+1, n, want)
			}
			_, total, err := st.ListDeliveries(ctx, db, store.Scope{TenantID: tenant}, webhooks.DeliveryFilter{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if total != 3 {
				t.Errorf("fold %d: total %d, want 3", i+1, total)
			}
		}
		// The three sent (the state trigger's -1 and +1 of each): the sums
		// still to send come to zero and leave no row; the delivered ones
		// take their place.
		if _, err := db.Exec(ctx, `UPDATE webhook_deliveries SET status = 'delivered' WHERE tenant_id = $1`, tenant); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.FoldCounts(ctx); err != nil {
			t.Fatal(err)
		}
		var toSend, delivered int
		if err := db.QueryRow(ctx, `SELECT count(CASE WHEN state = '' THEN 1 END), count(CASE WHEN state = 'delivered' THEN 1 END)
			FROM webhook_delivery_folded_counts WHERE tenant_id = $1`, tenant).Scan(&toSend, &delivered); err != nil {
			t.Fatal(err)
		}
		if toSend != 0 || delivered != 2 {
			t.Errorf("after the sends: %d sums still to send (want 0), %d delivered (want 2: by event type, by hour)", toSend, delivered)
		}
		_, total, err := st.ListDeliveries(ctx, db, store.Scope{TenantID: tenant}, webhooks.DeliveryFilter{Status: webhooks.StatusDelivered, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if total != 3 {
			t.Errorf("after the sends: %d delivered, want 3", total)
		}
	}, webhooks.Migrations)
}

// insertWebhookOf inserts, through the store, a webhook of tenant
// subscribed to eventType: for the counts' tests.
func insertWebhookOf(t testing.TB, db *store.DB, tenant, eventType string, now time.Time) *webhooks.Webhook {
	t.Helper()
	w := &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, Name: "h", URL: "https://example.com/h",
		SubscribedEvents: []string{eventType}, HTTPMethod: "POST", MaxRetries: 3, TimeoutMs: 1000, IsActive: true,
		CreatedAt: now, UpdatedAt: now}
	ctx := t.Context()
	if err := db.Tx(ctx, func(tx *store.Tx) error { return webhooks.NewSQLStore().InsertWebhook(ctx, tx, w, "sealed") }); err != nil {
		t.Fatal(err)
	}
	return w
}

// insertPendingDelivery inserts, through the store (so with its counts),
// a pending delivery of w for eventType, created at now.
func insertPendingDelivery(t testing.TB, db *store.DB, w *webhooks.Webhook, eventType string, now time.Time) {
	t.Helper()
	ctx := t.Context()
	if err := db.Tx(ctx, func(tx *store.Tx) error {
		_, err := webhooks.NewSQLStore().InsertDeliveries(ctx, tx, []*webhooks.Delivery{pendingDelivery(w, eventType, now)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// pendingDelivery is a new delivery of w, still to send.
func pendingDelivery(w *webhooks.Webhook, eventType string, now time.Time) *webhooks.Delivery {
	return &webhooks.Delivery{ID: store.NewID(), TenantID: w.TenantID, WebhookID: w.ID, EventID: store.NewID(), EventType: eventType,
		MessageID: store.NewID(), Payload: []byte(`{}`), Status: webhooks.StatusPending, MaxAttempts: 3, TargetURL: w.URL,
		EnqueuedAt: now, CreatedAt: now, UpdatedAt: now}
}
