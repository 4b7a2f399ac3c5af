// Package webhookstest is the conformance suite of webhooks.Store
// implementations: Run checks every behaviour the webhooks service relies
// on of its store (tenant and organization scoping of every read and
// write, soft delete, list order, paging, totals and filters, delivery
// states and their transitions, the claim order, the delivery health
// counts by status, window and scope, inbound deduplication, the delivery
// queues' leases, conflicts and concurrency, the deliveries list's
// totals kept exact across inserts, state changes, concurrent inserts
// and folds of the kept counts, the webhooks list's totals across
// creates, changes and deletes), in the manner of River's
// driver tests and ratelimit/ratelimittest.
//
// Every subtest works in fresh random tenants, so one database may serve
// the whole suite and be shared with other tests.
package webhookstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Run runs the suite against the stores newStore returns, each with the
// database whose transactions its methods run in. newStore is called once
// per subtest, with the subtest's t.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, webhooks.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"WebhookRoundTrip", testWebhookRoundTrip},
		{"InsertConflict", testInsertConflict},
		{"TenantScope", testTenantScope},
		{"OrganizationScope", testOrganizationScope},
		{"SoftDelete", testSoftDelete},
		{"ListOrderPagingFilters", testListWebhooks},
		{"SearchTotalCapped", testSearchTotalCapped},
		{"SecretsRotateAndDrop", testSecrets},
		{"ActiveAndSigningWebhooks", testActiveAndSigning},
		{"ResultsAndDeactivate", testResults},
		{"DeliveryLog", testDeliveryLog},
		{"DeliveryTotals", testDeliveryTotals},
		{"DeliveryTotalsByStatusAndEventType", testDeliveryStateTotals},
		{"WebhookTotals", testWebhookTotals},
		{"ClaimOrderAndStates", testClaim},
		{"ExpireDeliveries", testExpire},
		{"DeliveryHealth", testDeliveryHealth},
		{"InboundDedup", testInbound},
		{"QueueLeases", testLeases},
		{"QueueItems", testQueueItems},
		{"QueueOwners", testQueueOwners},
		{"ConcurrentLeaseAndInbound", testConcurrency},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			c.test(t, &env{t: t, db: db, st: st, ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	db  *store.DB
	st  webhooks.Store
	ctx context.Context
}

// tx runs fn in a transaction, failing the test on error.
func (e *env) tx(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, fn); err != nil {
		e.t.Fatal(err)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: want store.ErrNotFound, got %v", what, err)
	}
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func equalSlices[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// hook returns a webhook to insert: of tenant and org, created at at.
func hook(tenant, org, name string, at time.Time) *webhooks.Webhook {
	return &webhooks.Webhook{ID: store.NewID(), TenantID: tenant, OrganizationID: org, Name: name, Description: "d " + name,
		URL: "https://example.com/" + name, SubscribedEvents: []string{"orders.*", "x.y"}, HTTPMethod: "PUT",
		CustomHeaders: map[string]string{"X-A": "1"}, MaxRetries: 3, TimeoutMs: 2000, RateLimitPerMinute: 7,
		AutoDisableThreshold: 9, IsActive: true, CreatedAt: at, UpdatedAt: at}
}

func (e *env) insert(w *webhooks.Webhook) *webhooks.Webhook {
	e.t.Helper()
	e.tx(func(tx *store.Tx) error { return e.st.InsertWebhook(e.ctx, tx, w, "sealed:"+w.ID) })
	return w
}

// newHook inserts a webhook of tenant and org created now.
func (e *env) newHook(tenant, org, name string) *webhooks.Webhook {
	return e.insert(hook(tenant, org, name, e.db.Now()))
}

func tenantScope(tenant string) store.Scope { return store.Scope{TenantID: tenant} }

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func hookIDs(ws []*webhooks.Webhook) []string {
	return ids(ws, func(w *webhooks.Webhook) string { return w.ID })
}

func deliveryIDs(ds []*webhooks.Delivery) []string {
	return ids(ds, func(d *webhooks.Delivery) string { return d.ID })
}

func testWebhookRoundTrip(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "round")
	got, err := e.st.GetWebhook(e.ctx, e.db, tenantScope(tenant), w.ID)
	noErr(t, err)
	want := *w
	want.MaskedSecret = webhooks.MaskedSecret
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(&want)
	equal(t, "the webhook read back", string(gj), string(wj))
	sealed, err := e.st.SealedWebhook(e.ctx, e.db, tenant, w.ID)
	noErr(t, err)
	equal(t, "sealed secret", sealed.Secret, "sealed:"+w.ID)
	equal(t, "previous secret", sealed.PreviousSecret, "")
	equal(t, "deleted", sealed.Deleted, false)
	equal(t, "sealed webhook's name", sealed.Name, w.Name)
	_, err = e.st.GetWebhook(e.ctx, e.db, tenantScope(tenant), "not-an-id")
	wantNotFound(t, "a malformed id", err)
	_, err = e.st.GetWebhook(e.ctx, e.db, tenantScope(tenant), store.NewID())
	wantNotFound(t, "an unknown id", err)
}

func testInsertConflict(t *testing.T, e *env) {
	w := e.newHook(store.NewID(), "", "twice")
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.InsertWebhook(e.ctx, tx, w, "again") })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a taken id: want store.ErrConflict, got %v", err)
	}
}

func testTenantScope(t *testing.T, e *env) {
	tenant, other := store.NewID(), store.NewID()
	w := e.newHook(tenant, "", "mine")
	d := e.newDelivery(w, store.NewID())
	os := tenantScope(other)
	_, err := e.st.GetWebhook(e.ctx, e.db, os, w.ID)
	wantNotFound(t, "another tenant's get", err)
	_, err = e.st.SealedWebhook(e.ctx, e.db, other, w.ID)
	wantNotFound(t, "another tenant's sealed webhook", err)
	items, total, err := e.st.ListWebhooks(e.ctx, e.db, os, webhooks.Filter{Limit: 50})
	noErr(t, err)
	equal(t, "another tenant's list", len(items)+total, 0)
	moved := *w
	moved.TenantID, moved.Name = other, "stolen"
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, &moved) })
	wantNotFound(t, "another tenant's update", err)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, other, w.ID, tx.Now()) })
	wantNotFound(t, "another tenant's delete", err)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error {
		now := tx.Now()
		return e.st.RotateSecret(e.ctx, tx, other, w.ID, "x", &webhooks.Rotation{PreviousSecretSetAt: now, PreviousSecretExpiresAt: now})
	})
	wantNotFound(t, "another tenant's rotation", err)
	active, err := e.st.ActiveWebhooks(e.ctx, e.db, other)
	noErr(t, err)
	equal(t, "another tenant's active webhooks", len(active), 0)
	_, err = e.st.GetDelivery(e.ctx, e.db, os, d.ID)
	wantNotFound(t, "another tenant's delivery", err)
	ds, total, err := e.st.ListDeliveries(e.ctx, e.db, os, webhooks.DeliveryFilter{Limit: 50})
	noErr(t, err)
	equal(t, "another tenant's delivery log", len(ds)+total, 0)
	var claimed []*webhooks.Delivery
	e.tx(func(tx *store.Tx) error {
		var err error
		claimed, err = e.st.ClaimDeliveries(e.ctx, tx, other, w.ID, tx.Now(), 10)
		return err
	})
	equal(t, "another tenant's claim", len(claimed), 0)
	got, err := e.st.GetWebhook(e.ctx, e.db, tenantScope(tenant), w.ID)
	noErr(t, err)
	equal(t, "the name after another tenant's update", got.Name, "mine")
}

