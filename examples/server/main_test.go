package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// bootstrapKey is the fixed BOOTSTRAP_API_KEY of the tests.
const bootstrapKey = "tk_testboot.0123456789abcdef0123456789abcdef"

// TestServer runs the server on SQLite: health, authentication, a write,
// and a clean shutdown.
func TestServer(t *testing.T) {
	t.Parallel()
	scenario(t, map[string]string{"DATA_DIR": t.TempDir()})
}

// TestServerPostgres is TestServer on a fresh PostgreSQL schema. It is
// skipped unless TENANTKIT_TEST_POSTGRES_URL is set.
func TestServerPostgres(t *testing.T) {
	t.Parallel()
	dbURL := storetest.IsolatedPostgresURL(t)
	scenario(t, map[string]string{"DATA_DIR": t.TempDir(), "DATABASE_URL": dbURL})
}

func scenario(t *testing.T, env map[string]string) {
	env["BOOTSTRAP_API_KEY"] = bootstrapKey
	s := start(t, env)

	var me struct {
		TenantID     string `json:"tenantId"`
		IsSuperAdmin bool   `json:"isSuperAdmin"`
	}
	if code := s.do(t, "GET", "/api/auth/me", bootstrapKey, nil, &me); code != http.StatusOK {
		t.Fatalf("GET /api/auth/me with the bootstrap key: status %d, want 200", code)
	}
	if !me.IsSuperAdmin || me.TenantID == "" {
		t.Fatalf("GET /api/auth/me: %+v, want a super admin of the default tenant", me)
	}

	var unauth map[string]any
	if code := s.do(t, "GET", "/api/auth/me", "", nil, &unauth); code != http.StatusUnauthorized {
		t.Fatalf("GET /api/auth/me without a key: status %d, want 401", code)
	}
	if len(unauth) != 1 || unauth["error"] != "Unauthorized" {
		t.Fatalf("GET /api/auth/me without a key: body %v, want {\"error\":\"Unauthorized\"}", unauth)
	}

	var created struct {
		ID string `json:"id"`
	}
	if code := s.do(t, "POST", "/api/directory/tenants", bootstrapKey, map[string]string{"name": "Acme"}, &created); code != http.StatusCreated {
		t.Fatalf("POST /api/directory/tenants: status %d, want 201", code)
	}
	if created.ID == "" {
		t.Fatal("POST /api/directory/tenants: no id in the response")
	}
	if n := s.tenantCount(t); n != 2 {
		t.Fatalf("tenants: total %d, want 2 (Default and Acme)", n)
	}

	s.stop(t)
}

// TestRestart restarts on the same DATA_DIR: the secret key file and the
// bootstrap key carry over and no second default tenant appears.
func TestRestart(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATA_DIR": t.TempDir(), "BOOTSTRAP_API_KEY": bootstrapKey}
	keyPath := filepath.Join(env["DATA_DIR"], "secret.key")

	s := start(t, env)
	if strings.Contains(s.stdout.String(), "Super-admin API key") {
		t.Errorf("a key was generated although BOOTSTRAP_API_KEY is set:\n%s", s.stdout)
	}
	before := s.tenantCount(t)
	s.stop(t)

	key1, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(keyPath); err != nil {
		t.Fatal(err)
	} else if info.Mode().Perm() != 0o600 {
		t.Fatalf("secret.key: mode %v, want 0600", info.Mode().Perm())
	}
	if len(bytes.TrimSpace(key1)) != 64 {
		t.Fatalf("secret.key holds %q, want 64 hex characters", key1)
	}

	s = start(t, env)
	if code := s.do(t, "GET", "/api/auth/me", bootstrapKey, nil, nil); code != http.StatusOK {
		t.Fatalf("after restart, GET /api/auth/me with the bootstrap key: status %d, want 200", code)
	}
	if after := s.tenantCount(t); after != before {
		t.Fatalf("after restart: %d tenants, want %d (no second default tenant)", after, before)
	}
	s.stop(t)

	key2, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key1, key2) {
		t.Fatal("secret.key changed across a restart")
	}
}

// TestGeneratedKey starts without BOOTSTRAP_API_KEY: the first start prints
// a working key, the second prints none.
func TestGeneratedKey(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATA_DIR": t.TempDir()}

	s := start(t, env)
	m := regexp.MustCompile(`Super-admin API key \(shown once\): (\S+)`).FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("first start printed no API key:\n%s", s.stdout)
	}
	key := m[1]
	var me struct {
		IsSuperAdmin bool `json:"isSuperAdmin"`
	}
	if code := s.do(t, "GET", "/api/auth/me", key, nil, &me); code != http.StatusOK || !me.IsSuperAdmin {
		t.Fatalf("GET /api/auth/me with the generated key: status %d, %+v; want 200 and a super admin", code, me)
	}
	s.stop(t)

	s = start(t, env)
	if strings.Contains(s.stdout.String(), "Super-admin API key") {
		t.Fatalf("second start printed a key again:\n%s", s.stdout)
	}
	if code := s.do(t, "GET", "/api/auth/me", key, nil, nil); code != http.StatusOK {
		t.Fatalf("after restart, GET /api/auth/me with the generated key: status %d, want 200", code)
	}
	s.stop(t)
}

