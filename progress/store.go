package progress

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of jobs: what the Service asks of its database, in
// the area's terms. SQLStore (sql.go) is the implementation on
// tenantkit's SQLite and PostgreSQL schema, used when Options.Store is
// nil; progresstest.Run is the conformance suite any other
// implementation must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or
// a transaction, a write the *store.Tx of the Service's change, so that
// the change and its domain event (and, for a caller's transaction, the
// caller's own work) commit together.
//
// Reads take the caller's store.Scope and return only the jobs it may
// read (store.Scope.Readable): the scope's tenant's, of no organization
// or of one the scope allows. Writes name the job by its TenantID and ID.
// The Store keeps jobs exactly as given (statuses, counts, times): every
// rule (transitions, percent, ETA, staleness) is the Service's.
//
// Errors: a missing row (or one the scope may not read) is an error
// wrapping store.ErrNotFound; anything else is returned as is.
type Store interface {
	// Insert stores a new job, every field as given (Stale is not
	// stored).
	Insert(ctx context.Context, q store.Querier, j *Job) error
	// Get returns the job the scope may read, or ErrNotFound.
	Get(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Job, error)
	// Lock is Get that also keeps other transactions from changing the
	// job until tx ends (SELECT … FOR UPDATE on PostgreSQL; SQLite has
	// one writer at a time), so that a read-modify-write of the job is
	// not lost to a concurrent one.
	Lock(ctx context.Context, tx *store.Tx, sc store.Scope, id string) (*Job, error)
	// Update writes every field of the stored job j.TenantID, j.ID but
	// its ids, tenant, organization, type, name, description, Cancellable,
	// Meta and CreatedAt; ErrNotFound when there is no such job.
	Update(ctx context.Context, q store.Querier, j *Job) error

	// ListActive returns the scope's pending jobs and its running jobs
	// whose HeartbeatAt is after freshAfter, newest CreatedAt first (then
	// ID descending), at most limit.
	ListActive(ctx context.Context, q store.Querier, sc store.Scope, freshAfter time.Time, limit int) ([]*Job, error)
	// ListFinished returns the scope's completed, failed and cancelled
	// jobs whose FinishedAt is at or after since, latest FinishedAt first
	// (then ID descending), at most limit.
	ListFinished(ctx context.Context, q store.Querier, sc store.Scope, since time.Time, limit int) ([]*Job, error)
	// ListStale returns the scope's running jobs whose HeartbeatAt is at
	// or before staleAt and at or after since, latest HeartbeatAt first
	// (then ID descending), at most limit.
	ListStale(ctx context.Context, q store.Querier, sc store.Scope, staleAt, since time.Time, limit int) ([]*Job, error)
}
