package webhooks

import (
	"cmp"
	"context"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
)

// Each webhook has a delivery queue: its pending deliveries, sent in order
// of their events by one drain at a time (a DrainJob holding the queue's
// lease, jobs/drain). Different webhooks drain on different workers, so a
// slow target only ever holds its own queue. The queue rows are
// webhook_queues (drain.Table); a drain that dies stops renewing its
// lease, and every process's Queues.Run (started by Start) hands its
// queue on once the lease has lapsed; the periodic SweepJob stays as the
// net under lost wake-ups (Run sweeps too).

// Timings of the queues.
const (
	// drainBudget is how long a drain starts new sends before it yields
	// its worker (and queues a follow-up drain behind other webhooks').
	drainBudget = drain.DefaultBudget
	// claimSize is how many deliveries a drain claims (marks sending) at
	// once; the outcomes are recorded while the sends go on (recorder).
	claimSize = 50
	// sweepEvery is the period of SweepJob (and of Run's sweep).
	sweepEvery = drain.DefaultSweepEvery
	// maxInlineWait is the longest rate-limit wait a drain sleeps; a
	// longer one yields and schedules the next drain.
	maxInlineWait = time.Second
)

// DrainJob sends a webhook's due deliveries in order of their events.
type DrainJob struct {
	TenantID  string `json:"tenantId"`
	WebhookID string `json:"webhookId"`
}

// Kind names the job.
func (DrainJob) Kind() string { return "webhooks.drain" }

// SweepJob is the periodic job that restarts delivery queues whose drain
// died: due deliveries, no live lease, no drain waiting.
type SweepJob struct{}

// Kind names the job.
func (SweepJob) Kind() string { return "webhooks.sweep" }

type drainWorker struct{ svc *Service }

func (w drainWorker) Work(ctx context.Context, job *jobs.Job[DrainJob]) error {
	return w.svc.drain(ctx, job.Args.TenantID, job.Args.WebhookID)
}

// Timeout leaves room for the budget and one send of the longest timeout.
func (drainWorker) Timeout(*jobs.Job[DrainJob]) time.Duration {
	return drainBudget + time.Duration(maxTimeoutMs)*time.Millisecond + 30*time.Second
}

type sweepWorker struct{ svc *Service }

func (w sweepWorker) Work(ctx context.Context, _ *jobs.Job[SweepJob]) error { return w.svc.sweep(ctx) }

// newQueues returns the webhooks' delivery queues over s's store.
func (s *Service) newQueues() *drain.Queues {
	return drain.New(s.db, s.store, func(ctx context.Context, tx *store.Tx, k drain.Key, at time.Time) error {
		var opts *jobs.Opts
		if !at.IsZero() {
			opts = &jobs.Opts{ScheduledAt: at}
		}
		_, err := s.jobs.EnqueueTx(ctx, tx, DrainJob{TenantID: k.Group, WebhookID: k.ID}, opts)
		return err
	}, drain.Options{Name: "webhooks", Budget: drainBudget})
}

// queueKey names a webhook's queue.
func queueKey(tenantID, webhookID string) drain.Key { return drain.Key{Group: tenantID, ID: webhookID} }

// wake tells w's queue that it has new due work, inside tx (the
// transaction that made the work), and enqueues a drain unless one is
// waiting or holds the lease (which then sees the flag before it stops).
func (s *Service) wake(ctx context.Context, tx *store.Tx, tenantID, webhookID string) error {
	return s.queues.Wake(ctx, tx, queueKey(tenantID, webhookID))
}

// drain sends the webhook's due deliveries, in order of their events,
// while it holds the queue's lease and its budget lasts.
func (s *Service) drain(ctx context.Context, tenantID, webhookID string) error {
	return s.queues.Drain(ctx, queueKey(tenantID, webhookID), s.drainStep)
}

