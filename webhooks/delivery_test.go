package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a local target answering with the statuses in order (the
// last one repeats), recording every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
	arrived  chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"seen":true}`))
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// deliveryEnv is a webhooks service with a running job engine (isolated
// schema on PostgreSQL), retries after 50 ms (River makes a scheduled job
// runnable within about 5 s, so a retry still takes that long).
func deliveryEnv(t *testing.T, db *store.DB) *webhooks.Service {
	t.Helper()
	key := make([]byte, 32)
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: key, AllowPrivateURLs: true,
		RetryDelay: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	e, err := jobs.New(t.Context(), db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RegisterJobs(e); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return svc
}

// emit commits a domain event in the scope's tenant.
func emit(t *testing.T, db *store.DB, sc store.Scope, typ string, data any) store.Event {
	t.Helper()
	var ev store.Event
	err := db.Tx(t.Context(), func(tx *store.Tx) error {
		var err error
		ev, err = tx.EmitData(t.Context(), typ, sc, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// settled waits (at most 10 s) until the webhook's deliveries are all in
// a final status and there are want of them.
func settled(t *testing.T, svc *webhooks.Service, ctx context.Context, webhookID string, want int) []*webhooks.Delivery {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, _, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: webhookID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		done := len(ds) == want
		for _, d := range ds {
			done = done && (d.Status == webhooks.StatusDelivered || d.Status == webhooks.StatusFailed || d.Status == webhooks.StatusExpired)
		}
		if done {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries did not settle: %d of %d, %+v", len(ds), want, ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func createHook(t *testing.T, svc *webhooks.Service, ctx context.Context, url string, in webhooks.Input) (*webhooks.Webhook, string) {
	t.Helper()
	in.Name, in.URL = "hook", url
	if in.SubscribedEvents == nil {
		in.SubscribedEvents = []string{"orders.*"}
	}
	return mustCreate(t, svc, ctx, in)
}

// An event reaches a subscribed webhook once, signed so that the Standard
// Webhooks library verifies it, with the spec's body; other events,
// other tenants' webhooks and inactive webhooks get nothing.
func TestDeliveryDelivers(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := deliveryEnv(t, db)
		rcv := newReceiver(t, http.StatusOK)
		ctx, sc := storetest.NewScope(t)
		hook, secret := createHook(t, svc, ctx, rcv.URL+"/in", webhooks.Input{CustomHeaders: map[string]string{"X-Shop": "acme"}})
		inactive := false
		createHook(t, svc, ctx, rcv.URL+"/off", webhooks.Input{IsActive: &inactive})
		otherCtx, otherSc := storetest.NewScope(t)
		otherHook, _ := createHook(t, svc, otherCtx, rcv.URL+"/other", webhooks.Input{})

		ev := emit(t, db, sc, "orders.order.created", map[string]any{"id": "o-1", "total": 12.5})
		emit(t, db, sc, "customers.customer.created", map[string]any{"id": "c-1"}) // not subscribed
		ds := settled(t, svc, ctx, hook.ID, 1)
		d := ds[0]
		is.Equal(d.Status, webhooks.StatusDelivered)
		is.Equal(d.EventID, ev.ID)
		is.Equal(d.EventType, "orders.order.created")
		is.Equal(d.Attempt, 1)
		is.Equal(*d.ResponseStatus, http.StatusOK)
		is.True(d.DeliveredAt != nil)

		got := rcv.requests()
		is.Equal(len(got), 1) // the inactive webhook and the other tenant's got nothing
		r := got[0]
		is.Equal(r.header.Get("Content-Type"), "application/json")
		is.Equal(r.header.Get("X-Shop"), "acme")
		is.Equal(r.header.Get("webhook-id"), d.MessageID)
		wh, err := standardwebhooks.NewWebhook(secret)
		is.NoErr(err)
		is.NoErr(wh.Verify(r.body, r.header))
		var body struct {
			Type      string          `json:"type"`
			Timestamp time.Time       `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}
		is.NoErr(json.Unmarshal(r.body, &body))
		is.Equal(body.Type, "orders.order.created")
		is.True(body.Timestamp.Equal(ev.OccurredAt))
		var data map[string]any
		is.NoErr(json.Unmarshal(body.Data, &data))
		is.Equal(data, map[string]any{"id": "o-1", "total": 12.5})

		otherDs, _, err := svc.ListDeliveries(otherCtx, webhooks.DeliveryFilter{WebhookID: otherHook.ID})
		is.NoErr(err)
		is.Equal(len(otherDs), 0)
		_ = otherSc
		// The detail has the payload and the response; the list does not.
		full, err := svc.GetDelivery(ctx, d.ID)
		is.NoErr(err)
		is.Equal(string(full.Payload), string(r.body))
		is.Equal(full.ResponseBody, `{"seen":true}`)
		is.True(ds[0].Payload == nil)
		_, err = svc.GetDelivery(otherCtx, d.ID)
		is.True(err != nil) // another tenant's delivery is not found
	}, webhooks.Migrations)
}

