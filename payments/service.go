package payments

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// Options configure the service.
type Options struct {
	// Store is the storage; nil uses SQLStore.
	Store Store
	// Providers are the gateways sessions may use; nil holds the built-in
	// mock and mock_processing. Stripe is package stripeprovider's, which
	// package full adds; a host adds its own with Registry.Register.
	Providers *Registry
	// Credentials gives each tenant's provider credentials; nil reads the
	// environment (EnvCredentials).
	Credentials CredentialSource
	// Logger receives provider failures in full (callers see a vague
	// 502); nil is the database's logger.
	Logger *slog.Logger
	// IntegrationLog, when set, writes a line of the integration log for
	// each status change of a payment (info, in the change's transaction)
	// and each failed provider call (error). The Kit writes them under the
	// provider's gateway integration (gateway_<provider>).
	IntegrationLog func(ctx context.Context, q store.Querier, e IntegrationLogEntry) error
}

// IntegrationLogEntry is a payment's line of the integration log.
type IntegrationLogEntry struct {
	TenantID      string
	ProviderKey   string // the payment provider, whose gateway integration's log it is
	Level         string // info, warn or error
	Message       string
	Code          string // a machine-readable code; "" when none
	TransactionID string
	Payload       json.RawMessage // JSON details; nil when none
}

// Service is the payment gateways area.
type Service struct {
	db        *store.DB
	store     Store
	providers *Registry
	creds     CredentialSource
	logger    *slog.Logger
	// integrationLog is Options.IntegrationLog.
	integrationLog func(ctx context.Context, q store.Querier, e IntegrationLogEntry) error
	jobs           *jobs.Engine
	// batch group-commits the writes of webhooks.
	batch *store.Batcher
	// sessions group-commits new sessions' transactions and events
	// (writeSessions).
	sessions *store.Group[*Transaction]
	prepare  sync.Once
	locks    keyedMutex
	// holdRowLock says a provider call runs inside the transaction that
	// holds the payment's row: on an engine with concurrent writers
	// (PostgreSQL), where several processes may act on one payment. With a
	// single writer (SQLite, one process) the in-process lock serialises,
	// and the writer is not held during a provider call.
	holdRowLock bool
}

// New returns the service on db. Its tables are Migrations'.
// It starts nothing and reads nothing, and returns an error only for
// options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	s := &Service{db: db, store: opts.Store, providers: opts.Providers, creds: opts.Credentials, logger: opts.Logger,
		integrationLog: opts.IntegrationLog, batch: store.NewBatcher(db), holdRowLock: !db.Dialect().SingleWriter()}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	s.sessions = store.NewGroup(db, s.writeSessions)
	if s.providers == nil {
		s.providers = NewRegistry(NewMock(KeyMock), NewMock(KeyMockProcessing))
	}
	if s.creds == nil {
		s.creds = EnvCredentials{}
	}
	if s.logger == nil {
		s.logger = db.Logger()
	}
	return s, nil
}

// prepareWrites has the store prepare its frequent statements, once
// (SQLStore: the inserts of sessions and webhooks).
func (s *Service) prepareWrites(ctx context.Context) {
	s.prepare.Do(func() {
		if p, ok := s.store.(interface {
			PrepareWrites(ctx context.Context, db *store.DB)
		}); ok {
			p.PrepareWrites(ctx, s.db)
		}
	})
}

// Providers returns the registry of the gateways sessions may use.
func (s *Service) Providers() *Registry { return s.providers }

// HasProvider reports whether the service takes payments through the
// provider key.
func (s *Service) HasProvider(key string) bool {
	_, ok := s.providers.Get(key)
	return ok
}

// Errors of the service, besides the store's kinds.
var (
	// ErrUnknownProvider is a provider key no provider has (422 on
	// session create, 404 on a webhook).
	ErrUnknownProvider = errors.New("payments: unknown provider")
	// ErrProvider is a provider failure the caller cannot act on (502):
	// the cause is logged, never shown.
	ErrProvider = errors.New("payments: the payment provider failed")
)

// keyedMutex serialises work per key within the process.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	mu      sync.Mutex
	waiters int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.waiters++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.waiters--; e.waiters == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
