package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// limitedEnv is a test environment whose handler applies cfg with limiter
// (nil: a fresh Memory limiter).
func limitedEnv(t *testing.T, cfg ratelimit.Config, limiter ratelimit.Limiter) *testEnv {
	t.Helper()
	e := newTestEnv(t, storetest.SQLite(t))
	e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(cfg, limiter, e.kit.Logger)})
	return e
}

// behindProxy is the default configuration with one trusted proxy, so tests
// choose the client address with X-Forwarded-For.
func behindProxy() ratelimit.Config {
	cfg := ratelimit.DefaultConfig()
	cfg.TrustProxyDepth = 1
	return cfg
}

// postFormFrom posts a form as the client at ip (sent as X-Forwarded-For),
// with extra headers as name, value pairs.
func (e *testEnv) postFormFrom(ip, path string, values map[string]string, headers ...string) *response {
	return e.send("POST", path, form(values), func(r *http.Request) {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if ip != "" {
			r.Header.Set("X-Forwarded-For", ip)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
	})
}

// loginAs attempts a sign-in from ip and returns the response.
func (e *testEnv) loginAs(ip, email, password string, headers ...string) *response {
	return e.postFormFrom(ip, "/api/login", map[string]string{"email": email, "password": password}, headers...)
}

// expectLimited checks a 429 and its headers and body.
func expectLimited(t *testing.T, r *response, limit int, retryAfter time.Duration) {
	t.Helper()
	r.expect(http.StatusTooManyRequests)
	is := is.NewRelaxed(t)
	is.Equal(r.JSON(), map[string]any{"error": "Too many requests. Please try again later."})
	is.Equal(r.Header.Get("Content-Type"), "application/json")
	is.Equal(r.Header.Get("X-RateLimit-Limit"), fmt.Sprint(limit))
	is.Equal(r.Header.Get("X-RateLimit-Remaining"), "0")
	wait := fmt.Sprint(int(retryAfter.Seconds()))
	// The header is rounded up: a fresh refusal shows the whole wait.
	is.Equal(r.Header.Get("Retry-After"), wait)
	is.Equal(r.Header.Get("X-RateLimit-Reset"), wait)
}

// expectNoLimitHeaders checks that a response that was not refused carries
// none of the 429 headers.
func expectNoLimitHeaders(t *testing.T, r *response) {
	t.Helper()
	for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("status %d carries %s: %s", r.Status, h, v)
		}
	}
}

func TestLoginIPLayer(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	for i := range 20 { // distinct emails: only the IP layer counts them all
		r := e.loginAs("203.0.113.1", fmt.Sprintf("user%d@acme.test", i), "wrong-password").expect(401)
		expectNoLimitHeaders(t, r)
	}
	expectLimited(t, e.loginAs("203.0.113.1", "another@acme.test", "wrong-password"), 20, time.Minute)
	// Blocked even with a well-formed body that would pass: the IP layer
	// runs before anything else.
	expectLimited(t, e.postFormFrom("203.0.113.1", "/api/login", nil), 20, time.Minute)
	// Another client is not affected.
	e.loginAs("203.0.113.2", "another@acme.test", "wrong-password").expect(401)
}

func TestLoginAccountLayer(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	for range 5 {
		e.loginAs("203.0.113.1", "victim@acme.test", "guess").expect(401)
	}
	expectLimited(t, e.loginAs("203.0.113.1", "victim@acme.test", "guess"), 5, time.Minute)
	// The same account however it is typed.
	expectLimited(t, e.loginAs("203.0.113.1", "  VICTIM@acme.test ", "guess"), 5, time.Minute)
	// A different email from the same client is not blocked by the
	// account layer.
	e.loginAs("203.0.113.1", "other@acme.test", "guess").expect(401)
	// The same email from another client has its own counter.
	e.loginAs("203.0.113.2", "victim@acme.test", "guess").expect(401)
}

