package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is a domain event: something that happened to the data, named
// "<module>.<entity>.<action>" (for example "directory.tenant.created").
// Events are written in the transaction that caused them, so a committed
// change always has its event and a rolled-back one never does.
type Event struct {
	// ID is a UUIDv7 assigned by Emit. It is also the idempotency key:
	// delivery is at least once, and a subscriber that sees an ID twice
	// must treat the second as a duplicate.
	ID string `json:"id"`
	// Type is the event name, "<module>.<entity>.<action>".
	Type string `json:"type"`
	// TenantID is the tenant the event belongs to; empty for global events.
	TenantID string `json:"tenantId,omitempty"`
	// OrganizationID is the organization, where the area is
	// organization-scoped.
	OrganizationID string `json:"organizationId,omitempty"`
	// Data is the payload, a JSON object. Emit stores "{}" when empty.
	Data json.RawMessage `json:"data"`
	// OccurredAt is the emitting transaction's time.
	OccurredAt time.Time `json:"occurredAt"`
}

// EmitHook runs inside the emitting transaction for every event; see
// DB.OnEmit.
type EmitHook func(ctx context.Context, tx *Tx, ev Event) error

// Emit writes ev in the transaction and returns it with ID and OccurredAt
// filled in. The event exists only if the transaction commits.
func (tx *Tx) Emit(ctx context.Context, ev Event) (Event, error) {
	evs, err := tx.EmitMany(ctx, []Event{ev})
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// eventInserts writes EmitMany's events in multi-row INSERTs.
var eventInserts = NewBatchInsert("store_events", "id, type, tenant_id, organization_id, data, occurred_at", "")

// PrepareEmitMany has EmitMany's statements prepared (see
// BatchInsert.Prepare): call it before a transaction that emits many
// events.
func (db *DB) PrepareEmitMany(ctx context.Context) { eventInserts.Prepare(ctx, db) }

// EmitMany is Emit of several events, written with multi-row INSERTs (a
// batch write's events cost a few statements rather than one each; on
// PostgreSQL several events are one statement, whatever their number). It
// fills in evs' IDs and OccurredAt in place and returns evs; the hooks run
// for each event in order once all are written.
func (tx *Tx) EmitMany(ctx context.Context, evs []Event) ([]Event, error) {
	if tx.readOnly {
		return nil, errors.New("store: emit in a read-only transaction")
	}
	if tx.Dialect().Name() == "postgres" && len(evs) > 1 {
		return tx.emitColumns(ctx, evs)
	}
	rows := make([][]any, len(evs))
	for i := range evs {
		ev := &evs[i]
		if ev.Type == "" {
			return nil, errors.New("store: emit: event has no type")
		}
		if ev.ID == "" {
			ev.ID = NewID()
		}
		ev.OccurredAt = tx.now
		if len(ev.Data) == 0 {
			ev.Data = json.RawMessage("{}")
		}
		if !json.Valid(ev.Data) {
			return nil, fmt.Errorf("store: emit %s: data is not valid JSON", ev.Type)
		}
		rows[i] = []any{ev.ID, ev.Type, nullString(ev.TenantID), nullString(ev.OrganizationID), string(ev.Data), ev.OccurredAt}
	}
	if _, err := eventInserts.Insert(ctx, tx, rows); err != nil {
		if len(evs) == 1 {
			return nil, fmt.Errorf("store: emit %s: %w", evs[0].Type, err)
		}
		return nil, fmt.Errorf("store: emit %d events: %w", len(evs), err)
	}
	return tx.emitted(ctx, evs)
}

// emitColumns is EmitMany's write of more than one event on PostgreSQL:
// one statement whatever their number (the multi-row INSERTs of 50, 20,
// 10, 5, 2 and 1 rows took three for a shared transaction's 8 or 9), the
// columns as arrays, unnested in the events' order (WITH ORDINALITY …
// ORDER BY), which is the order their positions (seq) are given in, as
// with the multi-row INSERTs. The statement is queued (ExecLater): it
// goes to the server with the transaction's next statement, often an
// emit hook's, or its commit.
func (tx *Tx) emitColumns(ctx context.Context, evs []Event) ([]Event, error) {
	ids, types, tenants, orgs, data := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)),
		make([]string, len(evs)), make([]string, len(evs))
	for i := range evs {
		ev := &evs[i]
		if ev.Type == "" {
			return nil, errors.New("store: emit: event has no type")
		}
		if ev.ID == "" {
			ev.ID = NewID()
		}
		ev.OccurredAt = tx.now
		if len(ev.Data) == 0 {
			ev.Data = json.RawMessage("{}")
		}
		if !json.Valid(ev.Data) {
			return nil, fmt.Errorf("store: emit %s: data is not valid JSON", ev.Type)
		}
		ids[i], types[i], tenants[i], orgs[i], data[i] = ev.ID, ev.Type, ev.TenantID, ev.OrganizationID, string(ev.Data)
	}
	err := tx.ExecLater(ctx, `INSERT INTO store_events (id, type, tenant_id, organization_id, data, occurred_at)
		SELECT v.id, v.type, NULLIF(v.tenant_id, ''), NULLIF(v.organization_id, ''), v.data::jsonb, $6
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
			AS v (id, type, tenant_id, organization_id, data, i)
		ORDER BY v.i`, ids, types, tenants, orgs, data, tx.now)
	if err != nil {
		return nil, fmt.Errorf("store: emit %d events: %w", len(evs), err)
	}
	return tx.emitted(ctx, evs)
}

