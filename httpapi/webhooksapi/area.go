package webhooksapi

import (
	"context"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/webhooks"
)

// integrationCustomWebhooks is the integration that switches a tenant's
// outbound webhooks on and off (integrationsapi.IntegrationWebhooks).
const integrationCustomWebhooks = "webhooks_custom"

// Area returns the module of the outbound and inbound webhooks area, for
// tenantkit.Config.Areas: a Kit built with it has a *webhooks.Service
// (tenantkit.AreaOf), and an httpapi.Handler over that Kit serves the
// webhook routes. opts.SecretKey is the Kit's. When the Kit has the
// integrations area, a tenant's custom webhooks integration
// (webhooks_custom) switches its outbound webhooks on and off, unless
// opts.TenantEnabled says otherwise.
func Area(opts webhooks.Options) tenantkit.Module { return module{opts} }

type module struct{ opts webhooks.Options }

func (module) Name() string { return tenantkit.AreaWebhooks }

func (module) Needs() []tenantkit.Module { return nil }

// enabler is the integrations area as the webhooks see it.
type enabler interface {
	Enabled(ctx context.Context, tenantID, integrationID string) (bool, error)
}

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	opts.SecretKey = k.SecretKey
	if opts.TenantEnabled == nil {
		for _, a := range k.Areas() {
			if in, ok := a.(enabler); ok {
				opts.TenantEnabled = func(ctx context.Context, tenantID string) (bool, error) {
					return in.Enabled(ctx, tenantID, integrationCustomWebhooks)
				}
				break
			}
		}
	}
	return webhooks.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*webhooks.Service](env.Kit)
	return apikit.InArea("Webhooks", routes(svc, env))
}
