package apikit

import (
	"context"
	"net/http"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/identity"
)

// Route is one endpoint. The route table (routes) is the single
// description of the API: dispatch, authorization and the checks in the
// tests all read it.
//
// Its fields are grouped by who reads them. The route itself holds what
// serves a request once it reaches the route: the pattern (Method, Path,
// Match), the handler and how its answers leave the chain (ErrorBody,
// NoStore: both apply to every response of the route, errors included,
// so they sit beside Handler rather than in a group). Access says who may
// call it (authenticate and authorize), Limits what the chain refuses
// before the handler runs (body size, rate), Doc what the API
// documentation says and nothing else: no field of Doc changes how a
// request is served.
type Route struct {
	Method string
	// Path is relative to the base path, in net/http pattern syntax
	// ("/business_rules/sets/{setId}").
	Path string
	// Match, when set, lets routes share one pattern: a request goes to
	// the first route of the pattern whose Match accepts it (404 when
	// none does). It serves paths net/http cannot tell apart by pattern,
	// such as /webhooks/{id}/test beside /webhooks/inbound/{endpointId}.
	Match func(r *http.Request) bool
	// Handler serves the request once it is authorized.
	Handler HandlerFunc
	// ErrorBody formats error responses the way the area documents them;
	// nil uses the default {error, details?} body.
	ErrorBody ErrorBodyFunc
	// NoStore marks a route whose responses may carry a secret (a new API
	// key, a webhook signing secret, a session token, credentials in a
	// webhook's custom headers): the chain sets "Cache-Control: no-store"
	// on all of its responses, errors included, so that no browser or
	// proxy cache keeps them. Set it on every such route.
	NoStore bool
	// Access says which callers may call the route.
	Access Access
	// Limits are the route's own bounds, checked before its handler runs.
	Limits Limits
	// Doc documents the route; the OpenAPI document and the Markdown
	// (openapi.go, markdown.go) are built from it and the fields above.
	Doc Doc
}

// Access says which callers may call a route: the chain
// authenticates and authorizes a request against it (authorize) before
// the handler runs. The zero value is a route for any authenticated
// caller of the tenant.
type Access struct {
	// Public routes need no credential.
	Public bool
	// OptionalAuth routes also serve callers without a credential: the
	// chain authenticates and authorizes a request that carries one (an
	// invalid one is 401), and passes one without a credential to the
	// handler with no identity or scope in its context. The handler
	// decides what such a caller gets (public files).
	OptionalAuth bool
	// SuperAdmin routes need a super-admin caller.
	SuperAdmin bool
	// Features the caller must all hold (super admins hold every feature).
	Features []string
	// TenantWide routes change state that holds for every organization
	// of the tenant (storage partitions, integration state and
	// credentials, rule sets, role-level widget visibility): only a
	// caller whose access covers the whole tenant may call them. A caller
	// limited to some organizations gets 403 with requiredScope "tenant",
	// whatever features it holds (see authorize).
	TenantWide bool
}

// Limits are a route's own bounds on what the chain lets through to
// its handler. The zero value is the handler's defaults: the 1 MiB body
// limit and no rate limit of the route's own.
type Limits struct {
	// MaxBodyBytes overrides the body limit (uploads).
	MaxBodyBytes int64
	// RateLimit, if set, limits the route before its handler runs.
	RateLimit *RateLimit
}

// Doc documents a route: the OpenAPI document and the Markdown are
// built from it (with the route's pattern, access and limits, which also
// show in the document). Serving a request reads none of it.
type Doc struct {
	// Summary is a one-line description of the endpoint.
	Summary string
	// Description says more than Summary when there is more to say (which
	// body fields depend on each other, what an id is); the document adds
	// the credentials and error statuses to it (describe).
	Description string
	// Area is the documentation section the route belongs to.
	Area string
	// DocPath is the concrete path documented for a route that shares its
	// pattern with others (Match): "/webhooks/{id}/test".
	DocPath string
	// Query documents the query parameters the handler reads, Headers
	// the request headers (If-Match), ResponseHeaders the headers of its
	// success answer (ETag).
	Query           []Param
	Headers         []Param
	ResponseHeaders []Param
	// Exports marks a list that also answers ?format=csv|json|markdown|xml
	// with a file.
	Exports bool
	// Request is a value of the Go type the handler decodes the body into
	// (nil: no JSON body). RequestContent is the body's media type when it
	// is not JSON ("multipart/form-data"); BodyOptional when the body may
	// be left out.
	Request        any
	RequestContent string
	BodyOptional   bool
	// FormBody marks a route that reads Request's fields from an
	// application/x-www-form-urlencoded, multipart/form-data or JSON body
	// alike (formValues); the document gives each of the three media
	// types Request's schema.
	FormBody bool
	// Example is an example request body the documentation shows
	// (examples.go); nil: one built from the body's schema.
	Example any
	// Response is a value of the Go type of the success body (nil: none);
	// ResponseContent lists the media types of a success body that is not
	// JSON (a file, a page). Status is the success status (200 if zero).
	Response        any
	ResponseContent []string
	Status          int
	// Ranges marks a route that serves its body with http.ServeContent:
	// it also answers 206 (a range, in the ResponseContent types or
	// multipart/byteranges), 304 and 412 (conditional requests, no body)
	// and 416 (an unsatisfiable range, text/plain).
	Ranges bool
	// Errors lists the error statuses the handler answers beyond those
	// the chain implies (400 for parameters and bodies, 401 and 403 for
	// non-public routes, 404 for paths with parameters, 413 for bodies, 429
	// for rate-limited routes).
	Errors []int
	// ErrorTypes gives error statuses whose body is not the error body
	// its Go type (503 {status, reason} of /ready); they are answered
	// besides Errors.
	ErrorTypes map[int]any
}

// Env is what an area's routes get from the handler beside their
// area's service: the Kit, the identity service (nil when a host
// authenticates) and the base path.
type Env struct {
	Kit  *tenantkit.Kit
	Auth *identity.Service
	Base string
}

// TenantName returns a tenant's name from the identity area, "" when
// there is none.
func (e *Env) TenantName(ctx context.Context, id string) string {
	if e.Auth == nil {
		return ""
	}
	name, err := e.Auth.TenantName(ctx, id)
	if err != nil {
		return ""
	}
	return name
}

// InArea sets the documentation area of routes that have none.
func InArea(area string, rs []Route) []Route {
	for i := range rs {
		if rs[i].Doc.Area == "" {
			rs[i].Doc.Area = area
		}
	}
	return rs
}
