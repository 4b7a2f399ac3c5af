package webhooks_test

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// deliveryTotalsEnv is two tenants' webhooks of two organizations and of
// none, with deliveries, for the tests of the deliveries list's totals.
type deliveryTotalsEnv struct {
	t             *testing.T
	db            *store.DB
	st            *webhooks.SQLStore
	svc           *webhooks.Service
	now           time.Time
	tenant, other string
	hooks         map[string]*webhooks.Webhook // by name
}

// newDeliveryTotalsEnv is a deliveryTotalsEnv of two new tenants in db,
// folding through svc (nil where the test does not fold).
func newDeliveryTotalsEnv(t *testing.T, db *store.DB, svc *webhooks.Service) *deliveryTotalsEnv {
	return &deliveryTotalsEnv{t: t, db: db, st: webhooks.NewSQLStore(), svc: svc, now: time.Now().UTC().Truncate(time.Microsecond),
		tenant: store.NewID(), other: store.NewID(), hooks: map[string]*webhooks.Webhook{}}
}

// insertOrgWebhook inserts, through the store, a webhook of tenant and
// organization org ("" for none), named name.
func (e *deliveryTotalsEnv) insertOrgWebhook(name, tenant, org string) {
	e.t.Helper()
	w := &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, OrganizationID: org, Name: name, URL: "https://example.com/h",
		SubscribedEvents: []string{"*"}, HTTPMethod: "POST", MaxRetries: 3, TimeoutMs: 1000, IsActive: true,
		CreatedAt: e.now, UpdatedAt: e.now}
	ctx := e.t.Context()
	if err := e.db.Tx(ctx, func(tx *store.Tx) error { return e.st.InsertWebhook(ctx, tx, w, "sealed") }); err != nil {
		e.t.Fatal(err)
	}
	e.hooks[name] = w
}

// deliver inserts n pending deliveries of eventType to the webhook named.
func (e *deliveryTotalsEnv) deliver(name, eventType string, n int) {
	e.t.Helper()
	for range n {
		insertPendingDelivery(e.t, e.db, e.hooks[name], eventType, e.now)
	}
}

// settle sets the status of n of the named webhook's deliveries still to
// send (the state trigger writes their counts).
func (e *deliveryTotalsEnv) settle(name, status string, n int) {
	e.t.Helper()
	if _, err := e.db.Exec(e.t.Context(), `UPDATE webhook_deliveries SET status = $1 WHERE id IN (SELECT id FROM webhook_deliveries
		WHERE tenant_id = $2 AND webhook_id = $3 AND status = 'pending' ORDER BY id LIMIT $4)`,
		status, e.hooks[name].TenantID, e.hooks[name].ID, n); err != nil {
		e.t.Fatal(err)
	}
}

