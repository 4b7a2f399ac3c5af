package tenantkit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Every area service, the built-in identity's included, plays the Kit's
// lifecycle.
var (
	_ tenantkit.Area = (*toggles.Service)(nil)
	_ tenantkit.Area = (*rules.Service)(nil)
	_ tenantkit.Area = (*webhooks.Service)(nil)
	_ tenantkit.Area = (*entities.Service)(nil)
	_ tenantkit.Area = (*attachments.Service)(nil)
	_ tenantkit.Area = (*identity.Service)(nil)
	_ tenantkit.Area = (*dashboards.Service)(nil)
	_ tenantkit.Area = (*progress.Service)(nil)
	_ tenantkit.Area = (*notifications.Service)(nil)
)

// The Kit runs its areas through one loop: each is on the Kit, its
// migrations applied (its tables answer), its event types in the Kit's
// catalogue; Start and Close run over all of them, Close after a Start or
// without one.
func TestKitAreas(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := full.OpenPlain(ctx, full.Config{DB: storetest.SQLite(t)})
	is.NoErr(err)

	var names []string
	for _, a := range kit.Areas() {
		names = append(names, a.Name())
		for _, et := range a.EventTypes() {
			is.True(slices.Contains(kit.EventTypes(), et)) // the Kit's catalogue holds every area's events
		}
	}
	is.Equal(names, []string{"identity", "toggles", "rules", "webhooks", "entities", "attachments", "integrations", "payments", "dashboards", "progress", "datasync", "notifications"})
	is.Equal(kit.Areas()[0], tenantkit.Area(kit.Identity))
	is.Equal(len(kit.Migrations()), len(names)+1) // one line each, and SQLBlobs' (attachments)

	// The migrations ran: every area answers a list on its tables.
	sctx := store.WithScope(ctx, store.Scope{TenantID: store.NewID()})
	_, _, err = kit.Toggles.List(sctx, toggles.ListFilter{Limit: 1})
	is.NoErr(err)
	_, _, err = kit.Rules.ListRules(sctx, rules.RuleFilter{Limit: 1})
	is.NoErr(err)
	_, _, err = kit.Webhooks.List(sctx, webhooks.Filter{Limit: 1})
	is.NoErr(err)
	_, err = kit.Entities.ListEntities(sctx)
	is.NoErr(err)
	_, err = kit.Attachments.Library(sctx, attachments.LibraryQuery{})
	is.NoErr(err)
	_, _, err = kit.Payments.List(sctx, payments.Filter{Limit: 1})
	is.NoErr(err)
	_, _, err = kit.Dashboards.Layout(sctx, dashboards.Viewer{Owner: "api_key:k"})
	is.NoErr(err)
	_, err = kit.Progress.Active(sctx)
	is.NoErr(err)
	_, err = kit.Notifications.List(store.WithScope(ctx, store.Scope{TenantID: store.NewID(), ActorID: "u-1"}), notifications.ListOptions{})
	is.NoErr(err)

	is.NoErr(kit.Start(ctx))
	is.NoErr(kit.Close(context.Background()))

	unstarted, err := full.OpenPlain(ctx, full.Config{DB: storetest.SQLite(t)})
	is.NoErr(err)
	is.NoErr(unstarted.Close(context.Background()))
}
