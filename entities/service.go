package entities

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations is the area's migration line.
var Migrations = store.Migrations{Line: "entities", FS: migrationsFS, Dir: "migrations"}

// Events the area emits (data: the entity or definition, with tenantId
// and organizationId).
const (
	EventEntityCreated      = "entities.entity.created"
	EventEntityUpdated      = "entities.entity.updated"
	EventEntityDeleted      = "entities.entity.deleted"
	EventDefinitionCreated  = "entities.definition.created"
	EventDefinitionUpdated  = "entities.definition.updated"
	EventDefinitionDeleted  = "entities.definition.deleted"
	EventDefinitionRestored = "entities.definition.restored"
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventEntityCreated, Label: "Custom entity created", Description: "A custom entity was registered."},
	{ID: EventEntityUpdated, Label: "Custom entity updated", Description: "A custom entity's settings changed."},
	{ID: EventEntityDeleted, Label: "Custom entity deleted", Description: "A custom entity was deleted (its records stay)."},
	{ID: EventDefinitionCreated, Label: "Custom field defined", Description: "A custom field definition was created at a scope."},
	{ID: EventDefinitionUpdated, Label: "Custom field updated", Description: "A custom field definition changed."},
	{ID: EventDefinitionDeleted, Label: "Custom field deleted", Description: "A custom field was deleted (tombstoned) at a scope."},
	{ID: EventDefinitionRestored, Label: "Custom field restored", Description: "A deleted custom field was restored at a scope."},
	{ID: EventRecordCreated, Label: "Record created", Description: "A record of a custom entity was created (with its values).",
		ClientBroadcast: true, ViewFeature: "entities.records.view"},
	{ID: EventRecordUpdated, Label: "Record updated", Description: "A record of a custom entity was updated (with its values).",
		ClientBroadcast: true, ViewFeature: "entities.records.view"},
	{ID: EventRecordDeleted, Label: "Record deleted", Description: "A record of a custom entity was deleted.",
		ClientBroadcast: true, ViewFeature: "entities.records.view"},
}

// ErrNotFound is the "Not found" answer of the area's deletes and
// restores (a store.ErrNotFound).
var ErrNotFound = store.Errorf(store.ErrNotFound, "Not found")

// Service manages custom entities and field definitions. Every method
// reads the tenant and organization from the context's store.Scope; a
// change is made at that scope (the organization's when it names one,
// the tenant's otherwise).
type Service struct {
	db    *store.DB
	store Store
	cache *vcache.Cache[cacheKey, []*Definition]
	code  codeEntities
	// creates group-commits CreateRecord (writeCreates); batch, on SQLite
	// only, updates and deletes (see writeOne).
	creates *store.Group[*pendingCreate]
	batch   *store.Batcher
	// versionInBatch: other processes may change the definitions (the
	// engine notifies), so the creates' shared transaction reads their
	// version for its batch (writeCreates).
	versionInBatch bool
}

type cacheKey struct{ tenantID, orgID, entityID string }

// cacheCheckInterval is how often a process reads the version counter to
// notice other processes' changes (the issue allows a second).
const cacheCheckInterval = 250 * time.Millisecond

// Options configures the Service.
type Options struct {
	// Store reads and writes the area's data; nil is the SQL store
	// (NewSQLStore) over the tables of Migrations. Transactions, the
	// definitions' version counter and events stay on the database given
	// to New; a host's own Store must pass entitiestest.Run.
	Store Store
}

// New returns the service over db (whose migrations then include
// Migrations, unless opts.Store keeps the data elsewhere). It starts
// nothing and reads nothing, and returns an error only for options it
// cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	st := opts.Store
	if st == nil {
		st = NewSQLStore()
	}
	s := &Service{db: db, store: st, cache: vcache.New[cacheKey, []*Definition](db, versionCounter, cacheCheckInterval, 10000)}
	s.creates = store.NewGroup(db, s.writeCreates)
	s.versionInBatch = db.Dialect().Notifies()
	if db.Dialect().SingleWriter() {
		s.batch = store.NewBatcher(db)
	}
	return s, nil
}

// versionCounter is the store version counter of the field definitions.
const versionCounter = "entities.definitions"

// changed bumps the definitions' version in tx, drops this process's cache
// once tx commits, and returns the new version.
func (s *Service) changed(ctx context.Context, tx *store.Tx) (int64, error) {
	return s.cache.Changed(ctx, tx)
}