// drainStep expires the webhook's deliveries when they cannot be sent,
// or sends a batch of them.
func (s *Service) drainStep(ctx context.Context, l *drain.Lease) (drain.Step, error) {
	w, err := s.store.SealedWebhook(ctx, s.db, l.Key.Group, l.Key.ID)
	if err != nil {
		return drain.Step{}, err
	}
	if reason := s.refusal(ctx, w); reason != "" {
		return drain.Step{}, s.expireQueue(ctx, w, reason)
	}
	if time.Now().After(l.Deadline) {
		return drain.Step{Yield: true}, nil
	}
	sent, wait, err := s.drainBatch(ctx, w, l.Owner, l.Deadline)
	if err != nil || wait > 0 {
		return drain.Step{Yield: wait > 0, Wait: wait}, err
	}
	return drain.Step{More: sent > 0}, nil
}

// refusal says why w's deliveries cannot be sent now ("" if they can).
func (s *Service) refusal(ctx context.Context, w *SealedWebhook) string {
	switch {
	case w.Deleted:
		return "Webhook was deleted"
	case !w.IsActive:
		return "Webhook is inactive"
	case !s.Enabled() || !s.tenantEnabled(ctx, w.TenantID):
		return store.PublicMessage(ErrDisabled)
	}
	return ""
}

// drainBatch claims the next due deliveries and sends them one after
// the other, the outcomes recorded while the sends go on (recorder): a
// drain killed mid-batch leaves at most the send under way and
// maxUnrecorded before it unrecorded (usually one or two), which its
// queue's next holder sends again. It returns how many it sent
// and recorded, and a wait when the webhook's rate limit stopped it.
func (s *Service) drainBatch(ctx context.Context, w *SealedWebhook, owner string, deadline time.Time) (int, time.Duration, error) {
	size := claimSize
	if w.RateLimitPerMinute > 0 {
		// About what the limit lets through within the budget.
		size = min(claimSize, int(drainBudget/(time.Minute/time.Duration(w.RateLimitPerMinute)))+1)
		if wait := s.limits.peek(w.ID, w.RateLimitPerMinute); wait > maxInlineWait {
			return 0, wait, nil
		}
	}
	key := queueKey(w.TenantID, w.ID)
	var batch []*Delivery
	err := s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		// (Holds reads without locking: queue rows are locked in id order
		// only. A drain whose lease expired unnoticed can at worst record
		// a send the new drain also makes, which at-least-once delivery
		// allows.)
		if held, err := s.store.Holds(ctx, tx, key, owner, tx.Now()); err != nil || !held {
			batch = nil
			return err
		}
		var err error
		if batch, err = s.store.ClaimDeliveries(ctx, tx, w.TenantID, w.ID, tx.Now(), size); err != nil || len(batch) == 0 {
			return err
		}
		// The webhook read after its deliveries: a change committed before
		// a claimed delivery (a secret rotated, a URL changed) is seen.
		fresh, err := s.store.SealedWebhook(ctx, tx, w.TenantID, w.ID)
		if err == nil {
			*w = *fresh
		}
		return err
	})
	if err != nil || len(batch) == 0 {
		return 0, 0, err
	}
	if s.refusal(ctx, w) != "" { // disabled or deleted meanwhile: the drain's next round expires them
		return 0, 0, s.unclaim(key, owner, batch)
	}
	secrets, err := s.secretsOf(w)
	if err != nil {
		return 0, 0, err
	}
	rec := &recorder{s: s, w: w.Webhook, key: key, owner: owner,
		stored: results{failures: w.ConsecutiveFailures, lastSuccess: w.LastSuccessAt}}
	var wait time.Duration
	sent := 0 // batch[:sent] were sent and handed to rec
	failures := w.ConsecutiveFailures
	for _, d := range batch {
		if time.Now().After(deadline) {
			break
		}
		if w.RateLimitPerMinute > 0 {
			if wait = s.limits.wait(ctx, w.ID, w.RateLimitPerMinute, maxInlineWait); wait > 0 {
				break
			}
		}
		start := s.opts.Now()
		out := s.send(ctx, w.Webhook, d, secrets)
		if ctx.Err() != nil {
			break // cut short by the drain's end, not the target's answer: sent again later
		}
		out.took = s.opts.Now().Sub(start)
		if !rec.add(d, out) {
			break // the record before failed, or found the lease lost
		}
		sent++
		if out.delivered() {
			failures = 0
			continue
		}
		if failures++; out.gone || w.AutoDisableThreshold > 0 && failures >= w.AutoDisableThreshold {
			break // the webhook is being disabled: the rest expire
		}
	}
	if err := rec.wait(); err != nil || rec.lost {
		// A drain that lost its lease records nothing more: the queue's
		// new drain sends what this one claimed and did not record.
		return 0, 0, err
	}
	if sent < len(batch) {
		if err := s.unclaim(key, owner, batch[sent:]); err != nil {
			return sent, 0, err
		}
	}
	return sent, wait, nil
}

