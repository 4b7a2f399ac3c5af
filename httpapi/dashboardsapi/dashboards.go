package dashboardsapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
)

// Features of the dashboard routes: the permission a route needs.
const (
	FeatureWidgetsView   = "dashboard.widgets.view"
	FeatureWidgetsManage = "dashboard.widgets.manage"
)

// routes are the dashboard endpoints: the caller's layout, the
// widget registry and its data, and who sees which widget.
func routes(svc *dashboards.Service, env *apikit.Env) []apikit.Route {
	h := dashboardHandlers{svc: svc}
	const base = "/dashboards"
	view, manage := []string{FeatureWidgetsView}, []string{FeatureWidgetsManage}
	// A stale If-Match is 412; a write that keeps losing the race to
	// other writers of the layout 409.
	writeLayout := []int{http.StatusConflict, http.StatusPreconditionFailed}
	// The visibility routes look roles and users up in the directory:
	// 404 for an unknown one, 501 when the Kit has none.
	lookup := []int{http.StatusNotFound, http.StatusNotImplemented}
	etag := []apikit.Param{{Name: "ETag", Description: "The layout's version, quoted (\"3\"): send it back in If-Match"}}
	ifMatch := []apikit.Param{{Name: "If-Match", Description: "The ETag last read (or *, or a list): 412 when the layout changed since; without it the last write wins"}}
	return []apikit.Route{
		{Method: "GET", Path: base + "/layout", Handler: h.layout,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The caller's widget layout (seeded with the default widgets on first read), with its ETag",
				Response: layoutBody{}, ResponseHeaders: etag}},
		{Method: "PUT", Path: base + "/layout", Handler: h.putLayout,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Replace the caller's layout ({widgets}; If-Match with the ETag guards against lost updates)",
				Headers: ifMatch, Request: layoutInput{}, Response: apikit.OkFlag{}, ResponseHeaders: etag, Errors: writeLayout}},
		{Method: "GET", Path: base + "/layout/{itemId}", Handler: h.item,
			Access: apikit.Access{Features: view},
			Doc:    apikit.Doc{Summary: "One widget of the caller's layout", Response: dashboards.Widget{}}},
		{Method: "DELETE", Path: base + "/layout/{itemId}", Handler: h.deleteItem,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Remove one widget from the caller's layout (If-Match as for PUT)", Headers: ifMatch,
				Response: apikit.OkFlag{}, ResponseHeaders: etag, Errors: writeLayout}},
		{Method: "GET", Path: base + "/widgets", Handler: h.widgets,
			Access: apikit.Access{Features: view},
			Doc:    apikit.Doc{Summary: "The widget definitions the caller may place", Response: widgetList{}}},
		{Method: "GET", Path: base + "/widgets/{definitionId}/data", Handler: h.data,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "A widget's data in the caller's scope (any JSON value, as the widget's provider returns it)",
				Response: json.RawMessage{}}},
		{Method: "GET", Path: base + "/roles/widgets", Handler: h.roleWidgets,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The widgets a role makes available (?roleId)",
				Query: []apikit.Param{{Name: "roleId", Required: true, Description: "The role"}}, Response: widgetItems{}, Errors: lookup}},
		{Method: "PUT", Path: base + "/roles/widgets", Handler: h.setRoleWidgets,
			Access: apikit.Access{Features: manage, TenantWide: true},
			Doc: apikit.Doc{Summary: "Set the widgets a role makes available ({roleId, widgetIds}; an empty list makes none available)",
				Request: roleWidgetsInput{}, Response: roleWidgetsBody{}, Errors: lookup}},
		{Method: "DELETE", Path: base + "/roles/widgets", Handler: h.clearRoleWidgets,
			Access: apikit.Access{Features: manage, TenantWide: true},
			Doc: apikit.Doc{Summary: "Remove a role's widget restriction (?roleId): it then restricts nothing",
				Query: []apikit.Param{{Name: "roleId", Required: true, Description: "The role"}}, Response: apikit.OkFlag{}, Errors: lookup}},
		{Method: "GET", Path: base + "/users/widgets", Handler: h.userWidgets,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The widgets a user sees and whether they override its roles' (?userId)",
				Query: []apikit.Param{{Name: "userId", Required: true, Description: "The user"}}, Response: userWidgetsBody{},
				Errors: lookup}},
		{Method: "PUT", Path: base + "/users/widgets", Handler: h.setUserWidgets,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Set a user's widgets ({userId, mode: inherit|override, widgetIds})",
				Request: userWidgetsInput{}, Response: setUserWidgetsBody{}, Errors: lookup}},
	}
}

