package drain

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A drain keeps its lease while requests queue for every connection of
// the request pool: its heartbeat, and the other processes' takeover,
// run on the background pool (store.DB.Background), so a renewal never
// waits behind requests. While they ran on the request pool, a queue's
// lease lapsed under load and another process took it over while its
// drain still ran (once in each of two 30-minute soaks).
//
// Requests: 48 goroutines whose transactions each hold one of the 2
// request connections for 100 ms, so that one waits about 2.4 s for a
// connection, past the 1 s lease. The drain's steps query through the
// request pool too (as the webhooks' sends do), for 6 s; a second
// process (another Queues on its own DB) hands on lapsed leases every
// 100 ms meanwhile.
func TestLeaseKeptUnderRequestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6-second load test")
	}
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	url := storetest.IsolatedPostgresURL(t)
	var logs, otherLogs logBuffer
	db, err := store.Open(ctx, url, &store.Options{MaxReaders: 2, Logger: logs.logger()})
	is.NoErr(err)
	defer db.Close()
	is.NoErr(db.Migrate(ctx, testMigrations))
	other, err := store.Open(ctx, url, &store.Options{MaxReaders: 2, Logger: otherLogs.logger()})
	is.NoErr(err)
	defer other.Close()

	opts := Options{Name: "drain_test", LeaseTTL: time.Second, HeartbeatEvery: 250 * time.Millisecond, TakeOverEvery: 100 * time.Millisecond}
	qs := New(db, newTestStore(), (&enqueued{}).enqueue, opts)
	handedOn := &enqueued{}
	opts.Logger = otherLogs.logger()
	otherQs := New(other, newTestStore(), handedOn.enqueue, opts)

	const requests, loadFor = 48, 6 * time.Second
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var served atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	for range requests {
		wg.Go(func() {
			for loadCtx.Err() == nil {
				err := db.Tx(loadCtx, func(tx *store.Tx) error {
					_, err := tx.Exec(loadCtx, "SELECT pg_sleep(0.1)")
					return err
				})
				if err == nil {
					served.Add(1)
				} else if loadCtx.Err() == nil {
					t.Errorf("request: %v", err)
				}
			}
		})
	}
	wg.Go(func() { otherQs.Run(loadCtx) })

	k := newTestKey()
	var steps int
	var stepCtx context.Context
	end := time.Now().Add(loadFor)
	err = qs.Drain(ctx, k, func(ctx context.Context, l *Lease) (Step, error) {
		stepCtx = ctx
		if time.Now().After(end) {
			return Step{}, nil
		}
		steps++
		_, err := db.Exec(ctx, "SELECT 1") // waits its turn for a request connection
		if ctx.Err() != nil {
			return Step{More: true}, nil // the lease was lost: Drain ends
		}
		return Step{More: true}, err
	})
	stopLoad()
	wg.Wait()
	is.NoErr(err)
	t.Logf("%d requests served, %d drain steps in %v under load", served.Load(), steps, loadFor)

	if cause := context.Cause(stepCtx); errors.Is(cause, ErrLeaseLost) {
		t.Errorf("the drain lost its lease under request load")
	}
	if n := handedOn.count(k); n != 0 {
		t.Errorf("the other process took the queue over %d times while its drain ran, want 0", n)
	}
	for _, out := range []string{logs.String(), otherLogs.String()} {
		for line := range strings.Lines(out) {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Errorf("log: %s", strings.TrimSpace(line))
			}
		}
	}
	if q := readQueue(t, db, k); q.owner != nil {
		t.Errorf("the queue is held by %s after its drain finished, want free", *q.owner)
	}
}
