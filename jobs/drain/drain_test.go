package drain

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

//go:embed testdata/migrations
var testMigrationsFS embed.FS

// testMigrations creates the tests' queue and work tables.
var testMigrations = store.Migrations{Line: "drain_test", FS: testMigrationsFS, Dir: "testdata/migrations"}

// testStore is a Store over the test tables: items of a key are due
// while not done and their due_at (if any) has come; they are taken in
// seq order.
type testStore struct{ *Table }

func newTestStore() *testStore {
	return &testStore{NewTable("drain_test_queues", "qkey", "grp")}
}

const testDue = `NOT i.done AND (i.due_at IS NULL OR i.due_at <= $1)`

func (*testStore) Due(ctx context.Context, q store.Querier, k Key, now time.Time) (bool, error) {
	n, err := store.Many(ctx, q, scanBool, `SELECT TRUE FROM drain_test_items i WHERE i.grp = $2 AND i.qkey = $3 AND `+testDue+` LIMIT 1`,
		now, k.Group, k.ID)
	return len(n) > 0, err
}

func (*testStore) NextDue(ctx context.Context, q store.Querier, k Key, now time.Time) (time.Time, bool, error) {
	at, err := store.Many(ctx, q, func(sc store.Scanner) (time.Time, error) {
		var t time.Time
		return t, sc.Scan(&t)
	}, `SELECT due_at FROM drain_test_items WHERE grp = $1 AND qkey = $2 AND NOT done AND due_at > $3 ORDER BY due_at LIMIT 1`,
		k.Group, k.ID, now)
	if err != nil || len(at) == 0 {
		return time.Time{}, false, err
	}
	return at[0], true, nil
}

func (s *testStore) Stuck(ctx context.Context, q store.Querier, now, flaggedBefore time.Time) ([]Key, error) {
	return s.Table.Stuck(ctx, q, DueItems{Table: "drain_test_items", Group: "grp", Key: "qkey", Due: testDue}, now, flaggedBefore)
}

// enqueued records the drains Queues enqueues, instead of a job engine.
type enqueued struct {
	mu   sync.Mutex
	keys map[string][]time.Time
}

func (e *enqueued) enqueue(_ context.Context, _ *store.Tx, k Key, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys == nil {
		e.keys = map[string][]time.Time{}
	}
	e.keys[k.ID] = append(e.keys[k.ID], at)
	return nil
}

func (e *enqueued) count(k Key) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.keys[k.ID])
}

func (e *enqueued) last(k Key) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keys[k.ID][len(e.keys[k.ID])-1]
}

func newTestKey() Key { return Key{Group: store.NewID(), ID: store.NewID()} }

// queueRow is a drain_test_queues row.
type queueRow struct {
	owner              *string
	leaseUntil, wakeAt *time.Time
	queued             bool
	queuedAt           *time.Time
}

