package ratelimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// fromEnv runs ConfigFromEnv over vars and returns what it logged.
func fromEnv(t *testing.T, vars map[string]string) (Config, string, error) {
	t.Helper()
	var logs bytes.Buffer
	cfg, err := ConfigFromEnv(func(k string) string { return vars[k] }, slog.New(slog.NewTextHandler(&logs, nil)))
	return cfg, logs.String(), err
}

func TestConfigDefaults(t *testing.T) {
	is := is.New(t)
	cfg, logs, err := fromEnv(t, nil)
	is.NoErr(err)
	is.Equal(logs, "")
	is.Equal(cfg, DefaultConfig())
	is.True(cfg.Enabled)
	is.Equal(cfg.Strategy, StrategyMemory)
	is.Equal(cfg.KeyPrefix, "rl")
	is.Equal(cfg.TrustProxyDepth, 0)
	m := time.Minute
	is.Equal(cfg.Auth, AuthRules{
		Login:           Rule{5, m, m},
		LoginIP:         Rule{20, m, m},
		Reset:           Rule{3, m, m},
		ResetIP:         Rule{10, m, m},
		ResetConfirm:    Rule{5, 5 * m, 0},
		TwoFactorVerify: Rule{5, 5 * m, 0},
	})
}

func TestConfigFromEveryVariable(t *testing.T) {
	is := is.New(t)
	vars := map[string]string{
		"RATE_LIMIT_ENABLED":            "true",
		"RATE_LIMIT_STRATEGY":           "redis",
		"REDIS_URL":                     "redis://127.0.0.1:6379/2",
		"RATE_LIMIT_KEY_PREFIX":         "myapp",
		"RATE_LIMIT_TRUST_PROXY_DEPTH":  "2",
		"APP_TEST_MODE":                 "1",
		"APP_TEST_AUTH_RATE_LIMIT_MODE": "opt-in",
	}
	names := []string{"LOGIN", "LOGIN_IP", "RESET", "RESET_IP", "RESET_CONFIRM", "2FA_VERIFY"}
	for i, n := range names {
		vars["RATE_LIMIT_"+n+"_POINTS"] = fmt.Sprint(10 + i)
		vars["RATE_LIMIT_"+n+"_DURATION"] = fmt.Sprint(30 + i)
		vars["RATE_LIMIT_"+n+"_BLOCK_DURATION"] = fmt.Sprint(90 + i)
	}
	cfg, logs, err := fromEnv(t, vars)
	is.NoErr(err)
	is.Equal(logs, "")
	is.True(cfg.Enabled)
	is.Equal(cfg.Strategy, StrategyRedis)
	is.Equal(cfg.RedisURL, "redis://127.0.0.1:6379/2")
	is.Equal(cfg.KeyPrefix, "myapp")
	is.Equal(cfg.TrustProxyDepth, 2)
	is.True(cfg.AuthOptIn)
	s := time.Second
	is.Equal(cfg.Auth, AuthRules{
		Login:           Rule{10, 30 * s, 90 * s},
		LoginIP:         Rule{11, 31 * s, 91 * s},
		Reset:           Rule{12, 32 * s, 92 * s},
		ResetIP:         Rule{13, 33 * s, 93 * s},
		ResetConfirm:    Rule{14, 34 * s, 0}, // the spec gives these two no block
		TwoFactorVerify: Rule{15, 35 * s, 0},
	})
}

func TestConfigSwitches(t *testing.T) {
	for _, tc := range []struct {
		vars    map[string]string
		enabled bool
		optIn   bool
	}{
		{map[string]string{"RATE_LIMIT_ENABLED": "false"}, false, false},
		{map[string]string{"APP_INTEGRATION_TEST": "true"}, false, false},
		{map[string]string{"RATE_LIMIT_ENABLED": "true", "APP_INTEGRATION_TEST": "true"}, false, false},
		{map[string]string{"APP_INTEGRATION_TEST": "false"}, true, false},
		{map[string]string{"APP_TEST_MODE": "1"}, true, false},
		{map[string]string{"APP_TEST_AUTH_RATE_LIMIT_MODE": "opt-in"}, true, false},
		{map[string]string{"APP_TEST_MODE": "0", "APP_TEST_AUTH_RATE_LIMIT_MODE": "opt-in"}, true, false},
		{map[string]string{"APP_TEST_MODE": "1", "APP_TEST_AUTH_RATE_LIMIT_MODE": "opt-in"}, true, true},
		// With limiting off, the redis strategy needs no URL.
		{map[string]string{"APP_INTEGRATION_TEST": "true", "RATE_LIMIT_STRATEGY": "redis"}, false, false},
	} {
		cfg, _, err := fromEnv(t, tc.vars)
		if err != nil || cfg.Enabled != tc.enabled || cfg.AuthOptIn != tc.optIn {
			t.Errorf("%v: enabled %v optIn %v err %v; want enabled %v optIn %v", tc.vars, cfg.Enabled, cfg.AuthOptIn, err, tc.enabled, tc.optIn)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, vars := range []map[string]string{
		{"RATE_LIMIT_STRATEGY": "memcached"},
		{"RATE_LIMIT_STRATEGY": "redis"}, // no REDIS_URL
		{"RATE_LIMIT_ENABLED": "maybe"},
	} {
		if _, _, err := fromEnv(t, vars); err == nil {
			t.Errorf("%v: no error", vars)
		}
	}
}

func TestConfigInvalidValuesWarnAndKeepDefaults(t *testing.T) {
	is := is.New(t)
	for _, depth := range []string{"-1", "two", "1.5"} {
		cfg, logs, err := fromEnv(t, map[string]string{"RATE_LIMIT_TRUST_PROXY_DEPTH": depth})
		is.NoErr(err)
		is.Equal(cfg.TrustProxyDepth, 0)
		is.True(strings.Contains(logs, "RATE_LIMIT_TRUST_PROXY_DEPTH")) // warned
	}
	cfg, logs, err := fromEnv(t, map[string]string{
		"RATE_LIMIT_LOGIN_POINTS":         "-5",
		"RATE_LIMIT_LOGIN_DURATION":       "0",
		"RATE_LIMIT_LOGIN_BLOCK_DURATION": "soon",
		"RATE_LIMIT_RESET_POINTS":         "0", // zero points is valid: refuse every request
	})
	is.NoErr(err)
	is.Equal(cfg.Auth.Login, DefaultConfig().Auth.Login)
	is.Equal(cfg.Auth.Reset.Points, 0)
	for _, name := range []string{"RATE_LIMIT_LOGIN_POINTS", "RATE_LIMIT_LOGIN_DURATION", "RATE_LIMIT_LOGIN_BLOCK_DURATION"} {
		is.True(strings.Contains(logs, name))
	}
}
