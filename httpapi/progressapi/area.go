package progressapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/progress"
)

// Area returns the module of the job progress area, for tenantkit.Config.Areas:
// a Kit built with it has a *progress.Service (tenantkit.AreaOf), and an
// httpapi.Handler over that Kit serves the area's routes.
func Area(opts progress.Options) tenantkit.Module { return module{opts} }

type module struct{ opts progress.Options }

func (module) Name() string { return tenantkit.AreaProgress }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts

	return progress.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*progress.Service](env.Kit)
	return apikit.InArea("Progress", routes(svc, env))
}
