package jobs

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// eventQueue holds event deliveries, apart from other work so that a
// backlog of one never delays the other.
const eventQueue = "events"

// Subscription receives committed domain events.
type Subscription struct {
	// Name identifies the subscriber; it is stored with each delivery job,
	// so keep it stable across releases.
	Name string
	// Match selects the event types the subscriber wants; nil means all.
	Match func(eventType string) bool
	// Handle processes one event. An error retries the delivery later.
	// Delivery is at least once: Handle must treat a repeated event ID as
	// a duplicate.
	Handle func(ctx context.Context, ev store.Event) error
}

// Subscribe registers a subscriber before Start. Every event committed
// afterwards that it matches reaches Handle at least once, on one of the
// processes sharing the database; a rolled-back event never does.
func (e *Engine) Subscribe(s Subscription) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return fmt.Errorf("jobs: Subscribe(%s) after Start", s.Name)
	}
	for _, have := range e.subs {
		if have.Name == s.Name {
			return fmt.Errorf("jobs: subscriber %s registered twice", s.Name)
		}
	}
	e.subsMu.Lock()
	e.subs = append(e.subs, s)
	e.subsMu.Unlock()
	return nil
}

// eventArgs is the job delivering one event to one subscriber.
type eventArgs struct {
	Subscriber string      `json:"subscriber"`
	Event      store.Event `json:"event"`
}

func (eventArgs) Kind() string { return "tenantkit.event" }

// MinEventRetention is the shortest time the domain event log keeps
// events, whatever Config.EventRetention says: the events stream replays
// the last 24 hours of a tenant's events to a client that reconnects,
// and on PostgreSQL an event is stamped with its transaction's start, so
// an hour more covers events that a transaction of up to an hour
// committed after newer-stamped ones.
const MinEventRetention = 25 * time.Hour

type cleanupArgs struct{}

func (cleanupArgs) Kind() string { return "tenantkit.events.cleanup" }

func registerEvents(e *Engine) {
	// The registrations below happen in New, before anyone can call Start.
	_ = Register(e, WorkFunc[eventArgs](e.deliverEvent), &RegisterOpts{Queue: eventQueue})
	_ = Register(e, WorkFunc[cleanupArgs](e.cleanupEvents), nil)
	e.Periodic(time.Hour, func() Args { return cleanupArgs{} })
	e.db.OnEmit(e.enqueueDeliveries)
}

// enqueueDeliveries runs inside the emitting transaction (store.OnEmit).
func (e *Engine) enqueueDeliveries(ctx context.Context, tx *store.Tx, ev store.Event) error {
	e.subsMu.RLock()
	subs := e.subs
	e.subsMu.RUnlock()
	var args []Args
	for _, s := range subs {
		if s.Match == nil || s.Match(ev.Type) {
			args = append(args, eventArgs{Subscriber: s.Name, Event: ev})
		}
	}
	_, err := e.EnqueueManyTx(ctx, tx, args, nil)
	return err
}

func (e *Engine) deliverEvent(ctx context.Context, job *Job[eventArgs]) error {
	e.subsMu.RLock()
	var sub *Subscription
	for i := range e.subs {
		if e.subs[i].Name == job.Args.Subscriber {
			sub = &e.subs[i]
		}
	}
	e.subsMu.RUnlock()
	if sub == nil {
		// Another process sharing the database may have it (a rolling
		// deploy): retry rather than drop the delivery.
		return fmt.Errorf("jobs: no subscriber %q in this process", job.Args.Subscriber)
	}
	return sub.Handle(ctx, job.Args.Event)
}

func (e *Engine) cleanupEvents(ctx context.Context, _ *Job[cleanupArgs]) error {
	retention := max(cmp.Or(e.cfg.EventRetention, 7*24*time.Hour), MinEventRetention)
	n, err := store.DeleteEventsBefore(ctx, e.db, e.db.Now().Add(-retention))
	if err == nil && n > 0 {
		e.logger.InfoContext(ctx, "jobs: removed old events", "count", n)
	}
	if err != nil {
		return err
	}
	_, err = e.deleteLeases(ctx, e.db.Now().Add(-time.Hour))
	return err
}
