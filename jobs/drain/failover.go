package drain

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Holders. A lease's owner is "<holder>/<drain>": the Queues instance
// that took it (host:pid:instance, the instance a random id made by New,
// so that two Queues in one process, or a restarted process that got the
// same pid, are told apart) and an id of the drain. The holder is kept in
// the owner column, so the queue tables of databases already running need
// no new column; owners written by older versions are a bare id, whose
// holder reads as "".

// newHolder returns a holder id for a new Queues: host:pid:instance.
func newHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	host = strings.NewReplacer("/", "_", " ", "_").Replace(host)
	var b [4]byte
	_, _ = crand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// HolderOf returns the holder part of a lease owner (host:pid:instance),
// or "" for an owner that names none.
func HolderOf(owner string) string {
	h, _, ok := strings.Cut(owner, "/")
	if !ok {
		return ""
	}
	return h
}

// Holder returns the holder id this Queues writes into the leases it
// takes (host:pid:instance).
func (qs *Queues) Holder() string { return qs.holder }

// QueueState is a queue as Owners (and Lapsed) read it.
type QueueState struct {
	Key Key // the queue
	// Owner is the drain holding the lease ("" when none does), and
	// Holder the process it runs in (HolderOf: host:pid:instance).
	Owner, Holder string
	// LeaseUntil is when the lease ends unless renewed (zero when none
	// is held). Live: it had not ended at the read's now; an owner whose
	// lease is not live died or stalled, and the takeover (Run) hands its
	// queue on within TakeOverEvery.
	LeaseUntil time.Time
	Live       bool // see LeaseUntil
	// Queued: work arrived that no drain has looked at yet, since
	// QueuedAt (or a drain is due at QueuedAt, after a yield).
	Queued   bool
	QueuedAt time.Time // see Queued
	// WakeAt is when a drain is scheduled for the next item to come due.
	WakeAt time.Time
	// Due counts the items due at the read's now, and OldestDue is when
	// the oldest of them became due: now minus it is the queue's lag.
	// Both are zero unless read with the work (Table.OwnersDue).
	Due       int
	OldestDue time.Time // see Due
}

func (s *QueueState) fill(owner *string, until, queuedAt, wakeAt store.NullTime, now time.Time) {
	if owner != nil {
		s.Owner = *owner
	}
	s.Holder = HolderOf(s.Owner)
	s.LeaseUntil, s.QueuedAt, s.WakeAt = until.Time, queuedAt.Time, wakeAt.Time
	s.Live = s.Owner != "" && until.Valid && !until.Time.Before(now)
}

// Failover is what the takeover (Queues.TakeOver, run by Queues.Run)
// needs of the Leases; Table implements it. A Store without it is only
// swept (Queues.Sweep), every SweepEvery.
type Failover interface {
	// Lapsed returns up to limit queues whose owner's lease ended before
	// now (its drain died or stalled), in key order.
	Lapsed(ctx context.Context, q store.Querier, now time.Time, limit int) ([]QueueState, error)
	// Reclaim lets owner's lease of k go, setting the flag at now, when
	// owner still holds it and it ended before now; it reports whether
	// it did (then the caller enqueues a drain).
	Reclaim(ctx context.Context, q store.Querier, k Key, owner string, now time.Time) (bool, error)
}

// Inspector reads the queues' state for operators (Queues.Owners);
// Table implements it over the queue table alone, and an area's Store may
// override it to add its work (Table.OwnersDue).
type Inspector interface {
	// Owners returns the state of every queue held or flagged at now.
	Owners(ctx context.Context, q store.Querier, now time.Time) ([]QueueState, error)
}

// Owners returns the queues held or flagged (and, when the Store reads
// its work, those with due items, with their lag): which process drains
// what, for a route or a metric. It fails with errors.ErrUnsupported when
// the Store does not implement Inspector.
func (qs *Queues) Owners(ctx context.Context) ([]QueueState, error) {
	in, ok := qs.st.(Inspector)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return in.Owners(ctx, qs.db, qs.db.Now())
}

// takeOverBatch bounds the queues one TakeOver hands on.
const takeOverBatch = 100

// TakeOver hands on the queues whose owner's lease has lapsed (its drain
// died with its process, or stalled past LeaseTTL): each lease is let go
// with the flag set and a drain enqueued, which then drains the queue on
// from where the dead one stopped. It logs each takeover with the holder
// that lapsed. When none has lapsed, it costs one read of the queue table
// (no transaction). Run calls it every TakeOverEvery; it is safe in
// several processes at once (a lease is reclaimed once, by its owner's
// name).
func (qs *Queues) TakeOver(ctx context.Context) error {
	f, ok := qs.st.(Failover)
	if !ok {
		return nil
	}
	lapsed, err := f.Lapsed(ctx, qs.bg, qs.bg.Now(), takeOverBatch)
	if err != nil || len(lapsed) == 0 {
		return err
	}
	return qs.bg.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		for _, s := range lapsed { // in key order, as every writer locks queue rows
			reclaimed, err := f.Reclaim(ctx, tx, s.Key, s.Owner, now)
			if err != nil {
				return err
			}
			if !reclaimed {
				continue // renewed or taken meanwhile
			}
			if err := qs.enqueue(ctx, tx, s.Key, time.Time{}); err != nil {
				return err
			}
			tx.AfterCommit(func() {
				qs.log.Warn(qs.opts.Name+": took over a queue whose drain stopped renewing its lease",
					"queue", s.Key.ID, "group", s.Key.Group, "lapsed_holder", cmp.Or(s.Holder, "unknown"),
					"lease_until", s.LeaseUntil, "lapsed_for", now.Sub(s.LeaseUntil).Round(time.Millisecond), "holder", qs.holder)
			})
		}
		return nil
	})
}

// Run hands on lapsed queues (TakeOver) every TakeOverEvery and sweeps
// (Sweep) every SweepEvery, until ctx ends; the owning area runs it in
// every process, from its Start to its Stop. It runs in the process, not
// as a periodic job, so that it does not wait for the job engine to
// elect a new leader when the process that died was the leader. A
// failure is logged once until a run succeeds again.
func (qs *Queues) Run(ctx context.Context) {
	jitter := func(d time.Duration) time.Duration { return d*9/10 + rand.N(d/5+1) }
	takeOver := time.NewTimer(jitter(qs.opts.TakeOverEvery))
	defer takeOver.Stop()
	var lastSweep time.Time // the first round sweeps
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-takeOver.C:
		}
		err := qs.TakeOver(ctx)
		if err == nil && time.Since(lastSweep) >= qs.opts.SweepEvery {
			lastSweep = time.Now()
			err = qs.Sweep(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			qs.log.Warn(qs.opts.Name+": hand on lapsed queues (retrying)", "err", err, "holder", qs.holder)
		case err == nil && failing:
			qs.log.Info(qs.opts.Name+": handing on lapsed queues again", "holder", qs.holder)
		}
		failing = err != nil
		takeOver.Reset(jitter(qs.opts.TakeOverEvery))
	}
}
