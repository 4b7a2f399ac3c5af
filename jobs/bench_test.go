package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkThroughput enqueues b.N no-op jobs (in transactions of 100) and
// measures the time until all have completed, reporting jobs/s.
func BenchmarkThroughput(b *testing.B) {
	run := func(b *testing.B, db *store.DB) {
		ctx := b.Context()
		var done atomic.Int64
		e := startNoteEngine(b, db, jobs.Config{Queues: map[string]int{jobs.DefaultQueue: 50}}, func() { done.Add(1) })

		b.ResetTimer()
		start := time.Now()
		for left := b.N; left > 0; left -= 100 {
			batch := make([]jobs.Args, min(left, 100))
			for i := range batch {
				batch[i] = noteArgs{Note: "x"}
			}
			if err := db.Tx(ctx, func(tx *store.Tx) error {
				_, err := e.EnqueueManyTx(ctx, tx, batch, nil)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		for done.Load() < int64(b.N) {
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
	}
	onBothEngines(b, run)
}

// BenchmarkPickupLatency enqueues one job at a time on an idle engine and
// measures how long it waits before a worker starts it, reporting the
// mean in ms/job: what the fetch polling and insert notifications give a
// job that nothing else is waiting for.
func BenchmarkPickupLatency(b *testing.B) {
	run := func(b *testing.B, db *store.DB) {
		ctx := b.Context()
		started := make(chan time.Time, 1)
		e := startNoteEngine(b, db, jobs.Config{}, func() { started <- time.Now() })

		// One job first: an engine that has just started may not be
		// listening for insert notifications yet (PostgreSQL), which made
		// the first job of a run wait for a poll.
		pickup := func() time.Duration {
			if err := db.Tx(ctx, func(tx *store.Tx) error {
				_, err := e.EnqueueTx(ctx, tx, noteArgs{Note: "x"}, nil)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			committed := time.Now()
			select {
			case at := <-started:
				return at.Sub(committed)
			case <-time.After(10 * time.Second):
				b.Fatal("the job did not start within 10s")
				return 0
			}
		}
		pickup()
		var waited time.Duration
		b.ResetTimer()
		for range b.N {
			waited += pickup()
		}
		b.ReportMetric(float64(waited.Microseconds())/1000/float64(b.N), "ms/job")
	}
	onBothEngines(b, run)
}

// onBothEngines runs run on a SQLite store and on an isolated PostgreSQL
// one (skipped without TENANTKIT_TEST_POSTGRES_URL).
func onBothEngines(b *testing.B, run func(b *testing.B, db *store.DB)) {
	b.Run("sqlite", func(b *testing.B) { run(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		db, err := store.Open(b.Context(), storetest.IsolatedPostgresURL(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() }) // after the engine's Stop (cleanups run last first)
		if err := db.Migrate(b.Context()); err != nil {
			b.Fatal(err)
		}
		run(b, db)
	})
}

// startNoteEngine starts an engine on db whose noteArgs jobs call work;
// it stops when the benchmark ends.
func startNoteEngine(b *testing.B, db *store.DB, cfg jobs.Config, work func()) *jobs.Engine {
	e, err := jobs.New(b.Context(), db, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := jobs.Register(e, jobs.WorkFunc[noteArgs](func(context.Context, *jobs.Job[noteArgs]) error {
		work()
		return nil
	}), nil); err != nil {
		b.Fatal(err)
	}
	if err := e.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Stop(context.Background()) })
	return e
}
