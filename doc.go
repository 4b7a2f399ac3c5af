// Package tenantkit is an embeddable multi-tenant backend: business rules,
// feature toggles, custom entities and records, attachments, dashboards,
// payments, integrations and data sync, outbound and inbound webhooks, and
// rate limiting, each an importable package with a service and a store on
// SQLite or PostgreSQL.
//
// A Kit wires the areas a host picks together over one database. Each
// area joins through its module: IdentityArea in this package, and the
// Area function of the area's package under httpapi (togglesapi.Area,
// rulesapi.Area, …), which also serves its routes:
//
//	kit, err := tenantkit.Open(ctx, tenantkit.Config{DatabaseURL: "sqlite:app.db",
//		Areas: []tenantkit.Module{togglesapi.Area(toggles.Options{}), rulesapi.Area(rules.Options{})}})
//	if err != nil { … }
//	defer kit.Close(ctx)
//	if err := kit.Start(ctx); err != nil { … } // background jobs
//	svc, _ := tenantkit.AreaOf[*toggles.Service](kit)
//
// Package full opens any of the built-in areas by name, with one Config
// of every area's options and a Kit with a typed field per area.
//
// Every area's service, identity's included, is an Area: the Kit builds
// the chosen ones and the areas they are built on (Module.Needs;
// constructors start and read nothing), applies their migrations,
// registers their jobs, lets each module connect its area to the others
// (Wirer), and starts and stops them in one loop. This package imports no
// area but identity, and httpapi none: what one area needs of another (a
// small interface in its Options) is wired in the area's module, so a
// host links the areas whose modules it imports and no others
// (deps_test.go checks a host of toggles and rules).
//
// Each area reaches its data through a
// Store interface whose SQL implementation serves both engines; a host may
// plug in its own and check it with the area's conformance suite, a Run
// function that tests an implementation against the behaviour the service
// relies on:
//
//   - identity/identitytest: identity.Store (tenants, organizations, roles,
//     users, API keys, password resets)
//   - toggles/togglestest: toggles.Store
//   - rules/rulestest: rules.Store
//   - entities/entitiestest: entities.Store
//   - webhooks/webhookstest: webhooks.Store
//   - attachments/attachmentstest: attachments.Store
//   - attachments/blobstest: attachments.Blobs (where file contents live)
//   - dashboards/dashboardstest: dashboards.Store
//   - payments/paymentstest: payments.Store
//   - integrations/integrationstest: integrations.Store
//   - datasync/datasynctest: datasync.Store
//   - progress/progresstest: progress.Store
//   - notifications/notificationstest: notifications.Store
//   - ratelimit/ratelimittest: ratelimit.Limiter
//
// Package httpapi serves the REST API of a Kit's areas on a net/http
// handler (httpapi.New returns the *httpapi.Handler a host mounts);
// examples/server runs it standalone. A host that wants a single area can use it without
// the Kit: open a store.DB, migrate the area's Migrations and create its
// service (svc, err := toggles.New(db, toggles.Options{})).
//
// Every service call runs in the tenant carried by its context
// (store.WithScope); there is no "all tenants" fallback.
//
// What a host depends on: the module requires only what its packages and
// their tests use. Helpers only tests import live under internal/testing
// and no other package imports them; the API explorer's browser tests,
// which drive Chromium with chromedp, are a module of their own
// (internal/testing/explorertest), so chromedp is not in a host's module
// graph. deps_test.go checks both.
//
// What a host links: package tenantkit, httpapi and the area packages
// import no heavy plug-in (the Stripe client, image codecs, the PDF
// parser, the S3 client), so a host of feature toggles and business rules
// builds without them (deps_test.go checks it). Without plug-ins,
// payments go through the mock providers only, images are served
// unresized and no text is extracted; full.Open opens a Kit with every
// built-in plug-in (what the standalone server does), and
// attachments/s3blobs keeps files in S3.
package tenantkit
