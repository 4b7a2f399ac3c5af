package tenantkit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/httpjson"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/stream"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Config configures a Kit. Either DatabaseURL or DB is required.
type Config struct {
	// Areas names the areas the Kit opens (AreaToggles, AreaRules, …);
	// nil opens every area (AllAreas). An area another one is built on is
	// added with it: entities with attachments, integrations with
	// payments, entities, integrations and progress with data sync. Only
	// the chosen areas' tables are created, their jobs registered and,
	// through httpapi, their routes served. httpapi serves identity's
	// routes and authenticates with it when AreaIdentity is among them.
	Areas []string
	// Identity configures the identity area: session lifetimes, the
	// password-reset mailer, its Store. Its SecretKey is the Kit's, and
	// the Kit registers its jobs.
	Identity identity.Options
	// DatabaseURL is passed to store.Open: "sqlite:PATH", "sqlite::memory:"
	// or "postgres://…".
	DatabaseURL string
	// DB is a database the host already opened; the Kit then neither opens
	// nor closes one. It takes precedence over DatabaseURL.
	DB *store.DB
	// SecretKey encrypts stored secrets and signs tokens. At least 32
	// bytes; defaults to a random key, which does not survive a restart
	// (the standalone server keeps one in its data directory).
	SecretKey []byte
	// Jobs tunes the background job engine.
	Jobs jobs.Config
	// Rules configures the business rules' background work: the execution
	// log's retention and whether CALL_WEBHOOK may reach private addresses.
	Rules rules.Options
	// Webhooks configures outbound webhooks (SecretKey is the Kit's).
	Webhooks webhooks.Options
	// Attachments configures uploads: limits, quota, partitions, text
	// extraction and image resizing (plug-ins that package full sets).
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
	// Payments configures the payment gateways: providers (nil: mock
	// and mock_processing; package full adds stripe) and where their
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

// Kit is an opened tenantkit: the database, the job engine and one service
// per area. Create it with Open, call Start to run background work, and
// Close when done.
type Kit struct {
	// DB is the database every area stores its data in.
	DB *store.DB
	// Jobs runs durable background work and delivers domain events.
	Jobs *jobs.Engine
	// SecretKey is the key from Config (or the generated one).
	SecretKey []byte
	// Logger is the logger from Config.
	Logger *slog.Logger
	// The area services follow; an area the Kit does not have (see
	// Config.Areas) is nil.

	// Identity manages tenants, organizations, users, roles, API keys
	// and sessions, and authenticates callers.
	Identity *identity.Service
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
	// Notifications keeps each user's inbox (GET /notifications), fed by
	// the other areas' events.
	Notifications *notifications.Service
	// Events streams the broadcast domain events to clients, live and
	// resumable (GET /api/events/stream is built on it).
	Events *stream.Hub

	areas  []Area
	ownsDB bool
	// migrated is set once Ready has found no migration pending.
	migrated atomic.Bool
}

// Area is the part every area service plays in a Kit's lifecycle. The Kit
// holds a list of areas and runs the same steps for each: Open applies
// their migrations and registers their jobs, Start starts them, Close stops
// them. Area constructors start nothing and read nothing, so the Kit
// builds them all before the database is migrated.
type Area interface {
	// Name names the area in errors and logs ("rules").
	Name() string
	// Migrations returns the area's schema lines, applied in order.
	Migrations() []store.Migrations
	// EventTypes describes the domain events the area emits.
	EventTypes() []store.EventType
	// RegisterJobs registers the area's job workers, periodic jobs and
	// event subscriptions on e, before e starts.
	RegisterJobs(e *jobs.Engine) error
	// Start starts the area's own background work (beyond its jobs), after
	// the job engine has started. Cancelling ctx does not stop it.
	Start(ctx context.Context) error
	// Stop ends that work, after the job engine has stopped, waiting no
	// longer than ctx allows. It is called even when Start was not.
	Stop(ctx context.Context) error
}

// Migrations lists the migration lines of the Kit's areas, in the order
// Open applied them.
func (k *Kit) Migrations() []store.Migrations {
	var lines []store.Migrations
	for _, a := range k.areas {
		lines = append(lines, a.Migrations()...)
	}
	return lines
}

// Open opens (or adopts) the database, builds the areas, applies their
// migrations and the job engine's, and registers their jobs. It starts no
// background work; call Start for that.
func Open(ctx context.Context, cfg Config) (*Kit, error) {
	k := &Kit{SecretKey: cfg.SecretKey, Logger: cfg.Logger, DB: cfg.DB}
	if k.Logger == nil {
		k.Logger = slog.Default()
	}
	if k.SecretKey == nil {
		k.SecretKey = make([]byte, 32)
		if _, err := rand.Read(k.SecretKey); err != nil {
			return nil, err
		}
	}
	if len(k.SecretKey) < 32 {
		return nil, errors.New("tenantkit: SecretKey must be at least 32 bytes")
	}
	if k.DB == nil {
		if cfg.DatabaseURL == "" {
			return nil, errors.New("tenantkit: Config needs DatabaseURL or DB")
		}
		db, err := store.Open(ctx, cfg.DatabaseURL, &store.Options{Logger: k.Logger})
		if err != nil {
			return nil, err
		}
		k.DB, k.ownsDB = db, true
	}
	if err := k.open(ctx, cfg); err != nil {
		if k.ownsDB {
			k.DB.Close()
		}
		return nil, err
	}
	return k, nil
}

func (k *Kit) open(ctx context.Context, cfg Config) error {
	cfg.SecretKey, cfg.Logger = k.SecretKey, k.Logger
	chosen, err := chooseAreas(cfg.Areas)
	if err != nil {
		return err
	}
	if k.areas, err = newAreas(k.DB, cfg, chosen); err != nil {
		return err
	}
	for _, a := range k.areas {
		switch svc := a.(type) {
		case *identity.Service:
			k.Identity = svc
		case *toggles.Service:
			k.Toggles = svc
		case *rules.Service:
			k.Rules = svc
		case *webhooks.Service:
			k.Webhooks = svc
		case *entities.Service:
			k.Entities = svc
		case *attachments.Service:
			k.Attachments = svc
		case *payments.Service:
			k.Payments = svc
		case *integrations.Service:
			k.Integrations = svc
		case *dashboards.Service:
			k.Dashboards = svc
		case *datasync.Service:
			k.DataSync = svc
		case *progress.Service:
			k.Progress = svc
		case *notifications.Service:
			k.Notifications = svc
		}
	}
	if err := k.registerIntegrations(); err != nil {
		return fmt.Errorf("tenantkit: integrations: %w", err)
	}
	if k.DataSync != nil {
		if err := k.DataSync.RegisterAdapter(httpjson.New(httpjson.Options{AllowPrivate: cfg.Webhooks.AllowPrivateURLs, Logger: k.Logger})); err != nil {
			return fmt.Errorf("tenantkit: datasync: %w", err)
		}
	}
	if err := k.registerWidgets(); err != nil {
		return fmt.Errorf("tenantkit: dashboards: %w", err)
	}
	if err := k.DB.Migrate(ctx, k.Migrations()...); err != nil {
		return fmt.Errorf("tenantkit: migrate: %w", err)
	}
	k.Events = stream.New(k.DB, k.EventTypes(), stream.Options{Logger: k.Logger})
	jobsCfg := cfg.Jobs
	if jobsCfg.Logger == nil {
		jobsCfg.Logger = k.Logger
	}
	if k.Jobs, err = jobs.New(ctx, k.DB, jobsCfg); err != nil {
		return fmt.Errorf("tenantkit: jobs: %w", err)
	}
	for _, a := range k.areas {
		if err := a.RegisterJobs(k.Jobs); err != nil {
			return fmt.Errorf("tenantkit: %s: %w", a.Name(), err)
		}
	}
	if k.Identity != nil && k.Dashboards != nil {
		k.forgetOnDelete()
	}
	if k.Notifications != nil {
		if err := k.subscribeNotifications(); err != nil {
			return fmt.Errorf("tenantkit: notifications: %w", err)
		}
	}
	return nil
}

// Areas returns the Kit's areas, in the order they migrate and start.
func (k *Kit) Areas() []Area { return slices.Clone(k.areas) }

// EventTypes describes every domain event the Kit's areas emit.
func (k *Kit) EventTypes() []store.EventType {
	var out []store.EventType
	for _, a := range k.areas {
		out = append(out, a.EventTypes()...)
	}
	return out
}

// Start starts the background workers (job engine, event delivery,
// periodic clean-ups), then each area's own background work. Register
// extra workers and subscriptions on k.Jobs before calling it. The
// workers run until Close; cancelling ctx does not stop them.
func (k *Kit) Start(ctx context.Context) error {
	if err := k.Jobs.Start(ctx); err != nil {
		return err
	}
	for _, a := range k.areas {
		if err := a.Start(ctx); err != nil {
			return fmt.Errorf("tenantkit: %s: %w", a.Name(), err)
		}
	}
	return nil
}

// Errors of Ready: why the Kit cannot serve yet.
var (
	ErrDatabaseDown      = errors.New("tenantkit: the database does not answer")
	ErrMigrationsPending = errors.New("tenantkit: migrations are pending")
	ErrJobsNotRunning    = errors.New("tenantkit: the job engine is not running")
)

// Ready reports whether the Kit can serve: the database answers (within
// ctx), every area's migrations are applied (another process may still be
// running them), and the job engine runs (Start was called, Close was
// not). The error wraps ErrDatabaseDown, ErrMigrationsPending or
// ErrJobsNotRunning.
func (k *Kit) Ready(ctx context.Context) error {
	if err := k.DB.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrDatabaseDown, err)
	}
	if !k.migrated.Load() { // once applied, migrations stay applied
		pending, err := k.DB.Pending(ctx, k.Migrations()...)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %v", ErrDatabaseDown, err)
		case len(pending) > 0:
			return fmt.Errorf("%w: %s", ErrMigrationsPending, strings.Join(pending, ", "))
		}
		k.migrated.Store(true)
	}
	if !k.Jobs.Running() {
		return ErrJobsNotRunning
	}
	return nil
}

// Close stops the workers, waiting for running jobs until ctx ends (jobs
// cut short run again later), then stops the areas in reverse order and
// closes the database if the Kit opened it.
func (k *Kit) Close(ctx context.Context) error {
	k.Events.Close()
	err := k.Jobs.Stop(ctx)
	for _, a := range slices.Backward(k.areas) {
		if stopErr := a.Stop(ctx); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("tenantkit: %s: %w", a.Name(), stopErr))
		}
	}
	if k.ownsDB {
		err = errors.Join(err, k.DB.Close())
	}
	return err
}
