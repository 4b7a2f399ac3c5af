package full

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/notificationsapi"
	"github.com/tenantkit/tenantkit/httpapi/paymentsapi"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/httpapi/togglesapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/payments/stripeprovider"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Config configures a Kit of any of the built-in areas, by name, with
// each area's options. Either DatabaseURL or DB is required.
type Config struct {
	// Areas names the areas the Kit opens (tenantkit.AreaToggles,
	// tenantkit.AreaRules, …); nil opens every area
	// (tenantkit.AllAreas). An area another one is built on is added
	// with it: entities with attachments, integrations with payments,
	// entities, integrations and progress with data sync. httpapi serves
	// identity's routes and authenticates with it when
	// tenantkit.AreaIdentity is among them.
	Areas []string
	// Identity configures the identity area: session lifetimes, the
	// password-reset mailer, its Store. Its SecretKey is the Kit's.
	Identity identity.Options
	// DatabaseURL is passed to store.Open: "sqlite:PATH", "sqlite::memory:"
	// or "postgres://…".
	DatabaseURL string
	// DB is a database the host already opened; the Kit then neither opens
	// nor closes one. It takes precedence over DatabaseURL.
	DB *store.DB
	// SecretKey encrypts stored secrets and signs tokens. At least 32
	// bytes; defaults to a random key, which does not survive a restart.
	SecretKey []byte
	// Jobs tunes the background job engine.
	Jobs jobs.Config
	// Toggles configures the feature toggles (their Store).
	Toggles toggles.Options
	// Rules configures the business rules' background work: the execution
	// log's retention and whether CALL_WEBHOOK may reach private addresses.
	Rules rules.Options
	// Webhooks configures outbound webhooks (SecretKey is the Kit's). Its
	// AllowPrivateURLs also lets the data sync's HTTP JSON source reach
	// private addresses.
	Webhooks webhooks.Options
	// Entities configures the custom entities (their Store).
	Entities entities.Options
	// Attachments configures uploads: limits, quota, partitions, text
	// extraction and image resizing (plug-ins that Configure sets).
	// Its Fields (custom fields) are the entities area's, and
	// its Blobs, when nil, FSBlobs under FilesDir.
	Attachments attachments.Options
	// FilesDir is where attachments' files are stored (the standalone
	// server uses DATA_DIR/files). Empty, with no Attachments.Blobs, keeps
	// them in memory: fine for tests, lost on restart.
	FilesDir string
	// FilesInDatabase keeps attachments' files in the database
	// (attachments.SQLBlobs) when Attachments.Blobs is nil: with
	// PostgreSQL, every process sharing the database shares the files.
	// It wins over FilesDir.
	FilesInDatabase bool
	// Integrations configures the integrations (their Store; SecretKey
	// is the Kit's).
	Integrations integrations.Options
	// Payments configures the payment gateways: providers (nil: mock
	// and mock_processing; Configure adds stripe) and where their
	// credentials come from.
	// A tenant's credentials stored in the provider's gateway integration
	// (gateway_<provider>) always win; Payments.Credentials (nil: the
	// environment) gives the settings the tenant has not stored.
	Payments payments.Options
	// Dashboards configures the dashboards: their Store and Directory
	// (from the identity area when nil). The Kit registers its built-in
	// widgets; register more with Kit.Dashboards.Register.
	Dashboards dashboards.Options
	// Progress configures job progress: its Store, how long a running
	// job may go without a heartbeat before it shows failed, and how long
	// finished jobs stay in GET /progress/active.
	Progress progress.Options
	// Notifications configures the users' inboxes: their Store, and the
	// Recipients the feeds address (the identity area's users and roles
	// when nil).
	Notifications notifications.Options
	// DataSync tunes the sync runs (their Store, the retry waits of a
	// failing source); the Kit sets its bridges to the other areas.
	DataSync datasync.Options
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Kit is a tenantkit.Kit with a typed field per built-in area; an area
// the Kit does not have (Config.Areas) is nil.
type Kit struct {
	*tenantkit.Kit

	// Toggles manages feature toggles and resolves them in-process.
	Toggles *toggles.Service
	// Rules manages business rules and rule sets, executes them and keeps
	// the execution log.
	Rules *rules.Service
	// Webhooks manages outbound webhooks.
	Webhooks *webhooks.Service
	// Entities manages custom entities and custom field definitions.
	Entities *entities.Service
	// Attachments manages uploaded files, their partitions and delivery.
	Attachments *attachments.Service
	// Payments runs payment sessions through the providers and applies
	// their webhooks.
	Payments *payments.Service
	// Integrations is the integration catalogue with each tenant's state,
	// credentials (sealed with SecretKey) and logs.
	Integrations *integrations.Service
	// DataSync runs imports and exports of custom entity records through
	// the integrations' adapters, as durable jobs.
	DataSync *datasync.Service
	// Dashboards keeps per-user widget layouts, the widget registry and
	// who sees which widget.
	Dashboards *dashboards.Service
	// Progress records the progress of long-running jobs (exports,
	// extractions, syncs) and answers what runs and what just finished.
	Progress *progress.Service
	// Notifications keeps each user's inbox, fed by the other areas'
	// events.
	Notifications *notifications.Service
}

// Open opens a Kit of cfg's areas with every built-in plug-in:
// OpenPlain(ctx, Configure(cfg)).
func Open(ctx context.Context, cfg Config) (*Kit, error) {
	return OpenPlain(ctx, Configure(cfg))
}

// OpenPlain opens a Kit of cfg's areas with the plug-ins cfg sets and no
// others: payments through the mock providers, images served unresized,
// no text extracted (unless cfg says otherwise).
func OpenPlain(ctx context.Context, cfg Config) (*Kit, error) {
	modules, err := Modules(cfg)
	if err != nil {
		return nil, err
	}
	k, err := tenantkit.Open(ctx, tenantkit.Config{Areas: modules, DatabaseURL: cfg.DatabaseURL, DB: cfg.DB,
		SecretKey: cfg.SecretKey, Jobs: cfg.Jobs, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	kit := &Kit{Kit: k}
	kit.Toggles, _ = tenantkit.AreaOf[*toggles.Service](k)
	kit.Rules, _ = tenantkit.AreaOf[*rules.Service](k)
	kit.Webhooks, _ = tenantkit.AreaOf[*webhooks.Service](k)
	kit.Entities, _ = tenantkit.AreaOf[*entities.Service](k)
	kit.Attachments, _ = tenantkit.AreaOf[*attachments.Service](k)
	kit.Payments, _ = tenantkit.AreaOf[*payments.Service](k)
	kit.Integrations, _ = tenantkit.AreaOf[*integrations.Service](k)
	kit.DataSync, _ = tenantkit.AreaOf[*datasync.Service](k)
	kit.Dashboards, _ = tenantkit.AreaOf[*dashboards.Service](k)
	kit.Progress, _ = tenantkit.AreaOf[*progress.Service](k)
	kit.Notifications, _ = tenantkit.AreaOf[*notifications.Service](k)
	return kit, nil
}

// Modules returns the modules of cfg.Areas (every area when nil), each
// with its options from cfg, for tenantkit.Config.Areas, followed by the
// modules of the areas they are built on (with cfg's options too, not
// their modules' defaults). An unknown name is an error naming it.
func Modules(cfg Config) ([]tenantkit.Module, error) {
	names := cfg.Areas
	if names == nil {
		names = tenantkit.AllAreas()
	}
	out := make([]tenantkit.Module, 0, len(names))
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		m, err := module(cfg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for _, name := range neededNames(out) {
		m, err := module(cfg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// module returns the module of the area name, with its options from cfg.
func module(cfg Config, name string) (tenantkit.Module, error) {
	switch name {
	case tenantkit.AreaIdentity:
		return tenantkit.IdentityArea(cfg.Identity), nil
	case tenantkit.AreaToggles:
		return togglesapi.Area(cfg.Toggles), nil
	case tenantkit.AreaRules:
		return rulesapi.Area(cfg.Rules), nil
	case tenantkit.AreaWebhooks:
		return webhooksapi.Area(cfg.Webhooks), nil
	case tenantkit.AreaEntities:
		return entitiesapi.Area(cfg.Entities), nil
	case tenantkit.AreaAttachments:
		return attachmentsapi.Area(attachmentsapi.Options{Attachments: cfg.Attachments, FilesDir: cfg.FilesDir,
			FilesInDatabase: cfg.FilesInDatabase}), nil
	case tenantkit.AreaIntegrations:
		return integrationsapi.Area(cfg.Integrations), nil
	case tenantkit.AreaPayments:
		return paymentsapi.Area(cfg.Payments), nil
	case tenantkit.AreaDashboards:
		return dashboardsapi.Area(cfg.Dashboards), nil
	case tenantkit.AreaProgress:
		return progressapi.Area(cfg.Progress), nil
	case tenantkit.AreaDataSync:
		return datasyncapi.Area(datasyncapi.Options{DataSync: cfg.DataSync, AllowPrivateURLs: cfg.Webhooks.AllowPrivateURLs}), nil
	case tenantkit.AreaNotifications:
		return notificationsapi.Area(cfg.Notifications), nil
	}
	return nil, fmt.Errorf("full: unknown area %q in Config.Areas (known: %v)", name, tenantkit.AllAreas())
}

// neededNames lists the names of the areas the modules need (and those
// need) that the modules leave out.
func neededNames(modules []tenantkit.Module) []string {
	have := map[string]bool{}
	for _, m := range modules {
		have[m.Name()] = true
	}
	var out []string
	queue := slices.Clone(modules)
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		for _, need := range m.Needs() {
			if !have[need.Name()] {
				have[need.Name()] = true
				out = append(out, need.Name())
				queue = append(queue, need)
			}
		}
	}
	return out
}

// Configure returns cfg with the built-in plug-ins filled in where cfg
// leaves them unset:
//
//   - Payments.Providers: Providers() (mock, mock_processing and stripe);
//   - Attachments.Images: thumbs.Images{} (PNG, JPEG, GIF and WebP
//     resizing for the image route);
//   - Attachments.Extractor: extract.Extractor{} (text of plain text,
//     PDF and .docx files, with extract's default limits).
//
// What cfg sets is kept as it is.
func Configure(cfg Config) Config {
	if cfg.Payments.Providers == nil {
		cfg.Payments.Providers = Providers()
	}
	if cfg.Attachments.Images == nil {
		cfg.Attachments.Images = thumbs.Images{}
	}
	if cfg.Attachments.Extractor == nil {
		cfg.Attachments.Extractor = extract.Extractor{}
	}
	return cfg
}

// Providers returns a registry of the built-in payment providers: mock,
// mock_processing and stripe (stripeprovider, with its default options).
// Register more on it before passing it in Config.Payments.Providers.
func Providers() *payments.Registry {
	return payments.NewRegistry(payments.NewMock(payments.KeyMock), payments.NewMock(payments.KeyMockProcessing),
		stripeprovider.New(stripeprovider.Options{}))
}
