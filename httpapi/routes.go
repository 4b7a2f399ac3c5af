package httpapi

import (
	"fmt"
	"net/http"
)

// route is one endpoint. The route table (routes) is the single
// description of the API: dispatch, authorization and the checks in the
// tests all read it.
type route struct {
	Method string
	// Path is relative to the base path, in net/http pattern syntax
	// ("/business_rules/sets/{setId}").
	Path string
	// Summary is a one-line description of the endpoint.
	Summary string
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
	// MaxBodyBytes overrides the body limit (uploads).
	MaxBodyBytes int64
	// RateLimit, if set, limits the route before its handler runs.
	RateLimit *rateLimit
	// NoStore marks a route whose responses may carry a secret (a new API
	// key, a webhook signing secret, a session token, credentials in a
	// webhook's custom headers): the chain sets "Cache-Control: no-store"
	// on all of its responses, errors included, so that no browser or
	// proxy cache keeps them. Set it on every such route.
	NoStore bool
	// ErrorBody formats error responses the way the area documents them;
	// nil uses the default {error, details?} body.
	ErrorBody errorBodyFunc
	// Handler serves the request once it is authorized.
	Handler apiFunc
	// Match, when set, lets routes share one pattern: a request goes to
	// the first route of the pattern whose Match accepts it (404 when
	// none does). It serves paths net/http cannot tell apart by pattern,
	// such as /webhooks/{id}/test beside /webhooks/inbound/{endpointId}.
	Match func(r *http.Request) bool
}

// routes lists every endpoint, grouped by area.
func (a *api) routes() []route {
	rs := []route{
		{Method: "GET", Path: "/health", Summary: "Health: 200 when the database answers", Public: true, Handler: a.health},
		{Method: "GET", Path: "/ready", Summary: "Readiness: 200 when the database answers, migrations are applied and background jobs run; 503 otherwise",
			Public: true, Handler: a.ready},
	}
	if a.opts.Auth != nil {
		rs = append(rs, identityRoutes(a.opts.Auth, a.opts.RateLimit)...)
	}
	if a.kit != nil && a.kit.Toggles != nil {
		rs = append(rs, a.toggleRoutes()...)
	}
	if a.kit != nil && a.kit.Rules != nil {
		rs = append(rs, a.ruleRoutes()...)
	}
	if a.kit != nil && a.kit.Webhooks != nil {
		rs = append(rs, a.webhookRoutes()...)
	}
	if a.kit != nil && a.kit.Entities != nil {
		rs = append(rs, a.entityRoutes()...)
	}
	if a.kit != nil && a.kit.Attachments != nil {
		rs = append(rs, a.attachmentRoutes()...)
	}
	if a.kit != nil && a.kit.Payments != nil {
		rs = append(rs, a.paymentRoutes()...)
	}
	if a.kit != nil && a.kit.Dashboards != nil {
		rs = append(rs, a.dashboardRoutes()...)
	}
	if a.kit != nil && a.kit.Progress != nil {
		rs = append(rs, a.progressRoutes()...)
	}
	if a.kit != nil && a.kit.Integrations != nil {
		rs = append(rs, a.integrationRoutes()...)
	}
	if a.kit != nil && a.kit.DataSync != nil {
		rs = append(rs, a.dataSyncRoutes()...)
	}
	return rs
}

// checkRoutes reports the first pair of routes whose patterns conflict
// (net/http would panic registering them) or that are declared twice.
func checkRoutes(base string, rs []route) (err error) {
	mux := http.NewServeMux()
	seen := map[string]bool{}
	for _, rt := range rs {
		pattern := rt.Method + " " + base + rt.Path
		if rt.Handler == nil {
			return fmt.Errorf("route %s has no handler", pattern)
		}
		if seen[pattern] {
			if rt.Match == nil {
				return fmt.Errorf("route %s declared twice", pattern)
			}
			continue // shares the pattern (Match)
		}
		seen[pattern] = true
		if err := register(mux, pattern); err != nil {
			return err
		}
	}
	return nil
}

func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("route %s: %v", pattern, p)
		}
	}()
	mux.Handle(pattern, http.NotFoundHandler())
	return nil
}
