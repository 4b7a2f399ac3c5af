// Package multiproc runs tenantkit as several server processes sharing one
// database, for tests: what clients behind a load balancer see when a
// deployment runs more than one server (README, "Several server
// processes on one database"; BENCHMARKS.md, "Many servers, one service").
//
// Start opens one Kit per server on its own *store.DB (its own pool, its
// own version listener, its own caches: a process, in effect), all on one
// database, with the built-in identity, and serves each through an
// httpapi handler on a loopback HTTP server (httptest). By default the
// database is a fresh PostgreSQL schema (storetest.IsolatedPostgresURL;
// the test is skipped without TENANTKIT_TEST_POSTGRES_URL): SQLite's
// database is owned by one process, so several servers are a PostgreSQL
// deployment. Each server keeps attachments' files in a directory of its
// own, as on separate machines, unless the test shares a store between
// them (Config.FilesInDatabase, or Options.Blobs over one S3 bucket); when
// the test gives them policies over one Redis, they share their
// rate-limit counters (RedisURL, Front).
//
// A test changes configuration through one server and uses it through
// another (Server.Do), and measures how long reads take to converge
// (Converge, Summarize).
package multiproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// RedisEnv names the variable holding the Redis URL for tests.
const RedisEnv = "TENANTKIT_TEST_REDIS_URL"

// Options configure a cluster. The zero value is two servers on a fresh
// PostgreSQL schema with rate limiting off.
type Options struct {
	// Servers is the number of server processes (default 2).
	Servers int
	// DatabaseURL is the database they share (default: a fresh
	// PostgreSQL schema, dropped when the test ends; the test is skipped
	// without PostgreSQL).
	DatabaseURL string
	// Config is the base of every Kit's configuration (DB and SecretKey
	// are set here; FilesDir, unless set or replaced by FilesInDatabase or
	// Blobs, is a directory of each server's own).
	Config full.Config
	// Blobs, when set, returns server i's attachment file store (each
	// server its own client of one shared store, such as an S3 bucket).
	Blobs func(t testing.TB, i int) attachments.Blobs
	// RateLimit returns the policy of server i's HTTP front (nil, or a
	// nil policy: limiting off, so that tests of areas do not meet the
	// per-tenant route limits).
	RateLimit func(t testing.TB, i int) *ratelimit.Policy
	// Start starts each Kit's background work (jobs, event delivery).
	Start bool
}

// Cluster is several servers on one database.
type Cluster struct {
	// Servers are the processes with their default HTTP fronts.
	Servers []*Server
	// SuperKey is a super-admin API key of the default tenant, valid on
	// every server.
	SuperKey string
	// DatabaseURL is the database they share.
	DatabaseURL string
}

// Server is one server process: its database handle, Kit and identity,
// served over HTTP.
type Server struct {
	// Name is "A", "B", …
	Name string
	DB   *store.DB
	Kit  *full.Kit
	Auth *identity.Service
	// URL is the base URL of its HTTP server ("http://127.0.0.1:port").
	URL    string
	client *http.Client
}

// Start opens the cluster; everything is closed when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx := t.Context()
	n := opts.Servers
	if n <= 0 {
		n = 2
	}
	c := &Cluster{DatabaseURL: opts.DatabaseURL}
	if c.DatabaseURL == "" {
		c.DatabaseURL = storetest.IsolatedPostgresURL(t)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	c.SuperKey = "tk_" + randomHex(24)
	for i := range n {
		db, err := store.Open(ctx, c.DatabaseURL, nil)
		if err != nil {
			t.Fatalf("multiproc: open server %d's database: %v", i, err)
		}
		t.Cleanup(func() { db.Close() })
		cfg := opts.Config
		cfg.DB, cfg.SecretKey = db, secret
		if opts.Blobs != nil {
			cfg.Attachments.Blobs = opts.Blobs(t, i)
		}
		if cfg.FilesDir == "" {
			cfg.FilesDir = t.TempDir() // this server's own disk
		}
		kit, err := full.Open(ctx, cfg)
		if err != nil {
			t.Fatalf("multiproc: open server %d's Kit: %v", i, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = kit.Close(ctx)
		})
		auth := kit.Identity
		if i == 0 {
			if _, err := auth.Bootstrap(ctx, identity.BootstrapInput{APIKey: c.SuperKey}); err != nil {
				t.Fatalf("multiproc: bootstrap: %v", err)
			}
		}
		if opts.Start {
			if err := kit.Start(ctx); err != nil {
				t.Fatalf("multiproc: start server %d: %v", i, err)
			}
		}
		s := &Server{Name: string(rune('A' + i)), DB: db, Kit: kit, Auth: auth}
		var policy *ratelimit.Policy
		if opts.RateLimit != nil {
			policy = opts.RateLimit(t, i)
		}
		s.serve(t, policy)
		c.Servers = append(c.Servers, s)
	}
	return c
}

// Front serves the cluster's processes through new HTTP servers whose
// handlers apply policy(t, i) (a test of rate limits gives each a limiter
// over one Redis). The processes, their caches and their data are the
// cluster's.
func (c *Cluster) Front(t testing.TB, policy func(t testing.TB, i int) *ratelimit.Policy) []*Server {
	t.Helper()
	out := make([]*Server, len(c.Servers))
	for i, s := range c.Servers {
		f := &Server{Name: s.Name, DB: s.DB, Kit: s.Kit, Auth: s.Auth}
		f.serve(t, policy(t, i))
		out[i] = f
	}
	return out
}

