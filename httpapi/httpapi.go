package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
)

// Authenticator identifies the caller of a request; a host with its own
// sign-in plugs one in (Options.Authenticator) instead of the identity
// area's API keys and sessions. Its contract:
//
//   - No credential: return (nil, nil). Public routes serve the request;
//     the others answer 401.
//   - An invalid credential: return an error wrapping
//     identity.ErrUnauthenticated (401). Any other error answers 500.
//   - A caller: return an *identity.Identity with at least TenantID.
//     identity.ForTenant(tenantID) is a caller with every feature over
//     the whole tenant; narrow it with WithFeatures("toggles.view", …) and
//     InOrganizations(orgID, …). Routes check the features the
//     documentation lists for them (403 naming the missing ones) and the
//     organizations (another organization's data answers 404).
type Authenticator interface {
	// Authenticate returns the caller of r, nil when r is anonymous.
	Authenticate(r *http.Request) (*identity.Identity, error)
}

// AuthenticatorFunc is an Authenticator written as a function.
type AuthenticatorFunc func(r *http.Request) (*identity.Identity, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*identity.Identity, error) { return f(r) }

// Options configures the handler. The zero value serves the Kit's routes
// under /api, authenticating with the Kit's identity area.
type Options struct {
	// BasePath is the path prefix of every route. Defaults to "/api".
	// Use "/" when mounting behind http.StripPrefix.
	BasePath string
	// Auth is the identity service whose routes (directory, roles, users,
	// API keys, login and password reset) the handler serves and which,
	// unless Authenticator is set, authenticates requests. nil uses the
	// Kit's identity area (Kit.Identity); set it only to serve another
	// identity service than the Kit's.
	Auth *identity.Service
	// Authenticator replaces the built-in authentication: a host with its
	// own sign-in returns the caller of each request (see Authenticator
	// and AuthenticatorFunc). Required when the Kit has no identity area.
	Authenticator Authenticator
	// MaxBodyBytes bounds request bodies (413 beyond). Defaults to 1 MiB.
	MaxBodyBytes int64
	// Logger receives 5xx errors and recovered panics. Defaults to the
	// Kit's logger.
	Logger *slog.Logger
	// RateLimit applies the authentication-endpoint limits and the routes'
	// own limits. nil applies ratelimit.DefaultConfig() in memory; use ratelimit.Open(ratelimit.ConfigFromEnv(...))
	// for the environment's settings or Redis, and a Config with Enabled
	// false to limit nothing.
	RateLimit *ratelimit.Policy
	// AccessLog writes one line per request to Logger at INFO (see
	// accesslog.go for its fields). Off by default: a host usually logs
	// requests its own way; the standalone server turns it on.
	AccessLog bool
	// Metrics, when set, counts every request (metrics.Metrics
	// implements it).
	Metrics RequestObserver
	// Routes are the host's own endpoints, served behind the same chain
	// as the built-in ones and listed in the API documentation.
	Routes []Route
	// DocsRequireAuth makes the documentation routes (/docs/openapi,
	// /docs/markdown, /docs/api) need a credential; they are public by
	// default.
	DocsRequireAuth bool
	// DocsLicense is the license of the API the documentation states
	// (the OpenAPI document's info.license); none when its Name is empty.
	DocsLicense DocsLicense
}

// DocsLicense names the license under which a host offers its API.
type DocsLicense struct {
	// Name is the license's name ("Apache 2.0"); required.
	Name string
	// Identifier is its SPDX expression ("Apache-2.0"), or URL where its
	// text is; Identifier wins when both are set (a document may state
	// one).
	Identifier, URL string
}

// RequestObserver is told of every answered request: its method, its
// route's pattern ("unmatched" when no route took it), status and
// duration.
type RequestObserver interface {
	// ObserveRequest is called once per request, after its answer.
	ObserveRequest(method, route string, status int, d time.Duration)
}

// defaultMaxBody is the request body limit unless Options or a route says
// otherwise.
const defaultMaxBody = 1 << 20

// api holds what handlers share.
type api struct {
	kit    *tenantkit.Kit
	opts   Options
	authn  Authenticator
	logger *slog.Logger
	base   string
}

