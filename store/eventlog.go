package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// EventPosition is an event's place in the event log, in commit order:
// an event committed after a reader has read up to a position always gets
// a greater one. Tx is the emitting transaction's id on PostgreSQL (0 on
// SQLite), Seq the event's number; positions compare by Tx, then Seq.
type EventPosition struct {
	// Tx is the emitting transaction's id (PostgreSQL), 0 on SQLite.
	Tx int64
	// Seq numbers the events (in emit order within a transaction).
	Seq int64
}

// Compare returns -1, 0 or +1 as p is before, at or after q.
func (p EventPosition) Compare(q EventPosition) int {
	switch {
	case p.Tx < q.Tx:
		return -1
	case p.Tx > q.Tx:
		return 1
	case p.Seq < q.Seq:
		return -1
	case p.Seq > q.Seq:
		return 1
	}
	return 0
}

// LoggedEvent is an event read from the log with its position.
type LoggedEvent struct {
	Event
	// Position is the event's place in the log.
	Position EventPosition
}

// EventLogFilter selects events for ReadEventLog.
type EventLogFilter struct {
	// After returns only events past this position (the zero position:
	// from the start of the log).
	After EventPosition
	// TenantID, when set, restricts the read to one tenant's events.
	TenantID string
	// Limit bounds the number of events; defaults to 100.
	Limit int
}

// eventLogDialect is implemented by the engines' dialects: the
// watermark below which every transaction has finished.
type eventLogDialect interface {
	// eventWatermark is an SQL expression: events whose tx is below it
	// are final (no transaction that could still commit one is below
	// it).
	eventWatermark() string
}

func (db *DB) eventWatermark() (string, error) {
	d, ok := db.dialect.(eventLogDialect)
	if !ok {
		return "", errors.New("store: the engine does not order its event log")
	}
	return d.eventWatermark(), nil
}

