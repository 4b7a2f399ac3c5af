package identity

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the identity tables of the SQL store. Its line keeps
// the name "auth" (the package's former name) so that databases migrated
// before the move keep working.
var Migrations = store.Migrations{Line: "auth", FS: migrationsFS, Dir: "migrations"}

// Mailer delivers password-reset tokens. The standalone server's mailer
// logs them.
type Mailer interface {
	SendPasswordReset(ctx context.Context, email, token string) error
}

// Config configures the Service.
type Config struct {
	// SecretKey signs session tokens (HMAC-SHA256). Required, at least 32
	// bytes; changing it signs everyone out.
	SecretKey []byte
	// SessionTTL is how long a session token from Login lasts. Defaults
	// to 8 hours.
	SessionTTL time.Duration
	// ResetTTL is how long a password-reset token lasts. Defaults to 1 hour.
	ResetTTL time.Duration
	// CacheTTL is how long a verified credential is remembered before the
	// database is asked again. Changes made through this Service apply at
	// once; changes made by another process apply within CacheTTL.
	// Defaults to 5 seconds; negative disables the cache.
	CacheTTL time.Duration
	// Mailer receives password-reset tokens. Defaults to one that drops
	// them with a warning.
	Mailer Mailer
	// Jobs, when set, makes Open call RegisterJobs(Jobs), so that
	// password-reset mail is sent from a durable background job (see
	// RegisterJobs); Open must then run before Jobs.Start. A host that
	// calls RegisterJobs itself (the Kit's area loop) leaves it nil.
	// Without a job engine the mail is sent during the request.
	Jobs *jobs.Engine
	// Logger defaults to the store's logger.
	Logger *slog.Logger
	// Store holds the identity data. Defaults to NewSQLStore() over the
	// tables of Migrations; a host with its own storage passes its own
	// (identitytest.Run checks one).
	Store Store
}

// Service manages tenants, organizations, roles, users and API keys, and
// authenticates callers.
//
// Management methods take the acting identity and enforce the rules that
// are the identity model's own: tenants are managed by super admins only;
// a caller manages only its own tenant unless it is a super admin; only
// super admins grant super-admin roles. Feature checks (who may manage
// roles at all) are the HTTP layer's, from the route table.
type Service struct {
	db     *store.DB // transactions, locks and the clock
	store  Store
	cfg    Config
	logger *slog.Logger
	jobs   *jobs.Engine // set by RegisterJobs; reset mail goes through it

	mu    sync.RWMutex
	cache map[cacheKey]cached
}

// cacheKey identifies a credential in the cache by its kind ('k' API key,
// 't' session token) and SHA-256, so the cache never holds a secret.
type cacheKey struct {
	kind byte
	sum  [sha256.Size]byte
}

func keyOf(kind byte, credential string) cacheKey {
	return cacheKey{kind: kind, sum: sha256.Sum256([]byte(credential))}
}

type cached struct {
	id    *Identity
	until time.Time
}

// maxCached bounds the credential cache; it is emptied when full.
const maxCached = 10_000

// New returns the service over db without touching the database: the
// host migrates Migrations() (unless its Store keeps the data elsewhere)
// and calls RegisterJobs before the job engine starts. No goroutine
// starts.
func New(db *store.DB, cfg Config) (*Service, error) {
	if len(cfg.SecretKey) < 32 {
		return nil, errors.New("identity: SecretKey must be at least 32 bytes")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.ResetTTL <= 0 {
		cfg.ResetTTL = time.Hour
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = db.Logger()
	}
	if cfg.Mailer == nil {
		cfg.Mailer = dropMailer{cfg.Logger}
	}
	if cfg.Store == nil {
		cfg.Store = NewSQLStore()
	}
	return &Service{db: db, store: cfg.Store, cfg: cfg, logger: cfg.Logger, cache: map[cacheKey]cached{}}, nil
}

// Open is New, then the migrations, then RegisterJobs(cfg.Jobs) when
// cfg.Jobs is set: the one call an embedder needs.
func Open(ctx context.Context, db *store.DB, cfg Config) (*Service, error) {
	s, err := New(db, cfg)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, s.Migrations()...); err != nil {
		return nil, err
	}
	if cfg.Jobs != nil {
		if err := s.RegisterJobs(cfg.Jobs); err != nil {
			return nil, err
		}
	}
	return s, nil
}

type dropMailer struct{ logger *slog.Logger }

func (m dropMailer) SendPasswordReset(ctx context.Context, email, _ string) error {
	m.logger.WarnContext(ctx, "identity: no mailer configured; password reset token dropped")
	return nil
}

// tx runs fn in a transaction and forgets cached credentials once it
// commits: roles, keys or tenants may have changed.
func (s *Service) tx(ctx context.Context, fn func(tx *store.Tx) error) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		tx.AfterCommit(s.forget)
		return fn(tx)
	})
}

func (s *Service) forget() {
	s.mu.Lock()
	clear(s.cache)
	s.mu.Unlock()
}

// checkText validates a required name-like field.
func checkText(v *store.ValidationError, field, value string, max int) string {
	value = strings.TrimSpace(value)
	switch {
	case value == "":
		v.Add(field, "is required")
	case utf8.RuneCountInString(value) > max:
		v.Add(field, fmt.Sprintf("must be at most %d characters", max))
	}
	return value
}

// requireSuperAdmin fails unless actor is a super admin.
func requireSuperAdmin(actor *Identity) error {
	if !actor.IsSuperAdmin {
		return store.Errorf(store.ErrForbidden, "super admin only")
	}
	return nil
}