// widgetMode is a user's visibility mode: dashboards.ModeInherit or
// dashboards.ModeOverride.
type widgetMode string

var _ = apikit.DocEnum[widgetMode](dashboards.ModeInherit, dashboards.ModeOverride)

// layoutBody is GET /dashboards/layout.
type layoutBody struct {
	Widgets []dashboards.Widget `json:"widgets"`
}

// layoutInput is the body of PUT /dashboards/layout. Widgets is kept raw:
// dashboards.DecodeWidgets reads it, naming each problem
// ("widgets[2].grid.w"); it is documented as the widgets it holds
// (JSONSchemaProperty).
type layoutInput struct {
	Widgets json.RawMessage `json:"widgets" jsonschema:"required,maxItems=100"`
}

// JSONSchemaProperty documents widgets as an array of widgets.
func (layoutInput) JSONSchemaProperty(prop string) any {
	if prop == "widgets" {
		return []dashboards.Widget(nil)
	}
	return nil
}

// widgetList is GET /dashboards/widgets.
type widgetList struct {
	Items []widgetDefinition `json:"items"`
}

// widgetItems is GET /dashboards/roles/widgets.
type widgetItems struct {
	Items []dashboards.WidgetItem `json:"items"`
}

// roleWidgetsInput is the body of PUT /dashboards/roles/widgets.
type roleWidgetsInput struct {
	RoleID string `json:"roleId" jsonschema:"required,minLength=1"`
	// WidgetIDs are registered widget ids; an empty list makes no widget
	// available (DELETE removes the restriction).
	WidgetIDs []string `json:"widgetIds" jsonschema:"required,maxItems=1000"`
}

// roleWidgetsBody answers PUT /dashboards/roles/widgets with the ids
// stored.
type roleWidgetsBody struct {
	OK        bool     `json:"ok"`
	WidgetIDs []string `json:"widgetIds"`
}

// userWidgetsBody is GET /dashboards/users/widgets.
type userWidgetsBody struct {
	Mode  widgetMode              `json:"mode"`
	Items []dashboards.WidgetItem `json:"items"`
}

// userWidgetsInput is the body of PUT /dashboards/users/widgets.
type userWidgetsInput struct {
	UserID string     `json:"userId" jsonschema:"required,minLength=1"`
	Mode   widgetMode `json:"mode" jsonschema:"required"`
	// WidgetIDs are the registered widget ids an override shows; inherit
	// ignores them.
	WidgetIDs []string `json:"widgetIds"`
}

// setUserWidgetsBody answers PUT /dashboards/users/widgets with the mode
// and the ids stored.
type setUserWidgetsBody struct {
	OK        bool       `json:"ok"`
	Mode      widgetMode `json:"mode"`
	WidgetIDs []string   `json:"widgetIds"`
}

type dashboardHandlers struct {
	svc *dashboards.Service
}

// viewer is the caller as the dashboards see it: a user, or an API key.
func viewer(r *http.Request) dashboards.Viewer {
	id := identity.IdentityFrom(r.Context())
	if id == nil {
		return dashboards.Viewer{}
	}
	v := dashboards.Viewer{UserID: id.UserID, Owner: id.UserID, Access: AccessOf(id)}
	if v.Owner == "" && id.APIKeyID != "" {
		v.Owner = "api_key:" + id.APIKeyID
	}
	return v
}

// dashboardError gives the dashboards' errors that are not a store kind
// their status: a stale If-Match is 412, a Kit without a directory 501.
func dashboardError(err error) error {
	switch {
	case errors.Is(err, dashboards.ErrPreconditionFailed):
		return &apikit.StatusError{Status: http.StatusPreconditionFailed, Message: "The layout changed since it was read (If-Match)", Err: err}
	case errors.Is(err, dashboards.ErrNoDirectory):
		return &apikit.StatusError{Status: http.StatusNotImplemented, Message: "Role and user lookups are not configured", Err: err}
	}
	return err
}

