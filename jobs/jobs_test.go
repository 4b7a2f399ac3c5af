package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

type noteArgs struct {
	Note string `json:"note"`
}

func (noteArgs) Kind() string { return "test.note" }

// recorder is a worker that records the notes it works.
type recorder struct {
	mu    sync.Mutex
	notes []string
	fn    func(ctx context.Context, job *jobs.Job[noteArgs]) error
}

func (r *recorder) Work(ctx context.Context, job *jobs.Job[noteArgs]) error {
	if r.fn != nil {
		if err := r.fn(ctx, job); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.notes = append(r.notes, job.Args.Note)
	r.mu.Unlock()
	return nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...)
}

func newEngine(t *testing.T, db *store.DB, w jobs.Worker[noteArgs]) *jobs.Engine {
	t.Helper()
	e, err := jobs.New(t.Context(), db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if w != nil {
		if err := jobs.Register(e, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func start(t *testing.T, e *jobs.Engine) {
	t.Helper()
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// waitFor polls cond until it holds or 15 seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitState(t *testing.T, e *jobs.Engine, id int64, want jobs.State) *jobs.Info {
	t.Helper()
	var info *jobs.Info
	waitFor(t, fmt.Sprintf("job %d to be %s", id, want), func() bool {
		var err error
		info, err = e.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return info.State == want
	})
	return info
}

func TestEnqueueInTransaction(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		w := &recorder{}
		e := newEngine(t, db, w)
		start(t, e)

		var rolledBack int64
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			rolledBack, err = e.EnqueueTx(ctx, tx, noteArgs{"rolled back"}, nil)
			is.NoErr(err)
			return errors.New("roll back")
		})
		is.True(err != nil)

		var committed int64
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			committed, err = e.EnqueueTx(ctx, tx, noteArgs{"committed"}, nil)
			return err
		}))
		info := waitState(t, e, committed, jobs.StateCompleted)
		is.Equal(info.Attempt, 1)
		time.Sleep(100 * time.Millisecond) // give a wrongly stored job time to run too
		is.Equal(w.seen(), []string{"committed"})
		// SQLite may hand the rolled-back job's id to the next insert; either
		// way no stored job carries the rolled-back payload.
		if info, err := e.Get(ctx, rolledBack); err == nil {
			is.Equal(string(info.Args), `{"note":"committed"}`)
		} else {
			is.True(errors.Is(err, jobs.ErrUnknownJob))
		}
	})
}

type retryingWorker struct {
	recorder
	attempts atomic.Int32
}

func (w *retryingWorker) NextRetry(job *jobs.Job[noteArgs]) time.Time {
	return time.Now().Add(50 * time.Millisecond)
}

func TestRetryScheduleAndCancel(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		w := &retryingWorker{}
		w.fn = func(ctx context.Context, job *jobs.Job[noteArgs]) error {
			w.attempts.Add(1)
			switch job.Args.Note {
			case "flaky":
				if job.Attempt < 3 {
					return fmt.Errorf("attempt %d failed", job.Attempt)
				}
				if len(job.Errors) != 2 {
					return jobs.Cancel(fmt.Errorf("want 2 earlier errors, got %v", job.Errors))
				}
			case "hopeless":
				return jobs.Cancel(errors.New("cannot ever work"))
			}
			return nil
		}
		e := newEngine(t, db, w)
		start(t, e)

		flaky, err := e.Enqueue(ctx, noteArgs{"flaky"}, nil)
		is.NoErr(err)
		info := waitState(t, e, flaky, jobs.StateCompleted)
		is.Equal(info.Attempt, 3)
		is.Equal(info.Errors, []string{"attempt 1 failed", "attempt 2 failed"})

		hopeless, err := e.Enqueue(ctx, noteArgs{"hopeless"}, nil)
		is.NoErr(err)
		info = waitState(t, e, hopeless, jobs.StateCancelled)
		is.Equal(info.Attempt, 1) // not retried
		is.True(info.Finalized())

		later, err := e.Enqueue(ctx, noteArgs{"later"}, &jobs.Opts{ScheduledAt: time.Now().Add(time.Hour)})
		is.NoErr(err)
		info, err = e.Cancel(ctx, later)
		is.NoErr(err)
		is.Equal(info.State, jobs.StateCancelled)
		is.Equal(w.seen(), []string{"flaky"})

		_, err = e.Cancel(ctx, 987654321)
		is.True(errors.Is(err, jobs.ErrUnknownJob))
	})
}

