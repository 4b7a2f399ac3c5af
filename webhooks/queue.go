package webhooks

import (
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
// lease, and the periodic SweepJob restarts the queues left with due
// deliveries and no live lease.

// Timings of the queues.
const (
	// drainBudget is how long a drain starts new sends before it yields
	// its worker (and queues a follow-up drain behind other webhooks').
	drainBudget = drain.DefaultBudget
	// claimSize is how many deliveries a drain claims (marks sending) at
	// once; their outcomes are recorded together.
	claimSize = 50
	// sweepEvery is the period of SweepJob.
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

// drainBatch claims the next due deliveries, sends them one after the
// other, and records their outcomes together. It returns how many it
// sent, and a wait when the webhook's rate limit stopped it.
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
		// a batch the new drain also sends, which at-least-once delivery
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
		out := s.send(ctx, w.Webhook, d, secrets)
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
		if held, err := s.store.Holds(ctx, tx, key, owner, tx.Now()); err != nil || !held {
			return err
		}
		return s.recordBatch(ctx, tx, w, batch, outs)
	})
	return len(outs), wait, err
}

// recordBatch stores the outcomes of a drain's sends (outs[i] is
// batch[i]'s; claimed deliveries past the outcomes were not sent and go
// back to pending, giving back the attempt under way: their next claim
// starts that attempt again, for one cut short before the same attempt
// it had), counts them against the webhook, and disables it at a 410 or
// at its threshold.
func (s *Service) recordBatch(ctx context.Context, tx *store.Tx, w *SealedWebhook, batch []*Delivery, outs []outcome) error {
	now := tx.Now()
	failures, disable := w.ConsecutiveFailures, false
	var lastSuccess, lastFailure *time.Time
	for i, d := range batch {
		if i >= len(outs) {
			if err := s.store.UnclaimDelivery(ctx, tx, d, now); err != nil {
				return err
			}
			continue
		}
		out := outs[i]
		s.applyOutcome(d, out, true, now)
		if err := s.store.UpdateDelivery(ctx, tx, d); err != nil {
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
	return s.countResults(ctx, tx, w.Webhook, failures, lastSuccess, lastFailure, disable)
}

// countResults stores the webhook's consecutive failures after a batch
// (lastSuccessAt is kept to the second: a busy webhook's row is not
// written by every batch), disabling it when the batch did.
func (s *Service) countResults(ctx context.Context, tx *store.Tx, w *Webhook, failures int, lastSuccess, lastFailure *time.Time, disable bool) error {
	if !disable && failures == 0 && w.ConsecutiveFailures == 0 && lastFailure == nil &&
		w.LastSuccessAt != nil && lastSuccess != nil && lastSuccess.Sub(*w.LastSuccessAt) < time.Second {
		return nil
	}
	found, err := s.store.RecordResults(ctx, tx, w.TenantID, w.ID, failures, lastSuccess, lastFailure)
	if err != nil || !found || !disable {
		return err
	}
	changed, err := s.store.Deactivate(ctx, tx, w.TenantID, w.ID, tx.Now())
	if err != nil || !changed {
		return err
	}
	w.IsActive, w.ConsecutiveFailures = false, failures
	_, err = tx.EmitData(ctx, EventWebhookDisabled, store.Scope{TenantID: w.TenantID, OrganizationID: w.OrganizationID}, w)
	return err
}

// expireQueue ends every delivery still to send of w (pending, retries
// included, or cut short) without sending it.
func (s *Service) expireQueue(ctx context.Context, w *SealedWebhook, reason string) error {
	return s.batch.Do(func(ctx context.Context, tx *store.Tx) error {
		_, err := s.store.ExpireDeliveries(ctx, tx, w.TenantID, w.ID, reason, tx.Now())
		return err
	})
}

// sweep restarts the queues that have due deliveries but no live lease
// and no drain waiting: their drain died with its process, or their
// wake-up was lost.
func (s *Service) sweep(ctx context.Context) error { return s.queues.Sweep(ctx) }
