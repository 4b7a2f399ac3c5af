package toggles

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of toggles and overrides: what the Service asks of
// its database, in the area's terms. The Service keeps validation, events
// and the cache; a Store only stores, reads and filters. SQLStore (sql.go)
// is the implementation on tenantkit's SQLite and PostgreSQL schema, used
// when Options.Store is nil; togglestest.Run is the conformance suite any
// other implementation must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or a
// transaction, a write always the *store.Tx of the Service's change, so
// that the change, its domain event and the cache's version bump commit
// together. A Store therefore keeps its data in that same database, in
// tables of its own.
//
// Toggles are global; overrides belong to one tenant, and every override
// method takes the tenant and never reads or writes another's.
//
// Errors: a missing row is an error wrapping store.ErrNotFound, a unique
// constraint broken (an identifier or id already taken) one wrapping
// store.ErrConflict; anything else is returned as is.
type Store interface {
	// GetToggle returns the live (not deleted) toggle with the id, or
	// ErrNotFound.
	GetToggle(ctx context.Context, q store.Querier, id string) (*Toggle, error)
	// IdentifierTaken reports whether a toggle other than the one with id
	// except has the identifier. Deleted toggles count: their identifiers
	// stay reserved.
	IdentifierTaken(ctx context.Context, q store.Querier, identifier, except string) (bool, error)
	// CreateToggle stores a new toggle with every field as given; a taken
	// id or identifier (deleted toggles' included) is ErrConflict.
	CreateToggle(ctx context.Context, q store.Querier, t *Toggle) error
	// UpdateToggle replaces a live toggle's identifier, name,
	// description, category, default value and UpdatedAt (ID, Type and
	// CreatedAt stay); ErrNotFound when no live toggle has t.ID,
	// ErrConflict when the identifier is taken.
	UpdateToggle(ctx context.Context, q store.Querier, t *Toggle) error
	// DeleteToggle soft-deletes a live toggle at the time given: it no
	// longer reads or lists, its identifier stays taken and its overrides
	// are kept but no longer listed or loaded. ErrNotFound when no live
	// toggle has the id.
	DeleteToggle(ctx context.Context, q store.Querier, id string, at time.Time) error
	// ListToggles returns a page of the live toggles matching f, in f's
	// order, and how many match in all. With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	ListToggles(ctx context.Context, q store.Querier, f ListFilter) ([]*Toggle, int, error)

	// GetOverride returns the tenant's override of the toggle, or
	// ErrNotFound.
	GetOverride(ctx context.Context, q store.Querier, tenantID, toggleID string) (*Override, error)
	// UpsertOverride sets the value of o.TenantID's override of o.ToggleID
	// (the toggle exists and is live), with o.UpdatedAt. A new override
	// takes o.ID; an existing one keeps its id. It returns the override
	// as stored.
	UpsertOverride(ctx context.Context, q store.Querier, o *Override) (*Override, error)
	// DeleteOverride removes the tenant's override of the toggle and
	// reports whether there was one.
	DeleteOverride(ctx context.Context, q store.Querier, tenantID, toggleID string) (bool, error)
	// ListOverrides returns a page of the live toggles matching f, each as
	// the tenant sees it (its override, or the default when it has none),
	// in f's order, and how many match in all.
	ListOverrides(ctx context.Context, q store.Querier, tenantID string, f OverrideFilter) ([]*OverrideItem, int, error)

	// LoadAll returns every live toggle and every override of a live
	// toggle, in no particular order, for the Service's cache.
	LoadAll(ctx context.Context, q store.Querier) ([]*Toggle, []*Override, error)
}

// ListFilter selects and orders toggles. Text filters match anywhere,
// case-insensitively (lower-casing, non-ASCII letters included); Search
// matches the identifier, name, description or category.
type ListFilter struct {
	Search, Identifier, Name, Category string // non-empty fields match case-insensitive substrings; Search any of the texts
	// Type, when set, selects the toggles of exactly this type.
	Type Type
	// SortField is id, category, identifier, name, createdAt, updatedAt or
	// type; anything else orders by createdAt. Ties are ordered by id, in
	// the same direction.
	SortField string
	SortDesc  bool // descending instead of ascending
	// Limit is the page size (0 returns no rows, only the total); Offset
	// the number of rows skipped before the page.
	Limit, Offset int
}

// OverrideFilter selects and orders ListOverrides. Text filters match
// anywhere, case-insensitively.
type OverrideFilter struct {
	Identifier, Name, Category string // non-empty fields match case-insensitive substrings of the toggle's
	// SortField is identifier, name or category; anything else orders by
	// identifier. Ties are ordered by the toggle's id, in the same
	// direction.
	SortField string
	SortDesc  bool // descending instead of ascending
	// Limit is the page size (0 returns no rows, only the total); Offset
	// the number of rows skipped before the page.
	Limit, Offset int
}
