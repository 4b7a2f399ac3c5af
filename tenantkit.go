package tenantkit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Config configures a Kit. Either DatabaseURL or DB is required.
type Config struct {
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
	Rules rules.JobOptions
	// Webhooks configures outbound webhooks (SecretKey is the Kit's).
	Webhooks webhooks.Options
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
	// Toggles manages feature toggles and resolves them in-process.
	Toggles *toggles.Service
	// Rules manages business rules and rule sets, executes them and keeps
	// the execution log.
	Rules *rules.Service
	// Webhooks manages outbound webhooks.
	Webhooks *webhooks.Service
	// Entities manages custom entities and custom field definitions.
	Entities *entities.Service

	ownsDB bool
}

// Migrations lists the migration lines of every area on the Kit, in the
// order Open applies them.
func Migrations() []store.Migrations {
	return []store.Migrations{toggles.Migrations, rules.Migrations, webhooks.Migrations, entities.Migrations}
}

// Open opens (or adopts) the database, applies every area's migrations and
// the job engine's, and wires the areas together. It starts no background
// work but the toggle cache's version check (one single-row read every
// 250 ms, so that changes made by other processes show up); call Start for
// the rest.
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
	if err := k.DB.Migrate(ctx, Migrations()...); err != nil {
		return fmt.Errorf("tenantkit: migrate: %w", err)
	}
	jobsCfg := cfg.Jobs
	if jobsCfg.Logger == nil {
		jobsCfg.Logger = k.Logger
	}
	var err error
	if k.Jobs, err = jobs.New(ctx, k.DB, jobsCfg); err != nil {
		return fmt.Errorf("tenantkit: jobs: %w", err)
	}
	if k.Toggles, err = toggles.New(ctx, k.DB, toggles.Options{Logger: k.Logger}); err != nil {
		return fmt.Errorf("tenantkit: toggles: %w", err)
	}
	whOpts := cfg.Webhooks
	whOpts.SecretKey = k.SecretKey
	if k.Webhooks, err = webhooks.New(k.DB, whOpts); err != nil {
		return fmt.Errorf("tenantkit: webhooks: %w", err)
	}
	if err := k.Webhooks.RegisterJobs(k.Jobs); err != nil {
		return fmt.Errorf("tenantkit: webhooks: %w", err)
	}
	k.Entities = entities.New(k.DB)
	k.Rules = rules.New(k.DB)
	rulesOpts := cfg.Rules
	if rulesOpts.Signer == nil {
		// CALL_WEBHOOK calls are signed like deliveries, with the secrets
		// of the tenant's webhook registered for the call's URL.
		rulesOpts.Signer = k.Webhooks
	}
	if err := k.Rules.RegisterJobs(k.Jobs, rulesOpts); err != nil {
		return fmt.Errorf("tenantkit: rules: %w", err)
	}
	return nil
}

// Start starts the background workers (job engine, event delivery,
// periodic clean-ups). Register extra workers and subscriptions on
// k.Jobs, and open services that register their own (auth.Open with
// Config.Jobs), before calling it. The workers run until Close; cancelling
// ctx does not stop them.
func (k *Kit) Start(ctx context.Context) error {
	return k.Jobs.Start(ctx)
}

// Close stops the workers, waiting for running jobs until ctx ends (jobs
// cut short run again later), then closes the database if the Kit opened
// it.
func (k *Kit) Close(ctx context.Context) error {
	err := k.Jobs.Stop(ctx)
	if k.Webhooks != nil {
		k.Webhooks.Wait()
	}
	if k.Toggles != nil {
		err = errors.Join(err, k.Toggles.Close())
	}
	if k.ownsDB {
		err = errors.Join(err, k.DB.Close())
	}
	return err
}