// TestAdminUserAndReset signs in as ADMIN_EMAIL and resets the password
// with the token the server logs.
func TestAdminUserAndReset(t *testing.T) {
	t.Parallel()
	const email = "admin@example.com"
	s := start(t, map[string]string{"DATA_DIR": t.TempDir(), "ADMIN_EMAIL": email, "ADMIN_PASSWORD": "first-password"})

	login := func(password string) (string, int) {
		var out struct {
			OK    bool   `json:"ok"`
			Token string `json:"token"`
		}
		code := s.do(t, "POST", "/api/login", "", map[string]string{"email": email, "password": password}, &out)
		return out.Token, code
	}
	token, code := login("first-password")
	if code != http.StatusOK || token == "" {
		t.Fatalf("POST /api/login: status %d, token %q", code, token)
	}
	var me struct {
		IsSuperAdmin bool `json:"isSuperAdmin"`
	}
	if code := s.do(t, "GET", "/api/auth/me", "Bearer "+token, nil, &me); code != http.StatusOK || !me.IsSuperAdmin {
		t.Fatalf("GET /api/auth/me with the session token: status %d, %+v", code, me)
	}

	if code := s.do(t, "POST", "/api/reset", "", map[string]string{"email": email}, nil); code != http.StatusOK {
		t.Fatalf("POST /api/reset: status %d", code)
	}
	logged := regexp.MustCompile(`msg="password reset requested" email=` + regexp.QuoteMeta(email) + ` token=(\S+)`)
	var resetToken string
	for deadline := time.Now().Add(5 * time.Second); resetToken == ""; time.Sleep(20 * time.Millisecond) {
		if m := logged.FindStringSubmatch(s.stderr.String()); m != nil {
			resetToken = m[1]
		} else if time.Now().After(deadline) {
			t.Fatal("the reset token was not logged within 5s")
		}
	}
	body := map[string]string{"token": resetToken, "password": "second-password"}
	if code := s.do(t, "POST", "/api/reset/confirm", "", body, nil); code != http.StatusOK {
		t.Fatalf("POST /api/reset/confirm: status %d", code)
	}
	if _, code := login("second-password"); code != http.StatusOK {
		t.Fatalf("login with the new password: status %d", code)
	}
	s.stop(t)
}

// TestRateLimitFromEnv checks that the server applies the RATE_LIMIT_*
// variables and the test switches.
func TestRateLimitFromEnv(t *testing.T) {
	t.Parallel()
	confirm := func(s *server) int {
		return s.do(t, "POST", "/api/reset/confirm", "", map[string]string{"token": "forged", "password": "new-password"}, nil)
	}
	tight := map[string]string{"RATE_LIMIT_RESET_CONFIRM_POINTS": "2"}
	cases := map[string]struct {
		env     map[string]string
		limited bool
	}{
		"memory":           {tight, true},
		"disabled":         {map[string]string{"RATE_LIMIT_ENABLED": "false"}, false},
		"integration test": {map[string]string{"APP_INTEGRATION_TEST": "true"}, false},
	}
	if url := os.Getenv("TENANTKIT_TEST_REDIS_URL"); url != "" {
		cases["redis"] = struct {
			env     map[string]string
			limited bool
		}{map[string]string{"RATE_LIMIT_STRATEGY": "redis", "REDIS_URL": url, "RATE_LIMIT_KEY_PREFIX": "server-test-" + t.Name() + time.Now().Format("150405.000000")}, true}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATA_DIR": t.TempDir()}
			maps.Copy(env, tight)
			maps.Copy(env, tc.env)
			s := start(t, env)
			codes := []int{confirm(s), confirm(s), confirm(s)}
			want := []int{400, 400, 400}
			if tc.limited {
				want[2] = http.StatusTooManyRequests
			}
			if !slices.Equal(codes, want) {
				t.Fatalf("statuses %v, want %v", codes, want)
			}
			s.stop(t)
		})
	}
}

