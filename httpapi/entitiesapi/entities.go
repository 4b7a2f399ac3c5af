package entitiesapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsondec"
	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the entities routes: the permission a route needs.
const (
	FeatureEntitiesDefinitionsView   = "entities.definitions.view"
	FeatureEntitiesDefinitionsManage = "entities.definitions.manage"
	FeatureEntitiesRecordsView       = "entities.records.view"
	FeatureEntitiesRecordsManage     = "entities.records.manage"
)

// routes are the custom entity, field definition, record and
// relation option endpoints.
func routes(svc *entities.Service, progress *progress.Service, env *apikit.Env) []apikit.Route {
	h := entityHandlers{svc: svc, progress: progress}
	const base = "/entities"
	manage := []string{FeatureEntitiesDefinitionsManage}
	entityIDQuery := apikit.Param{Name: "entityId", Required: true,
		Description: "The entity: module.name (or module:name), lowercase letters, digits and _"}
	definitionsQuery := []apikit.Param{
		apikit.TextQuery("entityId", "An entity (module.name or module:name); repeat it for several. entityId or entityIds is required"),
		apikit.TextQuery("entityIds", "Entities, comma-separated (beside or instead of entityId)"),
		apikit.TextQuery("fieldset", "Only the fields of this field set (configJson.fieldset)"),
	}
	recordsQuery := append(append([]apikit.Param{entityIDQuery}, apikit.PageQuery(50, 100)...),
		apikit.TextQuery("sortField", "id (default), createdAt, updatedAt (or created_at, updated_at), or a field's key, with or without cf_"),
		apikit.Param{Name: "sortDir", Pattern: "^([aA][sS][cC]|[dD][eE][sS][cC])$", Description: "asc (default) or desc"},
		apikit.TextQuery("search", "Records whose values contain this text (case-insensitive)"),
		apikit.BoolQuery("withDeleted", "Include deleted records (they carry deletedAt)"),
		apikit.TextQuery("id", "Only these records: ids, comma-separated (at most 100; an id that is not a UUID matches nothing)"),
		apikit.TextQuery("exportScope", "With format: full exports every matching record rather than the page"),
		apikit.TextQuery("all", "With format: true is exportScope=full"),
		apikit.TextQuery("full", "With format: true is exportScope=full"),
	)
	recordQuery := []apikit.Param{
		{Name: "entityId", Description: "The record's entity (instead of the body)"},
		{Name: "recordId", Description: "The record's id (instead of the body)"},
	}
	return []apikit.Route{
		{Method: "GET", Path: base + "/entities", Handler: h.listEntities,
			Doc: apikit.Doc{Summary: "List custom entities with their field counts", Response: entityListBody{}}},
		{Method: "POST", Path: base + "/entities", Handler: h.upsertEntity,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Create or update a custom entity", Request: entities.EntityInput{},
				Response: entityUpsertBody{}}},
		{Method: "DELETE", Path: base + "/entities", Handler: h.deleteEntity,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Delete a custom entity ({entityId}; its records stay)", Request: entityRef{},
				Response: entityOKBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "GET", Path: base + "/sidebar-entities", Handler: h.sidebarEntities,
			Doc: apikit.Doc{Summary: "List the custom entities shown in the sidebar", Response: entityListBody{}}},
		{Method: "GET", Path: base + "/definitions", Handler: h.definitions,
			Doc: apikit.Doc{Summary: "The field definitions that apply (?entityId=…&entityId=… or ?entityIds=a,b)",
				Query: definitionsQuery, Response: definitionsBody{}}},
		{Method: "GET", Path: base + "/definitions.manage", Handler: h.manage,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "The winning definitions and the keys deleted at the caller's scope (?entityId)",
				Query: []apikit.Param{entityIDQuery}, Response: manageBody{}}},
		{Method: "POST", Path: base + "/definitions", Handler: h.define,
			Access: apikit.Access{Features: manage},
			Doc:    apikit.Doc{Summary: "Create or update a field definition", Request: definitionInput{}, Response: defineBody{}}},
		{Method: "POST", Path: base + "/definitions.batch", Handler: h.batch,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Write an entity's definitions in order, with field sets", Request: entities.BatchInput{},
				Response: definitionVersionBody{}}},
		{Method: "DELETE", Path: base + "/definitions", Handler: h.deleteDefinition,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Delete (tombstone) a field at the caller's scope ({entityId, key})", Request: fieldRef{},
				Response: definitionVersionBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "POST", Path: base + "/definitions.restore", Handler: h.restore,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Restore a deleted field ({entityId, key})", Request: fieldRef{}, Response: entityOKBody{},
				Errors: []int{http.StatusNotFound}}},
		// The custom field filters are query parameters named after the
		// fields (cf_<key>, cf_<key>In, …): OpenAPI cannot list them, so
		// the description describes them (the contract check lets them
		// through: its validator does not refuse query parameters the
		// document does not list).
		{Method: "GET", Path: base + "/records", Handler: h.listRecords, ErrorBody: recordErrorBody,
			Access: apikit.Access{Features: []string{FeatureEntitiesRecordsView}},
			Doc: apikit.Doc{Summary: "List or export an entity's records",
				Description: "List an entity's records, a page at a time, each with its values by field key beside id, createdAt and updatedAt; " +
					"with format=csv|json|markdown|xml, the whole result set as a file instead (format=json: an array of rows, not a page, as application/vnd.tenantkit.export+json).\n\n" +
					"Filter by custom field with query parameters named after the fields: cf_<key>=v (a comma-separated list matches any of its values), " +
					"cf_<key>In=a,b, and cf_<key>Gt|Gte|Lt|Lte=v on integer, float, currency, date and datetime fields; " +
					"values are read by the field's kind, and keys without an active definition are ignored", Query: recordsQuery,
				Exports: true, Response: apikit.SearchPage[recordItem]{}, ResponseHeaders: []apikit.Param{exportProgressParam}}},
		{Method: "POST", Path: base + "/records", Handler: h.createRecord, ErrorBody: recordErrorBody,
			Access: apikit.Access{Features: []string{FeatureEntitiesRecordsManage}},
			Doc: apikit.Doc{Summary: "Create a record (values under values, customFields or as top-level cf_<key> keys)",
				Request: recordCreateInput{}, Response: recordWriteBody{}, Errors: []int{http.StatusConflict}}},
		{Method: "PUT", Path: base + "/records", Handler: h.updateRecord, ErrorBody: recordErrorBody,
			Access: apikit.Access{Features: []string{FeatureEntitiesRecordsManage}},
			Doc: apikit.Doc{Summary: "Update a record (values given replace those stored, null clears one; a recordId that is not a UUID creates a record)",
				Request: recordUpdateInput{}, Response: recordWriteBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "DELETE", Path: base + "/records", Handler: h.deleteRecord, ErrorBody: recordErrorBody,
			Access: apikit.Access{Features: []string{FeatureEntitiesRecordsManage}},
			Doc: apikit.Doc{Summary: "Delete a record (?entityId&recordId or a JSON body)", Query: recordQuery, Request: recordRef{},
				BodyOptional: true, Response: entityOKBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "GET", Path: base + "/relations/options", Handler: h.relationOptions,
			Access: apikit.Access{Features: []string{FeatureEntitiesDefinitionsView}},
			Doc: apikit.Doc{Summary: "Choices for a relation field (?entityId, labelField, q, pageSize, cursor)", Query: []apikit.Param{
				apikit.TextQuery("entityId", "The related entity (an unknown one has no options)"),
				apikit.TextQuery("labelField", "The field whose value labels a record (default: the entity's labelField, then name, title, code or email)"),
				apikit.TextQuery("q", "Records whose values contain this text"),
				{Name: "pageSize", Type: "integer", Minimum: apikit.Bound(1), Description: "Options per page (default 20; larger values are reduced to 100)"},
				apikit.TextQuery("cursor", "nextCursor of the previous page"),
			}, Response: relationOptionsBody{}}},
	}
}

