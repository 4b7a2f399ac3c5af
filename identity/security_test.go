package identity

// Security tests of the identity service: API key storage and checks,
// session tokens, password reset tokens and password hashes, on both
// engines, with a clock the test moves (store.Options.Clock) so that
// expiry and the credential cache's bound are asserted exactly.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

var secTestKey = []byte("0123456789abcdef0123456789abcdef")

// secClock is a clock the test moves by hand.
type secClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *secClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *secClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// secMailer keeps every reset token sent, in order.
type secMailer struct {
	mu   sync.Mutex
	sent []sentReset
}

type sentReset struct{ email, token string }

func (m *secMailer) SendPasswordReset(_ context.Context, email, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, sentReset{email, token})
	return nil
}

func (m *secMailer) take() []sentReset {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.sent
	m.sent = nil
	return out
}

// secEnv is a Service over a fresh database with a hand-moved clock, one
// tenant with one organization, and a role holding webhooks.view.
type secEnv struct {
	t      *testing.T
	db     *store.DB
	svc    *Service
	clk    *secClock
	mail   *secMailer
	tenant *Tenant
	org    *Organization
	roleID string
}

func newSecEnv(t *testing.T, url string, cfg Options) *secEnv {
	t.Helper()
	ctx := t.Context()
	clk := &secClock{now: time.Now().UTC().Truncate(time.Second)}
	db, err := store.Open(ctx, url, &store.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mail := &secMailer{}
	cfg.SecretKey, cfg.Mailer = secTestKey, mail
	svc, err := openIdentity(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &secEnv{t: t, db: db, svc: svc, clk: clk, mail: mail}
	e.tenant, e.org = e.newTenant("Sec")
	r, err := svc.CreateRole(ctx, System, "viewer", e.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetRoleACL(ctx, System, ACLInput{RoleID: r.ID, Features: []string{"webhooks.view"}}); err != nil {
		t.Fatal(err)
	}
	e.roleID = r.ID
	return e
}

func (e *secEnv) newTenant(name string) (*Tenant, *Organization) {
	e.t.Helper()
	ctx := e.t.Context()
	tn, err := e.svc.CreateTenant(ctx, System, name)
	if err != nil {
		e.t.Fatal(err)
	}
	o, err := e.svc.CreateOrganization(ctx, System, OrganizationInput{Name: name + " HQ", TenantID: tn.ID})
	if err != nil {
		e.t.Fatal(err)
	}
	return tn, o
}

// other is a second Service over the same database, as another process
// (or a restart with another key) would be: its own cache, its own key.
func (e *secEnv) other(key []byte) *Service {
	e.t.Helper()
	svc, err := New(e.db, Options{SecretKey: key, Mailer: e.mail})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

func (e *secEnv) newKey(in APIKeyInput) (*APIKey, string) {
	e.t.Helper()
	in.Name, in.TenantID, in.OrganizationID, in.Roles = "k", e.tenant.ID, e.org.ID, []string{e.roleID}
	k, secret, err := e.svc.CreateAPIKey(e.t.Context(), System, in)
	if err != nil {
		e.t.Fatal(err)
	}
	return k, secret
}

func (e *secEnv) newUser(orgID, email, password string) *User {
	e.t.Helper()
	u, err := e.svc.CreateUser(e.t.Context(), System, UserInput{Email: email, Password: password, OrganizationID: orgID, Roles: []string{}})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

func (e *secEnv) login(email, password, tenantID string) string {
	e.t.Helper()
	tok, _, err := e.svc.Login(e.t.Context(), email, password, tenantID)
	if err != nil {
		e.t.Fatalf("login %s: %v", email, err)
	}
	return tok
}

// storedPasswordHash reads a user's password hash as stored.
func (e *secEnv) storedPasswordHash(userID string) string {
	e.t.Helper()
	var h string
	if err := e.db.QueryRow(e.t.Context(), `SELECT password_hash FROM auth_users WHERE id = $1`, userID).Scan(&h); err != nil {
		e.t.Fatal(err)
	}
	return h
}

func wantUnauthenticated(t *testing.T, what string, id *Identity, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnauthenticated) || id != nil {
		t.Errorf("%s: got identity %v, error %v; want ErrUnauthenticated", what, id, err)
	}
}

func TestSecurityAPIKeyStoredHashed(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{})
		ctx := t.Context()
		k, secret := e.newKey(APIKeyInput{})
		var cols [7]string
		if err := e.db.QueryRow(ctx, `SELECT id, tenant_id, COALESCE(organization_id, ''), name, COALESCE(description, ''), key_prefix, secret_hash
			FROM auth_api_keys WHERE id = $1`, k.ID).Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5], &cols[6]); err != nil {
			t.Fatal(err)
		}
		tail := secret[keyPrefixLength:] // everything but the public prefix
		for i, c := range cols {
			if strings.Contains(c, secret) || strings.Contains(c, tail) {
				t.Errorf("column %d of the stored key holds the secret: %q", i, c)
			}
		}
		if cols[5] != secret[:keyPrefixLength] {
			t.Errorf("stored prefix %q, want the secret's first %d characters", cols[5], keyPrefixLength)
		}
		sum := sha256.Sum256([]byte(secret))
		if cols[6] != hex.EncodeToString(sum[:]) {
			t.Errorf("secret_hash %q is not the documented SHA-256 of the secret", cols[6])
		}
		// Nor is it in the events written with the key.
		evs, err := store.ListEvents(ctx, e.db, store.EventFilter{TenantID: e.tenant.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), tail) {
				t.Errorf("event %s holds the secret: %s", ev.Type, ev.Data)
			}
		}
	})
}

