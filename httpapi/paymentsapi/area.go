package paymentsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/payments"
)

// Area returns the module of the payment gateways area, for
// tenantkit.Config.Areas: a Kit built with it has a *payments.Service
// (tenantkit.AreaOf), and an httpapi.Handler over that Kit serves the
// payment routes. The area is built on the integrations area (added with
// it): a tenant's credentials stored in the provider's gateway
// integration (gateway_<provider>) win over opts.Credentials (nil: the
// environment), and provider calls are logged under that integration.
// opts.Providers nil takes payments through the mock providers only
// (package full adds Stripe).
func Area(opts payments.Options) tenantkit.Module { return module{opts} }

type module struct{ opts payments.Options }

func (module) Name() string { return tenantkit.AreaPayments }

func (module) Needs() []tenantkit.Module {
	return []tenantkit.Module{integrationsapi.Area(integrations.Options{})}
}

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	in, _ := tenantkit.AreaOf[*integrations.Service](k)
	if opts.Credentials == nil {
		opts.Credentials = payments.EnvCredentials{}
	}
	opts.Credentials = payments.Fallback(integrationCredentials(in), opts.Credentials)
	if opts.IntegrationLog == nil {
		opts.IntegrationLog = paymentsLog(in)
	}
	if opts.Logger == nil {
		opts.Logger = k.Logger
	}
	return payments.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*payments.Service](env.Kit)
	return apikit.InArea("Payment gateways", routes(svc, env))
}