func readQueue(t *testing.T, db *store.DB, k Key) queueRow {
	t.Helper()
	q, err := store.One(t.Context(), db, func(s store.Scanner) (queueRow, error) {
		var q queueRow
		return q, s.Scan(&q.owner, &q.leaseUntil, &q.queued, &q.queuedAt, &q.wakeAt)
	}, `SELECT owner, lease_until, queued, queued_at, wake_at FROM drain_test_queues WHERE qkey = $1`, k.ID)
	if err != nil {
		t.Fatalf("read the queue of %s: %v", k.ID, err)
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

func putQueue(t *testing.T, db *store.DB, k Key, owner *string, leaseUntil *time.Time, queued bool, queuedAt *time.Time) {
	t.Helper()
	mustExec(t, db, `INSERT INTO drain_test_queues (qkey, grp, owner, lease_until, queued, queued_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.Group, owner, leaseUntil, queued, queuedAt)
}

func putItem(t *testing.T, db *store.DB, k Key, seq int, dueAt *time.Time) {
	t.Helper()
	mustExec(t, db, `INSERT INTO drain_test_items (id, grp, qkey, seq, due_at) VALUES ($1, $2, $3, $4, $5)`,
		store.NewID(), k.Group, k.ID, seq, dueAt)
}

func newTestQueues(db *store.DB, e *enqueued, opts Options) *Queues {
	opts.Name = "drain_test"
	return New(db, newTestStore(), e.enqueue, opts)
}

// One drain at a time: a held lease is not acquired, and the refused
// acquire sets the flag; the holder's release sees the flag (more work),
// clears it and keeps the lease; the next release lets go. An expired
// lease is taken over; a queue without a row is made and taken.
func TestLease(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		qs := newTestQueues(db, &enqueued{}, Options{})
		k := newTestKey()
		putQueue(t, db, k, nil, nil, false, nil)

		got, err := qs.acquire(ctx, k, "A")
		is.NoErr(err)
		is.True(got)
		q := readQueue(t, db, k)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)
		is.True(q.leaseUntil != nil && q.leaseUntil.After(db.Now()))

		got, err = qs.acquire(ctx, k, "B")
		is.NoErr(err)
		is.True(!got) // A holds it
		q = readQueue(t, db, k)
		is.Equal(ownerOf(q), "A")
		is.True(q.queued) // so that A looks again before it stops
		is.True(q.queuedAt != nil)

		more, err := qs.release(ctx, k, "A")
		is.NoErr(err)
		is.True(more) // the flag was set: A drains on
		q = readQueue(t, db, k)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)

		more, err = qs.release(ctx, k, "A")
		is.NoErr(err)
		is.True(!more)
		q = readQueue(t, db, k)
		is.Equal(ownerOf(q), "<none>")
		is.True(q.leaseUntil == nil)
		is.True(!q.queued)

		// Free again: B takes it; once B's lease has expired, C takes over.
		got, err = qs.acquire(ctx, k, "B")
		is.NoErr(err)
		is.True(got)
		mustExec(t, db, `UPDATE drain_test_queues SET lease_until = $2 WHERE qkey = $1`, k.ID, db.Now().Add(-time.Second))
		got, err = qs.acquire(ctx, k, "C")
		is.NoErr(err)
		is.True(got)
		is.Equal(ownerOf(readQueue(t, db, k)), "C")

		// A key whose queue has no row yet: the row is made and the lease taken.
		k2 := newTestKey()
		got, err = qs.acquire(ctx, k2, "A")
		is.NoErr(err)
		is.True(got)
		q = readQueue(t, db, k2)
		is.Equal(ownerOf(q), "A")
		is.True(!q.queued)
	}, testMigrations)
}

// A drain whose lease was taken by another does not clobber it on
// release: not the owner, not the flag.
func TestLostLease(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		qs := newTestQueues(db, &enqueued{}, Options{})
		for _, flagged := range []bool{false, true} {
			is := is.New(t)
			k := newTestKey()
			got, err := qs.acquire(t.Context(), k, "A")
			is.NoErr(err)
			is.True(got)
			lease := db.Now().Add(time.Hour)
			mustExec(t, db, `UPDATE drain_test_queues SET owner = 'B', lease_until = $2, queued = $3 WHERE qkey = $1`, k.ID, lease, flagged)

			more, err := qs.release(t.Context(), k, "A")
			is.NoErr(err)
			is.True(!more) // the queue is B's: A stops
			q := readQueue(t, db, k)
			is.Equal(ownerOf(q), "B")
			is.True(q.leaseUntil != nil && q.leaseUntil.Equal(lease))
			is.Equal(q.queued, flagged) // B's flag is B's to clear
		}
	}, testMigrations)
}

// The heartbeat extends its owner's lease, and cancels the drain (with
// ErrLeaseLost) once another owns the queue.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		qs := newTestQueues(db, &enqueued{}, Options{LeaseTTL: 2 * time.Second, HeartbeatEvery: 50 * time.Millisecond})
		kept, lost := newTestKey(), newTestKey()
		a, b := "A", "B"
		start := db.Now().Add(time.Second)
		putQueue(t, db, kept, &a, &start, false, nil)
		putQueue(t, db, lost, &b, &start, false, nil) // A's lease was taken by B

		var wg sync.WaitGroup
		beat := func(k Key) (context.Context, chan struct{}) {
			hctx, cancel := context.WithCancelCause(t.Context())
			t.Cleanup(func() { cancel(nil) })
			done := make(chan struct{})
			wg.Go(func() { qs.heartbeat(hctx, cancel, k, "A", done, new(atomic.Bool)) })
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
		is.True(errors.Is(context.Cause(lostCtx), ErrLeaseLost))
		is.Equal(ownerOf(readQueue(t, db, lost)), "B")

		waitUntil(t, "the heartbeat extends the lease", func() bool { return readQueue(t, db, kept).leaseUntil.After(start) })
		// Past the lease's first end, it is still A's and live.
		time.Sleep(time.Until(start.Add(200 * time.Millisecond)))
		q := readQueue(t, db, kept)
		is.Equal(ownerOf(q), "A")
		is.True(q.leaseUntil.After(db.Now()))
		is.NoErr(keptCtx.Err()) // a renewed lease does not cancel
		close(keptDone)
		wg.Wait()
	}, testMigrations)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// New work enqueues at most one drain per key: Wake sets the flag and
// enqueues only when the flag was clear and the lease free; work that
// arrives while a drain holds the lease only sets the flag.
func TestWake(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		e := &enqueued{}
		qs := newTestQueues(db, e, Options{})
		k := newTestKey()
		wake := func() {
			t.Helper()
			is.NoErr(db.Tx(ctx, func(tx *store.Tx) error { return qs.Wake(ctx, tx, k) }))
		}

		wake() // no row yet: made, flagged, a drain enqueued
		is.True(readQueue(t, db, k).queued)
		is.Equal(e.count(k), 1)
		is.True(e.last(k).IsZero()) // due now
		wake()                      // a drain is waiting already
		is.Equal(e.count(k), 1)

		got, err := qs.acquire(ctx, k, "A") // the drain runs
		is.NoErr(err)
		is.True(got)
		is.True(!readQueue(t, db, k).queued)
		wake() // held: only the flag
		q := readQueue(t, db, k)
		is.True(q.queued)
		is.Equal(ownerOf(q), "A")
		is.Equal(e.count(k), 1)
		more, err := qs.release(ctx, k, "A")
		is.NoErr(err)
		is.True(more) // the holder drains the new work itself
		more, err = qs.release(ctx, k, "A")
		is.NoErr(err)
		is.True(!more)

		wake() // free and clear again: a second drain
		is.Equal(e.count(k), 2)

		// WakeAfterCommit wakes once the transaction has committed, once.
		k2 := newTestKey()
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			qs.WakeAfterCommit(tx, k2)
			qs.WakeAfterCommit(tx, k2)
			return nil
		}))
		qs.Wait()
		is.Equal(e.count(k2), 1)
		is.True(readQueue(t, db, k2).queued)
	}, testMigrations)
}

// A drain letting go of a queue whose next item comes due later
// schedules a drain for then (wake_at), unless one is scheduled for then
// or earlier already. An item that came due since the step looked is
// drained on at once.
func TestReleaseSchedulesNext(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		e := &enqueued{}
		qs := newTestQueues(db, e, Options{})
		k := newTestKey()
		cycle := func(owner string) {
			t.Helper()
			got, err := qs.acquire(ctx, k, owner)
			is.NoErr(err)
			is.True(got)
			more, err := qs.release(ctx, k, owner)
			is.NoErr(err)
			is.True(!more)
		}

		cycle("A") // nothing waiting: nothing scheduled
		is.Equal(e.count(k), 0)
		is.True(readQueue(t, db, k).wakeAt == nil)

		later := db.Now().Add(time.Hour)
		putItem(t, db, k, 1, &later)
		cycle("B")
		is.Equal(e.count(k), 1)
		is.True(e.last(k).Equal(later))
		is.True(readQueue(t, db, k).wakeAt.Equal(later))

		cycle("C") // already scheduled for that time
		is.Equal(e.count(k), 1)

		sooner := db.Now().Add(30 * time.Minute)
		putItem(t, db, k, 2, &sooner)
		cycle("D") // an earlier item: one more drain, for it
		is.Equal(e.count(k), 2)
		is.True(e.last(k).Equal(sooner))

		// The step found nothing due; since then an item has come due.
		got, err := qs.acquire(ctx, k, "E")
		is.NoErr(err)
		is.True(got)
		due := db.Now().Add(-10 * time.Millisecond)
		putItem(t, db, k, 3, &due)
		more, err := qs.release(ctx, k, "E")
		is.NoErr(err)
		is.True(more) // drained on, not left for the sweep
		is.Equal(ownerOf(readQueue(t, db, k)), "E")
	}, testMigrations)
}

// The sweep restarts a queue whose drain died (its lease expired, whether
// or not work flagged it meanwhile) and one flagged long ago with no
// drain taking it; a queue with a live lease, one flagged recently (a
// drain is on its way) and one with nothing due are left alone.
func TestSweep(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := &enqueued{}
		qs := newTestQueues(db, e, Options{})
		now := db.Now()
		past, future, recent, stale := now.Add(-time.Minute), now.Add(10*time.Minute), now.Add(-time.Second), now.Add(-2*DefaultStaleQueued)
		dead, alive := "dead", "alive"
		put := func(owner *string, lease *time.Time, queued bool, at *time.Time, items bool) Key {
			k := newTestKey()
			putQueue(t, db, k, owner, lease, queued, at)
			if items {
				putItem(t, db, k, 1, nil)
			}
			return k
		}
		deadK := put(&dead, &past, false, nil, true)
		deadFlaggedK := put(&dead, &past, true, &recent, true) // work came while its lease was live
		staleK := put(nil, nil, true, &stale, true)            // its wake-up was lost
		liveK := put(&alive, &future, false, nil, true)
		waitingK := put(nil, nil, true, &recent, true)
		idleK := put(&dead, &past, false, nil, false)
		noRowK := newTestKey()
		putItem(t, db, noRowK, 1, nil)
		laterK := newTestKey()
		putItem(t, db, laterK, 1, &future) // not due yet

		is.NoErr(qs.Sweep(t.Context()))
		for _, k := range []Key{deadK, deadFlaggedK, staleK, noRowK} {
			is.Equal(e.count(k), 1)
			is.True(readQueue(t, db, k).queued)
		}
		for _, k := range []Key{liveK, waitingK, idleK, laterK} {
			is.Equal(e.count(k), 0)
		}
		is.True(!readQueue(t, db, liveK).queued)
		is.True(readQueue(t, db, waitingK).queuedAt.Equal(recent))
	}, testMigrations)
}

// A drain whose step fails, or whose job runs out of time, hands the
// queue on at once: the lease let go, the flag set, a drain enqueued.
func TestHandOn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := &enqueued{}
		qs := newTestQueues(db, e, Options{})
		failing := errors.New("the step failed")

		k := newTestKey()
		err := qs.Drain(t.Context(), k, func(context.Context, *Lease) (Step, error) { return Step{}, failing })
		is.True(errors.Is(err, failing))
		q := readQueue(t, db, k)
		is.Equal(ownerOf(q), "<none>")
		is.True(q.queued)
		is.Equal(e.count(k), 1)

		k2 := newTestKey()
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err = qs.Drain(ctx, k2, func(ctx context.Context, _ *Lease) (Step, error) {
			<-ctx.Done() // a step that outlasts the job's time limit
			return Step{More: true}, nil
		})
		is.NoErr(err)
		q = readQueue(t, db, k2)
		is.Equal(ownerOf(q), "<none>")
		is.True(q.queued)
		is.Equal(e.count(k2), 1)

		// A Yield step hands on with its wait; the flag's time is the
		// drain's.
		k3 := newTestKey()
		err = qs.Drain(t.Context(), k3, func(context.Context, *Lease) (Step, error) { return Step{Yield: true, Wait: time.Hour}, nil })
		is.NoErr(err)
		q = readQueue(t, db, k3)
		is.Equal(ownerOf(q), "<none>")
		is.True(q.queued && q.queuedAt.After(db.Now().Add(50*time.Minute)))
		is.True(e.last(k3).Equal(*q.queuedAt))
	}, testMigrations)
}

// drainArgs is the tests' drain job.
type drainArgs struct {
	Group string `json:"group"`
	ID    string `json:"id"`
}

func (drainArgs) Kind() string { return "drain_test.drain" }

// process is one process of TestOrderAcrossProcesses: its database
// handle, job engine and queues.
type process struct {
	db *store.DB
	qs *Queues
}

// A key's items are drained in order by one drain at a time, across two
// processes that both wake the queues and both run drains, and a drain
// that crashed holding a lease (its lease left to expire) is restarted by
// the sweep.
func TestOrderAcrossProcesses(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		var mu sync.Mutex
		busy := map[string]string{} // key → the drain stepping it
		seen := map[string][]int{}  // key → the seqs drained, in order
		overlaps := 0
		var procs []*process
		for i := range 2 {
			db, err := store.Open(ctx, url, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			is.NoErr(db.Migrate(ctx, testMigrations))
			e, err := jobs.New(ctx, db, jobs.Config{})
			is.NoErr(err)
			p := &process{db: db}
			st := newTestStore()
			p.qs = New(db, st, func(ctx context.Context, tx *store.Tx, k Key, at time.Time) error {
				var opts *jobs.Opts
				if !at.IsZero() {
					opts = &jobs.Opts{ScheduledAt: at}
				}
				_, err := e.EnqueueTx(ctx, tx, drainArgs{k.Group, k.ID}, opts)
				return err
			}, Options{Name: fmt.Sprint("p", i), LeaseTTL: 2 * time.Second, HeartbeatEvery: 200 * time.Millisecond, Budget: 300 * time.Millisecond})
			step := func(ctx context.Context, l *Lease) (Step, error) {
				if time.Now().After(l.Deadline) {
					return Step{Yield: true}, nil
				}
				var id string
				var seq int
				err := db.Tx(ctx, func(tx *store.Tx) error {
					err := tx.QueryRow(ctx, `SELECT id, seq FROM drain_test_items WHERE grp = $1 AND qkey = $2 AND NOT done
						ORDER BY seq LIMIT 1`, l.Key.Group, l.Key.ID).Scan(&id, &seq)
					return err
				})
				if errors.Is(err, store.ErrNotFound) {
					return Step{}, nil
				}
				if err != nil {
					return Step{}, err
				}
				mu.Lock()
				if other := busy[l.Key.ID]; other != "" && other != l.Owner {
					overlaps++
				}
				busy[l.Key.ID] = l.Owner
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the work
				done := false
				err = db.Tx(ctx, func(tx *store.Tx) error {
					held, err := st.Holds(ctx, tx, l.Key, l.Owner, tx.Now())
					if err != nil || !held {
						return err
					}
					done = true
					return store.ExecOne(ctx, tx, `UPDATE drain_test_items SET done = TRUE WHERE id = $1`, id)
				})
				mu.Lock()
				busy[l.Key.ID] = ""
				if done {
					seen[l.Key.ID] = append(seen[l.Key.ID], seq)
				}
				mu.Unlock()
				return Step{More: done}, err
			}
			is.NoErr(jobs.Register(e, jobs.WorkFunc[drainArgs](func(ctx context.Context, j *jobs.Job[drainArgs]) error {
				return p.qs.Drain(ctx, Key{j.Args.Group, j.Args.ID}, step)
			}), &jobs.RegisterOpts{Workers: 4}))
			is.NoErr(e.Start(ctx))
			t.Cleanup(func() {
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = e.Stop(sctx)
				p.qs.Wait()
			})
			procs = append(procs, p)
		}

		// A drain crashed holding the lease of crashed's queue, with items
		// left; its lease runs out in a second.
		group := store.NewID()
		crashed := Key{group, store.NewID()}
		for seq := 1; seq <= 5; seq++ {
			putItem(t, procs[0].db, crashed, seq, nil)
		}
		dead, until := "dead", procs[0].db.Now().Add(time.Second)
		putQueue(t, procs[0].db, crashed, &dead, &until, false, nil)

		// Three keys get 40 items each, in transactions of both processes,
		// each waking its key's queue.
		const perKey = 40
		keys := []Key{{group, store.NewID()}, {group, store.NewID()}, {group, store.NewID()}}
		for seq := 1; seq <= perKey; seq++ {
			for i, k := range keys {
				p := procs[(seq+i)%2]
				is.NoErr(p.db.Tx(ctx, func(tx *store.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO drain_test_items (id, grp, qkey, seq) VALUES ($1, $2, $3, $4)`,
						store.NewID(), k.Group, k.ID, seq); err != nil {
						return err
					}
					p.qs.WakeAfterCommit(tx, k)
					return nil
				}))
			}
		}
		waitUntil(t, "every item drained", func() bool {
			for _, p := range procs {
				if err := p.qs.Sweep(ctx); err != nil { // the periodic sweep, sped up
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if len(seen[k.ID]) < perKey {
					return false
				}
			}
			return len(seen[crashed.ID]) >= 5
		})
		mu.Lock()
		defer mu.Unlock()
		is.Equal(overlaps, 0) // one drain at a time per key
		for _, k := range append(keys, crashed) {
			for i, seq := range seen[k.ID] {
				if seq != i+1 {
					t.Fatalf("key %s drained out of order: %v", k.ID, seen[k.ID])
				}
			}
		}
	})
}

