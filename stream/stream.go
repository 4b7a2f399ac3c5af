package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// Defaults of Options, and the stream's fixed timings.
const (
	// DefaultBuffer is how many messages a subscriber may fall behind
	// before it is ended with an overflow message.
	DefaultBuffer = 1000
	// Window is how old the last event a reconnecting client saw may be
	// for it to receive what it missed; an older one receives a reset
	// message first. The event log keeps events longer than this
	// (jobs.MinEventRetention).
	Window = 24 * time.Hour
	// Heartbeat is how often a stream that has nothing to send sends a
	// comment, so that proxies and clients see a live connection.
	Heartbeat = 15 * time.Second
	// DefaultPoll is how often the hub reads the event log when nothing
	// woke it: the fallback for a notification that was lost.
	DefaultPoll = time.Second
	// maxHeldWait bounds the wait between reads while events are held
	// back by a transaction still running (PostgreSQL).
	maxHeldWait = 20 * time.Millisecond
	// maxTypes bounds a filter's patterns.
	maxTypes = 100
	// page is how many events one read of the log takes.
	page = 500
)

// Options tunes a Hub. The zero value is ready to use.
type Options struct {
	// Buffer is how many messages a subscriber may have waiting (taken
	// from the log, not yet read with Next) before it is ended with an
	// overflow message. Defaults to DefaultBuffer.
	Buffer int
	// Poll is how often the hub reads the log when nothing woke it.
	// Defaults to DefaultPoll.
	Poll time.Duration
	// Logger receives the hub's warnings. Defaults to slog.Default().
	Logger *slog.Logger
}

// Kind is what a Message is.
type Kind string

// The kinds of messages.
const (
	// KindEvent carries an event.
	KindEvent Kind = "event"
	// KindReset says the subscriber's last event id was not usable (too
	// old, or not an id of this stream): what happened since is not
	// replayed, and the client should reload its state. Events follow
	// from the time of the subscription.
	KindReset Kind = "reset"
	// KindOverflow is the last message of a subscriber that fell more
	// than the buffer behind: reconnect with the last event id to
	// receive the rest from the log.
	KindOverflow Kind = "overflow"
)

// Message is what Subscription.Next returns.
type Message struct {
	// Kind is what the message is.
	Kind Kind
	// ID is the event's opaque position in the log (KindEvent only):
	// ids increase along the stream; pass the last one received as
	// Filter.LastEventID to resume after it.
	ID string
	// Event is the event (KindEvent only).
	Event store.Event
}

// Payload is the message's JSON body: for an event the body a webhook
// receives ({type, timestamp, data, idempotencyKey}), "{}" otherwise.
func (m Message) Payload() ([]byte, error) {
	if m.Kind != KindEvent {
		return []byte("{}"), nil
	}
	return store.EventPayload(m.Event)
}

// Filter selects what a subscriber receives, within what its identity
// may see.
type Filter struct {
	// Types are event patterns, as webhooks take them ("*",
	// "entities.record.*", "progress.job.completed"); none means every
	// broadcast type.
	Types []string
	// LastEventID is the id of the last event the client received: the
	// events after it are replayed from the log first.
	LastEventID string
}

// ErrClosed is Next's error once the subscription is over (it was
// closed, its hub was closed, or it overflowed and said so).
var ErrClosed = errors.New("stream: subscription closed")

// Hub follows the event log of one database and fans its broadcast
// events out to subscribers. It is safe for concurrent use.
type Hub struct {
	db     *store.DB
	types  map[string]store.EventType // broadcast types by id
	opts   Options
	logger *slog.Logger

	mu       sync.Mutex
	byTenant map[string]map[*Subscription]struct{}
	cursor   store.EventPosition // how far the pump has read
	running  bool
	closed   bool
	wake     chan struct{}
	stop     context.CancelFunc
	done     chan struct{}

	reads, heldReads, overflows atomic.Int64
}

// Stats are a hub's counters since New.
type Stats struct {
	// Subscribers is how many subscriptions are open.
	Subscribers int
	// Reads counts the hub's reads of the log; HeldReads those that found
	// events not yet final (a transaction older than them still running,
	// PostgreSQL), which are read again within 20 ms.
	Reads, HeldReads int64
	// Overflows counts subscriptions ended for falling behind.
	Overflows int64
}

