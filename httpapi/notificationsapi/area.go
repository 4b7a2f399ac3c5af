package notificationsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/notifications"
)

// Area returns the module of the notifications area, for tenantkit.Config.Areas:
// a Kit built with it has a *notifications.Service (tenantkit.AreaOf), and an
// httpapi.Handler over that Kit serves the area's routes. opts.Recipients defaults to the identity area's users and roles; the
// Kit's other areas feed the inboxes (see Wire).
func Area(opts notifications.Options) tenantkit.Module { return module{opts} }

type module struct{ opts notifications.Options }

func (module) Name() string { return tenantkit.AreaNotifications }

func (module) Needs() []tenantkit.Module { return nil }

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts
	if opts.Recipients == nil && k.Identity != nil {
		// The feeds address the identity area's users, by id, email
		// or role name.
		opts.Recipients = identityRecipients{k.Identity}
	}
	return notifications.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*notifications.Service](env.Kit)
	return apikit.InArea("Notifications", routes(svc, env))
}

// Wire subscribes the notifications' feeds to the events of the Kit's
// areas: rules' NOTIFY actions, webhooks disabled or failing past their
// last retry (when the tenant's custom webhooks integration has
// notifyAdminsOnFailure on), and failed sync runs, told to their starter.
func (module) Wire(k *tenantkit.Kit) error {
	svc, _ := tenantkit.AreaOf[*notifications.Service](k)
	return subscribe(k, svc)
}
