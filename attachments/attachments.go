package attachments

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tenantkit/tenantkit/store"
)

// Attachment is a stored file and what is known of it. Its bytes live in
// the service's Blobs under StorageKey.
type Attachment struct {
	ID             string `json:"id"`
	TenantID       string `json:"tenantId"`
	OrganizationID string `json:"organizationId,omitempty"`
	// EntityID and RecordID name the record the file was uploaded to (a
	// transfer moves it); Assignments always link it there.
	EntityID string `json:"entityId"`
	RecordID string `json:"recordId"`
	FileName string `json:"fileName"`
	// FileSize is in bytes.
	FileSize int64 `json:"fileSize"`
	// MimeType is sniffed from the bytes, never taken from the client.
	MimeType      string `json:"mimeType"`
	PartitionCode string `json:"partitionCode"` // the storage partition that decides how the file is served
	// Content is the extracted text, filled in the background; nil until
	// then, and for formats without extraction.
	Content *string `json:"content"`
	// ExtractionStatus is how the text extraction went: "" until it has
	// run (or for partitions without it), then ExtractionDone,
	// ExtractionRetrying or ExtractionFailed.
	ExtractionStatus string `json:"extractionStatus,omitempty"`
	// ExtractionError says why extraction is retrying or failed.
	ExtractionError *string        `json:"extractionError,omitempty"`
	Tags            []string       `json:"tags"`         // free labels the library filters by
	Assignments     []Assignment   `json:"assignments"`  // what the file is linked to, its upload record included
	CustomFields    map[string]any `json:"customFields"` // values of the custom fields of CustomFieldsEntity
	CreatedAt       time.Time      `json:"createdAt"`
	UpdatedAt       time.Time      `json:"updatedAt"`
	// StorageKey is where Blobs keeps the bytes.
	StorageKey string `json:"-"`
}

// Extraction statuses (Attachment.ExtractionStatus).
const (
	// ExtractionDone: the job ran; content holds the text, or null when
	// the format has none to read.
	ExtractionDone = "done"
	// ExtractionRetrying: an attempt failed (ExtractionError says why)
	// and another follows.
	ExtractionRetrying = "retrying"
	// ExtractionFailed: the file was refused, or no attempt is left
	// (ExtractionError says why); content stays null.
	ExtractionFailed = "failed"
)

// Assignment links an attachment to something: {type: entity id, id:
// record id} for records, with an optional link and label.
type Assignment struct {
	Type  string `json:"type" jsonschema:"required,minLength=1,maxLength=500"` // an entity id for a record
	ID    string `json:"id" jsonschema:"required,minLength=1,maxLength=500"`
	Href  string `json:"href,omitempty" jsonschema:"maxLength=500"` // an optional link to the target
	Label string `json:"label,omitempty" jsonschema:"maxLength=500"`
}

// Partition is a tenant's storage partition: where attachments of a kind go
// and how they are served (public or private) and processed (text
// extraction or not).
type Partition struct {
	ID string `json:"id"`
	// Code names the partition in uploads; immutable.
	Code        string `json:"code"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// IsPublic partitions' files are served without a credential.
	IsPublic bool `json:"isPublic"`
	// RequiresOcr switches text extraction on for the partition's files.
	RequiresOcr bool `json:"requiresOcr"`
	// EnvKey is the environment variable that would name the partition's
	// storage root: ATTACHMENTS_PARTITION_<UPPER_SNAKE(code)>_ROOT.
	EnvKey    string    `json:"envKey"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	TenantID  string    `json:"-"`
}

// PartitionInput creates or updates a partition.
type PartitionInput struct {
	// ID names the partition an update changes.
	ID          string `json:"id"`
	Code        string `json:"code" jsonschema:"required,maxLength=60,pattern=^[A-Za-z0-9_-]+$"` // letters, digits, _ and -; unique in the tenant
	Title       string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=1000"`
	IsPublic    *bool  `json:"isPublic"` // files served to anyone; default false
	// RequiresOcr defaults to Options.DefaultOCR on create.
	RequiresOcr *bool `json:"requiresOcr"`
}

// The default partitions, created for each tenant on first use.
const (
	// PublicPartition holds public media (product images).
	PublicPartition = "productsMedia"
	// PrivatePartition holds everything else, and is where uploads go when
	// they name no partition.
	PrivatePartition = "privateAttachments"
)

// defaultPartitions describes the two defaults (requiresOcr comes from
// Options.DefaultOCR).
var defaultPartitions = []Partition{
	{Code: PublicPartition, Title: "Products media", Description: "Public media uploaded for catalog products.", IsPublic: true},
	{Code: PrivatePartition, Title: "Private attachments", Description: "Internal attachments scoped to tenants and organizations."},
}

// IsDefaultPartition reports whether code names one of the two default
// partitions, which cannot be removed.
func IsDefaultPartition(code string) bool {
	return code == PublicPartition || code == PrivatePartition
}