func testOrganizationScope(t *testing.T, e *env) {
	tenant, orgA, orgB := store.NewID(), store.NewID(), store.NewID()
	a := e.newHook(tenant, orgA, "a")
	b := e.newHook(tenant, orgB, "b")
	all := e.newHook(tenant, "", "all")
	da, db, dall := e.newDelivery(a, store.NewID()), e.newDelivery(b, store.NewID()), e.newDelivery(all, store.NewID())
	for _, c := range []struct {
		name     string
		orgs     []string
		hooks    []string
		delivers []string
	}{
		{"organization A", []string{orgA}, []string{all.ID, a.ID}, []string{dall.ID, da.ID}},
		{"organization B", []string{orgB}, []string{all.ID, b.ID}, []string{dall.ID, db.ID}},
		{"no organization", []string{}, []string{all.ID}, []string{dall.ID}},
		{"every organization", nil, []string{all.ID, b.ID, a.ID}, []string{dall.ID, db.ID, da.ID}},
	} {
		sc := store.Scope{TenantID: tenant, OrganizationIDs: c.orgs}
		items, total, err := e.st.ListWebhooks(e.ctx, e.db, sc, webhooks.Filter{Limit: 50})
		noErr(t, err)
		equalSlices(t, c.name+": webhooks listed", hookIDs(items), c.hooks)
		equal(t, c.name+": webhook total", total, len(c.hooks))
		for _, w := range []*webhooks.Webhook{a, b, all} {
			_, err := e.st.GetWebhook(e.ctx, e.db, sc, w.ID)
			if slices.Contains(c.hooks, w.ID) {
				noErr(t, err)
			} else {
				wantNotFound(t, c.name+": get "+w.Name, err)
			}
		}
		ds, total, err := e.st.ListDeliveries(e.ctx, e.db, sc, webhooks.DeliveryFilter{Limit: 50})
		noErr(t, err)
		equalSlices(t, c.name+": deliveries listed", deliveryIDs(ds), c.delivers)
		equal(t, c.name+": delivery total", total, len(c.delivers))
		for _, d := range []*webhooks.Delivery{da, db, dall} {
			_, err := e.st.GetDelivery(e.ctx, e.db, sc, d.ID)
			if slices.Contains(c.delivers, d.ID) {
				noErr(t, err)
			} else {
				wantNotFound(t, c.name+": get delivery "+d.WebhookID, err)
			}
		}
	}
	// The service's writes name the tenant only (it has read the webhook
	// in the scope first); active webhooks are every organization's.
	active, err := e.st.ActiveWebhooks(e.ctx, e.db, tenant)
	noErr(t, err)
	got := hookIDs(active)
	slices.Sort(got)
	want := []string{a.ID, b.ID, all.ID}
	slices.Sort(want)
	equalSlices(t, "active webhooks of every organization", got, want)
	w, err := e.st.GetWebhook(e.ctx, e.db, store.Scope{TenantID: tenant, OrganizationIDs: []string{orgA}}, a.ID)
	noErr(t, err)
	equal(t, "organization read back", w.OrganizationID, orgA)
}

func testSoftDelete(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "gone")
	kept := e.newHook(tenant, "", "kept")
	sc := tenantScope(tenant)
	e.tx(func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, w.ID, tx.Now()) })
	_, err := e.st.GetWebhook(e.ctx, e.db, sc, w.ID)
	wantNotFound(t, "get a deleted webhook", err)
	items, total, err := e.st.ListWebhooks(e.ctx, e.db, sc, webhooks.Filter{Limit: 50})
	noErr(t, err)
	equalSlices(t, "list without the deleted webhook", hookIDs(items), []string{kept.ID})
	equal(t, "total without the deleted webhook", total, 1)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, w.ID, tx.Now()) })
	wantNotFound(t, "delete twice", err)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, w) })
	wantNotFound(t, "update a deleted webhook", err)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error {
		now := tx.Now()
		return e.st.RotateSecret(e.ctx, tx, tenant, w.ID, "x", &webhooks.Rotation{PreviousSecretSetAt: now, PreviousSecretExpiresAt: now})
	})
	wantNotFound(t, "rotate a deleted webhook's secret", err)
	active, err := e.st.ActiveWebhooks(e.ctx, e.db, tenant)
	noErr(t, err)
	equalSlices(t, "active webhooks", hookIDs(active), []string{kept.ID})
	_, err = e.st.SigningWebhook(e.ctx, e.db, tenant, w.URL)
	wantNotFound(t, "a deleted webhook signs", err)
	sealed, err := e.st.SealedWebhook(e.ctx, e.db, tenant, w.ID)
	noErr(t, err)
	equal(t, "a deleted webhook is still there for its deliveries, marked", sealed.Deleted, true)
}

func testListWebhooks(t *testing.T, e *env) {
	tenant := store.NewID()
	sc := tenantScope(tenant)
	base := e.db.Now().Add(-time.Hour)
	var made []*webhooks.Webhook
	for i, name := range []string{"Alpha", "beta", "Gamma 100%", "delta_x", "Epsilon"} {
		w := hook(tenant, "", name, base.Add(time.Duration(i)*time.Minute))
		w.URL = fmt.Sprintf("https://host%d.example.com/%s", i, name)
		made = append(made, e.insert(w))
	}
	// Two created at one time: the id breaks the tie (descending).
	twin := hook(tenant, "", "twin", made[4].CreatedAt)
	e.insert(twin)
	inactive := made[1]
	inactive.IsActive = false
	e.tx(func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, inactive) })

	newestFirst := []string{made[4].ID, twin.ID}
	if twin.ID > made[4].ID {
		newestFirst = []string{twin.ID, made[4].ID}
	}
	newestFirst = append(newestFirst, made[3].ID, made[2].ID, made[1].ID, made[0].ID)
	list := func(f webhooks.Filter) ([]string, int) {
		t.Helper()
		items, total, err := e.st.ListWebhooks(e.ctx, e.db, sc, f)
		noErr(t, err)
		return hookIDs(items), total
	}
	got, total := list(webhooks.Filter{Limit: 50})
	equalSlices(t, "newest first", got, newestFirst)
	equal(t, "total", total, 6)
	got, total = list(webhooks.Filter{Limit: 2, Offset: 1})
	equalSlices(t, "a page", got, newestFirst[1:3])
	equal(t, "the total of a page", total, 6)
	got, total = list(webhooks.Filter{Limit: 50, Offset: 6})
	equal(t, "past the end", len(got), 0)
	equal(t, "the total past the end", total, 6)
	got, total = list(webhooks.Filter{Search: "ALPHA", Limit: 50})
	equalSlices(t, "search by name, any case", got, []string{made[0].ID})
	equal(t, "its total", total, 1)
	got, _ = list(webhooks.Filter{Search: "host3.", Limit: 50})
	equalSlices(t, "search by URL", got, []string{made[3].ID})
	got, _ = list(webhooks.Filter{Search: "0%", Limit: 50})
	equalSlices(t, "% is text", got, []string{made[2].ID})
	got, _ = list(webhooks.Filter{Search: "a_x", Limit: 50})
	equalSlices(t, "_ is text", got, []string{made[3].ID})
	got, total = list(webhooks.Filter{Search: "a\x00", Limit: 50})
	equal(t, "unstorable text matches nothing", len(got)+total, 0)
	no, yes := false, true
	got, total = list(webhooks.Filter{IsActive: &no, Limit: 50})
	equalSlices(t, "inactive ones", got, []string{inactive.ID})
	equal(t, "their total", total, 1)
	got, total = list(webhooks.Filter{IsActive: &yes, Search: "a", Limit: 2})
	equal(t, "filters together: page", len(got), 2)
	equal(t, "filters together: total", total, 5) // the active ones: every URL has an a
}

func testSecrets(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "rotating")
	keep := e.newHook(tenant, "", "keeping")
	now := e.db.Now()
	e.tx(func(tx *store.Tx) error {
		return e.st.RotateSecret(e.ctx, tx, tenant, w.ID, "second", &webhooks.Rotation{PreviousSecretSetAt: now, PreviousSecretExpiresAt: now.Add(-time.Second)})
	})
	e.tx(func(tx *store.Tx) error {
		return e.st.RotateSecret(e.ctx, tx, tenant, keep.ID, "new", &webhooks.Rotation{PreviousSecretSetAt: now, PreviousSecretExpiresAt: now.Add(time.Hour)})
	})
	s, err := e.st.SealedWebhook(e.ctx, e.db, tenant, w.ID)
	noErr(t, err)
	equal(t, "current secret", s.Secret, "second")
	equal(t, "previous secret", s.PreviousSecret, "sealed:"+w.ID)
	equal(t, "set at", s.PreviousSecretSetAt != nil && s.PreviousSecretSetAt.Equal(now), true)
	equal(t, "updated at", s.UpdatedAt.Equal(now), true)
	n, err := e.st.DropExpiredSecrets(e.ctx, e.db, e.db.Now())
	noErr(t, err)
	equal(t, "dropped at least the expired one", n >= 1, true)
	s, err = e.st.SealedWebhook(e.ctx, e.db, tenant, w.ID)
	noErr(t, err)
	equal(t, "previous secret dropped", s.PreviousSecret, "")
	equal(t, "its times dropped", s.PreviousSecretSetAt == nil && s.PreviousSecretExpiresAt == nil, true)
	equal(t, "the current one kept", s.Secret, "second")
	k, err := e.st.SealedWebhook(e.ctx, e.db, tenant, keep.ID)
	noErr(t, err)
	equal(t, "an unexpired previous secret kept", k.PreviousSecret, "sealed:"+keep.ID)
}