// TestConfigErrors checks that bad configuration fails at startup.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		env     map[string]string
		wantErr string
	}{
		"short secret":     {map[string]string{"APP_SECRET_KEY": "too-short"}, "APP_SECRET_KEY"},
		"bad log level":    {map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		"bad log format":   {map[string]string{"LOG_FORMAT": "xml"}, "LOG_FORMAT"},
		"email only":       {map[string]string{"ADMIN_EMAIL": "admin@example.com"}, "ADMIN_PASSWORD"},
		"unknown database": {map[string]string{"DATABASE_URL": "mysql://localhost/x"}, "mysql"},
		"unknown strategy": {map[string]string{"RATE_LIMIT_STRATEGY": "memcached"}, "RATE_LIMIT_STRATEGY"},
		"redis, no URL":    {map[string]string{"RATE_LIMIT_STRATEGY": "redis"}, "REDIS_URL"},
		"bad retention":    {map[string]string{"BUSINESS_RULES_LOG_RETENTION_DAYS": "ninety"}, "BUSINESS_RULES_LOG_RETENTION_DAYS"},
		"negative days":    {map[string]string{"BUSINESS_RULES_LOG_RETENTION_DAYS": "-1"}, "BUSINESS_RULES_LOG_RETENTION_DAYS"},
		"bad private URLs": {map[string]string{"APP_WEBHOOKS_ALLOW_PRIVATE_URLS": "maybe"}, "APP_WEBHOOKS_ALLOW_PRIVATE_URLS"},
		"bad GOGC":         {map[string]string{"GOGC": "fast"}, "GOGC"},
		"negative GOGC":    {map[string]string{"GOGC": "-10"}, "GOGC"},
		"bad inbound":      {map[string]string{"APP_INBOUND_WEBHOOKS": `{"x":{"adapter":"svix","secret":"whsec_AAAA"}}`}, "APP_INBOUND_WEBHOOKS"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.env["DATA_DIR"] = t.TempDir()
			tc.env["ADDR"] = "127.0.0.1:0"
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, nil, getenv(tc.env), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run returned %v, want an error mentioning %s", err, tc.wantErr)
			}
		})
	}
}

// TestGCPercent: the server applies GOGC (a flag's value too) as Go reads
// it, and 200 when it is unset.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for v, want := range map[string]int{"": defaultGCPercent, "50": 50, "off": -1, "0": 0} {
		if err := setGCPercent(v); err != nil {
			t.Fatalf("setGCPercent(%q): %v", v, err)
		}
		if got := debug.SetGCPercent(100); got != want {
			t.Errorf("GOGC=%q: the collector's percentage is %d, want %d", v, got, want)
		}
	}
}

// server is a run() started by a test.
type server struct {
	base   string
	stdout *logbuf.Buffer
	stderr *logbuf.Buffer
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

// start runs the server on a free loopback port with env and waits until
// /api/health answers 200.
func start(t *testing.T, env map[string]string) *server {
	t.Helper()
	env["ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &logbuf.Buffer{}, stderr: &logbuf.Buffer{}, cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Timeout: 5 * time.Second}}
	stderr := s.stderr
	go func() { s.done <- run(ctx, nil, getenv(env), s.stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("run did not return within 10s of cancellation")
		}
		if t.Failed() {
			t.Logf("server stdout:\n%s\nserver stderr:\n%s", s.stdout, stderr)
		}
	})

	listening := regexp.MustCompile(`listening on (http://\S+)/api`)
	deadline := time.Now().Add(10 * time.Second)
	for s.base == "" {
		if m := listening.FindStringSubmatch(s.stdout.String()); m != nil {
			s.base = m[1]
			break
		}
		select {
		case err := <-s.done:
			s.done <- err // for the cleanup
			t.Fatalf("run returned before listening: %v\nstderr:\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not print its address within 10s")
		}
	}
	for {
		resp, err := s.client.Get(s.base + "/api/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !strings.Contains(string(body), `"status":"ok"`) {
					t.Fatalf("GET /api/health: body %s", body)
				}
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /api/health did not answer 200 within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop cancels the server's context (as SIGTERM does) and expects run to
// return nil promptly.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.client.CloseIdleConnections()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("run returned %v after cancellation, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of cancellation")
	}
}

// do sends a JSON request with an optional credential (an API key sent as
// X-Api-Key, or "Bearer <token>" sent as Authorization) and decodes the JSON
// response into out (when not nil). It returns the status code.
func (s *server) do(t *testing.T, method, path, key string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.HasPrefix(key, "Bearer "):
		req.Header.Set("Authorization", key)
	case key != "":
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: status %d, body %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// tenantCount returns the total of GET /api/directory/tenants.
func (s *server) tenantCount(t *testing.T) int {
	t.Helper()
	var list struct {
		Total *int `json:"total"`
	}
	if code := s.do(t, "GET", "/api/directory/tenants", bootstrapKey, nil, &list); code != http.StatusOK || list.Total == nil {
		t.Fatalf("GET /api/directory/tenants: status %d, total %v", code, list.Total)
	}
	return *list.Total
}

func getenv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}
