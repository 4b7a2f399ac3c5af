package httpapi

// Security tests of authentication and authorization over HTTP: API keys
// and session tokens that must be refused, the reset request's answer,
// feature wildcards on real routes and organization-restricted roles.
// identity/security_test.go covers the same service at the Go level, with
// a controlled clock.

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// unauthorized expects the one 401 answer every refused credential gets.
func unauthorized(t *testing.T, what string, r *response) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Errorf("%s: status %d, want 401; body %s", what, r.Status, r.Body)
		return
	}
	if got := string(r.Body); !strings.Contains(got, `"error":"Unauthorized"`) {
		t.Errorf("%s: 401 body %s, want the plain Unauthorized answer", what, got)
	}
}

func TestAuthSecurityAPIKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("KeySec")
		secret, keyID := e.newKeyWithID(acme, "webhooks.view")
		e.do("GET", "/api/webhooks", secret, nil).expect(200) // cached from here on

		last := secret[len(secret)-1]
		flip := "0"
		if last == '0' {
			flip = "1"
		}
		wrong := secret[:len(secret)-1] + flip // the valid prefix, a wrong secret
		for name, set := range map[string]func(*http.Request){
			"X-Api-Key":     func(r *http.Request) { r.Header.Set("X-Api-Key", wrong) },
			"ApiKey scheme": func(r *http.Request) { r.Header.Set("Authorization", "ApiKey "+wrong) },
			"Bearer":        func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+wrong) },
		} {
			unauthorized(t, "wrong secret, "+name, e.send("GET", "/api/webhooks", nil, set))
		}
		unauthorized(t, "prefix only", e.do("GET", "/api/webhooks", secret[:11], nil))

		// Deleted: refused on the next request, although it was cached.
		e.do("DELETE", "/api/api_keys/keys?id="+keyID, e.superKey, nil).expect(200)
		unauthorized(t, "deleted key", e.do("GET", "/api/webhooks", secret, nil))
		unauthorized(t, "deleted key, /auth/me", e.do("GET", "/api/auth/me", secret, nil))
	})
}

