package entities

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// RecordUpsert is one record of UpsertRecordsTx: its id (a UUID the
// caller derives, so that writing the same item again finds the same
// record) and values (keys with or without "cf_").
type RecordUpsert struct {
	RecordID string
	Values   map[string]any // see the type comment
}

// UpsertOutcome is what became of one RecordUpsert.
type UpsertOutcome struct {
	// Created: the record is new; otherwise it was updated (unless
	// Skipped or Err).
	Created bool
	// Skipped: a record of that id exists but is deleted (it is left
	// alone), or the id appears twice in the batch (the first wins). An id
	// held by a record of another entity fails the whole batch
	// (store.ErrConflict).
	Skipped bool
	// Err is why the item was not written: its validation error, or
	// ErrOutsideScope.
	Err error
}

// ErrOutsideScope is the UpsertOutcome.Err of an item whose record (live
// or deleted) belongs to an organization the caller's scope does not
// allow (store.Scope.AllowsOrganization): the record is left as it is,
// and nothing else of it is told.
var ErrOutsideScope = store.Errorf(store.ErrForbidden, "record exists in an organization the caller may not write")

// UpsertRecordsTx writes a batch of records of entityID in the caller's
// transaction tx (at most 1000; the caller commits them with its own
// changes, as the data sync area commits a batch with its cursor): each
// new id is created, each existing live record of the entity updated
// (values merged, null clearing one), each validated as CreateRecord and
// UpdateRecord validate. New records belong to the scope's organization
// (store.Scope, from ctx). An existing record is updated only when the
// scope may read its organization, as UpdateRecord finds only such
// records: one of another organization is left alone and its item gets
// ErrOutsideScope. An item failing validation gets its error in its
// outcome and is not written; the others are. Every write has its domain
// event, and value counts follow. It returns one outcome per item, in
// order.
//
// The batch costs a few statements, not a few per record: one reads (and
// locks) the records of its ids (Store.LockRecords), the new ones are
// written as CreateRecords writes them (Store.InsertRecords), the updated
// ones together (Store.UpdateRecords), the events together
// (store.Tx.EmitMany). Their statements are prepared once the first
// batch commits, for the next ones.
func (s *Service) UpsertRecordsTx(ctx context.Context, tx *store.Tx, entityID string, items []RecordUpsert) ([]UpsertOutcome, error) {
	if len(items) > maxBatchRecords {
		return nil, store.Invalid("records", "must be at most 1000 records")
	}
	sc, id, defs, err := s.writeContextIn(ctx, tx, entityID)
	if err != nil {
		return nil, err
	}
	out := make([]UpsertOutcome, len(items))
	ids := make([]string, 0, len(items))
	for i := range items {
		items[i].RecordID = strings.ToLower(items[i].RecordID)
		if !isUUIDText(items[i].RecordID) {
			out[i].Err = store.Invalid("recordId", "must be a UUID")
			continue
		}
		ids = append(ids, items[i].RecordID)
	}
	// The tenant's records of these ids, of any entity and organization:
	// an id is the caller's only when no record of the tenant holds it,
	// and a record found is updated only within the caller's scope.
	found, err := s.store.LockRecords(ctx, tx, sc.TenantID, ids)
	if err != nil {
		return nil, err
	}
	existing := make(map[string]*Record, len(found))
	for _, r := range found {
		existing[r.ID] = r
	}
	now := tx.Now()
	var created []*Record
	var changes []RecordChange
	events := make([]store.Event, 0, len(items))
	seen := make(map[string]bool, len(ids))
	for i, it := range items {
		if out[i].Err != nil {
			continue
		}
		values, err := cleanValues(defs, it.Values)
		if err != nil {
			out[i].Err = err
			continue
		}
		r, exists := existing[it.RecordID]
		switch {
		case seen[it.RecordID]:
			out[i].Skipped = true // the same id twice in one batch: the first wins
			continue
		case exists && r.EntityID == id && !sc.AllowsOrganization(r.OrganizationID):
			// Before the deleted check: live or deleted, the item fails
			// alike, so the outcome tells nothing of the record.
			out[i].Err = ErrOutsideScope
			continue
		case exists && r.EntityID == id && r.DeletedAt != nil:
			out[i].Skipped = true
			continue
		case exists && r.EntityID == id:
			// Merged as UpdateRecord merges, into a new map: r stays as
			// read, for the count changes.
			merged := make(map[string]any, len(r.Values)+len(values))
			for k, v := range r.Values {
				merged[k] = v
			}
			for k, v := range values {
				if v == nil {
					delete(merged, k)
				} else {
					merged[k] = v
				}
			}
			if len(merged) > maxRecordFields {
				out[i].Err = store.Invalid("_customFields", "Too many custom fields (at most "+strconv.Itoa(maxRecordFields)+")")
				continue
			}
			if err := missingRequired(defs, merged); err != nil {
				out[i].Err = err
				continue
			}
			next := *r
			next.Values, next.UpdatedAt = merged, now
			changes = append(changes, RecordChange{Old: r, New: &next})
			ev, err := recordEventOf(EventRecordUpdated, &next)
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		default: // no record of the id, or one of another entity
			dropNulls(values)
			if err := missingRequired(defs, values); err != nil {
				out[i].Err = err
				continue
			}
			if exists {
				return nil, errIDTaken
			}
			rec := &Record{ID: it.RecordID, EntityID: id, Values: values, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID,
				CreatedAt: now, UpdatedAt: now}
			created = append(created, rec)
			out[i].Created = true
			ev, err := recordEventOf(EventRecordCreated, rec)
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		}
		seen[it.RecordID] = true
	}
	if len(created) > 0 {
		if err := s.store.InsertRecords(ctx, tx, created); err != nil {
			if errors.Is(err, store.ErrConflict) {
				// Taken meanwhile by a concurrent transaction: the
				// statement failed, and on PostgreSQL the transaction with
				// it.
				return nil, errIDTaken
			}
			return nil, err
		}
	}
	if len(changes) > 0 {
		if err := s.store.UpdateRecords(ctx, tx, changes); err != nil {
			return nil, err
		}
	}
	if len(events) > 0 {
		if _, err := tx.EmitMany(ctx, events); err != nil {
			return nil, err
		}
	}
	// The next batch's statements prepared once this one commits (SQLite
	// cannot prepare inside the transaction, which holds its one writer
	// connection; preparing what is prepared already costs a map lookup).
	tx.AfterCommit(func() {
		s.store.PrepareInserts(ctx, s.db)
		s.db.PrepareEmitMany(ctx)
	})
	return out, nil
}

