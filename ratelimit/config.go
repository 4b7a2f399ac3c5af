package ratelimit

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Strategy names where counters are kept.
type Strategy string

// The strategies RATE_LIMIT_STRATEGY accepts.
const (
	// StrategyMemory counts in each process (counters are lost on restart).
	StrategyMemory Strategy = "memory"
	// StrategyRedis counts in Redis, shared by every process; during a Redis
	// outage each process counts in memory.
	StrategyRedis Strategy = "redis"
)

// AuthRules are the limits of the authentication endpoints. The IP layer
// is keyed by client address; the account layer by client address and the
// SHA-256 hash of the email.
type AuthRules struct {
	Login, LoginIP Rule // sign-in: per client address and email hash, and per client address
	Reset, ResetIP Rule // password-reset requests, likewise
	ResetConfirm   Rule // password-reset confirmations, per client address
	// TwoFactorVerify is read from the environment but reserved: no
	// endpoint uses it yet.
	TwoFactorVerify Rule
}

// Config is how a server limits requests. Start from DefaultConfig or
// ConfigFromEnv; the zero value disables limiting.
type Config struct {
	// Enabled is the master switch (RATE_LIMIT_ENABLED, off when
	// APP_INTEGRATION_TEST is true).
	Enabled bool
	// Strategy selects the backend Open builds (RATE_LIMIT_STRATEGY).
	Strategy Strategy
	// RedisURL is the Redis of StrategyRedis (REDIS_URL).
	RedisURL string
	// KeyPrefix starts every key (RATE_LIMIT_KEY_PREFIX, default "rl").
	KeyPrefix string
	// TrustProxyDepth is the number of trusted proxies in front of the
	// server (RATE_LIMIT_TRUST_PROXY_DEPTH); see ClientIP.
	TrustProxyDepth int
	// Auth are the authentication-endpoint limits.
	Auth AuthRules
	// AuthOptIn makes the authentication limits inert unless a request
	// sends the header "x-app-test-rate-limit: on" (APP_TEST_MODE=1 with
	// APP_TEST_AUTH_RATE_LIMIT_MODE=opt-in), for test suites that sign in
	// often.
	AuthOptIn bool
}

// DefaultConfig is the default configuration: enabled, in memory, prefix
// "rl", no trusted proxy, and the authentication limits per client and
// window: login 5/60 s (block 60 s), login-ip 20/60 s (block 60 s), reset
// 3/60 s (block 60 s), reset-ip 10/60 s (block 60 s), reset-confirm 5/300 s
// and 2fa-verify 5/300 s (no block).
func DefaultConfig() Config {
	minute := time.Minute
	return Config{
		Enabled:   true,
		Strategy:  StrategyMemory,
		KeyPrefix: "rl",
		Auth: AuthRules{
			Login:           Rule{Points: 5, Duration: minute, BlockDuration: minute},
			LoginIP:         Rule{Points: 20, Duration: minute, BlockDuration: minute},
			Reset:           Rule{Points: 3, Duration: minute, BlockDuration: minute},
			ResetIP:         Rule{Points: 10, Duration: minute, BlockDuration: minute},
			ResetConfirm:    Rule{Points: 5, Duration: 5 * minute},
			TwoFactorVerify: Rule{Points: 5, Duration: 5 * minute},
		},
	}
}

