package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
)

// AuthEndpoint names an authentication endpoint with its own limits.
type AuthEndpoint int

// The rate-limited authentication endpoints.
const (
	// Login is POST /login: an IP layer and an account layer.
	Login AuthEndpoint = iota
	// PasswordReset is POST /reset: an IP layer and an account layer.
	PasswordReset
	// PasswordResetConfirm is POST /reset/confirm: IP layer only (the
	// request carries no email).
	PasswordResetConfirm
)

// layers returns the endpoint's IP-layer rule and key prefix and, where it
// has one, its account-layer rule and key prefix.
func (e AuthEndpoint) layers(r AuthRules) (ip Rule, ipPrefix string, account Rule, accountPrefix string) {
	switch e {
	case Login:
		return r.LoginIP, "login-ip", r.Login, "login"
	case PasswordReset:
		return r.ResetIP, "reset-ip", r.Reset, "reset"
	default:
		return r.ResetConfirm, "reset-confirm", Rule{}, ""
	}
}

// OptInHeader re-enables the authentication limits for one request when
// Config.AuthOptIn is set.
const OptInHeader = "X-App-Test-Rate-Limit"

// Policy applies a Config with a Limiter: it builds keys, finds the client
// address, and turns refusals into *LimitedError. Every failure of the
// limiter is logged and lets the request through (fail open). A nil *Policy
// limits nothing.
type Policy struct {
	cfg     Config
	limiter Limiter
	logger  *slog.Logger
	closer  func() error
	observe func(prefix, decision string)
}

// Decisions of Check, as Observe reports them.
const (
	DecisionAllowed = "allowed"
	DecisionLimited = "limited"
	// DecisionError is a limiter failure: the request was let through.
	DecisionError = "error"
)

// Observe has fn told of every decision Check takes: the limit's prefix
// ("login", "payments-webhook") and DecisionAllowed, DecisionLimited or
// DecisionError. Call it before the policy is used; fn must be fast and
// safe for concurrent use (a metrics counter).
func (p *Policy) Observe(fn func(prefix, decision string)) { p.observe = fn }

// NewPolicy applies cfg with limiter (nil: a new Memory limiter, whatever
// cfg.Strategy says). logger receives limiter failures (nil:
// slog.Default()).
func NewPolicy(cfg Config, limiter Limiter, logger *slog.Logger) *Policy {
	if limiter == nil {
		limiter = NewMemory(MemoryOptions{})
	}
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "rl"
	}
	return &Policy{cfg: cfg, limiter: limiter, logger: logger}
}

// Open builds the limiter cfg.Strategy names (OpenRedis for redis) and
// returns the Policy applying it. Close the Policy to close the limiter.
func Open(cfg Config, logger *slog.Logger) (*Policy, error) {
	if cfg.Strategy != StrategyRedis || !cfg.Enabled {
		return NewPolicy(cfg, nil, logger), nil
	}
	l, err := OpenRedis(cfg.RedisURL, RedisOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	p := NewPolicy(cfg, l, logger)
	p.closer = l.Close
	return p, nil
}

// Close releases the limiter if Open created it.
func (p *Policy) Close() error {
	if p == nil || p.closer == nil {
		return nil
	}
	return p.closer()
}

// Config returns the configuration the policy applies.
func (p *Policy) Config() Config { return p.cfg }

// Enabled reports whether the policy limits anything.
func (p *Policy) Enabled() bool { return p != nil && p.cfg.Enabled }

// ClientKey is the client part of a key: the trusted client address, or
// SharedBucket when there is none.
func (p *Policy) ClientKey(r *http.Request) string {
	if ip := ClientIP(r, p.cfg.TrustProxyDepth); ip != "" {
		return ip
	}
	return SharedBucket
}

// Check counts one request against "<KeyPrefix>:<prefix>:<subject>" under
// rule. It returns a *LimitedError when the request must be refused, and
// nil otherwise, including when the limiter fails (logged).
func (p *Policy) Check(ctx context.Context, rule Rule, prefix, subject string) error {
	if !p.Enabled() {
		return nil
	}
	res, err := p.limiter.Consume(ctx, p.key(prefix, subject), rule)
	if err != nil {
		if ctx.Err() == nil {
			p.logger.WarnContext(ctx, "ratelimit: limiter failed; letting the request through", "prefix", prefix, "err", err)
		}
		p.decided(prefix, DecisionError)
		return nil
	}
	if !res.Allowed {
		p.decided(prefix, DecisionLimited)
		return &LimitedError{Result: res}
	}
	p.decided(prefix, DecisionAllowed)
	return nil
}

func (p *Policy) decided(prefix, decision string) {
	if p.observe != nil {
		p.observe(prefix, decision)
	}
}

// CheckAuth applies the IP layer of endpoint to r. Call it first, before
// reading the body.
func (p *Policy) CheckAuth(r *http.Request, endpoint AuthEndpoint) error {
	if !p.authActive(r) {
		return nil
	}
	rule, prefix, _, _ := endpoint.layers(p.cfg.Auth)
	return p.Check(r.Context(), rule, prefix, p.ClientKey(r))
}

// CheckAuthAccount applies the account layer of endpoint (keyed by client
// address and the email's hash) to r. Endpoints without an account layer,
// and an empty email, pass.
func (p *Policy) CheckAuthAccount(r *http.Request, endpoint AuthEndpoint, email string) error {
	if !p.authActive(r) || strings.TrimSpace(email) == "" {
		return nil
	}
	_, _, rule, prefix := endpoint.layers(p.cfg.Auth)
	if prefix == "" {
		return nil
	}
	return p.Check(r.Context(), rule, prefix, p.accountSubject(r, email))
}

// ResetAuthAccount forgets the account-layer count of endpoint for r and
// email, after a successful sign-in. It is best effort: a failure is logged
// and never fails the request.
func (p *Policy) ResetAuthAccount(r *http.Request, endpoint AuthEndpoint, email string) {
	if !p.Enabled() || strings.TrimSpace(email) == "" {
		return
	}
	_, _, _, prefix := endpoint.layers(p.cfg.Auth)
	if prefix == "" {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if err := p.limiter.Reset(ctx, p.key(prefix, p.accountSubject(r, email))); err != nil {
		p.logger.WarnContext(ctx, "ratelimit: reset failed", "prefix", prefix, "err", err)
	}
}

// accountSubject is "<client>:<sha256 of the email>": the raw email never
// appears in a key. The email is trimmed and lower-cased first, so one
// account has one counter however it is typed.
func (p *Policy) accountSubject(r *http.Request, email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return p.ClientKey(r) + ":" + hex.EncodeToString(sum[:])
}

// authActive reports whether the authentication limits apply to r.
func (p *Policy) authActive(r *http.Request) bool {
	if !p.Enabled() {
		return false
	}
	return !p.cfg.AuthOptIn || strings.EqualFold(strings.TrimSpace(r.Header.Get(OptInHeader)), "on")
}

func (p *Policy) key(prefix, subject string) string {
	return p.cfg.KeyPrefix + ":" + prefix + ":" + subject
}

// AsLimited reports whether err is a refusal by a limit, and returns it.
func AsLimited(err error) (*LimitedError, bool) {
	var le *LimitedError
	ok := errors.As(err, &le)
	return le, ok
}