// isUUIDText is uuidPattern.MatchString(s), without the regular
// expression (a batch checks 1000 ids).
func isUUIDText(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// errIDTaken fails an upsert batch one of whose ids a record of another
// entity of the tenant holds (ids are the caller's).
var errIDTaken = store.Errorf(store.ErrConflict, "A record id of this batch is taken by a record of another entity")

// recordEventOf is the event typ of r, its data eventOf(r) (written by
// recordEventJSON).
func recordEventOf(typ string, r *Record) (store.Event, error) {
	data, err := recordEventJSON(r)
	if err != nil {
		return store.Event{}, err
	}
	return store.Event{Type: typ, TenantID: r.TenantID, OrganizationID: r.OrganizationID, Data: data}, nil
}

// RecordsAfter returns at most limit live records of entityID the caller
// may read, in id order, after afterID ("" for the first): the pages of
// an export.
func (s *Service) RecordsAfter(ctx context.Context, entityID, afterID string, limit int) ([]*Record, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return nil, store.Invalid("entityId", entityIDMessage)
	}
	return s.store.RecordsAfter(ctx, s.db, sc, id, afterID, "", limit)
}

// ActiveCustomEntities returns the ids of the custom entities that are
// active for the caller (the entity types a data sync may write), sorted.
func (s *Service) ActiveCustomEntities(ctx context.Context) ([]string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.store.VisibleEntities(ctx, s.db, sc.TenantID, sc.OrganizationID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sum := range summarize(s.codeList(), list) {
		if sum.Source == "custom" && sum.active {
			out = append(out, sum.EntityID)
		}
	}
	slices.Sort(out)
	return out, nil
}
