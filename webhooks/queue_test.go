package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The tests of the per-webhook delivery queues (queue.go): order, retries
// that do not block, slow targets that stall nobody else, rate limits,
// Retry-After, manual retries and tenants kept apart.

// arrival is one request a queueReceiver got.
type arrival struct {
	path   string
	n      int    // data.n of the event
	tenant string // data.tenant of the event, if any
	msgID  string // the webhook-id header
	at     time.Time
}

// queueReceiver is a local target that records every request in the
// order they arrive and answers with answer (200 when nil). prior is how
// many requests for the same path and event number came before this one.
type queueReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []arrival
	answer func(w http.ResponseWriter, a arrival, prior int) int
	// delay is how long each request is held before its answer; stop
	// (closed when the test ends) cuts it short.
	delay time.Duration
	stop  chan struct{}
}

func newQueueReceiver(t *testing.T, delay time.Duration, answer func(w http.ResponseWriter, a arrival, prior int) int) *queueReceiver {
	r := &queueReceiver{answer: answer, delay: delay, stop: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var body struct {
			Data struct {
				N      int    `json:"n"`
				Tenant string `json:"tenant"`
			} `json:"data"`
		}
		_ = json.Unmarshal(raw, &body)
		a := arrival{path: req.URL.Path, n: body.Data.N, tenant: body.Data.Tenant, msgID: req.Header.Get("webhook-id"), at: time.Now()}
		r.mu.Lock()
		prior := 0
		for _, g := range r.got {
			if g.path == a.path && g.n == a.n {
				prior++
			}
		}
		r.got = append(r.got, a)
		r.mu.Unlock()
		if r.delay > 0 {
			timer := time.NewTimer(r.delay)
			select {
			case <-timer.C:
			case <-req.Context().Done():
			case <-r.stop:
			}
			timer.Stop()
		}
		status := http.StatusOK
		if r.answer != nil {
			status = r.answer(w, a, prior)
		}
		w.WriteHeader(status)
	}))
	// Cleanups run last first: the held requests are let go, then the
	// server closes (Close waits for the requests under way).
	t.Cleanup(r.Close)
	t.Cleanup(func() { close(r.stop) })
	return r
}

// arrivals returns the requests so far, in order of arrival.
func (r *queueReceiver) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

// at returns the requests so far to path.
func (r *queueReceiver) at(path string) []arrival {
	var out []arrival
	for _, a := range r.arrivals() {
		if a.path == path {
			out = append(out, a)
		}
	}
	return out
}

func numbers(as []arrival) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.n
	}
	return out
}

func upTo(first, last int) []int {
	var out []int
	for i := first; i <= last; i++ {
		out = append(out, i)
	}
	return out
}

// queueEnv is deliveryEnv with the retry delay given, and waits for the
// service's queue wake-ups at the end.
func queueEnv(t *testing.T, db *store.DB, retryDelay time.Duration) *webhooks.Service {
	t.Helper()
	svc, start := queueEnvStopped(t, db, retryDelay)
	start()
	return svc
}

