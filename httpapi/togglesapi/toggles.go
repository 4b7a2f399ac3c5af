package togglesapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
)

// routes are the feature toggle endpoints: the admin routes need a
// super admin, the check routes any authenticated caller.
func routes(svc *toggles.Service, env *apikit.Env) []apikit.Route {
	h := toggleHandlers{svc: svc, names: env.TenantName}
	const base = "/feature_toggles"
	check := func(t toggles.Type) apikit.Route {
		var body any = valueCheck{}
		if t == toggles.Boolean {
			body = BooleanCheck{}
		}
		return apikit.Route{Method: "GET", Path: base + "/check/" + string(t), Handler: h.check(t), ErrorBody: codedErrorBody,
			Doc: apikit.Doc{Summary: "Resolve a " + string(t) + " toggle for the caller's tenant (?identifier=)",
				Query: []apikit.Param{{Name: "identifier", Required: true, Description: "The toggle's identifier"}}, Response: body,
				Errors: []int{http.StatusNotFound}}}
	}
	byID := []apikit.Param{apikit.TextQuery("id", "The toggle's id (instead of the body)")}
	return []apikit.Route{
		{Method: "GET", Path: base + "/global", Handler: h.list,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "List feature toggles",
				Query: append(append([]apikit.Param{apikit.TextQuery("search", "Text in the identifier, name, description or category"),
					apikit.TextQuery("identifier", "Exact identifier"), apikit.TextQuery("name", "Exact name"), apikit.TextQuery("category", "Exact category"),
					apikit.EnumQuery("type", "Toggle type", "boolean", "string", "number", "json")}, apikit.PageQuery(50, 200)...), apikit.SortQuery(toggleSortFields, "createdAt")...),
				Response: apikit.SearchPage[toggleItem]{}}},
		{Method: "GET", Path: base + "/global/{id}", Handler: h.get,
			Access: apikit.Access{SuperAdmin: true},
			Doc:    apikit.Doc{Summary: "Get a feature toggle", Response: toggleItem{}}},
		{Method: "POST", Path: base + "/global", Handler: h.create,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Create a feature toggle", Request: toggles.CreateInput{}, Status: http.StatusCreated,
				Response: apikit.IdBody{}, Errors: []int{http.StatusConflict}}},
		{Method: "PUT", Path: base + "/global", Handler: h.update,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Update a feature toggle (id in the body)", Request: toggles.UpdateInput{}, Response: apikit.IdBody{},
				Errors: []int{http.StatusNotFound, http.StatusConflict}}},
		{Method: "DELETE", Path: base + "/global", Handler: h.delete,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Delete a feature toggle (body {id} or ?id=)", Query: byID, Request: apikit.IdBody{},
				BodyOptional: true, Response: apikit.IdBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "GET", Path: base + "/global/{id}/override", Handler: h.getOverride,
			Access: apikit.Access{SuperAdmin: true},
			Doc:    apikit.Doc{Summary: "The caller's tenant's value of a toggle", Response: overrideBody{}}},
		{Method: "GET", Path: base + "/overrides", Handler: h.listOverrides,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Every toggle as the caller's tenant sees it",
				Query: append(append([]apikit.Param{apikit.TextQuery("identifier", "Exact identifier"), apikit.TextQuery("name", "Exact name"),
					apikit.TextQuery("category", "Exact category")}, apikit.PageQuery(25, 100)...), apikit.SortQuery(overrideSortFields, "identifier")...),
				Response: overridePage{}}},
		{Method: "PUT", Path: base + "/overrides", Handler: h.setOverride,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Set or remove the caller's tenant's override", Request: setOverrideInput{},
				Response: setOverrideBody{}, Errors: []int{http.StatusNotFound}}},
		check(toggles.Boolean), check(toggles.String), check(toggles.Number), check(toggles.JSON),
	}
}