// syncDefinitions makes the definitions cache honour every change
// committed before this call, by this process or another
// (vcache.Cache.Sync): the record writes (writeContext) call it before
// they validate values, so a field defined through one server is accepted,
// and a deleted one refused, by the next write through another. A single
// create reads the version in its shared transaction instead
// (writeCreates). Reads
// (ListRecords, Definitions) do not: they may lag by the notification's
// milliseconds. On PostgreSQL it is one single-row read of the counter; on
// SQLite nothing.
func (s *Service) syncDefinitions(ctx context.Context) error { return s.cache.Sync(ctx) }

func emitScope(tenantID, orgID string) store.Scope {
	return store.Scope{TenantID: tenantID, OrganizationID: orgID}
}

// UpsertEntity creates or updates the custom entity in.EntityID at the
// caller's scope.
func (s *Service) UpsertEntity(ctx context.Context, in EntityInput) (*Entity, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.normalize(); err != nil {
		return nil, err
	}
	var out *Entity
	err = txRacingFirstSave(ctx, s.db, func(tx *store.Tx) error {
		now := tx.Now()
		e, err := s.store.LiveEntity(ctx, tx, sc.TenantID, sc.OrganizationID, in.EntityID)
		event := EventEntityUpdated
		switch {
		case errors.Is(err, store.ErrNotFound):
			e = &Entity{ID: store.NewID(), EntityID: in.EntityID, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID,
				IsActive: true, CreatedAt: now}
			event = EventEntityCreated
		case err != nil:
			return err
		}
		e.Label, e.Description, e.LabelField, e.DefaultEditor, e.UpdatedAt = in.Label, in.Description, in.LabelField, in.DefaultEditor, now
		if in.ShowInSidebar != nil {
			e.ShowInSidebar = *in.ShowInSidebar
		}
		if in.IsActive != nil {
			e.IsActive = *in.IsActive
		}
		if event == EventEntityCreated {
			err = s.store.InsertEntity(ctx, tx, e)
		} else {
			err = s.store.UpdateEntity(ctx, tx, e)
		}
		if err != nil {
			return err
		}
		out = e
		_, err = tx.EmitData(ctx, event, emitScope(e.TenantID, e.OrganizationID), e)
		return err
	})
	return out, err
}

// DeleteEntity soft-deletes the custom entity entityID at the caller's
// scope (ErrNotFound when there is none); its records stay.
func (s *Service) DeleteEntity(ctx context.Context, entityID string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return ErrNotFound
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		e, err := s.store.LiveEntity(ctx, tx, sc.TenantID, sc.OrganizationID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		now := tx.Now()
		e.IsActive, e.UpdatedAt, e.DeletedAt = false, now, &now
		if err := s.store.UpdateEntity(ctx, tx, e); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventEntityDeleted, emitScope(e.TenantID, e.OrganizationID), e)
		return err
	})
}

// ListEntities returns the entities the caller sees, by entity id: the
// code entities (RegisterEntity; source "code") and the custom ones
// (source "custom"; the organization's winning over the tenant's of the
// same id, and overriding a code entity of that id), each with the
// number of active field keys it has for the caller.
func (s *Service) ListEntities(ctx context.Context) ([]EntitySummary, error) {
	return s.entities(ctx, false)
}

// SidebarEntities is ListEntities restricted to active entities with
// showInSidebar.
func (s *Service) SidebarEntities(ctx context.Context) ([]EntitySummary, error) {
	return s.entities(ctx, true)
}

func (s *Service) entities(ctx context.Context, sidebar bool) ([]EntitySummary, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.store.VisibleEntities(ctx, s.db, sc.TenantID, sc.OrganizationID)
	if err != nil {
		return nil, err
	}
	out := []EntitySummary{}
	for _, sum := range summarize(s.codeList(), list) {
		if sidebar && (!sum.ShowInSidebar || !sum.active) {
			continue
		}
		fields, err := s.resolved(ctx, nil, sc, sum.EntityID)
		if err != nil {
			return nil, err
		}
		sum.Count = len(fields)
		out = append(out, sum)
	}
	return out, nil
}

// score ranks a definition's scope: an organization's over a tenant's
// over a global one.
func score(tenantID, orgID string) int {
	n := 0
	if tenantID != "" {
		n += 2
	}
	if orgID != "" {
		n++
	}
	return n
}

