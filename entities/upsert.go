package entities

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// RecordUpsert is one record of UpsertRecordsTx: its id (a UUID the
// caller derives, so that writing the same item again finds the same
// record) and values (keys with or without "cf_").
type RecordUpsert struct {
	RecordID string
	Values   map[string]any
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
	// Err is the item's validation error; the item was not written.
	Err error
}

// UpsertRecordsTx writes a batch of records of entityID in the caller's
// transaction tx (at most 1000; the caller commits them with its own
// changes, as the data sync area commits a batch with its cursor): each
// new id is created, each existing live record of the entity updated
// (values merged, null clearing one), each validated as CreateRecord and
// UpdateRecord validate. An item failing validation gets its error in its
// outcome and is not written; the others are. Every write has its domain
// event, and value counts follow. It returns one outcome per item, in
// order.
func (s *Service) UpsertRecordsTx(ctx context.Context, tx *store.Tx, entityID string, items []RecordUpsert) ([]UpsertOutcome, error) {
	if len(items) > maxBatchRecords {
		return nil, store.Invalid("records", "must be at most 1000 records")
	}
	sc, id, defs, err := s.writeContext(ctx, entityID)
	if err != nil {
		return nil, err
	}
	out := make([]UpsertOutcome, len(items))
	ids := make([]string, 0, len(items))
	for i := range items {
		items[i].RecordID = strings.ToLower(items[i].RecordID)
		if !uuidPattern.MatchString(items[i].RecordID) {
			out[i].Err = store.Invalid("recordId", "must be a UUID")
			continue
		}
		ids = append(ids, items[i].RecordID)
	}
	existing := map[string]*Record{}
	if len(ids) > 0 {
		found, _, err := s.store.ListRecords(ctx, tx, store.Scope{TenantID: sc.TenantID}, RecordList{EntityID: id, IDs: ids, WithDeleted: true, Limit: len(ids)})
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			existing[r.ID] = r
		}
	}
	now := tx.Now()
	var created []*Record
	var events []store.Event
	seen := map[string]bool{}
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
		case exists && r.DeletedAt != nil:
			out[i].Skipped = true
			continue
		case !exists:
			dropNulls(values)
			if err := missingRequired(defs, values); err != nil {
				out[i].Err = err
				continue
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
		default:
			updated, err := s.store.UpdateRecord(ctx, tx, store.Scope{TenantID: sc.TenantID}, id, it.RecordID, func(r *Record) error {
				if r.Values == nil {
					r.Values = map[string]any{}
				}
				for k, v := range values {
					if v == nil {
						delete(r.Values, k)
					} else {
						r.Values[k] = v
					}
				}
				if err := missingRequired(defs, r.Values); err != nil {
					return err
				}
				r.UpdatedAt = now
				return nil
			})
			var ve *store.ValidationError
			if errors.As(err, &ve) {
				out[i].Err = err
				continue
			}
			if err != nil {
				return nil, err
			}
			ev, err := recordEventOf(EventRecordUpdated, updated)
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
				// An id held by a record of another entity of the tenant
				// (ids are the caller's): the statement failed, and on
				// PostgreSQL the transaction with it.
				return nil, store.Errorf(store.ErrConflict, "A record id of this batch is taken by a record of another entity")
			}
			return nil, err
		}
	}
	if len(events) > 0 {
		if _, err := tx.EmitMany(ctx, events); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func recordEventOf(typ string, r *Record) (store.Event, error) {
	data, err := json.Marshal(eventOf(r))
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
