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

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/stream"
)

// Config configures a Kit. Either DatabaseURL or DB is required.
type Config struct {
	// Areas are the areas the Kit opens, each given by its module:
	// IdentityArea here, togglesapi.Area, rulesapi.Area … in the area
	// packages of httpapi (which also serve its routes). An area another
	// one is built on comes with it (its module's Needs) unless Areas
	// lists it with options of its own. A Kit without the identity area
	// serves HTTP only with a host's authenticator. Package full opens
	// every area by name.
	Areas []Module
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
	// Identity is the identity area (tenants, organizations, users,
	// roles, API keys and sessions), nil when Config.Areas has no
	// IdentityArea. The other areas are reached with AreaOf.
	Identity *identity.Service
	// Events streams the broadcast domain events to clients, live and
	// resumable (GET /api/events/stream is built on it).
	Events *stream.Hub

	areas   []Area
	modules []Module
	ownsDB  bool
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

// Open opens (or adopts) the database, builds the areas of cfg.Areas'
// modules and of the modules they need, applies their migrations and the
// job engine's, registers their jobs and lets the modules connect their
// areas (Wirer). It starts no background work; call Start for that.
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
	modules, err := chooseModules(cfg.Areas)
	if err != nil {
		return err
	}
	k.modules = modules
	if k.areas, err = k.buildAreas(modules); err != nil {
		return err
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
	for _, m := range modules {
		if w, ok := m.(Wirer); ok {
			if err := w.Wire(k); err != nil {
				return fmt.Errorf("tenantkit: %s: %w", m.Name(), err)
			}
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
