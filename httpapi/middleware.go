package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// handle builds a route's chain: no-store (for routes marked NoStore) →
// body limit → authenticate → authorize → scope → route rate limit →
// handler. Security headers, recovery and request ids wrap the whole mux.
func (a *api) handle(rt apikit.Route) http.Handler {
	limit := a.opts.MaxBodyBytes
	if rt.Limits.MaxBodyBytes > 0 {
		limit = rt.Limits.MaxBodyBytes
	}
	pattern := rt.Method + " " + a.base + rt.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteRoute(r, pattern)
		if rt.NoStore {
			// Before anything can answer, so that errors carry it too.
			w.Header().Set("Cache-Control", "no-store")
		}
		if r.Body != nil && r.Body != http.NoBody { // (NoBody has nothing to bound)
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if !rt.Access.Public {
			var err error
			if r, err = a.admit(r, rt); err != nil {
				a.writeError(w, r, rt, err)
				return
			}
		}
		if err := a.checkRouteLimit(r, rt.Limits.RateLimit); err != nil {
			a.writeError(w, r, rt, err)
			return
		}
		if err := rt.Handler(w, r); err != nil {
			a.writeError(w, r, rt, err)
		}
	})
}

// admit authenticates and authorizes the caller of a non-public route
// and returns the request with the caller's identity and scope in its
// context. An OptionalAuth route admits a request without a credential
// as it is.
func (a *api) admit(r *http.Request, rt apikit.Route) (*http.Request, error) {
	id, err := a.authenticate(r)
	if rt.Access.OptionalAuth && errors.Is(err, apikit.ErrNoCredential) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	st := stateOf(r.Context())
	if st != nil {
		st.identity = id
	}
	if err := authorize(rt, id); err != nil {
		return r, err
	}
	if st, ok := r.Context().(*requestState); ok && st.admit(id) {
		// The request's context is st: it answers with the identity and
		// scope from now on, without a copy of the request.
		return r, nil
	}
	ctx := identity.WithIdentity(r.Context(), id)
	return r.WithContext(store.WithScope(ctx, id.Scope())), nil
}

func (a *api) authenticate(r *http.Request) (*identity.Identity, error) {
	if a.authn == nil {
		return nil, apikit.ErrNoCredential
	}
	id, err := a.authn.Authenticate(r)
	if err != nil {
		return nil, err
	}
	if id == nil {
		return nil, apikit.ErrNoCredential
	}
	return id, nil
}

// authorize checks the route's access rules against the caller: the
// super-admin flag, the features, and for a TenantWide route an access
// that covers the whole tenant.
func authorize(rt apikit.Route, id *identity.Identity) error {
	if rt.Access.SuperAdmin && !id.IsSuperAdmin {
		return &apikit.ForbiddenError{Features: rt.Access.Features, Roles: []string{identity.SuperAdminRole}}
	}
	if missing := id.Missing(rt.Access.Features...); len(missing) > 0 {
		return &apikit.ForbiddenError{Features: missing}
	}
	if rt.Access.TenantWide && !id.CoversTenant() {
		return &apikit.ForbiddenError{TenantScope: true}
	}
	return nil
}

// recoverPanics turns a panic in a handler into a logged 500.
func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.logger.ErrorContext(r.Context(), "httpapi: panic", "panic", p, "requestId", requestID(r), "stack", string(debug.Stack()))
				apikit.Encode(w, http.StatusInternalServerError, map[string]string{"error": "Internal server error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// withRequestID gives every request an id (the caller's X-Request-Id when
// it is plain, otherwise a new one), echoed in the response header and
// logged with errors, makes the request's context its requestState, and
// sets the headers every response carries, before anything else runs, so
// that they are on every answer: routes' own and their errors, the
// catch-all 404 and 405, 401s, rate-limit 429s and panics turned into
// 500s. X-Content-Type-Options: nosniff stops browsers from reading a
// response as another type than the one it declares (an API answer shown
// as HTML, say).
//
// The two headers' values are slices of the requestState (one
// allocation for the state and both values, and no key to canonicalize):
// each capped at its length, so that a later Add copies instead of
// writing into the other.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &requestState{Context: r.Context(), route: unmatchedRoute}
		var id string
		if v := r.Header["X-Request-Id"]; len(v) > 0 && plainRequestID(v[0]) { // (as Header.Get: the first)
			id = v[0]
		} else {
			id = st.newID()
		}
		st.id = id
		st.headers = [2]string{"nosniff", id}
		h := w.Header()
		h["X-Content-Type-Options"] = st.headers[0:1:1]
		h["X-Request-Id"] = st.headers[1:2:2]
		next.ServeHTTP(w, r.WithContext(st))
	})
}