func TestLoginSuccessResetsAccountCounterNotIPCounter(t *testing.T) {
	t.Parallel()
	cfg := behindProxy()
	cfg.Auth.LoginIP.Points = 12
	e := limitedEnv(t, cfg, nil)
	acme := e.newTenant("Acme")
	admin := e.newKey(acme, "auth.users.manage")
	e.do("POST", "/api/auth/users", admin, map[string]any{"email": "ann@acme.test", "password": "ann-password", "organizationId": acme.OrgID}).expect(201)

	const ip = "198.51.100.7"
	for range 4 {
		e.loginAs(ip, "ann@acme.test", "wrong").expect(401)
	}
	e.loginAs(ip, "ann@acme.test", "ann-password").expect(200) // 5th on both layers
	// The account counter starts again: five more failures are answered.
	for range 5 {
		e.loginAs(ip, "ann@acme.test", "wrong").expect(401)
	}
	expectLimited(t, e.loginAs(ip, "ann@acme.test", "wrong"), 5, time.Minute) // IP request 11
	// The IP counter was not reset: request 12 passes, 13 is refused.
	e.loginAs(ip, "zed@acme.test", "wrong").expect(401)
	expectLimited(t, e.loginAs(ip, "zed2@acme.test", "wrong"), 12, time.Minute)
}

func TestResetLayers(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	reset := func(ip, email string) *response {
		return e.postFormFrom(ip, "/api/reset", map[string]string{"email": email})
	}
	for range 3 {
		reset("203.0.113.9", "ann@acme.test").expect(200)
	}
	expectLimited(t, reset("203.0.113.9", "ann@acme.test"), 3, time.Minute)
	// The IP layer has counted 4; six more with other emails reach 10.
	for i := range 6 {
		reset("203.0.113.9", fmt.Sprintf("u%d@acme.test", i)).expect(200)
	}
	expectLimited(t, reset("203.0.113.9", "fresh@acme.test"), 10, time.Minute)
	reset("203.0.113.10", "ann@acme.test").expect(200)
}

func TestResetConfirmIPLayer(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	confirm := func(ip string) *response {
		return e.postFormFrom(ip, "/api/reset/confirm", map[string]string{"token": "forged", "password": "new-password"})
	}
	for range 5 {
		confirm("203.0.113.20").expect(400)
	}
	// No block: refused until the 300 s window, which began with the first
	// request, ends (a slow run on a loaded machine may have used a few
	// seconds of it; a block would be far longer).
	r := confirm("203.0.113.20")
	wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || wait < 290 || wait > 300 {
		t.Fatalf("Retry-After %q, want the rest of the 300 s window", r.Header.Get("Retry-After"))
	}
	expectLimited(t, r, 5, time.Duration(wait)*time.Second)
	confirm("203.0.113.21").expect(400)
}

func TestLimitMessageIsLocalised(t *testing.T) {
	t.Parallel()
	cfg := behindProxy()
	cfg.Auth.ResetConfirm.Points = 0
	e := limitedEnv(t, cfg, nil)
	for lang, want := range map[string]string{
		"":                        "Too many requests. Please try again later.",
		"de-DE,de;q=0.9,en;q=0.5": "Zu viele Anfragen. Bitte versuchen Sie es später erneut.",
		"pl":                      "Zbyt wiele żądań. Spróbuj ponownie później.",
		"ja":                      "Too many requests. Please try again later.",
	} {
		r := e.postFormFrom("203.0.113.1", "/api/reset/confirm", nil, "Accept-Language", lang).expect(429)
		if got := r.JSON()["error"]; got != want {
			t.Errorf("Accept-Language %q: message %q, want %q", lang, got, want)
		}
	}
}