// sessionEnv is the test environment served by an identity service whose
// secret key the test knows (so it can sign tokens), without a credential
// cache (so changes made in the database apply at once).
func sessionEnv(e *testEnv, key []byte) *testEnv {
	e.t.Helper()
	svc, err := identity.New(e.kit.DB, identity.Options{SecretKey: key, CacheTTL: -1, Mailer: e.mail})
	if err != nil {
		e.t.Fatal(err)
	}
	cp := *e
	cp.auth, cp.handler = svc, mustNew(e.kit, Options{Auth: svc})
	return &cp
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func TestAuthSecuritySessionTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		key := []byte("session-security-test-key-0123456789")
		e := sessionEnv(newTestEnv(t, db), key)
		acme := e.newTenant("TokSec")
		email := "tok." + randomHex(4) + "@acme.test"
		userID := e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "tok-password",
			"organizationId": acme.OrgID}).expect(201).JSON()["id"].(string)
		tok := e.postForm("/api/login", map[string]string{"email": email, "password": "tok-password"}).expect(200).JSON()["token"].(string)
		is.Equal(e.send("GET", "/api/auth/me", nil, bearer(tok)).expect(200).JSON()["userId"], userID)

		parts := strings.Split(tok, ".")
		is.Equal(len(parts), 3)
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		is.NoErr(err)
		var claims map[string]any
		is.NoErr(json.Unmarshal(payload, &claims))
		enc := func(m map[string]any) string {
			b, err := json.Marshal(m)
			is.NoErr(err)
			return base64.RawURLEncoding.EncodeToString(b)
		}
		with := func(edit func(m map[string]any)) map[string]any {
			m := maps.Clone(claims)
			edit(m)
			return m
		}
		sign := func(method jwt.SigningMethod, k any, m map[string]any) string {
			s, err := jwt.NewWithClaims(method, jwt.MapClaims(m)).SignedString(k)
			is.NoErr(err)
			return s
		}
		// The claims re-signed with the key pass: the forgeries below
		// differ from a valid token only in what they name.
		e.send("GET", "/api/auth/me", nil, bearer(sign(jwt.SigningMethodHS256, key, claims))).expect(200)

		// Payload changed, signature kept.
		extended := with(func(m map[string]any) { m["exp"] = m["exp"].(float64) + 30*86400 })
		unauthorized(t, "tampered payload", e.send("GET", "/api/auth/me", nil, bearer(parts[0]+"."+enc(extended)+"."+parts[2])))
		// Signed with another secret key (a rotated APP_SECRET_KEY): a Kit
		// with another key refuses this token, and this one refuses its
		// tokens.
		rotated := sessionEnv(e, []byte("another-secret-key-after-rotation-00"))
		unauthorized(t, "token after key rotation", rotated.send("GET", "/api/auth/me", nil, bearer(tok)))
		unauthorized(t, "token signed with another key", e.send("GET", "/api/auth/me", nil, bearer(sign(jwt.SigningMethodHS256, []byte("another-secret-key-after-rotation-00"), claims))))
		// Expired, though signed with the right key.
		expired := with(func(m map[string]any) { m["exp"] = float64(time.Now().Add(-time.Minute).Unix()) })
		unauthorized(t, "expired token", e.send("GET", "/api/auth/me", nil, bearer(sign(jwt.SigningMethodHS256, key, expired))))
		// alg none, and HS512 with the right key.
		unauthorized(t, "alg none", e.send("GET", "/api/auth/me", nil, bearer(sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims))))
		unauthorized(t, "HS512", e.send("GET", "/api/auth/me", nil, bearer(sign(jwt.SigningMethodHS512, key, claims))))

		// A token from before a password change (a reset).
		is.Equal(e.postForm("/api/reset", map[string]string{"email": email}).expect(200).JSON()["ok"], true)
		time.Sleep(2 * time.Millisecond) // the password version is in microseconds
		e.postForm("/api/reset/confirm", map[string]string{"token": e.mail.next(t, email), "password": "tok-password-2"}).expect(200)
		unauthorized(t, "token from before the password change", e.send("GET", "/api/auth/me", nil, bearer(tok)))

		// A deleted user's token. No route deletes users, so the row is
		// soft-deleted as a host would.
		tok2 := e.postForm("/api/login", map[string]string{"email": email, "password": "tok-password-2"}).expect(200).JSON()["token"].(string)
		e.send("GET", "/api/auth/me", nil, bearer(tok2)).expect(200)
		_, err = db.Exec(t.Context(), `UPDATE auth_users SET deleted_at = $1 WHERE id = $2`, time.Now().UTC(), userID)
		is.NoErr(err)
		unauthorized(t, "deleted user's token", e.send("GET", "/api/auth/me", nil, bearer(tok2)))
	})
}

// TestAuthSecurityResetAnswers: a reset request answers the same, status,
// body and headers, for a known and an unknown email.
func TestAuthSecurityResetAnswers(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("ResetSec")
		email := "rs." + randomHex(4) + "@acme.test"
		e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "rs-password", "organizationId": acme.OrgID}).expect(201)
		answer := func(r *response) string {
			h := r.Header.Clone()
			h.Del("X-Request-Id")
			b, _ := json.Marshal(h)
			return string(r.Body) + " " + string(b) + " " + http.StatusText(r.Status)
		}
		known := answer(e.postForm("/api/reset", map[string]string{"email": email}))
		for _, other := range []string{"nobody." + randomHex(4) + "@acme.test", strings.ToUpper(email), "not an email"} {
			if got := answer(e.postForm("/api/reset", map[string]string{"email": other})); got != known {
				t.Errorf("reset for %q answers %s; for a known email %s", other, got, known)
			}
		}
		if !strings.Contains(known, `"ok":true`) {
			t.Errorf("reset answers %s", known)
		}
	})
}

