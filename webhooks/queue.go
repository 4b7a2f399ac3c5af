package webhooks

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// Each webhook has a delivery queue: its pending deliveries, sent in order
// of their events by one drain at a time (a DrainJob holding the queue's
// lease). Different webhooks drain on different workers, so a slow target
// only ever holds its own queue.
//
// The queue row (webhook_queues) carries the lease and a "queued" flag:
// new work sets the flag, and enqueues a drain only when the flag was
// clear and no drain holds the lease. A drain clears the flag as it takes
// the lease and, before it lets the lease go, looks at the flag again: if
// work arrived meanwhile it drains on. So no delivery waits for a drain
// that will not come, and there is never more than one drain job waiting
// per webhook. A drain that dies (its process killed) stops renewing its
// lease; the periodic SweepJob restarts the queues left with due
// deliveries and no live lease.

// Timings of the queues.
const (
	// leaseTTL is how long a drain's lease lasts unless renewed; a drain
	// renews it every heartbeatEvery, so a dead drain's queue is free
	// again within leaseTTL.
	leaseTTL       = 15 * time.Second
	heartbeatEvery = 5 * time.Second
	// drainBudget is how long a drain starts new sends before it yields
	// its worker (and queues a follow-up drain behind other webhooks').
	drainBudget = 10 * time.Second
	// claimSize is how many deliveries a drain claims (marks sending) at
	// once; their outcomes are recorded together.
	claimSize = 50
	// sweepEvery is the period of SweepJob; a queue flagged longer ago
	// than staleQueued without a drain taking it is swept too.
	sweepEvery  = 15 * time.Second
	staleQueued = time.Minute
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

// errLeaseLost cancels a drain whose lease another drain took (it was
// not renewed in time); the sends it has under way are not recorded.
var errLeaseLost = errors.New("webhooks: the delivery queue's lease was lost")

// wake tells w's queue that it has new due work, inside tx (the
// transaction that made the work), and enqueues a drain unless one is
// waiting or holds the lease (which then sees the flag before it stops).
func (s *Service) wake(ctx context.Context, tx *store.Tx, tenantID, webhookID string) error {
	now := tx.Now()
	free, err := store.Many(ctx, tx, func(sc store.Scanner) (bool, error) {
		var free bool
		return free, sc.Scan(&free)
	}, `INSERT INTO webhook_queues (webhook_id, tenant_id, queued, queued_at) VALUES ($1, $2, TRUE, $3)
		ON CONFLICT (webhook_id) DO UPDATE SET queued = TRUE, queued_at = $3 WHERE NOT webhook_queues.queued
		RETURNING (lease_until IS NULL OR lease_until < $3)`, webhookID, tenantID, now)
	if err != nil || len(free) == 0 || !free[0] {
		return err
	}
	_, err = s.jobs.EnqueueTx(ctx, tx, DrainJob{TenantID: tenantID, WebhookID: webhookID}, nil)
	return err
}

// queueKey names a webhook's queue.
type queueKey struct{ tenantID, webhookID string }

// waker wakes queues in the background once the transactions that gave
// them deliveries have committed. Wake-ups requested while one is under
// way are coalesced into the next, which wakes its queues in one
// transaction, in webhook id order: concurrent wakes (of this process or
// another) lock the queue rows in one order and never deadlock. A failure
// is logged; the sweep wakes those queues later.
type waker struct {
	svc     *Service
	mu      sync.Mutex
	pending map[queueKey]bool
	running bool
	wg      sync.WaitGroup
}

func (w *waker) add(q queueKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[queueKey]bool{}
	}
	w.pending[q] = true
	if !w.running {
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
}

// run wakes the pending queues until there are none; only one run is
// under way at a time.
func (w *waker) run() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		keys := slices.SortedFunc(maps.Keys(w.pending), func(a, b queueKey) int { return strings.Compare(a.webhookID, b.webhookID) })
		clear(w.pending)
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.svc.db.Tx(ctx, func(tx *store.Tx) error {
			for _, q := range keys {
				if err := w.svc.wake(ctx, tx, q.tenantID, q.webhookID); err != nil {
					return err
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			w.svc.db.Logger().Warn("webhooks: wake delivery queues (the sweep will)", "queues", len(keys), "err", err)
		}
	}
}

// wait waits for the wake-ups under way.
func (w *waker) wait() { w.wg.Wait() }

// acquire takes the queue's lease for owner, clearing its flag, and
// reports whether it did. A queue whose lease is held gets its flag set
// instead, so that its drain looks again before it stops.
func (s *Service) acquire(ctx context.Context, tenantID, webhookID, owner string) (bool, error) {
	got := false
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		n, err := tx.Exec(ctx, `UPDATE webhook_queues SET owner = $2, lease_until = $3, queued = FALSE, queued_at = NULL
			WHERE webhook_id = $1 AND (lease_until IS NULL OR lease_until < $4)`, webhookID, owner, now.Add(leaseTTL), now)
		if err != nil || n == 1 {
			got = n == 1
			return err
		}
		// Held, or no row yet (a retry of a delivery made before queues
		// existed): set the flag, making the row if need be.
		_, err = tx.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, tenant_id, queued, queued_at) VALUES ($1, $2, TRUE, $3)
			ON CONFLICT (webhook_id) DO UPDATE SET queued = TRUE, queued_at = COALESCE(webhook_queues.queued_at, $3)`,
			webhookID, tenantID, now)
		return err
	})
	if err != nil || got {
		return got, err
	}
	// A row just made is free: take it.
	return s.acquireFree(ctx, webhookID, owner)
}

func (s *Service) acquireFree(ctx context.Context, webhookID, owner string) (bool, error) {
	var n int64
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		var err error
		n, err = tx.Exec(ctx, `UPDATE webhook_queues SET owner = $2, lease_until = $3, queued = FALSE, queued_at = NULL
			WHERE webhook_id = $1 AND owner IS NULL`, webhookID, owner, now.Add(leaseTTL))
		return err
	})
	return n == 1, err
}

// heartbeat renews owner's lease until done is closed; when the lease is
// gone it cancels the drain.
func (s *Service) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, webhookID, owner string, done <-chan struct{}) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var n int64
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			n, err = tx.Exec(ctx, `UPDATE webhook_queues SET lease_until = $3 WHERE webhook_id = $1 AND owner = $2`,
				webhookID, owner, tx.Now().Add(leaseTTL))
			return err
		})
		if err == nil && n == 0 {
			cancel(errLeaseLost)
			return
		}
	}
}

// drain sends the webhook's due deliveries, in order of their events,
// while it holds the queue's lease and its budget lasts.
func (s *Service) drain(ctx context.Context, tenantID, webhookID string) (err error) {
	owner := store.NewID()
	got, err := s.acquire(ctx, tenantID, webhookID, owner)
	if err != nil || !got {
		return err
	}
	jobCtx := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go s.heartbeat(ctx, cancel, webhookID, owner, done)
	defer cancel(nil)
	defer close(done)
	defer func() {
		if err != nil || jobCtx.Err() != nil {
			// Failed, or out of time: hand the queue on now rather than
			// when the lease expires (the job's retry, or a new drain,
			// takes it).
			s.handOn(tenantID, webhookID, owner)
		}
	}()

	deadline := time.Now().Add(drainBudget)
	for {
		if ctx.Err() != nil {
			return nil // lease lost, or the job's time is up (handed on above)
		}
		w, err := loadQueueWebhook(ctx, s.db, tenantID, webhookID)
		if err != nil {
			return err
		}
		if reason := s.refusal(w); reason != "" {
			if err := s.expireQueue(ctx, w, reason); err != nil {
				return err
			}
		} else {
			if time.Now().After(deadline) {
				return s.yield(ctx, w, owner, 0)
			}
			sent, wait, err := s.drainBatch(ctx, w, owner, deadline)
			if err != nil {
				return err
			}
			if wait > 0 {
				return s.yield(ctx, w, owner, wait)
			}
			if sent > 0 {
				continue
			}
		}
		more, err := s.release(ctx, w, owner)
		if err != nil || !more {
			return err
		}
	}
}

// handOn lets owner's lease go with the flag set and a drain enqueued, on
// a context of its own (the drain's may be over).
func (s *Service) handOn(tenantID, webhookID, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.yield(ctx, &Webhook{ID: webhookID, TenantID: tenantID}, owner, 0); err != nil {
		s.db.Logger().Warn("webhooks: hand a delivery queue on (the sweep will)", "webhook", webhookID, "err", err)
	}
}

// refusal says why w's deliveries cannot be sent now ("" if they can).
func (s *Service) refusal(w *Webhook) string {
	switch {
	case w.deleted:
		return "Webhook was deleted"
	case !w.IsActive:
		return "Webhook is inactive"
	case !s.Enabled():
		return store.PublicMessage(ErrDisabled)
	}
	return ""
}

// drainBatch claims the next due deliveries, sends them one after the
// other, and records their outcomes together. It returns how many it
// sent, and a wait when the webhook's rate limit stopped it.
func (s *Service) drainBatch(ctx context.Context, w *Webhook, owner string, deadline time.Time) (int, time.Duration, error) {
	size := claimSize
	if w.RateLimitPerMinute > 0 {
		// About what the limit lets through within the budget.
		size = min(claimSize, int(drainBudget/(time.Minute/time.Duration(w.RateLimitPerMinute)))+1)
		if wait := s.limits.peek(w.ID, w.RateLimitPerMinute); wait > maxInlineWait {
			return 0, wait, nil
		}
	}
	var batch []*claimed
	err := s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		if held, err := holds(ctx, tx, w.ID, owner); err != nil || !held {
			batch = nil
			return err
		}
		var err error
		if batch, err = claim(ctx, tx, w, tx.Now(), size); err != nil || len(batch) == 0 {
			return err
		}
		// The webhook read after its deliveries: a change committed before
		// a claimed delivery (a secret rotated, a URL changed) is seen.
		fresh, err := loadQueueWebhook(ctx, tx, w.TenantID, w.ID)
		if err == nil {
			*w = *fresh
		}
		return err
	})
	if err != nil || len(batch) == 0 {
		return 0, 0, err
	}
	if s.refusal(w) != "" { // disabled or deleted meanwhile: the drain's next round expires them
		return 0, 0, s.batch.Do(func(ctx context.Context, tx *store.Tx) error { return s.recordBatch(ctx, tx, w, batch, nil) })
	}
	secrets, err := s.secretsOf(w)
	if err != nil {
		return 0, 0, err
	}
	var wait time.Duration
	outs := make([]outcome, 0, len(batch))
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
		out := s.send(ctx, w, d.Delivery, secrets)
		if ctx.Err() != nil {
			break // cut short by the drain's end, not the target's answer: sent again later
		}
		out.took = s.opts.Now().Sub(start)
		outs = append(outs, out)
		if out.delivered() {
			failures = 0
			continue
		}
		if failures++; out.gone || w.AutoDisableThreshold > 0 && failures >= w.AutoDisableThreshold {
			break // the webhook is about to be disabled: the rest expire
		}
	}
	err = s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		// A drain that lost its lease records nothing: the queue's new
		// drain sends what this one claimed again.
		if held, err := holds(ctx, tx, w.ID, owner); err != nil || !held {
			return err
		}
		return s.recordBatch(ctx, tx, w, batch, outs)
	})
	return len(outs), wait, err
}

// holds reports whether owner still holds the queue's lease. (It reads
// without locking: queue rows are locked in id order only, see waker. A
// drain whose lease expired unnoticed can at worst record a batch the new
// drain also sends, which at-least-once delivery allows.)
func holds(ctx context.Context, tx *store.Tx, webhookID, owner string) (bool, error) {
	n, err := store.Many(ctx, tx, func(sc store.Scanner) (int, error) {
		var one int
		return one, sc.Scan(&one)
	}, `SELECT 1 FROM webhook_queues WHERE webhook_id = $1 AND owner = $2 AND lease_until >= $3`, webhookID, owner, tx.Now())
	return len(n) == 1, err
}

// claim returns the next n due deliveries of w, in order of their events,
// marked sending: a pending one starts its next attempt (fresh); one
// already sending was cut short (its drain died) and is sent again as the
// same attempt.
func claim(ctx context.Context, tx *store.Tx, w *Webhook, now time.Time, n int) ([]*claimed, error) {
	ds, err := store.Many(ctx, tx, scanDelivery, `SELECT `+deliveryColumns+deliveryFrom+
		`d.tenant_id = $1 AND d.webhook_id = $2 AND d.status IN ('pending', 'sending')
		AND (d.next_retry_at IS NULL OR d.next_retry_at <= $3) ORDER BY d.event_id, d.id LIMIT $4`,
		w.TenantID, w.ID, now, n)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	var ids store.Args
	ids.Add(now)
	marks := make([]string, len(ds))
	out := make([]*claimed, len(ds))
	for i, d := range ds {
		c := &claimed{Delivery: d, fresh: d.Status == StatusPending}
		if c.fresh {
			d.Attempt++
		}
		d.Status, d.LastAttemptAt, d.UpdatedAt = StatusSending, &now, now
		marks[i], out[i] = ids.Add(d.ID), c
	}
	// By id alone (they are the tenant's, just read): with tenant_id too,
	// SQLite would walk the tenant's index rather than look the ids up.
	_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET attempt = attempt + (CASE WHEN status = 'pending' THEN 1 ELSE 0 END),
		status = 'sending', last_attempt_at = $1, updated_at = $1 WHERE id IN (`+strings.Join(marks, ", ")+`)`,
		ids.Values()...)
	return out, err
}

