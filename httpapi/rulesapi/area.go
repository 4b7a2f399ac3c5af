package rulesapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/rules"
)

// Area returns the module of the business rules area, for
// tenantkit.Config.Areas: a Kit built with it has a *rules.Service
// (tenantkit.AreaOf), and an httpapi.Handler over that Kit serves the
// rule, rule set, execution and log routes. opts.Signer defaults to the
// Kit's webhooks area when it has one: CALL_WEBHOOK calls are then signed
// like deliveries, with the secrets of the tenant's webhook registered for
// the call's URL.
func Area(opts rules.Options) tenantkit.Module { return module{opts} }

type module struct{ opts rules.Options }

func (module) Name() string { return tenantkit.AreaRules }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	if opts.Signer == nil {
		for _, a := range k.Areas() {
			if s, ok := a.(rules.CallSigner); ok {
				opts.Signer = s
				break
			}
		}
	}
	return rules.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*rules.Service](env.Kit)
	return apikit.InArea("Business rules", routes(svc, env))
}