// TestClientAddressFromProxyDepth checks which bucket requests land in for
// each RATE_LIMIT_TRUST_PROXY_DEPTH case, through the reset-confirm limit
// (IP layer only) with one point: a second request in the same bucket is
// refused.
func TestClientAddressFromProxyDepth(t *testing.T) {
	t.Parallel()
	type req struct{ xff, realIP string }
	for _, tc := range []struct {
		name       string
		depth      int
		first      req
		second     req
		sameBucket bool
	}{
		{"depth 0 ignores X-Forwarded-For", 0, req{xff: "203.0.113.1"}, req{xff: "203.0.113.2"}, true},
		{"depth 0 ignores X-Real-IP", 0, req{realIP: "203.0.113.1"}, req{realIP: "203.0.113.2"}, true},
		{"depth 1 reads the last entry", 1, req{xff: "10.0.0.1, 203.0.113.1"}, req{xff: "10.0.0.1, 203.0.113.2"}, false},
		{"depth 1 ignores what the client wrote before", 1, req{xff: "1.1.1.1, 203.0.113.1"}, req{xff: "2.2.2.2, 203.0.113.1"}, true},
		{"depth 2 reads the second entry from the end", 2, req{xff: "203.0.113.1, 10.0.0.9"}, req{xff: "203.0.113.2, 10.0.0.9"}, false},
		{"depth 2 with a shorter chain uses the shared bucket", 2, req{xff: "203.0.113.1"}, req{xff: "203.0.113.2"}, true},
		{"depth 1 uses X-Real-IP without X-Forwarded-For", 1, req{realIP: "203.0.113.1"}, req{realIP: "203.0.113.2"}, false},
		{"depth 2 ignores X-Real-IP", 2, req{realIP: "203.0.113.1"}, req{realIP: "203.0.113.2"}, true},
		{"depth 1 with a non-address uses the shared bucket", 1, req{xff: "unknown"}, req{xff: "garbage"}, true},
		{"depth 1 canonicalises addresses", 1, req{xff: "::ffff:203.0.113.1"}, req{xff: "203.0.113.1:4711"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := ratelimit.DefaultConfig()
			cfg.TrustProxyDepth = tc.depth
			cfg.Auth.ResetConfirm.Points = 1
			e := limitedEnv(t, cfg, nil)
			send := func(q req) *response {
				return e.send("POST", "/api/reset/confirm", form(map[string]string{"token": "x", "password": "new-password"}), func(r *http.Request) {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					if q.xff != "" {
						r.Header.Set("X-Forwarded-For", q.xff)
					}
					if q.realIP != "" {
						r.Header.Set("X-Real-IP", q.realIP)
					}
				})
			}
			send(tc.first).expect(400)
			want := 400
			if tc.sameBucket {
				want = 429
			}
			send(tc.second).expect(want)
		})
	}
}

// recordingLimiter remembers the keys it was asked about.
type recordingLimiter struct {
	ratelimit.Limiter
	mu   sync.Mutex
	keys []string
}

func (l *recordingLimiter) Consume(ctx context.Context, key string, rule ratelimit.Rule) (ratelimit.Result, error) {
	l.mu.Lock()
	l.keys = append(l.keys, key)
	l.mu.Unlock()
	return l.Limiter.Consume(ctx, key, rule)
}

func TestKeysNeverHoldTheEmail(t *testing.T) {
	t.Parallel()
	rec := &recordingLimiter{Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{})}
	cfg := ratelimit.DefaultConfig()
	cfg.KeyPrefix = "app1"
	e := limitedEnv(t, cfg, rec)
	e.loginAs("203.0.113.1", "Secret.Person@acme.test", "x").expect(401)
	e.postFormFrom("", "/api/reset", map[string]string{"email": "secret.person@acme.test"}).expect(200)
	sum := sha256.Sum256([]byte("secret.person@acme.test"))
	hash := hex.EncodeToString(sum[:])
	// Depth 0: the address is ignored and every key uses the shared bucket.
	want := []string{
		"app1:login-ip:global", "app1:login:global:" + hash,
		"app1:reset-ip:global", "app1:reset:global:" + hash,
	}
	if !slices.Equal(rec.keys, want) {
		t.Fatalf("keys %q, want %q", rec.keys, want)
	}
}