// A 5xx is retried with the same message id until a 2xx; a 400 is not
// retried; attempts stop at maxRetries; a 410 disables the webhook, and so
// do consecutive failures reaching the threshold.
func TestDeliveryRetries(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := deliveryEnv(t, db)

		t.Run("retried until delivered", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx, sc := storetest.NewScope(t)
			rcv := newReceiver(t, 503, 200)
			hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.retry"}})
			emit(t, db, sc, "orders.retry", map[string]any{})
			d := settled(t, svc, ctx, hook.ID, 1)[0]
			is.Equal(d.Status, webhooks.StatusDelivered)
			is.Equal(d.Attempt, 2)
			got := rcv.requests()
			is.Equal(len(got), 2)
			for _, r := range got {
				is.Equal(r.header.Get("webhook-id"), d.MessageID) // stable across retries
			}
			w, err := svc.Get(ctx, hook.ID)
			is.NoErr(err)
			is.Equal(w.ConsecutiveFailures, 0) // the success reset the count
			is.True(w.LastSuccessAt != nil && w.LastFailureAt != nil)
		})
		t.Run("a 400 is not retried", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx, sc := storetest.NewScope(t)
			rcv := newReceiver(t, 400)
			hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.bad"}})
			emit(t, db, sc, "orders.bad", map[string]any{})
			d := settled(t, svc, ctx, hook.ID, 1)[0]
			is.Equal(d.Status, webhooks.StatusFailed)
			is.Equal(d.Attempt, 1)
			is.Equal(*d.ResponseStatus, 400)
			is.Equal(len(rcv.requests()), 1)
		})
		t.Run("attempts stop at maxRetries", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx, sc := storetest.NewScope(t)
			rcv := newReceiver(t, 502)
			two := 2
			hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.down"}, MaxRetries: &two})
			emit(t, db, sc, "orders.down", map[string]any{})
			d := settled(t, svc, ctx, hook.ID, 1)[0]
			is.Equal(d.Status, webhooks.StatusFailed)
			is.Equal(d.Attempt, 2)
			is.Equal(len(rcv.requests()), 2)
			// A manual retry gives it one more attempt, with the same id.
			again, err := svc.Retry(ctx, d.ID)
			is.NoErr(err)
			is.Equal(again.Status, webhooks.StatusPending)
			d = settled(t, svc, ctx, hook.ID, 1)[0]
			is.Equal(d.Attempt, 3)
			is.Equal(len(rcv.requests()), 3)
			is.Equal(rcv.requests()[2].header.Get("webhook-id"), d.MessageID)
		})
		t.Run("410 disables the webhook", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx, sc := storetest.NewScope(t)
			rcv := newReceiver(t, http.StatusGone)
			hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.gone"}})
			emit(t, db, sc, "orders.gone", map[string]any{"n": 1})
			d := settled(t, svc, ctx, hook.ID, 1)[0]
			is.Equal(d.Status, webhooks.StatusFailed)
			w, err := svc.Get(ctx, hook.ID)
			is.NoErr(err)
			is.True(!w.IsActive)
			is.Equal(countEvents(t, db, sc.TenantID, webhooks.EventWebhookDisabled), 1)
			emit(t, db, sc, "orders.gone", map[string]any{"n": 2})
			time.Sleep(200 * time.Millisecond)
			ds, _, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: hook.ID})
			is.NoErr(err)
			is.Equal(len(ds), 1) // a disabled webhook gets no new deliveries
		})
		t.Run("consecutive failures disable at the threshold", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ctx, sc := storetest.NewScope(t)
			rcv := newReceiver(t, 400)
			two, one := 2, 1
			hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.flaky"},
				AutoDisableThreshold: &two, MaxRetries: &one})
			emit(t, db, sc, "orders.flaky", map[string]any{"n": 1})
			settled(t, svc, ctx, hook.ID, 1)
			w, _ := svc.Get(ctx, hook.ID)
			is.True(w.IsActive)
			is.Equal(w.ConsecutiveFailures, 1)
			emit(t, db, sc, "orders.flaky", map[string]any{"n": 2})
			settled(t, svc, ctx, hook.ID, 2)
			w, _ = svc.Get(ctx, hook.ID)
			is.True(!w.IsActive)
			is.Equal(w.ConsecutiveFailures, 2)
		})
	}, webhooks.Migrations)
}