// winners picks, per key, the definition that applies: among the rows
// that are not merely inactive (deleted rows are tombstones and count),
// the most specific scope, then the newest. includeInactive keeps
// inactive rows as candidates too (for managers).
func winners(rows []*Definition, includeInactive bool) map[string]*Definition {
	out := map[string]*Definition{}
	for _, d := range rows {
		if !d.IsActive && d.DeletedAt == nil && !includeInactive {
			continue
		}
		key := d.EntityID + "\x00" + d.Key
		w := out[key]
		if w == nil || score(d.TenantID, d.OrganizationID) > score(w.TenantID, w.OrganizationID) ||
			score(d.TenantID, d.OrganizationID) == score(w.TenantID, w.OrganizationID) && d.UpdatedAt.After(w.UpdatedAt) {
			out[key] = d
		}
	}
	return out
}

// rows returns the definition rows of entityID visible to sc, cached.
func (s *Service) rows(ctx context.Context, in *store.Tx, sc store.Scope, entityID string) ([]*Definition, error) {
	key := cacheKey{sc.TenantID, sc.OrganizationID, entityID}
	load := func(tx *store.Tx) ([]*Definition, error) {
		return s.store.VisibleDefinitions(ctx, tx, sc.TenantID, sc.OrganizationID, []string{entityID})
	}
	if in != nil {
		return s.cache.GetIn(ctx, in, key, load)
	}
	return s.cache.Get(ctx, key, load)
}

// resolved returns the definitions that apply to entityID for sc, by
// priority then key: tombstoned keys left out.
func (s *Service) resolved(ctx context.Context, in *store.Tx, sc store.Scope, entityID string) ([]*Definition, error) {
	rows, err := s.rows(ctx, in, sc, entityID)
	if err != nil {
		return nil, err
	}
	var out []*Definition
	for _, d := range winners(rows, false) {
		if d.DeletedAt == nil {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *Definition) int {
		return cmp.Or(cmp.Compare(a.Priority(), b.Priority()), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

// Definitions returns the field definitions that apply to the caller for
// each entity (global, tenant and organization definitions merged, the
// most specific winning, tombstoned keys left out), by entity in the
// order given, then by priority and key. Results are cached per tenant,
// organization and entity; every change drops the cache, in this process
// at once and in others within cacheCheckInterval.
func (s *Service) Definitions(ctx context.Context, entityIDs ...string) ([]*Definition, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Definition
	for _, raw := range entityIDs {
		id, ok := NormalizeEntityID(raw)
		if !ok {
			return nil, store.Invalid("entityId", entityIDMessage)
		}
		defs, err := s.resolved(ctx, nil, sc, id)
		if err != nil {
			return nil, err
		}
		for _, d := range defs { // copies: the cache's own stay as they are
			c := *d
			c.ConfigJSON = cloneJSON(d.ConfigJSON).(map[string]any)
			out = append(out, &c)
		}
	}
	return out, nil
}

// cloneJSON deep-copies a decoded JSON value.
func cloneJSON(x any) any {
	switch v := x.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = cloneJSON(e)
		}
		return l
	}
	return x
}

// Settings returns the field settings (field sets,
// singleFieldsetPerRecord) of each entity for the caller, the most
// specific scope winning; entities without any are left out.
func (s *Service) Settings(ctx context.Context, entityIDs ...string) (map[string]Settings, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(entityIDs))
	for _, raw := range entityIDs {
		id, ok := NormalizeEntityID(raw)
		if !ok {
			return nil, store.Invalid("entityId", entityIDMessage)
		}
		ids = append(ids, id)
	}
	return s.store.Settings(ctx, s.db, sc.TenantID, sc.OrganizationID, ids)
}

// Manage returns what an administrator of the caller's scope works with:
// per key of entityID, the definition that wins for the caller (inactive
// ones included, tombstones not), and the keys tombstoned at the caller's
// own scope.
func (s *Service) Manage(ctx context.Context, entityID string) (items []*Definition, deletedKeys []string, err error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return nil, nil, store.Invalid("entityId", entityIDMessage)
	}
	rows, err := s.store.VisibleDefinitions(ctx, s.db, sc.TenantID, sc.OrganizationID, []string{id})
	if err != nil {
		return nil, nil, err
	}
	items, deletedKeys = []*Definition{}, []string{}
	for _, d := range winners(rows, true) {
		if d.DeletedAt == nil {
			items = append(items, d)
		}
	}
	for _, d := range rows {
		if d.DeletedAt != nil && d.TenantID == sc.TenantID && d.OrganizationID == sc.OrganizationID {
			deletedKeys = append(deletedKeys, d.Key)
		}
	}
	slices.SortFunc(items, func(a, b *Definition) int {
		return cmp.Or(cmp.Compare(a.Priority(), b.Priority()), cmp.Compare(a.Key, b.Key))
	})
	slices.Sort(deletedKeys)
	return items, deletedKeys, nil
}

