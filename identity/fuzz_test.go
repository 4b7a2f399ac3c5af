package identity_test

// Fuzz targets of the identity service's readers of untrusted input: the
// credentials (API key secrets, session tokens, how they are presented),
// the selection a caller sends back (cookies over HTTP), the sign-in
// email, password and tenant, and password-reset tokens. The seeds run
// as ordinary tests, on SQLite and, when TENANTKIT_TEST_POSTGRES_URL is
// set, on PostgreSQL too.

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// fzEngines returns a fresh migrated database per engine: SQLite always,
// PostgreSQL (a schema of its own) when the variable is set. Checking
// the variable here, rather than letting storetest skip, keeps the
// SQLite part running without PostgreSQL.
func fzEngines(f *testing.F) map[string]*store.DB {
	f.Helper()
	dbs := map[string]*store.DB{"sqlite": storetest.SQLite(f)}
	if os.Getenv(storetest.PostgresEnv) != "" {
		db, err := store.Open(f.Context(), storetest.IsolatedPostgresURL(f), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { _ = db.Close() })
		dbs["postgres"] = db
	}
	return dbs
}

// fzMailer keeps the reset tokens it is asked to send.
type fzMailer struct {
	mu   sync.Mutex
	sent map[string][]string // email → tokens
}

func (m *fzMailer) SendPasswordReset(_ context.Context, email, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[email] = append(m.sent[email], token)
	return nil
}

func (m *fzMailer) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ts := range m.sent {
		n += len(ts)
	}
	return n
}

func (m *fzMailer) isSent(token string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ts := range m.sent {
		if slices.Contains(ts, token) {
			return true
		}
	}
	return false
}

const (
	fzSuperKey = "tk_fzsuper0.9b1c3e5a7f0d2b4c6e8a0f1d3b5c7e9a1f3d5b7c"
	fzEmail    = "ada@fuzz.test"
	fzPassword = "ada-fuzz-password"
)

// fzCred is a credential the fixture holds, and the identity it gives
// before any selection.
type fzCred struct {
	name          string
	secret        string
	token         bool // a session token (only as a bearer secret)
	tenantID      string
	orgID         string
	orgIDs        []string // nil: every organization of the tenant
	superAdmin    bool
	userID, keyID string
}

// fzFixture is one database with the identity service twice (without
// and with the credential cache), two tenants, credentials of every kind
// and the ids a selection may name.
type fzFixture struct {
	engine        string
	svcs          map[string]*identity.Service
	mail          *fzMailer
	creds         []fzCred
	deleted       string              // the secret of a deleted key
	orgs          map[string][]string // live tenant → its live organizations
	userTenant    string
	deletedOrg    string
	deletedTenant string
}

