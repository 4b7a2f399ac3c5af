package identity

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Acknowledged revocations (see the package doc, "Revocation"). On a
// database several processes share, each Service that caches credentials
// registers in auth_servers and keeps its row beating; a revocation,
// once committed, waits until every live row has seen its version of
// the credentials' counter. A Service writes a version as seen only after
// its cache has dropped what is older, so a request that starts after the
// revocation returns finds nothing stale to serve, on any server, without
// reading the counter itself.
//
// A Service trusts its cache without reading the counter only while its
// lease holds: trustFor from the moment it sent its last successful
// beat. A revocation counts a row as dead when its last beat (stamped by
// the database's clock) is older than deadAfter, twice trustFor, and
// stops waiting for it; by then that Service's lease has lapsed (it sent
// the beat before the database stamped it), so it reads the counter for
// every request again until a beat gets through, and a beat reads and
// applies the counter before it writes the row. A Service cut off from
// notifications acknowledges at its next beat (within beatEvery); one
// cut off from the database is waited for at most deadAfter.
const (
	beatEvery = 1 * time.Second
	trustFor  = 2500 * time.Millisecond
	deadAfter = 2 * trustFor
	// ackWaitMax bounds a revocation's wait past deadAfter, for clocks
	// that disagree more than the lease allows; it is then logged.
	ackWaitMax = deadAfter + 2*time.Second
	// forgetAfter is how long a dead row stays before a beat removes it.
	forgetAfter = time.Hour
)

// acks is a Service's side of acknowledged revocations.
type acks struct {
	s    *Service
	id   string
	base time.Time // monotonic origin of lease
	// lease is until when (nanoseconds after base) the cache may be
	// trusted without reading the counter; 0 before the first beat.
	lease atomic.Int64

	once   sync.Once
	wake   chan struct{} // a notified version is waiting to be acknowledged
	notify atomic.Int64  // the newest notified version applied
	done   chan struct{} // closed when the DB closes

	// Test knobs: deaf drops notifications (a Service whose listener is
	// cut off), frozen stops beats and acknowledgements (a Service cut
	// off from the database).
	deaf, frozen atomic.Bool
}

func newAcks(s *Service) *acks {
	return &acks{s: s, id: store.NewID(), base: time.Now(), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// trusted reports whether the lease holds, starting the beats on the
// first call.
func (a *acks) trusted() bool {
	a.once.Do(a.start)
	return int64(time.Since(a.base)) < a.lease.Load()
}

// start registers the Service and beats until its DB closes. The row
// is written before the first read of the counter, so that a revocation
// either sees the row (and waits for it) or committed before that read.
func (a *acks) start() {
	db := a.s.db
	db.WatchVersions(func(name string, v int64) {
		if name != credentialsCounter || a.deaf.Load() {
			return
		}
		a.s.creds.Invalidate(v) // before it is acknowledged
		for {
			cur := a.notify.Load()
			if v <= cur || a.notify.CompareAndSwap(cur, v) {
				break
			}
		}
		select {
		case a.wake <- struct{}{}:
		default:
		}
	})
	db.OnClose(func() {
		a.lease.Store(0) // a closed database answers nothing: trust nothing
		close(a.done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = db.Exec(ctx, `DELETE FROM auth_servers WHERE id = $1`, a.id)
	})
	go a.run()
}

func (a *acks) run() {
	t := time.NewTimer(0)
	defer t.Stop()
	registered, acked := false, int64(0)
	for {
		select {
		case <-a.done:
			return
		case <-a.wake:
			if v := a.notify.Load(); registered && v > acked && !a.frozen.Load() {
				if err := a.ack(v); err == nil {
					acked = v
				}
			}
		case <-t.C:
			if !a.frozen.Load() {
				var err error
				if !registered {
					registered = a.register() == nil
				}
				if registered {
					var v int64
					if v, err = a.beat(); err == nil {
						acked = max(acked, v)
					}
				}
				select {
				case <-a.done:
					return // closing: the pool is going
				default:
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					a.s.logger.Warn("identity: a credentials beat failed; this process reads the counter for every request until one gets through", "err", err)
				}
			}
			t.Reset(beatEvery)
		}
	}
}

func (a *acks) register() error {
	ctx, cancel := context.WithTimeout(context.Background(), beatEvery)
	defer cancel()
	_, err := a.s.db.Background().Exec(ctx, `INSERT INTO auth_servers (id, seen, beat_at) VALUES ($1, 0, CURRENT_TIMESTAMP)`, a.id)
	return err
}

// beat reads the counter, has the cache drop what is older, writes it as
// seen, and extends the lease from the moment it began.
func (a *acks) beat() (int64, error) {
	sent := time.Since(a.base)
	ctx, cancel := context.WithTimeout(context.Background(), beatEvery)
	defer cancel()
	db := a.s.db.Background() // never behind requests
	v, err := store.ReadVersion(ctx, db, credentialsCounter)
	if err != nil {
		return 0, err
	}
	a.s.creds.Invalidate(v)
	n, err := db.Exec(ctx, `UPDATE auth_servers SET seen = CASE WHEN seen > $2 THEN seen ELSE $2 END, beat_at = CURRENT_TIMESTAMP
		WHERE id = $1`, a.id, v)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		// Removed as dead (a long stall): register again; the next beat
		// trusts.
		return 0, a.register()
	}
	a.lease.Store(int64(sent + trustFor))
	if rand.N(64) == 0 { // now and then, forget long-dead rows
		_, _ = db.Exec(ctx, `DELETE FROM auth_servers WHERE beat_at < $1`, a.s.db.Now().Add(-forgetAfter))
	}
	return v, nil
}

// ack writes notified version v (already applied) as seen.
func (a *acks) ack(v int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), beatEvery)
	defer cancel()
	_, err := a.s.db.Background().Exec(ctx, `UPDATE auth_servers SET seen = CASE WHEN seen > $2 THEN seen ELSE $2 END WHERE id = $1`, a.id, v)
	return err
}

// await waits until every live Service has seen version v of the
// credentials' counter, or is dead (see acks). This Service's own cache
// has already dropped what is older (the cache's commit hook runs first).
func await(ctx context.Context, db *store.DB, self *acks, v int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackWaitMax)
	defer cancel()
	if self != nil {
		if err := self.ack(v); err != nil {
			return err
		}
	}
	pause := 500 * time.Microsecond
	for {
		waiting, err := lagging(ctx, db, v)
		if err != nil || waiting == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			db.Logger().Error("identity: a revocation was not acknowledged in time by every live process", "processes", waiting, "version", v)
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// lagging counts the live Services that have not seen version v.
func lagging(ctx context.Context, db *store.DB, v int64) (int, error) {
	rows, err := db.Query(ctx, `SELECT beat_at, CURRENT_TIMESTAMP FROM auth_servers WHERE seen < $1`, v)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var beat, now time.Time
		if err := rows.Scan(&beat, &now); err != nil {
			return 0, err
		}
		if now.Sub(beat) < deadAfter {
			n++
		}
	}
	return n, rows.Err()
}
