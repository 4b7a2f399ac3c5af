package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// healthEnv is a webhooks service over a database of its own whose clock
// (the store's and the service's) the test sets, with the emit hook
// registered on a job engine that is never started: events make pending
// deliveries that stay pending, and test sends settle at once.
func healthEnv(t *testing.T, url string, clock *fakeClock) (*store.DB, *webhooks.Service) {
	t.Helper()
	db, err := store.Open(t.Context(), url, &store.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context(), webhooks.Migrations); err != nil {
		t.Fatal(err)
	}
	svc := newSvc(t, db, webhooks.Options{AllowPrivateURLs: true, Now: clock.Now})
	e, err := jobs.New(t.Context(), db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RegisterJobs(e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Wait) // the queue wake-ups, before the database closes
	return db, svc
}

// DeliveryHealth counts each live webhook's deliveries made since the
// time given, by outcome: test sends that were delivered or failed,
// events' deliveries waiting to be sent, a retried failure (pending
// again); older deliveries, deleted webhooks, another tenant's and
// (for a scope that may not read it) another organization's webhooks
// are left out; webhooks without deliveries are listed with zeros.
func TestDeliveryHealth(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/bad" {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(rcv.Close)
		clock := &fakeClock{}
		base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
		clock.Set(base)
		db, svc := healthEnv(t, url, clock)

		tenant, o1 := store.NewID(), store.NewID()
		sc := store.Scope{TenantID: tenant}
		ctx := store.WithScope(t.Context(), sc)
		orgCtx := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationID: o1})
		otherSc := store.Scope{TenantID: store.NewID()}
		otherCtx := store.WithScope(t.Context(), otherSc)
		hookTo := func(ctx context.Context, name, path string, events ...string) *webhooks.Webhook {
			t.Helper()
			w, _ := mustCreate(t, svc, ctx, webhooks.Input{Name: name, URL: rcv.URL + path, SubscribedEvents: events})
			return w
		}
		alpha := hookTo(ctx, "alpha", "/ok", "orders.*")
		beta1 := hookTo(ctx, "beta", "/bad", "billing.*")
		beta2 := hookTo(ctx, "beta", "/ok", "nothing.*")
		if beta2.ID < beta1.ID {
			t.Fatalf("ids not increasing: %s, %s", beta1.ID, beta2.ID)
		}
		quiet := hookTo(ctx, "quiet", "/ok", "nothing.*")
		gone := hookTo(ctx, "gone", "/ok", "nothing.*")
		org := hookTo(orgCtx, "org", "/ok", "nothing.*")
		stranger := hookTo(otherCtx, "alpha", "/ok", "orders.*")

		test := func(ctx context.Context, w *webhooks.Webhook, want string) *webhooks.Delivery {
			t.Helper()
			d, err := svc.Test(ctx, w.ID)
			if err != nil {
				t.Fatalf("Test(%s): %v", w.Name, err)
			}
			if d.Status != want {
				t.Fatalf("Test(%s): status %s, want %s", w.Name, d.Status, want)
			}
			return d
		}
		retry := func(d *webhooks.Delivery) {
			t.Helper()
			again, err := svc.Retry(ctx, d.ID)
			is.NoErr(err)
			is.Equal(again.Status, webhooks.StatusPending)
		}

		// Before the window: a delivered and a pending one for alpha, and a
		// failure of beta1 that is retried (pending again) in the window.
		test(ctx, alpha, webhooks.StatusDelivered)
		emit(t, db, sc, "orders.order.created", map[string]any{"n": 0})
		oldFailure := test(ctx, beta1, webhooks.StatusFailed)

		since := base.Add(time.Hour)
		clock.Set(since)
		test(ctx, alpha, webhooks.StatusDelivered) // made at since exactly: counted
		clock.Set(since.Add(time.Minute))
		test(ctx, alpha, webhooks.StatusDelivered)
		emit(t, db, sc, "orders.order.created", map[string]any{"n": 1}) // alpha: pending
		test(ctx, beta1, webhooks.StatusFailed)
		retry(test(ctx, beta1, webhooks.StatusFailed))                  // pending again
		emit(t, db, sc, "billing.invoice.paid", map[string]any{"n": 2}) // beta1: pending
		retry(oldFailure)                                               // made before since: in no count
		test(ctx, beta2, webhooks.StatusDelivered)
		test(ctx, gone, webhooks.StatusDelivered)
		is.NoErr(svc.Delete(ctx, gone.ID))
		test(orgCtx, org, webhooks.StatusDelivered)
		test(otherCtx, stranger, webhooks.StatusDelivered)
		emit(t, db, otherSc, "orders.order.created", map[string]any{"n": 3}) // the other tenant's alpha: pending

		row := func(w *webhooks.Webhook, delivered, failed, pending int) webhooks.DeliveryHealth {
			return webhooks.DeliveryHealth{WebhookID: w.ID, Name: w.Name, URL: w.URL, Delivered: delivered, Failed: failed, Pending: pending}
		}
		health := func(ctx context.Context, since time.Time) []webhooks.DeliveryHealth {
			t.Helper()
			hs, err := svc.DeliveryHealth(ctx, since)
			if err != nil {
				t.Fatalf("DeliveryHealth: %v", err)
			}
			return hs
		}
		rAlpha, rBeta1, rBeta2, rOrg, rQuiet := row(alpha, 2, 0, 1), row(beta1, 0, 1, 2), row(beta2, 1, 0, 0), row(org, 1, 0, 0), row(quiet, 0, 0, 0)
		got := health(ctx, since)
		is.Equal(got, []webhooks.DeliveryHealth{rAlpha, rBeta1, rBeta2, rOrg, rQuiet})

		// The counts agree with the delivery log: its deliveries made since,
		// by status.
		for _, h := range got {
			ds, _, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: h.WebhookID, Limit: 100})
			is.NoErr(err)
			byStatus := map[string]int{}
			for _, d := range ds {
				if !d.CreatedAt.Before(since) {
					byStatus[d.Status]++
				}
			}
			is.Equal(h, row(&webhooks.Webhook{ID: h.WebhookID, Name: h.Name, URL: h.URL}, byStatus[webhooks.StatusDelivered],
				byStatus[webhooks.StatusFailed]+byStatus[webhooks.StatusExpired], byStatus[webhooks.StatusPending]+byStatus[webhooks.StatusSending]))
		}

		// A scope that may not read o1 does not see its webhook.
		blind := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationIDs: []string{}})
		is.Equal(health(blind, since), []webhooks.DeliveryHealth{rAlpha, rBeta1, rBeta2, rQuiet})
		// The other tenant sees only its own.
		is.Equal(health(otherCtx, since), []webhooks.DeliveryHealth{row(stranger, 1, 0, 1)})
		// From the start, the older deliveries count too.
		is.Equal(health(ctx, base), []webhooks.DeliveryHealth{row(alpha, 3, 0, 2), row(beta1, 0, 1, 3), rBeta2, rOrg, rQuiet})
		// After everything: every webhook, with zeros.
		is.Equal(health(ctx, since.Add(time.Hour)),
			[]webhooks.DeliveryHealth{row(alpha, 0, 0, 0), row(beta1, 0, 0, 0), row(beta2, 0, 0, 0), row(org, 0, 0, 0), rQuiet})

		// A tenant without webhooks gets an empty list (JSON []).
		empty := health(store.WithScope(t.Context(), store.Scope{TenantID: store.NewID()}), since)
		b, err := json.Marshal(empty)
		is.NoErr(err)
		is.Equal(string(b), "[]")
		b, err = json.Marshal(rAlpha)
		is.NoErr(err)
		is.Equal(string(b), `{"webhookId":"`+alpha.ID+`","name":"alpha","url":"`+alpha.URL+`","delivered":2,"failed":0,"pending":1}`)

		// Without a scope (or without a tenant in it) there is nothing.
		for _, ctx := range []context.Context{t.Context(), store.WithScope(t.Context(), store.Scope{OrganizationID: o1})} {
			_, err := svc.DeliveryHealth(ctx, since)
			is.True(errors.Is(err, store.ErrNoScope))
		}
	})
}
