package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Tests of the delivery queues' machinery: the lease (acquire, release,
// heartbeat), the wake-up flag, claims and the sweep.

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
func queueTestHook(t *testing.T, svc *Service, ctx context.Context, url string) *Webhook {
	t.Helper()
	w, _, err := svc.Create(ctx, Input{Name: "queue", URL: url, SubscribedEvents: []string{"orders.*"}})
	if err != nil {
		t.Fatal(err)
	}
	full, err := loadQueueWebhook(ctx, svc.db, w.TenantID, w.ID)
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
func putQueue(t *testing.T, db *store.DB, w *Webhook, owner *string, leaseUntil *time.Time, queued bool, queuedAt *time.Time) {
	t.Helper()
	mustExec(t, db, `INSERT INTO webhook_queues (webhook_id, tenant_id, owner, lease_until, queued, queued_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		w.ID, w.TenantID, owner, leaseUntil, queued, queuedAt)
}

// putDelivery stores a delivery of a new event to w in the status and
// attempt given.
func putDelivery(t *testing.T, db *store.DB, w *Webhook, eventID, status string, attempt int, nextRetryAt *time.Time) *Delivery {
	t.Helper()
	d := newDelivery(w, eventID, "orders.order.created", []byte(`{"type":"orders.order.created","data":{}}`), db.Now())
	if ok, err := insertDelivery(t.Context(), db, d); err != nil || !ok {
		t.Fatalf("insert delivery: %v %v", ok, err)
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
	got, err := getDelivery(t.Context(), db, store.Scope{TenantID: d.TenantID}, d.ID)
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

// One drain at a time: a held lease is not acquired, and the refused
// acquire sets the flag; the holder's release sees the flag (more work),
// clears it and keeps the lease; the next release lets go. An expired
// lease is taken over; a queue without a row is made and taken.
func TestQueueLease(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		putQueue(t, db, w, nil, nil, false, nil)

		got, err := svc.acquire(ctx, w.TenantID, w.ID, "A")
		is.NoErr(err)
		is.True(got)
		q := readQueue(t, db, w.ID)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)
		is.True(q.leaseUntil != nil && q.leaseUntil.After(db.Now()))

		got, err = svc.acquire(ctx, w.TenantID, w.ID, "B")
		is.NoErr(err)
		is.True(!got) // A holds it
		q = readQueue(t, db, w.ID)
		is.Equal(ownerOf(q), "A")
		is.True(q.queued) // so that A looks again before it stops
		is.True(q.queuedAt != nil)

		more, err := svc.release(ctx, w, "A")
		is.NoErr(err)
		is.True(more) // the flag was set: A drains on
		q = readQueue(t, db, w.ID)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)

		more, err = svc.release(ctx, w, "A")
		is.NoErr(err)
		is.True(!more)
		q = readQueue(t, db, w.ID)
		is.Equal(ownerOf(q), "<none>")
		is.True(q.leaseUntil == nil)
		is.True(!q.queued)

		// Free again: B takes it; once B's lease has expired, C takes over.
		got, err = svc.acquire(ctx, w.TenantID, w.ID, "B")
		is.NoErr(err)
		is.True(got)
		past := db.Now().Add(-time.Second)
		mustExec(t, db, `UPDATE webhook_queues SET lease_until = $2 WHERE webhook_id = $1`, w.ID, past)
		got, err = svc.acquire(ctx, w.TenantID, w.ID, "C")
		is.NoErr(err)
		is.True(got)
		is.Equal(ownerOf(readQueue(t, db, w.ID)), "C")

		// A webhook whose queue has no row yet (a retry of a delivery made
		// before queues existed): the row is made and the lease taken.
		w2 := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/other")
		got, err = svc.acquire(ctx, w2.TenantID, w2.ID, "A")
		is.NoErr(err)
		is.True(got)
		q = readQueue(t, db, w2.ID)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)
	}, Migrations)
}

// A drain whose lease was taken by another does not clobber it on
// release: not the owner, not the flag.
func TestQueueLostLease(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		svc := queueTestService(t, db)
		for _, flagged := range []bool{false, true} {
			is := is.New(t)
			ctx, _ := storetest.NewScope(t)
			w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
			putQueue(t, db, w, nil, nil, false, nil)
			got, err := svc.acquire(ctx, w.TenantID, w.ID, "A")
			is.NoErr(err)
			is.True(got)
			lease := db.Now().Add(time.Hour)
			mustExec(t, db, `UPDATE webhook_queues SET owner = 'B', lease_until = $2, queued = $3 WHERE webhook_id = $1`, w.ID, lease, flagged)

			more, err := svc.release(ctx, w, "A")
			is.NoErr(err)
			is.True(!more) // the queue is B's: A stops
			q := readQueue(t, db, w.ID)
			is.Equal(ownerOf(q), "B")
			is.True(q.leaseUntil != nil && q.leaseUntil.Equal(lease))
			is.Equal(q.queued, flagged) // B's flag is B's to clear
		}
	}, Migrations)
}

// The heartbeat renews its owner's lease, and cancels the drain (with
// errLeaseLost) once another owns the queue. It beats every 5 s.
func TestQueueHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		ctx, _ := storetest.NewScope(t)
		kept := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/kept")
		lost := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/lost")
		a, b := "A", "B"
		start := db.Now().Add(leaseTTL)
		putQueue(t, db, kept, &a, &start, false, nil)
		putQueue(t, db, lost, &b, &start, false, nil) // A's lease was taken by B

		var wg sync.WaitGroup
		beat := func(w *Webhook) (context.Context, chan struct{}) {
			hctx, cancel := context.WithCancelCause(ctx)
			t.Cleanup(func() { cancel(nil) })
			done := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc.heartbeat(hctx, cancel, w.ID, "A", done)
			}()
			return hctx, done
		}
		keptCtx, keptDone := beat(kept)
		lostCtx, lostDone := beat(lost)
		defer close(lostDone)

		select {
		case <-lostCtx.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the heartbeat of a lost lease did not cancel its drain")
		}
		is.True(errors.Is(context.Cause(lostCtx), errLeaseLost))
		is.Equal(ownerOf(readQueue(t, db, lost.ID)), "B")

		// By then the kept lease has had its beat too.
		waitFor := time.Now().Add(30 * time.Second)
		for {
			q := readQueue(t, db, kept.ID)
			if q.leaseUntil.After(start) {
				break
			}
			if time.Now().After(waitFor) {
				t.Fatal("the heartbeat did not renew the lease")
			}
			time.Sleep(50 * time.Millisecond)
		}
		is.Equal(ownerOf(readQueue(t, db, kept.ID)), "A")
		is.NoErr(keptCtx.Err()) // a renewed lease does not cancel
		close(keptDone)
		wg.Wait()
	}, Migrations)
}

// New work enqueues at most one drain per webhook: wake sets the flag and
// enqueues only when the flag was clear and the lease free; work that
// arrives while a drain holds the lease only sets the flag.
func TestQueueWake(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		queueTestEngine(t, db, svc, false) // jobs are stored, not run
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		wake := func() {
			t.Helper()
			if err := db.Tx(ctx, func(tx *store.Tx) error { return svc.wake(ctx, tx, w.TenantID, w.ID) }); err != nil {
				t.Fatal(err)
			}
		}

		wake() // no row yet: made, flagged, a drain enqueued
		q := readQueue(t, db, w.ID)
		is.True(q.queued)
		is.Equal(drainJobs(t, db)[w.ID], 1)
		wake() // a drain is waiting already
		is.Equal(drainJobs(t, db)[w.ID], 1)

		got, err := svc.acquire(ctx, w.TenantID, w.ID, "A") // the drain runs
		is.NoErr(err)
		is.True(got)
		is.True(!readQueue(t, db, w.ID).queued)
		wake() // held: only the flag
		q = readQueue(t, db, w.ID)
		is.True(q.queued)
		is.Equal(ownerOf(q), "A")
		is.Equal(drainJobs(t, db)[w.ID], 1)
		more, err := svc.release(ctx, w, "A")
		is.NoErr(err)
		is.True(more) // the holder drains the new work itself
		more, err = svc.release(ctx, w, "A")
		is.NoErr(err)
		is.True(!more)

		wake() // free and clear again: a second drain
		is.Equal(drainJobs(t, db)[w.ID], 2)
	}, Migrations)
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

		var batch []*claimed
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			batch, err = claim(ctx, tx, w, tx.Now(), claimSize)
			return err
		})
		is.NoErr(err)
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.ID
		}
		is.Equal(ids, []string{d1.ID, d2.ID, d4.ID}) // due ones, in event order
		is.True(batch[0].fresh && !batch[1].fresh && batch[2].fresh)
		for _, c := range batch {
			is.Equal(c.Attempt, 1)
			got := readDelivery(t, db, c.Delivery)
			is.Equal(got.Status, StatusSending)
			is.Equal(got.Attempt, 1) // pending ones start attempt 1; the cut-short one keeps 1
		}
		is.Equal(readDelivery(t, db, d3).Status, StatusPending)
		is.Equal(readDelivery(t, db, d0).Status, StatusDelivered)

		// Only the first was sent (the drain's budget or rate limit ended the
		// batch): the others go back to pending with their earlier attempt.
		ok := http.StatusOK
		err = db.Tx(ctx, func(tx *store.Tx) error {
			return svc.recordBatch(ctx, tx, w, batch, []outcome{{status: &ok}})
		})
		is.NoErr(err)
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
			batch, err = claim(ctx, tx, w, tx.Now(), 1)
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
		past, future, recent, stale := now.Add(-time.Minute), now.Add(10*time.Minute), now.Add(-time.Second), now.Add(-2*staleQueued)
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

// claim's order is its ORDER BY's, not an index's: with the queue index
// dropped (this test's own database), deliveries inserted newest event
// first are still claimed oldest event first.
func TestQueueClaimOrderWithoutIndex(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		mustExec(t, db, `DROP INDEX webhook_deliveries_queue_idx`)
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
		var batch []*claimed
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			batch, err = claim(ctx, tx, w, tx.Now(), claimSize)
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

// A drain letting go of a queue with a retry waiting schedules a drain
// for it (wake_at), unless one is scheduled for then or earlier already.
func TestQueueReleaseSchedulesRetry(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		queueTestEngine(t, db, svc, false) // jobs are stored, not run
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		putQueue(t, db, w, nil, nil, false, nil)
		wakeAt := func() *time.Time {
			t.Helper()
			at, err := store.One(ctx, db, func(s store.Scanner) (*time.Time, error) {
				var at *time.Time
				return at, s.Scan(&at)
			}, `SELECT wake_at FROM webhook_queues WHERE webhook_id = $1`, w.ID)
			if err != nil {
				t.Fatal(err)
			}
			return at
		}
		cycle := func(owner string) {
			t.Helper()
			got, err := svc.acquire(ctx, w.TenantID, w.ID, owner)
			is.NoErr(err)
			is.True(got)
			more, err := svc.release(ctx, w, owner)
			is.NoErr(err)
			is.True(!more)
		}

		cycle("A") // nothing waiting: nothing scheduled
		is.Equal(len(drainJobList(t, db)), 0)
		is.True(wakeAt() == nil)

		later := db.Now().Add(time.Hour)
		putDelivery(t, db, w, store.NewID(), StatusPending, 1, &later)
		cycle("B")
		jobsNow := drainJobList(t, db)
		is.Equal(len(jobsNow), 1)
		is.Equal(jobsNow[0].WebhookID, w.ID)
		is.Equal(jobsNow[0].state, "scheduled")
		is.True(wakeAt() != nil && wakeAt().Equal(later))

		cycle("C") // already scheduled for that time
		is.Equal(len(drainJobList(t, db)), 1)

		sooner := db.Now().Add(30 * time.Minute)
		putDelivery(t, db, w, store.NewID(), StatusPending, 1, &sooner)
		cycle("D") // an earlier retry: one more drain, for it
		is.Equal(len(drainJobList(t, db)), 2)
		is.True(wakeAt().Equal(sooner))
	}, Migrations)
}

// A drain whose lease is taken over while it sends records nothing and
// claims nothing more: the new holder sends the deliveries again, as the
// same attempts with the same message ids.
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
			first := len(got) == 1
			mu.Unlock()
			if first { // B takes the queue over while A's first send is under way
				if _, err := db.Exec(context.Background(), `UPDATE webhook_queues SET owner = 'B' WHERE webhook_id = $1`, hookID); err != nil {
					t.Error(err)
				}
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
		putQueue(t, db, w, nil, nil, false, nil)
		ok, err := svc.acquire(ctx, w.TenantID, w.ID, "A")
		is.NoErr(err)
		is.True(ok)

		deadline := time.Now().Add(time.Minute)
		_, _, err = svc.drainBatch(ctx, w, "A", deadline)
		is.NoErr(err)
		is.Equal(len(requests()), 2) // both claimed before the takeover, both sent
		for _, d := range []*Delivery{first, second} {
			got := readDelivery(t, db, d)
			is.Equal(got.Status, StatusSending) // A's outcomes not recorded
			is.Equal(got.Attempt, 1)
		}
		sent, _, err := svc.drainBatch(ctx, w, "A", deadline)
		is.NoErr(err)
		is.Equal(sent, 0) // A claims nothing more
		is.Equal(len(requests()), 2)

		// B (its lease live) sends them again: the same attempt, the same ids.
		mustExec(t, db, `UPDATE webhook_queues SET lease_until = $2 WHERE webhook_id = $1`, w.ID, db.Now().Add(leaseTTL))
		sent, _, err = svc.drainBatch(ctx, w, "B", deadline)
		is.NoErr(err)
		is.Equal(sent, 2)
		for _, d := range []*Delivery{first, second} {
			got := readDelivery(t, db, d)
			is.Equal(got.Status, StatusDelivered)
			is.Equal(got.Attempt, 1)
		}
		is.Equal(requests(), []string{first.MessageID, second.MessageID, first.MessageID, second.MessageID})
	}, Migrations)
}

// A drain that died holding the lease, and new work woken while its
// lease was still live: the wake found the lease held, so it set the flag
// and enqueued nothing. Once the lease has expired, the sweep restarts
// the queue (an owner whose lease expired is a dead drain, whatever the
// flag says), within about leaseTTL + sweepEvery. (Found by this test: a
// fresh flag used to read as "a drain is waiting", leaving the queue for
// a minute.)
func TestQueueSweepDeadDrainWithNewWork(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		queueTestEngine(t, db, svc, false) // jobs are stored, not run
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		putDelivery(t, db, w, store.NewID(), StatusSending, 1, nil) // cut short by the dead drain
		dead, live := "dead", db.Now().Add(leaseTTL)
		putQueue(t, db, w, &dead, &live, false, nil)

		// New work while the dead drain's lease still runs.
		putDelivery(t, db, w, store.NewID(), StatusPending, 0, nil)
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error { return svc.wake(ctx, tx, w.TenantID, w.ID) }))
		is.Equal(drainJobs(t, db)[w.ID], 0) // held: only the flag
		is.True(readQueue(t, db, w.ID).queued)

		// The lease expires (no heartbeat); the sweep comes by.
		mustExec(t, db, `UPDATE webhook_queues SET lease_until = $2 WHERE webhook_id = $1`, w.ID, db.Now().Add(-time.Second))
		is.NoErr(svc.sweep(ctx))
		n := drainJobs(t, db)[w.ID]
		is.Equal(n, 1) // restarted
	}, Migrations)
}

// A retry that comes due between a drain's last claim (nothing due yet)
// and its release is drained on, not left for the sweep. (Found by this
// test: release used to schedule a drain only for retries still in the
// future, so such a retry waited up to 15 s; with a short retry delay
// that made TestDeliveryExpires flaky on SQLite under -race.)
func TestQueueReleaseWithRetryJustDue(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := queueTestService(t, db)
		queueTestEngine(t, db, svc, false) // jobs are stored, not run
		ctx, _ := storetest.NewScope(t)
		w := queueTestHook(t, svc, ctx, "http://127.0.0.1:9/hook")
		putQueue(t, db, w, nil, nil, false, nil)
		got, err := svc.acquire(ctx, w.TenantID, w.ID, "A")
		is.NoErr(err)
		is.True(got)
		// The drain's last claim found nothing due; since then this retry
		// has come due.
		due := db.Now().Add(-10 * time.Millisecond)
		putDelivery(t, db, w, store.NewID(), StatusPending, 1, &due)

		more, err := svc.release(ctx, w, "A")
		is.NoErr(err)
		jobs := drainJobs(t, db)[w.ID]
		t.Logf("release: more=%v, drain jobs=%d, queue owner=%s", more, jobs, ownerOf(readQueue(t, db, w.ID)))
		is.True(more) // the due retry is drained on
		is.Equal(ownerOf(readQueue(t, db, w.ID)), "A")
	}, Migrations)
}
