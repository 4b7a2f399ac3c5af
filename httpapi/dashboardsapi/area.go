package dashboardsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// Area returns the module of the dashboards area, for tenantkit.Config.Areas:
// a Kit built with it has a *dashboards.Service (tenantkit.AreaOf), and an
// httpapi.Handler over that Kit serves the area's routes. opts.Directory defaults to the identity area's roles and users;
// the built-in widgets of the Kit's other areas are registered (see Wire).
func Area(opts dashboards.Options) tenantkit.Module { return module{opts} }

type module struct{ opts dashboards.Options }

func (module) Name() string { return tenantkit.AreaDashboards }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	if opts.Directory == nil && k.Identity != nil {
		// The role and user visibility routes look roles and users
		// up in the identity area.
		opts.Directory = identityDirectory{k.Identity}
	}
	return dashboards.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*dashboards.Service](env.Kit)
	return apikit.InArea("Dashboards", routes(svc, env))
}

// Wire registers the built-in widgets of the Kit's areas (webhook health,
// rule executions, storage, payments, sync runs), and hooks the
// dashboards into the identity area's deletes, so that deleting a user or
// role removes its visibility records in the same transaction.
func (module) Wire(k *tenantkit.Kit) error {
	svc, _ := tenantkit.AreaOf[*dashboards.Service](k)
	if k.Identity != nil {
		forgetOnDelete(k.Identity, svc)
	}
	return registerWidgets(k, svc)
}
