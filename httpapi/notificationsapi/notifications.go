package notificationsapi

import (
	"net/http"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/notifications"
)

// routes are the caller's inbox: every authenticated caller
// reads and tidies its own (a user's, or an API key's own inbox), so no
// route needs a feature. Notifications are created by the Kit's feeds
// and the Go API (notifications.Service), never by a route.
func routes(svc *notifications.Service, env *apikit.Env) []apikit.Route {
	h := notificationHandlers{svc: svc}
	const base = "/notifications"
	inbox := "The caller's inbox: a user's own, or an API key's own (keys have an inbox of their own). " +
		"Another user's or tenant's notification id answers 404, like an unknown one."
	return []apikit.Route{
		{Method: "GET", Path: base, Handler: h.list,
			Doc: apikit.Doc{Summary: "The caller's notifications, newest first, with the unread count (unread, page, pageSize ≤ 100)",
				Description: inbox + " unreadCount counts every unread notification of the inbox, whatever the unread filter.",
				Query:       append([]apikit.Param{apikit.BoolQuery("unread", "true: only the unread notifications")}, apikit.PageQuery(notifications.DefaultPageSize, notifications.MaxPageSize)...),
				Response:    notificationPage{}}},
		{Method: "POST", Path: base + "/{id}/read", Handler: h.read,
			Doc: apikit.Doc{Summary: "Mark one of the caller's notifications read",
				Description: inbox + " A notification already read keeps the time it was first read.", Response: apikit.OkFlag{}}},
		{Method: "POST", Path: base + "/{id}/unread", Handler: h.unread,
			Doc: apikit.Doc{Summary: "Mark one of the caller's notifications unread", Description: inbox, Response: apikit.OkFlag{}}},
		{Method: "POST", Path: base + "/read-all", Handler: h.readAll,
			Doc: apikit.Doc{Summary: "Mark every unread notification of the caller's inbox read",
				Description: "The caller's inbox only; notifications already read keep the time they were read.",
				Response:    apikit.OkFlag{}}},
		{Method: "DELETE", Path: base + "/{id}", Handler: h.delete,
			Doc: apikit.Doc{Summary: "Delete one of the caller's notifications", Description: inbox, Response: apikit.OkFlag{}}},
	}
}

var _ = apikit.DocEnum(notifications.SeverityInfo, notifications.SeverityWarning, notifications.SeverityError)

type notificationHandlers struct {
	svc *notifications.Service
}

// notificationItem is a notification as the routes show it: exactly the
// documented keys, null where not set, times RFC 3339 in UTC.
type notificationItem struct {
	ID        string                 `json:"id"`
	Type      string                 `json:"type"`
	Title     string                 `json:"title"`
	Body      string                 `json:"body"`
	Severity  notifications.Severity `json:"severity"`
	Link      *string                `json:"link"`
	CreatedAt string                 `json:"createdAt" jsonschema:"format=date-time"`
	ReadAt    *string                `json:"readAt" jsonschema:"format=date-time"`
}

func notificationJSON(n *notifications.Notification) notificationItem {
	out := notificationItem{ID: n.ID, Type: n.Type, Title: n.Title, Body: n.Body, Severity: n.Severity,
		CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339Nano), ReadAt: apikit.TimeOrNull(n.ReadAt)}
	if n.Link != "" {
		out.Link = &n.Link
	}
	return out
}

// notificationPage is GET /notifications: a page of the inbox and its
// unread count.
type notificationPage struct {
	Items       []notificationItem `json:"items"`
	Total       int                `json:"total"`
	Page        int                `json:"page"`
	PageSize    int                `json:"pageSize"`
	TotalPages  int                `json:"totalPages"`
	UnreadCount int                `json:"unreadCount"`
}

func (h notificationHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, notifications.DefaultPageSize, notifications.MaxPageSize)
	if err != nil {
		return err
	}
	unread, err := apikit.ParseBool(q, "unread")
	if err != nil {
		return err
	}
	res, err := h.svc.List(r.Context(), notifications.ListOptions{UnreadOnly: unread != nil && *unread, Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	items := make([]notificationItem, len(res.Items))
	for i, n := range res.Items {
		items[i] = notificationJSON(n)
	}
	pg := apikit.NewPage(items, res.Total, p)
	return apikit.Encode(w, http.StatusOK, notificationPage{Items: pg.Items, Total: pg.Total, Page: pg.Page, PageSize: pg.PageSize,
		TotalPages: pg.TotalPages, UnreadCount: res.UnreadCount})
}

func (h notificationHandlers) read(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.svc.MarkRead(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

func (h notificationHandlers) unread(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.svc.MarkUnread(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

func (h notificationHandlers) readAll(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.svc.MarkAllRead(r.Context()); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

func (h notificationHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}