var (
	_ = apikit.DocEnum(toggles.Boolean, toggles.String, toggles.Number, toggles.JSON)
	_ = apikit.DocEnum(toggles.FromOverride, toggles.FromDefault)
)

type toggleHandlers struct {
	svc   *toggles.Service
	names func(ctx context.Context, tenantID string) string
}

// toggleTime is the database-style timestamp text of toggle items:
// "2025-12-29 21:59:25.246+00".
const toggleTime = "2006-01-02 15:04:05.000+00"

// toggleItem is a toggle as the API shows it.
type toggleItem struct {
	ID           string          `json:"id"`
	Identifier   string          `json:"identifier"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Category     string          `json:"category"`
	Type         toggles.Type    `json:"type"`
	DefaultValue json.RawMessage `json:"defaultValue"`
	CreatedAt    string          `json:"created_at"`
	UpdatedAt    string          `json:"updated_at"`
}

func toToggleItem(t *toggles.Toggle) toggleItem {
	return toggleItem{ID: t.ID, Identifier: t.Identifier, Name: t.Name, Description: t.Description, Category: t.Category,
		Type: t.Type, DefaultValue: t.DefaultValue,
		CreatedAt: t.CreatedAt.UTC().Format(toggleTime), UpdatedAt: t.UpdatedAt.UTC().Format(toggleTime)}
}

var toggleSortFields = []string{"id", "category", "identifier", "name", "createdAt", "updatedAt", "type"}

func (h toggleHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := apikit.CheckText(q, "search", "identifier", "name", "category"); err != nil {
		return err
	}
	p, err := apikit.ParsePage(q, 50, 200)
	if err != nil {
		return err
	}
	sort, err := apikit.ParseSort(q, toggleSortFields, "createdAt")
	if err != nil {
		return err
	}
	typ := toggles.Type(q.Get("type"))
	if typ != "" && !typ.Valid() {
		return store.Invalid("type", "must be one of boolean, string, number, json")
	}
	search := q.Get("search")
	items, total, err := h.svc.List(r.Context(), toggles.ListFilter{
		Search: search, Identifier: q.Get("identifier"), Name: q.Get("name"), Category: q.Get("category"), Type: typ,
		SortField: sort.Field, SortDesc: sort.Desc, Limit: p.PageSize, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]toggleItem, len(items))
	for i, t := range items {
		out[i] = toToggleItem(t)
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewSearchPage(r.Context(), out, total, search != "", p))
}

// toggleID reads a path id, refusing what cannot be one.
func toggleID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !store.IsID(id) {
		return "", store.Invalid("id", "is not a valid feature toggle id")
	}
	return id, nil
}

func (h toggleHandlers) get(w http.ResponseWriter, r *http.Request) error {
	id, err := toggleID(r)
	if err != nil {
		return err
	}
	t, err := h.svc.Get(r.Context(), id)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, toToggleItem(t))
}

func (h toggleHandlers) create(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[toggles.CreateInput](r)
	if err != nil {
		return err
	}
	t, err := h.svc.Create(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, apikit.IdBody{ID: t.ID})
}

func (h toggleHandlers) update(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[toggles.UpdateInput](r)
	if err != nil {
		return err
	}
	if in.ID == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(in.ID) {
		return store.Invalid("id", "is not a valid feature toggle id")
	}
	t, err := h.svc.Update(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.IdBody{ID: t.ID})
}

func (h toggleHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" && r.ContentLength != 0 {
		body, err := apikit.Decode[apikit.IdBody](r)
		if err != nil {
			return err
		}
		id = body.ID
	}
	if id == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(id) {
		return store.Invalid("id", "is not a valid feature toggle id")
	}
	if err := h.svc.Delete(r.Context(), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.IdBody{ID: id})
}

func (h toggleHandlers) getOverride(w http.ResponseWriter, r *http.Request) error {
	id, err := toggleID(r)
	if err != nil {
		return err
	}
	v, err := h.svc.GetOverride(r.Context(), id)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, overrideBody{OverrideView: v, TenantName: h.names(r.Context(), v.TenantID)})
}

// overrideBody is a tenant's value of one toggle, with the tenant's name.
type overrideBody struct {
	*toggles.OverrideView
	TenantName string `json:"tenantName"`
}

// overrideItem is a row of the overrides list.
type overrideItem struct {
	*toggles.OverrideItem
	TenantName string `json:"tenantName"`
}

var overrideSortFields = []string{"identifier", "name", "category"}

func (h toggleHandlers) listOverrides(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := apikit.CheckText(q, "identifier", "name", "category"); err != nil {
		return err
	}
	p, err := apikit.ParsePage(q, 25, 100)
	if err != nil {
		return err
	}
	sort, err := apikit.ParseSort(q, overrideSortFields, "identifier")
	if err != nil {
		return err
	}
	items, total, err := h.svc.ListOverrides(r.Context(), toggles.OverrideFilter{
		Identifier: q.Get("identifier"), Name: q.Get("name"), Category: q.Get("category"),
		SortField: sort.Field, SortDesc: sort.Desc, Limit: p.PageSize, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]overrideItem, len(items))
	name := ""
	if len(items) > 0 {
		name = h.names(r.Context(), items[0].TenantID)
	}
	for i, it := range items {
		out[i] = overrideItem{OverrideItem: it, TenantName: name}
	}
	id := identity.IdentityFrom(r.Context())
	return apikit.Encode(w, http.StatusOK, overridePage{apikit.NewPage(out, total, p), id != nil && id.IsSuperAdmin})
}

// overridePage is the overrides list: a page and whether the caller is a
// super admin.
type overridePage struct {
	apikit.PageResponse[overrideItem]
	IsSuperAdmin bool `json:"isSuperAdmin"`
}

// setOverrideInput is the body of PUT /feature_toggles/overrides.
type setOverrideInput struct {
	ToggleID      string          `json:"toggleId" jsonschema:"required"`
	IsOverride    *bool           `json:"isOverride" jsonschema:"required"`
	OverrideValue json.RawMessage `json:"overrideValue"`
}

// setOverrideBody answers PUT /feature_toggles/overrides: the override's
// id, null once removed.
type setOverrideBody struct {
	OK               bool    `json:"ok"`
	OverrideToggleID *string `json:"overrideToggleId"`
}

func (h toggleHandlers) setOverride(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[setOverrideInput](r)
	if err != nil {
		return err
	}
	v := &store.ValidationError{}
	if in.ToggleID == "" {
		v.Add("toggleId", "is required")
	} else if !store.IsID(in.ToggleID) {
		v.Add("toggleId", "is not a valid feature toggle id")
	}
	if in.IsOverride == nil {
		v.Add("isOverride", "is required (true or false)")
	}
	if err := v.Err(); err != nil {
		return err
	}
	o, err := h.svc.SetOverride(r.Context(), in.ToggleID, *in.IsOverride, in.OverrideValue)
	if err != nil {
		return err
	}
	var overrideID *string
	if o != nil {
		overrideID = &o.ID
	}
	return apikit.Encode(w, http.StatusOK, setOverrideBody{OK: true, OverrideToggleID: overrideID})
}

// check answers GET /feature_toggles/check/<type>.
func (h toggleHandlers) check(want toggles.Type) apikit.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		identifier := apikit.QueryParam(r.URL, "identifier")
		if identifier == "" {
			return store.Errorf(store.ErrInvalid, "Missing required parameter: identifier")
		}
		res, err := h.svc.Check(r.Context(), identifier, want)
		if err != nil {
			return checkError(err)
		}
		if want == toggles.Boolean {
			return encodeBooleanCheck(w, &BooleanCheck{
				Enabled: string(res.Value) == "true", Source: res.Source, ToggleID: res.ToggleID,
				Identifier: res.Identifier, TenantID: res.TenantID,
			})
		}
		return apikit.Encode(w, http.StatusOK, valueCheck{
			ValueType: want, Value: res.Value, Source: res.Source, ToggleID: res.ToggleID,
			Identifier: res.Identifier, TenantID: res.TenantID,
		})
	}
}

// checkError is the answer to a check that failed with err. (Apart from
// the check: the targets errors.As fills escape to the heap, two
// allocations a check would pay even when it succeeds.)
func checkError(err error) error {
	var missing *toggles.MissingToggleError
	var mismatch *toggles.TypeMismatchError
	switch {
	case errors.As(err, &missing):
		return &codedError{kind: store.ErrNotFound, code: "MISSING_TOGGLE", message: missing.Error()}
	case errors.As(err, &mismatch):
		return &codedError{kind: store.ErrInvalid, code: "TYPE_MISMATCH", message: mismatch.Error()}
	case errors.Is(err, store.ErrNoScope):
		return store.Errorf(store.ErrInvalid, "Tenant context required. Please select a tenant.")
	}
	return err
}

// BooleanCheck is the body of /check/boolean.
type BooleanCheck struct {
	// Enabled is the toggle's value for the tenant.
	Enabled bool `json:"enabled"`
	// Source says where the value comes from: the tenant's override or
	// the toggle's default.
	Source   toggles.Source `json:"source"`
	ToggleID string         `json:"toggleId"`
	// Identifier is the toggle's identifier, as the request named it.
	Identifier string `json:"identifier"`
	TenantID   string `json:"tenantId"`
}

// encodeBooleanCheck answers 200 with c, written by appendBooleanCheck
// into a pooled buffer: the check is the API's most frequent request, and
// this spares it encoding/json's reflection and allocations.
func encodeBooleanCheck(w http.ResponseWriter, c *BooleanCheck) error {
	bp := checkBuffers.Get().(*[]byte)
	b := append(appendBooleanCheck((*bp)[:0], c), '\n')
	err := apikit.EncodeJSON(w, http.StatusOK, b) // (a Write keeps no reference to b)
	if cap(b) <= 1024 {
		*bp = b[:0]
		checkBuffers.Put(bp)
	}
	return err
}

var checkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendBooleanCheck appends c's JSON, the bytes encoding/json writes for
// it (without the Encoder's newline).
func appendBooleanCheck(b []byte, c *BooleanCheck) []byte {
	b = append(b, `{"enabled":`...)
	b = strconv.AppendBool(b, c.Enabled)
	b = append(b, `,"source":`...)
	b = apikit.AppendJSONString(b, string(c.Source))
	b = append(b, `,"toggleId":`...)
	b = apikit.AppendJSONString(b, c.ToggleID)
	b = append(b, `,"identifier":`...)
	b = apikit.AppendJSONString(b, c.Identifier)
	b = append(b, `,"tenantId":`...)
	b = apikit.AppendJSONString(b, c.TenantID)
	return append(b, '}')
}

// valueCheck is the body of the string, number and json checks.
type valueCheck struct {
	ValueType  toggles.Type    `json:"valueType"`
	Value      json.RawMessage `json:"value"`
	Source     toggles.Source  `json:"source"`
	ToggleID   string          `json:"toggleId"`
	Identifier string          `json:"identifier"`
	TenantID   string          `json:"tenantId"`
}

// codedError is an error whose body carries a machine-readable code.
type codedError struct {
	kind          error
	code, message string
}

func (e *codedError) Error() string         { return e.message }
func (e *codedError) Unwrap() error         { return e.kind }
func (e *codedError) PublicMessage() string { return e.message }

// codedErrorBody is {error, code} for a codedError, the default body
// otherwise.
func codedErrorBody(status int, err error, message string, details map[string]string) any {
	var ce *codedError
	if errors.As(err, &ce) {
		return map[string]string{"error": message, "code": ce.code}
	}
	return nil
}