func TestSecurityAPIKeyWrongSecret(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{})
		ctx := t.Context()
		_, secret := e.newKey(APIKeyInput{})
		// The right key first, so that a cached identity is there to leak.
		if _, err := e.svc.AuthenticateKey(ctx, secret); err != nil {
			t.Fatal(err)
		}
		last := secret[len(secret)-1]
		flip := byte('0')
		if last == '0' {
			flip = '1'
		}
		for name, wrong := range map[string]string{
			"last character changed": secret[:len(secret)-1] + string(flip),
			"one character more":     secret + "0",
			"one character fewer":    secret[:len(secret)-1],
			"prefix only":            secret[:keyPrefixLength],
			"prefix and garbage":     secret[:keyPrefixLength] + ".deadbeef",
			"upper-cased":            strings.ToUpper(secret),
		} {
			id, err := e.svc.AuthenticateKey(ctx, wrong)
			wantUnauthenticated(t, name, id, err)
			id, err = e.svc.Authenticate(ctx, Credential{Secret: wrong, Bearer: true}, Selection{})
			wantUnauthenticated(t, name+" (bearer)", id, err)
		}
	})
}

// TestSecurityKeyComparisonIsConstantTime: timing cannot be asserted
// reliably in a test, so this checks the code: keyIdentity (AuthenticateKey's
// check) compares the stored hash with crypto/subtle.ConstantTimeCompare and nowhere
// compares a SecretHash with == or != (which stops at the first differing
// byte), and verifyPassword compares Argon2id keys the same way. The
// comparison is also of SHA-256 digests, not of the secrets themselves,
// so even a leak of timing would say nothing about the secret's bytes.
func TestSecurityKeyComparisonIsConstantTime(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for file, fn := range map[string]string{"authn.go": "keyIdentity", "password.go": "verifyPassword"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var body *ast.FuncDecl
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
				body = fd
			}
		}
		if body == nil {
			t.Fatalf("%s: no func %s", file, fn)
		}
		constantTime := false
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "subtle" {
						constantTime = true
					}
				}
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					for _, side := range []ast.Expr{n.X, n.Y} {
						if sel, ok := side.(*ast.SelectorExpr); ok && sel.Sel.Name == "SecretHash" {
							t.Errorf("%s: %s compares SecretHash with %s", fset.Position(n.Pos()), fn, n.Op)
						}
					}
				}
			}
			return true
		})
		if !constantTime {
			t.Errorf("%s: %s does not call subtle.ConstantTimeCompare", file, fn)
		}
	}
}

