//go:build !tenantkit_nopostgres

package integrations_test

import (
	"context"
	"testing"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/internal/testing/ackstest"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// countedProcesses opens two DBs over one fresh PostgreSQL schema, as two
// processes would (B's version reads counted), with a Service on each.
func countedProcesses(t *testing.T) (a, b *integrations.Service, readsB *storetest.VersionReads) {
	t.Helper()
	url := storetest.IsolatedPostgresURL(t)
	key := newKey()
	readsB = &storetest.VersionReads{}
	return newService(t, storetest.PostgresTraced(t, url, nil, integrations.Migrations), key),
		newService(t, storetest.PostgresTraced(t, url, readsB, integrations.Migrations), key), readsB
}

// cachedThroughB sets a fresh tenant's crm credentials (account acme-0)
// through a, has b cache them and waits until b trusts its cache; it
// returns the tenant's context and id.
func cachedThroughB(t *testing.T, a, b *integrations.Service) (context.Context, string) {
	t.Helper()
	c, tn := scoped(t)
	if err := a.SetCredentials(c, "crm", map[string]any{"account": "acme-0", "apiKey": "sk_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Values(t.Context(), tn, "crm"); err != nil {
		t.Fatal(err)
	}
	trusted(t, b)
	return c, tn
}

// trusted waits until s serves Values without reading the counter (its
// lease holds).
func trusted(t *testing.T, s *integrations.Service) {
	t.Helper()
	ackstest.AwaitTrusted(t, integrations.AcksOf(s), "the Service")
}

// TestValuesWithoutReads: on PostgreSQL, a process whose lease holds
// serves Values from its cache without reading the version counter (a
// payment session's provider call costs no round trip for its
// credentials), and yet a change through another process returns only
// once this one has acknowledged it, so its next call uses the new
// credentials, even with its notifications cut off.
func TestValuesWithoutReads(t *testing.T) {
	t.Parallel()
	a, b, readsB := countedProcesses(t)
	c, tn := cachedThroughB(t, a, b)

	const calls = 200
	before := readsB.N.Load()
	for range calls {
		if _, err := b.Values(t.Context(), tn, "crm"); err != nil {
			t.Fatal(err)
		}
	}
	// A call reads nothing; the cache's own check (every 250 ms) and
	// the process's beat (every second) may read once or twice meanwhile.
	if n := readsB.N.Load() - before; n > calls/10 {
		t.Errorf("%d calls of Values read the version counter %d times, want at most %d", calls, n, calls/10)
	}

	for i, deaf := range []bool{false, true} {
		integrations.AcksOf(b).Deaf.Store(deaf)
		account := []string{"acme-1", "acme-2"}[i]
		if err := a.SetCredentials(c, "crm", map[string]any{"account": account, "apiKey": "sk_1"}); err != nil {
			t.Fatal(err)
		}
		got, err := b.Values(t.Context(), tn, "crm")
		if err != nil {
			t.Fatal(err)
		}
		if got["account"] != account {
			t.Fatalf("deaf %v: B's Values after a change through A returned account %v, want %s", deaf, got["account"], account)
		}
		trusted(t, b)
	}
}

// TestValuesCutOff: a process cut off from the database (its beats and
// acknowledgements fail) is waited for at most a few seconds; by then
// its lease has lapsed, so it reads the counter again and uses the
// credentials changed through another process.
func TestValuesCutOff(t *testing.T) {
	t.Parallel()
	a, b, _ := countedProcesses(t)
	c, tn := cachedThroughB(t, a, b)
	integrations.AcksOf(b).Deaf.Store(true)
	integrations.AcksOf(b).Frozen.Store(true)
	if err := a.SetCredentials(c, "crm", map[string]any{"account": "acme-1", "apiKey": "sk_1"}); err != nil {
		t.Fatal(err)
	}
	if integrations.AcksOf(b).Trusted() {
		t.Fatal("B still trusts its cache after a change stopped waiting for it")
	}
	got, err := b.Values(t.Context(), tn, "crm")
	if err != nil {
		t.Fatal(err)
	}
	if got["account"] != "acme-1" {
		t.Fatalf("B's Values after a change through A returned account %v, want acme-1", got["account"])
	}
}
