package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the entities routes (spec).
const (
	featureEntitiesDefinitionsView   = "entities.definitions.view"
	featureEntitiesDefinitionsManage = "entities.definitions.manage"
	featureEntitiesRecordsView       = "entities.records.view"
	featureEntitiesRecordsManage     = "entities.records.manage"
)

// entityRoutes are the custom entity, field definition, record and
// relation option endpoints.
func (a *api) entityRoutes() []route {
	h := entityHandlers{svc: a.kit.Entities}
	const base = "/entities"
	manage := []string{featureEntitiesDefinitionsManage}
	return []route{
		{Method: "GET", Path: base + "/entities", Summary: "List custom entities with their field counts", Handler: h.listEntities},
		{Method: "POST", Path: base + "/entities", Summary: "Create or update a custom entity", Features: manage, Handler: h.upsertEntity},
		{Method: "DELETE", Path: base + "/entities", Summary: "Delete a custom entity ({entityId}; its records stay)", Features: manage, Handler: h.deleteEntity},
		{Method: "GET", Path: base + "/sidebar-entities", Summary: "List the custom entities shown in the sidebar", Handler: h.sidebarEntities},
		{Method: "GET", Path: base + "/definitions", Summary: "The field definitions that apply (?entityId=…&entityId=… or ?entityIds=a,b)", Handler: h.definitions},
		{Method: "GET", Path: base + "/definitions.manage", Summary: "The winning definitions and the keys deleted at the caller's scope (?entityId)", Features: manage, Handler: h.manage},
		{Method: "POST", Path: base + "/definitions", Summary: "Create or update a field definition", Features: manage, Handler: h.define},
		{Method: "POST", Path: base + "/definitions.batch", Summary: "Write an entity's definitions in order, with field sets", Features: manage, Handler: h.batch},
		{Method: "DELETE", Path: base + "/definitions", Summary: "Delete (tombstone) a field at the caller's scope ({entityId, key})", Features: manage, Handler: h.deleteDefinition},
		{Method: "POST", Path: base + "/definitions.restore", Summary: "Restore a deleted field ({entityId, key})", Features: manage, Handler: h.restore},
		{Method: "GET", Path: base + "/records", Summary: "List or export an entity's records (?entityId, page, pageSize, sortField, sortDir, search, withDeleted, cf_<key>[In|Gt|Gte|Lt|Lte], format)",
			Features: []string{featureEntitiesRecordsView}, ErrorBody: recordErrorBody, Handler: h.listRecords},
		{Method: "POST", Path: base + "/records", Summary: "Create a record", Features: []string{featureEntitiesRecordsManage}, ErrorBody: recordErrorBody, Handler: h.createRecord},
		{Method: "PUT", Path: base + "/records", Summary: "Update a record (values given replace those stored)", Features: []string{featureEntitiesRecordsManage}, ErrorBody: recordErrorBody, Handler: h.updateRecord},
		{Method: "DELETE", Path: base + "/records", Summary: "Delete a record (?entityId&recordId or a JSON body)", Features: []string{featureEntitiesRecordsManage}, ErrorBody: recordErrorBody, Handler: h.deleteRecord},
		{Method: "GET", Path: base + "/relations/options", Summary: "Choices for a relation field (?entityId, labelField, q, pageSize, cursor)",
			Features: []string{featureEntitiesDefinitionsView}, Handler: h.relationOptions},
	}
}

type entityHandlers struct{ svc *entities.Service }

func (h entityHandlers) listEntities(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.ListEntities(r.Context())
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"items": items})
}

func (h entityHandlers) sidebarEntities(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.SidebarEntities(r.Context())
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"items": items})
}

func (h entityHandlers) upsertEntity(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[entities.EntityInput](r)
	if err != nil {
		return err
	}
	e, err := h.svc.UpsertEntity(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "item": map[string]any{
		"id": e.ID, "entityId": e.EntityID, "label": e.Label, "description": e.Description}})
}

// entityRef is the body of the deletes and the restore.
type entityRef struct {
	EntityID string `json:"entityId"`
	Key      string `json:"key"`
}