func TestSecurityAPIKeyExpiredAndDeleted(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{CacheTTL: 5 * time.Second})
		ctx := t.Context()

		// Expiry: the key works until its ExpiresAt, and not at it, even
		// with a fresh cached identity.
		expires := e.clk.Now().Add(time.Minute)
		_, shortLived := e.newKey(APIKeyInput{ExpiresAt: &expires})
		e.clk.advance(58 * time.Second)
		if _, err := e.svc.AuthenticateKey(ctx, shortLived); err != nil {
			t.Fatalf("a key 2s before its expiry: %v", err)
		}
		e.clk.advance(2 * time.Second) // the cache entry is 2s old, the key expired
		id, err := e.svc.AuthenticateKey(ctx, shortLived)
		wantUnauthenticated(t, "expired key (cached)", id, err)
		id, err = e.other(secTestKey).AuthenticateKey(ctx, shortLived)
		wantUnauthenticated(t, "expired key (no cache)", id, err)

		// Deleted through the Service: refused at once, cache or not.
		k, secret := e.newKey(APIKeyInput{})
		if _, err := e.svc.AuthenticateKey(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteAPIKey(ctx, System, k.ID); err != nil {
			t.Fatal(err)
		}
		id, err = e.svc.AuthenticateKey(ctx, secret)
		wantUnauthenticated(t, "deleted key", id, err)

		// Deleted through another Service on the database (another
		// process, in effect): refused by the next request where processes
		// share the database (TestRevokedAcrossProcesses has more); on
		// SQLite, which one process owns, once CacheTTL has passed at the
		// latest.
		k2, secret2 := e.newKey(APIKeyInput{})
		if _, err := e.svc.AuthenticateKey(ctx, secret2); err != nil {
			t.Fatal(err)
		}
		if err := e.other(secTestKey).DeleteAPIKey(ctx, System, k2.ID); err != nil {
			t.Fatal(err)
		}
		if e.db.Dialect().Notifies() {
			id, err = e.svc.AuthenticateKey(ctx, secret2)
			wantUnauthenticated(t, "key deleted elsewhere", id, err)
		}
		e.clk.advance(5*time.Second + time.Millisecond)
		id, err = e.svc.AuthenticateKey(ctx, secret2)
		wantUnauthenticated(t, "key deleted elsewhere, after CacheTTL", id, err)
	})
}

