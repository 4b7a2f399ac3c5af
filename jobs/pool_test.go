package jobs_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// countingHandler keeps the log records at warning level and above.
type countingHandler struct {
	mu      *sync.Mutex
	records *[]string
	attrs   []slog.Attr
}

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	add := func(a slog.Attr) bool { line += " " + a.String(); return true }
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.mu.Lock()
	*h.records = append(*h.records, line)
	h.mu.Unlock()
	return nil
}

func (h countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return h
}

func (h countingHandler) WithGroup(string) slog.Handler { return h }

// TestJobsUnderRequestLoad saturates the request pool (4 connections)
// with 256 concurrent "requests" (transactions holding a connection for
// 100 ms: a request waits about 6 s for one) for 20 s while jobs are
// enqueued by those requests and worked, some running long enough to
// renew their leases. The job engine's own
// work (River's leader election, fetches, completions; lease renewals and
// sweeps) runs on the store's Background pool, so it never waits behind
// the requests: not one warning or error from the engine (River's time
// limit on leader election is 5 s, which a wait for the shared pool
// exceeds: with BackgroundConns -1 this test logs a dozen failed
// reelections and lease renewals). Timings are not asserted.
func TestJobsUnderRequestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20-second load test")
	}
	url := storetest.IsolatedPostgresURL(t)
	var mu sync.Mutex
	var records []string
	logger := slog.New(countingHandler{mu: &mu, records: &records})
	db, err := store.Open(t.Context(), url, &store.Options{MaxReaders: 4, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := jobs.New(t.Context(), db, jobs.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var worked, long atomic.Int64
	err = jobs.Register(e, jobs.WorkFunc[noteArgs](func(ctx context.Context, job *jobs.Job[noteArgs]) error {
		// The job's own query goes through the request pool, and waits
		// its turn there.
		if _, err := db.Exec(ctx, "SELECT 1"); err != nil {
			return err
		}
		if job.Args.Note == "long" {
			long.Add(1)
			time.Sleep(1500 * time.Millisecond) // past a lease renewal
		}
		worked.Add(1)
		return nil
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)

	const requests, loadFor = 256, 20 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), loadFor)
	defer cancel()
	var served, enqueued atomic.Int64
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				err := db.Tx(ctx, func(tx *store.Tx) error {
					if _, err := tx.Exec(ctx, "SELECT pg_sleep(0.1)"); err != nil {
						return err
					}
					if (i+n)%16 != 0 {
						return nil
					}
					note := "short"
					if (i+n)%160 == 0 {
						note = "long"
					}
					_, err := e.EnqueueTx(ctx, tx, noteArgs{Note: note}, nil)
					return err
				})
				if err == nil {
					served.Add(1)
					if (i+n)%16 == 0 {
						enqueued.Add(1)
					}
				} else if ctx.Err() == nil {
					t.Errorf("request: %v", err)
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, "every job worked", func() bool { return worked.Load() >= enqueued.Load() })
	t.Logf("%d requests served, %d jobs enqueued and worked (%d past a lease renewal) in %v under load",
		served.Load(), enqueued.Load(), long.Load(), loadFor)

	mu.Lock()
	defer mu.Unlock()
	for _, r := range records {
		t.Errorf("job engine: %s", r)
	}
	if len(records) > 0 {
		t.Errorf("%d warnings or errors from the job engine under request load, want none", len(records))
	}
}