// TestAuthSecurityFeatureWildcards: "*" passes every feature check, "x.*"
// passes x and everything under it, anything else only itself, on real
// routes.
func TestAuthSecurityFeatureWildcards(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Wildcards")
		routes := []struct{ method, path string }{
			{"GET", "/api/business_rules/rules"},  // business_rules.rules.view
			{"POST", "/api/business_rules/rules"}, // business_rules.rules.create
			{"GET", "/api/business_rules/logs"},   // business_rules.logs.view
			{"GET", "/api/webhooks"},              // webhooks.view
		}
		for _, tt := range []struct {
			features []string
			allowed  []bool // per route
		}{
			{[]string{"*"}, []bool{true, true, true, true}},
			{[]string{"business_rules.*"}, []bool{true, true, true, false}},
			{[]string{"business_rules.rules.*"}, []bool{true, true, false, false}},
			{[]string{"business_rules.rules.view"}, []bool{true, false, false, false}},
			{[]string{"business_rules"}, []bool{false, false, false, false}},
			{[]string{"business_rulesx.*", "business_rules.rule.*"}, []bool{false, false, false, false}},
			{[]string{"webhooks.view"}, []bool{false, false, false, true}},
			{[]string{}, []bool{false, false, false, false}},
		} {
			key := e.newKey(tf, tt.features...)
			for i, rt := range routes {
				var body any
				if rt.method == "POST" {
					body = map[string]any{} // invalid: 400 once admitted
				}
				r := e.do(rt.method, rt.path, key, body)
				if allowed := r.Status != http.StatusForbidden; allowed != tt.allowed[i] {
					t.Errorf("features %v, %s %s: status %d, want allowed=%v; body %s", tt.features, rt.method, rt.path, r.Status, tt.allowed[i], r.Body)
				}
				if r.Status == http.StatusUnauthorized || r.Status >= 500 {
					t.Errorf("features %v, %s %s: status %d; body %s", tt.features, rt.method, rt.path, r.Status, r.Body)
				}
			}
		}
	})
}

// TestAuthSecurityOrganizationRestriction: a key whose role is limited to
// org1 reads none of org2's data (business rules here; the permission
// matrix covers the other routes) and creates no key in org2.
func TestAuthSecurityOrganizationRestriction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		g := e.newGrantFixture()
		key1, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID}, "*"))
		key2, _ := e.keyWith(g.tenantFixture, g.org2, e.newRole(g.tenantFixture, []string{g.org2}, "*"))
		rule := func(key, name string) string {
			body := map[string]any{"ruleId": name + "-" + randomHex(4), "ruleName": name, "ruleType": "GUARD", "entityType": "sec_order",
				"eventType": "beforeCreate", "conditionExpression": map[string]any{"field": "total", "operator": ">", "value": 100},
				"successActions": []any{}, "failureActions": []any{}, "enabled": true, "priority": 100, "version": 1}
			return e.do("POST", "/api/business_rules/rules", key, body).expect(201).JSON()["id"].(string)
		}
		own, theirs := rule(key1, "ORG1"), rule(key2, "ORG2")

		e.do("GET", "/api/business_rules/rules/"+own, key1, nil).expect(200) // the route works for org1's rule
		e.do("GET", "/api/business_rules/rules/"+theirs, key2, nil).expect(200)
		e.do("GET", "/api/business_rules/rules/"+theirs, key1, nil).expect(404)
		list := string(e.do("GET", "/api/business_rules/rules", key1, nil).expect(200).Body)
		is.True(strings.Contains(list, own))
		is.True(!strings.Contains(list, theirs))
		// Selecting org2 is ignored for a caller that may not read it.
		selectOrg2 := func(r *http.Request) {
			r.Header.Set("X-Api-Key", key1)
			r.AddCookie(&http.Cookie{Name: identity.SelectedOrganizationCookie, Value: g.org2})
		}
		is.Equal(e.send("GET", "/api/auth/me", nil, selectOrg2).expect(200).JSON()["organizationId"], g.OrgID)
		e.send("GET", "/api/business_rules/rules/"+theirs, nil, selectOrg2).expect(404)

		// No key in org2 (named, or with org2 selected); one in org1 is fine.
		// org2's key list, where such a key would show, has none.
		forbidden(t, e.do("POST", "/api/api_keys/keys", key1, map[string]any{"name": "x", "organizationId": g.org2, "roles": []string{}}), "organizationId")
		e.send("POST", "/api/api_keys/keys", map[string]any{"name": "x", "organizationId": g.org2, "roles": []string{}}, selectOrg2).expect(403)
		e.do("POST", "/api/api_keys/keys", key1, map[string]any{"name": "x", "organizationId": g.OrgID, "roles": []string{}}).expect(201)
		for _, k := range e.do("GET", "/api/api_keys/keys", key2, nil).expect(200).JSON()["items"].([]any) {
			if k.(map[string]any)["name"] == "x" {
				t.Errorf("org2 holds a key named x: %v", k)
			}
		}
	})
}
