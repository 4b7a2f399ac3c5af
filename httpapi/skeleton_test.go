package httpapi

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// headerAuthenticator is a host's own authentication: it trusts the
// bearer token as the user's name. (A documented credential form, so that
// the contract check accepts the requests: the document lists the
// built-in credential forms, X-Api-Key, Authorization: ApiKey and Bearer.)
type headerAuthenticator struct{}

func (headerAuthenticator) Authenticate(r *http.Request) (*identity.Identity, error) {
	switch user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); user {
	case "":
		return nil, nil
	case "mallory":
		return nil, identity.ErrUnauthenticated
	default:
		return &identity.Identity{TenantID: "host-tenant", UserID: user, Features: []string{"api_keys.view"}}, nil
	}
}

func TestHostAuthenticator(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newTestEnv(t, storetest.SQLite(t))
	e.handler = mustNew(e.kit, Options{Auth: e.auth, Authenticator: headerAuthenticator{}})
	as := func(user string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+user) }
	}
	me := e.send("GET", "/api/auth/me", nil, as("alice")).expect(200).JSON()
	is.Equal(me["userId"], "alice")
	is.Equal(me["tenantId"], "host-tenant")
	e.send("GET", "/api/auth/me", nil, as("mallory")).expect(401)
	e.send("GET", "/api/auth/me", nil, func(*http.Request) {}).expect(401)
	// The built-in keys no longer authenticate: the host's authenticator decides.
	e.do("GET", "/api/auth/me", e.superKey, nil).expect(401)
	// Feature checks still apply to the host's identities.
	e.send("POST", "/api/auth/roles", map[string]string{"name": "x"}, as("alice")).expect(403)
}

func TestLoginMultipart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		admin := e.newKey(acme, "auth.users.manage")
		// A fresh address per run: on PostgreSQL, runs share the users table.
		email := "bo-" + randomHex(4) + "@acme.test"
		e.do("POST", "/api/auth/users", admin, map[string]any{"email": email, "password": "bo-password", "organizationId": acme.OrgID}).expect(201)

		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("email", strings.ToUpper(email)) // emails are case-insensitive
		_ = mw.WriteField("password", "bo-password")
		_ = mw.Close()
		r := e.send("POST", "/api/login", body.Bytes(), func(r *http.Request) { r.Header.Set("Content-Type", mw.FormDataContentType()) })
		is.Equal(r.expect(200).JSON()["ok"], true)
		// JSON is accepted too.
		e.do("POST", "/api/login", "", map[string]string{"email": email, "password": "bo-password"}).expect(200)
		e.do("POST", "/api/login", "", `{"email": 5}`).expect(400)
	})
}

// FuzzRequestBodies sends arbitrary bodies to JSON and form routes: the
// answer is never a 5xx.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"name":"x"}`, `{"name":5}`, `[`, `null`, `{"roles":[1]}`,
		`{"features":["*"],"roleId":"x"}`, "email=a%40b&password=x", `{"expiresAt":"x"}`, "\x00\xff"} {
		f.Add(seed)
	}
	shared := newTestEnv(f, storetest.SQLite(f))
	f.Fuzz(func(t *testing.T, body string) {
		e := shared.with(t)
		for _, path := range []string{"/api/auth/roles", "/api/api_keys/keys", "/api/auth/users", "/api/directory/organizations"} {
			if r := e.do("POST", path, e.superKey, body); r.Status >= 500 {
				t.Fatalf("POST %s with %q: status %d: %s", path, body, r.Status, r.Body)
			}
		}
		if r := e.do("PUT", "/api/auth/roles/acl", e.superKey, body); r.Status >= 500 {
			t.Fatalf("PUT /api/auth/roles/acl with %q: status %d: %s", body, r.Status, r.Body)
		}
		for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json"} {
			r := e.send("POST", "/api/login", body, func(r *http.Request) { r.Header.Set("Content-Type", ct) })
			if r.Status >= 500 {
				t.Fatalf("POST /api/login (%s) with %q: status %d: %s", ct, body, r.Status, r.Body)
			}
		}
	})
}