func fzSetup(f *testing.F, engine string, db *store.DB) *fzFixture {
	f.Helper()
	ctx := f.Context()
	key := []byte("0123456789abcdef0123456789abcdef")
	mail := &fzMailer{sent: map[string][]string{}}
	nocache, err := openIdentity(ctx, db, identity.Options{SecretKey: key, Mailer: mail, CacheTTL: -1})
	if err != nil {
		f.Fatal(err)
	}
	cached, err := identity.New(db, identity.Options{SecretKey: key, Mailer: mail})
	if err != nil {
		f.Fatal(err)
	}
	must := func(err error) {
		f.Helper()
		if err != nil {
			f.Fatal(err)
		}
	}
	boot, err := nocache.Bootstrap(ctx, identity.BootstrapInput{APIKey: fzSuperKey})
	must(err)
	sys := identity.System
	tb, err := nocache.CreateTenant(ctx, sys, "Fuzz B")
	must(err)
	b1, err := nocache.CreateOrganization(ctx, sys, identity.OrganizationInput{Name: "B1", TenantID: tb.ID})
	must(err)
	b2, err := nocache.CreateOrganization(ctx, sys, identity.OrganizationInput{Name: "B2", TenantID: tb.ID})
	must(err)
	gone, err := nocache.CreateOrganization(ctx, sys, identity.OrganizationInput{Name: "gone", TenantID: tb.ID})
	must(err)
	tc, err := nocache.CreateTenant(ctx, sys, "Fuzz C (deleted)")
	must(err)

	// A role limited to B1, and one over the whole tenant.
	limited, err := nocache.CreateRole(ctx, sys, "limited", tb.ID)
	must(err)
	_, err = nocache.SetRoleACL(ctx, sys, identity.ACLInput{RoleID: limited.ID, Features: []string{"webhooks.view"},
		Organizations: identity.OptionalList{Set: true, Value: []string{b1.ID}}})
	must(err)
	whole, err := nocache.CreateRole(ctx, sys, "whole", tb.ID)
	must(err)
	_, err = nocache.SetRoleACL(ctx, sys, identity.ACLInput{RoleID: whole.ID, Features: []string{"webhooks.*"}})
	must(err)

	kb, kbSecret, err := nocache.CreateAPIKey(ctx, sys, identity.APIKeyInput{Name: "kb", TenantID: tb.ID, OrganizationID: b1.ID, Roles: []string{limited.ID}})
	must(err)
	kd, kdSecret, err := nocache.CreateAPIKey(ctx, sys, identity.APIKeyInput{Name: "kd", TenantID: tb.ID, OrganizationID: b1.ID, Roles: []string{limited.ID}})
	must(err)
	must(nocache.DeleteAPIKey(ctx, sys, kd.ID))
	u, err := nocache.CreateUser(ctx, sys, identity.UserInput{Email: fzEmail, Password: fzPassword, OrganizationID: b1.ID, Roles: []string{whole.ID}})
	must(err)
	token, _, err := nocache.Login(ctx, fzEmail, fzPassword, "")
	must(err)
	must(nocache.DeleteOrganization(ctx, sys, gone.ID))
	superKeyID := ""
	keys, _, err := nocache.ListAPIKeys(ctx, sys, boot.TenantID, 0, 100)
	must(err)
	for _, k := range keys {
		if strings.HasPrefix(fzSuperKey, k.KeyPrefix) {
			superKeyID = k.ID
		}
	}
	must(nocache.DeleteTenant(ctx, sys, tc.ID))

	return &fzFixture{
		engine: engine,
		svcs:   map[string]*identity.Service{"uncached": nocache, "cached": cached},
		mail:   mail,
		creds: []fzCred{
			{name: "super key", secret: fzSuperKey, tenantID: boot.TenantID, orgID: boot.OrganizationID, superAdmin: true, keyID: superKeyID},
			{name: "limited key", secret: kbSecret, tenantID: tb.ID, orgID: b1.ID, orgIDs: []string{b1.ID}, keyID: kb.ID},
			{name: "session token", secret: token, token: true, tenantID: tb.ID, orgID: b1.ID, userID: u.ID},
		},
		deleted:       kdSecret,
		orgs:          map[string][]string{boot.TenantID: {boot.OrganizationID}, tb.ID: {b1.ID, b2.ID}},
		userTenant:    tb.ID,
		deletedOrg:    gone.ID,
		deletedTenant: tc.ID,
	}
}

// want is the identity secret gives when presented as given (bearer or
// not), nil when it must be refused.
func (fx *fzFixture) want(secret string, bearer bool) *fzCred {
	for i, c := range fx.creds {
		if c.secret == secret && (!c.token || bearer) {
			return &fx.creds[i]
		}
	}
	return nil
}

// selected is the tenant and organization a selection leads to for c: a
// super admin may switch to another live tenant (and then to none of its
// organizations unless named), anyone to a live organization of the
// (selected) tenant they may access. Anything else is ignored.
func (fx *fzFixture) selected(c *fzCred, sel identity.Selection) (tenant, org string) {
	tenant, org = c.tenantID, c.orgID
	if _, live := fx.orgs[sel.TenantID]; c.superAdmin && sel.TenantID != "" && sel.TenantID != tenant && live {
		tenant, org = sel.TenantID, ""
	}
	allowed := c.superAdmin || c.orgIDs == nil || slices.Contains(c.orgIDs, sel.OrganizationID)
	if sel.OrganizationID != "" && sel.OrganizationID != org && allowed && slices.Contains(fx.orgs[tenant], sel.OrganizationID) {
		org = sel.OrganizationID
	}
	return tenant, org
}

// check fails unless id is what c gives under sel.
func (fx *fzFixture) check(t *testing.T, what string, c *fzCred, sel identity.Selection, id *identity.Identity) {
	t.Helper()
	tenant, org := fx.selected(c, sel)
	if id == nil || id.TenantID != tenant || id.OrganizationID != org || id.IsSuperAdmin != c.superAdmin ||
		id.UserID != c.userID || id.APIKeyID != c.keyID {
		t.Fatalf("%s: %s with selection %+v: got %+v, want tenant %q org %q (super %v, user %q, key %q)",
			fx.engine, what, sel, id, tenant, org, c.superAdmin, c.userID, c.keyID)
	}
	if c.orgIDs != nil && !slices.Equal(id.OrganizationIDs, c.orgIDs) {
		t.Fatalf("%s: %s: readable organizations %v, want %v", fx.engine, what, id.OrganizationIDs, c.orgIDs)
	}
}