// queueEnvStopped is queueEnv with the job engine started by the
// function returned: events committed before wait for it (a backlog).
func queueEnvStopped(t *testing.T, db *store.DB, retryDelay time.Duration) (*webhooks.Service, func()) {
	t.Helper()
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true,
		RetryDelay: func(int) time.Duration { return retryDelay }})
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
		svc.Wait() // the queue wake-ups under way, before the database closes
	})
	return svc, func() {
		t.Helper()
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// queueDeadline bounds every wait of these tests.
const queueDeadline = 30 * time.Second

// waitUntil polls cond until it holds, failing the test after
// queueDeadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(queueDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allDelivered waits until the webhook has want deliveries, all
// delivered, and returns them (newest first).
func allDelivered(t *testing.T, svc *webhooks.Service, ctx context.Context, webhookID string, want int) []*webhooks.Delivery {
	t.Helper()
	var ds []*webhooks.Delivery
	deadline := time.Now().Add(queueDeadline)
	for {
		all, total, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: webhookID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		ds = all
		_, delivered, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: webhookID, Status: webhooks.StatusDelivered, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if total == want && delivered == want {
			// Read again: the list above may predate the last delivery
			// (delivered is final, so this read is the settled state).
			// Returning that older list made the attempt checks of
			// TestQueueFailureDoesNotBlock and TestQueueRateLimitYields
			// fail now and then under load.
			ds, _, err = svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: webhookID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return ds
		}
		if time.Now().After(deadline) {
			states := map[string]int{}
			for _, d := range ds {
				states[d.Status]++
			}
			t.Fatalf("deliveries of %s: %d of %d, %d delivered, by status (of the newest 100) %v", webhookID, total, want, delivered, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// timeline logs the webhook's deliveries in order of their events, with
// when each was made (its dispatch) and when its last attempt started:
// the evidence when arrivals come out of order.
func timeline(t *testing.T, svc *webhooks.Service, ctx context.Context, webhookID string) {
	t.Helper()
	var ds []*webhooks.Delivery
	for {
		page, total, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: webhookID, Limit: 100, Offset: len(ds)})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, page...)
		if len(page) == 0 || len(ds) >= total {
			break
		}
	}
	slices.SortFunc(ds, func(a, b *webhooks.Delivery) int { return strings.Compare(a.EventID, b.EventID) })
	var b strings.Builder
	for _, d := range ds {
		full, err := svc.GetDelivery(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Data struct {
				N int `json:"n"`
			} `json:"data"`
		}
		_ = json.Unmarshal(full.Payload, &data)
		last := "-"
		if d.LastAttemptAt != nil {
			last = d.LastAttemptAt.Format("15:04:05.000000")
		}
		fmt.Fprintf(&b, "\n  n=%2d event=%s made=%s lastAttempt=%s attempt=%d", data.Data.N, d.EventID,
			d.CreatedAt.Format("15:04:05.000000"), last, d.Attempt)
	}
	t.Logf("deliveries of %s in event order:%s", webhookID, b.String())
}

// emitNumbered emits events n = first..last of typ in the scope, one
// transaction each, with data {"n": n} (and "tenant" when given).
func emitNumbered(t *testing.T, db *store.DB, sc store.Scope, typ, tenant string, first, last int) {
	t.Helper()
	for i := first; i <= last; i++ {
		data := map[string]any{"n": i}
		if tenant != "" {
			data["tenant"] = tenant
		}
		emit(t, db, sc, typ, data)
	}
}

// One webhook's deliveries arrive in the order of their events, each
// once: 30 events emitted one after the other; and with two webhooks on
// the same events, each gets them in order.
func TestQueueOrder(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := queueEnv(t, db, 50*time.Millisecond)
		const n = 30

		t.Run("one webhook", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			rcv := newQueueReceiver(t, 0, nil)
			ctx, sc := storetest.NewScope(t)
			hook, _ := createHook(t, svc, ctx, rcv.URL+"/one", webhooks.Input{})
			emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
			ds := allDelivered(t, svc, ctx, hook.ID, n)
			for _, d := range ds {
				is.Equal(d.Attempt, 1)
			}
			got := rcv.at("/one")
			if !slices.Equal(numbers(got), upTo(1, n)) {
				timeline(t, svc, ctx, hook.ID)
			}
			is.Equal(numbers(got), upTo(1, n)) // arrival order is emit order, each once
		})
		t.Run("two webhooks", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			rcv := newQueueReceiver(t, 0, nil)
			ctx, sc := storetest.NewScope(t)
			a, _ := createHook(t, svc, ctx, rcv.URL+"/a", webhooks.Input{})
			b, _ := createHook(t, svc, ctx, rcv.URL+"/b", webhooks.Input{})
			emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
			allDelivered(t, svc, ctx, a.ID, n)
			allDelivered(t, svc, ctx, b.ID, n)
			for path, id := range map[string]string{"/a": a.ID, "/b": b.ID} {
				if !slices.Equal(numbers(rcv.at(path)), upTo(1, n)) {
					timeline(t, svc, ctx, id)
				}
			}
			is.Equal(numbers(rcv.at("/a")), upTo(1, n))
			is.Equal(numbers(rcv.at("/b")), upTo(1, n))
			is.Equal(len(rcv.arrivals()), 2*n)
		})
	}, webhooks.Migrations)
}

// Events that pile up before the workers get to them (a burst, a
// restart) still reach a webhook in order: 30 events committed one after
// the other while the job engine is stopped, then the engine starts.
func TestQueueOrderBacklog(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc, start := queueEnvStopped(t, db, 50*time.Millisecond)
		rcv := newQueueReceiver(t, 0, nil)
		ctx, sc := storetest.NewScope(t)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
		const n = 30
		emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
		start()
		allDelivered(t, svc, ctx, hook.ID, n)
		got := numbers(rcv.arrivals())
		if !slices.Equal(got, upTo(1, n)) {
			timeline(t, svc, ctx, hook.ID)
		}
		is.Equal(got, upTo(1, n))
	}, webhooks.Migrations)
}

