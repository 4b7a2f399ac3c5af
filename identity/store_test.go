package identity_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/identity/identitytest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// freshSQLite is a new migrated SQLite database per call.
func freshSQLite(t *testing.T) *store.DB { return storetest.SQLite(t, identity.Migrations) }

// freshPostgres is a new migrated PostgreSQL schema per call (the suite
// needs a database of its own per subtest: tenant lists are global).
func freshPostgres(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), storetest.IsolatedPostgresURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context(), identity.Migrations); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	for _, engine := range []struct {
		name string
		open func(*testing.T) *store.DB
	}{{"sqlite", freshSQLite}, {"postgres", freshPostgres}} {
		t.Run(engine.name, func(t *testing.T) {
			t.Parallel()
			if engine.name == "postgres" && os.Getenv(storetest.PostgresEnv) == "" {
				t.Skipf("PostgreSQL skipped: set %s to run it", storetest.PostgresEnv)
			}
			identitytest.Run(t, func(t *testing.T) (*store.DB, identity.Store) { return engine.open(t), identity.NewSQLStore() })
		})
	}
}

// Broken stores: the SQL store with one behaviour wrong. Each must make
// the suite fail in the subtest named.

// ignoresTenant finds another tenant's organization.
type ignoresTenant struct{ identity.Store }

func (s ignoresTenant) GetOrganization(ctx context.Context, q store.Querier, tenantID, id string) (*identity.Organization, error) {
	other, err := s.OrganizationTenant(ctx, q, id)
	if err != nil {
		return nil, err
	}
	return s.Store.GetOrganization(ctx, q, other, id)
}

// deletedKeysLive reports every key found by prefix as live.
type deletedKeysLive struct{ identity.Store }

func (s deletedKeysLive) APIKeyByPrefix(ctx context.Context, q store.Querier, prefix string) (*identity.APIKeyRecord, bool, error) {
	k, _, err := s.Store.APIKeyByPrefix(ctx, q, prefix)
	return k, err == nil, err
}

// duplicateRoles hides the conflict of a role name used twice.
type duplicateRoles struct{ identity.Store }

func (s duplicateRoles) CreateRole(ctx context.Context, q store.Querier, r *identity.Role) error {
	if err := s.Store.CreateRole(ctx, q, r); !errors.Is(err, store.ErrConflict) {
		return err
	}
	return nil
}

// rolesReversed lists roles in the wrong order.
type rolesReversed struct{ identity.Store }

func (s rolesReversed) ListRoles(ctx context.Context, q store.Querier, tenantID string, offset, limit int) ([]*identity.Role, int, error) {
	roles, total, err := s.Store.ListRoles(ctx, q, tenantID, offset, limit)
	slices.Reverse(roles)
	return roles, total, err
}

// reusableResets lets a reset token be used again: it consumes in a
// transaction it rolls back, at the zero time (so expiry never bites
// either).
type reusableResets struct{ identity.Store }

func (s reusableResets) ConsumePasswordReset(ctx context.Context, q store.Querier, tokenHash string, now time.Time) (*identity.UserRecord, error) {
	var u *identity.UserRecord
	err := errRollback
	if db, ok := q.(*store.DB); ok {
		err = db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			if u, err = s.Store.ConsumePasswordReset(ctx, tx, tokenHash, time.Time{}); err != nil {
				return err
			}
			return errRollback
		})
	}
	if errors.Is(err, errRollback) && u != nil {
		return u, nil
	}
	return nil, err
}

var errRollback = errors.New("roll back")

var brokenStores = map[string]struct {
	wrap    func(identity.Store) identity.Store
	subtest string // a subtest of identitytest.Run that must fail
}{
	"ignoresTenant":   {func(s identity.Store) identity.Store { return ignoresTenant{s} }, "OrganizationTenantScoped"},
	"deletedKeysLive": {func(s identity.Store) identity.Store { return deletedKeysLive{s} }, "APIKeyLive"},
	"duplicateRoles":  {func(s identity.Store) identity.Store { return duplicateRoles{s} }, "RoleDuplicateName"},
	"rolesReversed":   {func(s identity.Store) identity.Store { return rolesReversed{s} }, "RoleList"},
	"reusableResets":  {func(s identity.Store) identity.Store { return reusableResets{s} }, "PasswordResetSingleUse"},
}

// TestBrokenStoreHelper runs the suite against the broken store
// storetest.Broken names, in the child process TestSuiteCatchesBrokenStores
// starts; without one it does nothing.
func TestBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenStores's child process")
	}
	broken, ok := brokenStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	identitytest.Run(t, func(t *testing.T) (*store.DB, identity.Store) {
		return freshSQLite(t), broken.wrap(identity.NewSQLStore())
	})
}

// TestSuiteCatchesBrokenStores proves the suite bites: against each
// broken store it fails, in the subtest that checks the broken behaviour.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	catches := map[string]string{}
	for name, broken := range brokenStores {
		catches[name] = broken.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStoreHelper", catches)
}
