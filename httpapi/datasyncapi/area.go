package datasyncapi

import (
	"fmt"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/httpjson"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/progress"
)

// Options configures the data sync area in a Kit.
type Options struct {
	// DataSync tunes the sync runs (their Store, the retry waits of a
	// failing source); the module sets its bridges to the other areas,
	// and its Logger defaults to the Kit's.
	DataSync datasync.Options
	// AllowPrivateURLs lets the built-in HTTP JSON source reach loopback
	// and private addresses (tests, a source on the host's network); by
	// default it refuses them, so that a tenant's base URL cannot reach
	// the server's neighbours.
	AllowPrivateURLs bool
}

// Area returns the module of the data sync area, for
// tenantkit.Config.Areas: a Kit built with it has a *datasync.Service
// (tenantkit.AreaOf), and an httpapi.Handler over that Kit serves the sync
// run routes. Sync runs move custom entity records through an
// integration's adapter and report as progress jobs, so the area is built
// on the entities, integrations and progress areas (added with it). The
// built-in HTTP JSON source (sync_http_json) is registered.
func Area(opts Options) tenantkit.Module { return module{opts} }

type module struct{ opts Options }

func (module) Name() string { return tenantkit.AreaDataSync }

func (module) Needs() []tenantkit.Module {
	return []tenantkit.Module{entitiesapi.Area(entities.Options{}), integrationsapi.Area(integrations.Options{}),
		progressapi.Area(progress.Options{})}
}

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts.DataSync
	in, _ := tenantkit.AreaOf[*integrations.Service](k)
	ents, _ := tenantkit.AreaOf[*entities.Service](k)
	prog, _ := tenantkit.AreaOf[*progress.Service](k)
	opts.Integrations, opts.Records, opts.Progress = syncIntegrations{in}, syncRecords{ents}, syncProgress{prog}
	if opts.Logger == nil {
		opts.Logger = k.Logger
	}
	svc, err := datasync.New(k.DB, opts)
	if err != nil {
		return nil, err
	}
	if err := svc.RegisterAdapter(httpjson.New(httpjson.Options{AllowPrivate: m.opts.AllowPrivateURLs, Logger: k.Logger})); err != nil {
		return nil, fmt.Errorf("http json adapter: %w", err)
	}
	return svc, nil
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*datasync.Service](env.Kit)
	return apikit.InArea("Data sync", routes(svc, env))
}
