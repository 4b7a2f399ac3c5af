package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

type leaseArgs struct {
	N int `json:"n"`
}

func (leaseArgs) Kind() string { return "test.lease" }

// leaseTTL is the tests' lease: renewals and sweeps every 100 ms.
const testLeaseTTL = 500 * time.Millisecond

func leaseEngine(t *testing.T, db *store.DB, queue string, workers int, w Worker[leaseArgs]) *Engine {
	t.Helper()
	return leaseEngineTTL(t, db, testLeaseTTL, queue, workers, w)
}

// leaseEngineTTL is leaseEngine with leases of ttl.
func leaseEngineTTL(t *testing.T, db *store.DB, ttl time.Duration, queue string, workers int, w Worker[leaseArgs]) *Engine {
	t.Helper()
	e, err := New(t.Context(), db, Config{LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if w != nil {
		if err := Register(e, w, &RegisterOpts{Queue: queue, Workers: workers}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leaseOf(t *testing.T, db *store.DB, id int64) (run, crashes int, holder *string) {
	t.Helper()
	err := db.QueryRow(t.Context(), `SELECT run, crashes, holder FROM job_leases WHERE job_id = $1`, id).Scan(&run, &crashes, &holder)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return run, crashes, holder
}

// A process stops renewing the lease of the job it runs (as if killed;
// its worker goes on, as a stalled process's would). Another process
// sweeps the lapsed lease and runs the job; its run completes the job.
// The first process's run, resumed, finds its context cancelled with
// ErrLeaseLost, Fence refuses its writes, and its completion is refused:
// the job completed once, by the second run, with the takeover recorded
// among its errors.
func TestLeaseFailover(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		started, release := make(chan struct{}), make(chan struct{})
		var lateCause, lateFence atomic.Value
		var runsA, runsB, fencedB atomic.Int32
		a := leaseEngine(t, db, "lease_q", 1, WorkFunc[leaseArgs](func(ctx context.Context, job *Job[leaseArgs]) error {
			runsA.Add(1)
			close(started)
			<-release
			<-ctx.Done() // the renewal that finds the lease passed on cancels it
			lateCause.Store(context.Cause(ctx))
			lateFence.Store(db.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) error { return Fence(ctx, tx) }))
			return nil // completes, late
		}))
		id, err := a.Enqueue(ctx, leaseArgs{N: 1}, &Opts{Queue: "lease_q"})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		eventually(t, "the first run's lease row", func() bool { _, _, h := leaseOf(t, db, id); return h != nil })
		a.leasesFrozen.Store(true) // "killed": no renewals, no sweeps

		leaseEngine(t, db, "lease_q", 2, WorkFunc[leaseArgs](func(ctx context.Context, job *Job[leaseArgs]) error {
			runsB.Add(1)
			if job.Run != 2 {
				t.Errorf("the second run has run number %d, want 2", job.Run)
			}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return Fence(ctx, tx) }); err != nil {
				t.Errorf("Fence in the live run: %v", err)
			} else {
				fencedB.Add(1)
			}
			return nil
		}))
		var info *Info
		eventually(t, "the job completed by the second process", func() bool {
			info, err = a.Get(ctx, id)
			return err == nil && info.State == StateCompleted
		})
		if runsB.Load() != 1 || fencedB.Load() != 1 {
			t.Errorf("the second process ran the job %d times (%d fenced), want once", runsB.Load(), fencedB.Load())
		}
		if len(info.Errors) != 1 || !strings.Contains(info.Errors[0], "stopped renewing the job's lease") || !strings.Contains(info.Errors[0], "run again") {
			t.Errorf("errors %q, want the takeover", info.Errors)
		}
		if run, crashes, holder := leaseOf(t, db, id); run != 2 || crashes != 1 || holder != nil {
			t.Errorf("lease row: run %d, crashes %d, holder %v; want run 2, one crash, released", run, crashes, holder)
		}

		// The first process comes back.
		a.leasesFrozen.Store(false)
		close(release)
		eventually(t, "the late run to end", func() bool { return lateFence.Load() != nil })
		if c, _ := lateCause.Load().(error); !errors.Is(c, ErrLeaseLost) {
			t.Errorf("the late run's context ended with %v, want ErrLeaseLost", c)
		}
		if f, _ := lateFence.Load().(error); !errors.Is(f, ErrLeaseLost) {
			t.Errorf("Fence in the late run: %v, want ErrLeaseLost", f)
		}
		time.Sleep(3 * testLeaseTTL / 5) // let its outcome be recorded, were it to be
		info, err = a.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != StateCompleted || len(info.Errors) != 1 || runsA.Load() != 1 {
			t.Errorf("after the late run: %s with errors %q (first process ran it %d times)", info.State, info.Errors, runsA.Load())
		}

		// The hourly clean-up removes the lease rows of finished jobs.
		if n, err := a.deleteLeases(ctx, db.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Errorf("deleteLeases: %d, %v; want the completed job's row", n, err)
		}
	})
}