// A delivery whose webhook was disabled or deleted before it was sent
// expires unsent.
func TestDeliveryExpires(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		// The retry waits 3 s, so the webhook is disabled before it.
		svc := queueEnv(t, db, 3*time.Second)
		ctx, sc := storetest.NewScope(t)
		rcv := newReceiver(t, 500, 200)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{SubscribedEvents: []string{"orders.expire"}})
		emit(t, db, sc, "orders.expire", map[string]any{})
		<-rcv.arrived // the first attempt failed
		off := false
		_, err := svc.Update(ctx, hook.ID, webhooks.Patch{IsActive: &off})
		is.NoErr(err)
		d := settled(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Status, webhooks.StatusExpired)
		is.Equal(d.ErrorMessage, "Webhook is inactive")
		is.Equal(len(rcv.requests()), 1)
	}, webhooks.Migrations)
}

// A test send is signed, synchronous, has no retries, and works on an
// inactive webhook.
func TestDeliveryTestSend(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := deliveryEnv(t, db)
		ctx, _ := storetest.NewScope(t)
		rcv := newReceiver(t, 500)
		off := false
		hook, secret := createHook(t, svc, ctx, rcv.URL, webhooks.Input{IsActive: &off})
		d, err := svc.Test(ctx, hook.ID)
		is.NoErr(err)
		is.Equal(d.EventType, webhooks.TestEventType)
		is.Equal(d.Status, webhooks.StatusFailed)
		is.Equal(*d.ResponseStatus, 500)
		is.Equal(d.Attempt, 1)
		got := rcv.requests()
		is.Equal(len(got), 1)
		wh, _ := standardwebhooks.NewWebhook(secret)
		is.NoErr(wh.Verify(got[0].body, got[0].header))
		w, _ := svc.Get(ctx, hook.ID)
		is.Equal(w.ConsecutiveFailures, 0) // test sends do not count
	}, webhooks.Migrations)
}

// A delivery during a rotation carries both signatures: a receiver with
// either secret verifies it.
func TestDeliveryDuringRotation(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := deliveryEnv(t, db)
		ctx, sc := storetest.NewScope(t)
		rcv := newReceiver(t, 200)
		hook, old := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
		rot, err := svc.RotateSecret(ctx, hook.ID)
		is.NoErr(err)
		emit(t, db, sc, "orders.order.updated", map[string]any{})
		settled(t, svc, ctx, hook.ID, 1)
		r := rcv.requests()[0]
		for _, secret := range []string{old, rot.Secret} {
			wh, _ := standardwebhooks.NewWebhook(secret)
			is.NoErr(wh.Verify(r.body, r.header))
		}
	}, webhooks.Migrations)
}

// countEvents counts the tenant's domain events of a type.
func countEvents(t *testing.T, db *store.DB, tenantID, typ string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM store_events WHERE tenant_id = $1 AND type = $2`, tenantID, typ).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// While webhooks are switched off, deliveries expire unsent, and test
// sends, retries and inbound receives are refused (409).
func TestDeliverySwitchedOff(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := deliveryEnv(t, db)
		ctx, sc := storetest.NewScope(t)
		rcv := newReceiver(t, 200)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
		secret := webhooks.NewSecret()
		svc.AddEndpoint("in", webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: secret}})

		svc.SetEnabled(false)
		is.True(!svc.Enabled())
		emit(t, db, sc, "orders.order.created", map[string]any{})
		d := settled(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Status, webhooks.StatusExpired)
		is.Equal(d.ErrorMessage, "Custom Webhooks integration is disabled")
		is.Equal(len(rcv.requests()), 0)
		_, err := svc.Test(ctx, hook.ID)
		is.True(errors.Is(err, webhooks.ErrDisabled) && errors.Is(err, store.ErrConflict))
		_, err = svc.Retry(ctx, d.ID)
		is.True(errors.Is(err, webhooks.ErrDisabled))
		body := []byte(`{"type":"x"}`)
		_, err = svc.Receive(ctx, "in", signed(t, "msg_off", body, secret), body)
		is.True(errors.Is(err, webhooks.ErrDisabled))

		svc.SetEnabled(true) // back on: the expired delivery can be retried
		_, err = svc.Retry(ctx, d.ID)
		is.NoErr(err)
		d = settled(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Status, webhooks.StatusDelivered)
	}, webhooks.Migrations)
}
