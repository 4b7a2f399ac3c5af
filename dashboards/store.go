package dashboards

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of layouts and visibility records: what the Service
// asks of its database, in the area's terms. SQLStore (sql.go) is the
// implementation on tenantkit's SQLite and PostgreSQL schema, used when
// Options.Store is nil; dashboardstest.Run is the conformance suite any
// other implementation must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or a
// transaction, a write the *store.Tx of the Service's change, so that the
// change and its domain event commit together. Everything belongs to one
// tenant, and every method takes it and never reads or writes another's.
//
// Errors: a missing row is an error wrapping store.ErrNotFound; anything
// else is returned as is.
type Store interface {
	// GetLayout returns the owner's layout in the tenant, or ErrNotFound.
	GetLayout(ctx context.Context, q store.Querier, tenantID, owner string) (*Layout, error)
	// CreateLayout stores l (its Version, widgets and times as given)
	// unless the owner already has a layout in the tenant; created reports
	// whether it did.
	CreateLayout(ctx context.Context, q store.Querier, l *Layout) (created bool, err error)
	// UpdateLayout replaces the widgets of the owner's layout, sets its
	// version to version+1 and its UpdatedAt to at, but only while its
	// version is still version: otherwise (another writer came first, or
	// there is no layout) it changes nothing and returns ErrNotFound.
	UpdateLayout(ctx context.Context, q store.Querier, tenantID, owner string, version int64, widgets []Widget, at time.Time) error

	// RoleWidgets returns the visibility records of the tenant's roles
	// among roleIDs, by role id: roles without a record are absent.
	RoleWidgets(ctx context.Context, q store.Querier, tenantID string, roleIDs []string) (map[string][]string, error)
	// SetRoleWidgets stores the role's record (replacing any), ids in the
	// order given.
	SetRoleWidgets(ctx context.Context, q store.Querier, tenantID, roleID string, widgetIDs []string, at time.Time) error
	// DeleteRoleWidgets removes the role's record, if any.
	DeleteRoleWidgets(ctx context.Context, q store.Querier, tenantID, roleID string) error

	// UserWidgets returns the user's override record, or ErrNotFound when
	// the user has none (it inherits).
	UserWidgets(ctx context.Context, q store.Querier, tenantID, userID string) ([]string, error)
	// SetUserWidgets stores the user's override record (replacing any),
	// ids in the order given.
	SetUserWidgets(ctx context.Context, q store.Querier, tenantID, userID string, widgetIDs []string, at time.Time) error
	// DeleteUserWidgets removes the user's override record, if any.
	DeleteUserWidgets(ctx context.Context, q store.Querier, tenantID, userID string) error
}