// FuzzAuthenticate presents an arbitrary secret, as a bearer token or an
// API key, with an arbitrary selection, to Authenticate, AuthenticateKey
// and AuthenticateToken, with and without the credential cache. No
// secret is (nil, nil); a secret that is not one of the fixture's live
// credentials is ErrUnauthenticated with no identity, never another
// error; the fixture's credentials give exactly their identity (a
// session token only as a bearer secret, a deleted key never). The
// selection never moves a caller outside what it may access: the
// fixture's credentials are also presented with the fuzzed selection
// every time.
func FuzzAuthenticate(f *testing.F) {
	var fxs []*fzFixture
	for engine, db := range fzEngines(f) {
		fxs = append(fxs, fzSetup(f, engine, db))
	}
	fx := fxs[0]
	sup, kb, tok := fx.creds[0], fx.creds[1], fx.creds[2]
	var tb, b1, b2 string = fx.userTenant, fx.orgs[fx.userTenant][0], fx.orgs[fx.userTenant][1]
	for _, s := range []struct {
		secret      string
		bearer      bool
		tenant, org string
	}{
		{"", false, "", ""},
		{"", true, tb, b1},
		{sup.secret, false, "", ""},
		{sup.secret, true, tb, ""},
		{sup.secret, false, tb, b2},
		{sup.secret, false, fx.deletedTenant, ""},
		{sup.secret, false, tb, fx.deletedOrg},
		{sup.secret, false, strings.ToUpper(tb), ""},
		{kb.secret, false, sup.tenantID, b2},
		{kb.secret, true, "", b2},
		{kb.secret + " ", false, "", ""},
		{kb.secret[:11], false, "", ""},
		{kb.secret[:len(kb.secret)-1] + "0", false, "", ""},
		{strings.ToUpper(kb.secret), false, "", ""},
		{fx.deleted, false, "", ""},
		{tok.secret, true, "", b2},
		{tok.secret, true, sup.tenantID, sup.orgID},
		{tok.secret, false, "", ""},
		{tok.secret + "=", true, "", ""},
		{tok.secret[:len(tok.secret)-2] + "AA", true, "", ""},
		{"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4IiwidGVuYW50SWQiOiJ4In0.", true, "", ""},
		{"eyJhbGciOiJIUzI1NiJ9.e30.", true, "", ""},
		{"eyJ..", true, "", ""},
		{"eyJ" + strings.Repeat(".", 2), false, "", ""},
		{"tk_", false, "", ""},
		{"' OR 1=1 --", false, "' OR ''='", "%"},
		{"%", true, "%", "_"},
		{strings.Repeat("A", 5000), true, "", ""},
	} {
		f.Add(s.secret, s.bearer, s.tenant, s.org)
	}
	f.Fuzz(func(t *testing.T, secret string, bearer bool, selTenant, selOrg string) {
		ctx := t.Context()
		sel := identity.Selection{TenantID: selTenant, OrganizationID: selOrg}
		for _, fx := range fxs {
			want := fx.want(secret, bearer)
			for cache, svc := range fx.svcs {
				id, err := svc.Authenticate(ctx, identity.Credential{Secret: secret, Bearer: bearer}, sel)
				switch {
				case secret == "":
					if id != nil || err != nil {
						t.Fatalf("%s/%s: no credential: (%+v, %v), want (nil, nil)", fx.engine, cache, id, err)
					}
				case want == nil:
					if id != nil || !errors.Is(err, identity.ErrUnauthenticated) {
						t.Fatalf("%s/%s: Authenticate(%q, bearer %v): (%+v, %v), want ErrUnauthenticated", fx.engine, cache, secret, bearer, id, err)
					}
				default:
					if err != nil {
						t.Fatalf("%s/%s: Authenticate(%s): %v", fx.engine, cache, want.name, err)
					}
					fx.check(t, cache+" "+want.name, want, sel, id)
				}

				// The two entry points take only their own kind.
				id, err = svc.AuthenticateKey(ctx, secret)
				if w := fx.want(secret, false); w != nil && !w.token {
					if err != nil {
						t.Fatalf("%s/%s: AuthenticateKey(%s): %v", fx.engine, cache, w.name, err)
					}
					fx.check(t, cache+" AuthenticateKey", w, identity.Selection{}, id)
				} else if id != nil || !errors.Is(err, identity.ErrUnauthenticated) {
					t.Fatalf("%s/%s: AuthenticateKey(%q): (%+v, %v), want ErrUnauthenticated", fx.engine, cache, secret, id, err)
				}
				id, err = svc.AuthenticateToken(ctx, secret)
				if w := fx.want(secret, true); w != nil && w.token {
					if err != nil {
						t.Fatalf("%s/%s: AuthenticateToken: %v", fx.engine, cache, err)
					}
					fx.check(t, cache+" AuthenticateToken", w, identity.Selection{}, id)
				} else if id != nil || !errors.Is(err, identity.ErrUnauthenticated) {
					t.Fatalf("%s/%s: AuthenticateToken(%q): (%+v, %v), want ErrUnauthenticated", fx.engine, cache, secret, id, err)
				}

				// The fuzzed selection on every valid credential.
				for i := range fx.creds {
					c := &fx.creds[i]
					id, err := svc.Authenticate(ctx, identity.Credential{Secret: c.secret, Bearer: true}, sel)
					if err != nil {
						t.Fatalf("%s/%s: %s with selection %+v: %v", fx.engine, cache, c.name, sel, err)
					}
					fx.check(t, cache+" "+c.name, c, sel, id)
				}
			}
		}
	})
}