// recorder records a drain's outcomes while its sends go on, in
// transactions shared with other drains' records (the service's Batcher,
// group commit), each checking first that the drain still holds its
// queue. One record is under way at a time: the outcomes got while it
// commits go into the next one. When commits keep up with the sends (the
// usual case) every outcome is recorded while the next send is made; when
// they do not (a fast target, a loaded database) each record carries
// several, and the sender waits once maxUnrecorded outcomes are waiting.
// So at any time at most maxUnrecorded sends are unrecorded besides the
// one under way: what a kill can make the queue's next drain send again.
type recorder struct {
	s     *Service
	w     *Webhook // read only
	key   drain.Key
	owner string

	// pending are the outcomes not yet handed to a record.
	pending []sent
	// done gets the end of the record under way (of inFlight outcomes);
	// nil when none is.
	done     chan recordEnd
	inFlight int
	// What the records that ended say: the error of one that failed,
	// whether one found the lease gone, and the webhook's results after
	// the last.
	err    error
	lost   bool
	stored results
}

// recordEnd is how a record ended.
type recordEnd struct {
	err    error
	lost   bool
	stored results
}

// maxUnrecorded bounds the sent outcomes a drain has not recorded when
// it starts a send. Measured with the fan-out test (2,000 events to 10
// webhooks, 2 shared CPUs, alternating runs): one record per outcome
// (waiting for the one before) made 580–670 deliveries/s on PostgreSQL
// against 1,200–1,560 for a claim's 50 recorded together; with a bound of
// 8 it makes 1,200–1,520 (SQLite: 1,680–2,620 against 1,690–2,960). A
// fast local target then costs a few duplicates after a kill rather than
// every send since the claim.
const maxUnrecorded = 8

// sent is a delivery sent and its attempt's outcome.
type sent struct {
	d   *Delivery
	out outcome
}

// results are what the webhook's row says of its deliveries.
type results struct {
	failures    int        // consecutive failures
	lastSuccess *time.Time // last success
}

// add hands d's outcome over; false when a record found the lease lost
// or failed (then the drain stops, and d's outcome is not recorded).
func (r *recorder) add(d *Delivery, out outcome) bool {
	r.pending = append(r.pending, sent{d, out})
	if r.done != nil {
		select {
		case end := <-r.done:
			r.ended(end)
		default:
			if len(r.pending)+r.inFlight > maxUnrecorded {
				r.ended(<-r.done)
			}
		}
	}
	if r.err != nil || r.lost {
		return false
	}
	if r.done == nil {
		r.start()
	}
	return true
}

// wait records what is pending and waits for it; it returns the error of
// a record that failed (lost says whether one found the lease gone).
func (r *recorder) wait() error {
	for r.err == nil && !r.lost && (r.done != nil || len(r.pending) > 0) {
		if r.done == nil {
			r.start()
		}
		r.ended(<-r.done)
	}
	return r.err
}

func (r *recorder) ended(end recordEnd) {
	r.done, r.inFlight = nil, 0
	r.err, r.lost, r.stored = end.err, end.lost, end.stored
}

