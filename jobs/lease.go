package jobs

import (
	"context"
	crand "crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the job engine's own table (the leases of running
// jobs). New applies it; River's tables are migrated by River.
var Migrations = store.Migrations{Line: "jobs", FS: migrationsFS, Dir: "migrations"}

// DefaultLeaseTTL is Config.LeaseTTL's default.
const DefaultLeaseTTL = 5 * time.Second

// ParkAfterCrashes is how many times a job's process may stop renewing
// its lease (killed, or stalled past the lease) before the job is parked
// (discarded with that error) instead of run again.
const ParkAfterCrashes = 3

// ErrLeaseLost is what Fence returns, and the cause of Work's context,
// when the running job's lease has passed to another run: this
// process stopped renewing it in time and the job runs elsewhere. Work
// should return; whatever it records afterwards is refused.
var ErrLeaseLost = errors.New("jobs: the job's lease passed to another run (it runs elsewhere now)")

// The statements over job_leases. $1 job id, $2 run number (the fencing
// token), $3 holder, $4 a time.
const (
	// leaseTake takes the lease for a run, or renews it: it holds when no
	// row exists, the row belongs to an earlier run, or this run holds it.
	// It does not when a sweep declared this run dead (holder NULL) or a
	// later run took the row.
	leaseTake = `INSERT INTO job_leases (job_id, run, holder, expires_at, crashes) VALUES ($1, $2, $3, $4, 0)
		ON CONFLICT (job_id) DO UPDATE SET run = $2, holder = $3, expires_at = $4
		WHERE job_leases.run < $2 OR job_leases.run = $2 AND job_leases.holder = $3`
	// leaseComplete ends the lease of a run that completed the job. The
	// row stays (until the hourly clean-up), so that an earlier run
	// finishing late still finds its lease passed on.
	leaseComplete = `UPDATE job_leases SET holder = NULL, expires_at = NULL WHERE job_id = $1 AND run = $2 AND holder = $3`
	// leaseRelease lets a run that returned go; the row keeps the
	// crash count, and expires at $4 so that a job whose process died
	// before the job engine recorded the outcome is still run again.
	leaseRelease = `UPDATE job_leases SET holder = NULL, expires_at = $4 WHERE job_id = $1 AND run = $2 AND holder = $3`
	// leaseDead declares a run dead (its lease lapsed at $3), counts
	// a crash and returns the count; nothing when the lease was renewed
	// meanwhile or another sweep declared it.
	leaseDead = `INSERT INTO job_leases (job_id, run, holder, expires_at, crashes) VALUES ($1, $2, NULL, NULL, 1)
		ON CONFLICT (job_id) DO UPDATE SET run = $2, holder = NULL, expires_at = NULL, crashes = job_leases.crashes + 1
		WHERE job_leases.run < $2 OR job_leases.run = $2 AND job_leases.expires_at < $3
		RETURNING crashes`
)

// newHolder returns the holder id an engine writes into the leases it
// takes: host:pid:instance (the instance a random id, so that two engines
// in one process, or a restarted process with the same pid, differ).
func newHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = crand.Read(b[:])
	return strings.ReplaceAll(host, " ", "_") + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// minLeaseTTL bounds Config.LeaseTTL from below: renewals every 20 ms.
const minLeaseTTL = 100 * time.Millisecond

// leaseTTL is the engine's lease length; renewals (and sweeps) run five
// times per lease.
func (e *Engine) leaseTTL() time.Duration {
	if e.cfg.LeaseTTL > 0 {
		return max(e.cfg.LeaseTTL, minLeaseTTL)
	}
	return DefaultLeaseTTL
}

func (e *Engine) renewEvery() time.Duration { return e.leaseTTL() / 5 }

// lease is one run's lease on its job. It is taken lazily, at the
// first renewal (a job that returns sooner writes nothing: until then the
// sweep counts River's attempted_at as the lease's start), or by Fence.
type lease struct {
	e      *Engine
	id     int64
	run    int
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	touched bool // a lease write was tried: the outcome is fenced
	lost    bool
}

func (l *lease) touch() {
	l.mu.Lock()
	l.touched = true
	l.mu.Unlock()
}

func (l *lease) state() (touched, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.touched, l.lost
}

// setLost records the loss and cancels Work's context with ErrLeaseLost.
func (l *lease) setLost() {
	l.mu.Lock()
	first := !l.lost
	l.lost = true
	l.mu.Unlock()
	if first {
		l.cancel(ErrLeaseLost)
		l.e.logger.Warn("jobs: a running job's lease passed to another run; this run stops and records nothing",
			"job", l.id, "run", l.run, "holder", l.e.holder)
	}
}

// runNumber is a fetched job's run number, the leases' fencing token:
// River's attempt plus the job's snoozes (a snooze gives its attempt back),
// so one higher at every fetch of the job.
func runNumber(attempt int, metadata []byte) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m)
	return attempt + m.Snoozes
}

// renew takes or renews the lease on q; false when it passed on.
func (l *lease) renew(ctx context.Context, q store.Querier, now time.Time) (bool, error) {
	l.touch()
	n, err := q.Exec(ctx, leaseTake, l.id, l.run, l.e.holder, now.Add(l.e.leaseTTL()))
	if err != nil {
		return false, err
	}
	if n == 0 {
		l.setLost()
		return false, nil
	}
	return true, nil
}