func testActiveAndSigning(t *testing.T, e *env) {
	tenant := store.NewID()
	base := e.db.Now().Add(-time.Hour)
	older := hook(tenant, "", "older", base)
	newer := hook(tenant, "", "newer", base.Add(time.Minute))
	newer.URL = older.URL
	off := hook(tenant, "", "off", base.Add(-time.Minute))
	off.URL, off.IsActive = older.URL, false
	for _, w := range []*webhooks.Webhook{newer, off, older} {
		e.insert(w)
	}
	active, err := e.st.ActiveWebhooks(e.ctx, e.db, tenant)
	noErr(t, err)
	got := hookIDs(active)
	slices.Sort(got)
	want := []string{older.ID, newer.ID}
	slices.Sort(want)
	equalSlices(t, "active webhooks", got, want)
	s, err := e.st.SigningWebhook(e.ctx, e.db, tenant, older.URL)
	noErr(t, err)
	equal(t, "the oldest active one signs", s.ID, older.ID)
	equal(t, "with its secret", s.Secret, "sealed:"+older.ID)
	_, err = e.st.SigningWebhook(e.ctx, e.db, tenant, older.URL+"/x")
	wantNotFound(t, "no webhook for the URL", err)
	_, err = e.st.SigningWebhook(e.ctx, e.db, store.NewID(), older.URL)
	wantNotFound(t, "another tenant's URL", err)
}

func testResults(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "counted")
	sc := tenantScope(tenant)
	now := e.db.Now()
	var found bool
	e.tx(func(tx *store.Tx) error {
		var err error
		found, err = e.st.RecordResults(e.ctx, tx, tenant, w.ID, 2, nil, &now)
		return err
	})
	equal(t, "found", found, true)
	got, err := e.st.GetWebhook(e.ctx, e.db, sc, w.ID)
	noErr(t, err)
	equal(t, "failures", got.ConsecutiveFailures, 2)
	equal(t, "last failure", got.LastFailureAt != nil && got.LastFailureAt.Equal(now), true)
	equal(t, "no success yet", got.LastSuccessAt == nil, true)
	later := now.Add(time.Second)
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.RecordResults(e.ctx, tx, tenant, w.ID, 0, &later, nil)
		return err
	})
	got, err = e.st.GetWebhook(e.ctx, e.db, sc, w.ID)
	noErr(t, err)
	equal(t, "failures reset", got.ConsecutiveFailures, 0)
	equal(t, "last success", got.LastSuccessAt != nil && got.LastSuccessAt.Equal(later), true)
	equal(t, "last failure kept", got.LastFailureAt != nil && got.LastFailureAt.Equal(now), true)
	e.tx(func(tx *store.Tx) error {
		var err error
		found, err = e.st.RecordResults(e.ctx, tx, store.NewID(), w.ID, 1, nil, nil)
		return err
	})
	equal(t, "another tenant's webhook is not found", found, false)
	for i, want := range []bool{true, false} {
		var changed bool
		e.tx(func(tx *store.Tx) error {
			var err error
			changed, err = e.st.Deactivate(e.ctx, tx, tenant, w.ID, tx.Now())
			return err
		})
		equal(t, fmt.Sprintf("deactivate #%d", i+1), changed, want)
	}
	got, err = e.st.GetWebhook(e.ctx, e.db, sc, w.ID)
	noErr(t, err)
	equal(t, "inactive", got.IsActive, false)
}

// delivery returns a new pending delivery of event to w.
func delivery(w *webhooks.Webhook, eventID string, at time.Time) *webhooks.Delivery {
	return &webhooks.Delivery{ID: store.NewID(), WebhookID: w.ID, EventID: eventID, EventType: "orders.order.created",
		MessageID: "msg_" + store.NewID(), Status: webhooks.StatusPending, MaxAttempts: 3, TargetURL: w.URL,
		Payload: json.RawMessage(`{"type": "orders.order.created",  "data":{"b":1,"a":2}}`), EnqueuedAt: at,
		TenantID: w.TenantID, OrganizationID: w.OrganizationID, CreatedAt: at, UpdatedAt: at}
}

func (e *env) newDelivery(w *webhooks.Webhook, eventID string) *webhooks.Delivery {
	e.t.Helper()
	d := delivery(w, eventID, e.db.Now())
	e.tx(func(tx *store.Tx) error {
		n, err := e.st.InsertDeliveries(e.ctx, tx, []*webhooks.Delivery{d})
		if err == nil && n != 1 {
			err = fmt.Errorf("inserted %d deliveries, want 1", n)
		}
		return err
	})
	return d
}

// put stores d's state as given.
func (e *env) put(d *webhooks.Delivery, status string, attempt int, nextRetryAt *time.Time) *webhooks.Delivery {
	e.t.Helper()
	d.Status, d.Attempt, d.NextRetryAt = status, attempt, nextRetryAt
	e.tx(func(tx *store.Tx) error { return e.st.UpdateDelivery(e.ctx, tx, d) })
	return d
}

func (e *env) read(d *webhooks.Delivery) *webhooks.Delivery {
	e.t.Helper()
	got, err := e.st.GetDelivery(e.ctx, e.db, tenantScope(d.TenantID), d.ID)
	noErr(e.t, err)
	return got
}

func testDeliveryLog(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "logged")
	other := e.newHook(tenant, "", "other")
	base := e.db.Now().Add(-time.Hour)
	var ds []*webhooks.Delivery
	for i := range 4 {
		hookOf := w
		if i == 3 {
			hookOf = other
		}
		ds = append(ds, delivery(hookOf, store.NewID(), base.Add(time.Duration(i)*time.Minute)))
	}
	ds[2].EventType = "billing.invoice.paid"
	e.tx(func(tx *store.Tx) error {
		n, err := e.st.InsertDeliveries(e.ctx, tx, ds)
		if err == nil && n != 4 {
			err = fmt.Errorf("inserted %d, want 4", n)
		}
		return err
	})
	got := e.read(ds[0])
	equal(t, "payload, byte for byte", string(got.Payload), string(ds[0].Payload))
	equal(t, "webhook name", got.WebhookName, "logged")
	equal(t, "status", got.Status, webhooks.StatusPending)
	equal(t, "attempt", got.Attempt, 0)
	equal(t, "message id", got.MessageID, ds[0].MessageID)

	// An outcome recorded.
	status, ms, next := 503, int64(12), e.db.Now().Add(time.Minute)
	d := ds[1]
	d.Status, d.Attempt, d.ResponseStatus, d.ResponseBody, d.ResponseHeaders = webhooks.StatusPending, 1, &status, "busy", map[string]string{"Retry-After": "5"}
	d.ErrorMessage, d.DurationMs, d.NextRetryAt, d.LastAttemptAt = "HTTP 503", &ms, &next, &base
	e.tx(func(tx *store.Tx) error { return e.st.UpdateDelivery(e.ctx, tx, d) })
	got = e.read(d)
	equal(t, "response status", got.ResponseStatus != nil && *got.ResponseStatus == 503, true)
	equal(t, "response body", got.ResponseBody, "busy")
	equal(t, "response headers", got.ResponseHeaders["Retry-After"], "5")
	equal(t, "error", got.ErrorMessage, "HTTP 503")
	equal(t, "duration", got.DurationMs != nil && *got.DurationMs == 12, true)
	equal(t, "next retry", got.NextRetryAt != nil && got.NextRetryAt.Equal(next), true)
	equal(t, "attempt", got.Attempt, 1)
	wantNotFound(t, "update an unknown delivery", e.db.Tx(e.ctx, func(tx *store.Tx) error {
		return e.st.UpdateDelivery(e.ctx, tx, delivery(w, store.NewID(), base))
	}))

	sc := tenantScope(tenant)
	list := func(f webhooks.DeliveryFilter) ([]string, int) {
		t.Helper()
		items, total, err := e.st.ListDeliveries(e.ctx, e.db, sc, f)
		noErr(t, err)
		for _, d := range items {
			if d.Payload != nil || d.ResponseBody != "" || d.ResponseHeaders != nil {
				t.Errorf("the list shows delivery %s's payload or response", d.ID)
			}
		}
		return deliveryIDs(items), total
	}
	all := []string{ds[3].ID, ds[2].ID, ds[1].ID, ds[0].ID}
	ids, total := list(webhooks.DeliveryFilter{Limit: 50})
	equalSlices(t, "newest first", ids, all)
	equal(t, "total", total, 4)
	ids, total = list(webhooks.DeliveryFilter{Limit: 2, Offset: 1})
	equalSlices(t, "a page", ids, all[1:3])
	equal(t, "the total of a page", total, 4)
	ids, total = list(webhooks.DeliveryFilter{WebhookID: w.ID, Limit: 50})
	equalSlices(t, "by webhook", ids, all[1:])
	equal(t, "its total", total, 3)
	ids, _ = list(webhooks.DeliveryFilter{EventType: "billing.invoice.paid", Limit: 50})
	equalSlices(t, "by event type", ids, []string{ds[2].ID})
	ids, _ = list(webhooks.DeliveryFilter{Status: webhooks.StatusPending, WebhookID: w.ID, EventType: "orders.order.created", Limit: 50})
	equalSlices(t, "filters together", ids, []string{ds[1].ID, ds[0].ID})
	ids, total = list(webhooks.DeliveryFilter{WebhookID: "nope", Limit: 50})
	equal(t, "a webhook id that is no id", len(ids)+total, 0)
	ids, total = list(webhooks.DeliveryFilter{Status: "x\x00", Limit: 50})
	equal(t, "unstorable text", len(ids)+total, 0)
}