// claimed is a delivery a drain claimed; fresh when the claim started its
// attempt (rather than taking up one cut short).
type claimed struct {
	*Delivery
	fresh bool
}

// recordBatch stores the outcomes of a drain's sends (outs[i] is
// claimed[i]'s; claimed deliveries past the outcomes were not sent and go
// back to pending), counts them against the webhook, and disables it at a
// 410 or at its threshold.
func (s *Service) recordBatch(ctx context.Context, tx *store.Tx, w *Webhook, batch []*claimed, outs []outcome) error {
	now := tx.Now()
	failures, disable := w.ConsecutiveFailures, false
	var lastSuccess, lastFailure *time.Time
	for i, c := range batch {
		if i >= len(outs) {
			if err := unclaim(ctx, tx, c); err != nil {
				return err
			}
			continue
		}
		out := outs[i]
		s.applyOutcome(c.Delivery, out, true, now)
		if err := updateDelivery(ctx, tx, c.Delivery); err != nil {
			return err
		}
		if out.delivered() {
			failures, lastSuccess = 0, &now
			continue
		}
		failures, lastFailure = failures+1, &now
		if out.gone || w.AutoDisableThreshold > 0 && failures >= w.AutoDisableThreshold {
			disable = true
		}
	}
	if len(outs) == 0 {
		return nil
	}
	return s.countResults(ctx, tx, w, failures, lastSuccess, lastFailure, disable)
}