func TestAuthLimitSwitches(t *testing.T) {
	t.Parallel()
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		cfg := behindProxy()
		cfg.Enabled = false
		e := limitedEnv(t, cfg, nil)
		for range 25 {
			e.loginAs("203.0.113.1", "ann@acme.test", "x").expect(401)
		}
	})
	t.Run("opt-in", func(t *testing.T) {
		t.Parallel()
		cfg := behindProxy()
		cfg.AuthOptIn = true
		e := limitedEnv(t, cfg, nil)
		// Inert without the header, however many requests.
		for range 25 {
			e.loginAs("203.0.113.1", "ann@acme.test", "x").expect(401)
		}
		// The header turns it on for that request; inert requests did not count.
		for range 5 {
			e.loginAs("203.0.113.1", "ann@acme.test", "x", "x-app-test-rate-limit", "on").expect(401)
		}
		expectLimited(t, e.loginAs("203.0.113.1", "ann@acme.test", "x", "x-app-test-rate-limit", "on"), 5, time.Minute)
		e.loginAs("203.0.113.1", "ann@acme.test", "x", "x-app-test-rate-limit", "off").expect(401)
	})
}

// failingLimiter is a limiter whose infrastructure is broken.
type failingLimiter struct{}

func (failingLimiter) Consume(context.Context, string, ratelimit.Rule) (ratelimit.Result, error) {
	return ratelimit.Result{}, errors.New("limiter store is down")
}
func (failingLimiter) Reset(context.Context, string) error {
	return errors.New("limiter store is down")
}

func TestLimiterFailureFailsOpen(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), failingLimiter{})
	acme := e.newTenant("Acme")
	admin := e.newKey(acme, "auth.users.manage")
	e.do("POST", "/api/auth/users", admin, map[string]any{"email": "ann@acme.test", "password": "ann-password", "organizationId": acme.OrgID}).expect(201)
	for range 25 {
		e.loginAs("203.0.113.1", "ann@acme.test", "wrong").expect(401)
	}
	// The best-effort reset fails too, and the sign-in still succeeds.
	e.loginAs("203.0.113.1", "ann@acme.test", "ann-password").expect(200)
}

