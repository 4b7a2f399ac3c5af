package integrationsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/integrations"
)

// Area returns the module of the integrations area, for
// tenantkit.Config.Areas: a Kit built with it has an
// *integrations.Service (tenantkit.AreaOf), and an httpapi.Handler over
// that Kit serves the catalogue, state, credentials and log routes.
// opts.SecretKey (which seals credentials) is the Kit's. Once the Kit's
// areas are built, the catalogue gets the built-in integrations of those
// present: the payment gateways of the payments area's providers, the
// custom webhooks and the HTTP JSON data source.
func Area(opts integrations.Options) tenantkit.Module { return module{opts} }

type module struct{ opts integrations.Options }

func (module) Name() string { return tenantkit.AreaIntegrations }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	opts.SecretKey = k.SecretKey
	return integrations.New(k.DB, opts)
}

// Wire registers the built-in integrations of the Kit's areas.
func (module) Wire(k *tenantkit.Kit) error {
	svc, _ := tenantkit.AreaOf[*integrations.Service](k)
	return registerBuiltins(k, svc)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*integrations.Service](env.Kit)
	return apikit.InArea("Integrations", routes(svc, env))
}