// FuzzSignIn sends an arbitrary email, password and tenant to Login and
// RequestPasswordReset, and an arbitrary token and password to
// ConfirmPasswordReset. Login gives a session token (which authenticates
// as the user) only for the account's email (trimmed, any case), its
// password and no tenant or its own; everything else is
// ErrInvalidLogin, never another error. A reset request always succeeds
// and mails a token only for the account's email. A reset confirmation
// with a token nobody was mailed fails, with ErrInvalidResetToken or a
// validation error (store.ErrInvalid).
func FuzzSignIn(f *testing.F) {
	var fxs []*fzFixture
	for engine, db := range fzEngines(f) {
		fxs = append(fxs, fzSetup(f, engine, db))
	}
	tb := fxs[0].userTenant
	for _, s := range [][4]string{
		{fzEmail, fzPassword, "", "x"},
		{" ADA@Fuzz.Test\t", fzPassword, tb, ""},
		{fzEmail, fzPassword, "someone-else", "short"},
		{fzEmail, fzPassword + " ", "", strings.Repeat("p", 300)},
		{fzEmail, strings.ToUpper(fzPassword), "", "a-long-enough-password"},
		{"", "", "", ""},
		{"%", "%", "%", "%"},
		{"' OR 1=1 --", "x", "' OR ''='", "' OR 1=1 --"},
		{"ada@\u212a.test", fzPassword, "", ""}, // the Kelvin sign lowercases to k
		{strings.Repeat("a", 5000) + "@fuzz.test", strings.Repeat("p", 5000), "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, email, password, tenant, token string) {
		ctx := t.Context()
		for _, fx := range fxs {
			svc := fx.svcs["uncached"]
			wantOK := strings.ToLower(strings.TrimSpace(email)) == fzEmail && password == fzPassword &&
				(tenant == "" || tenant == fx.userTenant)
			tok, id, err := svc.Login(ctx, email, password, tenant)
			if wantOK {
				if err != nil || tok == "" {
					t.Fatalf("%s: Login(%q, password, %q): (%q, %v)", fx.engine, email, tenant, tok, err)
				}
				got, err := svc.AuthenticateToken(ctx, tok)
				if err != nil || got.UserID != id.UserID || got.TenantID != fx.userTenant {
					t.Fatalf("%s: the token of Login authenticates as (%+v, %v), want the user of %+v", fx.engine, got, err, id)
				}
			} else if tok != "" || id != nil || !errors.Is(err, identity.ErrInvalidLogin) {
				t.Fatalf("%s: Login(%q, %q, %q): (%q, %+v, %v), want ErrInvalidLogin", fx.engine, email, password, tenant, tok, id, err)
			}

			before := fx.mail.count()
			if err := svc.RequestPasswordReset(ctx, email); err != nil {
				t.Fatalf("%s: RequestPasswordReset(%q): %v", fx.engine, email, err)
			}
			sent := fx.mail.count() - before
			if want := map[bool]int{true: 1, false: 0}[strings.ToLower(strings.TrimSpace(email)) == fzEmail]; sent != want {
				t.Fatalf("%s: RequestPasswordReset(%q) mailed %d tokens, want %d", fx.engine, email, sent, want)
			}

			if fx.mail.isSent(token) {
				continue // a real token would change the password under the other checks
			}
			err = svc.ConfirmPasswordReset(ctx, token, password)
			if err == nil || !errors.Is(err, identity.ErrInvalidResetToken) && !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: ConfirmPasswordReset(%q, %q): %v, want ErrInvalidResetToken or a validation error", fx.engine, token, password, err)
			}
		}
	})
}