// noLimits is a policy that limits nothing.
var noLimits = ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)

func (s *Server) serve(t testing.TB, policy *ratelimit.Policy) {
	if policy == nil {
		policy = noLimits
	}
	h, err := httpapi.New(s.Kit.Kit, httpapi.Options{Auth: s.Auth, RateLimit: policy})
	if err != nil {
		t.Fatalf("multiproc: server %s's handler: %v", s.Name, err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	t.Cleanup(s.client.CloseIdleConnections)
}

// RedisURL returns the test Redis's URL, or skips the test when
// TENANTKIT_TEST_REDIS_URL is not set.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(RedisEnv)
	if u == "" {
		t.Skipf("multiproc: Redis skipped: set %s (for example redis://127.0.0.1:6379) to run it", RedisEnv)
	}
	return u
}

// RedisPolicy returns a policy applying cfg with a limiter of its own
// over the Redis at url (a process's own client), closed when the test
// ends.
func RedisPolicy(t testing.TB, url string, cfg ratelimit.Config) *ratelimit.Policy {
	t.Helper()
	l, err := ratelimit.OpenRedis(url, ratelimit.RedisOptions{})
	if err != nil {
		t.Fatalf("multiproc: Redis: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return ratelimit.NewPolicy(cfg, l, nil)
}

// Response is a response read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object; it fails the test if it is not one.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("multiproc: response body is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// Expect fails the test unless the status is want; it returns r.
func (r *Response) Expect(t testing.TB, want int) *Response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("multiproc: status %d, want %d; body: %s", r.Status, want, r.Body)
	}
	return r
}

// Do sends a request to the server with an API key (none when key is
// ""). body is sent as JSON unless it is nil, a string or a []byte (sent
// as they are, as JSON unless Header says otherwise: see DoWith).
func (s *Server) Do(t testing.TB, method, path, key string, body any) *Response {
	t.Helper()
	return s.DoWith(t, method, path, key, body, nil)
}

// DoWith is Do with header's values set on the request.
func (s *Server) DoWith(t testing.TB, method, path, key string, body any, header http.Header) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("multiproc: %s %s on %s: %v", method, path, s.Name, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("multiproc: %s %s on %s: %v", method, path, s.Name, err)
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: data}
}

// Tenant is a tenant with one organization.
type Tenant struct{ ID, OrgID string }

// NewTenant creates a tenant and an organization of it, as the super
// admin, through the first server.
func (c *Cluster) NewTenant(t testing.TB, name string) Tenant {
	t.Helper()
	a := c.Servers[0]
	id := a.Do(t, "POST", "/api/directory/tenants", c.SuperKey, map[string]string{"name": name}).Expect(t, 201).JSON(t)["id"].(string)
	org := a.Do(t, "POST", "/api/directory/organizations", c.SuperKey, map[string]string{"name": name + " HQ", "tenantId": id}).
		Expect(t, 201).JSON(t)["id"].(string)
	return Tenant{ID: id, OrgID: org}
}

// NewKey creates, as the super admin through the first server, a role
// holding features in the tenant and an API key of its organization with
// that role, and returns the key's secret.
func (c *Cluster) NewKey(t testing.TB, tn Tenant, features ...string) string {
	t.Helper()
	a := c.Servers[0]
	role := a.Do(t, "POST", "/api/auth/roles", c.SuperKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tn.ID}).
		Expect(t, 201).JSON(t)["id"].(string)
	if features == nil {
		features = []string{}
	}
	a.Do(t, "PUT", "/api/auth/roles/acl", c.SuperKey, map[string]any{"roleId": role, "features": features}).Expect(t, 200)
	body := map[string]any{"name": "key", "tenantId": tn.ID, "organizationId": tn.OrgID, "roles": []string{role}}
	return a.Do(t, "POST", "/api/api_keys/keys", c.SuperKey, body).Expect(t, 201).JSON(t)["secret"].(string)
}

// Converge calls done (a read through a server) until it reports true,
// and returns how long after start the first call that reported true
// began: reads that begin that long after a change see it (the call's own
// duration, an HTTP exchange on a busy machine, is not counted). It fails
// the test after timeout.
func Converge(t testing.TB, start time.Time, timeout time.Duration, done func() bool) time.Duration {
	t.Helper()
	for {
		began := time.Now()
		if done() {
			return began.Sub(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("multiproc: not converged after %v", timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Stats summarizes durations.
type Stats struct {
	N             int
	P50, P95, Max time.Duration
}

// Summarize returns the median, 95th percentile and maximum of ds.
func Summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return Stats{N: len(s), P50: s[len(s)/2], P95: s[len(s)*95/100], Max: s[len(s)-1]}
}

func (s Stats) String() string {
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("n=%d p50 %s, p95 %s, max %s", s.N, r(s.P50), r(s.P95), r(s.Max))
}

// Query escapes a query value.
func Query(v string) string { return url.QueryEscape(v) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RandomHex returns 2n random hexadecimal digits, for names no other test
// uses.
func RandomHex(n int) string { return randomHex(n) }