// start records the pending outcomes in the background.
func (r *recorder) start() {
	batch, stored := r.pending, r.stored
	r.pending, r.inFlight = nil, len(batch)
	done := make(chan recordEnd, 1)
	r.done = done
	go func() {
		next := stored
		held := false
		err := r.s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
			var err error
			if held, err = r.s.store.Holds(ctx, tx, r.key, r.owner, tx.Now()); err != nil || !held {
				return err
			}
			next, err = r.s.record(ctx, tx, r.w, batch, stored)
			return err
		})
		if err != nil || !held {
			next = stored
		}
		done <- recordEnd{err: err, lost: err == nil && !held, stored: next}
	}()
}

// record stores the outcomes of sends to w, in the order they were made,
// and counts them against w, whose row says stored; it disables w at a
// 410 or at its threshold. It returns what w's row says then.
func (s *Service) record(ctx context.Context, tx *store.Tx, w *Webhook, batch []sent, stored results) (results, error) {
	now := tx.Now()
	failures, disable := stored.failures, false
	var lastSuccess, lastFailure *time.Time
	for _, x := range batch {
		s.applyOutcome(x.d, x.out, true, now)
		if err := s.store.UpdateDelivery(ctx, tx, x.d); err != nil {
			return stored, err
		}
		if x.d.Status == StatusFailed && x.d.EventID != "" {
			if _, err := tx.EmitData(ctx, EventDeliveryFailed, store.Scope{TenantID: w.TenantID, OrganizationID: w.OrganizationID},
				DeliveryFailed{DeliveryID: x.d.ID, WebhookID: w.ID, WebhookName: x.d.WebhookName, EventID: x.d.EventID,
					EventType: x.d.EventType, Attempts: x.d.Attempt, ResponseStatus: x.d.ResponseStatus, ErrorMessage: x.d.ErrorMessage}); err != nil {
				return stored, err
			}
		}
		if x.out.delivered() {
			failures, lastSuccess = 0, &now
			continue
		}
		failures, lastFailure = failures+1, &now
		if x.out.gone || w.AutoDisableThreshold > 0 && failures >= w.AutoDisableThreshold {
			disable = true
		}
	}
	return s.countResults(ctx, tx, w, stored, failures, lastSuccess, lastFailure, disable)
}