// partitionCodePattern is what a partition code may be.
var partitionCodePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`)

// EnvKey returns the environment variable naming a partition's storage
// root: "productsMedia" → "ATTACHMENTS_PARTITION_PRODUCTS_MEDIA_ROOT".
func EnvKey(code string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range code {
		switch {
		case r == '-' || r == '_':
			b.WriteByte('_')
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	return "ATTACHMENTS_PARTITION_" + b.String() + "_ROOT"
}

// Slug is the file-name part of a thumbnail URL: the lower-cased base name
// with every run of other characters than letters and digits as "-", plus
// the lower-cased extension ("My File.PNG" → "my-file.png").
func Slug(fileName string) string {
	base, ext := fileName, ""
	if i := strings.LastIndexByte(fileName, '.'); i > 0 {
		base, ext = fileName[:i], strings.ToLower(fileName[i:])
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimSuffix(b.String(), "-")
	if slug == "" {
		slug = "file"
	}
	extOK := len(ext) > 1 && strings.IndexFunc(ext[1:], func(r rune) bool {
		return r >= 128 || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	}) < 0
	if extOK {
		slug += ext
	}
	return slug
}

// executableExtensions are refused in any dot segment of a file name.
var executableExtensions = []string{"exe", "dll", "bat", "cmd", "com", "msi", "sh", "ps1", "psm1", "js", "jse", "jar",
	"vbs", "vbe", "scr", "hta", "lnk", "pif", "reg", "wsf", "wsh", "app", "apk"}

// activeExtensions are documents a browser would run script in.
var activeExtensions = []string{"html", "htm", "xhtml", "svg", "xml"}

// activeTypes are sniffed types refused as active content.
var activeTypes = []string{"text/html", "image/svg+xml", "text/xml", "application/xml", "application/xhtml+xml"}

// segments returns the lower-cased dot segments after the first of a file
// name ("a.TAR.gz" → tar, gz).
func segments(fileName string) []string {
	parts := strings.Split(strings.ToLower(fileName), ".")
	if len(parts) < 2 {
		return nil
	}
	return parts[1:]
}

// isBidiControl reports whether r changes the direction text is shown
// in: the embeddings, overrides and isolates (U+202A-U+202E,
// U+2066-U+2069) and the marks (U+200E, U+200F, U+061C). In a file name
// they make "cat_\u202Egnp.zip" read as "cat_piz.png".
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// cleanFileName returns the name a file is stored under: its last path
// element (after any '/' or '\\', so no client path is kept), trimmed.
// It refuses names that are empty, "." or "..", too long, not UTF-8 text,
// or that carry an executable or active-content extension in any dot
// segment (a segment's part before ':' counts too: "x.exe::$DATA" is an
// executable on Windows).
func cleanFileName(name string) (string, error) {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "" || name == "." || name == "..":
		return "", store.Invalid("file", "The file has no name.")
	case len(name) > maxFileName:
		return "", store.Invalid("file", "The file name is longer than 255 bytes.")
	case !store.Storable(name):
		return "", store.Invalid("file", "The file name is not valid UTF-8 text.")
	case strings.ContainsFunc(name, isBidiControl):
		return "", store.Invalid("file", "The file name contains a bidirectional control character (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F or U+061C).")
	}
	exts := segments(name)
	for i, seg := range exts {
		seg, _, _ = strings.Cut(seg, ":")
		exts[i] = strings.TrimSpace(seg)
	}
	for _, seg := range exts {
		if slices.Contains(executableExtensions, seg) {
			return "", ErrExecutable
		}
	}
	for _, seg := range exts {
		if slices.Contains(activeExtensions, seg) {
			return "", ErrActiveContent
		}
	}
	return name, nil
}

// isActiveType reports whether a sniffed MIME type is active content.
func isActiveType(mime string) bool {
	base, _, _ := strings.Cut(mime, ";")
	return slices.Contains(activeTypes, strings.TrimSpace(base))
}

// hasExtension reports whether fileName ends with one of exts (given with
// or without the dot, any case).
func hasExtension(fileName string, exts []string) bool {
	name := strings.ToLower(fileName)
	for _, e := range exts {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// Limits on input (beyond the upload size and quota).
const (
	maxFileName    = 255
	maxTags        = 50
	maxTag         = 100
	maxAssignments = 100
	maxRefText     = 500
	maxTitle       = 200
	maxDescription = 1000
)

// Errors callers can test for. Each wraps a store error kind; over HTTP
// its message is the error body.
var (
	ErrNotFound          = store.Errorf(store.ErrNotFound, "Attachment not found")
	ErrPartitionNotFound = store.Errorf(store.ErrNotFound, "Partition not found")
	ErrTooLarge          = store.Errorf(store.ErrTooLarge, "Attachment exceeds the maximum upload size.")
	ErrQuota             = store.Errorf(store.ErrTooLarge, "Attachment storage quota exceeded for this tenant.")
	ErrExecutable        = store.Errorf(store.ErrInvalid, "Executable file types are not allowed as attachments.")
	ErrActiveContent     = store.Errorf(store.ErrInvalid, "Active content uploads are not allowed.")
	ErrFileType          = store.Errorf(store.ErrInvalid, "File type not allowed")
	ErrPartitionsLocked  = store.Errorf(store.ErrForbidden, "Attachment partitions are managed by the environment.")
	ErrPartitionInUse    = store.Errorf(store.ErrConflict, "Partition is in use and cannot be removed.")
	ErrPartitionExists   = store.Errorf(store.ErrConflict, "Partition code already exists.")
	ErrDefaultPartition  = store.Errorf(store.ErrInvalid, "Default partitions cannot be removed.")
	ErrCodeImmutable     = store.Errorf(store.ErrInvalid, "Partition code cannot be changed.")
	ErrNotImage          = store.Errorf(store.ErrInvalid, "Unsupported media type")
	ErrScopeMismatch     = store.Errorf(store.ErrForbidden, "tenantId and organizationId must match your scope.")
)
