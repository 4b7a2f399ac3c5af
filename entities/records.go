package entities

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	ID             string         `json:"id"`
	EntityID       string         `json:"entityId"`
	Values         map[string]any `json:"values"`
	TenantID       string         `json:"tenantId"`
	OrganizationID string         `json:"organizationId,omitempty"`
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`
	DeletedAt      *time.Time     `json:"deletedAt,omitempty"`
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
	EntityID string         `json:"entityId"`
	RecordID string         `json:"recordId"`
	Values   map[string]any `json:"values"`
}

func jsonMarshal(x any) ([]byte, error) { return json.Marshal(x) }

// fieldsOf returns the definitions that apply to entityID for sc, by key.
func (s *Service) fieldsOf(ctx context.Context, sc store.Scope, entityID string) (map[string]*Definition, error) {
	defs, err := s.resolved(ctx, sc, entityID)
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
// apply, by key.
func (s *Service) writeContext(ctx context.Context, entityID string) (store.Scope, string, map[string]*Definition, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return sc, "", nil, err
	}
	id, ok := NormalizeEntityID(entityID)
	if !ok {
		return sc, "", nil, store.Invalid("entityId", entityIDMessage)
	}
	defs, err := s.fieldsOf(ctx, sc, id)
	return sc, id, defs, err
}

// CreateRecord validates in.Values against the entity's field definitions
// and stores a new record. A recordId that is not a UUID is ignored and
// a new id made; a UUID is used as the id. Record ids are unique per
// tenant (the key is (tenant_id, id)): an id another tenant's record holds
// is free for the caller, and only a record of the caller's own tenant
// with that id is a conflict ("A record with this id already exists").
func (s *Service) CreateRecord(ctx context.Context, in RecordInput) (*Record, error) {
	sc, id, defs, err := s.writeContext(ctx, in.EntityID)
	if err != nil {
		return nil, err
	}
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
	var out *Record
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		r := &Record{ID: recordID, EntityID: id, Values: values, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID,
			CreatedAt: now, UpdatedAt: now}
		data, err := json.Marshal(values)
		if err != nil {
			return err
		}
		counts, err := countsFor(ctx, tx, id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO custom_entity_records (id, tenant_id, organization_id, entity_id, data, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)`, r.ID, r.TenantID, store.NullIfEmpty(r.OrganizationID), id, string(data), now)
		if errors.Is(err, store.ErrConflict) {
			return store.Errorf(store.ErrConflict, "A record with this id already exists")
		}
		if err != nil {
			return err
		}
		counts.add(values, r.OrganizationID, 1)
		if err := counts.flush(ctx, tx, r.TenantID, id); err != nil {
			return err
		}
		out = r
		_, err = tx.EmitData(ctx, EventRecordCreated, sc, eventOf(r))
		return err
	})
	return out, err
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
	var out *Record
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		counts, err := countsFor(ctx, tx, id)
		if err != nil {
			return err
		}
		r, err := lockRecord(ctx, tx, sc, id, strings.ToLower(in.RecordID))
		if err != nil {
			return err
		}
		counts.add(r.Values, r.OrganizationID, -1)
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
		data, err := json.Marshal(r.Values)
		if err != nil {
			return err
		}
		r.UpdatedAt = tx.Now()
		if err := store.ExecOne(ctx, tx, `UPDATE custom_entity_records SET data = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2`,
			r.TenantID, r.ID, string(data), r.UpdatedAt); err != nil {
			return err
		}
		counts.add(r.Values, r.OrganizationID, 1)
		if err := counts.flush(ctx, tx, r.TenantID, id); err != nil {
			return err
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
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		counts, err := countsFor(ctx, tx, id)
		if err != nil {
			return err
		}
		r, err := lockRecord(ctx, tx, sc, id, strings.ToLower(recordID))
		if err != nil {
			return err
		}
		now := tx.Now()
		r.DeletedAt, r.UpdatedAt = &now, now
		if err := store.ExecOne(ctx, tx, `UPDATE custom_entity_records SET deleted_at = $3, updated_at = $3 WHERE tenant_id = $1 AND id = $2`,
			r.TenantID, r.ID, now); err != nil {
			return err
		}
		counts.add(r.Values, r.OrganizationID, -1)
		if err := counts.flush(ctx, tx, r.TenantID, id); err != nil {
			return err
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
	return getRecord(ctx, s.db, sc, id, strings.ToLower(recordID), withDeleted)
}

var recordNotFound = store.Errorf(store.ErrNotFound, "Record not found")

const recordColumns = `id, entity_id, data, tenant_id, COALESCE(organization_id, ''), created_at, updated_at, deleted_at`

func scanRecord(s store.Scanner) (*Record, error) {
	var r Record
	var data string
	if err := s.Scan(&r.ID, &r.EntityID, &data, &r.TenantID, &r.OrganizationID, &r.CreatedAt, &r.UpdatedAt, &r.DeletedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(data), &r.Values); err != nil {
		return nil, err
	}
	return &r, nil
}

func getRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, withDeleted bool) (*Record, error) {
	return readRecord(ctx, q, sc, entityID, recordID, withDeleted, "")
}

