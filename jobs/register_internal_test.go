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
