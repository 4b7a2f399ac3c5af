package identity

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/vcache"
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
	// SendPasswordReset sends token, the secret a reset is confirmed
	// with, to email. An error is logged; the request still succeeds, so
	// the answer never tells whether the account exists.
	SendPasswordReset(ctx context.Context, email, token string) error
}

// Options configures the Service.
type Options struct {
	// SecretKey signs session tokens (HMAC-SHA256). Required, at least 32
	// bytes; changing it signs everyone out.
	SecretKey []byte
	// SessionTTL is how long a session token from Login lasts. Defaults
	// to 8 hours.
	SessionTTL time.Duration
	// ResetTTL is how long a password-reset token lasts. Defaults to 1 hour.
	ResetTTL time.Duration
	// CacheTTL bounds how long a verified credential is remembered. It
	// bounds only what the credentials' version counter does not carry:
	// a change made directly in the database (not through a Service, and
	// not recorded with CredentialsChanged) reaches a process within
	// CacheTTL. A change made through any Service on the database, in any
	// process, is honoured by every request that starts after it commits
	// (see the package doc, "Revocation"). Defaults to 5 seconds;
	// negative disables the cache.
	CacheTTL time.Duration
	// Mailer receives password-reset tokens. Defaults to one that drops
	// them with a warning.
	Mailer Mailer
	// Logger defaults to the store's logger.
	Logger *slog.Logger
	// Store holds the identity data. Defaults to NewSQLStore() over the
	// tables of Migrations; a host with its own storage passes its own
	// (identitytest.Run checks one).
	Store Store
}

// Config is the former name of Options.
//
// Deprecated: use Options.
type Config = Options

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
	cfg    Options
	logger *slog.Logger
	jobs   *jobs.Engine // set by RegisterJobs; reset mail goes through it

	// creds caches verified credentials by digest, kept fresh by the
	// credentials' version counter (credentials.go); nil when
	// Options.CacheTTL is negative.
	creds *vcache.Cache[cacheKey, *cached]

	// deleteHooks run in the transaction of DeleteUser and DeleteRole
	// (OnDelete).
	deleteHooks []DeleteHook
	// acks registers this Service among the processes a revocation
	// waits for (acks.go); nil unless it caches credentials on a database
	// other processes may share.
	acks *vcache.Acks
}

// cacheKey identifies a credential in the cache by its kind ('k' API key,
// 't' session token) and SHA-256, so the cache never holds a secret.
type cacheKey struct {
	kind byte
	sum  [sha256.Size]byte
}

// keyOf is the cache key of a credential. A credential of up to
// keyOfStack bytes (an API key; most session tokens) is hashed from a copy
// on the stack: converting it with []byte(credential) allocates beyond 32
// bytes, once per authenticated request.
func keyOf(kind byte, credential string) cacheKey {
	if len(credential) <= keyOfStack {
		var buf [keyOfStack]byte
		return cacheKey{kind: kind, sum: sha256.Sum256(append(buf[:0], credential...))}
	}
	return cacheKey{kind: kind, sum: sha256.Sum256([]byte(credential))}
}

// keyOfStack is the longest credential keyOf hashes without an allocation.
const keyOfStack = 512

// cached is a verified credential's identity and when it must be
// verified again whatever the version counter says (Options.CacheTTL).
type cached struct {
	id    *Identity
	until time.Time
}

// maxCached bounds the credential cache; it is emptied when full.
const maxCached = 10_000

// New returns the service over db without touching the database: the
// host migrates Migrations() (unless its Store keeps the data elsewhere)
// and calls RegisterJobs before the job engine starts, or lets a Kit do
// both. It fails only on options it can check up front (a SecretKey
// shorter than 32 bytes). On PostgreSQL the credential cache subscribes
// to the DB's version listener (store.DB.WatchVersions), which starts it
// unless another cache of the DB already has: one goroutine and one
// connection per DB, shared by every area.
func New(db *store.DB, opts Options) (*Service, error) {
	cfg := opts
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
	s := &Service{db: db, store: cfg.Store, cfg: cfg, logger: cfg.Logger}
	if cfg.CacheTTL > 0 {
		s.creds = vcache.New[cacheKey, *cached](db, credentialsCounter, credentialsCheck, maxCached)
		if db.Dialect().Notifies() {
			s.acks = vcache.NewAcks(db, serversTable, credentialsCounter, s.creds.Invalidate, cfg.Logger, "identity")
		}
	}
	return s, nil
}

type dropMailer struct{ logger *slog.Logger }

func (m dropMailer) SendPasswordReset(ctx context.Context, email, _ string) error {
	m.logger.WarnContext(ctx, "identity: no mailer configured; password reset token dropped")
	return nil
}

// tx runs fn in a transaction that may change what existing credentials
// grant (a deletion, a role's access, a password) and, when fn succeeds,
// records it with CredentialsChanged: once the transaction commits, every
// process refuses what it took away. The counter is bumped last, so that
// concurrent identity writes wait on its row only for their commit.
func (s *Service) tx(ctx context.Context, fn func(tx *store.Tx) error) error {
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return s.CredentialsChanged(ctx, tx)
	})
}

// createTx runs fn, which only adds rows (a tenant, organization, role,
// API key or user), in a transaction that leaves the credentials' version
// alone: the cache holds only credentials that were verified, and a new
// row changes none of their identities, so no process need drop them.
func (s *Service) createTx(ctx context.Context, fn func(tx *store.Tx) error) error {
	return s.db.Tx(ctx, fn)
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