func TestProgressAndCancelWhileRunning(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		w := &recorder{}
		w.fn = func(ctx context.Context, job *jobs.Job[noteArgs]) error {
			for step := 1; ; step++ {
				if err := jobs.Progress(ctx, map[string]int{"step": step}); err != nil {
					return err
				}
				cancelled, err := jobs.CancelRequested(ctx)
				if err != nil {
					return err
				}
				if cancelled {
					return jobs.Cancel(errors.New("cancelled by request"))
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		e := newEngine(t, db, w)
		start(t, e)

		id, err := e.Enqueue(ctx, noteArgs{"long"}, nil)
		is.NoErr(err)
		waitFor(t, "progress while running", func() bool {
			info, err := e.Get(ctx, id)
			is.NoErr(err)
			var p struct{ Step int }
			_ = json.Unmarshal(info.Progress, &p)
			return info.State == jobs.StateRunning && p.Step >= 2
		})
		_, err = e.Cancel(ctx, id)
		is.NoErr(err)
		info := waitState(t, e, id, jobs.StateCancelled)
		is.Equal(info.Attempt, 1)
		is.Equal(len(w.seen()), 0)
	})
}

type tickArgs struct{}

func (tickArgs) Kind() string { return "test.tick" }

func TestPeriodic(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		var ticks atomic.Int32
		e := newEngine(t, db, nil)
		if err := jobs.Register(e, jobs.WorkFunc[tickArgs](func(context.Context, *jobs.Job[tickArgs]) error {
			ticks.Add(1)
			return nil
		}), nil); err != nil {
			t.Fatal(err)
		}
		e.Periodic(200*time.Millisecond, func() jobs.Args { return tickArgs{} })
		start(t, e)
		waitFor(t, "two periodic runs", func() bool { return ticks.Load() >= 2 })
	})
}

func TestEventSubscribers(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		e := newEngine(t, db, nil)

		var mu sync.Mutex
		got := map[string][]string{} // event id → subscribers, one entry per delivery
		failedOnce := false
		record := func(name string) func(context.Context, store.Event) error {
			return func(_ context.Context, ev store.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if name == "flaky" && !failedOnce {
					failedOnce = true
					return errors.New("first delivery fails")
				}
				got[ev.ID] = append(got[ev.ID], name+":"+ev.Type)
				return nil
			}
		}
		is.NoErr(e.Subscribe(jobs.Subscription{Name: "all", Handle: record("all")}))
		is.NoErr(e.Subscribe(jobs.Subscription{Name: "flaky", Handle: record("flaky"),
			Match: func(typ string) bool { return typ == "test.widget.created" }}))
		is.True(e.Subscribe(jobs.Subscription{Name: "all", Handle: record("all")}) != nil) // duplicate name
		start(t, e)

		emit := func(typ string, commit bool) store.Event {
			var ev store.Event
			_ = db.Tx(ctx, func(tx *store.Tx) error {
				var err error
				ev, err = tx.EmitData(ctx, typ, sc, map[string]int{"n": 1})
				is.NoErr(err)
				if !commit {
					return errors.New("roll back")
				}
				return nil
			})
			return ev
		}
		created := emit("test.widget.created", true)
		lost := emit("test.widget.deleted", false)
		updated := emit("test.widget.updated", true)

		waitFor(t, "deliveries", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got[created.ID]) == 2 && len(got[updated.ID]) == 1
		})
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		is.True(failedOnce) // the flaky subscriber's first attempt failed and was retried
		is.Equal(len(got[created.ID]), 2)
		is.Equal(got[updated.ID], []string{"all:test.widget.updated"}) // "flaky" does not match it
		is.Equal(len(got[lost.ID]), 0)                                 // rolled back: never delivered
	})
}

func TestJobSurvivesRestart(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()

		// First process: enqueue, then exit before working it.
		db1, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		is.NoErr(db1.Migrate(ctx))
		e1 := newEngine(t, db1, &recorder{})
		id, err := e1.Enqueue(ctx, noteArgs{"survivor"}, nil)
		is.NoErr(err)
		is.NoErr(db1.Close())

		// Second process: the job is there and runs.
		db2, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		t.Cleanup(func() { db2.Close() })
		is.NoErr(db2.Migrate(ctx))
		w := &recorder{}
		e2 := newEngine(t, db2, w)
		start(t, e2)
		waitState(t, e2, id, jobs.StateCompleted)
		is.Equal(w.seen(), []string{"survivor"})
	})
}

// Two processes on one PostgreSQL share the work: every job runs exactly
// once.
func TestSharedWorkAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := storetest.IsolatedPostgresURL(t)
	is := is.New(t)
	ctx := t.Context()
	var mu sync.Mutex
	runs := map[string]int{}
	worker := jobs.WorkFunc[noteArgs](func(_ context.Context, job *jobs.Job[noteArgs]) error {
		mu.Lock()
		runs[job.Args.Note]++
		mu.Unlock()
		return nil
	})
	var engines []*jobs.Engine
	for range 2 {
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		t.Cleanup(func() { db.Close() })
		is.NoErr(db.Migrate(ctx))
		e := newEngine(t, db, worker)
		start(t, e)
		engines = append(engines, e)
	}
	const n = 300
	for i := range n {
		_, err := engines[i%2].Enqueue(ctx, noteArgs{fmt.Sprint(i)}, nil)
		is.NoErr(err)
	}
	waitFor(t, "all jobs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == n
	})
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for note, count := range runs {
		if count != 1 {
			t.Errorf("job %s ran %d times", note, count)
		}
	}
}
