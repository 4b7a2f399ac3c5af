package identity

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// twoProcesses is two Services, each on a store.DB of its own (its own
// pool, listener and credential cache: two server processes, in effect),
// over one database, with a tenant, an organization and a role holding
// webhooks.view.
type twoProcesses struct {
	t      *testing.T
	a, b   *Service
	dbA    *store.DB
	tenant *Tenant
	org    *Organization
	roleID string
	// shared: the engine lets several processes share the database
	// (store.Dialect.Notifies), and revocation is promised at once.
	shared bool
}

func newTwoProcesses(t *testing.T, url string) *twoProcesses {
	t.Helper()
	ctx := t.Context()
	open := func() *store.DB {
		db, err := store.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dbA, dbB := open(), open()
	a, err := openIdentity(ctx, dbA, Options{SecretKey: secTestKey, Mailer: &secMailer{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(dbB, Options{SecretKey: secTestKey, Mailer: &secMailer{}})
	if err != nil {
		t.Fatal(err)
	}
	p := &twoProcesses{t: t, a: a, b: b, dbA: dbA, shared: dbA.Dialect().Notifies()}
	if p.tenant, err = a.CreateTenant(ctx, System, "Revoke"); err != nil {
		t.Fatal(err)
	}
	if p.org, err = a.CreateOrganization(ctx, System, OrganizationInput{Name: "HQ", TenantID: p.tenant.ID}); err != nil {
		t.Fatal(err)
	}
	r, err := a.CreateRole(ctx, System, "viewer", p.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.roleID = r.ID
	p.setFeatures("webhooks.view")
	return p
}

func (p *twoProcesses) setFeatures(features ...string) {
	p.t.Helper()
	if _, err := p.a.SetRoleACL(p.t.Context(), System, ACLInput{RoleID: p.roleID, Features: features}); err != nil {
		p.t.Fatal(err)
	}
}

func (p *twoProcesses) newKey(orgID string) (*APIKey, string) {
	p.t.Helper()
	k, secret, err := p.a.CreateAPIKey(p.t.Context(), System, APIKeyInput{Name: "k", TenantID: p.tenant.ID, OrganizationID: orgID, Roles: []string{p.roleID}})
	if err != nil {
		p.t.Fatal(err)
	}
	return k, secret
}

// warm authenticates secret through B, which caches it.
func (p *twoProcesses) warm(secret string) *Identity {
	p.t.Helper()
	id, err := p.b.Authenticate(p.t.Context(), Credential{Secret: secret, Bearer: true}, Selection{})
	if err != nil || id == nil {
		p.t.Fatalf("B refuses a valid credential: %v", err)
	}
	return id
}

// refusedByB reports whether B refuses secret now.
func (p *twoProcesses) refusedByB(secret string) bool {
	p.t.Helper()
	id, err := p.b.Authenticate(p.t.Context(), Credential{Secret: secret, Bearer: true}, Selection{})
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		p.t.Fatalf("B: %v", err)
	}
	return id == nil
}

// seen checks that B honours a change A committed: on the first call where
// processes share the database, within B's check interval on SQLite (one
// process owns it; another's change is seen when the cache next reads the
// counter), with 10 s as the test's timeout.
func (p *twoProcesses) seen(what string, honoured func() bool) {
	p.t.Helper()
	if p.shared {
		if !honoured() {
			p.t.Errorf("%s: B's first request after the commit was served from its stale cache", what)
		}
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !honoured() {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: B still stale after 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A change that takes access away, committed through one process, is
// honoured by the other's first request after the commit (on PostgreSQL;
// on SQLite at its next check of the counter), although that process had
// the credential cached: a deleted API key (100 tries: 0 accepted, and
// then 100 requests: 0 accepted), a feature removed from a role and given
// back (100 tries each way), a deleted organization and tenant, a password
// reset, and a user deleted in the database by a host that records it
// with CredentialsChanged.
func TestRevokedAcrossProcesses(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		p := newTwoProcesses(t, url)
		ctx := t.Context()
		tries := 100
		if !p.shared {
			tries = 3 // each waits for B's check interval
		}

		accepted := 0
		for i := range tries {
			k, secret := p.newKey(p.org.ID)
			p.warm(secret)
			if err := p.a.DeleteAPIKey(ctx, System, k.ID); err != nil {
				t.Fatal(err)
			}
			if p.shared && !p.refusedByB(secret) {
				accepted++
				continue
			}
			p.seen(fmt.Sprintf("key deletion %d", i), func() bool { return p.refusedByB(secret) })
		}
		if accepted > 0 {
			t.Errorf("a key deleted through A was accepted by B's next request in %d of %d tries", accepted, tries)
		}
		k, secret := p.newKey(p.org.ID)
		p.warm(secret)
		if err := p.a.DeleteAPIKey(ctx, System, k.ID); err != nil {
			t.Fatal(err)
		}
		p.seen("key deletion", func() bool { return p.refusedByB(secret) })
		accepted = 0
		for range 100 {
			if !p.refusedByB(secret) {
				accepted++
			}
		}
		if accepted > 0 {
			t.Errorf("%d of 100 requests through B after the deletion accepted", accepted)
		}

		// A feature removed from the key's role, then given back.
		_, secret = p.newKey(p.org.ID)
		stale := 0
		for i := range tries {
			want := i%2 == 1
			if want {
				p.setFeatures("webhooks.view", "webhooks.manage")
			} else {
				p.setFeatures("webhooks.view")
			}
			has := func() bool { return p.warm(secret).HasFeature("webhooks.manage") == want }
			if p.shared && !has() {
				stale++
				continue
			}
			p.seen(fmt.Sprintf("role change %d", i), has)
		}
		if stale > 0 {
			t.Errorf("B's first request after a role change through A held the old features in %d of %d tries", stale, tries)
		}

		// The key's organization deleted; another key's tenant deleted.
		org2, err := p.a.CreateOrganization(ctx, System, OrganizationInput{Name: "Branch", TenantID: p.tenant.ID})
		if err != nil {
			t.Fatal(err)
		}
		_, inOrg2 := p.newKey(org2.ID)
		p.warm(inOrg2)
		if err := p.a.DeleteOrganization(ctx, System, org2.ID); err != nil {
			t.Fatal(err)
		}
		p.seen("organization deletion", func() bool { return p.refusedByB(inOrg2) })

		// A session ended by a password reset; another user's session
		// ended by the host deleting the user in the database and
		// recording it.
		email := "rae@revoke.test"
		if _, err := p.a.CreateUser(ctx, System, UserInput{Email: email, Password: "rae-password-1", OrganizationID: p.org.ID, Roles: []string{p.roleID}}); err != nil {
			t.Fatal(err)
		}
		tok, _, err := p.a.Login(ctx, email, "rae-password-1", "")
		if err != nil {
			t.Fatal(err)
		}
		p.warm(tok)
		if err := p.a.RequestPasswordReset(ctx, email); err != nil {
			t.Fatal(err)
		}
		sent := p.a.cfg.Mailer.(*secMailer).take()
		if len(sent) != 1 {
			t.Fatalf("%d reset mails, want 1", len(sent))
		}
		if err := p.a.ConfirmPasswordReset(ctx, sent[0].token, "rae-password-2"); err != nil {
			t.Fatal(err)
		}
		p.seen("password reset", func() bool { return p.refusedByB(tok) })

		u, err := p.a.CreateUser(ctx, System, UserInput{Email: "sid@revoke.test", Password: "sid-password", OrganizationID: p.org.ID, Roles: []string{p.roleID}})
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err = p.a.Login(ctx, "sid@revoke.test", "sid-password", "")
		if err != nil {
			t.Fatal(err)
		}
		p.warm(tok)
		err = p.dbA.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE auth_users SET deleted_at = $1 WHERE id = $2`, tx.Now(), u.ID); err != nil {
				return err
			}
			return p.a.CredentialsChanged(ctx, tx)
		})
		if err != nil {
			t.Fatal(err)
		}
		p.seen("user deleted in the database, recorded", func() bool { return p.refusedByB(tok) })

		// The tenant deleted: its last key stops.
		_, secret = p.newKey(p.org.ID)
		p.warm(secret)
		if err := p.a.DeleteTenant(ctx, System, p.tenant.ID); err != nil {
			t.Fatal(err)
		}
		p.seen("tenant deletion", func() bool { return p.refusedByB(secret) })
	})
}

// With its cache disabled, a Service still bumps the credentials' counter
// when it takes access away, so that the caches of other processes drop
// what it revoked.
func TestRevokedByUncachedService(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		p := newTwoProcesses(t, url)
		ctx := t.Context()
		uncached, err := New(p.dbA, Options{SecretKey: secTestKey, CacheTTL: -1})
		if err != nil {
			t.Fatal(err)
		}
		k, secret := p.newKey(p.org.ID)
		p.warm(secret)
		if err := uncached.DeleteAPIKey(ctx, System, k.ID); err != nil {
			t.Fatal(err)
		}
		p.seen("key deleted by an uncached Service", func() bool { return p.refusedByB(secret) })
	})
}

// A failed read of the counter fails the request: a cached credential is
// not served when the process cannot tell whether it was revoked (closing
// the DB ends the process's lease, so the request reads the counter).
func TestCachedCredentialNeedsTheCounter(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		p := newTwoProcesses(t, url)
		if !p.shared {
			t.Skip("on SQLite a request reads nothing: one process owns the database")
		}
		_, secret := p.newKey(p.org.ID)
		p.warm(secret)
		p.b.db.Close()
		id, err := p.b.AuthenticateKey(context.WithoutCancel(t.Context()), secret)
		if err == nil || errors.Is(err, ErrUnauthenticated) || id != nil {
			t.Fatalf("cached key with the database closed: (%v, %v), want an error", id, err)
		}
	})
}