// splitJWT returns a token's header and claims, decoded.
func splitJWT(t *testing.T, tok string) (header, claims map[string]any, sig string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	dec := func(s string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	return dec(parts[0]), dec(parts[1]), parts[2]
}

func encodeJWTPart(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestSecuritySessionTokens(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{SessionTTL: time.Hour, CacheTTL: 5 * time.Second})
		ctx := t.Context()
		org2, err := e.svc.CreateOrganization(ctx, System, OrganizationInput{Name: "Second", TenantID: e.tenant.ID})
		if err != nil {
			t.Fatal(err)
		}
		u := e.newUser(e.org.ID, "ann@sec.test", "ann-password")
		tok := e.login("ann@sec.test", "ann-password", "")
		if id, err := e.svc.AuthenticateToken(ctx, tok); err != nil || id.UserID != u.ID {
			t.Fatalf("the fresh token: %v, %v", id, err)
		}
		header, claims, sig := splitJWT(t, tok)

		// Payload changed, signature kept.
		for name, edit := range map[string]func(m map[string]any){
			"exp extended":        func(m map[string]any) { m["exp"] = m["exp"].(float64) + 86400 },
			"other organization":  func(m map[string]any) { m["orgId"] = org2.ID },
			"password version +1": func(m map[string]any) { m["pv"] = m["pv"].(float64) + 1 },
		} {
			m := map[string]any{}
			for k, v := range claims {
				m[k] = v
			}
			edit(m)
			forged := encodeJWTPart(t, header) + "." + encodeJWTPart(t, m) + "." + sig
			id, err := e.svc.AuthenticateToken(ctx, forged)
			wantUnauthenticated(t, "tampered: "+name, id, err)
		}

		// Signed with another key: a rotated secret key signs everyone out,
		// both ways.
		otherKey := []byte("fedcba9876543210fedcba9876543210")
		rotated := e.other(otherKey)
		id, err := rotated.AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "old token after key rotation", id, err)
		otherTok, _, err := rotated.Login(ctx, "ann@sec.test", "ann-password", "")
		if err != nil {
			t.Fatal(err)
		}
		id, err = e.svc.AuthenticateToken(ctx, otherTok)
		wantUnauthenticated(t, "token of another key", id, err)

		// alg none, and algorithms other than HS256 even with the right key.
		mc := jwt.MapClaims(claims)
		none, err := jwt.NewWithClaims(jwt.SigningMethodNone, mc).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		id, err = e.svc.AuthenticateToken(ctx, none)
		wantUnauthenticated(t, "alg none", id, err)
		id, err = e.svc.Authenticate(ctx, Credential{Secret: none, Bearer: true}, Selection{})
		wantUnauthenticated(t, "alg none (bearer)", id, err)
		noneHeader := encodeJWTPart(t, map[string]any{"alg": "none", "typ": "JWT"})
		id, err = e.svc.AuthenticateToken(ctx, noneHeader+"."+strings.Split(tok, ".")[1]+"."+sig)
		wantUnauthenticated(t, "alg none with the real signature", id, err)
		hs384, err := jwt.NewWithClaims(jwt.SigningMethodHS384, mc).SignedString(secTestKey)
		if err != nil {
			t.Fatal(err)
		}
		id, err = e.svc.AuthenticateToken(ctx, hs384)
		wantUnauthenticated(t, "HS384 with the right key", id, err)

		// Signed with the right key but expired, or without an expiry.
		sign := func(m map[string]any) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(m)).SignedString(secTestKey)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		past := map[string]any{}
		noExp := map[string]any{}
		for k, v := range claims {
			past[k], noExp[k] = v, v
		}
		past["exp"] = float64(e.clk.Now().Add(-time.Second).Unix())
		delete(noExp, "exp")
		if _, err := e.svc.AuthenticateToken(ctx, sign(claims)); err != nil {
			t.Fatalf("the same claims re-signed with the right key must pass (the cases below would prove nothing): %v", err)
		}
		id, err = e.svc.AuthenticateToken(ctx, sign(past))
		wantUnauthenticated(t, "expired (signed with the right key)", id, err)
		id, err = e.svc.AuthenticateToken(ctx, sign(noExp))
		wantUnauthenticated(t, "no exp", id, err)

		// The real token expires after SessionTTL, cached or not.
		e.clk.advance(time.Hour - 2*time.Second)
		if _, err := e.svc.AuthenticateToken(ctx, tok); err != nil {
			t.Fatalf("token 2s before its end: %v", err)
		}
		e.clk.advance(3 * time.Second)
		id, err = e.svc.AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "expired session", id, err)
	})
}

