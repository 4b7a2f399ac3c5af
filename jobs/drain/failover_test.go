package drain

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// logBuffer is a log destination tests read, with a logger writing to
// it at Debug.
type logBuffer struct{ logbuf.Buffer }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Owners name their holder: host:pid:instance, one instance per Queues.
func TestHolder(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	a, b := New(nil, nil, nil, Options{Logger: slog.Default()}), New(nil, nil, nil, Options{Logger: slog.Default()})
	is.True(a.Holder() != b.Holder())
	is.Equal(strings.Count(a.Holder(), ":"), 2)
	is.Equal(HolderOf(a.Holder()+"/"+store.NewID()), a.Holder())
	is.Equal(HolderOf("0198a1b2-legacy-owner"), "") // an owner written by an older version
}

// TakeOver hands on the queues whose lease lapsed (once, however often
// it runs), logging the lapsed holder; live leases and free queues are
// left alone.
func TestTakeOver(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		e := &enqueued{}
		var logs logBuffer
		qs := New(db, newTestStore(), e.enqueue, Options{Name: "drain_test", Logger: logs.logger()})
		now := db.Now()
		past, future := now.Add(-time.Second), now.Add(time.Minute)
		dead, legacy, alive := "deadhost:42:0badcafe/"+store.NewID(), "0198a1b2-legacy", "livehost:7:00c0ffee/"+store.NewID()
		deadK, legacyK, liveK, freeK := newTestKey(), newTestKey(), newTestKey(), newTestKey()
		putQueue(t, db, deadK, &dead, &past, false, nil)
		putQueue(t, db, legacyK, &legacy, &past, true, &past)
		putQueue(t, db, liveK, &alive, &future, false, nil)
		putQueue(t, db, freeK, nil, nil, false, nil)

		is.NoErr(qs.TakeOver(ctx))
		is.NoErr(qs.TakeOver(ctx)) // a second round (or another process's) hands on nothing more
		for _, k := range []Key{deadK, legacyK} {
			q := readQueue(t, db, k)
			is.Equal(ownerOf(q), "<none>")
			is.True(q.leaseUntil == nil)
			is.True(q.queued && !q.queuedAt.Before(now)) // a drain is waiting: the sweep leaves it alone
			is.Equal(e.count(k), 1)
		}
		is.Equal(ownerOf(readQueue(t, db, liveK)), alive)
		is.Equal(e.count(liveK), 0)
		is.Equal(e.count(freeK), 0)
		out := logs.String()
		is.True(strings.Contains(out, "took over a queue") && strings.Contains(out, "lapsed_holder=deadhost:42:0badcafe"))
		is.True(strings.Contains(out, "lapsed_holder=unknown")) // the legacy owner
		is.True(strings.Contains(out, "holder="+qs.Holder()))

		// The lapsed drain, were it only stalled, holds nothing now.
		held, err := qs.st.Holds(ctx, db, deadK, dead, db.Now())
		is.NoErr(err)
		is.True(!held)
	}, testMigrations)
}

