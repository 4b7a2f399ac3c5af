package integrations

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of the tenants' integration states, sealed
// credentials and logs: what the Service asks of its database, in the
// area's terms. Definitions are registered in Go and never stored.
// SQLStore (sql.go) is the implementation on tenantkit's SQLite and
// PostgreSQL schema; integrationstest.Run is the conformance suite any
// other implementation must pass.
//
// Every method takes the Querier to run on (the *store.DB, or the
// *store.Tx of the Service's change, so that the change and its domain
// event commit together) and the tenant, and never reads or writes
// another tenant's rows. A missing row is an error wrapping
// store.ErrNotFound.
type Store interface {
	// GetState returns the tenant's stored state of the integration.
	GetState(ctx context.Context, q store.Querier, tenantID, integrationID string) (*State, error)
	// ListStates returns every stored state of the tenant, in no order.
	ListStates(ctx context.Context, q store.Querier, tenantID string) ([]*State, error)
	// PutState stores s (s.IntegrationID's) for the tenant, replacing any.
	PutState(ctx context.Context, q store.Querier, tenantID string, s *State) error

	// GetCredentials returns the tenant's sealed credentials of the
	// integration and when they were stored.
	GetCredentials(ctx context.Context, q store.Querier, tenantID, integrationID string) (sealed string, updatedAt time.Time, err error)
	// CredentialIntegrations returns the ids of the integrations the
	// tenant has credentials for, in no order.
	CredentialIntegrations(ctx context.Context, q store.Querier, tenantID string) ([]string, error)
	// PutCredentials stores the tenant's sealed credentials of the
	// integration, replacing any.
	PutCredentials(ctx context.Context, q store.Querier, tenantID, integrationID, sealed string, at time.Time) error

	// InsertLog stores a log entry (e.TenantID's).
	InsertLog(ctx context.Context, q store.Querier, e *LogEntry) error
	// ListLogs returns a page of the tenant's log entries matching f,
	// newest first (createdAt, then id), and how many match in all.
	ListLogs(ctx context.Context, q store.Querier, tenantID string, f LogFilter) ([]*LogEntry, int, error)
}

// LogFilter selects log entries; empty fields select all.
type LogFilter struct {
	IntegrationID, Level, RunID, EntityType, EntityID string // non-empty fields must match exactly
	// Limit is the page size (0 returns no rows, only the total); Offset
	// the rows skipped before the page.
	Limit, Offset int
}
