package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

type waitArgs struct{}

func (waitArgs) Kind() string { return "test.wait" }

type otherArgs struct{}

func (otherArgs) Kind() string { return "test.other" }

// A kind's Workers sizes its queue unless the host's Config or an earlier
// Register already did.
func TestRegisterWorkers(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *Job[waitArgs]) error { return nil }
	other := func(context.Context, *Job[otherArgs]) error { return nil }
	for name, tc := range map[string]struct {
		cfg  map[string]int
		want int
	}{
		"the area's":          {nil, 30},
		"the host's prevails": {map[string]int{"slow": 4}, 4},
	} {
		e, err := New(t.Context(), storetest.SQLite(t), Config{Queues: tc.cfg})
		if err != nil {
			t.Fatal(err)
		}
		if err := Register(e, WorkFunc[waitArgs](noop), &RegisterOpts{Queue: "slow", Workers: 30}); err != nil {
			t.Fatal(err)
		}
		if err := Register(e, WorkFunc[otherArgs](other), &RegisterOpts{Queue: "slow", Workers: 50}); err != nil {
			t.Fatal(err)
		}
		if got := e.queues["slow"]; got != tc.want {
			t.Errorf("%s: queue slow has %d workers, want %d", name, got, tc.want)
		}
	}
}

// A Background queue is polled at BackgroundPollInterval on SQLite (which
// cannot notify the job engine), others at the engine's poll interval;
// and a Background job is still picked up and run.
func TestBackgroundQueuePolling(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	e, err := New(t.Context(), db, Config{BackgroundPollInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	work := func(context.Context, *Job[waitArgs]) error { ran <- struct{}{}; return nil }
	if err := Register(e, WorkFunc[waitArgs](work), &RegisterOpts{Queue: "slow", Background: true}); err != nil {
		t.Fatal(err)
	}
	if err := Register(e, WorkFunc[otherArgs](func(context.Context, *Job[otherArgs]) error { return nil }), &RegisterOpts{Queue: "quick"}); err != nil {
		t.Fatal(err)
	}
	if got := e.queueConfig("slow").FetchPollInterval; got != 300*time.Millisecond {
		t.Errorf("background queue polled every %v, want 300ms", got)
	}
	if got := e.queueConfig("quick").FetchPollInterval; got != 0 {
		t.Errorf("other queue has its own poll interval %v, want the engine's (0)", got)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	if err := db.Tx(t.Context(), func(tx *store.Tx) error { _, err := e.EnqueueTx(t.Context(), tx, waitArgs{}, nil); return err }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the background job never ran")
	}
}

// On SQLite the queues' polls are only a backstop: a job is woken by
// River's insert notification (its outbox table), whether this engine's
// process or another one sharing the file enqueued it. With polls an hour
// apart, both jobs still run. By default the queues poll every second,
// Background ones every 5s (each poll takes the single writer).
func TestSQLiteJobsWokenWithoutPolling(t *testing.T) {
	t.Parallel()
	url := storetest.SQLiteURL(t)
	open := func() *store.DB {
		db, err := store.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db, other := open(), open() // other: another process's handle on the file, in effect

	defaults, err := New(t.Context(), db, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(defaults, WorkFunc[otherArgs](func(context.Context, *Job[otherArgs]) error { return nil }), &RegisterOpts{Queue: "slow", Background: true}); err != nil {
		t.Fatal(err)
	}
	if got := defaults.queueConfig("slow").FetchPollInterval; got != DefaultBackgroundPollInterval {
		t.Errorf("background queue polled every %v by default, want %v", got, DefaultBackgroundPollInterval)
	}

	e, err := New(t.Context(), db, Config{FetchPollInterval: time.Hour, BackgroundPollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 2)
	work := func(context.Context, *Job[waitArgs]) error { ran <- struct{}{}; return nil }
	if err := Register(e, WorkFunc[waitArgs](work), &RegisterOpts{Queue: "slow", Background: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())

	enqueuer, err := New(t.Context(), other, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(enqueuer, WorkFunc[waitArgs](work), &RegisterOpts{Queue: "slow", Background: true}); err != nil {
		t.Fatal(err)
	}
	// A first job, picked up by the queue's first fetch at start or by
	// its notification: the jobs after it can only be woken.
	type source struct {
		name string
		db   *store.DB
		e    *Engine
	}
	for _, enq := range []source{{"the first job", db, e}, {"this process", db, e}, {"another process", other, enqueuer}} {
		name := enq.name
		if err := enq.db.Tx(t.Context(), func(tx *store.Tx) error { _, err := enq.e.EnqueueTx(t.Context(), tx, waitArgs{}, nil); return err }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			t.Fatalf("the job enqueued by %s did not run (the next poll is an hour away)", name)
		}
	}
}
