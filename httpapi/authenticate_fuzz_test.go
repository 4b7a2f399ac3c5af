package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/identity"
)

// FuzzCredential reads arbitrary X-Api-Key and Authorization header
// values with credential. Whatever they hold: the secret carries no
// surrounding white space; a non-blank X-Api-Key wins, as an API key;
// otherwise only the ApiKey and Bearer schemes (any case) give a secret,
// the rest of the Authorization value, and only Bearer marks it as one;
// any other scheme (Basic, none) gives no credential.
func FuzzCredential(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"tk_abc", "Bearer eyJ.x.y"},
		{"  tk_abc\t", ""},
		{" ", "ApiKey tk_abc"},
		{"", "apikey   tk_abc  "},
		{"", "BEARER eyJhbGciOiJIUzI1NiJ9.e30.sig"},
		{"", "Bearer"},
		{"", "Bearer "},
		{"", "Bearer\ttk_abc"},
		{"", "Basic dXNlcjpwYXNz"},
		{"", "Bearer a b c"},
		{"", " Bearer tk_abc"},
		{"\x00", "Bearer \x00"},
		{"", "Bearer \xff\xfe"},
		{"", "ApiKey\u00a0tk_abc"},
		{"\r\ntk_abc", "Bearer tk\r\nX-Api-Key: other"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, apiKey, authorization string) {
		r := httptest.NewRequest("GET", "/api/auth/me", nil)
		r.Header["X-Api-Key"] = []string{apiKey}
		r.Header["Authorization"] = []string{authorization}
		c := credential(r)
		if strings.TrimSpace(c.Secret) != c.Secret {
			t.Fatalf("credential(%q, %q): secret %q has surrounding white space", apiKey, authorization, c.Secret)
		}
		if k := strings.TrimSpace(apiKey); k != "" {
			if c != (identity.Credential{Secret: k}) {
				t.Fatalf("credential(%q, %q) = %+v, want the X-Api-Key %q as a key", apiKey, authorization, c, k)
			}
			return
		}
		// A model of the Authorization header: "<scheme> <value>" after
		// trimming, split at the first space.
		a := strings.TrimSpace(authorization)
		i := strings.IndexByte(a, ' ')
		want := identity.Credential{}
		if i >= 0 {
			scheme, value := strings.ToLower(a[:i]), strings.TrimSpace(a[i+1:])
			switch scheme {
			case "apikey":
				want = identity.Credential{Secret: value}
			case "bearer":
				want = identity.Credential{Secret: value, Bearer: true}
			}
		}
		if c.Secret == "" {
			want.Bearer = c.Bearer // no secret: the flag does not matter
		}
		if c != want {
			t.Fatalf("credential(%q, %q) = %+v, want %+v", apiKey, authorization, c, want)
		}
		if c.Secret != "" && !strings.Contains(authorization, c.Secret) {
			t.Fatalf("credential(%q, %q): secret %q is not from the header", apiKey, authorization, c.Secret)
		}
	})
}

// fuzzAuthEnv is an environment with credentials of every kind, their
// expected identities, and the ids a selection cookie may name.
type fuzzAuthEnv struct {
	engine string
	e      *testEnv
	vars   map[string]string // placeholder → value
	ids    map[string]fuzzAuthID
}

type fuzzAuthID struct {
	tenant     string
	userID     string
	apiKeyID   string
	superAdmin bool
	bearerOnly bool
}

func newFuzzAuthEnv(f *testing.F, engine string, e *testEnv) *fuzzAuthEnv {
	f.Helper()
	ctx := f.Context()
	boot := e.do("GET", "/api/auth/me", e.superKey, nil).expect(200).JSON()
	tf := e.newTenant("Fuzz Auth")
	key, keyID := e.newKeyWithID(tf, "webhooks.view")
	email := "fz-" + randomHex(4) + "@fuzz.test"
	e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "fuzz-password", "organizationId": tf.OrgID, "tenantId": tf.ID}).expect(201)
	token, id, err := e.auth.Login(ctx, email, "fuzz-password", "")
	if err != nil {
		f.Fatal(err)
	}
	org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Second", "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	bootTenant := boot["tenantId"].(string)
	return &fuzzAuthEnv{
		engine: engine, e: e,
		vars: map[string]string{"$SUPER": e.superKey, "$KEY": key, "$TOKEN": token, "$TENANT": tf.ID, "$ORG": tf.OrgID, "$ORG2": org2,
			"$BOOT": bootTenant},
		ids: map[string]fuzzAuthID{
			e.superKey: {tenant: bootTenant, apiKeyID: boot["apiKeyId"].(string), superAdmin: true},
			key:        {tenant: tf.ID, apiKeyID: keyID},
			token:      {tenant: tf.ID, userID: id.UserID, bearerOnly: true},
		},
	}
}

// expand replaces the placeholders in s by the environment's values.
func (fe *fuzzAuthEnv) expand(s string) string {
	for _, k := range []string{"$SUPER", "$KEY", "$TOKEN", "$TENANT", "$ORG2", "$ORG", "$BOOT"} {
		s = strings.ReplaceAll(s, k, fe.vars[k])
	}
	return s
}