// Define creates or updates a field definition at the caller's scope. A
// key deleted at that scope is defined again (its tombstone lifted).
func (s *Service) Define(ctx context.Context, in DefinitionInput) (*Definition, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	return s.define(ctx, sc.TenantID, sc.OrganizationID, in)
}

// DefineGlobal creates or updates a global field definition, which every
// tenant sees unless its own or its organization's definition of the key
// wins. It is for the host (there is no route for it).
func (s *Service) DefineGlobal(ctx context.Context, in DefinitionInput) (*Definition, error) {
	return s.define(ctx, "", "", in)
}

func (s *Service) define(ctx context.Context, tenantID, orgID string, in DefinitionInput) (*Definition, error) {
	if err := in.normalize("").Err(); err != nil {
		return nil, err
	}
	var out *Definition
	err := txRacingFirstSave(ctx, s.db, func(tx *store.Tx) error {
		d, err := s.upsertDefinition(ctx, tx, tenantID, orgID, in)
		if err != nil {
			return err
		}
		_, err = s.changed(ctx, tx)
		out = d
		return err
	})
	return out, err
}

// txRacingFirstSave runs an upsert's transaction, and once more when it
// lost a race with another first save of the same row (a unique-index
// conflict on insert): the second run finds that row and updates it.
func txRacingFirstSave(ctx context.Context, db *store.DB, fn func(tx *store.Tx) error) error {
	err := db.Tx(ctx, fn)
	if errors.Is(err, store.ErrConflict) {
		err = db.Tx(ctx, fn)
	}
	return err
}

// upsertDefinition writes in at the scope and emits its event.
func (s *Service) upsertDefinition(ctx context.Context, tx *store.Tx, tenantID, orgID string, in DefinitionInput) (*Definition, error) {
	now := tx.Now()
	d, err := s.store.DefinitionAt(ctx, tx, tenantID, orgID, in.EntityID, in.Key)
	event := EventDefinitionUpdated
	switch {
	case errors.Is(err, store.ErrNotFound):
		d = &Definition{ID: store.NewID(), EntityID: in.EntityID, Key: in.Key, TenantID: tenantID, OrganizationID: orgID,
			Scope: scopeName(tenantID, orgID), CreatedAt: now}
		event = EventDefinitionCreated
	case err != nil:
		return nil, err
	}
	d.Kind, d.ConfigJSON, d.IsActive, d.UpdatedAt, d.DeletedAt, d.TombstoneOnly = in.Kind, in.ConfigJSON, true, now, nil, false
	if in.IsActive != nil {
		d.IsActive = *in.IsActive
	}
	if event == EventDefinitionCreated {
		err = s.store.InsertDefinition(ctx, tx, d)
	} else {
		err = s.store.UpdateDefinition(ctx, tx, d)
	}
	if err != nil {
		return nil, err
	}
	if err := s.store.SyncFilterable(ctx, tx, d.EntityID, d.Key); err != nil {
		return nil, err
	}
	_, err = tx.EmitData(ctx, event, emitScope(tenantID, orgID), d)
	return d, err
}

// Batch writes an entity's definitions at the caller's scope in the
// given order, which becomes their priority (configJson.priority = the
// index), and its field settings when given, in one transaction; it
// returns the definitions' new version. Keys at that scope that the batch
// leaves out are kept.
func (s *Service) Batch(ctx context.Context, in BatchInput) (int64, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return 0, err
	}
	var v store.ValidationError
	id, ok := NormalizeEntityID(in.EntityID)
	if !ok {
		v.Add("entityId", entityIDMessage)
	}
	if len(in.Definitions) > 500 {
		v.Add("definitions", "must have at most 500 definitions")
	}
	seen := map[string]bool{}
	for i := range in.Definitions {
		d := &in.Definitions[i]
		d.EntityID = id
		prefix := "definitions[" + strconv.Itoa(i) + "]."
		cfg := map[string]any{}
		for k, x := range d.ConfigJSON { // the caller's map is left as it was
			cfg[k] = x
		}
		cfg["priority"] = float64(i)
		d.ConfigJSON = cfg
		for f, msg := range d.normalize(prefix).Fields {
			v.Add(f, msg)
		}
		if seen[d.Key] {
			v.Add(prefix+"key", "is given twice")
		}
		seen[d.Key] = true
	}
	checkFieldsets(&v, in.Fieldsets)
	if err := v.Err(); err != nil {
		return 0, err
	}
	var version int64
	err = txRacingFirstSave(ctx, s.db, func(tx *store.Tx) error {
		for _, d := range in.Definitions {
			if _, err := s.upsertDefinition(ctx, tx, sc.TenantID, sc.OrganizationID, d); err != nil {
				return err
			}
		}
		if in.Fieldsets != nil || in.SingleFieldsetPerRecord != nil {
			set := Settings{Fieldsets: in.Fieldsets}
			if set.Fieldsets == nil {
				set.Fieldsets = []FieldSet{}
			}
			if in.SingleFieldsetPerRecord != nil {
				set.SingleFieldsetPerRecord = *in.SingleFieldsetPerRecord
			}
			if err := s.store.SaveSettings(ctx, tx, sc.TenantID, sc.OrganizationID, id, set, tx.Now()); err != nil {
				return err
			}
		}
		var err error
		version, err = s.changed(ctx, tx)
		return err
	})
	return version, err
}