// Stats returns the hub's counters, for metrics and tests.
func (h *Hub) Stats() Stats {
	return Stats{Subscribers: h.Subscribers(), Reads: h.reads.Load(), HeldReads: h.heldReads.Load(), Overflows: h.overflows.Load()}
}

// New returns a hub over db that broadcasts the types of types that have
// ClientBroadcast set. It starts nothing until the first Subscribe, and
// has db announce its commits to other processes' hubs
// (store.DB.NotifyEventCommits).
func New(db *store.DB, types []store.EventType, opts Options) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	h := &Hub{db: db, types: map[string]store.EventType{}, opts: opts, logger: opts.Logger,
		byTenant: map[string]map[*Subscription]struct{}{}, wake: make(chan struct{}, 1)}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	for _, et := range types {
		if et.ClientBroadcast {
			h.types[et.ID] = et
		}
	}
	db.NotifyEventCommits()
	return h
}

// Types returns the broadcast event types, in no particular order.
func (h *Hub) Types() []store.EventType {
	out := make([]store.EventType, 0, len(h.types))
	for _, et := range h.types {
		out = append(out, et)
	}
	return out
}

// Subscribe starts a subscription for id, the caller, to the broadcast
// events of its tenant that it may see: of organizations its scope
// allows (and of none), of types whose ViewFeature it holds, whose
// recipient (RecipientField) is its user, and that f selects. With
// f.LastEventID, the events after that one are replayed from the log
// first (or a reset message comes first when it is too old or not an
// id). Read with Next; Close when done. ctx bounds only the call.
func (h *Hub) Subscribe(ctx context.Context, id *identity.Identity, f Filter) (*Subscription, error) {
	if id == nil {
		return nil, identity.ErrUnauthenticated
	}
	if id.TenantID == "" {
		return nil, store.Invalid("tenantId", "is required: a stream carries one tenant's events (select one)")
	}
	if len(f.Types) > maxTypes {
		return nil, store.Invalid("types", fmt.Sprintf("lists %d patterns; at most %d", len(f.Types), maxTypes))
	}
	for _, p := range f.Types {
		if !store.ValidEventPattern(p) {
			return nil, store.Invalid("types", fmt.Sprintf("%q is not an event pattern: \"*\", or dot-separated lowercase names (letters, digits, _), optionally ending in \".*\"", p))
		}
	}
	s := &Subscription{hub: h, tenant: id.TenantID, scope: id.Scope(), userID: id.UserID,
		allowed: map[string]store.EventType{}, signal: make(chan struct{}, 1)}
	for typ, et := range h.types {
		if et.ViewFeature != "" && !id.HasFeature(et.ViewFeature) {
			continue
		}
		if et.RecipientField != "" && id.UserID == "" {
			continue
		}
		if len(f.Types) > 0 && !matchesAny(f.Types, typ) {
			continue
		}
		s.allowed[typ] = et
	}
	var from store.EventPosition
	replay := false
	if f.LastEventID != "" {
		pos, at, ok := ParseID(f.LastEventID)
		switch {
		case !ok, at.Before(h.db.Now().Add(-Window)):
			s.reset = true
		default:
			from, replay = pos, true
		}
	}
	if err := h.register(ctx, s); err != nil {
		return nil, err
	}
	if replay {
		s.last, s.replaying = from, true
	} else {
		s.last = s.liveFrom
	}
	return s, nil
}

// register adds s to the hub, starting the pump on first use, and sets
// s.liveFrom: the pump offers s every event past it.
func (h *Hub) register(ctx context.Context, s *Subscription) error {
	h.mu.Lock()
	if !h.running && !h.closed {
		h.mu.Unlock()
		head, err := store.EventLogHead(ctx, h.db)
		if err != nil {
			return err
		}
		h.mu.Lock()
		if !h.running && !h.closed {
			h.cursor, h.running = head, true
			pctx, cancel := context.WithCancel(context.Background())
			h.stop, h.done = cancel, make(chan struct{})
			stopWatch := h.db.WatchEventLog(h.poke)
			go h.pump(pctx, stopWatch)
		}
	}
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	s.liveFrom = h.cursor
	subs := h.byTenant[s.tenant]
	if subs == nil {
		subs = map[*Subscription]struct{}{}
		h.byTenant[s.tenant] = subs
	}
	subs[s] = struct{}{}
	return nil
}

func (h *Hub) unregister(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if subs := h.byTenant[s.tenant]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(h.byTenant, s.tenant)
		}
	}
}

