package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"

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
	{errBodyTooLarge, http.StatusRequestEntityTooLarge},
	{store.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{store.ErrInvalid, http.StatusBadRequest},
	{store.ErrNoScope, http.StatusForbidden},
	{store.ErrForbidden, http.StatusForbidden},
	{store.ErrNotFound, http.StatusNotFound},
	{store.ErrConflict, http.StatusConflict},
}

// statusError gives err a status of its own, outside statusTable (a
// payment route's 422 or 502), and optionally the message its body shows
// (for a 5xx, instead of the generic one).
type statusError struct {
	status  int
	message string
	err     error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	for _, row := range statusTable {
		if errors.Is(err, row.kind) {
			return row.status
		}
	}
	return http.StatusInternalServerError
}

// errorBodyFunc formats an error response for an area whose documented
// error body differs from the default. It receives the status and the
// default body's message and details.
type errorBodyFunc func(status int, err error, message string, details map[string]string) any

// writeError writes err with the status from statusTable and the route's
// body format. 5xx responses are logged with the request id and their
// bodies never carry internals.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, rt route, err error) {
	if limited, ok := ratelimit.AsLimited(err); ok {
		ratelimit.WriteLimited(w, r, limited.Result)
		return
	}
	status := statusOf(err)
	if status >= 500 {
		a.logger.ErrorContext(r.Context(), "httpapi: request failed", "method", r.Method, "path", r.URL.Path,
			"requestId", requestID(r), "err", err)
		message := "Internal server error"
		if se := (*statusError)(nil); errors.As(err, &se) && se.message != "" {
			message = se.message
		}
		encode(w, status, map[string]string{"error": message})
		return
	}
	message, details := describe(status, err)
	var body any
	if rt.ErrorBody != nil {
		body = rt.ErrorBody(status, err, message, details)
	}
	if body == nil {
		body = defaultErrorBody(status, err, message, details)
	}
	if fe := (*forbiddenError)(nil); errors.As(err, &fe) && fe.tenantScope {
		if m, ok := body.(map[string]any); ok {
			// In every area's error format alike.
			m["requiredScope"] = requiredScopeTenant
		}
	}
	encode(w, status, body)
}

// describe returns the caller-facing message and per-field details of a
// 4xx error. Only messages made for callers (store.Errorf, validation
// errors) are shown; anything else gets the status's generic text.
func describe(status int, err error) (string, map[string]string) {
	if se := (*statusError)(nil); errors.As(err, &se) && se.message != "" {
		return se.message, nil
	}
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return "Validation failed", ve.Fields
	}
	if msg := store.PublicMessage(err); msg != "" {
		return msg, nil
	}
	if errors.Is(err, errBodyTooLarge) {
		return "Request body too large", nil
	}
	return http.StatusText(status), nil
}

// defaultErrorBody is {error, details?}; 403 for missing features adds
// required and requiredFeatures (and requiredRoles for super-admin routes,
// requiredScope "tenant" for tenant-wide routes refused to a caller limited
// to some organizations).
func defaultErrorBody(status int, err error, message string, details map[string]string) any {
	var fe *forbiddenError
	if errors.As(err, &fe) {
		body := map[string]any{
			"error":            fe.PublicMessage(),
			"required":         nonNil(fe.features),
			"requiredFeatures": nonNil(fe.features),
		}
		if len(fe.roles) > 0 {
			body["requiredRoles"] = fe.roles
		}
		return body
	}
	body := map[string]any{"error": message}
	if len(details) > 0 {
		body["details"] = details
	}
	return body
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
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
			encode(w, http.StatusMethodNotAllowed, map[string]string{"error": http.StatusText(http.StatusMethodNotAllowed)})
			return
		}
		encode(w, http.StatusNotFound, map[string]string{"error": http.StatusText(http.StatusNotFound)})
	})
}