// unclaim puts claimed deliveries that were not sent back to pending,
// giving back the attempt under way (their next claim starts that
// attempt again; one cut short before gets back the attempt it had),
// unless owner no longer holds the queue (its new drain claims them).
func (s *Service) unclaim(key drain.Key, owner string, ds []*Delivery) error {
	return s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		if held, err := s.store.Holds(ctx, tx, key, owner, tx.Now()); err != nil || !held {
			return err
		}
		for _, d := range ds {
			if err := s.store.UnclaimDelivery(ctx, tx, d, tx.Now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// countResults stores the webhook's consecutive failures after an
// attempt, and its last success or failure, disabling it when the
// attempt did; stored is what its row says before. A success after a
// success less than a second before writes nothing (lastSuccessAt is kept
// to the second: a busy webhook's row is not written by every send). It
// returns what the row says after.
func (s *Service) countResults(ctx context.Context, tx *store.Tx, w *Webhook, stored results, failures int, lastSuccess, lastFailure *time.Time, disable bool) (results, error) {
	if !disable && failures == 0 && stored.failures == 0 && lastFailure == nil &&
		stored.lastSuccess != nil && lastSuccess != nil && lastSuccess.Sub(*stored.lastSuccess) < time.Second {
		return stored, nil
	}
	after := results{failures: failures, lastSuccess: cmp.Or(lastSuccess, stored.lastSuccess)}
	found, err := s.store.RecordResults(ctx, tx, w.TenantID, w.ID, failures, lastSuccess, lastFailure)
	if err != nil || !found || !disable {
		return after, err
	}
	changed, err := s.store.Deactivate(ctx, tx, w.TenantID, w.ID, tx.Now())
	if err != nil || !changed {
		return after, err
	}
	disabled := *w // the event's copy: w is the sender's too
	disabled.IsActive, disabled.ConsecutiveFailures, disabled.UpdatedAt = false, failures, tx.Now()
	_, err = tx.EmitData(ctx, EventWebhookDisabled, store.Scope{TenantID: w.TenantID, OrganizationID: w.OrganizationID}, &disabled)
	return after, err
}

// expireQueue ends every delivery still to send of w (pending, retries
// included, or cut short) without sending it.
func (s *Service) expireQueue(ctx context.Context, w *SealedWebhook, reason string) error {
	return s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		_, err := s.store.ExpireDeliveries(ctx, tx, w.TenantID, w.ID, reason, tx.Now())
		return err
	})
}

// QueueOwner is a webhook's delivery queue as QueueOwners reads it: which
// process drains it, and how far behind it is.
type QueueOwner struct {
	TenantID, WebhookID string
	// Holder is the process whose drain holds the queue's lease
	// (host:pid:instance, drain.HolderOf); "" when no drain holds it,
	// "unknown" for a lease taken by an older version.
	Holder string
	// LeaseUntil is when that lease ends unless renewed (zero when none
	// is held). Live: it had not ended at the read. A lease that is not
	// live belongs to a drain that died or stalled: a process's takeover
	// (Run) hands the queue on within a second or so.
	LeaseUntil time.Time
	Live       bool // see LeaseUntil
	// Queued: deliveries arrived that no drain has looked at yet (a drain
	// is on its way, or the holder's drain goes on with them).
	Queued bool
	// Due counts the deliveries due at the read (the first attempts and
	// the retries whose time has come, those being sent included), and
	// Lag is how long the oldest of them has been due (0 when none is).
	Due int
	Lag time.Duration // see Due
}

// QueueOwners returns the delivery queues of tenantID ("": of every
// tenant) that a drain holds, that are flagged, or that have due
// deliveries, in webhook id order: which process drains which webhook,
// and how far behind each is. It counts every due delivery of every
// tenant (a tenant's are picked out of them), so it is for an operator's
// route or a metrics scrape, not for every request. With an Options.Store
// that does not implement drain.Inspector it fails with
// errors.ErrUnsupported.
func (s *Service) QueueOwners(ctx context.Context, tenantID string) ([]QueueOwner, error) {
	states, err := s.queues.Owners(ctx)
	if err != nil {
		return nil, err
	}
	now := s.db.Now()
	out := make([]QueueOwner, 0, len(states))
	for _, st := range states {
		if tenantID != "" && st.Key.Group != tenantID {
			continue
		}
		o := QueueOwner{TenantID: st.Key.Group, WebhookID: st.Key.ID, Holder: st.Holder, LeaseUntil: st.LeaseUntil,
			Live: st.Live, Queued: st.Queued, Due: st.Due}
		if st.Owner != "" && o.Holder == "" {
			o.Holder = "unknown"
		}
		if st.Due > 0 && !st.OldestDue.IsZero() {
			o.Lag = max(0, now.Sub(st.OldestDue))
		}
		out = append(out, o)
	}
	return out, nil
}

// sweep restarts the queues that have due deliveries but no live lease
// and no drain waiting: their drain died with its process, or their
// wake-up was lost. It then folds the kept delivery counts (FoldCounts).
func (s *Service) sweep(ctx context.Context) error {
	if err := s.queues.Sweep(ctx); err != nil {
		return err
	}
	_, err := s.FoldCounts(ctx)
	return err
}

// foldWebhooks is how many counts (each a webhook's, for an event type
// and state) one fold transaction takes, and foldRounds how many
// transactions one FoldCounts runs at most (the next sweep goes on).
const foldWebhooks, foldRounds = 100, 50

// FoldCounts folds the delta rows of the kept delivery counts
// (Store.FoldDeliveryCounts), in every tenant, until none is left to
// fold (at most foldWebhooks counts per transaction, foldRounds
// transactions at most: under a steady stream of inserts the next sweep
// goes on), and returns how many rows it folded.
// SweepJob runs it; calling it otherwise is never needed, and harmless.
func (s *Service) FoldCounts(ctx context.Context) (int64, error) {
	var total int64
	for range foldRounds {
		var n int64
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			n, err = s.store.FoldDeliveryCounts(ctx, tx, foldWebhooks)
			return err
		})
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, nil
}
