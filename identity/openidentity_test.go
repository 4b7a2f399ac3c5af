package identity

import (
	"context"

	"github.com/tenantkit/tenantkit/store"
)

// openIdentity returns the identity service over db with its tables migrated:
// New, then the migrations of Migrations.
func openIdentity(ctx context.Context, db *store.DB, opts Options) (*Service, error) {
	s, err := New(db, opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, s.Migrations()...); err != nil {
		return nil, err
	}
	return s, nil
}