// unclaim puts a claimed delivery that was not sent back to pending,
// giving back the attempt under way: its next claim starts that attempt
// again (for one cut short before, the same attempt it had).
func unclaim(ctx context.Context, tx *store.Tx, c *claimed) error {
	return store.ExecOne(ctx, tx, `UPDATE webhook_deliveries SET status = 'pending', attempt = $3, updated_at = $4
		WHERE tenant_id = $1 AND id = $2`, c.TenantID, c.ID, max(0, c.Attempt-1), tx.Now())
}

// countResults stores the webhook's consecutive failures after a batch
// (lastSuccessAt is kept to the second: a busy webhook's row is not
// written by every batch), disabling it when the batch did.
func (s *Service) countResults(ctx context.Context, tx *store.Tx, w *Webhook, failures int, lastSuccess, lastFailure *time.Time, disable bool) error {
	if !disable && failures == 0 && w.ConsecutiveFailures == 0 && lastFailure == nil &&
		w.LastSuccessAt != nil && lastSuccess != nil && lastSuccess.Sub(*w.LastSuccessAt) < time.Second {
		return nil
	}
	now := tx.Now()
	n, err := tx.Exec(ctx, `UPDATE webhooks SET consecutive_failures = $3, last_success_at = COALESCE($4, last_success_at),
		last_failure_at = COALESCE($5, last_failure_at) WHERE tenant_id = $1 AND id = $2`,
		w.TenantID, w.ID, failures, lastSuccess, lastFailure)
	if err != nil || n == 0 || !disable {
		return err
	}
	n, err = tx.Exec(ctx, `UPDATE webhooks SET is_active = FALSE, updated_at = $3 WHERE tenant_id = $1 AND id = $2 AND is_active`,
		w.TenantID, w.ID, now)
	if err != nil || n == 0 {
		return err
	}
	w.IsActive, w.ConsecutiveFailures = false, failures
	_, err = tx.EmitData(ctx, EventWebhookDisabled, store.Scope{TenantID: w.TenantID, OrganizationID: w.OrganizationID}, w)
	return err
}