// ConfigFromEnv reads the rate-limit variables through getenv (os.Getenv in a
// server):
//
//	RATE_LIMIT_ENABLED               true|false (default true)
//	RATE_LIMIT_STRATEGY              memory|redis (default memory); anything else is an error
//	REDIS_URL                        required by the redis strategy
//	RATE_LIMIT_KEY_PREFIX            default "rl"
//	RATE_LIMIT_TRUST_PROXY_DEPTH     a whole number ≥ 0 (default 0); anything else warns and uses 0
//	RATE_LIMIT_<NAME>_POINTS         a whole number ≥ 0
//	RATE_LIMIT_<NAME>_DURATION       seconds > 0
//	RATE_LIMIT_<NAME>_BLOCK_DURATION seconds ≥ 0
//	APP_INTEGRATION_TEST=true        disables all limiting
//	APP_TEST_MODE=1 with APP_TEST_AUTH_RATE_LIMIT_MODE=opt-in sets AuthOptIn
//
// NAME is LOGIN, LOGIN_IP, RESET, RESET_IP, RESET_CONFIRM or 2FA_VERIFY
// (the last two have no block and read no _BLOCK_DURATION). A rule value that is not a valid number
// warns and keeps the default. Warnings go to logger (nil: slog.Default()).
func ConfigFromEnv(getenv func(string) string, logger *slog.Logger) (Config, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cfg := DefaultConfig()
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }

	if v := env("RATE_LIMIT_ENABLED"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("RATE_LIMIT_ENABLED: want true or false, got %q", v)
		}
		cfg.Enabled = on
	}
	if env("APP_INTEGRATION_TEST") == "true" {
		cfg.Enabled = false
	}
	switch s := Strategy(strings.ToLower(env("RATE_LIMIT_STRATEGY"))); s {
	case "", StrategyMemory:
	case StrategyRedis:
		cfg.Strategy = s
		cfg.RedisURL = env("REDIS_URL")
		if cfg.RedisURL == "" && cfg.Enabled {
			return Config{}, fmt.Errorf("RATE_LIMIT_STRATEGY=redis needs REDIS_URL")
		}
	default:
		return Config{}, fmt.Errorf("RATE_LIMIT_STRATEGY: want memory or redis, got %q", s)
	}
	if v := env("RATE_LIMIT_KEY_PREFIX"); v != "" {
		cfg.KeyPrefix = v
	}
	if v := env("RATE_LIMIT_TRUST_PROXY_DEPTH"); v != "" {
		depth, err := strconv.Atoi(v)
		if err != nil || depth < 0 {
			logger.Warn("RATE_LIMIT_TRUST_PROXY_DEPTH is not a whole number ≥ 0; using 0 (X-Forwarded-For ignored)", "value", v)
			depth = 0
		}
		cfg.TrustProxyDepth = depth
	}
	rules := []struct {
		name     string
		rule     *Rule
		hasBlock bool
	}{
		{"LOGIN", &cfg.Auth.Login, true},
		{"LOGIN_IP", &cfg.Auth.LoginIP, true},
		{"RESET", &cfg.Auth.Reset, true},
		{"RESET_IP", &cfg.Auth.ResetIP, true},
		{"RESET_CONFIRM", &cfg.Auth.ResetConfirm, false},
		{"2FA_VERIFY", &cfg.Auth.TwoFactorVerify, false},
	}
	for _, r := range rules {
		prefix := "RATE_LIMIT_" + r.name
		if n, ok := envNumber(env, logger, prefix+"_POINTS", 0); ok {
			r.rule.Points = int(n)
		}
		if n, ok := envNumber(env, logger, prefix+"_DURATION", 1); ok {
			r.rule.Duration = time.Duration(n) * time.Second
		}
		if !r.hasBlock {
			continue
		}
		if n, ok := envNumber(env, logger, prefix+"_BLOCK_DURATION", 0); ok {
			r.rule.BlockDuration = time.Duration(n) * time.Second
		}
	}
	if env("APP_TEST_MODE") == "1" && strings.EqualFold(env("APP_TEST_AUTH_RATE_LIMIT_MODE"), "opt-in") {
		cfg.AuthOptIn = true
	}
	return cfg, nil
}

// maxEnvNumber bounds rule numbers (a year of seconds is plenty, and keeps
// durations far from overflowing).
const maxEnvNumber = 366 * 24 * 3600

// envNumber reads a whole number ≥ least from the variable name; a value
// that is not one warns and reports ok false (keep the default).
func envNumber(env func(string) string, logger *slog.Logger, name string, least int64) (int64, bool) {
	v := env(name)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least || n > maxEnvNumber {
		logger.Warn(fmt.Sprintf("%s must be a whole number from %d to %d; using the default", name, least, maxEnvNumber), "value", v)
		return 0, false
	}
	return n, true
}