// lockRecord is getRecord of a live record for a transaction that changes
// it: on PostgreSQL the row stays locked until the transaction ends, so
// that concurrent changes of one record apply one after the other, each
// to the other's result (and a record deleted meanwhile is not found).
// SQLite's single writer does that already.
func lockRecord(ctx context.Context, tx *store.Tx, sc store.Scope, entityID, recordID string) (*Record, error) {
	lock := ""
	if tx.Dialect().Name() == "postgres" {
		lock = " FOR UPDATE"
	}
	return readRecord(ctx, tx, sc, entityID, recordID, false, lock)
}

func readRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, withDeleted bool, lock string) (*Record, error) {
	if !uuidPattern.MatchString(recordID) {
		return nil, recordNotFound
	}
	c := sc.Readable("tenant_id", "organization_id")
	c.And("entity_id = ?", entityID)
	c.And("id = ?", recordID)
	if !withDeleted {
		c.And("deleted_at IS NULL")
	}
	r, err := store.One(ctx, q, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE `+c.SQL()+lock, c.Values()...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, recordNotFound
	}
	return r, err
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
	Key    string
	Op     string
	Values []string
}

// RecordQuery selects records of one entity.
type RecordQuery struct {
	EntityID string
	// Page is 1-based; PageSize defaults to 50, at most 100. All ignores
	// them (every matching record, for exports).
	Page, PageSize int
	All            bool
	// SortField is id, createdAt, updatedAt or a custom field's key (with
	// or without cf_); SortDir asc (default) or desc.
	SortField, SortDir string
	WithDeleted        bool
	// IDs, when set, keeps the records with one of these ids (the common
	// id filter; an id that is not a UUID matches nothing).
	IDs []string
	// Search matches records whose values contain it (case-insensitive).
	Search  string
	Filters []Filter
}

// ListRecords returns a page of the caller's records of an entity and
// their total.
func (s *Service) ListRecords(ctx context.Context, q RecordQuery) ([]*Record, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	id, ok := NormalizeEntityID(q.EntityID)
	if !ok {
		return nil, 0, store.Invalid("entityId", entityIDMessage)
	}
	defs, err := s.fieldsOf(ctx, sc, id)
	if err != nil {
		return nil, 0, err
	}
	if err := s.restoreIndexes(ctx); err != nil {
		return nil, 0, err
	}
	dialect := s.db.Dialect().Name()
	c := sc.Readable("tenant_id", "organization_id")
	// The entity id is written into the statement (a checked identifier),
	// as in the filterable indexes' predicate, so that the engines can use
	// those partial indexes.
	c.And("entity_id = '" + id + "'")
	if !q.WithDeleted {
		c.And("deleted_at IS NULL")
	}
	var v store.ValidationError
	// An equality or In filter alone on a field the caller sees as
	// filterable may take its total from the value counts (counts.go);
	// for others there are none to look up (or, defined filterable only
	// at another scope, counting them gives the same total).
	type countable struct {
		key  string
		vals []any
	}
	var filters int
	var counted *countable
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
		filters++
		if (f.Op == OpEq || f.Op == OpIn) && !multi(d) && isFilterable(d) {
			counted = &countable{key, vals}
		}
		if multi(d) && (f.Op == OpEq || f.Op == OpIn) {
			// A list value matches when it holds any of the values (no
			// index serves this).
			var anyOf []string
			var args []any
			for _, x := range vals {
				if dialect == "postgres" {
					b, _ := json.Marshal([]any{x})
					anyOf, args = append(anyOf, valueExpr(dialect, key)+" @> ?::jsonb"), append(args, string(b))
				} else {
					anyOf, args = append(anyOf, "EXISTS (SELECT 1 FROM json_each(data, '$."+key+"') WHERE value = ?)"), append(args, x)
				}
			}
			c.And("("+strings.Join(anyOf, " OR ")+")", args...)
			continue
		}
		// Filters compare the indexed form of the value (indexedExpr), but
		// equality with a value too long for PostgreSQL's index.
		indexed := indexedExpr(dialect, key)
		switch f.Op {
		case OpEq, OpIn:
			marks := make([]string, len(vals))
			args := make([]any, len(vals))
			expr := indexed
			for i, x := range vals {
				p, cast := valueParam(dialect, x)
				marks[i], args[i] = "?"+cast, p
				if !shortFilterValue(x) {
					expr = valueExpr(dialect, key)
				}
			}
			if len(marks) == 1 {
				c.And(expr+" = "+marks[0], args...)
			} else {
				c.And(expr+" IN ("+strings.Join(marks, ", ")+")", args...)
			}
		case OpGt, OpGte, OpLt, OpLte:
			if !rangeKind(d.Kind) {
				v.Add(fieldName(key), "Range filters apply to integer, float, currency, date and datetime fields")
				continue
			}
			op := map[string]string{OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}[f.Op]
			p, cast := valueParam(dialect, vals[0])
			c.And(indexed+" "+op+" ?"+cast, p)
		default:
			v.Add(fieldName(key), "Unknown filter operator")
		}
	}
	if len(q.IDs) > 0 {
		if len(q.IDs) > 100 {
			return nil, 0, store.Invalid("id", "must be at most 100 ids")
		}
		var marks []string
		for _, rid := range q.IDs {
			marks = append(marks, c.Add(strings.ToLower(strings.TrimSpace(rid))))
		}
		c.And("id IN (" + strings.Join(marks, ", ") + ")")
	}
	if q.Search != "" {
		if !store.Storable(q.Search) {
			return nil, 0, store.Invalid("search", "must be valid text")
		}
		c.And(valuesContain(s.db.Dialect(), "?"), store.LikeContains(store.FoldCase(q.Search)))
	}
	order, err := recordOrder(dialect, defs, q.SortField, q.SortDir)
	if err != nil {
		return nil, 0, err
	}
	if err := v.Err(); err != nil {
		return nil, 0, err
	}
	if filters != 1 || len(q.IDs) > 0 || q.Search != "" || q.WithDeleted {
		counted = nil
	}
	var items []*Record
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		fromCounts := false
		if counted != nil {
			var err error
			if total, fromCounts, err = countedTotal(ctx, tx, sc, id, counted.key, counted.vals); err != nil {
				return err
			}
		}
		if !fromCounts {
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM custom_entity_records WHERE `+c.SQL(), c.Values()...).Scan(&total); err != nil {
				return err
			}
		}
		page := ""
		if !q.All {
			size := q.PageSize
			if size <= 0 {
				size = 50
			}
			size = min(size, 100)
			p := max(q.Page, 1)
			page = " LIMIT " + c.Add(size) + " OFFSET " + c.Add((p-1)*size)
		}
		var err error
		items, err = store.Many(ctx, tx, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE `+c.SQL()+order+page, c.Values()...)
		return err
	})
	return items, total, err
}

// valuesContain is a predicate holding when one of a record's values (not
// its keys; lists and objects as their JSON text), case-folded, matches
// the LIKE pattern in param.
func valuesContain(d store.Dialect, param string) string {
	if d.Name() == "postgres" {
		return "EXISTS (SELECT 1 FROM jsonb_each_text(data) v WHERE " + d.ContainsFold("v.value", param) + ")"
	}
	// json_each gives booleans as 1 and 0: read them as PostgreSQL does.
	return "EXISTS (SELECT 1 FROM json_each(data) v WHERE " +
		d.ContainsFold("CASE v.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE v.value END", param) + ")"
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

// recordOrder returns the ORDER BY clause of a sort field and direction.
func recordOrder(dialect string, defs map[string]*Definition, field, dir string) (string, error) {
	desc := false
	switch strings.ToLower(dir) {
	case "", "asc":
	case "desc":
		desc = true
	default:
		return "", store.Invalid("sortDir", "must be asc or desc")
	}
	d := " ASC"
	if desc {
		d = " DESC"
	}
	switch field {
	case "", "id":
		return " ORDER BY id" + d, nil
	case "createdAt", "created_at":
		return " ORDER BY created_at" + d + ", id" + d, nil
	case "updatedAt", "updated_at":
		return " ORDER BY updated_at" + d + ", id" + d, nil
	}
	key := strings.TrimPrefix(field, "cf_")
	if defs[key] == nil {
		return "", store.Invalid("sortField", "must be id, createdAt, updatedAt or a field of the entity")
	}
	// Records without the value come first ascending and last descending,
	// on both engines (SQLite's own order; the PostgreSQL indexes are
	// built NULLS FIRST to match).
	nulls := " NULLS FIRST"
	if desc {
		nulls = " NULLS LAST"
	}
	return " ORDER BY " + indexedExpr(dialect, key) + d + nulls + ", id" + d, nil
}

// Option is one choice of a relation field: a record's id and label.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// OptionsQuery selects relation options: records of EntityID labelled by
// LabelField (defaulting to the entity's labelField, then name, title,
// code or email, then the id), matching Q, PageSize at a time (default
// 20, at most 100) after Cursor (from the previous page).
type OptionsQuery struct {
	EntityID, LabelField, Q, Cursor string
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
		if e, err := liveEntityAt(ctx, s.db, sc.TenantID, sc.OrganizationID, id); err == nil {
			labelField = e.LabelField
		} else if e, err := liveEntityAt(ctx, s.db, sc.TenantID, "", id); err == nil {
			labelField = e.LabelField
		}
	}
	if labelField != "" && !labelFieldPattern.MatchString(labelField) {
		return nil, "", store.Invalid("labelField", "must be a field name")
	}
	c := sc.Readable("tenant_id", "organization_id")
	c.And("entity_id = ?", id)
	c.And("deleted_at IS NULL")
	if q.Cursor != "" {
		after, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", store.Invalid("cursor", "is not a cursor this API gave")
		}
		c.And("id > ?", after)
	}
	if q.Q != "" {
		if !store.Storable(q.Q) {
			return nil, "", store.Invalid("q", "must be valid text")
		}
		c.And(valuesContain(s.db.Dialect(), "?"), store.LikeContains(store.FoldCase(q.Q)))
	}
	recs, err := store.Many(ctx, s.db, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE `+c.SQL()+
		` ORDER BY id LIMIT `+c.Add(size+1), c.Values()...)
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