// fold runs the sweep's fold of the kept counts.
func (e *deliveryTotalsEnv) fold() {
	e.t.Helper()
	if _, err := e.svc.FoldCounts(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
}

// check compares each list total, for several scopes and filters, with a
// count of the deliveries the list's page would select.
func (e *deliveryTotalsEnv) check(stage string) {
	e.t.Helper()
	ctx := e.t.Context()
	scopes := []store.Scope{
		{TenantID: e.tenant}, {TenantID: e.tenant, OrganizationIDs: []string{"org-a"}},
		{TenantID: e.tenant, OrganizationIDs: []string{"org-b"}}, {TenantID: e.tenant, OrganizationIDs: []string{}},
		{TenantID: e.tenant, OrganizationIDs: []string{"org-a", "org-b"}},
		{TenantID: e.other}, {TenantID: e.other, OrganizationIDs: []string{"org-a"}},
	}
	filters := []webhooks.DeliveryFilter{{}, {EventType: "a.x"}, {EventType: "b.y"}, {Status: webhooks.StatusDelivered},
		{Status: webhooks.StatusFailed}, {EventType: "a.x", Status: webhooks.StatusDelivered}, {Status: webhooks.StatusPending},
		{WebhookID: e.hooks["a"].ID}, {WebhookID: e.hooks["a"].ID, Status: webhooks.StatusDelivered}}
	for _, sc := range scopes {
		for _, f := range filters {
			f.Limit = 1
			_, total, err := e.st.ListDeliveries(ctx, e.db, sc, f)
			if err != nil {
				e.t.Fatal(err)
			}
			c := sc.Readable("d.tenant_id", "w.organization_id")
			for col, v := range map[string]string{"d.webhook_id": f.WebhookID, "d.event_type": f.EventType, "d.status": f.Status} {
				if v != "" {
					c.And(col+" = ?", v)
				}
			}
			var want int
			if err := e.db.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries d
				JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id WHERE `+c.SQL(), c.Values()...).Scan(&want); err != nil {
				e.t.Fatal(err)
			}
			if total != want {
				e.t.Errorf("%s: scope %v, filter %+v: total %d, want %d", stage, sc, f, total, want)
			}
		}
	}
}

// The deliveries list's totals, served from the kept counts (by webhook
// when filtered by one, else by organization: migration 0011), are the
// count of the deliveries the scope may read, with each filter: before
// the sweep's fold and after, once deliveries are sent, for a deleted
// webhook's deliveries (still listed), in two tenants with an
// organization of the same id, and after a webhook moves to another
// organization (which the store never does; a host might).
func TestDeliveryTotalsByOrganization(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
		if err != nil {
			t.Fatal(err)
		}
		e := newDeliveryTotalsEnv(t, db, svc)
		for _, h := range []struct{ name, tenant, org string }{{"a", e.tenant, "org-a"}, {"a2", e.tenant, "org-a"},
			{"b", e.tenant, "org-b"}, {"none", e.tenant, ""}, {"x", e.other, "org-a"}} {
			e.insertOrgWebhook(h.name, h.tenant, h.org)
		}
		e.deliver("a", "a.x", 3)
		e.deliver("a", "b.y", 1)
		e.deliver("a2", "a.x", 2)
		e.deliver("b", "a.x", 2)
		e.deliver("none", "b.y", 2)
		e.deliver("x", "a.x", 5)
		e.check("not folded")
		e.fold()
		e.check("folded")

		e.settle("a", webhooks.StatusDelivered, 2)
		e.settle("b", webhooks.StatusFailed, 1)
		e.settle("x", webhooks.StatusDelivered, 4)
		e.check("sent, not folded")
		e.fold()
		e.check("sent, folded")

		// A deleted webhook's deliveries stay listed and counted.
		ctx := t.Context()
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			return e.st.DeleteWebhook(ctx, tx, e.tenant, e.hooks["a2"].ID, e.now)
		}); err != nil {
			t.Fatal(err)
		}
		e.deliver("a", "a.x", 1)
		e.check("a webhook deleted")

		// A webhook moved to org-b takes its folded sums along, and its
		// deltas not yet folded count there at once.
		if _, err := db.Exec(ctx, `UPDATE webhooks SET organization_id = 'org-b' WHERE id = $1`, e.hooks["a"].ID); err != nil {
			t.Fatal(err)
		}
		e.check("a webhook moved")
		e.fold()
		e.check("a webhook moved, folded")
		if _, err := db.Exec(ctx, `UPDATE webhooks SET organization_id = NULL WHERE id = $1`, e.hooks["b"].ID); err != nil {
			t.Fatal(err)
		}
		e.check("a webhook moved out of its organization")
	}, webhooks.Migrations)
}

// Migration 0011 fills the sums by organization from the counts folded
// before it: the totals are right at once.
func TestDeliveryTotalsMigrationSumsFoldedCounts(t *testing.T) {
	t.Parallel()
	before := linesBefore(t, "0011")
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newDeliveryTotalsEnv(t, db, nil)
		e.insertOrgWebhook("a", e.tenant, "org-a")
		e.insertOrgWebhook("b", e.tenant, "org-b")
		e.insertOrgWebhook("none", e.tenant, "")
		e.insertOrgWebhook("x", e.other, "org-a")
		e.deliver("a", "a.x", 3)
		e.deliver("b", "b.y", 2)
		e.deliver("none", "a.x", 1)
		e.deliver("x", "a.x", 4)
		e.settle("a", webhooks.StatusDelivered, 1)
		// Folded by the earlier version's statements, then migrated.
		if err := db.Tx(t.Context(), func(tx *store.Tx) error {
			_, err := e.st.FoldDeliveryCounts(t.Context(), tx, 100)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e.deliver("a", "b.y", 1) // a delta left to the view
		if err := db.Migrate(t.Context(), webhooks.Migrations); err != nil {
			t.Fatal(err)
		}
		e.check("migrated")
	}, before)
}
