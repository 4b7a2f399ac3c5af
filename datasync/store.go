package datasync

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of sync runs: what the Service asks of its
// database, in the area's terms. SQLStore (sql.go) is the implementation
// on tenantkit's schema; datasynctest.Run is the conformance suite.
//
// Every method takes the Querier to run on (the *store.DB, or the
// *store.Tx of the Service's change, so that a batch's records, the run's
// cursor and counters commit together) and the tenant, and never reads
// or writes another tenant's runs. A missing row is an error wrapping
// store.ErrNotFound.
type Store interface {
	// InsertRun stores a new run. A second pending or running run of the
	// tenant for the same integration, entity type and direction is an
	// error wrapping store.ErrConflict (a unique index, so that two
	// processes cannot both start one).
	InsertRun(ctx context.Context, q store.Querier, r *Run) error
	// GetRun returns the tenant's run.
	GetRun(ctx context.Context, q store.Querier, tenantID, id string) (*Run, error)
	// LockRun returns the tenant's run and holds it until tx ends: no
	// other transaction changes it meanwhile (SELECT … FOR UPDATE on
	// PostgreSQL; SQLite's one writer already serialises). Every change
	// of a run reads it so, so that a cancel and a batch never overwrite
	// each other.
	LockRun(ctx context.Context, tx *store.Tx, tenantID, id string) (*Run, error)
	// UpdateRun stores every mutable field of r (status, cursor, counters,
	// lastError, cancelRequested, progressJobId, updatedAt, pageAttempts,
	// cursors). OrganizationIDs are fixed when the run is inserted: nil
	// (every organization) and an empty list (none) read back as they
	// were stored.
	UpdateRun(ctx context.Context, q store.Querier, r *Run) error
	// LastCursor returns the cursor of the tenant's latest completed run
	// of the integration, entity type and direction ("" when none).
	LastCursor(ctx context.Context, q store.Querier, tenantID, integrationID, entityType string, d Direction) (string, error)
	// ListRuns returns a page of the tenant's runs matching f, newest
	// first, and how many match in all.
	ListRuns(ctx context.Context, q store.Querier, tenantID string, f RunFilter) ([]*Run, int, error)
	// RunSummary returns, per integration with runs of the tenant created
	// at or after since, its newest such run (newest by creation, then by
	// id) and how many such runs are in each status (every status with at
	// least one), ordered by integration id: exactly what counting the
	// runs gives, after any inserts and status changes.
	RunSummary(ctx context.Context, q store.Querier, tenantID string, since time.Time) ([]IntegrationRuns, error)
}

// RunFilter selects runs; empty fields select all.
type RunFilter struct {
	IntegrationID, EntityType string
	Direction                 Direction // "" matches both
	Status                    Status    // "" matches every status
	Limit, Offset             int
}