// plainRequestID reports whether a caller's request id may be kept: 1 to
// 64 of [A-Za-z0-9._:-].
func plainRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestIDPrefix makes generated request ids unique across processes;
// requestCounter within one.
var (
	requestIDPrefix = func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
	requestCounter atomic.Uint64
)

// requestIDMax bounds a generated request id: the prefix's 13 bytes and
// a counter's 20 digits at most.
const requestIDMax = 40

// newID returns a new request id, "<12 random hex digits>-<counter>":
// unique, cheap (no system call per request) and readable in logs. Its
// bytes are s's idBuf, written once here and never again, so the id costs
// no allocation of its own (it keeps the state alive as long as it is
// held).
func (s *requestState) newID() string {
	b := strconv.AppendUint(append(s.idBuf[:0], requestIDPrefix...), requestCounter.Add(1), 10)
	return unsafe.String(&s.idBuf[0], len(b))
}

func requestID(r *http.Request) string {
	if st := stateOf(r.Context()); st != nil {
		return st.id
	}
	return ""
}

// unmatchedRoute is the route of a request no route took, in the access
// log and metrics.
const unmatchedRoute = "unmatched"

// requestState is the context of a request inside the chain
// (withRequestID makes it so) and what the chain learns about the
// request: its id; for the access log and metrics, the route that took it
// and the caller; and once admit has let the caller in, a context holding
// the caller's identity and scope, which Value answers from. It replaces a
// context.WithValue and a copy of the request for each of these (the
// request id, the access log's record, the identity and scope): a copy of
// an http.Request is its largest allocation.
type requestState struct {
	context.Context // the request's own

	id       string
	route    string
	identity *identity.Identity
	// headers holds the values of the response's X-Content-Type-Options
	// and X-Request-Id (withRequestID).
	headers [2]string
	// idBuf holds a generated id's bytes (newID).
	idBuf [requestIDMax]byte
	// sw is observe's statusWriter, kept here to spare an allocation.
	sw statusWriter
	// admitted points to values, the caller's Identity.Values, once
	// admitted: published atomically, as the request's context may
	// already be in other goroutines' hands (a host's middleware) then.
	admitted atomic.Pointer[context.Context]
	values   context.Context
}

type stateKey struct{}

// admit has the state's Value answer with id and its scope, and reports
// whether it did: once per request (values is written once; a second
// caller wraps the context as usual).
func (s *requestState) admit(id *identity.Identity) bool {
	if s.admitted.Load() != nil {
		return false
	}
	s.values = id.Values() // a cached credential's are made once
	s.admitted.Store(&s.values)
	return true
}

// Value answers stateKey with s, the admitted caller's identity and
// scope, then the request's own values.
func (s *requestState) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	if a := s.admitted.Load(); a != nil {
		if v := (*a).Value(key); v != nil {
			return v
		}
	}
	return s.Context.Value(key)
}

// stateOf is the requestState of a request's context, nil outside the
// chain.
func stateOf(ctx context.Context) *requestState {
	if s, ok := ctx.(*requestState); ok {
		return s
	}
	s, _ := ctx.Value(stateKey{}).(*requestState)
	return s
}