func testClaim(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "claimed")
	other := e.newHook(tenant, "", "other")
	ev := make([]string, 7)
	for i := range ev {
		ev[i] = store.NewID() // ev[0] < ev[1] < …
	}
	earlier, later := e.db.Now().Add(-time.Minute), e.db.Now().Add(time.Hour)
	// Inserted newest event first: insertion order is not event order.
	// The due ones are of both kinds (never attempted, a retry due),
	// interleaved in event order.
	d5 := e.newDelivery(w, ev[6])
	d4 := e.put(e.newDelivery(w, ev[5]), webhooks.StatusPending, 1, &later)   // a retry not due yet
	d3 := e.put(e.newDelivery(w, ev[4]), webhooks.StatusSending, 1, nil)      // cut short by a dead drain
	dr := e.put(e.newDelivery(w, ev[3]), webhooks.StatusPending, 1, &earlier) // a retry due
	d2 := e.newDelivery(w, ev[2])
	d1 := e.put(e.newDelivery(w, ev[1]), webhooks.StatusDelivered, 1, nil)
	d0 := e.put(e.newDelivery(w, ev[0]), webhooks.StatusFailed, 2, nil)
	e.newDelivery(other, ev[0])
	claim := func(n int) []*webhooks.Delivery {
		t.Helper()
		var out []*webhooks.Delivery
		e.tx(func(tx *store.Tx) error {
			var err error
			out, err = e.st.ClaimDeliveries(e.ctx, tx, tenant, w.ID, tx.Now(), n)
			return err
		})
		return out
	}
	batch := claim(50)
	equalSlices(t, "the due deliveries, in event order", deliveryIDs(batch), []string{d2.ID, dr.ID, d3.ID, d5.ID})
	for _, c := range batch {
		equal(t, "claimed as sending", c.Status, webhooks.StatusSending)
		want := 1 // pending ones start their first attempt, the cut-short one keeps 1
		if c.ID == dr.ID {
			want = 2 // the retry's second
		}
		equal(t, "claimed attempt", c.Attempt, want)
		got := e.read(c)
		equal(t, "stored as sending", got.Status, webhooks.StatusSending)
		equal(t, "stored attempt", got.Attempt, want)
		equal(t, "last attempt at", got.LastAttemptAt != nil, true)
	}
	equal(t, "a retry not due stays pending", e.read(d4).Status, webhooks.StatusPending)
	equal(t, "delivered stays", e.read(d1).Status, webhooks.StatusDelivered)
	equal(t, "failed stays", e.read(d0).Status, webhooks.StatusFailed)

	// Unclaimed: back to pending, the claim's attempt given back.
	e.tx(func(tx *store.Tx) error {
		for _, c := range batch[1:] {
			if err := e.st.UnclaimDelivery(e.ctx, tx, c, tx.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range batch[1:] {
		got := e.read(c)
		equal(t, "unclaimed status", got.Status, webhooks.StatusPending)
		equal(t, "unclaimed attempt", got.Attempt, c.Attempt-1)
	}
	equalSlices(t, "a limit takes the first", deliveryIDs(claim(1)), []string{d2.ID})
	equalSlices(t, "a limit takes the first of both kinds", deliveryIDs(claim(2)), []string{d2.ID, dr.ID})
	equalSlices(t, "claimed again, still in order", deliveryIDs(claim(50)), []string{d2.ID, dr.ID, d3.ID, d5.ID})

	// MarkSending (a test send's attempt).
	d := e.newDelivery(w, "")
	at := e.db.Now()
	d.Status, d.Attempt, d.LastAttemptAt = webhooks.StatusSending, 1, &at
	e.tx(func(tx *store.Tx) error { return e.st.MarkSending(e.ctx, tx, d) })
	got := e.read(d)
	equal(t, "marked sending", got.Status, webhooks.StatusSending)
	equal(t, "its attempt", got.Attempt, 1)
	equal(t, "its time", got.LastAttemptAt != nil && got.LastAttemptAt.Equal(at), true)
}

func testExpire(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "expiring")
	other := e.newHook(tenant, "", "other")
	later := e.db.Now().Add(time.Hour)
	pending := e.newDelivery(w, store.NewID())
	retry := e.put(e.newDelivery(w, store.NewID()), webhooks.StatusPending, 1, &later)
	sending := e.put(e.newDelivery(w, store.NewID()), webhooks.StatusSending, 1, nil)
	done := e.put(e.newDelivery(w, store.NewID()), webhooks.StatusDelivered, 1, nil)
	elsewhere := e.newDelivery(other, store.NewID())
	var n int64
	e.tx(func(tx *store.Tx) error {
		var err error
		n, err = e.st.ExpireDeliveries(e.ctx, tx, tenant, w.ID, "Webhook is inactive", tx.Now())
		return err
	})
	equal(t, "expired", n, int64(3))
	for _, d := range []*webhooks.Delivery{pending, retry, sending} {
		got := e.read(d)
		equal(t, "status", got.Status, webhooks.StatusExpired)
		equal(t, "reason", got.ErrorMessage, "Webhook is inactive")
		equal(t, "no next retry", got.NextRetryAt == nil, true)
	}
	equal(t, "a delivered one stays", e.read(done).Status, webhooks.StatusDelivered)
	equal(t, "another webhook's stays", e.read(elsewhere).Status, webhooks.StatusPending)
	e.tx(func(tx *store.Tx) error {
		var err error
		n, err = e.st.ExpireDeliveries(e.ctx, tx, store.NewID(), other.ID, "x", tx.Now())
		return err
	})
	equal(t, "another tenant expires nothing", n, int64(0))
}

// deliveryAt inserts a delivery to w created at at and, unless status is
// pending (as inserted), stores status with one attempt.
func (e *env) deliveryAt(w *webhooks.Webhook, at time.Time, status string) *webhooks.Delivery {
	e.t.Helper()
	d := delivery(w, store.NewID(), at)
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.InsertDeliveries(e.ctx, tx, []*webhooks.Delivery{d})
		return err
	})
	if status == webhooks.StatusPending {
		return d
	}
	return e.put(d, status, 1, nil)
}

