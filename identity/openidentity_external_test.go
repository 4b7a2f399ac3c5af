package identity_test

import (
	"context"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// openIdentity returns the identity service over db with its tables migrated:
// identity.New, then the migrations of Migrations.
func openIdentity(ctx context.Context, db *store.DB, opts identity.Options) (*identity.Service, error) {
	s, err := identity.New(db, opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, s.Migrations()...); err != nil {
		return nil, err
	}
	return s, nil
}