// emitted runs the emit hooks on evs, written in tx, and keeps them for
// the commit.
func (tx *Tx) emitted(ctx context.Context, evs []Event) ([]Event, error) {
	tx.db.mu.RLock()
	hooks := tx.db.emitHooks
	tx.db.mu.RUnlock()
	for _, ev := range evs {
		for _, h := range hooks {
			if err := h(ctx, tx, ev); err != nil {
				return nil, fmt.Errorf("store: emit %s: %w", ev.Type, err)
			}
		}
		tx.events = append(tx.events, ev)
	}
	return evs, nil
}

// EmitData is Emit with the payload given as a value to marshal.
func (tx *Tx) EmitData(ctx context.Context, typ string, sc Scope, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("store: emit %s: %w", typ, err)
	}
	return tx.Emit(ctx, Event{Type: typ, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, Data: b})
}

// EventFilter selects events for ListEvents.
type EventFilter struct {
	// TenantID restricts the list to one tenant. Required.
	TenantID string
	// Type, when set, restricts the list to one event type.
	Type string
	// AfterID returns only events newer than this id (ids are time-ordered).
	AfterID string
	// Limit bounds the number of events; defaults to 100.
	Limit int
}

// ListEvents returns a tenant's events, oldest first.
func ListEvents(ctx context.Context, q Querier, f EventFilter) ([]Event, error) {
	w := Where("tenant_id = ?", f.TenantID)
	if f.Type != "" {
		w.And("type = ?", f.Type)
	}
	if f.AfterID != "" {
		w.And("id > ?", f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	return Many(ctx, q, scanEvent, `SELECT id, type, tenant_id, organization_id, data, occurred_at
		FROM store_events WHERE `+w.SQL()+` ORDER BY id LIMIT `+w.Add(limit), w.Values()...)
}

// GetEvent returns one event by id.
func GetEvent(ctx context.Context, q Querier, id string) (Event, error) {
	return One(ctx, q, scanEvent, `SELECT id, type, tenant_id, organization_id, data, occurred_at
		FROM store_events WHERE id = $1`, id)
}

// DeleteEventsBefore removes events that occurred before t and returns how
// many it removed. A periodic job calls it to bound the event log.
func DeleteEventsBefore(ctx context.Context, q Querier, t time.Time) (int64, error) {
	return q.Exec(ctx, `DELETE FROM store_events WHERE occurred_at < $1`, t)
}

func scanEvent(s Scanner) (Event, error) {
	var ev Event
	var tenant, org *string
	var data []byte
	if err := s.Scan(&ev.ID, &ev.Type, &tenant, &org, &data, &ev.OccurredAt); err != nil {
		return Event{}, err
	}
	ev.TenantID, ev.OrganizationID = deref(tenant), deref(org)
	ev.Data = data
	ev.OccurredAt = ev.OccurredAt.UTC()
	return ev, nil
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// EventType describes an event type an area emits, for catalogues (the
// webhooks area lists them): ID is the event name, "<module>.<entity>.<action>".
type EventType struct {
	ID, Label, Description string
	// ClientBroadcast marks the events that clients (browsers, apps)
	// receive live through the events stream (package stream), besides
	// webhooks. Each area flags its own types.
	ClientBroadcast bool
	// ViewFeature is the feature a caller must hold to receive the
	// type's events on the stream: the one its area's read routes need.
	// Empty: any authenticated caller of the event's tenant and
	// organization.
	ViewFeature string
	// RecipientField, when set, names a top-level field of the events'
	// data holding a user id (for example "userId"): the stream then
	// delivers each event only to that user's sessions, and to no API
	// key. An event whose field is missing or empty reaches nobody.
	RecipientField string
}