// DeleteDefinition tombstones key at the caller's scope, hiding it there
// (and in narrower scopes that do not define it again); the definition's
// row is kept. A key defined only in a wider scope gets a tombstone row
// at the caller's scope. ErrNotFound when the caller sees no such key. It
// returns the definitions' new version.
func (s *Service) DeleteDefinition(ctx context.Context, entityID, key string) (int64, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return 0, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok || !fieldKeyPattern.MatchString(key) {
		return 0, ErrNotFound
	}
	var version int64
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		d, err := s.store.DefinitionAt(ctx, tx, sc.TenantID, sc.OrganizationID, id, key)
		switch {
		case err == nil && d.DeletedAt != nil:
			return ErrNotFound // already deleted here
		case err == nil:
			d.IsActive, d.UpdatedAt, d.DeletedAt = false, now, &now
			err = s.store.UpdateDefinition(ctx, tx, d)
		case errors.Is(err, store.ErrNotFound):
			// Defined only in a wider scope: tombstone it here.
			var rows []*Definition
			if rows, err = s.store.VisibleDefinitions(ctx, tx, sc.TenantID, sc.OrganizationID, []string{id}); err != nil {
				return err
			}
			w := winners(rows, true)[id+"\x00"+key]
			if w == nil || w.DeletedAt != nil {
				return ErrNotFound
			}
			d = &Definition{ID: store.NewID(), EntityID: id, Key: key, Kind: w.Kind, ConfigJSON: w.ConfigJSON,
				TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, Scope: scopeName(sc.TenantID, sc.OrganizationID),
				CreatedAt: now, UpdatedAt: now, DeletedAt: &now, TombstoneOnly: true}
			err = s.store.InsertDefinition(ctx, tx, d)
		}
		if err != nil {
			return err
		}
		if err := s.store.SyncFilterable(ctx, tx, id, key); err != nil {
			return err
		}
		if _, err := tx.EmitData(ctx, EventDefinitionDeleted, emitScope(sc.TenantID, sc.OrganizationID), d); err != nil {
			return err
		}
		version, err = s.changed(ctx, tx)
		return err
	})
	return version, err
}

// RestoreDefinition lifts the tombstone of key at the caller's scope: a
// definition deleted there is active again; a tombstone of a wider
// scope's key goes, so that key shows again. ErrNotFound when the key is
// not deleted at the caller's scope.
func (s *Service) RestoreDefinition(ctx context.Context, entityID, key string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok || !fieldKeyPattern.MatchString(key) {
		return ErrNotFound
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		d, err := s.store.DefinitionAt(ctx, tx, sc.TenantID, sc.OrganizationID, id, key)
		if errors.Is(err, store.ErrNotFound) || err == nil && d.DeletedAt == nil {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if d.TombstoneOnly {
			err = s.store.RemoveDefinition(ctx, tx, d.ID)
		} else {
			d.IsActive, d.UpdatedAt, d.DeletedAt = true, tx.Now(), nil
			err = s.store.UpdateDefinition(ctx, tx, d)
		}
		if err != nil {
			return err
		}
		if err := s.store.SyncFilterable(ctx, tx, id, key); err != nil {
			return err
		}
		if _, err := tx.EmitData(ctx, EventDefinitionRestored, emitScope(sc.TenantID, sc.OrganizationID), d); err != nil {
			return err
		}
		_, err = s.changed(ctx, tx)
		return err
	})
}