func testDeliveryHealth(t *testing.T, e *env) {
	tenant, orgA, orgB := store.NewID(), store.NewID(), store.NewID()
	since := e.db.Now().Add(-time.Hour)
	before := since.Add(-time.Microsecond)
	in := func(minutes int) time.Time { return since.Add(time.Duration(minutes) * time.Minute) }
	// Names in byte order B < a < b < c; two named "a" are ordered by id.
	upper := e.newHook(tenant, "", "B")
	a1 := e.newHook(tenant, "", "a")
	a2 := e.newHook(tenant, orgA, "a")
	b := e.newHook(tenant, orgB, "b")
	quiet := e.newHook(tenant, "", "c")
	gone := e.newHook(tenant, "", "d")
	stranger := e.newHook(store.NewID(), "", "a")
	if a2.ID < a1.ID {
		a1, a2 = a2, a1
	}

	// a1: each status once or twice in the window, the first exactly at
	// since; and older deliveries of every kind, one a microsecond before.
	e.deliveryAt(a1, since, webhooks.StatusDelivered)
	e.deliveryAt(a1, in(1), webhooks.StatusDelivered)
	e.deliveryAt(a1, in(2), webhooks.StatusFailed)
	e.deliveryAt(a1, in(3), webhooks.StatusExpired)
	e.deliveryAt(a1, in(4), webhooks.StatusPending)
	later := in(90)
	e.put(e.deliveryAt(a1, in(5), webhooks.StatusPending), webhooks.StatusPending, 1, &later) // a retry
	e.deliveryAt(a1, in(6), webhooks.StatusSending)
	e.deliveryAt(a1, before, webhooks.StatusDelivered)
	e.deliveryAt(a1, before, webhooks.StatusFailed)
	e.deliveryAt(a1, in(-10), webhooks.StatusPending)
	e.deliveryAt(a2, in(1), webhooks.StatusFailed)
	e.deliveryAt(upper, in(1), webhooks.StatusPending)
	e.deliveryAt(upper, in(-1), webhooks.StatusDelivered)
	e.deliveryAt(b, in(1), webhooks.StatusDelivered)
	e.deliveryAt(b, in(2), webhooks.StatusExpired)
	e.deliveryAt(gone, in(1), webhooks.StatusDelivered)
	e.deliveryAt(stranger, in(1), webhooks.StatusDelivered)
	e.tx(func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, gone.ID, tx.Now()) })
	b.IsActive = false // an inactive webhook is still listed
	e.tx(func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, b) })

	row := func(w *webhooks.Webhook, delivered, failed, pending int) webhooks.DeliveryHealth {
		return webhooks.DeliveryHealth{WebhookID: w.ID, Name: w.Name, URL: w.URL, Delivered: delivered, Failed: failed, Pending: pending}
	}
	rUpper, rA1, rA2, rB, rQuiet := row(upper, 0, 0, 1), row(a1, 2, 2, 3), row(a2, 0, 1, 0), row(b, 1, 1, 0), row(quiet, 0, 0, 0)
	health := func(sc store.Scope, since time.Time) []webhooks.DeliveryHealth {
		t.Helper()
		hs, err := e.st.DeliveryHealth(e.ctx, e.db, sc, since)
		noErr(t, err)
		return hs
	}
	for _, c := range []struct {
		name string
		sc   store.Scope
		want []webhooks.DeliveryHealth
	}{
		{"every organization", store.Scope{TenantID: tenant}, []webhooks.DeliveryHealth{rUpper, rA1, rA2, rB, rQuiet}},
		{"organization A", store.Scope{TenantID: tenant, OrganizationIDs: []string{orgA}}, []webhooks.DeliveryHealth{rUpper, rA1, rA2, rQuiet}},
		{"no organization", store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, []webhooks.DeliveryHealth{rUpper, rA1, rQuiet}},
		{"another tenant", store.Scope{TenantID: stranger.TenantID}, []webhooks.DeliveryHealth{row(stranger, 1, 0, 0)}},
		{"a tenant without webhooks", store.Scope{TenantID: store.NewID()}, nil},
	} {
		equalSlices(t, c.name, health(c.sc, since), c.want)
	}
	// since in another time zone is the same instant.
	equalSlices(t, "since in another zone", health(store.Scope{TenantID: tenant, OrganizationIDs: []string{}},
		since.In(time.FixedZone("UTC+5", 5*3600))), []webhooks.DeliveryHealth{rUpper, rA1, rQuiet})
	// A window after every delivery: every webhook, every count zero.
	equalSlices(t, "a window after the deliveries", health(store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, in(7)),
		[]webhooks.DeliveryHealth{row(upper, 0, 0, 0), row(a1, 0, 0, 0), row(quiet, 0, 0, 0)})
	// The same window from before the older ones counts them too.
	equalSlices(t, "a wider window", health(store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, in(-10)),
		[]webhooks.DeliveryHealth{row(upper, 1, 0, 1), row(a1, 3, 3, 4), row(quiet, 0, 0, 0)})

	// Windows starting at an hour, within one and long before: a store
	// may keep counts by hour, and must count exactly whatever the
	// window's start. More deliveries, hours before the others, some
	// changing state after they were written.
	made := []*webhooks.Delivery{}
	for i, m := range []int{-11, -59, -61, -119, -121, -185, -600} {
		d := e.deliveryAt(a1, in(m), webhooks.StatusPending)
		switch i % 3 {
		case 1:
			e.put(d, webhooks.StatusDelivered, 1, nil)
		case 2:
			e.put(d, webhooks.StatusFailed, 1, nil)
		}
		made = append(made, d)
	}
	e.put(made[0], webhooks.StatusExpired, 2, nil)
	old := e.deliveryAt(a1, since.Add(-40*time.Hour), webhooks.StatusDelivered)
	hour := since.Truncate(time.Hour)
	for _, from := range []time.Time{hour, hour.Add(time.Hour), hour.Add(-time.Hour), hour.Add(-3 * time.Hour),
		in(-60), in(-120), in(-600), since.Add(-41 * time.Hour), old.CreatedAt, old.CreatedAt.Add(time.Microsecond)} {
		want := row(a1, 0, 0, 0)
		counts := func(d *webhooks.Delivery, status string) {
			if d.CreatedAt.Before(from) {
				return
			}
			switch status {
			case webhooks.StatusDelivered:
				want.Delivered++
			case webhooks.StatusFailed, webhooks.StatusExpired:
				want.Failed++
			default:
				want.Pending++
			}
		}
		for _, d := range append(made, old) {
			counts(d, d.Status)
		}
		// Those of a1 made before (statuses as written above).
		for _, x := range []struct {
			at     time.Time
			status string
		}{{since, webhooks.StatusDelivered}, {in(1), webhooks.StatusDelivered}, {in(2), webhooks.StatusFailed},
			{in(3), webhooks.StatusExpired}, {in(4), webhooks.StatusPending}, {in(5), webhooks.StatusPending},
			{in(6), webhooks.StatusSending}, {before, webhooks.StatusDelivered}, {before, webhooks.StatusFailed},
			{in(-10), webhooks.StatusPending}} {
			counts(&webhooks.Delivery{CreatedAt: x.at}, x.status)
		}
		hs := health(store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, from)
		var got webhooks.DeliveryHealth
		for _, h := range hs {
			if h.WebhookID == a1.ID {
				got = h
			}
		}
		if got != want {
			t.Errorf("from %s: a1 is %+v, want %+v", from.Sub(since), got, want)
		}
	}
}

func testInbound(t *testing.T, e *env) {
	endpoint, msg := "ep-"+store.NewID(), "msg-"+store.NewID()
	r := &webhooks.InboundReceipt{EndpointID: endpoint, Message: webhooks.Inbound{ID: msg, Type: "a.b",
		Payload: json.RawMessage(`{"x": 1}`)}, TenantID: store.NewID(), ReceivedAt: e.db.Now()}
	insert := func(r *webhooks.InboundReceipt) bool {
		t.Helper()
		var ok bool
		e.tx(func(tx *store.Tx) error {
			var err error
			ok, err = e.st.InsertInbound(e.ctx, tx, r)
			return err
		})
		return ok
	}
	equal(t, "first", insert(r), true)
	equal(t, "a duplicate", insert(r), false)
	again := *r
	again.EndpointID = endpoint + "-2"
	equal(t, "the same id at another endpoint", insert(&again), true)
	got, err := e.st.GetInbound(e.ctx, e.db, endpoint, msg)
	noErr(t, err)
	equal(t, "type", got.Message.Type, "a.b")
	equal(t, "payload", string(got.Message.Payload), `{"x": 1}`)
	equal(t, "tenant", got.TenantID, r.TenantID)
	equal(t, "unprocessed", got.ProcessedAt == nil, true)
	e.tx(func(tx *store.Tx) error { return e.st.MarkInboundProcessed(e.ctx, tx, endpoint, msg, tx.Now()) })
	got, err = e.st.GetInbound(e.ctx, e.db, endpoint, msg)
	noErr(t, err)
	equal(t, "processed", got.ProcessedAt != nil, true)
	wantNotFound(t, "processed twice", e.db.Tx(e.ctx, func(tx *store.Tx) error {
		return e.st.MarkInboundProcessed(e.ctx, tx, endpoint, msg, tx.Now())
	}))
	_, err = e.st.GetInbound(e.ctx, e.db, endpoint, "nope")
	wantNotFound(t, "an unknown message", err)
}