// TestRedisStoppedFailsOpen points the limiter at a Redis that is not
// running: requests are answered, and each process counts in memory.
func TestRedisStoppedFailsOpen(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	l, err := ratelimit.OpenRedis("redis://"+addr, ratelimit.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e := limitedEnv(t, behindProxy(), l)
	for range 5 {
		e.loginAs("203.0.113.1", "ann@acme.test", "wrong").expect(401)
	}
	expectLimited(t, e.loginAs("203.0.113.1", "ann@acme.test", "wrong"), 5, time.Minute)
}

// TestRedisSharesCountsAcrossProcesses runs two handlers (two server
// processes) on one Redis: they share the counters.
func TestRedisSharesCountsAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := os.Getenv("TENANTKIT_TEST_REDIS_URL")
	if url == "" {
		t.Skip("TENANTKIT_TEST_REDIS_URL not set; skipping the Redis-backed HTTP test")
	}
	cfg := behindProxy()
	cfg.KeyPrefix = "rl-test-" + randomHex(6) // no leftovers from other runs
	open := func() *testEnv {
		l, err := ratelimit.OpenRedis(url, ratelimit.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return limitedEnv(t, cfg, l)
	}
	one, two := open(), open()
	for i := range 10 {
		one.loginAs("203.0.113.1", fmt.Sprintf("a%d@acme.test", i), "x").expect(401)
		two.loginAs("203.0.113.1", fmt.Sprintf("b%d@acme.test", i), "x").expect(401)
	}
	expectLimited(t, one.loginAs("203.0.113.1", "c@acme.test", "x"), 20, time.Minute)
	expectLimited(t, two.loginAs("203.0.113.1", "c@acme.test", "x"), 20, time.Minute)
}

func TestRouteLevelLimit(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
	acmeKey, globexKey := e.newKey(acme), e.newKey(globex)
	a := &api{kit: e.kit.Kit, opts: Options{Auth: e.auth, MaxBodyBytes: defaultMaxBody, RateLimit: ratelimit.NewPolicy(behindProxy(), nil, nil)},
		authn: serviceAuthenticator{e.auth}, logger: e.kit.Logger, base: "/api"}
	ran := 0
	ok := func(w http.ResponseWriter, r *http.Request) error {
		ran++
		return apikit.Encode(w, http.StatusOK, map[string]bool{"ok": true})
	}
	e.handler = a.serve([]apikit.Route{
		{Method: "GET", Path: "/by-ip", Handler: ok,
			Access: apikit.Access{Public: true},
			Limits: apikit.Limits{RateLimit: &apikit.RateLimit{Points: 2, Duration: time.Minute, KeyPrefix: "by-ip"}},
			Doc:    apikit.Doc{Summary: "test"}},
		{Method: "GET", Path: "/by-tenant", Handler: ok,
			Limits: apikit.Limits{RateLimit: &apikit.RateLimit{Points: 2, Duration: time.Minute, BlockDuration: 2 * time.Minute, KeyPrefix: "by-tenant", PerTenant: true}},
			Doc:    apikit.Doc{Summary: "test"}},
	})
	get := func(path, ip, key string) *response {
		return e.send("GET", path, nil, func(r *http.Request) {
			r.Header.Set("X-Forwarded-For", ip)
			if key != "" {
				r.Header.Set("X-Api-Key", key)
			}
		})
	}

	// Keyed by client address.
	{
		get("/api/by-ip", "192.0.2.1", "").expect(200)
		get("/api/by-ip", "192.0.2.1", "").expect(200)
		before := ran
		expectLimited(t, get("/api/by-ip", "192.0.2.1", ""), 2, time.Minute)
		if ran != before {
			t.Fatal("the handler ran for a refused request")
		}
		get("/api/by-ip", "192.0.2.2", "").expect(200)
	}
	// Keyed by tenant.
	{
		// Two addresses of one tenant share the count; another tenant has its own.
		get("/api/by-tenant", "192.0.2.1", acmeKey).expect(200)
		get("/api/by-tenant", "192.0.2.2", acmeKey).expect(200)
		expectLimited(t, get("/api/by-tenant", "192.0.2.3", acmeKey), 2, 2*time.Minute)
		get("/api/by-tenant", "192.0.2.1", globexKey).expect(200)
	}
	// After authentication.
	{
		// Unauthenticated requests are refused with 401 and use no points.
		for range 3 {
			get("/api/by-tenant", "192.0.2.9", "").expect(401)
		}
		get("/api/by-tenant", "192.0.2.9", globexKey).expect(200)
	}
}

// TestLimitedLoginLooksTheSameForEveryAccount checks that a refused sign-in
// for an existing account and for an unknown one look the same.
func TestLimitedLoginLooksTheSameForEveryAccount(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, behindProxy(), nil)
	acme := e.newTenant("Acme")
	admin := e.newKey(acme, "auth.users.manage")
	e.do("POST", "/api/auth/users", admin, map[string]any{"email": "ann@acme.test", "password": "ann-password", "organizationId": acme.OrgID}).expect(201)
	var bodies []string
	for _, email := range []string{"ann@acme.test", "nobody@acme.test"} {
		for range 5 {
			e.loginAs("203.0.113.1", email, "wrong").expect(401)
		}
		r := e.loginAs("203.0.113.1", email, "wrong").expect(429)
		bodies = append(bodies, strings.TrimSpace(string(r.Body)))
	}
	if bodies[0] != bodies[1] {
		t.Fatalf("refusals differ: %s vs %s", bodies[0], bodies[1])
	}
}