// Owners reads who holds which queue; OwnersDue adds the due work and its
// lag.
func TestOwners(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		st := newTestStore()
		qs := New(db, st, (&enqueued{}).enqueue, Options{Name: "drain_test"})
		now := db.Now()
		past, future := now.Add(-time.Second), now.Add(time.Minute)
		owner := qs.Holder() + "/" + store.NewID()
		dead := "deadhost:42:0badcafe/" + store.NewID()
		heldK, lapsedK, flaggedK, dueK := newTestKey(), newTestKey(), newTestKey(), newTestKey()
		putQueue(t, db, heldK, &owner, &future, false, nil)
		putQueue(t, db, lapsedK, &dead, &past, false, nil)
		putQueue(t, db, flaggedK, nil, nil, true, &past)
		older, old := now.Add(-time.Minute), now.Add(-10*time.Second)
		putItem(t, db, heldK, 1, &older)
		putItem(t, db, heldK, 2, &old)
		putItem(t, db, heldK, 3, &future) // not due
		putItem(t, db, dueK, 1, &old)     // due, no queue row

		states, err := qs.Owners(ctx)
		is.NoErr(err)
		byKey := map[string]QueueState{}
		for _, s := range states {
			byKey[s.Key.ID] = s
		}
		h := byKey[heldK.ID]
		is.Equal(h.Key, heldK)
		is.Equal(h.Owner, owner)
		is.Equal(h.Holder, qs.Holder())
		is.True(h.Live && h.LeaseUntil.Equal(future))
		is.Equal(h.Due, 0) // the queue table alone
		l := byKey[lapsedK.ID]
		is.True(!l.Live && l.Holder == "deadhost:42:0badcafe")
		f := byKey[flaggedK.ID]
		is.True(f.Queued && f.QueuedAt.Equal(past) && f.Owner == "" && !f.Live)
		_, ok := byKey[dueK.ID]
		is.True(!ok)

		// The due items as one predicate, as two disjoint sets read one
		// after the other, and as those sets walked by key: the same
		// answers, and Stuck's too.
		items := DueItems{Table: "drain_test_items", Group: "grp", Key: "qkey", Due: testDue, Since: "i.due_at"}
		sets := items
		sets.Due, sets.DueSets = "", []string{`NOT i.done AND i.due_at IS NULL`, `NOT i.done AND i.due_at IS NOT NULL AND i.due_at <= $1`}
		walked := items
		walked.Due, walked.ByKey = "", []KeySet{{Items: `NOT i.done AND i.due_at IS NULL`},
			{Items: `NOT i.done AND i.due_at IS NOT NULL`, Due: `i.due_at <= $1`}}
		laterK, anytimeK := newTestKey(), newTestKey()
		putItem(t, db, laterK, 1, &future) // no queue row, nothing due yet
		putItem(t, db, anytimeK, 1, nil)   // no queue row, due (no time)
		// This test's keys among those Stuck returns (other tests share
		// the tables).
		ours := func(keys []Key) []Key {
			return slices.DeleteFunc(keys, func(k Key) bool {
				return !slices.Contains([]Key{heldK, lapsedK, flaggedK, dueK, laterK, anytimeK}, k)
			})
		}
		stuck, err := st.Table.Stuck(ctx, db, items, db.Now(), past)
		is.NoErr(err)
		stuck = ours(stuck)
		is.Equal(len(stuck), 2) // dueK and anytimeK: not held, laterK (nothing due yet), flaggedK (just flagged), lapsedK (nothing due)
		is.True(slices.Contains(stuck, dueK) && slices.Contains(stuck, anytimeK))
		for _, items := range []DueItems{items, sets, walked} {
			states, err = st.OwnersDue(ctx, db, items, db.Now())
			is.NoErr(err)
			byKey = map[string]QueueState{}
			for _, s := range states {
				byKey[s.Key.ID] = s
			}
			h = byKey[heldK.ID]
			is.True(h.Live && h.Holder == qs.Holder())
			is.Equal(h.Due, 2)
			is.True(h.OldestDue.Equal(older))
			d := byKey[dueK.ID]
			is.Equal(d.Key, dueK)
			is.True(d.Owner == "" && !d.Queued && d.Due == 1 && d.OldestDue.Equal(old))
			is.True(byKey[flaggedK.ID].Queued && byKey[flaggedK.ID].Due == 0)
			is.True(!byKey[lapsedK.ID].Live)
			got, err := st.Table.Stuck(ctx, db, items, db.Now(), past)
			is.NoErr(err)
			is.Equal(ours(got), stuck)
		}

		// A Store that cannot say.
		_, err = New(db, struct{ Store }{st}, nil, Options{}).Owners(ctx)
		is.True(errors.Is(err, errors.ErrUnsupported))
	}, testMigrations)
}