// FuzzAuthenticateHeaders sends GET /api/auth/me and GET /api/auth/roles
// (which the fixture's key and user may not read) with arbitrary
// X-Api-Key, Authorization and Cookie headers, in which the placeholders
// $SUPER, $KEY and $TOKEN stand for valid credentials and $TENANT, $ORG,
// $ORG2 and $BOOT for ids a selection cookie may name. The answer is 200
// exactly when the header the API reads holds a valid credential, as
// the doc of credential describes (a session token only as a bearer),
// with that credential's identity; otherwise 401 with an {error} body,
// never 403 or a 5xx. The roles list answers 401 to the same invalid
// credentials, and 403 (never 200) to the valid ones that lack the
// feature.
func FuzzAuthenticateHeaders(f *testing.F) {
	for _, s := range [][3]string{
		{"", "", ""},
		{"$SUPER", "", ""},
		{"", "ApiKey $KEY", ""},
		{"", "Bearer $KEY", ""},
		{"", "bearer $TOKEN", "app_selected_org=$ORG2"},
		{"", "ApiKey $TOKEN", ""},
		{"$TOKEN", "", ""},
		{"$SUPER", "", "app_selected_tenant=$TENANT; app_selected_org=$ORG2"},
		{"$KEY", "", "app_selected_tenant=$BOOT; app_selected_org=$ORG2"},
		{" $KEY ", "Bearer nonsense", ""},
		{" ", "Bearer  $TOKEN ", "app_selected_org=%00"},
		{"", "Bearer $TOKEN.", ""},
		{"", "Bearer $TOKENx", ""},
		{"$KEY$KEY", "", ""},
		{"", "Basic $SUPER", ""},
		{"", "Bearer", ""},
		{"tk_", "", ""},
		{"tk_0123456\x7f", "", ""},
		{"", "ApiKey tk_012345678\u00e9", "app_selected_tenant=\xff; app_selected_org=$ORG"},
		{"", "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", ""},
		{"", "Bearer eyJ..", "app_selected_tenant=\"$TENANT\""},
		{"", "Bearer $SUPER", "app_selected_tenant=$TENANT; app_selected_tenant=$BOOT"},
		{"' OR 1=1 --", "", "app_selected_tenant=' OR ''='"},
		{"%", "", "app_selected_org=%; app_selected_tenant=_"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	var envs []*fuzzAuthEnv
	for _, fe := range fuzzEnvs(f) {
		envs = append(envs, newFuzzAuthEnv(f, fe.engine, fe.testEnv))
	}
	f.Fuzz(func(t *testing.T, apiKey, authorization, cookie string) {
		for _, fe := range envs {
			apiKey, authorization, cookie := fe.expand(apiKey), fe.expand(authorization), fe.expand(cookie)
			headers := func(r *http.Request) {
				r.Header["X-Api-Key"] = []string{apiKey}
				r.Header["Authorization"] = []string{authorization}
				r.Header["Cookie"] = []string{cookie}
			}
			// The header the API reads (credential's doc).
			secret, bearer := strings.TrimSpace(apiKey), false
			if secret == "" {
				scheme, value, _ := strings.Cut(strings.TrimSpace(authorization), " ")
				switch strings.ToLower(scheme) {
				case "apikey":
					secret = strings.TrimSpace(value)
				case "bearer":
					secret, bearer = strings.TrimSpace(value), true
				}
			}
			want, valid := fe.ids[secret]
			valid = valid && (bearer || !want.bearerOnly)

			e := fe.e.with(t)
			r := e.send("GET", "/api/auth/me", nil, headers)
			where := fe.engine + ": GET /api/auth/me with X-Api-Key " + fzQuote(apiKey) + ", Authorization " + fzQuote(authorization) + ", Cookie " + fzQuote(cookie)
			switch {
			case valid && r.Status == http.StatusOK:
				var me struct {
					TenantID       string  `json:"tenantId"`
					OrganizationID *string `json:"organizationId"`
					UserID         *string `json:"userId"`
					APIKeyID       *string `json:"apiKeyId"`
					IsSuperAdmin   bool    `json:"isSuperAdmin"`
				}
				if err := json.Unmarshal(r.Body, &me); err != nil {
					t.Fatalf("%s: body %s: %v", where, r.Body, err)
				}
				if fzDeref(me.UserID) != want.userID || fzDeref(me.APIKeyID) != want.apiKeyID || me.IsSuperAdmin != want.superAdmin {
					t.Fatalf("%s: identity %s, want %+v", where, r.Body, want)
				}
				if !want.superAdmin && me.TenantID != want.tenant {
					t.Fatalf("%s: a selection cookie moved a caller to tenant %q (own %q)", where, me.TenantID, want.tenant)
				}
			case !valid && r.Status == http.StatusUnauthorized:
				if body := r.JSON(); body["error"] == nil {
					t.Fatalf("%s: 401 without an error: %s", where, r.Body)
				}
			default:
				t.Fatalf("%s: status %d (valid credential: %v): %s", where, r.Status, valid, r.Body)
			}

			r = e.send("GET", "/api/auth/roles", nil, headers)
			switch {
			case !valid && r.Status == http.StatusUnauthorized:
			case valid && want.superAdmin && r.Status == http.StatusOK:
			case valid && !want.superAdmin && r.Status == http.StatusForbidden:
			default:
				t.Fatalf("%s: GET /api/auth/roles: status %d (valid credential: %v, super admin %v): %s", where, r.Status, valid, want.superAdmin, r.Body)
			}
		}
	})
}

func fzDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func fzQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
