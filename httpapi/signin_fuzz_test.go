package httpapi

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzSignInForms posts arbitrary bodies, with arbitrary Content-Types,
// to the sign-in routes (POST /api/login, /api/reset and
// /api/reset/confirm), with rate limiting off so that every request
// reaches the form parsing; $EMAIL and $PASSWORD in the body stand for a
// real account's. (FuzzRequestBodies sends bodies to /api/login under
// the default limits, where most answers are 429s.) No answer is a 5xx;
// errors are {ok:false, error}. Login answers 200 with a token that
// authenticates as the account, or 400, 401 or 413; a reset request 200
// or 400 or 413; a reset confirmation never succeeds with a token nobody
// was mailed.
func FuzzSignInForms(f *testing.F) {
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.SetBoundary("fuzzboundary")
	_ = mw.WriteField("email", "$EMAIL")
	_ = mw.WriteField("password", "$PASSWORD")
	_ = mw.Close()
	for _, s := range [][2]string{
		{"application/json", `{"email":"$EMAIL","password":"$PASSWORD"}`},
		{"application/json; charset=utf-8", `{"email":"$EMAIL","password":"$PASSWORD","tenantId":"x"}`},
		{"application/json", `{"email":5,"password":null,"token":[1]}`},
		{"application/json", `{"email":"$EMAIL\u0000","password":"$PASSWORD"}`},
		{"application/json", `{"email":"$EMAIL","password":"$PASSWORD"`},
		{"application/x-www-form-urlencoded", form("email", "$EMAIL", "password", "$PASSWORD")},
		{"application/x-www-form-urlencoded", form("email", "$EMAIL", "password", "wrong", "token", "x")},
		{"application/x-www-form-urlencoded", "email=%zz&password=%"},
		{"application/x-www-form-urlencoded", "email=%00&password=%ff&token=%00"},
		{"multipart/form-data; boundary=fuzzboundary", mp.String()},
		{"multipart/form-data; boundary=fuzzboundary", mp.String()[:40]},
		{"multipart/form-data", mp.String()},
		{"multipart/form-data; boundary=", ""},
		{"text/plain", "email=$EMAIL&password=$PASSWORD"},
		{"", "email=$EMAIL&password=$PASSWORD"},
		{"application/json", strings.Repeat("[", 100000)},
		{"\x00", "\xff"},
	} {
		f.Add(s[0], s[1])
	}
	type fixture struct {
		fuzzEnv
		email, password, userID string
	}
	var fxs []fixture
	for _, fe := range fuzzEnvs(f) {
		tf := fe.newTenant("Fuzz Sign-in")
		email := "fz-" + randomHex(4) + "@signin.test"
		body := map[string]any{"email": email, "password": "fuzz-password-1", "organizationId": tf.OrgID, "tenantId": tf.ID}
		u := fe.do("POST", "/api/auth/users", fe.superKey, body).expect(201).JSON()
		fxs = append(fxs, fixture{fe, email, "fuzz-password-1", u["id"].(string)})
	}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		for _, fx := range fxs {
			e := fx.with(t)
			b := strings.NewReplacer("$EMAIL", fx.email, "$PASSWORD", fx.password).Replace(body)
			post := func(path string) *response {
				return e.send("POST", path, b, func(r *http.Request) { r.Header["Content-Type"] = []string{contentType} })
			}
			where := func(path string) string {
				return fx.engine + ": POST " + path + " (" + fzQuote(contentType) + ") " + fzQuote(b)
			}
			checkError := func(path string, r *response) {
				t.Helper()
				var eb struct {
					OK    *bool   `json:"ok"`
					Error *string `json:"error"`
				}
				if err := json.Unmarshal(r.Body, &eb); err != nil || eb.OK == nil || *eb.OK || eb.Error == nil {
					t.Fatalf("%s: %d with body %s, want {ok:false, error}", where(path), r.Status, r.Body)
				}
			}

			r := post("/api/login")
			switch r.Status {
			case http.StatusOK:
				var ok struct {
					OK    bool   `json:"ok"`
					Token string `json:"token"`
				}
				if err := json.Unmarshal(r.Body, &ok); err != nil || !ok.OK || ok.Token == "" {
					t.Fatalf("%s: 200 with %s", where("/api/login"), r.Body)
				}
				me := e.send("GET", "/api/auth/me", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+ok.Token) })
				if me.Status != http.StatusOK || me.JSON()["userId"] != fx.userID {
					t.Fatalf("%s: the token authenticates as %d %s", where("/api/login"), me.Status, me.Body)
				}
			case http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestEntityTooLarge:
				checkError("/api/login", r)
			default:
				t.Fatalf("%s: status %d: %s", where("/api/login"), r.Status, r.Body)
			}

			r = post("/api/reset")
			switch r.Status {
			case http.StatusOK:
				if r.JSON()["ok"] != true {
					t.Fatalf("%s: 200 with %s", where("/api/reset"), r.Body)
				}
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
				checkError("/api/reset", r)
			default:
				t.Fatalf("%s: status %d: %s", where("/api/reset"), r.Status, r.Body)
			}

			r = post("/api/reset/confirm")
			switch r.Status {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
				checkError("/api/reset/confirm", r)
			default:
				t.Fatalf("%s: status %d: %s", where("/api/reset/confirm"), r.Status, r.Body)
			}
		}
	})
}