func (h entityHandlers) deleteEntity(w http.ResponseWriter, r *http.Request) error {
	ref, err := decode[entityRef](r)
	if err != nil {
		return err
	}
	if ref.EntityID == "" {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	if err := h.svc.DeleteEntity(r.Context(), ref.EntityID); err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]bool{"ok": true})
}

// entityIDsOf reads ?entityId (repeated) and ?entityIds (comma-separated).
func entityIDsOf(r *http.Request) []string {
	q := r.URL.Query()
	var ids []string
	for _, id := range q["entityId"] {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	for _, list := range q["entityIds"] {
		for id := range strings.SplitSeq(list, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func (h entityHandlers) definitions(w http.ResponseWriter, r *http.Request) error {
	ids := entityIDsOf(r)
	if len(ids) == 0 {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	defs, err := h.svc.Definitions(r.Context(), ids...)
	if err != nil {
		return err
	}
	settings, err := h.svc.Settings(r.Context(), ids...)
	if err != nil {
		return err
	}
	fieldset := r.URL.Query().Get("fieldset")
	items := []map[string]any{}
	for _, d := range defs {
		if fieldset != "" && d.ConfigJSON["fieldset"] != fieldset {
			continue
		}
		items = append(items, fieldView(d))
	}
	fieldsets := map[string][]entities.FieldSet{}
	entitySettings := map[string]map[string]bool{}
	for id, s := range settings {
		fieldsets[id] = s.Fieldsets
		entitySettings[id] = map[string]bool{"singleFieldsetPerRecord": s.SingleFieldsetPerRecord}
	}
	return encode(w, http.StatusOK, map[string]any{"items": items, "fieldsetsByEntity": fieldsets, "entitySettings": entitySettings})
}

// fieldView is a resolved definition as GET /entities/definitions shows
// it: its configuration flattened beside key, kind and entityId, with
// defaults for the flags, options as {value, label}, and a dictionary's
// entries URL.
func fieldView(d *entities.Definition) map[string]any {
	v := map[string]any{}
	for k, x := range d.ConfigJSON {
		v[k] = x
	}
	v["key"], v["kind"], v["entityId"] = d.Key, d.Kind, d.EntityID
	for _, k := range []string{"multi", "filterable"} {
		if _, ok := v[k].(bool); !ok {
			v[k] = false
		}
	}
	v["priority"] = d.Priority()
	if list, ok := d.ConfigJSON["options"].([]any); ok {
		opts := make([]map[string]any, len(list))
		for i, o := range list {
			opts[i] = map[string]any{"value": o, "label": o}
		}
		v["options"] = opts
	}
	if id, ok := d.ConfigJSON["dictionaryId"].(string); ok {
		v["optionsUrl"] = "/api/dictionaries/" + id + "/entries"
	}
	return v
}

func (h entityHandlers) manage(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("entityId")
	if id == "" {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	items, deleted, err := h.svc.Manage(r.Context(), id)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"items": items, "deletedKeys": deleted})
}

func (h entityHandlers) define(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[entities.DefinitionInput](r)
	if err != nil {
		return err
	}
	d, err := h.svc.Define(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "item": map[string]any{
		"id": d.ID, "key": d.Key, "kind": d.Kind, "configJson": d.ConfigJSON, "isActive": d.IsActive}})
}

func (h entityHandlers) batch(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[entities.BatchInput](r)
	if err != nil {
		return err
	}
	v, err := h.svc.Batch(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "version": v})
}

func (h entityHandlers) deleteDefinition(w http.ResponseWriter, r *http.Request) error {
	ref, err := decode[entityRef](r)
	if err != nil {
		return err
	}
	if ref.EntityID == "" || ref.Key == "" {
		return store.Errorf(store.ErrInvalid, "entityId and key are required")
	}
	v, err := h.svc.DeleteDefinition(r.Context(), ref.EntityID, ref.Key)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "version": v})
}

