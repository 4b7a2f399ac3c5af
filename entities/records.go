package entities

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Record events (data: the record with its values, tenantId and
// organizationId).
const (
	EventRecordCreated = "entities.record.created"
	EventRecordUpdated = "entities.record.updated"
	EventRecordDeleted = "entities.record.deleted"
)

// Record is one record of a custom entity.
type Record struct {
	// ID is a UUID, unique within the tenant.
	ID string `json:"id"`
	// EntityID is the entity, in stored form ("module.name").
	EntityID string `json:"entityId"`
	// Values are the record's values by field key (without cf_), each in
	// its kind's canonical form (numbers as float64, dates as
	// YYYY-MM-DD, …).
	Values   map[string]any `json:"values"`
	TenantID string         `json:"tenantId"`
	// OrganizationID is the organization the record was made in, "" for
	// the tenant's own (readable by all of the tenant's organizations).
	OrganizationID string    `json:"organizationId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// DeletedAt is set once the record is deleted (soft delete).
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
}

// recordEvent is a record as its events carry it: organizationId is
// always there, null for a record of the tenant's own.
type recordEvent struct {
	*Record
	OrganizationID *string `json:"organizationId"`
}

func eventOf(r *Record) recordEvent {
	e := recordEvent{Record: r}
	if r.OrganizationID != "" {
		e.OrganizationID = &r.OrganizationID
	}
	return e
}

// RecordInput is a record as created or updated. Value keys may carry
// the "cf_" prefix.
type RecordInput struct {
	EntityID string `json:"entityId"`
	// RecordID names the record: on create a UUID to use as its id (else
	// a new one is made), on update the record changed.
	RecordID string         `json:"recordId"`
	Values   map[string]any `json:"values"` // field key to value; on update, null clears a value and absent keys are kept
}

func jsonMarshal(x any) ([]byte, error) { return json.Marshal(x) }

// fieldsOf returns the definitions that apply to entityID for sc, by key.
func (s *Service) fieldsOf(ctx context.Context, in *store.Tx, sc store.Scope, entityID string) (map[string]*Definition, error) {
	defs, err := s.resolved(ctx, in, sc, entityID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Definition, len(defs))
	for _, d := range defs {
		if d.IsActive {
			out[d.Key] = d
		}
	}
	return out, nil
}

// writeContext returns what a write of entityID's records needs: the
// caller's scope, the entity id in stored form, and the definitions that
// apply, by key. The definitions honour every change committed before
// the call, by any process (syncDefinitions).
func (s *Service) writeContext(ctx context.Context, entityID string) (store.Scope, string, map[string]*Definition, error) {
	return s.writeContextIn(ctx, nil, entityID)
}

// writeContextIn is writeContext for a write inside tx (nil: none), whose
// version read and any definitions missing from the cache go through tx
// rather than a second pool connection: writers that each hold a
// connection while waiting for another exhaust the pool.
func (s *Service) writeContextIn(ctx context.Context, tx *store.Tx, entityID string) (store.Scope, string, map[string]*Definition, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return sc, "", nil, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return sc, "", nil, store.Invalid("entityId", entityIDMessage)
	}
	if tx != nil {
		err = s.cache.SyncIn(ctx, tx)
	} else {
		err = s.syncDefinitions(ctx)
	}
	if err != nil {
		return sc, "", nil, err
	}
	defs, err := s.fieldsOf(ctx, tx, sc, id)
	return sc, id, defs, err
}

// CreateRecord validates in.Values against the entity's field definitions
// and stores a new record. A recordId that is not a UUID is ignored and
// a new id made; a UUID is used as the id. Record ids are unique per
// tenant (the key is (tenant_id, id)): an id another tenant's record holds
// is free for the caller, and only a record of the caller's own tenant
// with that id is a conflict ("A record with this id already exists").
//
// The values are validated against the cached definitions without reading
// the version counter first; the shared transaction reads it once for its
// whole batch (writeCreates), and a create whose definitions turn out older
// than that version is validated and written again in a transaction of its
// own (createAlone). So, as with every record write, no create validates
// against definitions older than its start.
func (s *Service) CreateRecord(ctx context.Context, in RecordInput) (*Record, error) {
	// The version the definitions looked up next honour at least: the
	// cache holds only definitions of its current version, and a load
	// reads the counter, which is never behind the cache.
	seen := s.cache.Version()
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	id, ok := NormalizeEntityID(in.EntityID)
	if !ok {
		return nil, store.Invalid("entityId", entityIDMessage)
	}
	defs, err := s.fieldsOf(ctx, nil, sc, id)
	if err != nil {
		return nil, err
	}
	r, err := newRecord(sc, id, defs, in)
	if err != nil && s.versionInBatch {
		// Refused by definitions that may be older than this call: the
		// answer is that of the current ones.
		if err := s.syncDefinitions(ctx); err != nil {
			return nil, err
		}
		seen = s.cache.Version()
		if defs, err = s.fieldsOf(ctx, nil, sc, id); err != nil {
			return nil, err
		}
		r, err = newRecord(sc, id, defs, in)
	}
	if err != nil {
		return nil, err
	}
	s.prepareWrites(ctx)
	err = s.creates.Do(&pendingCreate{record: r, seen: seen})
	if errors.Is(err, errDefinitionsChanged) {
		return s.createAlone(ctx, in)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newRecord validates in's values against defs and returns the record to
// insert, in sc, of the entity id (stored form).
func newRecord(sc store.Scope, id string, defs map[string]*Definition, in RecordInput) (*Record, error) {
	values, err := cleanValues(defs, in.Values)
	if err != nil {
		return nil, err
	}
	dropNulls(values)
	if err := missingRequired(defs, values); err != nil {
		return nil, err
	}
	recordID := strings.ToLower(in.RecordID)
	if !uuidPattern.MatchString(recordID) {
		recordID = store.NewID()
	}
	return &Record{ID: recordID, EntityID: id, Values: values, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID}, nil
}

// createAlone is CreateRecord in a transaction of its own, which reads
// the definitions' version and any definitions missing from the cache
// before it validates: the path of a create whose shared transaction
// found the definitions changed since they were looked up.
func (s *Service) createAlone(ctx context.Context, in RecordInput) (*Record, error) {
	var out *Record
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		sc, id, defs, err := s.writeContextIn(ctx, tx, in.EntityID)
		if err != nil {
			return err
		}
		r, err := newRecord(sc, id, defs, in)
		if err != nil {
			return err
		}
		if err := s.insertCreates(ctx, tx, []*Record{r}); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pendingCreate is a CreateRecord waiting for its shared transaction: the
// record, and the definitions' version its values honour at least (seen).
type pendingCreate struct {
	record *Record
	seen   int64
}

// errDefinitionsChanged fails a shared transaction of creates one of which
// was validated against definitions older than the version the
// transaction read (writeCreates); the create is then validated and
// written again alone (createAlone).
var errDefinitionsChanged = errors.New("entities: the definitions changed since the values were validated")

// writeCreates is the group commit of CreateRecord: the records of
// concurrent creates (any tenants, entities and organizations), written
// with multi-row statements, their counts, and one event each, in one
// transaction. A record id taken (by an earlier record or one of the
// batch) fails the batch; store.Group then writes each record alone, so
// that only the create that reused the id fails.
//
// Where other processes may change the definitions (versionInBatch), the
// transaction reads their version once for its whole batch, in place of
// each create's own read before it validated: after the records' INSERT,
// in the statement that reads the filterable keys (countsInserted; a
// Store of the host's own costs a statement of its own). A record
// validated against an older version fails the batch
// (errDefinitionsChanged), so nothing of it commits. The version read is
// at least that of every change committed before the transaction began,
// so after each of its creates began.
func (s *Service) writeCreates(ctx context.Context, tx *store.Tx, items []*pendingCreate) error {
	records := make([]*Record, len(items))
	for i, p := range items {
		records[i] = p.record
	}
	if err := s.insertRecords(ctx, tx, records); err != nil {
		return err
	}
	if s.versionInBatch {
		v, ok := tx.Value(definitionsVersionRead{}).(int64)
		if !ok {
			var err error
			if v, err = store.ReadVersion(ctx, tx, versionCounter); err != nil {
				return err
			}
		}
		s.cache.Invalidate(v) // committed: later lookups need not wait for its notice
		for _, p := range items {
			if p.seen < v {
				return errDefinitionsChanged
			}
		}
	}
	return s.emitCreated(ctx, tx, records)
}

// insertCreates writes new records, their counts and their created events
// in tx.
func (s *Service) insertCreates(ctx context.Context, tx *store.Tx, records []*Record) error {
	if err := s.insertRecords(ctx, tx, records); err != nil {
		return err
	}
	return s.emitCreated(ctx, tx, records)
}

// insertRecords writes new records and their counts in tx.
func (s *Service) insertRecords(ctx context.Context, tx *store.Tx, records []*Record) error {
	now := tx.Now()
	var tenants []string // InsertRecords takes one tenant's records
	byTenant := map[string][]*Record{}
	for _, r := range records {
		r.CreatedAt, r.UpdatedAt = now, now
		if _, ok := byTenant[r.TenantID]; !ok {
			tenants = append(tenants, r.TenantID)
		}
		byTenant[r.TenantID] = append(byTenant[r.TenantID], r)
	}
	// In tenant order, so that concurrent batches (PostgreSQL) take count
	// rows in one order.
	slices.Sort(tenants)
	for _, t := range tenants {
		err := s.store.InsertRecords(ctx, tx, byTenant[t])
		if errors.Is(err, store.ErrConflict) {
			return store.Errorf(store.ErrConflict, "A record with this id already exists")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// emitCreated emits the records' created events in tx.
func (s *Service) emitCreated(ctx context.Context, tx *store.Tx, records []*Record) error {
	events := make([]store.Event, len(records))
	for i, r := range records {
		ev, err := recordEventOf(EventRecordCreated, r)
		if err != nil {
			return err
		}
		events[i] = ev
	}
	_, err := tx.EmitMany(ctx, events)
	return err
}

// writeOne runs an update's or a delete's transaction: on SQLite in a
// transaction shared with concurrent ones (store.Batcher), whose one
// writer would otherwise commit them one by one; on PostgreSQL in its own,
// as concurrent transactions commit side by side there, and a shared one
// would take several records' count rows in an order another could
// reverse (a deadlock).
func (s *Service) writeOne(ctx context.Context, fn func(ctx context.Context, tx *store.Tx) error) error {
	if s.batch != nil {
		return s.batch.Do(fn)
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error { return fn(ctx, tx) })
}

// prepareWrites has the statements of record writes and their events
// prepared before a write joins a shared transaction (on SQLite parsing
// them cost as much as running them; cheap once prepared).
func (s *Service) prepareWrites(ctx context.Context) {
	s.store.PrepareInserts(ctx, s.db)
	s.db.PrepareEmitMany(ctx)
}

// dropNulls removes null values: a new record simply has no value there
// (null means "clear" only to an update).
func dropNulls(values map[string]any) {
	for k, v := range values {
		if v == nil {
			delete(values, k)
		}
	}
}

// UpdateRecord validates in.Values and merges them into the record
// (values given replace those stored, null clears one; others are kept).
// A recordId that is not a UUID creates a record instead; an unknown or
// deleted one is store.ErrNotFound ("Record not found").
func (s *Service) UpdateRecord(ctx context.Context, in RecordInput) (*Record, error) {
	if !uuidPattern.MatchString(strings.ToLower(in.RecordID)) {
		in.RecordID = ""
		return s.CreateRecord(ctx, in)
	}
	sc, id, defs, err := s.writeContext(ctx, in.EntityID)
	if err != nil {
		return nil, err
	}
	values, err := cleanValues(defs, in.Values)
	if err != nil {
		return nil, err
	}
	s.prepareWrites(ctx)
	var out *Record
	err = s.writeOne(ctx, func(ctx context.Context, tx *store.Tx) error {
		r, err := s.store.UpdateRecord(ctx, tx, sc, id, strings.ToLower(in.RecordID), func(r *Record) error {
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
			if len(r.Values) > maxRecordFields {
				return store.Invalid("_customFields", "Too many custom fields (at most "+strconv.Itoa(maxRecordFields)+")")
			}
			if err := missingRequired(defs, r.Values); err != nil {
				return err
			}
			r.UpdatedAt = tx.Now()
			return nil
		})
		if err != nil {
			return asRecordNotFound(err)
		}
		out = r
		_, err = tx.EmitData(ctx, EventRecordUpdated, store.Scope{TenantID: r.TenantID, OrganizationID: r.OrganizationID}, eventOf(r))
		return err
	})
	return out, err
}

// DeleteRecord soft-deletes a record ("Record not found" when there is
// none the caller may see).
func (s *Service) DeleteRecord(ctx context.Context, entityID, recordID string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return recordNotFound
	}
	recordID = strings.ToLower(recordID)
	if !uuidPattern.MatchString(recordID) {
		return recordNotFound
	}
	s.prepareWrites(ctx)
	return s.writeOne(ctx, func(ctx context.Context, tx *store.Tx) error {
		r, err := s.store.DeleteRecord(ctx, tx, sc, id, recordID, tx.Now())
		if err != nil {
			return asRecordNotFound(err)
		}
		_, err = tx.EmitData(ctx, EventRecordDeleted, store.Scope{TenantID: r.TenantID, OrganizationID: r.OrganizationID}, eventOf(r))
		return err
	})
}

// GetRecord returns one record the caller may see (deleted ones only
// with withDeleted).
func (s *Service) GetRecord(ctx context.Context, entityID, recordID string, withDeleted bool) (*Record, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return nil, recordNotFound
	}
	recordID = strings.ToLower(recordID)
	if !uuidPattern.MatchString(recordID) {
		return nil, recordNotFound
	}
	r, err := s.store.GetRecord(ctx, s.db, sc, id, recordID, withDeleted)
	return r, asRecordNotFound(err)
}

var recordNotFound = store.Errorf(store.ErrNotFound, "Record not found")

// asRecordNotFound is err, or recordNotFound for a store.ErrNotFound.
func asRecordNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return recordNotFound
	}
	return err
}

// Filter operators of RecordQuery.
const (
	OpEq  = "eq"
	OpIn  = "in"
	OpGt  = "gt"
	OpGte = "gte"
	OpLt  = "lt"
	OpLte = "lte"
)

// Filter is one condition on a custom field: its key, an operator and the
// values as text (one, or several for OpIn), coerced by the field's kind.
type Filter struct {
	Key    string   // the custom field's key, with or without "cf_"
	Op     string   // one of the Op constants
	Values []string // one, or several for OpIn
}

// RecordQuery selects records of one entity.
type RecordQuery struct {
	EntityID string
	// Page is 1-based; PageSize defaults to 50, at most 100. All ignores
	// them (every matching record, for exports).
	Page, PageSize int
	All            bool // see Page
	// SortField is id, createdAt, updatedAt or a custom field's key (with
	// or without cf_); SortDir asc (default) or desc.
	SortField, SortDir string
	WithDeleted        bool // include soft-deleted records
	// IDs, when set, keeps the records with one of these ids (the common
	// id filter; an id that is not a UUID matches nothing).
	IDs []string
	// Search matches records whose values contain it (case-insensitive).
	Search  string
	Filters []Filter // all must hold
}

// ListRecords returns a page of the caller's records of an entity and
// their total. With a search, the total counts at most
// store.SearchCap(ctx)+1 matches: store.CapTotal turns it into the total
// to report (store.SearchTotalCap) and whether it is capped.
func (s *Service) ListRecords(ctx context.Context, q RecordQuery) ([]*Record, int, error) {
	sc, l, err := s.recordList(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	if _, ok := s.store.(*SQLStore); ok {
		// One statement, its own snapshot: no transaction to open and end
		// (two round trips on PostgreSQL).
		return s.store.ListRecords(ctx, s.db, sc, l)
	}
	var items []*Record
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		items, total, err = s.store.ListRecords(ctx, tx, sc, l)
		return err
	})
	return items, total, err
}

// ListedRecord is a record of a page of ListRecordsJSON. When ValuesJSON
// is not empty, the record's values are that JSON object, as the store
// holds it, and Values is nil; otherwise Values holds them.
type ListedRecord struct {
	Record
	// ValuesJSON is the record's values as stored: a JSON object in
	// jsonb's form on PostgreSQL (keys by length, then bytes; a space
	// after each ':' and ','; numbers as written), json.Marshal's on
	// SQLite. Decoded reads it as ListRecords would have.
	ValuesJSON string
}

// Decoded returns the record with its values decoded from ValuesJSON, as
// ListRecords returns it (the record itself when ValuesJSON is empty).
func (r *ListedRecord) Decoded() (*Record, error) {
	rec := r.Record
	if r.ValuesJSON == "" {
		return &rec, nil
	}
	return &rec, decodeValues(r.ValuesJSON, &rec.Values)
}

// ListRecordsJSON is ListRecords for a caller that writes the records out
// as JSON (the HTTP list): from the SQL store, each record's values come
// as the stored JSON object (ListedRecord.ValuesJSON), not decoded into a
// map, which a list of 20 records on PostgreSQL spent a quarter of its
// process time on; from a Store of the host's own, decoded (Values).
func (s *Service) ListRecordsJSON(ctx context.Context, q RecordQuery) ([]ListedRecord, int, error) {
	if sqlStore, ok := s.store.(*SQLStore); ok {
		sc, l, err := s.recordList(ctx, q)
		if err != nil {
			return nil, 0, err
		}
		return sqlStore.listRecordsJSON(ctx, s.db, sc, l)
	}
	items, total, err := s.ListRecords(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	out := make([]ListedRecord, len(items))
	for i, r := range items {
		out[i].Record = *r
	}
	return out, total, nil
}

// recordList checks q against the caller's definitions of its entity and
// returns the caller's scope and the list to ask the Store for.
func (s *Service) recordList(ctx context.Context, q RecordQuery) (store.Scope, RecordList, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return sc, RecordList{}, err
	}
	id, ok := NormalizeEntityID(q.EntityID)
	if !ok {
		return sc, RecordList{}, store.Invalid("entityId", entityIDMessage)
	}
	defs, err := s.fieldsOf(ctx, nil, sc, id)
	if err != nil {
		return sc, RecordList{}, err
	}
	if err := s.store.PrepareLists(ctx, s.db); err != nil {
		return sc, RecordList{}, err
	}
	l := RecordList{EntityID: id, WithDeleted: q.WithDeleted, Search: q.Search}
	var v store.ValidationError
	for _, f := range q.Filters {
		key := strings.TrimPrefix(f.Key, "cf_")
		d := defs[key]
		if d == nil {
			continue // keys without an active definition are ignored
		}
		vals := make([]any, 0, len(f.Values))
		for _, raw := range f.Values {
			x, msg := coerceFilter(d, raw)
			if msg != "" {
				v.Add(fieldName(key), msg)
				break
			}
			vals = append(vals, x)
		}
		if len(vals) == 0 {
			continue
		}
		switch f.Op {
		case OpEq, OpIn:
		case OpGt, OpGte, OpLt, OpLte:
			if !rangeKind(d.Kind) {
				v.Add(fieldName(key), "Range filters apply to integer, float, currency, date and datetime fields")
				continue
			}
		default:
			v.Add(fieldName(key), "Unknown filter operator")
			continue
		}
		// An equality or In filter alone on a field the caller sees as
		// filterable may take its total from the Store's value counts; a
		// field defined filterable only at another scope has none to look
		// up (counting its matches gives the same total).
		l.Filters = append(l.Filters, RecordFilter{Key: key, Op: f.Op, Values: vals, Multi: multi(d), Filterable: isFilterable(d)})
	}
	if len(q.IDs) > 0 {
		if len(q.IDs) > 100 {
			return sc, RecordList{}, store.Invalid("id", "must be at most 100 ids")
		}
		for _, rid := range q.IDs {
			l.IDs = append(l.IDs, strings.ToLower(strings.TrimSpace(rid)))
		}
	}
	if q.Search != "" && !store.Storable(q.Search) {
		return sc, RecordList{}, store.Invalid("search", "must be valid text")
	}
	if l.SortField, l.SortDesc, err = recordSort(defs, q.SortField, q.SortDir); err != nil {
		return sc, RecordList{}, err
	}
	if err := v.Err(); err != nil {
		return sc, RecordList{}, err
	}
	if !q.All {
		size := q.PageSize
		if size <= 0 {
			size = 50
		}
		l.Limit = min(size, 100)
		if page := max(q.Page, 1); page-1 > math.MaxInt/l.Limit {
			return sc, RecordList{}, store.Invalid("page", "is too large")
		}
		l.Offset = (max(q.Page, 1) - 1) * l.Limit
	}
	return sc, l, nil
}

func rangeKind(kind string) bool {
	switch kind {
	case "integer", "float", "currency", "date", "datetime":
		return true
	}
	return false
}

// coerceFilter reads a filter value by the field's kind.
func coerceFilter(d *Definition, raw string) (any, string) {
	switch d.Kind {
	case "integer", "float", "currency":
		f, ok := number(raw)
		if !ok {
			return nil, "Must be a number"
		}
		return f, ""
	case "boolean":
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return nil, "Must be true or false"
		}
		return b, ""
	case "date", "datetime":
		one := *d
		one.ConfigJSON = map[string]any{}
		return coerceOne(&one, raw)
	}
	if !store.Storable(raw) {
		return nil, "Must be valid text"
	}
	if opts, ok := d.ConfigJSON["options"].([]any); ok {
		for _, o := range opts { // a numeric option is compared as a number
			if f, isNum := o.(float64); isNum && strconv.FormatFloat(f, 'f', -1, 64) == raw {
				return f, ""
			}
		}
	}
	return raw, ""
}

// recordSort checks a sort field and direction: the field as a
// RecordList names it, and whether descending.
func recordSort(defs map[string]*Definition, field, dir string) (string, bool, error) {
	desc := false
	switch strings.ToLower(dir) {
	case "", "asc":
	case "desc":
		desc = true
	default:
		return "", false, store.Invalid("sortDir", "must be asc or desc")
	}
	switch field {
	case "", "id":
		return "id", desc, nil
	case "createdAt", "created_at":
		return "createdAt", desc, nil
	case "updatedAt", "updated_at":
		return "updatedAt", desc, nil
	}
	key := strings.TrimPrefix(field, "cf_")
	if defs[key] == nil {
		return "", false, store.Invalid("sortField", "must be id, createdAt, updatedAt or a field of the entity")
	}
	return key, desc, nil
}

// Option is one choice of a relation field: a record's id and label.
type Option struct {
	// Value is the record's id.
	Value string `json:"value"`
	Label string `json:"label"`
}

// OptionsQuery selects relation options: records of EntityID labelled by
// LabelField (defaulting to the entity's labelField, then name, title,
// code or email, then the id), matching Q, PageSize at a time (default
// 20, at most 100) after Cursor (from the previous page).
type OptionsQuery struct {
	EntityID, LabelField, Q, Cursor string // see the type comment
	PageSize                        int
}

// RelationOptions returns a page of relation options, in id order, and
// the cursor of the next page ("" at the end). A cursor is opaque: the
// last id of the page, which a caller must not rely on.
func (s *Service) RelationOptions(ctx context.Context, q OptionsQuery) ([]Option, string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, "", err
	}
	id, ok := NormalizeEntityID(q.EntityID)
	if !ok {
		return []Option{}, "", nil // no such entity: nothing to choose
	}
	size := q.PageSize
	if size <= 0 {
		size = 20
	}
	size = min(size, 100)
	labelField := q.LabelField
	if labelField == "" {
		if e, err := s.store.LiveEntity(ctx, s.db, sc.TenantID, sc.OrganizationID, id); err == nil {
			labelField = e.LabelField
		} else if e, err := s.store.LiveEntity(ctx, s.db, sc.TenantID, "", id); err == nil {
			labelField = e.LabelField
		}
	}
	if labelField != "" && !labelFieldPattern.MatchString(labelField) {
		return nil, "", store.Invalid("labelField", "must be a field name")
	}
	after := ""
	if q.Cursor != "" {
		if after, err = decodeCursor(q.Cursor); err != nil {
			return nil, "", store.Invalid("cursor", "is not a cursor this API gave")
		}
	}
	if q.Q != "" && !store.Storable(q.Q) {
		return nil, "", store.Invalid("q", "must be valid text")
	}
	recs, err := s.store.RecordsAfter(ctx, s.db, sc, id, after, q.Q, size+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(recs) > size {
		recs = recs[:size]
		next = encodeCursor(recs[size-1].ID)
	}
	out := make([]Option, len(recs))
	for i, r := range recs {
		out[i] = Option{Value: r.ID, Label: recordLabel(r, labelField)}
	}
	return out, next, nil
}

// recordLabel is a record's label: labelField's value, else name, title,
// code or email, else its id.
func recordLabel(r *Record, labelField string) string {
	for _, k := range []string{labelField, "name", "title", "code", "email"} {
		if k == "" {
			continue
		}
		if v, ok := r.Values[k]; ok && v != nil {
			if s, isStr := v.(string); isStr {
				if s != "" {
					return s
				}
				continue
			}
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	return r.ID
}

func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("r:" + id))
}

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "r:") || !uuidPattern.MatchString(string(b[2:])) {
		return "", errors.New("bad cursor")
	}
	return string(b[2:]), nil
}

// maxBatchRecords bounds one CreateRecords call.
const maxBatchRecords = 1000

// CreateRecords validates and stores several new records of one entity in
// one transaction (at most 1000), with one created event each, and
// returns their ids in order. A failure in any record is a
// ValidationError whose fields are prefixed with the record's index
// ("[3].cf_total"), and nothing is written.
func (s *Service) CreateRecords(ctx context.Context, entityID string, values []map[string]any) ([]string, error) {
	if len(values) > maxBatchRecords {
		return nil, store.Invalid("records", "must be at most 1000 records")
	}
	sc, id, defs, err := s.writeContext(ctx, entityID)
	if err != nil {
		return nil, err
	}
	var v store.ValidationError
	clean := make([]map[string]any, len(values))
	for i, vals := range values {
		c, err := cleanValues(defs, vals)
		dropNulls(c)
		if err == nil {
			err = missingRequired(defs, c)
		}
		var ve *store.ValidationError
		if errors.As(err, &ve) {
			for f, msg := range ve.Fields {
				v.Add("["+strconv.Itoa(i)+"]."+f, msg)
			}
			continue
		}
		clean[i] = c
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	// Prepared once (SQLite parses a 50-row INSERT in about the time it
	// runs it), before the transaction takes the writer.
	s.store.PrepareInserts(ctx, s.db)
	s.db.PrepareEmitMany(ctx)
	ids := make([]string, len(values))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		records := make([]*Record, len(clean))
		for i, c := range clean {
			ids[i] = store.NewID()
			records[i] = &Record{ID: ids[i], EntityID: id, Values: c, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID,
				CreatedAt: now, UpdatedAt: now}
		}
		if err := s.store.InsertRecords(ctx, tx, records); err != nil {
			return err
		}
		events := make([]store.Event, len(clean))
		for i, r := range records {
			ev, err := recordEventOf(EventRecordCreated, r)
			if err != nil {
				return err
			}
			events[i] = ev
		}
		_, err = tx.EmitMany(ctx, events)
		return err
	})
	return ids, err
}

// CheckValues validates custom field values against the definitions of
// entityID that apply to the caller, as a record write would, and returns
// them in stored form (keys without "cf_"). It is how other areas (the
// attachments' customFields) use the entity's custom fields without
// storing a record. Unless partial (an update), nulls are dropped and
// required fields must be present; a partial result keeps nulls (they
// clear a value).
func (s *Service) CheckValues(ctx context.Context, entityID string, values map[string]any, partial bool) (map[string]any, error) {
	_, _, defs, err := s.writeContext(ctx, entityID)
	if err != nil {
		return nil, err
	}
	out, err := cleanValues(defs, values)
	if err != nil {
		return nil, err
	}
	if !partial {
		dropNulls(out)
		if err := missingRequired(defs, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Field returns the active definition of key (with or without "cf_") for
// entityID that applies to the caller, or an error wrapping
// store.ErrNotFound.
func (s *Service) Field(ctx context.Context, entityID, key string) (*Definition, error) {
	_, _, defs, err := s.writeContext(ctx, entityID)
	if err != nil {
		return nil, err
	}
	d := defs[strings.TrimPrefix(key, "cf_")]
	if d == nil {
		return nil, store.Errorf(store.ErrNotFound, "Unknown field")
	}
	return d, nil
}
