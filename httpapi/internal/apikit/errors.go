package apikit

import (
	"errors"
	"slices"
)

// StatusError gives err a status of its own, outside statusTable (a
// payment route's 422 or 502), and optionally the message its body shows
// (for a 5xx, instead of the generic one).
type StatusError struct {
	Status  int
	Message string
	Err     error
}

func (e *StatusError) Error() string { return e.Err.Error() }

func (e *StatusError) Unwrap() error { return e.Err }

// ErrorBodyFunc formats an error response for an area whose documented
// error body differs from the default. It receives the status and the
// default body's message and details.
type ErrorBodyFunc func(status int, err error, message string, details map[string]string) any

// DefaultErrorBody is {error, details?}; 403 for missing features adds
// required and requiredFeatures (and requiredRoles for super-admin routes,
// requiredScope "tenant" for tenant-wide routes refused to a caller limited
// to some organizations).
func DefaultErrorBody(status int, err error, message string, details map[string]string) any {
	var fe *ForbiddenError
	if errors.As(err, &fe) {
		body := map[string]any{
			"error":            fe.PublicMessage(),
			"required":         NonNil(fe.Features),
			"requiredFeatures": NonNil(fe.Features),
		}
		if len(fe.Roles) > 0 {
			body["requiredRoles"] = fe.Roles
		}
		return body
	}
	body := map[string]any{"error": message}
	if len(details) > 0 {
		body["details"] = details
	}
	return body
}

func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