func TestSecuritySessionEndsWithUserAndPassword(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{CacheTTL: 5 * time.Second})
		ctx := t.Context()

		// A password change ends the sessions issued before it.
		e.newUser(e.org.ID, "bob@sec.test", "bob-password")
		tok := e.login("bob@sec.test", "bob-password", "")
		if _, err := e.svc.AuthenticateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		e.clk.advance(time.Second)
		if err := e.svc.RequestPasswordReset(ctx, "bob@sec.test"); err != nil {
			t.Fatal(err)
		}
		sent := e.mail.take()
		if len(sent) != 1 {
			t.Fatalf("%d reset mails, want 1", len(sent))
		}
		if err := e.svc.ConfirmPasswordReset(ctx, sent[0].token, "bob-new-password"); err != nil {
			t.Fatal(err)
		}
		id, err := e.svc.AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "token from before the password change", id, err)
		id, err = e.other(secTestKey).AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "token from before the password change (no cache)", id, err)
		e.login("bob@sec.test", "bob-new-password", "")

		// A deleted user's token: there is no Service call to delete a
		// user, so the row is soft-deleted as a host would, without
		// CredentialsChanged (TestRevokedAcrossProcesses has it with):
		// the version counter does not carry it, so another Service
		// refuses the token at once, this one within CacheTTL.
		u := e.newUser(e.org.ID, "cy@sec.test", "cy-password")
		tok = e.login("cy@sec.test", "cy-password", "")
		if _, err := e.svc.AuthenticateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Exec(ctx, `UPDATE auth_users SET deleted_at = $1 WHERE id = $2`, e.clk.Now(), u.ID); err != nil {
			t.Fatal(err)
		}
		id, err = e.other(secTestKey).AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "deleted user's token (no cache)", id, err)
		e.clk.advance(5*time.Second + time.Millisecond)
		id, err = e.svc.AuthenticateToken(ctx, tok)
		wantUnauthenticated(t, "deleted user's token after CacheTTL", id, err)
		if _, _, err := e.svc.Login(ctx, "cy@sec.test", "cy-password", ""); !errors.Is(err, ErrInvalidLogin) {
			t.Errorf("a deleted user signs in: %v", err)
		}
	})
}

func TestSecurityPasswordReset(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{ResetTTL: 10 * time.Minute})
		ctx := t.Context()
		tenant2, org2 := e.newTenant("Sec two")
		a := e.newUser(e.org.ID, "dee@sec.test", "dee-password-a")
		b := e.newUser(org2.ID, "dee@sec.test", "dee-password-b") // the same email, another tenant
		e.newUser(e.org.ID, "eve@sec.test", "eve-password")

		// Unknown and known emails get the same answer; only the known one
		// gets mail.
		if err := e.svc.RequestPasswordReset(ctx, "nobody@sec.test"); err != nil {
			t.Errorf("unknown email: %v", err)
		}
		if sent := e.mail.take(); len(sent) != 0 {
			t.Fatalf("mail sent for an unknown email: %v", sent)
		}
		if err := e.svc.RequestPasswordReset(ctx, "DEE@sec.test "); err != nil {
			t.Errorf("known email: %v", err)
		}
		sent := e.mail.take()
		if len(sent) != 2 || sent[0].token == sent[1].token {
			t.Fatalf("%d reset mails for an email of two accounts, want 2 distinct", len(sent))
		}

		// Each token changes exactly its own account's password.
		canLogin := func(email, password, tenantID string) bool {
			_, _, err := e.svc.Login(ctx, email, password, tenantID)
			return err == nil
		}
		e.clk.advance(time.Second)
		if err := e.svc.ConfirmPasswordReset(ctx, sent[0].token, "dee-new-password-1"); err != nil {
			t.Fatal(err)
		}
		aChanged := canLogin("dee@sec.test", "dee-new-password-1", e.tenant.ID)
		bChanged := canLogin("dee@sec.test", "dee-new-password-1", tenant2.ID)
		if aChanged == bChanged {
			t.Fatalf("one token changed %v accounts' passwords (a %v, b %v), want exactly one", map[bool]int{true: 2, false: 0}[aChanged], aChanged, bChanged)
		}
		unchanged, unchangedPassword := b, "dee-password-b"
		if bChanged {
			unchanged, unchangedPassword = a, "dee-password-a"
		}
		if !canLogin("dee@sec.test", unchangedPassword, unchanged.TenantID) {
			t.Errorf("the other account's password changed too")
		}
		if !canLogin("eve@sec.test", "eve-password", "") {
			t.Errorf("another user's password changed")
		}

		// Single use: the second confirm fails and changes nothing.
		if err := e.svc.ConfirmPasswordReset(ctx, sent[0].token, "dee-new-password-2"); !errors.Is(err, ErrInvalidResetToken) {
			t.Errorf("second use of a reset token: %v", err)
		}
		if canLogin("dee@sec.test", "dee-new-password-2", "") || canLogin("dee@sec.test", "dee-new-password-2", e.tenant.ID) ||
			canLogin("dee@sec.test", "dee-new-password-2", tenant2.ID) {
			t.Errorf("a used token set a password")
		}

		// Expiry: a token works until ResetTTL, not after.
		if err := e.svc.RequestPasswordReset(ctx, "eve@sec.test"); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.RequestPasswordReset(ctx, "eve@sec.test"); err != nil {
			t.Fatal(err)
		}
		eve := e.mail.take()
		if len(eve) != 2 {
			t.Fatalf("%d reset mails, want 2", len(eve))
		}
		e.clk.advance(10*time.Minute - time.Second)
		if err := e.svc.ConfirmPasswordReset(ctx, eve[0].token, "eve-password-2"); err != nil {
			t.Errorf("a token 1s before its expiry: %v", err)
		}
		e.clk.advance(2 * time.Second)
		if err := e.svc.ConfirmPasswordReset(ctx, eve[1].token, "eve-password-3"); !errors.Is(err, ErrInvalidResetToken) {
			t.Errorf("an expired token: %v", err)
		}
		if !canLogin("eve@sec.test", "eve-password-2", "") || canLogin("eve@sec.test", "eve-password-3", "") {
			t.Errorf("an expired token set the password")
		}
	})
}