// entityListBody is the body of the entity lists.
type entityListBody struct {
	Items []entities.EntitySummary `json:"items"`
}

// entityOKBody is the {ok: true} of the deletes and the restore.
type entityOKBody struct {
	OK bool `json:"ok"`
}

// entityUpsertBody answers POST /entities/entities.
type entityUpsertBody struct {
	OK   bool             `json:"ok"`
	Item entityUpsertItem `json:"item"`
}

// entityUpsertItem is the entity written.
type entityUpsertItem struct {
	ID          string `json:"id"`
	EntityID    string `json:"entityId"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

type entityHandlers struct {
	svc *entities.Service
	// progress tracks exports; nil without the progress area.
	progress *progress.Service
}

func (h entityHandlers) listEntities(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.ListEntities(r.Context())
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityListBody{Items: items})
}

func (h entityHandlers) sidebarEntities(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.SidebarEntities(r.Context())
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityListBody{Items: items})
}

func (h entityHandlers) upsertEntity(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[entities.EntityInput](r)
	if err != nil {
		return err
	}
	e, err := h.svc.UpsertEntity(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityUpsertBody{OK: true, Item: entityUpsertItem{
		ID: e.ID, EntityID: e.EntityID, Label: e.Label, Description: e.Description}})
}

// entityRef is the body of DELETE /entities/entities. Key is read (a
// key of the wrong type is refused, as ever) but not used, so the document
// leaves it out.
type entityRef struct {
	EntityID string `json:"entityId" jsonschema:"required"`
	Key      string `json:"key" jsonschema:"-"`
}

// fieldRef is the body of DELETE /entities/definitions and of the
// restore.
type fieldRef struct {
	EntityID string `json:"entityId" jsonschema:"required"`
	Key      string `json:"key" jsonschema:"required"`
}

func (h entityHandlers) deleteEntity(w http.ResponseWriter, r *http.Request) error {
	ref, err := apikit.Decode[entityRef](r)
	if err != nil {
		return err
	}
	if ref.EntityID == "" {
		return store.Errorf(store.ErrInvalid, "entityId is required")
	}
	if err := h.svc.DeleteEntity(r.Context(), ref.EntityID); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityOKBody{OK: true})
}

// EntityIDsOf reads ?entityId (repeated) and ?entityIds (comma-separated).
func EntityIDsOf(r *http.Request) []string {
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
	ids := EntityIDsOf(r)
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
	items := []fieldView{}
	for _, d := range defs {
		if fieldset != "" && d.ConfigJSON["fieldset"] != fieldset {
			continue
		}
		items = append(items, newFieldView(d))
	}
	fieldsets := map[string][]entities.FieldSet{}
	entitySettings := map[string]entitySettingsView{}
	for id, s := range settings {
		fieldsets[id] = s.Fieldsets
		if fieldsets[id] == nil {
			fieldsets[id] = []entities.FieldSet{}
		}
		entitySettings[id] = entitySettingsView{SingleFieldsetPerRecord: s.SingleFieldsetPerRecord}
	}
	return apikit.Encode(w, http.StatusOK, definitionsBody{Items: items, FieldsetsByEntity: fieldsets, EntitySettings: entitySettings})
}

// definitionsBody answers GET /entities/definitions: the fields, and the
// field settings of the entities that have some.
type definitionsBody struct {
	Items             []fieldView                    `json:"items"`
	FieldsetsByEntity map[string][]entities.FieldSet `json:"fieldsetsByEntity"`
	EntitySettings    map[string]entitySettingsView  `json:"entitySettings"`
}

// entitySettingsView is an entity's settings beside its field sets.
type entitySettingsView struct {
	SingleFieldsetPerRecord bool `json:"singleFieldsetPerRecord"`
}

// fieldView is a resolved definition as GET /entities/definitions shows
// it: its configuration flattened beside key, kind and entityId, with
// defaults for the flags, options as {value, label}, and a dictionary's
// entries URL.
type fieldView map[string]any

// JSONSchema documents fieldView: the keys every field has, and the
// configuration's own keys (label, validation, …) beside them.
func (fieldView) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	kinds := make([]any, len(entities.Kinds))
	for i, k := range entities.Kinds {
		kinds[i] = k
	}
	props.Set("key", &jsonschema.Schema{Type: "string"})
	props.Set("kind", &jsonschema.Schema{Type: "string", Enum: kinds})
	props.Set("entityId", &jsonschema.Schema{Type: "string"})
	props.Set("multi", &jsonschema.Schema{Type: "boolean"})
	props.Set("filterable", &jsonschema.Schema{Type: "boolean"})
	props.Set("priority", &jsonschema.Schema{Type: "number"})
	option := jsonschema.NewProperties()
	option.Set("value", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}}})
	option.Set("label", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}}})
	props.Set("options", &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "object", Properties: option,
		Required: []string{"value", "label"}, AdditionalProperties: jsonschema.FalseSchema}})
	props.Set("optionsUrl", &jsonschema.Schema{Type: "string", Description: "Where a currency or dictionary field's options come from"})
	return &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"key", "kind", "entityId", "multi", "filterable", "priority"},
		Description: "A field: key, kind and entityId beside the keys of its configJson (label, validation, …)"}
}

func newFieldView(d *entities.Definition) fieldView {
	v := fieldView{}
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
	return apikit.Encode(w, http.StatusOK, manageBody{Items: items, DeletedKeys: deleted})
}

// manageBody answers GET /entities/definitions.manage.
type manageBody struct {
	Items       []*entities.Definition `json:"items"`
	DeletedKeys []string               `json:"deletedKeys"`
}

// definitionInput is the body of POST /entities/definitions: an
// entities.DefinitionInput (it converts to one), whose entityId is
// required here (a batch's definitions take the batch's, so the shared
// type leaves it optional).
type definitionInput struct {
	EntityID   string         `json:"entityId" jsonschema:"required,maxLength=200,pattern=^[a-z0-9_]+[.:][a-z0-9_]+$"`
	Key        string         `json:"key" jsonschema:"required,maxLength=100,pattern=^[a-z0-9_]+$"`
	Kind       string         `json:"kind" jsonschema:"required,enum=text,enum=multiline,enum=integer,enum=float,enum=boolean,enum=select,enum=currency,enum=relation,enum=attachment,enum=dictionary,enum=phone,enum=date,enum=datetime,enum=string,enum=enum"`
	ConfigJSON map[string]any `json:"configJson"`
	IsActive   *bool          `json:"isActive"`
}

// defineBody answers POST /entities/definitions.
type defineBody struct {
	OK   bool           `json:"ok"`
	Item definitionItem `json:"item"`
}

// definitionItem is the definition written.
type definitionItem struct {
	ID         string         `json:"id"`
	Key        string         `json:"key"`
	Kind       string         `json:"kind"`
	ConfigJSON map[string]any `json:"configJson"`
	IsActive   bool           `json:"isActive"`
}

// definitionVersionBody answers the writes that change the definitions'
// version (the batch, the delete).
type definitionVersionBody struct {
	OK      bool  `json:"ok"`
	Version int64 `json:"version"`
}

func (h entityHandlers) define(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[definitionInput](r)
	if err != nil {
		return err
	}
	d, err := h.svc.Define(r.Context(), entities.DefinitionInput(in))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, defineBody{OK: true, Item: definitionItem{
		ID: d.ID, Key: d.Key, Kind: d.Kind, ConfigJSON: d.ConfigJSON, IsActive: d.IsActive}})
}

func (h entityHandlers) batch(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[entities.BatchInput](r)
	if err != nil {
		return err
	}
	v, err := h.svc.Batch(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, definitionVersionBody{OK: true, Version: v})
}

func (h entityHandlers) deleteDefinition(w http.ResponseWriter, r *http.Request) error {
	ref, err := apikit.Decode[fieldRef](r)
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
	return apikit.Encode(w, http.StatusOK, definitionVersionBody{OK: true, Version: v})
}

func (h entityHandlers) restore(w http.ResponseWriter, r *http.Request) error {
	ref, err := apikit.Decode[fieldRef](r)
	if err != nil {
		return err
	}
	if ref.EntityID == "" || ref.Key == "" {
		return store.Errorf(store.ErrInvalid, "entityId and key are required")
	}
	if err := h.svc.RestoreDefinition(r.Context(), ref.EntityID, ref.Key); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityOKBody{OK: true})
}

// recordErrorBody is the records routes' error body: a validation failure
// is {error: "Validation failed", fields: {"cf_<key>": message}}; other
// errors are the default body.
func recordErrorBody(status int, err error, message string, details map[string]string) any {
	if details != nil && status == http.StatusBadRequest {
		return map[string]any{"error": "Validation failed", "fields": details}
	}
	return apikit.DefaultErrorBody(status, err, message, details)
}

// RecordFilters reads the cf_ query parameters: cf_<key>=v (a comma makes
// it a list: In), cf_<key>In=a,b, and cf_<key>Gt|Gte|Lt|Lte=v.
func RecordFilters(q url.Values) []entities.Filter {
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
	p, err := apikit.ParsePage(q, 50, 100)
	if err != nil {
		return err
	}
	withDeleted, err := apikit.ParseBool(q, "withDeleted")
	if err != nil {
		return err
	}
	format, err := apikit.ParseExportFormat(q)
	if err != nil {
		return err
	}
	full := q.Get("exportScope") == "full" || q.Get("all") == "true" || q.Get("full") == "true"
	rq := entities.RecordQuery{EntityID: entityID, Page: p.Page, PageSize: p.PageSize, All: format != "" && full,
		SortField: q.Get("sortField"), SortDir: q.Get("sortDir"), WithDeleted: withDeleted != nil && *withDeleted,
		Search: q.Get("search"), Filters: RecordFilters(q)}
	if id := q.Get("id"); id != "" {
		rq.IDs = strings.Split(id, ",")
	}
	if format != "" {
		return h.exportRecords(w, r, rq, format, full)
	}
	items, total, err := h.svc.ListRecordsJSON(r.Context(), rq)
	if err != nil {
		return err
	}
	total, capped := store.CapTotal(r.Context(), total, rq.Search != "")
	return apikit.EncodeMarshaled(w, http.StatusOK, recordsPage{items: items, total: total, capped: capped, p: p})
}

// recordsExportJobType is the progress job type of a records export.
const recordsExportJobType = "entities.export"

// exportRecords answers a records list with format set: the file, as a
// progress job of type entities.export (writeTrackedExport).
func (h entityHandlers) exportRecords(w http.ResponseWriter, r *http.Request, rq entities.RecordQuery, format string, full bool) error {
	items, _, err := h.svc.ListRecords(r.Context(), rq)
	if err != nil {
		return err
	}
	defs, err := h.svc.Definitions(r.Context(), rq.EntityID)
	if err != nil {
		return err
	}
	cols := []apikit.ExportColumn{{Key: "id", Header: "Id"}}
	for _, d := range defs {
		cols = append(cols, apikit.ExportColumn{Key: d.Key, Header: humanize(d.Key)})
	}
	cols = append(cols, apikit.ExportColumn{Key: "createdAt", Header: "Created At"}, apikit.ExportColumn{Key: "updatedAt", Header: "Updated At"})
	name := strings.ReplaceAll(rq.EntityID, ":", ".")
	if full {
		name += "_full"
	}
	table := apikit.ExportTable{Columns: cols, Rows: make([]map[string]any, len(items))}
	for i, rec := range items {
		table.Rows[i] = recordRow(rec)
	}
	jobName := "Export of " + name + " records (" + strings.ToUpper(format) + ")"
	return writeTrackedExport(w, r, h.progress, recordsExportJobType, jobName, format, name, table)
}

// recordItem is a record as lists show it: its values by bare key, with
// id, createdAt, updatedAt (and deletedAt when deleted).
type recordItem map[string]any

// JSONSchema documents recordItem: the record's own keys, and its values
// by field key beside them.
func (recordItem) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("id", &jsonschema.Schema{Type: "string"})
	props.Set("createdAt", &jsonschema.Schema{Type: "string", Format: "date-time"})
	props.Set("updatedAt", &jsonschema.Schema{Type: "string", Format: "date-time"})
	props.Set("deletedAt", &jsonschema.Schema{Type: "string", Format: "date-time", Description: "Set on a deleted record (withDeleted)"})
	return &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"id", "createdAt", "updatedAt"},
		AdditionalProperties: jsonschema.TrueSchema,
		Description:          "A record: id, createdAt, updatedAt (deletedAt once deleted) beside its values by field key (without cf_)"}
}

// recordRow is a record as lists show it.
func recordRow(rec *entities.Record) recordItem {
	row := make(recordItem, len(rec.Values)+4)
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
	raw, err := apikit.ReadBody(r)
	if err != nil {
		return entities.RecordInput{}, err
	}
	if in, ok := decodeRecordFast(raw); ok {
		return in, nil
	}
	return decodeRecordBody(raw)
}

// decodeRecordBody is decodeRecord's reading of a body with
// encoding/json, and its errors.
func decodeRecordBody(raw []byte) (entities.RecordInput, error) {
	var in entities.RecordInput
	body, err := apikit.DecodeBody[map[string]json.RawMessage](raw)
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

// decodeRecordFast is decodeRecord's reading of a body in one pass
// without reflection (jsondec), giving the same input, for a body whose
// members it uses each have the type it wants (entityId and recordId
// strings, values and customFields objects, or null or absent); ok is
// false for any other body, which decodeRecord then reads with
// encoding/json, whose errors are the answer.
func decodeRecordFast(body []byte) (in entities.RecordInput, ok bool) {
	m, ok := jsondec.Object(body)
	if !ok {
		return in, false
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"entityId", &in.EntityID}, {"recordId", &in.RecordID}} {
		switch x := m[f.name].(type) {
		case string:
			*f.dst = x
		case nil:
		default:
			return in, false
		}
	}
	var values, custom map[string]any
	for _, f := range []struct {
		name string
		dst  *map[string]any
	}{{"values", &values}, {"customFields", &custom}} {
		switch x := m[f.name].(type) {
		case map[string]any:
			*f.dst = x
		case nil:
		default:
			return in, false
		}
	}
	for k, x := range m {
		if strings.HasPrefix(k, "cf_") {
			if custom == nil {
				custom = map[string]any{}
			}
			custom[k] = x
		}
	}
	if len(custom) > 0 && values == nil {
		values = make(map[string]any, len(custom))
	}
	for k, x := range custom {
		values[k] = x
	}
	in.Values = values
	return in, true
}

// recordCreateInput documents the body of POST /entities/records, which
// decodeRecord reads: the values under values, under customFields, or as
// top-level cf_<key> keys (merged in that order); a null counts as absent.
type recordCreateInput struct {
	EntityID string `json:"entityId" jsonschema:"required,maxLength=200,pattern=^[a-z0-9_]+[.:][a-z0-9_]+$"`
	// RecordID, a UUID, becomes the record's id (anything else is
	// ignored and a new id made).
	RecordID     string         `json:"recordId" jsonschema:"nullable"`
	Values       map[string]any `json:"values" jsonschema:"nullable"`
	CustomFields map[string]any `json:"customFields" jsonschema:"nullable"`
}

// recordUpdateInput documents the body of PUT /entities/records, read as
// recordCreateInput's.
type recordUpdateInput struct {
	EntityID string `json:"entityId" jsonschema:"required,maxLength=200,pattern=^[a-z0-9_]+[.:][a-z0-9_]+$"`
	// RecordID names the record; one that is not a UUID creates a record.
	RecordID     string         `json:"recordId" jsonschema:"required,minLength=1"`
	Values       map[string]any `json:"values" jsonschema:"nullable"`
	CustomFields map[string]any `json:"customFields" jsonschema:"nullable"`
}

// recordWriteBody answers the record writes (written as recordWritten
// writes it).
type recordWriteBody struct {
	OK   bool      `json:"ok"`
	Item recordRef `json:"item"`
}

// recordWritten is a record write's answer: its JSON is that of
// recordWriteBody{OK: true, Item: recordRef(w)}, byte for byte,
// written without reflection.
type recordWritten recordRef

// MarshalJSON implements json.Marshaler.
func (w recordWritten) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(w.EntityID)+len(w.RecordID))
	b = append(b, `{"ok":true,"item":{"entityId":`...)
	b = jsonenc.AppendString(b, w.EntityID)
	b = append(b, `,"recordId":`...)
	b = jsonenc.AppendString(b, w.RecordID)
	return append(b, "}}"...), nil
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
	return apikit.EncodeMarshaled(w, http.StatusOK, recordWritten{EntityID: rec.EntityID, RecordID: rec.ID})
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
	return apikit.EncodeMarshaled(w, http.StatusOK, recordWritten{EntityID: rec.EntityID, RecordID: rec.ID})
}

// recordRef names a record: DELETE /entities/records takes it from the
// query or, when the query names neither, from a JSON body; the record
// writes answer with it.
type recordRef struct {
	EntityID string `json:"entityId"`
	RecordID string `json:"recordId"`
}

func (h entityHandlers) deleteRecord(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref := recordRef{q.Get("entityId"), q.Get("recordId")}
	if ref.EntityID == "" && ref.RecordID == "" && r.ContentLength != 0 {
		var err error
		if ref, err = apikit.Decode[recordRef](r); err != nil {
			return err
		}
	}
	if ref.EntityID == "" || ref.RecordID == "" {
		return store.Errorf(store.ErrInvalid, "entityId and recordId are required")
	}
	if err := h.svc.DeleteRecord(r.Context(), ref.EntityID, ref.RecordID); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, entityOKBody{OK: true})
}

func (h entityHandlers) relationOptions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	size := 0
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return store.Invalid("pageSize", apikit.MsgPositive)
		}
		size = n
	}
	items, next, err := h.svc.RelationOptions(r.Context(), entities.OptionsQuery{EntityID: q.Get("entityId"),
		LabelField: q.Get("labelField"), Q: q.Get("q"), Cursor: q.Get("cursor"), PageSize: size})
	if err != nil {
		return err
	}
	var nextCursor *string
	if next != "" {
		nextCursor = &next
	}
	return apikit.Encode(w, http.StatusOK, relationOptionsBody{Items: items, NextCursor: nextCursor})
}

// relationOptionsBody answers GET /entities/relations/options: a page of
// options and the cursor of the next (null on the last page).
type relationOptionsBody struct {
	Items      []entities.Option `json:"items"`
	NextCursor *string           `json:"nextCursor"`
}

// ExportProgressHeader carries the id of an export's progress job.
const ExportProgressHeader = "X-Progress-Job-Id"

// exportProgressParam documents ExportProgressHeader on a list that
// exports.
var exportProgressParam = apikit.Param{Name: ExportProgressHeader,
	Description: "With format: the id of the progress job that tracks the export (GET /progress/jobs/{id}); absent without the progress area"}

// writeTrackedExport is writeExport as a progress job of jobType named
// jobName, when the Kit has the progress area (svc not nil; otherwise it
// is writeExport). The file is rendered and sent in the response, so the
// job lives as long as the request: it is created running once the rows
// are read (a refused request, such as a bad filter, leaves no job), with
// the row count as its total and its id in the X-Progress-Job-Id header;
// it reports the rows rendered every apikit.ExportReportEvery rows (written at
// most once a second, progress.Reporter), is completed once the whole
// file is written to the response, and failed when rendering or sending
// fails (a download cut short shows "The download was interrupted"). It
// is not cancellable: a client stops an export by closing the request. A
// progress write that fails never fails the download.
func writeTrackedExport(w http.ResponseWriter, r *http.Request, svc *progress.Service, jobType, jobName, format, baseName string, t apikit.ExportTable) error {
	if svc == nil {
		return apikit.WriteExport(w, format, baseName, t)
	}
	if n := []rune(jobName); len(n) > progress.MaxNameLength {
		jobName = string(n[:progress.MaxNameLength-1]) + "…"
	}
	total := int64(len(t.Rows))
	_, err := svc.Run(r.Context(), progress.CreateInput{JobType: jobType, Name: jobName, Total: &total}, func(ctx context.Context, rep *progress.Reporter) error {
		w.Header().Set(ExportProgressHeader, rep.ID())
		t.Progress = func(rows int) { _ = rep.Report(ctx, int64(rows), nil) } // Run writes the last count when it finishes
		return apikit.WriteExport(w, format, baseName, t)
	})
	return err
}