func (h entityHandlers) restore(w http.ResponseWriter, r *http.Request) error {
	ref, err := decode[entityRef](r)
	if err != nil {
		return err
	}
	if ref.EntityID == "" || ref.Key == "" {
		return store.Errorf(store.ErrInvalid, "entityId and key are required")
	}
	if err := h.svc.RestoreDefinition(r.Context(), ref.EntityID, ref.Key); err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]bool{"ok": true})
}

// recordErrorBody is the records routes' error body: a validation failure
// is {error: "Validation failed", fields: {"cf_<key>": message}}; other
// errors are the default body.
func recordErrorBody(status int, err error, message string, details map[string]string) any {
	if details != nil && status == http.StatusBadRequest {
		return map[string]any{"error": "Validation failed", "fields": details}
	}
	return defaultErrorBody(status, err, message, details)
}

// recordFilters reads the cf_ query parameters: cf_<key>=v (a comma makes
// it a list: In), cf_<key>In=a,b, and cf_<key>Gt|Gte|Lt|Lte=v.
func recordFilters(q url.Values) []entities.Filter {
	var out []entities.Filter
	for name, values := range q {
		if !strings.HasPrefix(name, "cf_") || len(values) == 0 {
			continue
		}
		key, op := name, entities.OpEq
		// Keys are snake_case, so a capitalised suffix is an operator.
		for _, s := range []struct{ suffix, op string }{{"In", entities.OpIn}, {"Gte", entities.OpGte}, {"Gt", entities.OpGt},
			{"Lte", entities.OpLte}, {"Lt", entities.OpLt}} {
			if k, ok := strings.CutSuffix(name, s.suffix); ok {
				key, op = k, s.op
				break
			}
		}
		raw := values[0]
		f := entities.Filter{Key: key, Op: op, Values: []string{raw}}
		if op == entities.OpIn || op == entities.OpEq && strings.Contains(raw, ",") {
			f.Op, f.Values = entities.OpIn, nil
			for part := range strings.SplitSeq(raw, ",") {
				if part = strings.TrimSpace(part); part != "" {
					f.Values = append(f.Values, part)
				}
			}
		}
		out = append(out, f)
	}
	return out
}