// A retryable failure does not hold up the webhook's later deliveries:
// event 3's first attempt gets a 500; events 4.. go out in order without
// waiting for its retry, which follows with the same webhook-id. The 30
// events are emitted one after the other, either at once ("in a row") or
// with 4.. emitted only once 3's failure is recorded ("after the
// failure"), so that 4 is not in the batch that sent 3: a queue that held
// later deliveries behind a waiting retry would send 4 after 3's retry.
func TestQueueFailureDoesNotBlock(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		// A retry delay of 3 s (River makes the retry's drain runnable within
		// about 5 s after that) leaves the events after 3 time to go out
		// before 3 is due again.
		svc := queueEnv(t, db, 3*time.Second)
		for _, pause := range []bool{false, true} {
			name := "in a row"
			if pause {
				name = "after the failure"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testFailureDoesNotBlock(t, db, svc, pause)
			})
		}
	}, webhooks.Migrations)
}

func testFailureDoesNotBlock(t *testing.T, db *store.DB, svc *webhooks.Service, pause bool) {
	is := is.New(t)
	rcv := newQueueReceiver(t, 0, func(_ http.ResponseWriter, a arrival, prior int) int {
		if a.n == 3 && prior == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	ctx, sc := storetest.NewScope(t)
	hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
	const n = 30
	if pause {
		emitNumbered(t, db, sc, "orders.order.created", "", 1, 3)
		waitUntil(t, "3's failure recorded", func() bool {
			ds, _, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: hook.ID, Status: webhooks.StatusPending})
			if err != nil {
				t.Fatal(err)
			}
			return len(ds) == 1 && ds[0].Attempt == 1 && ds[0].NextRetryAt != nil
		})
		emitNumbered(t, db, sc, "orders.order.created", "", 4, n)
	} else {
		emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
	}
	ds := allDelivered(t, svc, ctx, hook.ID, n)

	got := rcv.arrivals()
	is.Equal(len(got), n+1) // one request per event, and 3's retry
	var firsts []int
	seen := map[int]int{} // n → index of its first arrival
	retry := -1
	for i, a := range got {
		if _, ok := seen[a.n]; ok {
			is.Equal(a.n, 3) // only 3 is sent twice
			retry = i
			continue
		}
		seen[a.n] = i
		firsts = append(firsts, a.n)
	}
	if !slices.Equal(firsts, upTo(1, n)) {
		timeline(t, svc, ctx, hook.ID)
	}
	is.Equal(firsts, upTo(1, n)) // first attempts in event order: 3's between 2 and 4
	is.True(retry > seen[3])     // 3's retry comes after its first attempt
	is.True(retry > seen[4])     // and does not hold up 4
	t.Logf("3's retry arrived in position %d of %d", retry+1, len(got))
	is.Equal(got[seen[3]].msgID, got[retry].msgID) // the same webhook-id on both attempts

	for _, d := range ds {
		var data struct {
			Data struct {
				N int `json:"n"`
			} `json:"data"`
		}
		full, err := svc.GetDelivery(ctx, d.ID)
		is.NoErr(err)
		is.NoErr(json.Unmarshal(full.Payload, &data))
		if data.Data.N == 3 {
			is.Equal(d.Attempt, 2)
			is.Equal(d.MessageID, got[retry].msgID)
		} else {
			is.Equal(d.Attempt, 1)
		}
	}
}

