package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
)

// statusTable maps error kinds to statuses, first match wins. It is the
// only place error kinds become HTTP statuses.
var statusTable = []struct {
	kind   error
	status int
}{
	{identity.ErrUnauthenticated, http.StatusUnauthorized},
	{apikit.ErrBodyTooLarge, http.StatusRequestEntityTooLarge},
	{store.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{store.ErrInvalid, http.StatusBadRequest},
	{store.ErrNoScope, http.StatusForbidden},
	{store.ErrForbidden, http.StatusForbidden},
	{store.ErrNotFound, http.StatusNotFound},
	{store.ErrConflict, http.StatusConflict},
}

func statusOf(err error) int {
	var se *apikit.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	for _, row := range statusTable {
		if errors.Is(err, row.kind) {
			return row.status
		}
	}
	return http.StatusInternalServerError
}

// writeError writes err with the status from statusTable and the route's
// body format. 5xx responses are logged with the request id and their
// bodies never carry internals.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, rt apikit.Route, err error) {
	if limited, ok := ratelimit.AsLimited(err); ok {
		ratelimit.WriteLimited(w, r, limited.Result)
		return
	}
	status := statusOf(err)
	if status >= 500 {
		a.logger.ErrorContext(r.Context(), "httpapi: request failed", "method", r.Method, "path", r.URL.Path,
			"requestId", requestID(r), "err", err)
		message := "Internal server error"
		if se := (*apikit.StatusError)(nil); errors.As(err, &se) && se.Message != "" {
			message = se.Message
		}
		apikit.Encode(w, status, map[string]string{"error": message})
		return
	}
	message, details := describe(status, err)
	var body any
	if rt.ErrorBody != nil {
		body = rt.ErrorBody(status, err, message, details)
	}
	if body == nil {
		body = apikit.DefaultErrorBody(status, err, message, details)
	}
	if fe := (*apikit.ForbiddenError)(nil); errors.As(err, &fe) && fe.TenantScope {
		if m, ok := body.(map[string]any); ok {
			// In every area's error format alike.
			m["requiredScope"] = requiredScopeTenant
		}
	}
	apikit.Encode(w, status, body)
}

// describe returns the caller-facing message and per-field details of a
// 4xx error. Only messages made for callers (store.Errorf, validation
// errors) are shown; anything else gets the status's generic text.
func describe(status int, err error) (string, map[string]string) {
	if se := (*apikit.StatusError)(nil); errors.As(err, &se) && se.Message != "" {
		return se.Message, nil
	}
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return "Validation failed", ve.Fields
	}
	if msg := store.PublicMessage(err); msg != "" {
		return msg, nil
	}
	if errors.Is(err, apikit.ErrBodyTooLarge) {
		return "Request body too large", nil
	}
	return http.StatusText(status), nil
}

// notFoundPattern is the catch-all route: requests that match no route
// reach it, and it answers 405 when the path exists for another method,
// 404 otherwise, with a JSON body instead of net/http's plain text. Only
// these requests pay for the extra lookups.
const notFoundPattern = "/"

// otherMethods are the methods tried to tell 405 from 404.
var otherMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

func fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range otherMethods {
			if m == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != notFoundPattern {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			apikit.Encode(w, http.StatusMethodNotAllowed, map[string]string{"error": http.StatusText(http.StatusMethodNotAllowed)})
			return
		}
		apikit.Encode(w, http.StatusNotFound, map[string]string{"error": http.StatusText(http.StatusNotFound)})
	})
}
