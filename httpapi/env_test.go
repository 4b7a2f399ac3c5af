package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// testEnv is a Kit, the built-in identity and the handler over one
// database, with a super-admin key. Area tests build on it.
type testEnv struct {
	t        testing.TB
	kit      *full.Kit
	auth     *identity.Service
	handler  http.Handler
	superKey string
	mail     *testMailer
}

func newTestEnv(t testing.TB, db *store.DB) *testEnv {
	t.Helper()
	return newTestEnvConfig(t, db, full.Config{})
}

// newTestEnvConfig is newTestEnv over a Kit opened with cfg (its DB and
// SecretKey are set here) and every built-in plug-in (full.Open).
func newTestEnvConfig(t testing.TB, db *store.DB, cfg full.Config) *testEnv {
	t.Helper()
	return newTestEnvOpen(t, db, cfg, full.Open)
}

// newTestEnvOpen is newTestEnvConfig with the Kit opened by open
// (tenantkit.Open: no plug-ins).
func newTestEnvOpen(t testing.TB, db *store.DB, cfg full.Config, open func(context.Context, full.Config) (*full.Kit, error)) *testEnv {
	t.Helper()
	ctx := t.Context()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg.DB, cfg.SecretKey = db, key
	mail := &testMailer{tokens: map[string]chan string{}}
	if cfg.Identity.Mailer == nil {
		cfg.Identity.Mailer = mail
	}
	kit, err := open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close(context.Background()) })
	svc := kit.Identity
	superKey := "tk_" + randomHex(24) // random from the start: keys are found by their first 11 characters
	if _, err := svc.Bootstrap(ctx, identity.BootstrapInput{APIKey: superKey}); err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, kit: kit, auth: svc, handler: mustNew(kit, Options{}), superKey: superKey, mail: mail}
}

// events returns the tenant's events whose type starts with prefix
// ("webhooks."), oldest first.
func (e *testEnv) events(tenantID, prefix string) []store.Event {
	e.t.Helper()
	evs, err := store.ListEvents(e.t.Context(), e.kit.DB, store.EventFilter{TenantID: tenantID, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []store.Event
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, prefix) {
			out = append(out, ev)
		}
	}
	return out
}

// start runs the Kit's background jobs until the test ends. Tests that
// call it use storetest.EachIsolated, so that no other test's workers take
// their jobs on PostgreSQL.
func (e *testEnv) start() {
	e.t.Helper()
	if err := e.kit.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
}

// with returns a copy of the environment that reports to t.
func (e *testEnv) with(t testing.TB) *testEnv {
	cp := *e
	cp.t = t
	return &cp
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// response is a recorded HTTP response.
type response struct {
	t      testing.TB
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object.
func (r *response) JSON() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		r.t.Fatalf("response body is not a JSON object: %v\n%s", err, r.Body)
	}
	return m
}

// expect fails the test unless the status is want.
func (r *response) expect(want int) *response {
	r.t.Helper()
	if r.Status != want {
		r.t.Fatalf("status %d, want %d; body: %s", r.Status, want, r.Body)
	}
	return r
}

// do sends a request with an API key (none when key is ""). body may be a
// string or []byte (sent as is) or any value (sent as JSON).
func (e *testEnv) do(method, path, key string, body any) *response {
	e.t.Helper()
	return e.send(method, path, body, func(req *http.Request) {
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
	})
}

// send builds and serves a request, letting edit set headers.
func (e *testEnv) send(method, path string, body any, edit func(*http.Request)) *response {
	e.t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(data)
	}
	ctx := e.t.Context()
	if strings.HasPrefix(path, "/api/events/stream") {
		// The stream answers until the client leaves: leave soon.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	edit(req)
	if req.Body != nil && req.Body != http.NoBody { // edit may have replaced it
		var err error
		if data, err = io.ReadAll(req.Body); err != nil {
			e.t.Fatal(err)
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	sent := req.Clone(req.Context())
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	e.checkContract(sent, data, rec)
	return &response{t: e.t, Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// tenantFixture is a tenant with one organization, created by the super
// admin.
type tenantFixture struct {
	ID, OrgID string
}

func (e *testEnv) newTenant(name string) tenantFixture {
	e.t.Helper()
	tid := e.do("POST", "/api/directory/tenants", e.superKey, map[string]string{"name": name}).expect(201).JSON()["id"].(string)
	oid := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": name + " HQ", "tenantId": tid}).expect(201).JSON()["id"].(string)
	return tenantFixture{ID: tid, OrgID: oid}
}

// newKey creates, as the super admin, a role holding features in the
// tenant and an API key with that role, and returns the key's secret.
func (e *testEnv) newKey(tf tenantFixture, features ...string) string {
	e.t.Helper()
	secret, _ := e.newKeyWithID(tf, features...)
	return secret
}

// newKeyWithID is newKey that also returns the key's id.
func (e *testEnv) newKeyWithID(tf tenantFixture, features ...string) (secret, id string) {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	if features == nil {
		features = []string{}
	}
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": features}).expect(200)
	body := map[string]any{"name": "key", "tenantId": tf.ID, "organizationId": tf.OrgID, "roles": []string{roleID}}
	k := e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()
	return k["secret"].(string), k["id"].(string)
}

// testMailer keeps the reset tokens sent to each email.
type testMailer struct {
	mu     sync.Mutex
	tokens map[string]chan string
}

func (m *testMailer) box(email string) chan string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens[email] == nil {
		m.tokens[email] = make(chan string, 10)
	}
	return m.tokens[email]
}

func (m *testMailer) SendPasswordReset(_ context.Context, email, token string) error {
	m.box(email) <- token
	return nil
}

// next waits for the next token sent to email.
func (m *testMailer) next(t *testing.T, email string) string {
	t.Helper()
	select {
	case tok := <-m.box(email):
		return tok
	case <-time.After(10 * time.Second):
		t.Fatalf("no reset token sent to %s", email)
		return ""
	}
}

// mustNew is New for tests, whose options are always valid.
func mustNew(kit *full.Kit, opts Options) *Handler {
	h, err := New(kit.Kit, opts)
	if err != nil {
		panic(err)
	}
	return h
}
