package togglesapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/toggles"
)

// Area returns the module of the feature toggles area, for tenantkit.Config.Areas:
// a Kit built with it has a *toggles.Service (tenantkit.AreaOf), and an
// httpapi.Handler over that Kit serves the area's routes. opts.Logger defaults to the Kit's.
func Area(opts toggles.Options) tenantkit.Module { return module{opts} }

type module struct{ opts toggles.Options }

func (module) Name() string { return tenantkit.AreaToggles }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	if opts.Logger == nil {
		opts.Logger = k.Logger
	}
	return toggles.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*toggles.Service](env.Kit)
	return apikit.InArea("Feature toggles", routes(svc, env))
}
