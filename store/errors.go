package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Error kinds. Every error a service returns wraps at most one of these, so a
// caller (and httpapi, which maps them to HTTP statuses) can test it with
// errors.Is. Areas define their own sentinels that wrap a kind, for example
//
//	var ErrRuleNotFound = fmt.Errorf("rule %w", store.ErrNotFound)
var (
	// ErrNotFound: the item does not exist in the caller's scope. An item of
	// another tenant is reported exactly like a missing one.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the change clashes with existing state (duplicate key, item
	// in use, optimistic-concurrency mismatch).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is malformed or breaks a constraint.
	ErrInvalid = errors.New("invalid input")
	// ErrForbidden: the caller may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrNoScope: the context carries no tenant scope. Services never fall
	// back to "all tenants".
	ErrNoScope = errors.New("no tenant scope in context")
	// ErrTooLarge: the input exceeds a size limit or a quota.
	ErrTooLarge = errors.New("too large")
)

// ErrCommitUnknown marks a failed commit whose outcome the process cannot
// know: the engine was sent the COMMIT, but its answer never came back
// (the connection broke, or the context ended while it waited), so the
// transaction may have committed. DB.Tx does not run it again. A caller
// must not undo, on such an error, what a committed transaction needs
// outside the database (a stored file its rows name); it leaves that to
// a sweep that reads what did commit. Only PostgreSQL reports it: SQLite
// commits in the process and always knows.
var ErrCommitUnknown = errors.New("commit outcome unknown")

// errRetryable marks driver errors after which the whole transaction may be
// run again: SQLite busy/locked, PostgreSQL serialization failure or deadlock.
var errRetryable = errors.New("retryable")

// kindError attaches an error kind to a driver error while keeping the driver
// error reachable for logs and errors.As.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.kind.Error() + ": " + e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// withKind wraps err so that errors.Is(result, kind) holds.
func withKind(kind, err error) error { return &kindError{kind: kind, err: err} }

// ValidationError reports invalid input field by field. It is an ErrInvalid:
// errors.Is(err, ErrInvalid) holds for it. Fields maps a field name, spelled
// as the API spells it, to a sentence a user can act on.
type ValidationError struct {
	// Fields maps each invalid field to what is wrong with it.
	Fields map[string]string
}

// Invalid returns a ValidationError for one field.
func Invalid(field, message string) *ValidationError {
	return &ValidationError{Fields: map[string]string{field: message}}
}

// Error lists the fields in a stable order.
func (e *ValidationError) Error() string {
	keys := slices.Sorted(maps.Keys(e.Fields))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Is makes a ValidationError match ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Add records a problem with field; the first message for a field wins.
func (e *ValidationError) Add(field, message string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[field]; !ok {
		e.Fields[field] = message
	}
}

// Err returns e when it holds at least one field and nil otherwise, so that
// validation code can end with "return v.Err()".
func (e *ValidationError) Err() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

// Errorf returns an error of the given kind with a formatted message meant
// for the API caller: httpapi shows it (PublicMessage) with 4xx statuses.
// Other errors' text (driver messages, wrapped context) is never shown.
func Errorf(kind error, format string, args ...any) error {
	return &messageError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

type messageError struct {
	kind error
	msg  string
}

func (e *messageError) Error() string         { return e.msg }
func (e *messageError) Unwrap() error         { return e.kind }
func (e *messageError) PublicMessage() string { return e.msg }

// PublicMessage returns the caller-facing message of the first error in
// err's chain made by Errorf, or "" when there is none.
func PublicMessage(err error) string {
	var pm interface{ PublicMessage() string }
	if errors.As(err, &pm) {
		return pm.PublicMessage()
	}
	return ""
}