func testLeases(t *testing.T, e *env) {
	w := e.newHook(store.NewID(), "", "leased")
	k := drain.Key{Group: w.TenantID, ID: w.ID}
	now := e.db.Now()
	ttl := now.Add(time.Minute)
	do := func(fn func(tx *store.Tx) (bool, error)) bool {
		t.Helper()
		var ok bool
		e.tx(func(tx *store.Tx) error {
			var err error
			ok, err = fn(tx)
			return err
		})
		return ok
	}
	equal(t, "acquire without a row", do(func(tx *store.Tx) (bool, error) { return e.st.Acquire(e.ctx, tx, k, "A", now, ttl) }), false)
	equal(t, "wake a new queue: free", do(func(tx *store.Tx) (bool, error) { return e.st.Wake(e.ctx, tx, k, now) }), true)
	equal(t, "wake a flagged queue", do(func(tx *store.Tx) (bool, error) { return e.st.Wake(e.ctx, tx, k, now) }), false)
	equal(t, "acquire", do(func(tx *store.Tx) (bool, error) { return e.st.Acquire(e.ctx, tx, k, "A", now, ttl) }), true)
	equal(t, "A holds", do(func(tx *store.Tx) (bool, error) { return e.st.Holds(e.ctx, tx, k, "A", now) }), true)
	equal(t, "B does not", do(func(tx *store.Tx) (bool, error) { return e.st.Holds(e.ctx, tx, k, "B", now) }), false)
	equal(t, "a held lease is not acquired", do(func(tx *store.Tx) (bool, error) { return e.st.Acquire(e.ctx, tx, k, "B", now, ttl) }), false)
	equal(t, "nor taken as free", do(func(tx *store.Tx) (bool, error) { return e.st.AcquireFree(e.ctx, tx, k, "B", ttl) }), false)
	equal(t, "wake a held queue: not free", do(func(tx *store.Tx) (bool, error) { return e.st.Wake(e.ctx, tx, k, now) }), false)
	equal(t, "release with the flag set", do(func(tx *store.Tx) (bool, error) { return e.st.Release(e.ctx, tx, k, "A") }), false)
	equal(t, "B cannot unflag", do(func(tx *store.Tx) (bool, error) { return e.st.Unflag(e.ctx, tx, k, "B") }), false)
	equal(t, "A unflags", do(func(tx *store.Tx) (bool, error) { return e.st.Unflag(e.ctx, tx, k, "A") }), true)
	equal(t, "B cannot renew", do(func(tx *store.Tx) (bool, error) { return e.st.Renew(e.ctx, tx, k, "B", ttl) }), false)
	equal(t, "A renews", do(func(tx *store.Tx) (bool, error) { return e.st.Renew(e.ctx, tx, k, "A", now.Add(2*time.Minute)) }), true)
	equal(t, "renewed past the first lease", do(func(tx *store.Tx) (bool, error) {
		return e.st.Holds(e.ctx, tx, k, "A", now.Add(90*time.Second))
	}), true)
	equal(t, "expired at its end", do(func(tx *store.Tx) (bool, error) {
		return e.st.Holds(e.ctx, tx, k, "A", now.Add(3*time.Minute))
	}), false)
	equal(t, "an expired lease is taken over", do(func(tx *store.Tx) (bool, error) {
		return e.st.Acquire(e.ctx, tx, k, "C", now.Add(3*time.Minute), now.Add(4*time.Minute))
	}), true)
	equal(t, "A's release is refused", do(func(tx *store.Tx) (bool, error) { return e.st.Release(e.ctx, tx, k, "A") }), false)
	equal(t, "C releases", do(func(tx *store.Tx) (bool, error) { return e.st.Release(e.ctx, tx, k, "C") }), true)
	equal(t, "free once released", do(func(tx *store.Tx) (bool, error) { return e.st.AcquireFree(e.ctx, tx, k, "D", ttl) }), true)
	equal(t, "B cannot yield D's lease", do(func(tx *store.Tx) (bool, error) { return e.st.Yield(e.ctx, tx, k, "B", now) }), false)
	equal(t, "D yields", do(func(tx *store.Tx) (bool, error) { return e.st.Yield(e.ctx, tx, k, "D", now.Add(time.Hour)) }), true)
	equal(t, "yielded: flagged, no new drain", do(func(tx *store.Tx) (bool, error) { return e.st.Wake(e.ctx, tx, k, now) }), false)
	at := now.Add(time.Hour)
	equal(t, "schedule a wake", do(func(tx *store.Tx) (bool, error) { return e.st.ScheduleWake(e.ctx, tx, k, at, now) }), true)
	equal(t, "the same time again", do(func(tx *store.Tx) (bool, error) { return e.st.ScheduleWake(e.ctx, tx, k, at, now) }), false)
	equal(t, "a later time", do(func(tx *store.Tx) (bool, error) { return e.st.ScheduleWake(e.ctx, tx, k, at.Add(time.Minute), now) }), false)
	equal(t, "an earlier time", do(func(tx *store.Tx) (bool, error) { return e.st.ScheduleWake(e.ctx, tx, k, at.Add(-time.Minute), now) }), true)
	equal(t, "once the scheduled time has passed", do(func(tx *store.Tx) (bool, error) {
		return e.st.ScheduleWake(e.ctx, tx, k, at.Add(time.Hour), at)
	}), true)
}

func testQueueItems(t *testing.T, e *env) {
	tenant := store.NewID()
	w := e.newHook(tenant, "", "items")
	k := drain.Key{Group: tenant, ID: w.ID}
	now := e.db.Now()
	due := func(at time.Time) bool {
		t.Helper()
		ok, err := e.st.Due(e.ctx, e.db, k, at)
		noErr(t, err)
		return ok
	}
	equal(t, "nothing due", due(now), false)
	retryAt := now.Add(time.Hour)
	e.put(e.newDelivery(w, store.NewID()), webhooks.StatusPending, 1, &retryAt)
	e.put(e.newDelivery(w, store.NewID()), webhooks.StatusFailed, 1, nil)
	equal(t, "a retry not due", due(now), false)
	equal(t, "a retry due", due(retryAt), true)
	next, ok, err := e.st.NextDue(e.ctx, e.db, k, now)
	noErr(t, err)
	equal(t, "next due", ok && next.Equal(retryAt), true)
	_, ok, err = e.st.NextDue(e.ctx, e.db, k, retryAt)
	noErr(t, err)
	equal(t, "nothing due after the last retry", ok, false)
	stuck := func() bool {
		t.Helper()
		now := e.db.Now()
		keys, err := e.st.Stuck(e.ctx, e.db, now, now.Add(-time.Minute))
		noErr(t, err)
		if !slices.IsSortedFunc(keys, func(a, b drain.Key) int { return cmpString(a.ID, b.ID) }) {
			t.Errorf("stuck keys not in key order")
		}
		return slices.Contains(keys, k)
	}
	equal(t, "not stuck: nothing due", stuck(), false)
	e.newDelivery(w, store.NewID())
	equal(t, "due now", due(e.db.Now()), true)
	equal(t, "stuck: due work, no queue row", stuck(), true)
	var free bool
	e.tx(func(tx *store.Tx) error {
		var err error
		free, err = e.st.Wake(e.ctx, tx, k, tx.Now())
		return err
	})
	equal(t, "woken", free, true)
	equal(t, "not stuck: a drain is on its way", stuck(), false)
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.Acquire(e.ctx, tx, k, "A", tx.Now(), tx.Now().Add(time.Hour))
		return err
	})
	equal(t, "not stuck: a live lease", stuck(), false)
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.Acquire(e.ctx, tx, k, "A", tx.Now().Add(2*time.Hour), tx.Now().Add(-time.Second))
		return err
	})
	equal(t, "stuck: its lease expired", stuck(), true)
	e.tx(func(tx *store.Tx) error { return e.st.Requeue(e.ctx, tx, k, tx.Now()) })
	equal(t, "stuck while the dead owner stays", stuck(), true)
}

