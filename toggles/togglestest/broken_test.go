package togglestest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/toggles/togglestest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// tenantBlind reads any tenant's override of a toggle as the caller's.
type tenantBlind struct{ *toggles.SQLStore }

func (s tenantBlind) GetOverride(ctx context.Context, q store.Querier, tenantID, toggleID string) (*toggles.Override, error) {
	_, os, err := s.LoadAll(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, o := range os {
		if o.ToggleID == toggleID {
			return o, nil
		}
	}
	return nil, store.ErrNotFound
}

// ascendingOnly ignores the list's sort direction.
type ascendingOnly struct{ *toggles.SQLStore }

func (s ascendingOnly) ListToggles(ctx context.Context, q store.Querier, f toggles.ListFilter) ([]*toggles.Toggle, int, error) {
	f.SortDesc = false
	return s.SQLStore.ListToggles(ctx, q, f)
}

// keepsDeleted loads deleted toggles too (it remembers what it deleted).
type keepsDeleted struct {
	*toggles.SQLStore
	mu      sync.Mutex
	deleted []*toggles.Toggle
}

func (s *keepsDeleted) DeleteToggle(ctx context.Context, q store.Querier, id string, at time.Time) error {
	t, err := s.GetToggle(ctx, q, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.deleted = append(s.deleted, t)
	s.mu.Unlock()
	return s.SQLStore.DeleteToggle(ctx, q, id, at)
}

func (s *keepsDeleted) LoadAll(ctx context.Context, q store.Querier) ([]*toggles.Toggle, []*toggles.Override, error) {
	ts, os, err := s.SQLStore.LoadAll(ctx, q)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(ts, s.deleted...), os, err
}

// newIDs replaces an override on every upsert, giving it a new id.
type newIDs struct{ *toggles.SQLStore }

func (s newIDs) UpsertOverride(ctx context.Context, q store.Querier, o *toggles.Override) (*toggles.Override, error) {
	if _, err := s.DeleteOverride(ctx, q, o.TenantID, o.ToggleID); err != nil {
		return nil, err
	}
	return s.SQLStore.UpsertOverride(ctx, q, o)
}

// brokenStores names each broken store and the subtest that must catch it.
var brokenStores = map[string]struct {
	store   func() toggles.Store
	failing string
}{
	"tenantBlind":   {func() toggles.Store { return tenantBlind{toggles.NewSQLStore()} }, "Overrides"},
	"ascendingOnly": {func() toggles.Store { return ascendingOnly{toggles.NewSQLStore()} }, "ListSort"},
	"keepsDeleted":  {func() toggles.Store { return &keepsDeleted{SQLStore: toggles.NewSQLStore()} }, "LoadAll"},
	"newIDs":        {func() toggles.Store { return newIDs{toggles.NewSQLStore()} }, "Overrides"},
}

const brokenEnv = "TOGGLESTEST_BROKEN_STORE"

// TestBrokenStore runs the suite on SQLite against the broken store named
// by TOGGLESTEST_BROKEN_STORE; without it, it does nothing. It is meant to
// fail: TestSuiteCatchesBrokenStores runs it in a child process.
func TestBrokenStore(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	b, ok := brokenStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	togglestest.Run(t, func(t *testing.T) (*store.DB, toggles.Store) {
		return storetest.SQLite(t, toggles.Migrations), b.store()
	})
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in the child process")
	}
	for name, b := range brokenStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestBrokenStore$", "-test.count", "1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed against %s; output:\n%s", name, out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("running the suite against %s: %v", name, err)
			}
			if want := "--- FAIL: TestBrokenStore/" + b.failing + " "; !strings.Contains(string(out), want) {
				t.Fatalf("the suite against %s did not fail in %s; output:\n%s", name, b.failing, out)
			}
			t.Logf("caught by %s", b.failing)
		})
	}
}
