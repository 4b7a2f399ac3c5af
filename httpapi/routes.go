package httpapi

import (
	"fmt"
	"net/http"

	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/httpapi/notificationsapi"
	"github.com/tenantkit/tenantkit/httpapi/paymentsapi"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/httpapi/togglesapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
)

// routes lists every endpoint, grouped by area.
func (a *api) routes() []apikit.Route {
	rs := inArea("Health", []apikit.Route{
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
		rs = append(rs, inArea("Identity", identityRoutes(a.opts.Auth, a.opts.RateLimit))...)
	}
	env := &apikit.Env{Kit: a.kit, Auth: a.opts.Auth, Base: a.base}
	k := a.kit
	areas := []struct {
		name   string
		on     bool
		routes func() []apikit.Route
	}{
		{"Feature toggles", k.Toggles != nil, func() []apikit.Route { return togglesapi.ToggleRoutes(k.Toggles, env) }},
		{"Business rules", k.Rules != nil, func() []apikit.Route { return rulesapi.RuleRoutes(k.Rules, env) }},
		{"Webhooks", k.Webhooks != nil, func() []apikit.Route { return webhooksapi.WebhookRoutes(k.Webhooks, env) }},
		{"Custom entities", k.Entities != nil, func() []apikit.Route { return entitiesapi.EntityRoutes(k.Entities, k.Progress, env) }},
		{"Attachments", k.Attachments != nil, func() []apikit.Route { return attachmentsapi.AttachmentRoutes(k.Attachments, env) }},
		{"Payment gateways", k.Payments != nil, func() []apikit.Route { return paymentsapi.PaymentRoutes(k.Payments, env) }},
		{"Dashboards", k.Dashboards != nil, func() []apikit.Route { return dashboardsapi.DashboardRoutes(k.Dashboards, env) }},
		{"Progress", k.Progress != nil, func() []apikit.Route { return progressapi.ProgressRoutes(k.Progress, env) }},
		{"Integrations", k.Integrations != nil, func() []apikit.Route { return integrationsapi.IntegrationRoutes(k.Integrations, env) }},
		{"Data sync", k.DataSync != nil, func() []apikit.Route { return datasyncapi.DataSyncRoutes(k.DataSync, env) }},
		{"Notifications", k.Notifications != nil, func() []apikit.Route { return notificationsapi.NotificationRoutes(k.Notifications, env) }},
		{"Events", k.Events != nil, a.eventRoutes},
	}
	for _, area := range areas {
		if area.on {
			rs = append(rs, inArea(area.name, area.routes())...)
		}
	}
	rs = withExamples(rs)
	rs = append(rs, hostRoutes(a.opts.Routes)...)
	d := &docs{}
	rs = append(rs, a.docsRoutes(d)...)
	d.build = func() (*openAPI, error) { return buildOpenAPI(a.base, rs, a.opts.DocsLicense) }
	return rs
}

// inArea sets the documentation area of routes that have none.
func inArea(area string, rs []apikit.Route) []apikit.Route {
	for i := range rs {
		if rs[i].Doc.Area == "" {
			rs[i].Doc.Area = area
		}
	}
	return rs
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