func (h entityHandlers) listRecords(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	entityID := q.Get("entityId")
	if entityID == "" {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	p, err := parsePage(q, 50, 100)
	if err != nil {
		return err
	}
	withDeleted, err := parseBool(q, "withDeleted")
	if err != nil {
		return err
	}
	format, err := parseExportFormat(q)
	if err != nil {
		return err
	}
	full := q.Get("exportScope") == "full" || q.Get("all") == "true" || q.Get("full") == "true"
	rq := entities.RecordQuery{EntityID: entityID, Page: p.Page, PageSize: p.PageSize, All: format != "" && full,
		SortField: q.Get("sortField"), SortDir: q.Get("sortDir"), WithDeleted: withDeleted != nil && *withDeleted,
		Search: q.Get("search"), Filters: recordFilters(q)}
	if id := q.Get("id"); id != "" {
		rq.IDs = strings.Split(id, ",")
	}
	items, total, err := h.svc.ListRecords(r.Context(), rq)
	if err != nil {
		return err
	}
	rows := make([]map[string]any, len(items))
	for i, rec := range items {
		rows[i] = recordRow(rec)
	}
	if format == "" {
		return encode(w, http.StatusOK, newPage(rows, total, p))
	}
	defs, err := h.svc.Definitions(r.Context(), entityID)
	if err != nil {
		return err
	}
	cols := []exportColumn{{Key: "id", Header: "Id"}}
	for _, d := range defs {
		cols = append(cols, exportColumn{Key: d.Key, Header: humanize(d.Key)})
	}
	cols = append(cols, exportColumn{Key: "createdAt", Header: "Created At"}, exportColumn{Key: "updatedAt", Header: "Updated At"})
	name := strings.ReplaceAll(entityID, ":", ".")
	if full {
		name += "_full"
	}
	return writeExport(w, format, name, exportTable{Columns: cols, Rows: rows})
}

// recordRow is a record as lists show it: its values by bare key, with
// id, createdAt, updatedAt (and deletedAt when deleted).
func recordRow(rec *entities.Record) map[string]any {
	row := make(map[string]any, len(rec.Values)+4)
	for k, v := range rec.Values {
		row[k] = v
	}
	row["id"], row["createdAt"], row["updatedAt"] = rec.ID, rec.CreatedAt, rec.UpdatedAt
	if rec.DeletedAt != nil {
		row["deletedAt"] = rec.DeletedAt
	}
	return row
}

// humanize turns a field key into a column title: "order_total" → "Order
// Total".
func humanize(key string) string {
	words := strings.FieldsFunc(strings.TrimPrefix(key, "cf_"), func(r rune) bool { return r == '_' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// decodeRecord reads a record write's body: entityId, recordId, and the
// values under "values", under "customFields" (the shared convention's
// name) or as top-level "cf_<key>" keys, merged in that order.
func decodeRecord(r *http.Request) (entities.RecordInput, error) {
	var in entities.RecordInput
	body, err := decode[map[string]json.RawMessage](r)
	if err != nil {
		return in, err
	}
	field := func(name string, dst any) error {
		raw, ok := body[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return store.Invalid(name, "has the wrong type")
		}
		return nil
	}
	var custom map[string]any
	for _, f := range []struct {
		name string
		dst  any
	}{{"entityId", &in.EntityID}, {"recordId", &in.RecordID}, {"values", &in.Values}, {"customFields", &custom}} {
		if err := field(f.name, f.dst); err != nil {
			return in, err
		}
	}
	for k, raw := range body {
		if !strings.HasPrefix(k, "cf_") {
			continue
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return in, store.Invalid(k, "is not a value")
		}
		if custom == nil {
			custom = map[string]any{}
		}
		custom[k] = x
	}
	if len(custom) > 0 && in.Values == nil {
		in.Values = map[string]any{}
	}
	for k, x := range custom {
		in.Values[k] = x
	}
	return in, nil
}

func (h entityHandlers) createRecord(w http.ResponseWriter, r *http.Request) error {
	in, err := decodeRecord(r)
	if err != nil {
		return err
	}
	if in.EntityID == "" {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	rec, err := h.svc.CreateRecord(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "item": map[string]string{"entityId": rec.EntityID, "recordId": rec.ID}})
}

func (h entityHandlers) updateRecord(w http.ResponseWriter, r *http.Request) error {
	in, err := decodeRecord(r)
	if err != nil {
		return err
	}
	if in.EntityID == "" || in.RecordID == "" {
		return store.Errorf(store.ErrInvalid, "entityId and recordId are required")
	}
	rec, err := h.svc.UpdateRecord(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "item": map[string]string{"entityId": rec.EntityID, "recordId": rec.ID}})
}

// recordRef names a record: DELETE /entities/records takes it from the
// query or, when the query names neither, from a JSON body.
type recordRef struct {
	EntityID string `json:"entityId"`
	RecordID string `json:"recordId"`
}

func (h entityHandlers) deleteRecord(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref := recordRef{q.Get("entityId"), q.Get("recordId")}
	if ref.EntityID == "" && ref.RecordID == "" && r.ContentLength != 0 {
		var err error
		if ref, err = decode[recordRef](r); err != nil {
			return err
		}
	}
	if ref.EntityID == "" || ref.RecordID == "" {
		return store.Errorf(store.ErrInvalid, "entityId and recordId are required")
	}
	if err := h.svc.DeleteRecord(r.Context(), ref.EntityID, ref.RecordID); err != nil {
		return err
	}
	return encode(w, http.StatusOK, map[string]bool{"ok": true})
}

func (h entityHandlers) relationOptions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	size := 0
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return store.Invalid("pageSize", msgPositive)
		}
		size = n
	}
	items, next, err := h.svc.RelationOptions(r.Context(), entities.OptionsQuery{EntityID: q.Get("entityId"),
		LabelField: q.Get("labelField"), Q: q.Get("q"), Cursor: q.Get("cursor"), PageSize: size})
	if err != nil {
		return err
	}
	var nextCursor any
	if next != "" {
		nextCursor = next
	}
	return encode(w, http.StatusOK, map[string]any{"items": items, "nextCursor": nextCursor})
}