// poke wakes the pump (a commit, a notification); it never blocks.
func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close ends every subscription (Next answers ErrClosed) and stops the
// hub's reading. Later Subscribes fail with ErrClosed. A nil Hub's Close
// does nothing.
func (h *Hub) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	stop, done := h.stop, h.done
	var subs []*Subscription
	for _, m := range h.byTenant {
		for s := range m {
			subs = append(subs, s)
		}
	}
	h.byTenant = map[string]map[*Subscription]struct{}{}
	h.mu.Unlock()
	for _, s := range subs {
		s.end()
	}
	if stop != nil {
		stop()
		<-done
	}
}

// Subscribers returns how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.byTenant {
		n += len(m)
	}
	return n
}

// pump reads the log past the cursor whenever woken (this process's
// commits, other processes' announcements) or every Poll, and offers each
// event to its tenant's subscribers. Events not yet final (an older
// transaction still running, PostgreSQL) are read again soon: 2 ms,
// doubling to maxHeldWait, while some are held.
func (h *Hub) pump(ctx context.Context, stopWatch func()) {
	defer close(h.done)
	defer stopWatch()
	timer := time.NewTimer(0)
	defer timer.Stop()
	heldWait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
		}
		more, held, err := h.readOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := h.opts.Poll
		switch {
		case err != nil:
			h.logger.Warn("stream: reading the event log failed; retrying", "err", err)
			heldWait = 0
		case more:
			wait = 0
		case held:
			heldWait = min(max(2*heldWait, 2*time.Millisecond), maxHeldWait)
			wait = heldWait
		default:
			heldWait = 0
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if wait == 0 {
			h.poke()
			wait = h.opts.Poll
		}
		timer.Reset(wait)
	}
}