// Handler serves the REST API of a Kit's areas: the routes of the areas
// the Kit has (and identity's, when it authenticates with the identity
// area), behind one middleware chain, with an OpenAPI document that lists
// exactly those routes. It is what a host mounts in its own mux; build it
// with New.
type Handler struct {
	h http.Handler
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Errors of New.
var (
	// ErrNoAuthenticator: the Kit has no identity area, and Options sets
	// neither Auth nor Authenticator, so no request could be
	// authenticated.
	ErrNoAuthenticator = errors.New("httpapi: no way to authenticate: the Kit has no identity area (add tenantkit.IdentityArea to Config.Areas) and Options sets neither Auth nor Authenticator")
)

// New returns the Handler serving the Kit's areas. It leaves the Kit as it
// is. It fails when no request could be authenticated (ErrNoAuthenticator)
// or when two routes conflict (a host route whose pattern clashes with a
// built-in one).
func New(kit *tenantkit.Kit, opts Options) (*Handler, error) {
	if kit == nil {
		return nil, errors.New("httpapi: New needs a Kit")
	}
	a := &api{kit: kit, opts: opts, authn: opts.Authenticator, logger: opts.Logger}
	if a.opts.Auth == nil {
		a.opts.Auth = kit.Identity
	}
	if a.authn == nil && a.opts.Auth != nil {
		a.authn = serviceAuthenticator{a.opts.Auth}
	}
	if a.authn == nil {
		return nil, ErrNoAuthenticator
	}
	if a.logger == nil {
		a.logger = kit.Logger
	}
	if a.opts.MaxBodyBytes <= 0 {
		a.opts.MaxBodyBytes = defaultMaxBody
	}
	a.base = strings.TrimSuffix(cmp.Or(opts.BasePath, "/api"), "/")
	if a.opts.RateLimit == nil {
		a.opts.RateLimit = ratelimit.NewPolicy(ratelimit.DefaultConfig(), nil, a.logger)
	}
	rs := a.routes()
	if err := checkRoutes(a.base, rs); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	return &Handler{h: a.serve(rs)}, nil
}

// serve builds the handler of a route table.
func (a *api) serve(routes []apikit.Route) http.Handler {
	mux := http.NewServeMux()
	exact := map[exactRoute]exactHandler{}
	shared := map[string][]apikit.Route{} // routes that share a pattern, in order
	var patterns []string
	for _, rt := range routes {
		pattern := rt.Method + " " + a.base + rt.Path
		if _, ok := shared[pattern]; !ok {
			patterns = append(patterns, pattern)
		}
		shared[pattern] = append(shared[pattern], rt)
	}
	for _, pattern := range patterns {
		rs := shared[pattern]
		var h http.Handler
		if len(rs) == 1 && rs[0].Match == nil {
			h = a.handle(rs[0])
		} else {
			handlers := make([]http.Handler, len(rs))
			for i, rt := range rs {
				handlers[i] = a.handle(rt)
			}
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i, rt := range rs {
					if rt.Match == nil || rt.Match(r) {
						handlers[i].ServeHTTP(w, r)
						return
					}
				}
				_ = apikit.Encode(w, http.StatusNotFound, map[string]string{"error": http.StatusText(http.StatusNotFound)})
			})
		}
		mux.Handle(pattern, h)
		if method, path := rs[0].Method, a.base+rs[0].Path; literalPath(method, path) {
			exact[exactRoute{method, path}] = exactHandler{h, pattern}
		}
	}
	mux.Handle(notFoundPattern, fallback(mux))
	var h http.Handler = mux
	if len(exact) > 0 {
		h = exactFirst(exact, mux)
	}
	h = a.recoverPanics(h)
	if a.opts.AccessLog || a.opts.Metrics != nil {
		h = a.observe(h)
	}
	return withRequestID(h)
}

// exactRoute is the method and path of a route whose pattern has no
// wildcard.
type exactRoute struct{ method, path string }

// exactHandler is the handler of an exactRoute and its pattern.
type exactHandler struct {
	h       http.Handler
	pattern string
}

// literalPath reports whether a route's method and path make a pattern
// that matches that method and that path only, as they are: a method, and
// a clean path without a wildcard, an escape or a trailing slash (which
// matches the paths below it).
func literalPath(method, p string) bool {
	return method != "" && strings.HasPrefix(p, "/") && !strings.ContainsAny(p, "{}%") &&
		(p == "/" || !strings.HasSuffix(p, "/")) && path.Clean(p) == p
}

// exactFirst serves a request whose method and path are those of a route
// without wildcards (exact) with that route's handler, and any other with
// mux. The ServeMux would choose the same handler: a pattern naming the
// method and the whole path is the most specific that can match such a
// request (no route names a host), and a path given without escapes
// (URL.RawPath empty) that equals a clean pattern's is the one it
// matches. This spares such requests the ServeMux's path cleaning and its
// walk of the routing tree; a HEAD, an escaped or unclean path and a path
// with wildcards go to the ServeMux as before. Like the ServeMux, it sets
// the request's Pattern.
func exactFirst(exact map[exactRoute]exactHandler, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawPath == "" {
			if e, ok := exact[exactRoute{r.Method, r.URL.Path}]; ok {
				r.Pattern = e.pattern
				e.h.ServeHTTP(w, r)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}