// Issue 21: a drain killed mid-queue (its process's database connections
// gone, its heartbeat with them) has its queue taken over, and its work
// resumed in order, by another process's drain within 5 s, with the
// default lease, heartbeat and takeover timings.
func TestFailoverWithin5s(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		open := func() *store.DB {
			db, err := store.Open(ctx, url, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			return db
		}
		dbA, dbB := open(), open()
		is.NoErr(dbA.Migrate(ctx, testMigrations))
		k := newTestKey()
		const items = 6
		for seq := 1; seq <= items; seq++ {
			putItem(t, dbB, k, seq, nil)
		}

		var mu sync.Mutex
		doneBy := map[int]string{} // seq → the holder that recorded it
		var resumedAt time.Time
		frozen, unfreeze := make(chan struct{}), make(chan struct{})
		// step does the queue's next item, recording it while its lease
		// holds; process A freezes (is killed) at item 4.
		step := func(db *store.DB, st *testStore, freezeAt int) func(context.Context, *Lease) (Step, error) {
			return func(ctx context.Context, l *Lease) (Step, error) {
				var id string
				var seq int
				err := db.QueryRow(ctx, `SELECT id, seq FROM drain_test_items WHERE grp = $1 AND qkey = $2 AND NOT done
					ORDER BY seq LIMIT 1`, l.Key.Group, l.Key.ID).Scan(&id, &seq)
				if errors.Is(err, store.ErrNotFound) {
					return Step{}, nil
				}
				if err != nil {
					return Step{}, err
				}
				if seq == freezeAt {
					close(frozen)
					<-unfreeze
					return Step{}, errors.New("killed")
				}
				mu.Lock()
				if freezeAt == 0 && resumedAt.IsZero() {
					resumedAt = time.Now()
				}
				mu.Unlock()
				err = db.Tx(ctx, func(tx *store.Tx) error {
					held, err := st.Holds(ctx, tx, l.Key, l.Owner, tx.Now())
					if err != nil || !held {
						return err
					}
					mu.Lock()
					doneBy[seq] = HolderOf(l.Owner)
					mu.Unlock()
					return store.ExecOne(ctx, tx, `UPDATE drain_test_items SET done = TRUE WHERE id = $1`, id)
				})
				return Step{More: true}, err
			}
		}

		var logsA, logsB logBuffer
		var wg sync.WaitGroup
		stA, stB := newTestStore(), newTestStore()
		qsA := New(dbA, stA, (&enqueued{}).enqueue, Options{Name: "A", Logger: logsA.logger()})
		runCtx, stopRun := context.WithCancel(ctx)
		var qsB *Queues
		qsB = New(dbB, stB, func(_ context.Context, tx *store.Tx, k Key, _ time.Time) error {
			tx.AfterCommit(func() { wg.Go(func() { _ = qsB.Drain(runCtx, k, step(dbB, stB, 0)) }) })
			return nil
		}, Options{Name: "B", Logger: logsB.logger()})
		t.Cleanup(func() {
			stopRun()
			close(unfreeze)
			wg.Wait()
		})
		wg.Go(func() { qsB.Run(runCtx) })
		wg.Go(func() { _ = qsA.Drain(runCtx, k, step(dbA, stA, 4)) })

		select {
		case <-frozen:
		case <-time.After(30 * time.Second):
			t.Fatal("process A did not reach item 4")
		}
		// While A holds the queue, B's operators see A's holder.
		states, err := qsB.Owners(ctx)
		is.NoErr(err)
		var seenA bool
		for _, s := range states {
			seenA = seenA || s.Key == k && s.Holder == qsA.Holder() && s.Live
		}
		is.True(seenA)
		// The worst moment: A is killed just after a heartbeat renewed its
		// lease for a full LeaseTTL.
		first := *readQueue(t, dbB, k).leaseUntil
		waitUntil(t, "A's heartbeat", func() bool { return readQueue(t, dbB, k).leaseUntil.After(first) })
		is.NoErr(dbA.Close()) // kill -9: A's connections, heartbeat included, are gone
		killedAt := time.Now()

		waitUntil(t, "B drains the rest", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(doneBy) == items
		})
		mu.Lock()
		resumed := resumedAt.Sub(killedAt)
		mu.Unlock()
		t.Logf("queue resumed by another process %v after the kill (lease %v, heartbeat %v, takeover every %v)",
			resumed.Round(time.Millisecond), DefaultLeaseTTL, DefaultHeartbeatEvery, DefaultTakeOverEvery)
		if resumed > 5*time.Second {
			t.Errorf("the killed drain's queue resumed after %v, want within 5s", resumed)
		}
		for seq := 1; seq <= items; seq++ {
			want := qsA.Holder()
			if seq >= 4 {
				want = qsB.Holder()
			}
			is.Equal(doneBy[seq], want) // in order: A's 1–3, B's 4–6, each once
		}
		is.True(strings.Contains(logsA.String(), "lease taken") && strings.Contains(logsA.String(), "holder="+qsA.Holder()))
		is.True(strings.Contains(logsB.String(), "took over a queue") && strings.Contains(logsB.String(), "lapsed_holder="+qsA.Holder()))
	})
}