// testQueueOwners checks drain.Inspector, which a Store may implement
// (Service.QueueOwners, GET /webhooks/queues): the queues held, flagged
// or with due deliveries, with how many are due and since when the
// oldest is (its enqueue, or its retry's time).
func testQueueOwners(t *testing.T, e *env) {
	in, ok := e.st.(drain.Inspector)
	if !ok {
		t.Skip("the store does not implement drain.Inspector: Service.QueueOwners fails with errors.ErrUnsupported")
	}
	tenant := store.NewID()
	now := e.db.Now()
	hourAgo, minutesAgo, later := now.Add(-time.Hour), now.Add(-10*time.Minute), now.Add(time.Hour)
	behind := e.newHook(tenant, "", "behind")
	insert := func(d *webhooks.Delivery) *webhooks.Delivery {
		e.tx(func(tx *store.Tx) error {
			_, err := e.st.InsertDeliveries(e.ctx, tx, []*webhooks.Delivery{d})
			return err
		})
		return d
	}
	insert(delivery(behind, store.NewID(), hourAgo))                                                              // due since its enqueue
	e.put(insert(delivery(behind, store.NewID(), now.Add(-2*time.Hour))), webhooks.StatusPending, 1, &minutesAgo) // a retry due since minutesAgo
	e.put(insert(delivery(behind, store.NewID(), now.Add(-3*time.Hour))), webhooks.StatusPending, 1, &later)      // a retry not due
	e.put(insert(delivery(behind, store.NewID(), now.Add(-4*time.Hour))), webhooks.StatusDelivered, 1, nil)       // done
	held := e.newHook(tenant, "", "held")
	k := drain.Key{Group: tenant, ID: held.ID}
	e.tx(func(tx *store.Tx) error {
		if err := e.st.Flag(e.ctx, tx, k, tx.Now()); err != nil {
			return err
		}
		_, err := e.st.AcquireFree(e.ctx, tx, k, "somehost:42:0badcafe/"+store.NewID(), tx.Now().Add(time.Hour))
		return err
	})
	idle := e.newHook(tenant, "", "idle") // one due of three, no queue row
	e.newDelivery(idle, store.NewID())
	e.put(e.newDelivery(idle, store.NewID()), webhooks.StatusFailed, 3, nil)
	e.put(e.newDelivery(idle, store.NewID()), webhooks.StatusDelivered, 1, nil)

	states, err := in.Owners(e.ctx, e.db, e.db.Now())
	noErr(t, err)
	if !slices.IsSortedFunc(states, func(a, b drain.QueueState) int { return cmpString(a.Key.ID, b.Key.ID) }) {
		t.Errorf("queues not in key order")
	}
	byID := map[string]drain.QueueState{}
	for _, s := range states {
		if s.Key.Group == tenant {
			byID[s.Key.ID] = s
		}
	}
	b := byID[behind.ID]
	equal(t, "behind: listed", b.Key, drain.Key{Group: tenant, ID: behind.ID})
	equal(t, "behind: due", b.Due, 2)
	equal(t, "behind: oldest due at its enqueue", b.OldestDue.Equal(hourAgo), true)
	equal(t, "behind: no holder", b.Owner == "" && !b.Live, true)
	h := byID[held.ID]
	equal(t, "held: holder", h.Holder, "somehost:42:0badcafe")
	equal(t, "held: live", h.Live, true)
	equal(t, "held: nothing due", h.Due, 0)
	i := byID[idle.ID]
	equal(t, "idle: due", i.Due, 1)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testConcurrency(t *testing.T, e *env) {
	w := e.newHook(store.NewID(), "", "raced")
	k := drain.Key{Group: w.TenantID, ID: w.ID}
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.Wake(e.ctx, tx, k, tx.Now())
		return err
	})
	const n = 8
	var mu sync.Mutex
	leases, inserts := 0, 0
	var wg sync.WaitGroup
	r := &webhooks.InboundReceipt{EndpointID: "ep", Message: webhooks.Inbound{ID: store.NewID(), Type: "a", Payload: json.RawMessage(`{}`)},
		ReceivedAt: e.db.Now()}
	for i := range n {
		wg.Go(func() {
			err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
				got, err := e.st.Acquire(e.ctx, tx, k, fmt.Sprint("owner", i), tx.Now(), tx.Now().Add(time.Minute))
				if err != nil {
					return err
				}
				ins, err := e.st.InsertInbound(e.ctx, tx, r)
				mu.Lock()
				defer mu.Unlock()
				if got {
					leases++
				}
				if ins {
					inserts++
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	equal(t, "concurrent acquires that won", leases, 1)
	equal(t, "concurrent inserts of one message that won", inserts, 1)
}

// testDeliveryTotals checks the deliveries list's totals, which a store may
// keep rather than count: after inserts in several transactions (one of
// them to two webhooks), by webhook, by organization scope, with a deleted
// webhook's deliveries still counted, across folds of the kept counts
// (FoldDeliveryCounts) and across inserts and folds run concurrently.
func testDeliveryTotals(t *testing.T, e *env) {
	tenant := store.NewID()
	a := e.newHook(tenant, "", "a")
	b := e.newHook(tenant, "org_b", "b")
	other := e.newHook(store.NewID(), "", "other tenant")
	now := e.db.Now()
	add := func(ws ...*webhooks.Webhook) {
		t.Helper()
		ds := make([]*webhooks.Delivery, len(ws))
		for i, w := range ws {
			ds[i] = delivery(w, store.NewID(), now.Add(time.Duration(i)*time.Microsecond))
		}
		e.tx(func(tx *store.Tx) error {
			n, err := e.st.InsertDeliveries(e.ctx, tx, ds)
			if err == nil && n != int64(len(ds)) {
				err = fmt.Errorf("inserted %d, want %d", n, len(ds))
			}
			return err
		})
	}
	totals := func(what string, wantAll, wantA, wantB, wantOrgless int) {
		t.Helper()
		for _, c := range []struct {
			name string
			sc   store.Scope
			f    webhooks.DeliveryFilter
			want int
		}{
			{"all", tenantScope(tenant), webhooks.DeliveryFilter{}, wantAll},
			{"webhook a", tenantScope(tenant), webhooks.DeliveryFilter{WebhookID: a.ID}, wantA},
			{"webhook b", tenantScope(tenant), webhooks.DeliveryFilter{WebhookID: b.ID}, wantB},
			{"status pending", tenantScope(tenant), webhooks.DeliveryFilter{Status: webhooks.StatusPending}, wantAll},
			{"event type", tenantScope(tenant), webhooks.DeliveryFilter{EventType: "orders.order.created"}, wantAll},
			{"org-less scope", store.Scope{TenantID: tenant, OrganizationIDs: []string{}}, webhooks.DeliveryFilter{}, wantOrgless},
			{"org-less scope, webhook b", store.Scope{TenantID: tenant, OrganizationIDs: []string{}},
				webhooks.DeliveryFilter{WebhookID: b.ID}, 0},
			{"org_b scope", store.Scope{TenantID: tenant, OrganizationIDs: []string{"org_b"}}, webhooks.DeliveryFilter{}, wantAll},
			{"other webhook's id", tenantScope(tenant), webhooks.DeliveryFilter{WebhookID: other.ID}, 0},
		} {
			items, total, err := e.st.ListDeliveries(e.ctx, e.db, c.sc, webhooks.DeliveryFilter{
				WebhookID: c.f.WebhookID, Status: c.f.Status, EventType: c.f.EventType, Limit: 2})
			noErr(t, err)
			equal(t, what+", "+c.name+": total", total, c.want)
			equal(t, what+", "+c.name+": page", len(items), min(2, c.want))
		}
	}
	fold := func() {
		t.Helper()
		e.tx(func(tx *store.Tx) error {
			_, err := e.st.FoldDeliveryCounts(e.ctx, tx, 1000)
			return err
		})
	}
	totals("none yet", 0, 0, 0, 0)
	add(a)
	add(a, a, b)
	add(b)
	add(other)
	totals("after inserts", 5, 3, 2, 3)
	fold()
	totals("after a fold", 5, 3, 2, 3)
	add(a, b)
	totals("after a fold and inserts", 7, 4, 3, 4)
	fold()
	fold()
	totals("after two more folds", 7, 4, 3, 4)
	e.tx(func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, b.ID, e.db.Now()) })
	totals("webhook b deleted", 7, 4, 3, 4)

	// Inserts and folds at once: every insert is counted once.
	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*rounds)
	for range workers {
		wg.Go(func() {
			for range rounds {
				ds := []*webhooks.Delivery{delivery(a, store.NewID(), now), delivery(b, store.NewID(), now)}
				errs <- e.db.Tx(e.ctx, func(tx *store.Tx) error { _, err := e.st.InsertDeliveries(e.ctx, tx, ds); return err })
			}
		})
		wg.Go(func() {
			for range rounds {
				errs <- e.db.Tx(e.ctx, func(tx *store.Tx) error { _, err := e.st.FoldDeliveryCounts(e.ctx, tx, 1000); return err })
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	n := workers * rounds
	totals("after concurrent inserts and folds", 7+2*n, 4+n, 3+n, 4+n)
	fold()
	totals("after a last fold", 7+2*n, 4+n, 3+n, 4+n)
}

// wantDeliveryTotals checks that the total of every combination of the
// deliveries list's filters (webhook, event type, status) under sc is the
// number of deliveries the list returns for it.
func (e *env) wantDeliveryTotals(what string, sc store.Scope, hooks []string, eventTypes []string) {
	e.t.Helper()
	statuses := []string{"", webhooks.StatusPending, webhooks.StatusSending, webhooks.StatusDelivered, webhooks.StatusFailed,
		webhooks.StatusExpired}
	for _, w := range append([]string{""}, hooks...) {
		for _, et := range append([]string{""}, eventTypes...) {
			for _, st := range statuses {
				f := webhooks.DeliveryFilter{WebhookID: w, EventType: et, Status: st, Limit: 1000}
				items, total, err := e.st.ListDeliveries(e.ctx, e.db, sc, f)
				noErr(e.t, err)
				f.Limit = 1
				_, first, err := e.st.ListDeliveries(e.ctx, e.db, sc, f)
				noErr(e.t, err)
				name := fmt.Sprintf("%s, webhook %q, event type %q, status %q", what, w, et, st)
				equal(e.t, name+": total", total, len(items))
				equal(e.t, name+": total of a short page", first, len(items))
			}
		}
	}
}

// The totals by status and event type stay exact as deliveries change
// state (claimed, sent, failed, retried, unclaimed, expired) and as the
// counts are folded.
func testDeliveryStateTotals(t *testing.T, e *env) {
	tenant := store.NewID()
	a := e.newHook(tenant, "", "a")
	b := e.newHook(tenant, "org_b", "b")
	hooks := []string{a.ID, b.ID}
	types := []string{"orders.order.created", "billing.invoice.paid"}
	now := e.db.Now()
	var ds []*webhooks.Delivery
	for i := range 12 {
		w := a
		if i%3 == 2 {
			w = b
		}
		d := delivery(w, store.NewID(), now.Add(time.Duration(i)*time.Microsecond))
		d.EventType = types[i%2]
		ds = append(ds, d)
	}
	e.tx(func(tx *store.Tx) error { _, err := e.st.InsertDeliveries(e.ctx, tx, ds); return err })
	scopes := map[string]store.Scope{"tenant": tenantScope(tenant),
		"org-less": {TenantID: tenant, OrganizationIDs: []string{}}}
	check := func(what string) {
		t.Helper()
		for name, sc := range scopes {
			e.wantDeliveryTotals(what+", "+name+" scope", sc, hooks, types)
		}
	}
	check("inserted")
	var claimed []*webhooks.Delivery
	e.tx(func(tx *store.Tx) error {
		var err error
		claimed, err = e.st.ClaimDeliveries(e.ctx, tx, tenant, a.ID, tx.Now(), 5)
		return err
	})
	check("claimed")
	later := e.db.Now().Add(time.Hour)
	e.put(claimed[0], webhooks.StatusDelivered, 1, nil)
	e.put(claimed[1], webhooks.StatusFailed, 1, nil)
	e.put(claimed[2], webhooks.StatusPending, 1, &later)
	e.tx(func(tx *store.Tx) error { return e.st.UnclaimDelivery(e.ctx, tx, claimed[3], tx.Now()) })
	check("sent, failed, retrying, unclaimed")
	e.put(claimed[1], webhooks.StatusPending, 2, &now) // retried by hand
	e.put(claimed[0], webhooks.StatusDelivered, 1, nil)
	check("retried, stored again")
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.FoldDeliveryCounts(e.ctx, tx, 1000)
		return err
	})
	check("folded")
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.ExpireDeliveries(e.ctx, tx, tenant, a.ID, "Webhook is inactive", tx.Now())
		return err
	})
	check("expired")
	e.put(claimed[1], webhooks.StatusFailed, 3, nil) // an expired one cannot fail, but a store keeps what it is told
	for range 2 {
		e.tx(func(tx *store.Tx) error {
			_, err := e.st.FoldDeliveryCounts(e.ctx, tx, 1000)
			return err
		})
	}
	check("folded again")

	// Concurrent changes of one delivery to one state count it once.
	d := ds[2] // webhook b's, pending
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			c := *d
			c.Status, c.Attempt = webhooks.StatusDelivered, 1
			errs <- e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.UpdateDelivery(e.ctx, tx, &c) })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	check("delivered four times at once")
}