// recordInserts writes new records in multi-row INSERTs.
var recordInserts = store.NewBatchInsert("custom_entity_records",
	"id, tenant_id, organization_id, entity_id, data, created_at, updated_at", "")

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
	recordInserts.Prepare(ctx, s.db)
	countUpserts.Prepare(ctx, s.db)
	s.db.PrepareEmitMany(ctx)
	ids := make([]string, len(values))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		counts, err := countsFor(ctx, tx, id)
		if err != nil {
			return err
		}
		rows := make([][]any, len(clean))
		for i, c := range clean {
			counts.add(c, sc.OrganizationID, 1)
			data, err := json.Marshal(c)
			if err != nil {
				return err
			}
			ids[i] = store.NewID()
			rows[i] = []any{ids[i], sc.TenantID, store.NullIfEmpty(sc.OrganizationID), id, string(data), now, now}
		}
		if _, err := recordInserts.Insert(ctx, tx, rows); err != nil {
			return err
		}
		if err := counts.flush(ctx, tx, sc.TenantID, id); err != nil {
			return err
		}
		events := make([]store.Event, len(clean))
		for i, c := range clean {
			r := &Record{ID: ids[i], EntityID: id, Values: c, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID,
				CreatedAt: now, UpdatedAt: now}
			data, err := json.Marshal(eventOf(r))
			if err != nil {
				return err
			}
			events[i] = store.Event{Type: EventRecordCreated, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, Data: data}
		}
		_, err = tx.EmitMany(ctx, events)
		return err
	})
	return ids, err
}
