// Package tenantkit is an embeddable multi-tenant backend: business rules,
// feature toggles, custom entities and records, attachments, dashboards,
// payments, integrations and data sync, outbound and inbound webhooks, and
// rate limiting, each an importable package with a service and a store on
// SQLite or PostgreSQL.
//
// A Kit wires the areas a host picks together over one database:
//
//	kit, err := tenantkit.Open(ctx, tenantkit.Config{DatabaseURL: "sqlite:app.db",
//		Areas: []string{tenantkit.AreaToggles, tenantkit.AreaRules}}) // nil: every area
//	if err != nil { … }
//	defer kit.Close(ctx)
//	if err := kit.Start(ctx); err != nil { … } // background jobs
//
// Every area's service, identity's included, is an Area: the Kit builds
// the chosen ones and the areas they are built on (constructors start and
// read nothing), applies their migrations, registers their jobs, and
// starts and stops them in one loop. The cross-area wiring (what one area
// needs of another, through a small interface in its Options) is in the
// wiring*.go files of this package, the only place that knows more than
// one area. Each area reaches its data through a
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
// builds without them (deps_test.go checks it). A Kit from Open takes
// payments through the mock providers only, serves images unresized and
// extracts no text; package full opens one with every built-in plug-in
// (what the standalone server does), and attachments/s3blobs keeps files
// in S3.
package tenantkit