// readOnce reads one page past the cursor and fans it out; more reports
// a full page.
func (h *Hub) readOnce(ctx context.Context) (more, held bool, err error) {
	h.mu.Lock()
	after := h.cursor
	h.mu.Unlock()
	evs, held, err := store.ReadEventLog(ctx, h.db, store.EventLogFilter{After: after, Limit: page})
	if err != nil {
		return false, false, err
	}
	h.reads.Add(1)
	if held {
		h.heldReads.Add(1)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range evs {
		ev := &evs[i]
		if ev.Position.Compare(h.cursor) <= 0 {
			continue
		}
		h.cursor = ev.Position
		if _, ok := h.types[ev.Type]; !ok {
			continue
		}
		for s := range h.byTenant[ev.TenantID] {
			s.offer(ev)
		}
	}
	return len(evs) == page, held, nil
}

// Subscription is one subscriber's stream. Next is for one goroutine at a
// time; Close may be called from any.
type Subscription struct {
	hub     *Hub
	tenant  string
	scope   store.Scope
	userID  string
	allowed map[string]store.EventType // the types it receives

	// Read by Next only.
	reset      bool                // a reset message is due first
	replaying  bool                // reading the log up to liveFrom
	replayDone bool                // the log was read up to liveFrom
	replayBuf  []store.LoggedEvent // a page of the replay
	last       store.EventPosition // the last position passed on (or skipped)
	liveFrom   store.EventPosition // set at registration, under the hub's lock

	mu         sync.Mutex
	inbox      []*store.LoggedEvent // offered by the pump, not yet read
	overflowed bool
	closed     bool
	signal     chan struct{}
}

// sees reports whether the subscriber may receive ev (its tenant, type,
// organization and recipient).
func (s *Subscription) sees(ev *store.LoggedEvent) bool {
	et, ok := s.allowed[ev.Type]
	if !ok || ev.TenantID != s.tenant || !s.scope.AllowsOrganization(ev.OrganizationID) {
		return false
	}
	if et.RecipientField != "" {
		return recipient(ev.Data, et.RecipientField) == s.userID
	}
	return true
}

// recipient returns the string at field of the JSON object data, "" when
// it is absent or not a string.
func recipient(data json.RawMessage, field string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(m[field], &v) != nil {
		return ""
	}
	return v
}

// offer queues ev for the subscriber (called by the pump, under the
// hub's lock).
func (s *Subscription) offer(ev *store.LoggedEvent) {
	if !s.sees(ev) {
		return
	}
	s.mu.Lock()
	switch {
	case s.closed || s.overflowed:
	case len(s.inbox) >= s.hub.opts.Buffer:
		s.overflowed, s.inbox = true, nil
		s.hub.overflows.Add(1)
	default:
		s.inbox = append(s.inbox, ev)
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Next returns the next message, waiting until there is one or ctx ends
// (then ctx's error, and the subscription carries on). It replays the log
// first when the subscription resumes, then passes on live events, each
// once and in log order. After an overflow message, and once the
// subscription is closed, it answers ErrClosed.
func (s *Subscription) Next(ctx context.Context) (Message, error) {
	for {
		m, ok, err := s.TryNext(ctx)
		if err != nil || ok {
			return m, err
		}
		select {
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-s.signal:
		}
	}
}

// TryNext is Next without waiting for live events: ok is false when none
// is ready. It may still read the log (a replay), bounded by ctx.
func (s *Subscription) TryNext(ctx context.Context) (m Message, ok bool, err error) {
	if s.reset {
		s.reset = false
		return Message{Kind: KindReset}, true, nil
	}
	for s.replaying {
		if s.isClosed() {
			return Message{}, false, ErrClosed
		}
		if len(s.replayBuf) > 0 {
			ev := s.replayBuf[0]
			s.replayBuf = s.replayBuf[1:]
			return eventMessage(&ev), true, nil
		}
		if s.replayDone {
			s.replaying, s.replayBuf = false, nil
			break
		}
		evs, _, err := store.ReadEventLog(ctx, s.hub.db, store.EventLogFilter{After: s.last, TenantID: s.tenant, Limit: page})
		if err != nil {
			return Message{}, false, err
		}
		s.replayDone = len(evs) < page
		for i := range evs {
			ev := &evs[i]
			if ev.Position.Compare(s.liveFrom) > 0 {
				s.replayDone = true // the pump offers the rest
				break
			}
			s.last = ev.Position
			if s.sees(ev) {
				s.replayBuf = append(s.replayBuf, *ev)
			}
		}
	}
	for {
		s.mu.Lock()
		if s.overflowed && !s.closed {
			s.closed = true
			s.mu.Unlock()
			s.hub.unregister(s)
			return Message{Kind: KindOverflow}, true, nil
		}
		if s.closed {
			s.mu.Unlock()
			return Message{}, false, ErrClosed
		}
		if len(s.inbox) == 0 {
			s.mu.Unlock()
			return Message{}, false, nil
		}
		ev := s.inbox[0]
		s.inbox[0] = nil
		s.inbox = s.inbox[1:]
		if len(s.inbox) == 0 {
			s.inbox = nil // let the backing array go
		}
		s.mu.Unlock()
		if ev.Position.Compare(s.last) <= 0 {
			continue // replayed already, or before the client's last id
		}
		s.last = ev.Position
		return eventMessage(ev), true, nil
	}
}

func eventMessage(ev *store.LoggedEvent) Message {
	return Message{Kind: KindEvent, ID: FormatID(ev.Position, ev.OccurredAt), Event: ev.Event}
}

func (s *Subscription) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// end marks the subscription closed and wakes its reader.
func (s *Subscription) end() {
	s.mu.Lock()
	s.closed, s.inbox = true, nil
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.unregister(s)
	s.end()
}

// Waiting returns how many live messages wait to be read.
func (s *Subscription) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inbox)
}

// FormatID returns the stream id of the event at pos that occurred at t:
// 16 hex digits of the position's Tx, 16 of its Seq, 11 of t in unix
// milliseconds. Ids of later positions compare greater as strings.
func FormatID(pos store.EventPosition, t time.Time) string {
	return fmt.Sprintf("%016x%016x%011x", uint64(pos.Tx), uint64(pos.Seq), uint64(max(t.UnixMilli(), 0)))
}

// ParseID reads an id FormatID made; ok is false for anything else.
func ParseID(id string) (pos store.EventPosition, at time.Time, ok bool) {
	if len(id) != 43 || strings.ToLower(id) != id {
		return pos, at, false
	}
	tx, err1 := strconv.ParseUint(id[:16], 16, 63)
	seq, err2 := strconv.ParseUint(id[16:32], 16, 63)
	ms, err3 := strconv.ParseUint(id[32:], 16, 63)
	if err1 != nil || err2 != nil || err3 != nil {
		return pos, at, false
	}
	return store.EventPosition{Tx: int64(tx), Seq: int64(seq)}, time.UnixMilli(int64(ms)).UTC(), true
}

func matchesAny(patterns []string, typ string) bool {
	for _, p := range patterns {
		if store.EventMatches(p, typ) {
			return true
		}
	}
	return false
}
