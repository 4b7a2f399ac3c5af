package attachments

import (
	"context"
	"embed"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables.
var Migrations = store.Migrations{Line: "attachments", FS: migrationsFS, Dir: "migrations"}

// The events the area emits.
const (
	EventCreated = "attachments.attachment.created"
	EventUpdated = "attachments.attachment.updated"
	EventDeleted = "attachments.attachment.deleted"
	// EventExtractionFinished: the text extraction job recorded its
	// outcome (extractionStatus done, or failed for a file the
	// extractors refused).
	EventExtractionFinished = "attachments.attachment.extraction_finished"
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventCreated, Label: "Attachment created", Description: "A file was uploaded.",
		ClientBroadcast: true, ViewFeature: "attachments.view"},
	{ID: EventUpdated, Label: "Attachment updated", Description: "An attachment's file name, tags, assignments or custom fields changed, or it was transferred to another record.",
		ClientBroadcast: true, ViewFeature: "attachments.view"},
	{ID: EventDeleted, Label: "Attachment deleted", Description: "An attachment and its file were removed.",
		ClientBroadcast: true, ViewFeature: "attachments.view"},
	{ID: EventExtractionFinished, Label: "Attachment text extracted", Description: "The text extraction of an attachment finished (extractionStatus done, or failed for a file that could not be read).",
		ClientBroadcast: true, ViewFeature: "attachments.view"},
}

// CustomFieldsEntity is the entity whose custom field definitions apply to
// attachments' customFields.
const CustomFieldsEntity = "attachments:attachment"

// Defaults of Options.
const (
	DefaultMaxUploadBytes   = 25 << 20
	DefaultTenantQuotaBytes = 512 << 20
)

// Fields gives the area what it needs of custom field definitions (the
// entities area; the Kit wires it). Both methods act for the caller's scope
// in ctx. Uploads and changes of attachments validate through them, so
// they must answer from definitions that honour every change committed
// before the call, by any process: the entities area's do (its record
// writes' check, vcache's Sync), so a field defined or deleted through
// one server is honoured by the next upload through another.
type Fields interface {
	// CheckValues validates values (keys with or without "cf_") against
	// the definitions of entityID and returns them in stored form. An
	// undeclared key or a bad value is a *store.ValidationError naming
	// "cf_<key>". partial skips the required-field check (an update).
	CheckValues(ctx context.Context, entityID string, values map[string]any, partial bool) (map[string]any, error)
	// FieldConfig returns the configJson of the field key of entityID, or
	// an error wrapping store.ErrNotFound when no definition applies.
	FieldConfig(ctx context.Context, entityID, key string) (map[string]any, error)
}

// OCR reads the text of images and scanned PDFs. None is plugged by
// default; a host may bring one (a vision model, tesseract).
type OCR interface {
	// Text returns the text of the file, whose sniffed type is mimeType.
	Text(ctx context.Context, r io.Reader, mimeType string) (string, error)
}

// Options configure the service. The zero value keeps files in memory
// (MemBlobs), with the default limits (25 MB a file, 512 MB a tenant).
type Options struct {
	// Blobs stores the files; nil keeps them in memory (NewMemBlobs),
	// which is only for tests and trials. The Kit uses FSBlobs under
	// Config.FilesDir when set.
	Blobs Blobs
	// MaxUploadBytes bounds one file; 0 means DefaultMaxUploadBytes
	// (APP_ATTACHMENT_MAX_UPLOAD_MB). A field's maxAttachmentSizeMb can
	// only lower it.
	MaxUploadBytes int64
	// TenantQuotaBytes bounds the sum of a tenant's file sizes; 0 means
	// DefaultTenantQuotaBytes (APP_ATTACHMENT_TENANT_QUOTA_MB), negative
	// no quota.
	TenantQuotaBytes int64
	// NoDefaultOCR makes new partitions (the defaults included) skip text
	// extraction unless they ask for it
	// (APP_DEFAULT_ATTACHMENT_OCR_ENABLED=false).
	NoDefaultOCR bool
	// PartitionsLocked refuses partition changes with 403
	// (APP_ATTACHMENT_PARTITIONS_LOCKED=true).
	PartitionsLocked bool
	// Fields validates customFields and reads fieldKey's configuration;
	// nil refuses any custom field and any fieldKey. The Kit wires the
	// entities area.
	Fields Fields
	// Progress, when set, gets a progress job per text extraction (see
	// Progress). The Kit wires the progress area.
	Progress Progress
	// OCR, when set, reads images and PDFs without a text layer.
	OCR OCR
	// Extractor reads the text of documents for their content; nil
	// extracts none but through OCR. Package attachments/extract is the
	// built-in one (plain text, PDF, .docx), which package full sets.
	Extractor Extractor
	// ExtractTimeout bounds one run of the extraction job (Extractor
	// and OCR); a run past it is stopped and retried. 0 means
	// DefaultExtractTimeout.
	ExtractTimeout time.Duration
	// MaxContentBytes bounds an attachment's stored content (the text
	// is cut at a UTF-8 boundary); 0 means DefaultMaxContentBytes.
	MaxContentBytes int
	// Images resizes images for the image route; nil serves the
	// original whatever the size asked for. Package attachments/thumbs is
	// the built-in one, which package full sets.
	Images Images
	// Store holds partitions and attachment rows; nil is NewSQLStore()
	// in the service's database. Another store must pass
	// attachmentstest.Run.
	Store Store
	// Logger receives background failures; nil is slog.Default().
	Logger *slog.Logger
	// ImageMemoryBytes is the memory the image resizes of this process
	// may take at once, as Images.MemoryNeeded estimates them before
	// decoding, and so the most one resize may take: a larger one is
	// refused (400); 0 means DefaultImageMemoryBytes
	// (APP_ATTACHMENT_IMAGE_MEMORY_MB).
	ImageMemoryBytes int64
	// ImageResizes is how many resizes run at once in this process; 0
	// means half the CPUs (GOMAXPROCS), at least one.
	ImageResizes int
	// ImageResizesPerTenant is how many resizes of one tenant may run or
	// wait at once in this process; more are refused with ErrBusy. 0
	// means DefaultImageResizesPerTenant.
	ImageResizesPerTenant int
	// ImageWait is how long a resize waits for memory and a CPU before
	// ErrBusy; 0 means DefaultImageWait.
	ImageWait time.Duration
}

