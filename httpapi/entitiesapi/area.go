package entitiesapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/progress"
)

// Area returns the module of the custom entities area, for
// tenantkit.Config.Areas: a Kit built with it has an *entities.Service
// (tenantkit.AreaOf), and an httpapi.Handler over that Kit serves the
// entity, field and record routes. When the Kit also has the progress
// area, record exports are tracked as progress jobs.
func Area(opts entities.Options) tenantkit.Module { return module{opts} }

type module struct{ opts entities.Options }

func (module) Name() string { return tenantkit.AreaEntities }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) { return entities.New(k.DB, m.opts) }

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*entities.Service](env.Kit)
	prog, _ := tenantkit.AreaOf[*progress.Service](env.Kit)
	return apikit.InArea("Custom entities", routes(svc, prog, env))
}