// ReadEventLog returns events past f.After in position order, only those
// that are final: on PostgreSQL, transactions commit in any order, so an
// event whose transaction is not older than every transaction still
// running could still be preceded by one that commits later; such events
// are left for a later read, and held reports that there were some (read
// again soon). A reader that starts each read at the last position it
// read therefore sees every committed event once, in position order,
// and never skips one. SQLite writes one transaction at a time, so every
// committed event is final there.
func ReadEventLog(ctx context.Context, db *DB, f EventLogFilter) (evs []LoggedEvent, held bool, err error) {
	wm, err := db.eventWatermark()
	if err != nil {
		return nil, false, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	w := Where("(tx, seq) > (?, ?)", f.After.Tx, f.After.Seq)
	if f.TenantID != "" {
		w.And("tenant_id = ?", f.TenantID)
	}
	rows, err := db.Query(ctx, `SELECT tx, seq, id, type, tenant_id, organization_id, data, occurred_at, `+wm+`
		FROM store_events WHERE `+w.SQL()+` ORDER BY tx, seq LIMIT `+w.Add(limit), w.Values()...)
	if err != nil {
		return nil, false, fmt.Errorf("store: read event log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ev LoggedEvent
		var tenant, org *string
		var data []byte
		var mark int64
		if err := rows.Scan(&ev.Position.Tx, &ev.Position.Seq, &ev.ID, &ev.Type, &tenant, &org, &data, &ev.OccurredAt, &mark); err != nil {
			return nil, false, fmt.Errorf("store: read event log: %w", err)
		}
		if ev.Position.Tx >= mark {
			held = true // and every later row too: they are in tx order
			break
		}
		ev.TenantID, ev.OrganizationID = deref(tenant), deref(org)
		ev.Data = data
		ev.OccurredAt = ev.OccurredAt.UTC()
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: read event log: %w", err)
	}
	return evs, held, nil
}

// EventLogHead returns the position of the newest final event (see
// ReadEventLog), the zero position when the log is empty: a reader that
// starts there sees the events committed from then on.
func EventLogHead(ctx context.Context, db *DB) (EventPosition, error) {
	wm, err := db.eventWatermark()
	if err != nil {
		return EventPosition{}, err
	}
	var p EventPosition
	err = db.QueryRow(ctx, `SELECT tx, seq FROM store_events WHERE tx < `+wm+` ORDER BY tx DESC, seq DESC LIMIT 1`).Scan(&p.Tx, &p.Seq)
	if errors.Is(err, ErrNotFound) {
		return EventPosition{}, nil
	}
	if err != nil {
		return EventPosition{}, fmt.Errorf("store: event log head: %w", err)
	}
	return p, nil
}

// Event log notices. A reader of the log (the events stream) wants to
// read as soon as events commit. In this process, every commit that
// emitted events calls the DB's event watchers (WatchEventLog). Across
// processes (PostgreSQL), once NotifyEventCommits was called, such a
// commit is also announced on the version channel as the reserved
// counter name eventsNotice, after the commit and outside its
// transaction: a notification inside it would take PostgreSQL's
// notification lock at every commit that emits an event, one such commit
// at a time database-wide. The announcement is coalesced: at most one is
// being sent per DB at a time, and commits made meanwhile are announced
// together by one more. A lost announcement (the listener reconnecting)
// delays a reader until its poll.
const eventsNotice = "store.events_committed"

// eventNotices is a DB's event watchers and its announcer's state.
type eventNotices struct {
	mu       sync.Mutex
	subs     map[uint64]func()
	nextID   uint64
	announce bool // NotifyEventCommits was called
	sending  bool // an announcement is being sent
	again    bool // commits came while it was
}

// NotifyEventCommits has every later commit of this DB that emitted
// events announced to the other processes sharing the database, whose
// WatchEventLog functions then run within milliseconds (PostgreSQL; it
// does nothing on SQLite, which one process owns). It costs one statement
// (SELECT pg_notify) per burst of commits: one at a time per DB, the
// commits made while one is sent announced by the next.
func (db *DB) NotifyEventCommits() {
	n := &db.eventNotices
	n.mu.Lock()
	defer n.mu.Unlock()
	n.announce = db.dialect.Notifies()
}

// WatchEventLog has fn called soon after events are committed: at once
// after each commit of this process that emitted events, and, on
// PostgreSQL, within milliseconds of another process's (once that process
// called NotifyEventCommits), and whenever the DB's listener reconnects
// (announcements may have been missed). A call says only "read the log":
// fn may be called more often than there are commits, and a reader must
// still poll now and then. fn must not block. The returned function ends
// the watch.
func (db *DB) WatchEventLog(fn func()) (stop func()) {
	n := &db.eventNotices
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[uint64]func(){}
	}
	n.nextID++
	id := n.nextID
	n.subs[id] = fn
	n.mu.Unlock()
	stopRemote := db.WatchVersions(func(name string, _ int64) {
		if name == eventsNotice || name == "" {
			fn()
		}
	})
	return func() {
		stopRemote()
		n.mu.Lock()
		delete(n.subs, id)
		n.mu.Unlock()
	}
}

// eventsCommitted runs after a commit that emitted events.
func (db *DB) eventsCommitted() {
	n := &db.eventNotices
	n.mu.Lock()
	fns := make([]func(), 0, len(n.subs))
	for _, fn := range n.subs {
		fns = append(fns, fn)
	}
	start := false
	if n.announce {
		if n.sending {
			n.again = true
		} else {
			n.sending, start = true, true
		}
	}
	n.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	if start {
		go db.announceEvents()
	}
}

// announceEvents sends announcements until no commit came during the
// last one.
func (db *DB) announceEvents() {
	n := &db.eventNotices
	channel := versionChannel(db.schema)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := db.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, eventsNotice+":0")
		cancel()
		if err != nil {
			db.logger.Debug("store: announcing committed events failed (readers poll)", "err", err)
		}
		n.mu.Lock()
		if !n.again {
			n.sending = false
			n.mu.Unlock()
			return
		}
		n.again = false
		n.mu.Unlock()
	}
}

// maxWatermark is the SQLite watermark: every committed event is final.
const maxWatermark = math.MaxInt64
