package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
)

// Authenticator identifies the caller of a request. It returns (nil, nil)
// when the request carries no credential, and an error wrapping
// identity.ErrUnauthenticated when it carries an invalid one. Options.Auth
// gets one that reads the request's headers and cookies for an
// *identity.Service; a host with its own identity system plugs in its own.
type Authenticator interface {
	// Authenticate returns the caller of r, nil when r is anonymous.
	Authenticate(r *http.Request) (*identity.Identity, error)
}

// Options configures the handler. The zero value serves the area routes
// under /api with no way to authenticate: set Auth or Authenticator.
type Options struct {
	// BasePath is the path prefix of every route. Defaults to "/api".
	// Use "/" when mounting behind http.StripPrefix.
	BasePath string
	// Auth enables the built-in identity routes (directory, roles, users,
	// API keys, login and password reset) and, unless Authenticator is
	// set, authenticates requests. New also gives it to the Kit
	// (Kit.UseIdentity) when the dashboards have no Directory yet, so that
	// their role and user visibility routes find roles and users.
	Auth *identity.Service
	// Authenticator replaces the built-in authentication.
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

// New returns the handler serving the tenantkit REST API. It panics if the
// route table is inconsistent (two routes with conflicting patterns), which
// is a programming error caught by the package's tests.
func New(kit *tenantkit.Kit, opts Options) http.Handler {
	a := &api{kit: kit, opts: opts, authn: opts.Authenticator, logger: opts.Logger}
	if a.authn == nil && opts.Auth != nil {
		a.authn = serviceAuthenticator{opts.Auth}
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
	if opts.Auth != nil && kit.Dashboards != nil && !kit.Dashboards.HasDirectory() {
		kit.UseIdentity(opts.Auth)
	}
	return a.serve(a.routes())
}

// serve builds the handler of a route table.
func (a *api) serve(routes []route) http.Handler {
	mux := http.NewServeMux()
	shared := map[string][]route{} // routes that share a pattern, in order
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
		if len(rs) == 1 && rs[0].Match == nil {
			mux.Handle(pattern, a.handle(rs[0]))
			continue
		}
		handlers := make([]http.Handler, len(rs))
		for i, rt := range rs {
			handlers[i] = a.handle(rt)
		}
		mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i, rt := range rs {
				if rt.Match == nil || rt.Match(r) {
					handlers[i].ServeHTTP(w, r)
					return
				}
			}
			_ = encode(w, http.StatusNotFound, map[string]string{"error": http.StatusText(http.StatusNotFound)})
		}))
	}
	mux.Handle(notFoundPattern, fallback(mux))
	h := a.recoverPanics(mux)
	if a.opts.AccessLog || a.opts.Metrics != nil {
		h = a.observe(h)
	}
	return securityHeaders(withRequestID(h))
}