func TestSecurityPasswordHashes(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		e := newSecEnv(t, url, Options{})
		const password = "same password for both"
		u1 := e.newUser(e.org.ID, "fay@sec.test", password)
		u2 := e.newUser(e.org.ID, "gus@sec.test", password)
		h1, h2 := e.storedPasswordHash(u1.ID), e.storedPasswordHash(u2.ID)
		checkHash := func(h string) (salt string) {
			t.Helper()
			if h == password || strings.Contains(h, password) || strings.Contains(h, base64.RawStdEncoding.EncodeToString([]byte(password))) {
				t.Errorf("the stored hash holds the password: %q", h)
			}
			// The documented algorithm and parameters: Argon2id v19,
			// 19 MiB, 2 passes, one lane, 16-byte salt, 32-byte key.
			const params = "$argon2id$v=19$m=19456,t=2,p=1$"
			if !strings.HasPrefix(h, params) {
				t.Fatalf("stored hash %q does not start with %q", h, params)
			}
			parts := strings.Split(strings.TrimPrefix(h, params), "$")
			if len(parts) != 2 {
				t.Fatalf("stored hash %q is not salt$key after its parameters", h)
			}
			s, err1 := base64.RawStdEncoding.DecodeString(parts[0])
			k, err2 := base64.RawStdEncoding.DecodeString(parts[1])
			if err1 != nil || err2 != nil || len(s) != 16 || len(k) != 32 {
				t.Errorf("stored hash %q: salt %d bytes, key %d bytes (%v, %v), want 16 and 32", h, len(s), len(k), err1, err2)
			}
			return parts[0]
		}
		s1, s2 := checkHash(h1), checkHash(h2)
		if h1 == h2 || s1 == s2 {
			t.Errorf("two users with the same password have the same hash or salt: %q, %q", h1, h2)
		}
		// A reset stores a hash of the same form.
		if err := e.svc.RequestPasswordReset(t.Context(), "fay@sec.test"); err != nil {
			t.Fatal(err)
		}
		sent := e.mail.take()
		if len(sent) != 1 {
			t.Fatalf("%d reset mails, want 1", len(sent))
		}
		e.clk.advance(time.Second)
		if err := e.svc.ConfirmPasswordReset(t.Context(), sent[0].token, password); err != nil {
			t.Fatal(err)
		}
		h3 := e.storedPasswordHash(u1.ID)
		if checkHash(h3); h3 == h1 {
			t.Errorf("the same password set again kept the old hash (and salt)")
		}
	})
}
