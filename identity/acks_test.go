package identity

import (
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/ackstest"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// trustedB waits until B trusts its cache (its lease holds: it serves
// cached credentials without reading the counter).
func (p *twoProcesses) trustedB() {
	p.t.Helper()
	ackstest.AwaitTrusted(p.t, p.b.acks, "B")
}

// A process cut off from notifications (its listener hears nothing) while
// it serves cached credentials without reading the counter: a key deleted
// through another process is refused by its first request after the
// deletion returns, because the deletion waits for its acknowledgement,
// which its next beat gives after it has read and applied the counter.
func TestRevokedWhileDeaf(t *testing.T) {
	t.Parallel()
	p := newTwoProcesses(t, storetest.IsolatedPostgresURL(t))
	ctx := t.Context()
	for i := range 3 {
		k, secret := p.newKey(p.org.ID)
		p.warm(secret)
		p.trustedB()
		p.b.acks.Deaf.Store(true)
		if err := p.a.DeleteAPIKey(ctx, System, k.ID); err != nil {
			t.Fatal(err)
		}
		if !p.refusedByB(secret) {
			t.Fatalf("try %d: a key deleted through A accepted by B, cut off from notifications", i)
		}
		p.b.acks.Deaf.Store(false)
	}
}

// A process cut off from the database (its beats and acknowledgements do
// not get through) is waited for no longer than vcache's dead-row age (5 s); by then its
// lease has lapsed, so it reads the counter for every request and refuses
// the deleted key as soon as it reaches the database again.
func TestRevokedWhileCutOff(t *testing.T) {
	t.Parallel()
	p := newTwoProcesses(t, storetest.IsolatedPostgresURL(t))
	ctx := t.Context()
	k, secret := p.newKey(p.org.ID)
	p.warm(secret)
	p.trustedB()
	p.b.acks.Deaf.Store(true)
	p.b.acks.Frozen.Store(true)
	if err := p.a.DeleteAPIKey(ctx, System, k.ID); err != nil {
		t.Fatal(err)
	}
	if p.b.acks.Trusted() {
		t.Fatal("B still trusts its cache after a revocation stopped waiting for it")
	}
	if !p.refusedByB(secret) {
		t.Fatal("a key deleted through A accepted by B, whose lease lapsed")
	}
}
