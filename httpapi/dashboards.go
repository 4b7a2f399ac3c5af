package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/identity"
)

// Features of the dashboard routes (spec).
const (
	featureWidgetsView   = "dashboard.widgets.view"
	featureWidgetsManage = "dashboard.widgets.manage"
)

// dashboardRoutes are the dashboard endpoints: the caller's layout, the
// widget registry and its data, and who sees which widget.
func (a *api) dashboardRoutes() []route {
	h := dashboardHandlers{svc: a.kit.Dashboards}
	const base = "/dashboards"
	view, manage := []string{featureWidgetsView}, []string{featureWidgetsManage}
	return []route{
		{Method: "GET", Path: base + "/layout", Summary: "The caller's widget layout (seeded with the default widgets on first read), with its ETag",
			Features: view, Handler: h.layout},
		{Method: "PUT", Path: base + "/layout", Summary: "Replace the caller's layout ({widgets}; If-Match with the ETag guards against lost updates)",
			Features: manage, Handler: h.putLayout},
		{Method: "GET", Path: base + "/layout/{itemId}", Summary: "One widget of the caller's layout", Features: view, Handler: h.item},
		{Method: "DELETE", Path: base + "/layout/{itemId}", Summary: "Remove one widget from the caller's layout (If-Match as for PUT)",
			Features: manage, Handler: h.deleteItem},
		{Method: "GET", Path: base + "/widgets", Summary: "The widget definitions the caller may place", Features: view, Handler: h.widgets},
		{Method: "GET", Path: base + "/widgets/{definitionId}/data", Summary: "A widget's data in the caller's scope", Features: view, Handler: h.data},
		{Method: "GET", Path: base + "/roles/widgets", Summary: "The widgets a role makes available (?roleId)", Features: view, Handler: h.roleWidgets},
		{Method: "PUT", Path: base + "/roles/widgets", Summary: "Set the widgets a role makes available ({roleId, widgetIds}; empty removes the restriction)",
			Features: manage, Handler: h.setRoleWidgets},
		{Method: "GET", Path: base + "/users/widgets", Summary: "The widgets a user sees and whether they override its roles' (?userId)",
			Features: view, Handler: h.userWidgets},
		{Method: "PUT", Path: base + "/users/widgets", Summary: "Set a user's widgets ({userId, mode: inherit|override, widgetIds})",
			Features: manage, Handler: h.setUserWidgets},
	}
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
	v := dashboards.Viewer{UserID: id.UserID, Owner: id.UserID, Access: tenantkit.AccessOf(id)}
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
		return &statusError{status: http.StatusPreconditionFailed, message: "The layout changed since it was read (If-Match)", err: err}
	case errors.Is(err, dashboards.ErrNoDirectory):
		return &statusError{status: http.StatusNotImplemented, message: "Role and user lookups are not configured", err: err}
	}
	return err
}

func (h dashboardHandlers) layout(w http.ResponseWriter, r *http.Request) error {
	widgets, etag, err := h.svc.Layout(r.Context(), viewer(r))
	if err != nil {
		return dashboardError(err)
	}
	w.Header().Set("ETag", etag)
	return encode(w, http.StatusOK, map[string]any{"widgets": widgets})
}

func (h dashboardHandlers) putLayout(w http.ResponseWriter, r *http.Request) error {
	body, err := decode[struct {
		Widgets json.RawMessage `json:"widgets"`
	}](r)
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
	return encode(w, http.StatusOK, okBody)
}

var okBody = map[string]bool{"ok": true}

func (h dashboardHandlers) item(w http.ResponseWriter, r *http.Request) error {
	item, err := h.svc.LayoutItem(r.Context(), viewer(r), r.PathValue("itemId"))
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, item)
}

func (h dashboardHandlers) deleteItem(w http.ResponseWriter, r *http.Request) error {
	etag, err := h.svc.DeleteLayoutItem(r.Context(), viewer(r), r.PathValue("itemId"), r.Header.Get("If-Match"))
	if err != nil {
		return dashboardError(err)
	}
	w.Header().Set("ETag", etag)
	return encode(w, http.StatusOK, okBody)
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
	return encode(w, http.StatusOK, map[string]any{"items": items})
}

func (h dashboardHandlers) data(w http.ResponseWriter, r *http.Request) error {
	data, err := h.svc.WidgetData(r.Context(), viewer(r), r.PathValue("definitionId"))
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, data)
}

func (h dashboardHandlers) roleWidgets(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.RoleWidgets(r.Context(), r.URL.Query().Get("roleId"))
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, map[string]any{"items": items})
}

func (h dashboardHandlers) setRoleWidgets(w http.ResponseWriter, r *http.Request) error {
	body, err := decode[struct {
		RoleID    string   `json:"roleId"`
		WidgetIDs []string `json:"widgetIds"`
	}](r)
	if err != nil {
		return err
	}
	ids, err := h.svc.SetRoleWidgets(r.Context(), body.RoleID, body.WidgetIDs)
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "widgetIds": ids})
}

func (h dashboardHandlers) userWidgets(w http.ResponseWriter, r *http.Request) error {
	mode, items, err := h.svc.UserWidgets(r.Context(), r.URL.Query().Get("userId"))
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, map[string]any{"mode": mode, "items": items})
}

func (h dashboardHandlers) setUserWidgets(w http.ResponseWriter, r *http.Request) error {
	body, err := decode[struct {
		UserID    string   `json:"userId"`
		Mode      string   `json:"mode"`
		WidgetIDs []string `json:"widgetIds"`
	}](r)
	if err != nil {
		return err
	}
	ids, err := h.svc.SetUserWidgets(r.Context(), body.UserID, body.Mode, body.WidgetIDs)
	if err != nil {
		return dashboardError(err)
	}
	return encode(w, http.StatusOK, map[string]any{"ok": true, "mode": body.Mode, "widgetIds": ids})
}