func (h dashboardHandlers) layout(w http.ResponseWriter, r *http.Request) error {
	widgets, etag, err := h.svc.Layout(r.Context(), viewer(r))
	if err != nil {
		return dashboardError(err)
	}
	w.Header().Set("ETag", etag)
	return apikit.Encode(w, http.StatusOK, layoutBody{Widgets: widgets})
}

func (h dashboardHandlers) putLayout(w http.ResponseWriter, r *http.Request) error {
	body, err := apikit.Decode[layoutInput](r)
	if err != nil {
		return err
	}
	widgets, err := dashboards.DecodeWidgets(body.Widgets)
	if err != nil {
		return err
	}
	etag, err := h.svc.PutLayout(r.Context(), viewer(r), widgets, r.Header.Get("If-Match"))
	if err != nil {
		return dashboardError(err)
	}
	w.Header().Set("ETag", etag)
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

func (h dashboardHandlers) item(w http.ResponseWriter, r *http.Request) error {
	item, err := h.svc.LayoutItem(r.Context(), viewer(r), r.PathValue("itemId"))
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, item)
}

func (h dashboardHandlers) deleteItem(w http.ResponseWriter, r *http.Request) error {
	etag, err := h.svc.DeleteLayoutItem(r.Context(), viewer(r), r.PathValue("itemId"), r.Header.Get("If-Match"))
	if err != nil {
		return dashboardError(err)
	}
	w.Header().Set("ETag", etag)
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

// widgetDefinition is a definition as GET /dashboards/widgets lists it.
type widgetDefinition struct {
	ID             string          `json:"id"`
	Title          string          `json:"title"`
	Description    string          `json:"description"`
	Features       []string        `json:"features"`
	DefaultEnabled bool            `json:"defaultEnabled"`
	DefaultGrid    dashboards.Grid `json:"defaultGrid"`
	DefaultConfig  json.RawMessage `json:"defaultConfig"`
	// HasData says whether /dashboards/widgets/{id}/data answers.
	HasData bool `json:"hasData"`
}

func (h dashboardHandlers) widgets(w http.ResponseWriter, r *http.Request) error {
	defs, err := h.svc.Widgets(r.Context(), viewer(r))
	if err != nil {
		return err
	}
	items := make([]widgetDefinition, len(defs))
	for i, d := range defs {
		items[i] = widgetDefinition{ID: d.ID, Title: d.Title, Description: d.Description, Features: d.Features,
			DefaultEnabled: d.DefaultEnabled, DefaultGrid: d.DefaultGrid, DefaultConfig: d.DefaultConfig, HasData: d.Data != nil}
	}
	return apikit.Encode(w, http.StatusOK, widgetList{Items: items})
}

func (h dashboardHandlers) data(w http.ResponseWriter, r *http.Request) error {
	data, err := h.svc.WidgetData(r.Context(), viewer(r), r.PathValue("definitionId"))
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, data)
}

func (h dashboardHandlers) roleWidgets(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.RoleWidgets(r.Context(), r.URL.Query().Get("roleId"))
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, widgetItems{Items: items})
}

func (h dashboardHandlers) setRoleWidgets(w http.ResponseWriter, r *http.Request) error {
	body, err := apikit.Decode[roleWidgetsInput](r)
	if err != nil {
		return err
	}
	ids, err := h.svc.SetRoleWidgets(r.Context(), body.RoleID, body.WidgetIDs)
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, roleWidgetsBody{OK: true, WidgetIDs: ids})
}

func (h dashboardHandlers) clearRoleWidgets(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.ClearRoleWidgets(r.Context(), r.URL.Query().Get("roleId")); err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h dashboardHandlers) userWidgets(w http.ResponseWriter, r *http.Request) error {
	mode, items, err := h.svc.UserWidgets(r.Context(), r.URL.Query().Get("userId"))
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, userWidgetsBody{Mode: widgetMode(mode), Items: items})
}

func (h dashboardHandlers) setUserWidgets(w http.ResponseWriter, r *http.Request) error {
	body, err := apikit.Decode[userWidgetsInput](r)
	if err != nil {
		return err
	}
	ids, err := h.svc.SetUserWidgets(r.Context(), body.UserID, string(body.Mode), body.WidgetIDs)
	if err != nil {
		return dashboardError(err)
	}
	return apikit.Encode(w, http.StatusOK, setUserWidgetsBody{OK: true, Mode: body.Mode, WidgetIDs: ids})
}