// lateHandler is a log handler that holds up the drain that logs msg:
// as a busy machine may, between the release's commit and the drain's end.
type lateHandler struct {
	slog.Handler
	msg  string
	hold time.Duration
}

func (h lateHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h lateHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasSuffix(r.Message, h.msg) {
		time.Sleep(h.hold)
	}
	return h.Handler.Handle(ctx, r)
}

// A drain that lets its lease go is not reported as having lost it: a
// heartbeat that falls due after the release committed, while the drain
// is still ending, finds the lease gone by the drain's own doing and
// stops without a warning.
func TestReleaseBesideHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		var logs logBuffer
		late := lateHandler{Handler: logs.logger().Handler(), msg: ": drain finished", hold: 50 * time.Millisecond}
		qs := newTestQueues(db, &enqueued{}, Options{
			Logger: slog.New(late), LeaseTTL: 2 * time.Second, HeartbeatEvery: 5 * time.Millisecond,
		})
		for range 5 {
			k := newTestKey()
			steps := 0
			err := qs.Drain(t.Context(), k, func(context.Context, *Lease) (Step, error) {
				steps++
				return Step{}, nil
			})
			is.NoErr(err)
			is.Equal(steps, 1)
			is.Equal(ownerOf(readQueue(t, db, k)), "<none>")
		}
		is.True(!strings.Contains(logs.String(), "lease lost")) // no false loss
		is.True(!strings.Contains(logs.String(), "level=WARN"))

		// A release that finds work arrived steps on, and a lease taken
		// from it after that is lost again.
		k := newTestKey()
		steps := 0
		var cause error
		err := qs.Drain(t.Context(), k, func(ctx context.Context, _ *Lease) (Step, error) {
			steps++
			if steps == 1 { // work arrives: the release steps on
				mustExec(t, db, `UPDATE drain_test_queues SET queued = TRUE WHERE qkey = $1`, k.ID)
				return Step{}, nil
			}
			mustExec(t, db, `UPDATE drain_test_queues SET owner = 'B', lease_until = $2 WHERE qkey = $1`, k.ID, db.Now().Add(time.Hour))
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return Step{More: true}, nil
			case <-time.After(10 * time.Second):
				return Step{}, errors.New("the lease was taken and the drain went on")
			}
		})
		is.NoErr(err)
		is.Equal(steps, 2)
		is.True(errors.Is(cause, ErrLeaseLost))
		is.True(strings.Contains(logs.String(), "lease lost"))
	}, testMigrations)
}
