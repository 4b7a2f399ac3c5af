package entities

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage the Service runs on, in the area's own terms. The
// Service keeps validation, scope resolution of definitions, the
// definitions cache, events and transactions; a Store reads and writes.
// Every method takes the Querier to run on: the *store.Tx of the
// Service's transaction for writes (and for reads that must see one state
// with them), a read transaction or the *store.DB for reads.
//
// NewSQLStore is the implementation on the store package's databases
// (SQLite and PostgreSQL); New uses it unless Options.Store names a
// host's own. Package entitiestest checks an implementation against the
// behaviour the Service relies on.
//
// Scopes: tenantID is never empty except for global definitions (where
// "" names the global scope); orgID "" names the tenant's own scope.
// Records are read through a store.Scope: the tenant's records of no
// organization or of one the scope allows (store.Scope.Readable).
//
// Errors: a missing row is store.ErrNotFound, a duplicate key
// store.ErrConflict.
type Store interface {
	// LiveEntity returns the entity entityID that is not deleted, at
	// exactly the scope (tenant, orgID; "" for the tenant's own).
	LiveEntity(ctx context.Context, q store.Querier, tenantID, orgID, entityID string) (*Entity, error)
	// VisibleEntities returns the live entities of the tenant's own scope
	// and of orgID's (none of an organization's when orgID is ""), by
	// entity id, the organization's before the tenant's of the same id.
	VisibleEntities(ctx context.Context, q store.Querier, tenantID, orgID string) ([]*Entity, error)
	// InsertEntity stores a new entity (ErrConflict when a live one of its
	// id exists at its scope).
	InsertEntity(ctx context.Context, q store.Querier, e *Entity) error
	// UpdateEntity writes e over the entity of its ID (its label fields,
	// flags, UpdatedAt and DeletedAt).
	UpdateEntity(ctx context.Context, q store.Querier, e *Entity) error

	// VisibleDefinitions returns every definition row of entityIDs (every
	// entity when empty) that a caller of (tenantID, orgID) may see: the
	// global ones, the tenant's own and orgID's (none of an
	// organization's when orgID is ""), deleted ones (tombstones) and
	// inactive ones included, by entity id, key and ID.
	VisibleDefinitions(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) ([]*Definition, error)
	// DefinitionAt returns the row of key at exactly the scope (tenantID
	// "" for global, orgID "" for the tenant's own), deleted or not.
	DefinitionAt(ctx context.Context, q store.Querier, tenantID, orgID, entityID, key string) (*Definition, error)
	// InsertDefinition stores a new definition row (ErrConflict when its
	// scope has a row of the key).
	InsertDefinition(ctx context.Context, q store.Querier, d *Definition) error
	// UpdateDefinition writes d over the row of its ID (kind,
	// configuration, flags, UpdatedAt, DeletedAt).
	UpdateDefinition(ctx context.Context, q store.Querier, d *Definition) error
	// RemoveDefinition deletes the row of id for good (a tombstone-only
	// row whose tombstone is lifted).
	RemoveDefinition(ctx context.Context, q store.Querier, id string) error
	// SyncFilterable is called in the transaction of every change of
	// (entityID, key)'s definitions, at any scope: when one that is
	// active and not deleted is filterable, the key gets what ListRecords
	// needs to filter and count by it quickly (the SQL store: an index
	// and value counts, covering the records written before); when none
	// is, they go.
	SyncFilterable(ctx context.Context, q store.Querier, entityID, key string) error

	// Settings returns the field settings of entityIDs (every entity when
	// empty) visible to (tenantID, orgID), by entity id, the most specific
	// scope winning; entities without any are left out.
	Settings(ctx context.Context, q store.Querier, tenantID, orgID string, entityIDs []string) (map[string]Settings, error)
	// SaveSettings writes an entity's settings at exactly the scope.
	SaveSettings(ctx context.Context, q store.Querier, tenantID, orgID, entityID string, s Settings, now time.Time) error

	// PrepareLists is called before each ListRecords, outside any
	// transaction; a Store that must repair something first (the SQL
	// store: indexes a migration dropped) does it once.
	PrepareLists(ctx context.Context, db *store.DB) error
	// PrepareInserts is called outside any transaction before the
	// transaction of a batch of new records (CreateRecords), and after
	// the transaction of an upsert's batch (UpsertRecordsTx runs in its
	// caller's transaction), for the next ones: it may have the
	// statements of batch writes (InsertRecords, UpdateRecords) prepared,
	// or do nothing.
	PrepareInserts(ctx context.Context, db *store.DB)
	// InsertRecords stores new records (their TenantID, OrganizationID,
	// EntityID, Values, CreatedAt and UpdatedAt set), counting their
	// values. A record's key is (TenantID, ID): ErrConflict when the
	// tenant has a record of that ID, of any entity, deleted or not.
	InsertRecords(ctx context.Context, q store.Querier, records []*Record) error
	// GetRecord returns the record of entityID and recordID that sc may
	// read, not deleted unless withDeleted.
	GetRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, withDeleted bool) (*Record, error)
	// UpdateRecord reads the live record as GetRecord does, calls change
	// with it (change sets its Values and UpdatedAt, or fails), writes the
	// result and returns it. Concurrent updates and deletes of one record
	// apply one after the other, each to the other's result.
	UpdateRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, change func(r *Record) error) (*Record, error)
	// DeleteRecord soft-deletes the live record as GetRecord finds it,
	// setting DeletedAt and UpdatedAt to now, and returns it.
	DeleteRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, now time.Time) (*Record, error)
	// ListRecords returns the records of l that sc may read, in l's
	// order and page, and the number of them all, exact without a search.
	// With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	ListRecords(ctx context.Context, q store.Querier, sc store.Scope, l RecordList) ([]*Record, int, error)
	// LockRecords returns the tenant's records of ids (lower-cased, at
	// most 1000), of any entity and organization, deleted or not, in no
	// particular order (an id without a record is left out). It holds
	// them until q's transaction ends, as UpdateRecord holds the record it
	// changes, so that a batch changing them (UpdateRecords) applies
	// before or after a concurrent change of any of them, never between.
	// An upsert (Service.UpsertRecordsTx) reads what it updates with it.
	LockRecords(ctx context.Context, q store.Querier, tenantID string, ids []string) ([]*Record, error)
	// UpdateRecords writes a batch of changes of distinct live records
	// that LockRecords returned in q's transaction: each change's New
	// (the record with its Values and UpdatedAt changed) over the stored
	// record, its values counted as UpdateRecord counts them (Old's
	// uncounted, New's counted). A change whose record is not stored
	// live is an error wrapping store.ErrNotFound (the transaction is
	// then rolled back).
	UpdateRecords(ctx context.Context, q store.Querier, changes []RecordChange) error
	// RecordsAfter returns at most limit live records of entityID that
	// sc may read, in id order, with ids after afterID ("" for the
	// first), whose values contain search case-folded ("" for any).
	RecordsAfter(ctx context.Context, q store.Querier, sc store.Scope, entityID, afterID, search string, limit int) ([]*Record, error)
}