// A job whose process stops renewing its lease on every run (it kills
// its worker) is run again twice, then parked with the error: discarded,
// never run a fourth time.
func TestLeaseParksAfterThreeCrashes(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		release := make(chan struct{})
		var mu sync.Mutex
		var runs []int
		a := leaseEngine(t, db, "crashy", 5, WorkFunc[leaseArgs](func(ctx context.Context, job *Job[leaseArgs]) error {
			mu.Lock()
			runs = append(runs, job.Run)
			mu.Unlock()
			<-release
			return nil
		}))
		a.leasesFrozen.Store(true) // every run "dies" at once
		t.Cleanup(func() { close(release) })
		// The sweeping process does not work the queue.
		leaseEngine(t, db, "", 0, nil)

		id, err := a.Enqueue(ctx, leaseArgs{N: 2}, &Opts{Queue: "crashy"})
		if err != nil {
			t.Fatal(err)
		}
		var info *Info
		eventually(t, "the job parked", func() bool {
			info, err = a.Get(ctx, id)
			return err == nil && info.Finalized()
		})
		if info.State != StateDiscarded || len(info.Errors) != ParkAfterCrashes {
			t.Fatalf("the job is %s with errors %q, want discarded after %d", info.State, info.Errors, ParkAfterCrashes)
		}
		if last := info.Errors[len(info.Errors)-1]; !strings.Contains(last, "parked after 3") {
			t.Errorf("last error %q, want the parking", last)
		}
		time.Sleep(2 * testLeaseTTL)
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != ParkAfterCrashes || runs[0] != 1 || runs[2] != 3 {
			t.Errorf("runs %v, want 1, 2, 3", runs)
		}
	})
}

// A job running longer than its lease, renewing it, is never taken over,
// and its snoozes (which give River's attempt back) still number its runs
// one higher each time.
func TestLeaseRenewedAndSnoozed(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		var mu sync.Mutex
		var runs []int
		// Leases of 1.5 s, renewed while each run lasts two of them, so
		// that a renewal delayed by a loaded machine does not lapse.
		const ttl = 3 * testLeaseTTL
		a := leaseEngineTTL(t, db, ttl, "long", 2, WorkFunc[leaseArgs](func(ctx context.Context, job *Job[leaseArgs]) error {
			mu.Lock()
			runs = append(runs, job.Run)
			n := len(runs)
			mu.Unlock()
			time.Sleep(2 * ttl)
			if err := db.Tx(ctx, func(tx *store.Tx) error { return Fence(ctx, tx) }); err != nil {
				return err
			}
			if n < 3 {
				return Snooze(0)
			}
			return nil
		}))
		leaseEngineTTL(t, db, ttl, "", 0, nil) // another process sweeping
		id, err := a.Enqueue(ctx, leaseArgs{N: 3}, &Opts{Queue: "long"})
		if err != nil {
			t.Fatal(err)
		}
		var info *Info
		eventually(t, "the job completed", func() bool {
			info, err = a.Get(ctx, id)
			return err == nil && info.Finalized()
		})
		mu.Lock()
		defer mu.Unlock()
		if info.State != StateCompleted || len(info.Errors) != 0 || len(runs) != 3 || runs[0] != 1 || runs[1] != 2 || runs[2] != 3 {
			t.Errorf("%s with errors %q after runs %v; want completed without errors after runs 1, 2, 3", info.State, info.Errors, runs)
		}
	})
}