// The webhooks list's totals stay exact across creates, changes of
// activity, deactivation and deletes, by activity and scope.
func testWebhookTotals(t *testing.T, e *env) {
	tenant := store.NewID()
	a := e.newHook(tenant, "", "a")
	b := e.newHook(tenant, "org_b", "b")
	c := e.newHook(tenant, "org_c", "c")
	e.newHook(store.NewID(), "", "another tenant's")
	yes, no := true, false
	check := func(what string) {
		t.Helper()
		for _, sc := range []store.Scope{tenantScope(tenant), {TenantID: tenant, OrganizationIDs: []string{}},
			{TenantID: tenant, OrganizationIDs: []string{"org_b"}}} {
			for _, active := range []*bool{nil, &yes, &no} {
				items, total, err := e.st.ListWebhooks(e.ctx, e.db, sc, webhooks.Filter{IsActive: active, Limit: 100})
				noErr(t, err)
				_, first, err := e.st.ListWebhooks(e.ctx, e.db, sc, webhooks.Filter{IsActive: active, Limit: 1})
				noErr(t, err)
				name := fmt.Sprintf("%s, organizations %v, active %v", what, sc.OrganizationIDs, active != nil && *active)
				equal(t, name+": total", total, len(items))
				equal(t, name+": total of a short page", first, len(items))
			}
		}
	}
	check("created")
	a.IsActive = false
	e.tx(func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, a) })
	check("a made inactive")
	e.tx(func(tx *store.Tx) error { return e.st.UpdateWebhook(e.ctx, tx, a) })
	check("a stored again")
	e.tx(func(tx *store.Tx) error {
		_, err := e.st.Deactivate(e.ctx, tx, tenant, b.ID, e.db.Now())
		return err
	})
	check("b deactivated")
	e.tx(func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, c.ID, e.db.Now()) })
	check("c deleted")
	e.tx(func(tx *store.Tx) error { return e.st.DeleteWebhook(e.ctx, tx, tenant, a.ID, e.db.Now()) })
	check("a deleted")

	// Concurrent creates in one tenant and organization each count once.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			w := hook(tenant, "", fmt.Sprint("concurrent ", i), e.db.Now())
			errs <- e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.st.InsertWebhook(e.ctx, tx, w, "sealed") })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	check("after concurrent creates")
}

// testSearchTotalCapped: with a search, ListWebhooks counts at most
// store.SearchCap(ctx)+1 matches (the cap lowered to 3 here), exactly
// below it, and still reads a page past a capped total; without a search
// the total stays exact.
func testSearchTotalCapped(t *testing.T, e *env) {
	tenant := store.NewID()
	sc := tenantScope(tenant)
	base := e.db.Now().Add(-time.Hour)
	var oldestFirst []string
	for i := range 5 {
		oldestFirst = append(oldestFirst, e.insert(hook(tenant, "", fmt.Sprint("Alpha ", i), base.Add(time.Duration(i)*time.Minute))).ID)
	}
	e.insert(hook(tenant, "", "Other", base.Add(-time.Minute)))
	newest := slices.Clone(oldestFirst)
	slices.Reverse(newest)
	for _, c := range []struct {
		name     string
		cap      int
		f        webhooks.Filter
		want     []string
		total    int
		reported int
		capped   bool
	}{
		{"capped", 3, webhooks.Filter{Search: "alpha", Limit: 2}, newest[:2], 4, 3, true},
		{"page past the capped total", 3, webhooks.Filter{Search: "alpha", Limit: 10, Offset: 4}, newest[4:], 4, 3, true},
		{"exact at the cap", 5, webhooks.Filter{Search: "alpha", Limit: 2}, newest[:2], 5, 5, false},
		{"no search", 3, webhooks.Filter{Limit: 1}, newest[:1], 6, 6, false},
	} {
		ctx := storetest.WithSearchCap(e.ctx, c.cap)
		items, total, err := e.st.ListWebhooks(ctx, e.db, sc, c.f)
		noErr(t, err)
		equalSlices(t, c.name, hookIDs(items), c.want)
		equal(t, c.name+": total", total, c.total)
		reported, capped := store.CapTotal(ctx, total, c.f.Search != "")
		equal(t, c.name+": reported total", reported, c.reported)
		equal(t, c.name+": capped", capped, c.capped)
	}
}