// RecordChange is one change of Store.UpdateRecords: Old is the record
// as Store.LockRecords returned it (left as it was), New the same record
// (its ID, TenantID, OrganizationID, EntityID and CreatedAt) with new
// Values and UpdatedAt.
type RecordChange struct {
	Old, New *Record // see the type comment
}

// RecordList is a list of one entity's records as the Service asks a
// Store for it, its filters checked and their values coerced.
type RecordList struct {
	// EntityID is the entity, in stored form.
	EntityID string
	// Filters all hold for a listed record.
	Filters []RecordFilter
	// IDs, when not empty, keeps the records of these ids (lower-cased).
	IDs []string
	// Search, when not empty, keeps the records one of whose values (as
	// text; booleans as true and false) contains it, case-folded.
	Search string
	// WithDeleted lists soft-deleted records too.
	WithDeleted bool
	// SortField is "id", "createdAt", "updatedAt" or a field key. By a
	// field, records without the value come first ascending and last
	// descending; ties go by id in the same direction.
	SortField string
	// SortDesc sorts in descending order.
	SortDesc bool
	// Limit is the page size (0: every record, for exports); Offset the
	// records skipped before the page.
	Limit, Offset int
}

// RecordFilter is one condition of a RecordList on a field's value.
type RecordFilter struct {
	// Key is the field's key (without cf_).
	Key string
	// Op is OpEq, OpIn (Values holds one or more values; either matches
	// one of them) or a range operator (OpGt, OpGte, OpLt, OpLte; one
	// value).
	Op string
	// Values are decoded JSON scalars: float64, bool or string.
	Values []any
	// Multi marks a list field: OpEq and OpIn match a list holding one of
	// Values.
	Multi bool
	// Filterable marks a field filterable for the caller, whose key the
	// Store has been told of (SyncFilterable).
	Filterable bool
}