// A slow target holds only its own queue: webhook A's receiver takes
// 500 ms per request, B's answers at once. A's drain is busy first (a
// warm-up event only A subscribes to); then B gets all of 10 events both
// subscribe to while A is still on its way through them.
func TestQueueSlowTargetDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		slow := newQueueReceiver(t, 500*time.Millisecond, nil)
		fast := newQueueReceiver(t, 0, nil)
		ctx, sc := storetest.NewScope(t)
		createHook(t, svc, ctx, slow.URL+"/a", webhooks.Input{SubscribedEvents: []string{"orders.*"}})
		b, _ := createHook(t, svc, ctx, fast.URL+"/b", webhooks.Input{SubscribedEvents: []string{"orders.order.*"}})
		emitNumbered(t, db, sc, "orders.warmup", "", 0, 0)
		waitUntil(t, "A's first request", func() bool { return len(slow.arrivals()) == 1 })
		const n = 10
		emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
		allDelivered(t, svc, ctx, b.ID, n)
		slowSoFar := len(slow.arrivals())
		t.Logf("when B had all %d, A had received %d of %d", n, slowSoFar, n+1)
		is.True(slowSoFar < n+1) // A (11 × 500 ms) was still going when B was done
		is.Equal(numbers(fast.at("/b")), upTo(1, n))
		is.Equal(numbers(slow.at("/a")), upTo(0, slowSoFar-1)) // A in order too, so far
		// The test's end lets A's held requests go (queueReceiver.stop),
		// so its drain finishes quickly and the engine stops.
	}, webhooks.Migrations)
}

// rateLimitPerMinute spaces a webhook's sends: at 120 a minute, four
// events arrive at least about 500 ms apart (lower bound only).
func TestQueueRateLimit(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		rcv := newQueueReceiver(t, 0, nil)
		ctx, sc := storetest.NewScope(t)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{RateLimitPerMinute: ptrTo(120)})
		const n = 4
		emitNumbered(t, db, sc, "orders.order.created", "", 1, n)
		allDelivered(t, svc, ctx, hook.ID, n)
		got := rcv.arrivals()
		is.Equal(numbers(got), upTo(1, n))
		// The limiter starts the k-th send at least (k-1) × 500 ms after the
		// first; an arrival adds the send's latency, so the first arrival
		// (a new connection) may come late: 100 ms of slack for it.
		for i := 1; i < len(got); i++ {
			t.Logf("arrival %d: %v after the first (%v after the one before)", got[i].n, got[i].at.Sub(got[0].at), got[i].at.Sub(got[i-1].at))
		}
		for i := 1; i < len(got); i++ {
			is.True(got[i].at.Sub(got[0].at) >= time.Duration(i)*500*time.Millisecond-100*time.Millisecond) // one send per 500 ms
		}
	}, webhooks.Migrations)
}

// A rate limit slower than one send a second makes the drain yield its
// worker rather than sleep: at 30 a minute (one per 2 s), two events
// committed together are claimed together, the second is given back
// unsent (its attempt too) and sent by a later drain, at least about 2 s
// after the first, as attempt 1.
func TestQueueRateLimitYields(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		rcv := newQueueReceiver(t, 0, nil)
		ctx, sc := storetest.NewScope(t)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{RateLimitPerMinute: ptrTo(30)})
		err := db.Tx(ctx, func(tx *store.Tx) error {
			for i := 1; i <= 2; i++ {
				if _, err := tx.EmitData(ctx, "orders.order.created", sc, map[string]any{"n": i}); err != nil {
					return err
				}
			}
			return nil
		})
		is.NoErr(err)
		ds := allDelivered(t, svc, ctx, hook.ID, 2)
		for _, d := range ds {
			is.Equal(d.Attempt, 1) // the unsent one's claim was given back
		}
		got := rcv.arrivals()
		is.Equal(numbers(got), []int{1, 2})
		gap := got[1].at.Sub(got[0].at)
		t.Logf("second arrival %v after the first", gap)
		is.True(gap >= 1900*time.Millisecond) // one send per 2 s
	}, webhooks.Migrations)
}

