package jobs

import (
	"context"
	"testing"

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
