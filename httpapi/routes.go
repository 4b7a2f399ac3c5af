package httpapi

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// routes lists every endpoint, grouped by area.
func (a *api) routes() []apikit.Route {
	rs := apikit.InArea("Health", []apikit.Route{
		{Method: "GET", Path: "/health", Handler: a.health,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "Health: 200 when the database answers", Response: statusBody{},
				ErrorTypes: map[int]any{http.StatusServiceUnavailable: statusBody{}}}},
		{Method: "GET", Path: "/ready", Handler: a.ready,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "Readiness: 200 when the database answers, migrations are applied and background jobs run; 503 otherwise",
				Response: statusBody{}, ErrorTypes: map[int]any{http.StatusServiceUnavailable: statusBody{}}}},
	})
	if a.opts.Auth != nil {
		rs = append(rs, apikit.InArea("Identity", identityRoutes(a.opts.Auth, a.opts.RateLimit))...)
	}
	env := &apikit.Env{Kit: a.kit, Auth: a.opts.Auth, Base: a.base}
	for _, m := range modulesInRouteOrder(a.kit) {
		if r, ok := m.(areaRoutes); ok {
			rs = append(rs, r.Routes(env)...)
		}
	}
	rs = append(rs, apikit.InArea("Events", a.eventRoutes())...)
	rs = withExamples(rs)
	rs = append(rs, hostRoutes(a.opts.Routes)...)
	d := &docs{}
	rs = append(rs, a.docsRoutes(d)...)
	d.build = func() (*openAPI, error) { return buildOpenAPI(a.base, rs, a.opts.DocsLicense) }
	return rs
}

// areaRoutes is a module that serves its area's routes: the modules of
// the area packages of httpapi (togglesapi.Area, …).
type areaRoutes interface {
	Routes(env *apikit.Env) []apikit.Route
}

// routeOrder is the order the areas' routes are documented in.
var routeOrder = []string{
	tenantkit.AreaToggles, tenantkit.AreaRules, tenantkit.AreaWebhooks, tenantkit.AreaEntities,
	tenantkit.AreaAttachments, tenantkit.AreaPayments, tenantkit.AreaDashboards, tenantkit.AreaProgress,
	tenantkit.AreaIntegrations, tenantkit.AreaDataSync, tenantkit.AreaNotifications,
}

// modulesInRouteOrder returns the Kit's modules in routeOrder, the others
// after them.
func modulesInRouteOrder(k *tenantkit.Kit) []tenantkit.Module {
	ms := k.Modules()
	rank := func(m tenantkit.Module) int {
		if i := slices.Index(routeOrder, m.Name()); i >= 0 {
			return i
		}
		return len(routeOrder)
	}
	slices.SortStableFunc(ms, func(a, b tenantkit.Module) int { return rank(a) - rank(b) })
	return ms
}

// checkRoutes reports the first pair of routes whose patterns conflict
// (net/http would panic registering them) or that are declared twice.
func checkRoutes(base string, rs []apikit.Route) (err error) {
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
