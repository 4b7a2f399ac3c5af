package attachments

import (
	"context"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of partitions, attachment rows and each tenant's
// stored bytes: what the Service asks of its database, in the area's
// terms. The bytes themselves live in Blobs. SQLStore (sql.go) is the
// implementation on tenantkit's SQLite and PostgreSQL schema, used when
// Options.Store is nil; attachmentstest.Run is the conformance suite any
// other implementation must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or a
// transaction, a write the *store.Tx of the Service's change, so that the
// change, its domain event and its extraction job commit together.
//
// Partitions belong to one tenant; attachments to a tenant and optionally
// one of its organizations. Methods that take a store.Scope read only what
// it may read (Scope.Readable); the others name the tenant and never touch
// another's rows.
//
// Errors: a missing row is an error wrapping store.ErrNotFound, a unique
// constraint broken one wrapping store.ErrConflict; anything else is
// returned as is.
type Store interface {
	// ListPartitions returns the tenant's partitions, oldest first.
	ListPartitions(ctx context.Context, q store.Querier, tenantID string) ([]*Partition, error)
	// GetPartition returns the tenant's partition with the id.
	GetPartition(ctx context.Context, q store.Querier, tenantID, id string) (*Partition, error)
	// GetPartitionByCode returns the tenant's partition with the code.
	GetPartitionByCode(ctx context.Context, q store.Querier, tenantID, code string) (*Partition, error)
	// InsertPartition stores a new partition; a code the tenant already
	// has is ErrConflict. With ignoreConflict a taken code (a default
	// partition another request created first) is no error and changes
	// nothing.
	InsertPartition(ctx context.Context, q store.Querier, p *Partition, ignoreConflict bool) error
	// UpdatePartition replaces the title, description, isPublic,
	// requiresOcr and updatedAt of the tenant's partition p.ID.
	UpdatePartition(ctx context.Context, q store.Querier, p *Partition) error
	// DeletePartition removes the tenant's partition. One that some
	// attachment is stored in is ErrConflict, and stays.
	DeletePartition(ctx context.Context, q store.Querier, tenantID, id string) error

	// InsertAttachment stores a new attachment with its tags and
	// assignments.
	InsertAttachment(ctx context.Context, q store.Querier, a *Attachment) error
	// GetAttachment returns the attachment with the id if sc may read it.
	GetAttachment(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Attachment, error)
	// GetAnyAttachment returns the attachment with the id, whichever
	// tenant's it is, and its partition (for public files and super
	// admins). A missing partition row (a host's store) is nil.
	GetAnyAttachment(ctx context.Context, q store.Querier, id string) (*Attachment, *Partition, error)
	// ListLinked returns the attachments sc may read that have the
	// assignment {type, id}, newest first.
	ListLinked(ctx context.Context, q store.Querier, sc store.Scope, typ, id string) ([]*Attachment, error)
	// Library returns a page of the attachments sc may read that match f,
	// in f's order, and how many match in all. With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	Library(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter) ([]*Attachment, int, error)
	// Tags returns the distinct tags of the attachments sc may read, in
	// order.
	Tags(ctx context.Context, q store.Querier, sc store.Scope) ([]string, error)
	// UpdateAttachment replaces the record (EntityID, RecordID), file
	// name, tags, assignments, custom fields and updatedAt of the
	// tenant's attachment a.ID.
	UpdateAttachment(ctx context.Context, q store.Querier, a *Attachment) error
	// DeleteAttachment removes the tenant's attachment with its tags and
	// links.
	DeleteAttachment(ctx context.Context, q store.Querier, tenantID, id string) error
	// SetContent stores the extracted text of the tenant's attachment.
	SetContent(ctx context.Context, q store.Querier, tenantID, id string, content *string) error
	// SetExtraction records how the text extraction of the tenant's
	// attachment went (Attachment.ExtractionStatus and ExtractionError).
	SetExtraction(ctx context.Context, q store.Querier, tenantID, id, status string, message *string) error
	// Existing returns which of ids (of any tenant) are attachments.
	Existing(ctx context.Context, q store.Querier, ids []string) (map[string]bool, error)

	// AddUsage adds delta bytes to the tenant's stored total. A positive
	// delta is added only when the total stays at most quota (a negative
	// quota means none); ok reports whether it was. Concurrent calls
	// never together pass the quota.
	AddUsage(ctx context.Context, q store.Querier, tenantID string, delta, quota int64) (ok bool, err error)
	// Usage returns the tenant's stored total, in bytes.
	Usage(ctx context.Context, q store.Querier, tenantID string) (int64, error)
	// CountAttachments returns how many attachments the tenant has, of
	// every organization: the files whose sizes Usage sums.
	CountAttachments(ctx context.Context, q store.Querier, tenantID string) (int, error)
}

// LibraryFilter selects and orders a library page.
type LibraryFilter struct {
	// Search matches file names anywhere, case-insensitively (non-ASCII
	// letters included).
	Search string
	// Partition, when set, selects one partition's attachments.
	Partition string
	// Tags are all required.
	Tags []string
	// SortField is fileName, fileSize or createdAt (default); ties are
	// ordered by id, in the same direction.
	SortField string
	SortDesc  bool // descending instead of ascending
	// Limit is the page size; Offset the rows skipped before it.
	Limit, Offset int
}
