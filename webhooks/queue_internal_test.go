package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Tests of what the webhooks' delivery queues add to jobs/drain (whose
// own tests cover the lease, heartbeat, wake-up flag and sweep): claims,
// a drain that lost its lease, retries waking the queue, and the sweep
// resending a dead drain's deliveries.

func queueTestService(t *testing.T, db *store.DB) *Service {
	t.Helper()
	svc, err := New(db, Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// queueTestEngine registers svc's jobs on a new engine, started when
// start is set; the test's end stops it.
func queueTestEngine(t *testing.T, db *store.DB, svc *Service, start bool) *jobs.Engine {
	t.Helper()
	e, err := jobs.New(t.Context(), db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RegisterJobs(e); err != nil {
		t.Fatal(err)
	}
	if start {
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
		svc.Wait()
	})
	return e
}

// queueTestHook creates a webhook of the scope in ctx, to url, and
// returns it as a drain loads it (with its sealed secrets).
func queueTestHook(t *testing.T, svc *Service, ctx context.Context, url string) *SealedWebhook {
	t.Helper()
	w, _, err := svc.Create(ctx, Input{Name: "queue", URL: url, SubscribedEvents: []string{"orders.*"}})
	if err != nil {
		t.Fatal(err)
	}
	full, err := svc.store.SealedWebhook(ctx, svc.db, w.TenantID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	return full
}

// queueRow is a webhook_queues row.
type queueRow struct {
	owner      *string
	leaseUntil *time.Time
	queued     bool
	queuedAt   *time.Time
}

func readQueue(t *testing.T, db *store.DB, webhookID string) queueRow {
	t.Helper()
	q, err := store.One(t.Context(), db, func(s store.Scanner) (queueRow, error) {
		var q queueRow
		return q, s.Scan(&q.owner, &q.leaseUntil, &q.queued, &q.queuedAt)
	}, `SELECT owner, lease_until, queued, queued_at FROM webhook_queues WHERE webhook_id = $1`, webhookID)
	if err != nil {
		t.Fatalf("read the queue of %s: %v", webhookID, err)
	}
	return q
}

func ownerOf(q queueRow) string {
	if q.owner == nil {
		return "<none>"
	}
	return *q.owner
}

func mustExec(t *testing.T, db *store.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// putQueue stores w's queue row as given.
func putQueue(t *testing.T, db *store.DB, w *SealedWebhook, owner *string, leaseUntil *time.Time, queued bool, queuedAt *time.Time) {
	t.Helper()
	mustExec(t, db, `INSERT INTO webhook_queues (webhook_id, tenant_id, owner, lease_until, queued, queued_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		w.ID, w.TenantID, owner, leaseUntil, queued, queuedAt)
}

// putDelivery stores a delivery of a new event to w in the status and
// attempt given.
func putDelivery(t *testing.T, db *store.DB, w *SealedWebhook, eventID, status string, attempt int, nextRetryAt *time.Time) *Delivery {
	t.Helper()
	d := newDelivery(w.Webhook, eventID, "orders.order.created", []byte(`{"type":"orders.order.created","data":{}}`), db.Now())
	if n, err := NewSQLStore().InsertDeliveries(t.Context(), db, []*Delivery{d}); err != nil || n != 1 {
		t.Fatalf("insert delivery: %v %v", n, err)
	}
	var last *time.Time
	if attempt > 0 {
		at := db.Now().Add(-time.Minute)
		last = &at
	}
	mustExec(t, db, `UPDATE webhook_deliveries SET status = $3, attempt = $4, next_retry_at = $5, last_attempt_at = $6 WHERE tenant_id = $1 AND id = $2`,
		d.TenantID, d.ID, status, attempt, nextRetryAt, last)
	d.Status, d.Attempt, d.NextRetryAt = status, attempt, nextRetryAt
	return d
}

func readDelivery(t *testing.T, db *store.DB, d *Delivery) *Delivery {
	t.Helper()
	got, err := NewSQLStore().GetDelivery(t.Context(), db, store.Scope{TenantID: d.TenantID}, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// drainJobs counts the stored drain jobs by webhook.
func drainJobs(t *testing.T, db *store.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, j := range drainJobList(t, db) {
		out[j.WebhookID]++
	}
	return out
}

// drainJob is a stored drain job: its args and River state.
type drainJob struct {
	DrainJob
	state string
}

func drainJobList(t *testing.T, db *store.DB) []drainJob {
	t.Helper()
	table, args := "river_job", "json(args)"
	if db.Dialect().Name() == "postgres" {
		table, args = `"`+db.Schema()+`_river".river_job`, "args::text"
	}
	all, err := store.Many(t.Context(), db, func(s store.Scanner) (drainJob, error) {
		var a string
		var j drainJob
		if err := s.Scan(&a, &j.state); err != nil {
			return j, err
		}
		return j, json.Unmarshal([]byte(a), &j.DrainJob)
	}, "SELECT "+args+", state FROM "+table+" WHERE kind = $1 ORDER BY id", DrainJob{}.Kind())
	if err != nil {
		t.Fatalf("list drain jobs: %v", err)
	}
	return all
}

// claim takes the due deliveries in order of their events (not of their
// insertion), marks them sending, and starts a new attempt only for those
// that were pending; a batch cut short gives the unsent ones back, each
// with the attempt it had before the claim.
func TestQueueClaimAndUnclaim(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		ev := make([]string, 5)
		for i := range ev {
			ev[i] = store.NewID() // ev[0] < ev[1] < …
		}
		later := db.Now().Add(time.Hour)
		// Inserted newest event first, so that insertion order is not event order.
		d4 := putDelivery(t, db, w, ev[4], StatusPending, 0, nil)
		d3 := putDelivery(t, db, w, ev[3], StatusPending, 1, &later) // a retry not due yet
		d2 := putDelivery(t, db, w, ev[2], StatusSending, 1, nil)    // cut short by a dead drain
		d1 := putDelivery(t, db, w, ev[1], StatusPending, 0, nil)
		d0 := putDelivery(t, db, w, ev[0], StatusDelivered, 1, nil) // done: not claimed

		var batch []*Delivery
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			batch, err = svc.store.ClaimDeliveries(ctx, tx, w.TenantID, w.ID, tx.Now(), claimSize)
			return err
		})
		is.NoErr(err)
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.ID
		}
		is.Equal(ids, []string{d1.ID, d2.ID, d4.ID}) // due ones, in event order
		for _, c := range batch {
			is.Equal(c.Attempt, 1)
			got := readDelivery(t, db, c)
			is.Equal(got.Status, StatusSending)
			is.Equal(got.Attempt, 1) // pending ones start attempt 1; the cut-short one keeps 1
		}
		is.Equal(readDelivery(t, db, d3).Status, StatusPending)
		is.Equal(readDelivery(t, db, d0).Status, StatusDelivered)

		// Only the first was sent (the drain's budget or rate limit ended the
		// batch): the others go back to pending with their earlier attempt.
		ok := http.StatusOK
		err = db.Tx(ctx, func(tx *store.Tx) error {
			_, err := svc.record(ctx, tx, w.Webhook, []sent{{batch[0], outcome{status: &ok}}}, results{})
			return err
		})
		is.NoErr(err)
		k := queueKey(w.TenantID, w.ID)
		putQueue(t, db, w, nil, nil, false, nil)
		held, err := svc.store.Acquire(ctx, db, k, "A", db.Now(), db.Now().Add(time.Minute))
		is.NoErr(err)
		is.True(held)
		is.NoErr(svc.unclaim(k, "B", batch[1:])) // B does not hold the queue: nothing changes
		is.Equal(readDelivery(t, db, d2).Status, StatusSending)
		is.NoErr(svc.unclaim(k, "A", batch[1:]))
		got := readDelivery(t, db, d1)
		is.Equal(got.Status, StatusDelivered)
		is.Equal(got.Attempt, 1)
		got = readDelivery(t, db, d2)
		is.Equal(got.Status, StatusPending)
		is.Equal(got.Attempt, 0) // the cut-short attempt given back: its next claim is attempt 1 again
		got = readDelivery(t, db, d4)
		is.Equal(got.Status, StatusPending)
		is.Equal(got.Attempt, 0) // the claim's attempt given back

		// A limit takes the first ones only.
		err = db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			batch, err = svc.store.ClaimDeliveries(ctx, tx, w.TenantID, w.ID, tx.Now(), 1)
			return err
		})
		is.NoErr(err)
		is.Equal(len(batch), 1)
		is.Equal(batch[0].ID, d2.ID)
	}, Migrations)
}

// The sweep restarts a queue whose drain died (a delivery left sending, a
// lease expired, no flag) and one flagged long ago; the cut-short delivery
// is sent again as the same attempt with its message id. A queue with a
// live lease, or flagged recently (a drain is waiting), is left alone.
func TestQueueSweep(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		var mu sync.Mutex
		got := map[string][]string{} // path → webhook-id headers
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[r.URL.Path] = append(got[r.URL.Path], r.Header.Get("webhook-id"))
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		requests := func(path string) []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), got[path]...)
		}
		queueTestEngine(t, db, svc, true)
		ctx, _ := storetest.NewScope(t)
		now := db.Now()
		past, future, recent, stale := now.Add(-time.Minute), now.Add(10*time.Minute), now.Add(-time.Second), now.Add(-2*drain.DefaultStaleQueued)
		dead, alive := "dead", "alive"

		deadHook := queueTestHook(t, svc, ctx, srv.URL+"/dead")
		deadD := putDelivery(t, db, deadHook, store.NewID(), StatusSending, 1, nil)
		putQueue(t, db, deadHook, &dead, &past, false, nil)

		staleHook := queueTestHook(t, svc, ctx, srv.URL+"/stale")
		staleD := putDelivery(t, db, staleHook, store.NewID(), StatusPending, 0, nil)
		putQueue(t, db, staleHook, nil, nil, true, &stale) // its wake-up was lost

		liveHook := queueTestHook(t, svc, ctx, srv.URL+"/live")
		liveD := putDelivery(t, db, liveHook, store.NewID(), StatusSending, 1, nil)
		putQueue(t, db, liveHook, &alive, &future, false, nil)

		waitingHook := queueTestHook(t, svc, ctx, srv.URL+"/waiting")
		waitingD := putDelivery(t, db, waitingHook, store.NewID(), StatusPending, 0, nil)
		putQueue(t, db, waitingHook, nil, nil, true, &recent) // a drain is on its way

		is.NoErr(svc.sweep(ctx))
		jobsBy := drainJobs(t, db)
		is.Equal(jobsBy[deadHook.ID], 1)
		is.Equal(jobsBy[staleHook.ID], 1)
		is.Equal(jobsBy[liveHook.ID], 0)    // its drain is alive
		is.Equal(jobsBy[waitingHook.ID], 0) // its drain is on its way
		is.True(!readQueue(t, db, liveHook.ID).queued)

		deadline := time.Now().Add(30 * time.Second)
		for readDelivery(t, db, deadD).Status != StatusDelivered || readDelivery(t, db, staleD).Status != StatusDelivered {
			if time.Now().After(deadline) {
				t.Fatalf("swept deliveries not delivered: %s, %s", readDelivery(t, db, deadD).Status, readDelivery(t, db, staleD).Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		d := readDelivery(t, db, deadD)
		is.Equal(d.Attempt, 1)                                 // the cut-short attempt, made again
		is.Equal(requests("/dead"), []string{deadD.MessageID}) // with its message id
		is.Equal(readDelivery(t, db, staleD).Attempt, 1)
		is.Equal(requests("/stale"), []string{staleD.MessageID})

		time.Sleep(time.Second) // the others stay as they were
		is.Equal(readDelivery(t, db, liveD).Status, StatusSending)
		is.Equal(readDelivery(t, db, waitingD).Status, StatusPending)
		is.Equal(len(requests("/live")), 0)
		is.Equal(len(requests("/waiting")), 0)
		q := readQueue(t, db, liveHook.ID)
		is.Equal(ownerOf(q), "alive")
		is.True(!q.queued)
		q = readQueue(t, db, waitingHook.ID)
		is.True(q.queued && q.queuedAt != nil && q.queuedAt.Equal(recent))
	}, Migrations)
}

// claim's order is its ORDER BY's, not an index's: with the indexes of
// the deliveries still to send dropped (this test's own database),
// deliveries inserted newest event first are still claimed oldest event
// first.
func TestQueueClaimOrderWithoutIndex(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		mustExec(t, db, `DROP INDEX webhook_deliveries_fresh_idx`)
		mustExec(t, db, `DROP INDEX webhook_deliveries_retry_idx`)
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		ev := make([]string, 8)
		for i := range ev {
			ev[i] = store.NewID()
		}
		want := make([]string, len(ev))
		for i := len(ev) - 1; i >= 0; i-- {
			want[i] = putDelivery(t, db, w, ev[i], StatusPending, 0, nil).ID
		}
		var batch []*Delivery
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			batch, err = svc.store.ClaimDeliveries(ctx, tx, w.TenantID, w.ID, tx.Now(), claimSize)
			return err
		})
		is.NoErr(err)
		got := make([]string, len(batch))
		for i, c := range batch {
			got[i] = c.ID
		}
		is.Equal(got, want) // in event order
	}, Migrations)
}

// Retry wakes the delivery's queue: the failed delivery is pending again,
// the queue flagged and one drain enqueued.
func TestQueueRetryWakes(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		queueTestEngine(t, db, svc, false) // jobs are stored, not run
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		d := putDelivery(t, db, w, store.NewID(), StatusFailed, 1, nil)
		is.Equal(drainJobs(t, db)[w.ID], 0)

		again, err := svc.Retry(ctx, d.ID)
		is.NoErr(err)
		is.Equal(again.Status, StatusPending)
		is.Equal(again.Attempt, 1)
		is.Equal(again.MaxAttempts, 2) // one more attempt
		is.True(again.NextRetryAt != nil && !again.NextRetryAt.After(db.Now()))
		is.True(readQueue(t, db, w.ID).queued)
		is.Equal(drainJobs(t, db)[w.ID], 1)
	}, Migrations)
}

// A drain whose lease is taken over while it sends records nothing, stops
// sending once a record finds the lease gone (here the first's record,
// which ends while the second is sent) and claims nothing more: the new
// holder sends the deliveries again, as the same attempts with the same
// message ids.
func TestQueueDrainAfterLeaseLost(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		var mu sync.Mutex
		var got []string // webhook-id headers
		var hookID string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("webhook-id"))
			n := len(got)
			mu.Unlock()
			switch n {
			case 1: // B takes the queue over while A's first send is under way
				if _, err := db.Exec(context.Background(), `UPDATE webhook_queues SET owner = 'B' WHERE webhook_id = $1`, hookID); err != nil {
					t.Error(err)
				}
			case 2: // A's record of the first ends meanwhile
				time.Sleep(300 * time.Millisecond)
			}
		}))
		t.Cleanup(srv.Close)
		requests := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), got...)
		}
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, srv.URL)
		hookID = w.ID
		first := putDelivery(t, db, w, store.NewID(), StatusPending, 0, nil)
		second := putDelivery(t, db, w, store.NewID(), StatusPending, 0, nil)
		third := putDelivery(t, db, w, store.NewID(), StatusPending, 0, nil)
		all := []*Delivery{first, second, third}
		putQueue(t, db, w, nil, nil, false, nil)
		ok, err := svc.store.Acquire(ctx, db, queueKey(w.TenantID, w.ID), "A", db.Now(), db.Now().Add(drain.DefaultLeaseTTL))
		is.NoErr(err)
		is.True(ok)

		deadline := time.Now().Add(time.Minute)
		_, _, err = svc.drainBatch(ctx, w, "A", deadline)
		is.NoErr(err)
		// All three claimed before the takeover; the first's record finds
		// the lease gone while the second is sent, and the third is not
		// sent.
		is.Equal(requests(), []string{first.MessageID, second.MessageID})
		for _, d := range all {
			got := readDelivery(t, db, d)
			is.Equal(got.Status, StatusSending) // A's outcomes not recorded
			is.Equal(got.Attempt, 1)
		}
		sent, _, err := svc.drainBatch(ctx, w, "A", deadline)
		is.NoErr(err)
		is.Equal(sent, 0) // A claims nothing more
		is.Equal(len(requests()), 2)

		// B (its lease live) sends them again: the same attempt, the same ids.
		mustExec(t, db, `UPDATE webhook_queues SET lease_until = $2 WHERE webhook_id = $1`, w.ID, db.Now().Add(drain.DefaultLeaseTTL))
		sent, _, err = svc.drainBatch(ctx, w, "B", deadline)
		is.NoErr(err)
		is.Equal(sent, 3)
		for _, d := range all {
			got := readDelivery(t, db, d)
			is.Equal(got.Status, StatusDelivered)
			is.Equal(got.Attempt, 1)
		}
		is.Equal(requests(), []string{first.MessageID, second.MessageID, first.MessageID, second.MessageID, third.MessageID})
	}, Migrations)
}

// Start runs the queues' takeover in the process: a queue whose holder
// died (its lease lapsed, a delivery left sending) is drained on within
// seconds, the same attempt with the same message id, without the
// periodic SweepJob (15 s away); a second Start does nothing and Stop
// ends it. Start needs RegisterJobs first.
func TestQueueStartTakesOver(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, _ := storetest.NewScope(t)
		svc := queueTestService(t, db)
		is.True(svc.Start(ctx) != nil) // no job engine to enqueue drains on
		var mu sync.Mutex
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("webhook-id"))
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		queueTestEngine(t, db, svc, true)
		w := queueTestHook(t, svc, ctx, srv.URL)
		d := putDelivery(t, db, w, store.NewID(), StatusSending, 1, nil)
		dead, lapsed := "deadhost:1:00000000/"+store.NewID(), db.Now().Add(-time.Second)
		putQueue(t, db, w, &dead, &lapsed, false, nil)

		owners, err := svc.QueueOwners(ctx, w.TenantID)
		is.NoErr(err)
		is.Equal(len(owners), 1)
		is.Equal(owners[0].Holder, "deadhost:1:00000000")
		is.True(!owners[0].Live && owners[0].Due == 1 && owners[0].Lag > 0)

		start := time.Now()
		is.NoErr(svc.Start(ctx))
		is.NoErr(svc.Start(ctx))
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		for readDelivery(t, db, d).Status != StatusDelivered {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("the dead holder's queue was not drained on within 10 s: %+v", readQueue(t, db, w.ID))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("drained on %v after Start", time.Since(start).Round(time.Millisecond))
		is.Equal(readDelivery(t, db, d).Attempt, 1)
		mu.Lock()
		is.Equal(got, []string{d.MessageID})
		mu.Unlock()
		stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		is.NoErr(svc.Stop(stopCtx))
		is.NoErr(svc.Stop(stopCtx)) // once stopped, Stop only waits for wake-ups
	}, Migrations)
}