// expireQueue ends every delivery still to send of w (pending, retries
// included, or cut short) without sending it.
func (s *Service) expireQueue(ctx context.Context, w *Webhook, reason string) error {
	return s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'expired', error_message = $3, next_retry_at = NULL,
			updated_at = $4 WHERE tenant_id = $1 AND webhook_id = $2 AND status IN ('pending', 'sending')`,
			w.TenantID, w.ID, reason, tx.Now())
		return err
	})
}

// release lets the lease go unless the queue has due deliveries (a
// retry that came due since the last claim, or work committed since) or
// work arrived since the drain took it (the flag): then it clears the
// flag and reports more (the drain goes on). Letting go, it schedules a
// drain for the earliest future retry, if no earlier one is scheduled.
func (s *Service) release(ctx context.Context, w *Webhook, owner string) (more bool, err error) {
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		due, err := store.Many(ctx, tx, func(sc store.Scanner) (int, error) {
			var one int
			return one, sc.Scan(&one)
		}, `SELECT 1 FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND status IN ('pending', 'sending')
			AND (next_retry_at IS NULL OR next_retry_at <= $3) LIMIT 1`, w.TenantID, w.ID, tx.Now())
		if err != nil {
			return err
		}
		n := int64(0)
		if len(due) == 0 {
			n, err = tx.Exec(ctx, `UPDATE webhook_queues SET owner = NULL, lease_until = NULL
				WHERE webhook_id = $1 AND owner = $2 AND NOT queued`, w.ID, owner)
		}
		if err != nil {
			return err
		}
		if n == 1 {
			more = false
			return s.scheduleNextRetry(ctx, tx, w)
		}
		// Due work or the flag: drain on, if the lease is still ours.
		n, err = tx.Exec(ctx, `UPDATE webhook_queues SET queued = FALSE, queued_at = NULL WHERE webhook_id = $1 AND owner = $2`,
			w.ID, owner)
		more = n == 1 // otherwise the lease was lost: the queue is another drain's
		return err
	})
	return more, err
}

// yield lets the lease go with the flag set and a drain enqueued (after
// wait), so that other webhooks' drains get the worker meanwhile. The
// flag's time is when that drain is due, so the sweep leaves it alone
// until then.
func (s *Service) yield(ctx context.Context, w *Webhook, owner string, wait time.Duration) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		n, err := tx.Exec(ctx, `UPDATE webhook_queues SET owner = NULL, lease_until = NULL, queued = TRUE, queued_at = $3
			WHERE webhook_id = $1 AND owner = $2`, w.ID, owner, now.Add(wait))
		if err != nil || n == 0 {
			return err
		}
		var opts *jobs.Opts
		if wait > 0 {
			opts = &jobs.Opts{ScheduledAt: now.Add(wait)}
		}
		_, err = s.jobs.EnqueueTx(ctx, tx, DrainJob{TenantID: w.TenantID, WebhookID: w.ID}, opts)
		return err
	})
}

// scheduleNextRetry enqueues a drain at w's earliest future retry unless
// one is scheduled for that time or earlier.
func (s *Service) scheduleNextRetry(ctx context.Context, tx *store.Tx, w *Webhook) error {
	now := tx.Now()
	next, err := store.Many(ctx, tx, func(sc store.Scanner) (time.Time, error) {
		var t time.Time
		return t, sc.Scan(&t)
	}, `SELECT next_retry_at FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND status IN ('pending', 'sending')
		AND next_retry_at > $3 ORDER BY next_retry_at LIMIT 1`, w.TenantID, w.ID, now)
	if err != nil || len(next) == 0 {
		return err
	}
	n, err := tx.Exec(ctx, `UPDATE webhook_queues SET wake_at = $2 WHERE webhook_id = $1 AND (wake_at IS NULL OR wake_at <= $3 OR wake_at > $2)`,
		w.ID, next[0], now)
	if err != nil || n == 0 {
		return err
	}
	_, err = s.jobs.EnqueueTx(ctx, tx, DrainJob{TenantID: w.TenantID, WebhookID: w.ID}, &jobs.Opts{ScheduledAt: next[0]})
	return err
}

// sweep restarts the queues that have due deliveries but no live lease
// and no drain waiting: their drain died with its process (an owner
// whose lease expired: the flag may have been set meanwhile, by work that
// found the lease still live), or their wake-up was lost (a flag set long
// ago with no owner, whose drain job never came).
func (s *Service) sweep(ctx context.Context) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		type queue struct{ tenantID, webhookID string }
		stuck, err := store.Many(ctx, tx, func(sc store.Scanner) (queue, error) {
			var q queue
			return q, sc.Scan(&q.tenantID, &q.webhookID)
		}, `SELECT DISTINCT d.tenant_id, d.webhook_id FROM webhook_deliveries d
			LEFT JOIN webhook_queues q ON q.webhook_id = d.webhook_id
			WHERE d.status IN ('pending', 'sending') AND (d.next_retry_at IS NULL OR d.next_retry_at <= $1)
			AND (q.webhook_id IS NULL OR (q.lease_until IS NULL OR q.lease_until < $1)
				AND (NOT q.queued OR q.owner IS NOT NULL OR q.queued_at < $2))
			ORDER BY d.webhook_id`, // queue rows are locked in one order (see waker)
			now, now.Add(-staleQueued))
		if err != nil {
			return err
		}
		for _, q := range stuck {
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_queues (webhook_id, tenant_id, queued, queued_at) VALUES ($1, $2, TRUE, $3)
				ON CONFLICT (webhook_id) DO UPDATE SET queued = TRUE, queued_at = $3`, q.webhookID, q.tenantID, now); err != nil {
				return err
			}
			if _, err := s.jobs.EnqueueTx(ctx, tx, DrainJob{TenantID: q.tenantID, WebhookID: q.webhookID}, nil); err != nil {
				return err
			}
		}
		return nil
	})
}