// A 503 with Retry-After longer than the retry delay (50 ms here) puts
// the next attempt at least that far off.
func TestQueueRetryAfter(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		rcv := newQueueReceiver(t, 0, func(w http.ResponseWriter, _ arrival, prior int) int {
			if prior == 0 {
				w.Header().Set("Retry-After", "2")
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		ctx, sc := storetest.NewScope(t)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
		emitNumbered(t, db, sc, "orders.order.created", "", 1, 1)

		// After the first attempt is recorded: pending, next attempt ≥ 2 s on.
		var pending *webhooks.Delivery
		waitUntil(t, "the first attempt's outcome", func() bool {
			ds, _, err := svc.ListDeliveries(ctx, webhooks.DeliveryFilter{WebhookID: hook.ID})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 {
				return false
			}
			d, err := svc.GetDelivery(ctx, ds[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status == webhooks.StatusPending && d.NextRetryAt != nil {
				pending = d
				return true
			}
			is.True(d.Status != webhooks.StatusDelivered) // the pending state lasts 2 s: not missed
			return false
		})
		is.Equal(pending.Attempt, 1)
		is.Equal(*pending.ResponseStatus, http.StatusServiceUnavailable)
		is.True(pending.LastAttemptAt != nil)
		wait := pending.NextRetryAt.Sub(*pending.LastAttemptAt)
		t.Logf("next attempt %v after the first", wait)
		is.True(wait >= 2*time.Second) // Retry-After, not the 50 ms delay

		d := allDelivered(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Attempt, 2)
		got := rcv.arrivals()
		is.Equal(len(got), 2)
		gap := got[1].at.Sub(got[0].at)
		t.Logf("second arrival %v after the first", gap)
		is.True(gap >= 1900*time.Millisecond)
		is.Equal(got[0].msgID, got[1].msgID)
	}, webhooks.Migrations)
}

// A failed delivery (400: not retried) is sent again by Retry, as its
// next attempt with the same webhook-id; a delivered one cannot be
// retried.
func TestQueueManualRetry(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		rcv := newReceiver(t, http.StatusBadRequest, http.StatusOK) // 400, then 200
		ctx, sc := storetest.NewScope(t)
		hook, _ := createHook(t, svc, ctx, rcv.URL, webhooks.Input{})
		emit(t, db, sc, "orders.order.created", map[string]any{"n": 1})
		d := settled(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Status, webhooks.StatusFailed)
		is.Equal(d.Attempt, 1)
		time.Sleep(100 * time.Millisecond)
		is.Equal(len(rcv.requests()), 1) // a 400 is not retried

		again, err := svc.Retry(ctx, d.ID)
		is.NoErr(err)
		is.Equal(again.Status, webhooks.StatusPending)
		d = allDelivered(t, svc, ctx, hook.ID, 1)[0]
		is.Equal(d.Attempt, 2)
		got := rcv.requests()
		is.Equal(len(got), 2)
		is.Equal(got[0].header.Get("webhook-id"), d.MessageID)
		is.Equal(got[1].header.Get("webhook-id"), d.MessageID)

		_, err = svc.Retry(ctx, d.ID)
		is.True(errors.Is(err, store.ErrConflict)) // a delivered delivery is not retried
		_, err = svc.Retry(ctx, store.NewID())
		is.True(errors.Is(err, store.ErrNotFound))
		otherCtx, _ := storetest.NewScope(t)
		_, err = svc.Retry(otherCtx, d.ID)
		is.True(errors.Is(err, store.ErrNotFound)) // nor by another tenant
	}, webhooks.Migrations)
}

// Two tenants' webhooks on one receiver: each gets only its own tenant's
// events, in order, though the events were emitted interleaved.
func TestQueueTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueEnv(t, db, 50*time.Millisecond)
		rcv := newQueueReceiver(t, 0, nil)
		// Scopes of tenants only: an organization would keep the events
		// apart by itself.
		sc1, sc2 := store.Scope{TenantID: store.NewID()}, store.Scope{TenantID: store.NewID()}
		ctx1, ctx2 := store.WithScope(t.Context(), sc1), store.WithScope(t.Context(), sc2)
		h1, _ := createHook(t, svc, ctx1, rcv.URL+"/t1", webhooks.Input{})
		h2, _ := createHook(t, svc, ctx2, rcv.URL+"/t2", webhooks.Input{})
		const n = 10
		for i := 1; i <= n; i++ {
			emitNumbered(t, db, sc1, "orders.order.created", "t1", i, i)
			emitNumbered(t, db, sc2, "orders.order.created", "t2", i, i)
		}
		waitUntil(t, "the requests", func() bool { return len(rcv.arrivals()) >= 2*n })
		for _, a := range rcv.arrivals() {
			is.Equal(a.path, "/"+a.tenant) // only its own tenant's events
		}
		allDelivered(t, svc, ctx1, h1.ID, n)
		allDelivered(t, svc, ctx2, h2.ID, n)
		is.Equal(len(rcv.arrivals()), 2*n)
		for _, tenant := range []string{"t1", "t2"} {
			is.Equal(numbers(rcv.at("/"+tenant)), upTo(1, n)) // in order
		}
		// Neither tenant sees the other's webhook's deliveries.
		ds, _, err := svc.ListDeliveries(ctx1, webhooks.DeliveryFilter{WebhookID: h2.ID})
		is.NoErr(err)
		is.Equal(len(ds), 0)
	}, webhooks.Migrations)
}