// keep renews the lease every renewEvery until the returned stop is
// called; a renewal that finds the lease passed on cancels Work. It runs
// on a timer, so a job that returns before the first renewal costs no
// goroutine.
func (l *lease) keep() (stop func()) {
	var mu sync.Mutex // guards stopped and t
	var t *time.Timer
	var beats sync.WaitGroup
	stopped, failing := false, false
	beat := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		beats.Add(1)
		mu.Unlock()
		defer beats.Done()
		if !l.e.leasesFrozen.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), l.e.leaseTTL())
			held, err := l.renew(ctx, l.e.bg, l.e.bg.Now())
			cancel()
			if err != nil && !failing {
				l.e.logger.Warn("jobs: renewing a running job's lease failed (retrying)", "job", l.id, "err", err)
			}
			failing = err != nil
			if !held && err == nil {
				return // passed on: no more renewals
			}
		}
		mu.Lock()
		if !stopped {
			t.Reset(l.e.renewEvery())
		}
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(l.e.renewEvery(), beat)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		beats.Wait()
	}
}

// finish records Work's outcome under the lease: a completion (err nil)
// commits with the lease's end, other outcomes release it, each only if
// the run still holds it. A run that lost it waits until the job
// is no longer running elsewhere and returns ErrLeaseLost, so that its
// late outcome never overwrites the live run's state. A job that
// returned before its first renewal is recorded by River alone.
func (l *lease) finish(ctx context.Context, err error) error {
	touched, lost := l.state()
	if !touched && !lost {
		return err
	}
	if !lost {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.e.leaseTTL())
		defer cancel()
		held, ferr := l.record(ctx, err == nil)
		if ferr != nil {
			// The database did not answer: the job runs again (River's
			// own record of the outcome will fail or retry too).
			return errors.Join(err, ferr)
		}
		if held {
			return err
		}
	}
	l.waitElsewhere()
	if err != nil {
		// Not wrapped: a cancel or snooze of a lost run decides nothing.
		return fmt.Errorf("%w (the run ended with: %v)", ErrLeaseLost, err)
	}
	return ErrLeaseLost
}

// record commits the end of the lease: with the job's completion when
// completed, a release otherwise. held is false when the lease had
// passed on (nothing is written then).
func (l *lease) record(ctx context.Context, completed bool) (held bool, err error) {
	errPassed := errors.New("passed on")
	err = l.e.bg.Tx(ctx, func(tx *store.Tx) error {
		if completed {
			// Lock the job's row first, in the sweep's order (job, then
			// lease), so that the two never wait on each other.
			if _, err := tx.Exec(ctx, `UPDATE `+l.e.table+` SET attempt = attempt WHERE id = $1`, l.id); err != nil {
				return err
			}
		}
		now := tx.Now()
		ok, err := l.renew(ctx, tx, now)
		if err != nil || !ok {
			return cmpErr(err, errPassed)
		}
		if !completed {
			_, err := tx.Exec(ctx, leaseRelease, l.id, l.run, l.e.holder, now.Add(l.e.leaseTTL()))
			return err
		}
		if _, err := tx.Exec(ctx, leaseComplete, l.id, l.run, l.e.holder); err != nil {
			return err
		}
		ok, err = l.e.client.completeTx(ctx, tx, l.id)
		if err != nil || !ok {
			return cmpErr(err, errPassed)
		}
		return nil
	})
	if errors.Is(err, errPassed) {
		l.setLost()
		return false, nil
	}
	return err == nil, err
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// waitElsewhere waits while the job runs in another run (or until the
// engine stops): River records a run's outcome only while the job is
// running, so returning once it is not makes this run's late outcome a
// no-op.
func (l *lease) waitElsewhere() {
	t := time.NewTicker(l.e.renewEvery())
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), l.e.leaseTTL())
		row, err := l.e.client.get(ctx, l.id)
		cancel()
		if err == nil && row.State != "running" || errors.Is(err, ErrUnknownJob) {
			return
		}
		select {
		case <-l.e.stopping:
			return
		case <-t.C:
		}
	}
}

// Fence checks, inside tx, that the job Work runs still holds its lease
// (and renews it), so that the writes of tx commit only for the live
// run: ErrLeaseLost when the job was given to another run (this
// process stopped renewing in time; the tx must roll back). Areas call it
// in the transactions that record a job's progress (a data sync run's
// batch). Outside Work it does nothing and returns nil.
//
// On SQLite tx holds the single writer: Fence writes through tx, never
// through another connection.
func Fence(ctx context.Context, tx *store.Tx) error {
	r, ok := ctx.Value(runningKey{}).(running)
	if !ok || r.lease == nil {
		return nil
	}
	if _, lost := r.lease.state(); lost {
		return ErrLeaseLost
	}
	held, err := r.lease.renew(ctx, tx, tx.Now())
	if err != nil {
		return err
	}
	if !held {
		return ErrLeaseLost
	}
	return nil
}

// deleteLeases removes the lease rows of jobs that will not run again
// (finished, or removed by River's cleaner) and that expired before
// before; the hourly clean-up calls it.
func (e *Engine) deleteLeases(ctx context.Context, before time.Time) (int64, error) {
	return e.bg.Exec(ctx, `DELETE FROM job_leases WHERE (expires_at IS NULL OR expires_at < $1)
		AND NOT EXISTS (SELECT 1 FROM `+e.table+` j WHERE j.id = job_leases.job_id
			AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled'))`, before)
}