// Service manages partitions and attachments and serves their files.
type Service struct {
	db     *store.DB
	store  Store
	blobs  Blobs
	opts   Options
	logger *slog.Logger
	// jobs enqueues text extraction; set by RegisterJobs.
	jobs *jobs.Engine
	// resizes shares one resize among concurrent first requests of a
	// size.
	resizes singleflight.Group
	// files caches delivery lookups (Lookup) by attachment id.
	files *vcache.Cache[string, *File]
	// limits bound the memory and CPUs resizes take at once, and each
	// tenant's share of them.
	limits *resizeLimits
}

// New returns the service over db. It starts nothing; the Kit registers
// its jobs (RegisterJobs).
// It returns an error only for options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	if opts.Store == nil {
		opts.Store = NewSQLStore()
	}
	if opts.Blobs == nil {
		opts.Blobs = NewMemBlobs()
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if opts.TenantQuotaBytes == 0 {
		opts.TenantQuotaBytes = DefaultTenantQuotaBytes
	}
	if opts.ImageMemoryBytes <= 0 {
		opts.ImageMemoryBytes = DefaultImageMemoryBytes
	}
	if opts.ImageResizesPerTenant <= 0 {
		opts.ImageResizesPerTenant = DefaultImageResizesPerTenant
	}
	if opts.ImageWait <= 0 {
		opts.ImageWait = DefaultImageWait
	}
	if opts.ExtractTimeout <= 0 {
		opts.ExtractTimeout = DefaultExtractTimeout
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{db: db, store: opts.Store, blobs: opts.Blobs, opts: opts, logger: logger,
		files:  vcache.New[string, *File](db, "attachments.files", fileCacheCheck, 10000),
		limits: newResizeLimits(opts)}, nil
}

// Blobs returns the service's file storage.
func (s *Service) Blobs() Blobs { return s.blobs }

// MaxUploadBytes is the largest file an upload accepts.
func (s *Service) MaxUploadBytes() int64 { return s.opts.MaxUploadBytes }

// scope returns the caller's scope.
func scope(ctx context.Context) (store.Scope, error) { return store.ScopeFrom(ctx) }

// ---- Partitions

// ensureDefaults creates the tenant's default partitions if they are
// missing (concurrent callers are harmless).
func (s *Service) ensureDefaults(ctx context.Context, tx *store.Tx, tenantID string) error {
	now := tx.Now()
	for _, d := range defaultPartitions {
		p := d
		p.ID, p.TenantID, p.RequiresOcr, p.CreatedAt, p.UpdatedAt = store.NewID(), tenantID, !s.opts.NoDefaultOCR, now, now
		if err := s.store.InsertPartition(ctx, tx, &p, true); err != nil {
			return err
		}
	}
	return nil
}

// Partitions returns the caller's tenant's partitions, creating the two
// defaults first when they are missing.
func (s *Service) Partitions(ctx context.Context) ([]*Partition, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.ensureDefaultsOnce(ctx, sc.TenantID); err != nil {
		return nil, err
	}
	return s.store.ListPartitions(ctx, s.db, sc.TenantID)
}

// ensureDefaultsOnce creates the defaults when the tenant lacks one, in a
// write transaction only then.
func (s *Service) ensureDefaultsOnce(ctx context.Context, tenantID string) error {
	missing := false
	for _, d := range defaultPartitions {
		_, err := s.store.GetPartitionByCode(ctx, s.db, tenantID, d.Code)
		if errors.Is(err, store.ErrNotFound) {
			missing = true
			break
		}
		if err != nil {
			return err
		}
	}
	if !missing {
		return nil
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error { return s.ensureDefaults(ctx, tx, tenantID) })
}

// checkPartition validates a partition's input; create also requires the
// code and defaults the flags.
func (s *Service) checkPartition(in *PartitionInput, create bool) error {
	var v store.ValidationError
	in.Title = strings.TrimSpace(in.Title) // the code is taken as it is: surrounding space is refused
	switch {
	case in.Code == "":
		v.Add("code", "Partition code is required.")
	case !partitionCodePattern.MatchString(in.Code):
		v.Add("code", "Use 1 to 60 letters, digits, '_' or '-'.")
	}
	switch {
	case in.Title == "":
		v.Add("title", "Title is required.")
	case len(in.Title) > maxTitle || !store.Storable(in.Title):
		v.Add("title", "Use at most 200 bytes of text.")
	}
	if len(in.Description) > maxDescription || !store.Storable(in.Description) {
		v.Add("description", "Use at most 1000 bytes of text.")
	}
	if !create && !store.IsID(in.ID) {
		v.Add("id", "A partition id (UUID) is required.")
	}
	return v.Err()
}

// CreatePartition adds a partition to the caller's tenant.
func (s *Service) CreatePartition(ctx context.Context, in PartitionInput) (*Partition, error) {
	if s.opts.PartitionsLocked {
		return nil, ErrPartitionsLocked
	}
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkPartition(&in, true); err != nil {
		return nil, err
	}
	p := &Partition{ID: store.NewID(), TenantID: sc.TenantID, Code: in.Code, Title: in.Title, Description: in.Description,
		IsPublic: in.IsPublic != nil && *in.IsPublic, RequiresOcr: !s.opts.NoDefaultOCR, EnvKey: EnvKey(in.Code)}
	if in.RequiresOcr != nil {
		p.RequiresOcr = *in.RequiresOcr
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.ensureDefaults(ctx, tx, sc.TenantID); err != nil {
			return err
		}
		p.CreatedAt, p.UpdatedAt = tx.Now(), tx.Now()
		err := s.store.InsertPartition(ctx, tx, p, false)
		if errors.Is(err, store.ErrConflict) {
			return ErrPartitionExists
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// UpdatePartition changes a partition's title, description and flags; its
// code cannot change.
func (s *Service) UpdatePartition(ctx context.Context, in PartitionInput) (*Partition, error) {
	if s.opts.PartitionsLocked {
		return nil, ErrPartitionsLocked
	}
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkPartition(&in, false); err != nil {
		return nil, err
	}
	var out *Partition
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		p, err := s.store.GetPartition(ctx, tx, sc.TenantID, in.ID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrPartitionNotFound
		}
		if err != nil {
			return err
		}
		if p.Code != in.Code {
			return ErrCodeImmutable
		}
		p.Title, p.Description, p.UpdatedAt = in.Title, in.Description, tx.Now()
		if in.IsPublic != nil {
			p.IsPublic = *in.IsPublic
		}
		if in.RequiresOcr != nil {
			p.RequiresOcr = *in.RequiresOcr
		}
		out = p
		if _, err := s.files.Changed(ctx, tx); err != nil { // isPublic decides who gets its files
			return err
		}
		return s.store.UpdatePartition(ctx, tx, p)
	})
	return out, err
}

// DeletePartition removes a partition. The defaults cannot be removed,
// nor a partition that holds attachments.
func (s *Service) DeletePartition(ctx context.Context, id string) error {
	if s.opts.PartitionsLocked {
		return ErrPartitionsLocked
	}
	sc, err := scope(ctx)
	if err != nil {
		return err
	}
	if !store.IsID(id) {
		return ErrPartitionNotFound
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		p, err := s.store.GetPartition(ctx, tx, sc.TenantID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrPartitionNotFound
		}
		if err != nil {
			return err
		}
		if IsDefaultPartition(p.Code) {
			return ErrDefaultPartition
		}
		err = s.store.DeletePartition(ctx, tx, sc.TenantID, id)
		switch {
		case errors.Is(err, store.ErrConflict):
			return ErrPartitionInUse
		case errors.Is(err, store.ErrNotFound):
			return ErrPartitionNotFound
		}
		return err
	})
}
