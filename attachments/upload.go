package attachments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"

	"github.com/gabriel-vasile/mimetype"

	"github.com/tenantkit/tenantkit/store"
)

// StagedFile is an uploaded file stored but not yet an attachment: Stage
// streams the bytes to Blobs under a fresh id, Upload then validates the
// rest and makes it one (or discards it). A staged file no attachment row
// names is removed by the orphan sweep, should the process stop between.
type StagedFile struct {
	id, key, tenantID string
	FileName          string
	Size              int64 // in bytes
	// MimeType is sniffed from the bytes.
	MimeType string
}

// sniffBytes is how much of a file the type sniffing reads (mimetype's
// default).
const sniffBytes = 3072

// errLimit ends a stream that passed its limit.
var errLimit = errors.New("limit reached")

// limitedReader fails with errLimit once more than n bytes were read.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errLimit
	}
	return n, err
}

// Stage streams a file to storage for the caller's tenant, never holding
// it whole in memory. The file keeps the last element of the name given
// (no client path). It refuses executable and active-content names
// before reading, a sniffed active type after the first 3 KiB, and stops
// at the upload limit (ErrTooLarge) or at the tenant's remaining quota
// (ErrQuota). The caller passes the result to Upload, or Discard.
func (s *Service) Stage(ctx context.Context, fileName string, r io.Reader) (*StagedFile, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	fileName, err = cleanFileName(fileName)
	if err != nil {
		return nil, err
	}
	limit, quotaBound, err := s.stageLimit(ctx, sc.TenantID)
	if err != nil {
		return nil, err
	}
	tooLarge := func() error {
		if quotaBound {
			return ErrQuota
		}
		return ErrTooLarge
	}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	head = head[:n]
	if int64(n) > limit {
		return nil, tooLarge()
	}
	mime := mimetype.Detect(head)
	if isActiveType(mime.String()) || activeMarkup(head) {
		return nil, ErrActiveContent
	}
	// The bare type ("text/plain"), without parameters such as charset.
	mimeType, _, _ := strings.Cut(mime.String(), ";")
	f := &StagedFile{id: store.NewID(), tenantID: sc.TenantID, FileName: fileName, MimeType: strings.TrimSpace(mimeType)}
	f.key = originalKey(sc.TenantID, f.id)
	size, err := s.blobs.Put(ctx, f.key, &limitedReader{r: io.MultiReader(bytes.NewReader(head), r), n: limit})
	if err != nil {
		if errors.Is(err, errLimit) {
			return nil, tooLarge()
		}
		return nil, err
	}
	f.Size = size
	return f, nil
}

// activeMarkup catches markup mimetype reads as plain text: a document
// that starts (after white space and a byte-order mark) with an SVG,
// HTML or XML tag.
func activeMarkup(head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("\xef\xbb\xbf")), " \t\r\n")
	lower := bytes.ToLower(t[:min(len(t), 64)])
	for _, tag := range []string{"<svg", "<?xml", "<html", "<!doctype html", "<script"} {
		if bytes.HasPrefix(lower, []byte(tag)) {
			return true
		}
	}
	return false
}

// stageLimit is how many bytes a new file of the tenant may have: the
// upload limit or what the quota leaves, whichever is less (quotaBound
// says it is the quota).
func (s *Service) stageLimit(ctx context.Context, tenantID string) (limit int64, quotaBound bool, err error) {
	limit = s.opts.MaxUploadBytes
	if s.opts.TenantQuotaBytes < 0 {
		return limit, false, nil
	}
	used, err := s.store.Usage(ctx, s.db, tenantID)
	if err != nil {
		return 0, false, err
	}
	left := s.opts.TenantQuotaBytes - used
	if left < limit {
		return max(left, 0), true, nil
	}
	return limit, false, nil
}

// Discard removes a staged file that will not become an attachment.
func (s *Service) Discard(ctx context.Context, f *StagedFile) {
	if f == nil {
		return
	}
	if err := s.blobs.Delete(context.WithoutCancel(ctx), f.key); err != nil {
		s.logger.WarnContext(ctx, "attachments: discarding a staged file", "key", f.key, "err", err)
	}
}

// UploadInput is an upload: the file (File to stream, or Staged when the
// caller staged it already) and what describes it.
type UploadInput struct {
	EntityID string
	RecordID string
	// FieldKey names the entity's attachment field the file is for: its
	// maxAttachmentSizeMb, acceptExtensions and partitionCode apply.
	FieldKey string
	// PartitionCode defaults to the field's, then to PrivatePartition.
	PartitionCode string
	Tags          []string     // free labels
	Assignments   []Assignment // links beside the upload record
	// CustomFields are validated against the definitions of
	// CustomFieldsEntity.
	CustomFields map[string]any

	// FileName and File are the file to stream when Staged is nil.
	FileName string
	File     io.Reader   // see FileName
	Staged   *StagedFile // a file Stage already stored; nil streams File
}

// Upload stores a file as an attachment of a record of the caller's
// tenant and organization, and enqueues its text extraction (in the same
// transaction), answering without waiting for it. On any error nothing is
// kept: the staged file is discarded, except when the commit's outcome is
// unknown (store.ErrCommitUnknown): the row may be there, so the file
// stays, and the orphan sweep removes it if no row names it.
func (s *Service) Upload(ctx context.Context, in UploadInput) (a *Attachment, err error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	var v store.ValidationError
	in.EntityID, in.RecordID = strings.TrimSpace(in.EntityID), strings.TrimSpace(in.RecordID)
	checkRef(&v, "entityId", in.EntityID)
	checkRef(&v, "recordId", in.RecordID)
	if in.Staged == nil && in.File == nil {
		v.Add("file", "A file is required.")
	}
	if in.FieldKey != "" && (len(in.FieldKey) > 100 || !store.Storable(in.FieldKey)) {
		v.Add("fieldKey", "Unknown field.")
	}
	tags, tagErr := checkTags(in.Tags)
	if tagErr != "" {
		v.Add("tags", tagErr)
	}
	assignments, asErr := checkAssignments(in.Assignments)
	if asErr != "" {
		v.Add("assignments", asErr)
	}
	if err := v.Err(); err != nil {
		if in.Staged != nil && in.Staged.tenantID == sc.TenantID {
			s.Discard(ctx, in.Staged)
		}
		return nil, err
	}
	staged := in.Staged
	if staged != nil && staged.tenantID != sc.TenantID {
		// Not the caller's to discard.
		return nil, store.Invalid("file", "The staged file belongs to another tenant.")
	}
	if staged == nil {
		if staged, err = s.Stage(ctx, in.FileName, in.File); err != nil {
			return nil, err
		}
	}
	defer func() {
		switch {
		case errors.Is(err, store.ErrCommitUnknown):
			// The row may have committed: the file stays, and the orphan
			// sweep removes it if no row names it.
			s.logger.WarnContext(ctx, "attachments: upload's commit outcome unknown, file kept", "key", staged.key, "err", err)
		case err != nil:
			s.Discard(ctx, staged)
		}
	}()
	partitionCode := in.PartitionCode
	if in.FieldKey != "" {
		code, err := s.applyField(ctx, in.EntityID, in.FieldKey, staged)
		if err != nil {
			return nil, err
		}
		if partitionCode == "" {
			partitionCode = code
		}
	}
	if partitionCode == "" {
		partitionCode = PrivatePartition
	}
	fields, err := s.checkCustomFields(ctx, in.CustomFields, false)
	if err != nil {
		return nil, err
	}
	primary := Assignment{Type: in.EntityID, ID: in.RecordID}
	if !hasLink(assignments, primary) {
		assignments = append([]Assignment{primary}, assignments...)
	}
	a = &Attachment{ID: staged.id, TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, EntityID: in.EntityID,
		RecordID: in.RecordID, FileName: staged.FileName, FileSize: staged.Size, MimeType: staged.MimeType,
		PartitionCode: partitionCode, Tags: tags, Assignments: assignments, CustomFields: fields, StorageKey: staged.key}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		p, err := s.store.GetPartitionByCode(ctx, tx, sc.TenantID, partitionCode)
		if errors.Is(err, store.ErrNotFound) && IsDefaultPartition(partitionCode) {
			// The tenant's first upload: create the defaults.
			if err := s.ensureDefaults(ctx, tx, sc.TenantID); err != nil {
				return err
			}
			p, err = s.store.GetPartitionByCode(ctx, tx, sc.TenantID, partitionCode)
		}
		if errors.Is(err, store.ErrNotFound) {
			return store.Invalid("partitionCode", "Unknown partition.")
		}
		if err != nil {
			return err
		}
		ok, err := s.store.AddUsage(ctx, tx, sc.TenantID, a.FileSize, s.opts.TenantQuotaBytes)
		if err != nil {
			return err
		}
		if !ok {
			return ErrQuota
		}
		a.CreatedAt, a.UpdatedAt = tx.Now(), tx.Now()
		if err := s.store.InsertAttachment(ctx, tx, a); err != nil {
			return err
		}
		if p.RequiresOcr && s.extractable(a) {
			if err := s.enqueueExtraction(ctx, tx, a); err != nil {
				return err
			}
		}
		_, err = tx.EmitData(ctx, EventCreated, sc, eventOf(a))
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// applyField applies the field definition fieldKey of entityID to a
// staged file: its size limit and accepted extensions. It returns the
// field's partition code ("" when it names none).
func (s *Service) applyField(ctx context.Context, entityID, fieldKey string, f *StagedFile) (string, error) {
	if s.opts.Fields == nil {
		return "", store.Invalid("fieldKey", "Unknown field.")
	}
	cfg, err := s.opts.Fields.FieldConfig(ctx, entityID, strings.TrimPrefix(fieldKey, "cf_"))
	if errors.Is(err, store.ErrNotFound) {
		return "", store.Invalid("fieldKey", "Unknown field.")
	}
	if err != nil {
		return "", err
	}
	if mb, ok := cfg["maxAttachmentSizeMb"].(float64); ok && mb > 0 && !math.IsInf(mb, 0) {
		if float64(f.Size) > mb*(1<<20) {
			return "", ErrTooLarge
		}
	}
	if exts := stringList(cfg["acceptExtensions"]); len(exts) > 0 && !hasExtension(f.FileName, exts) {
		return "", ErrFileType
	}
	code, _ := cfg["partitionCode"].(string)
	return code, nil
}

// stringList reads a JSON list of strings (other items are skipped).
func stringList(x any) []string {
	list, _ := x.([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkCustomFields validates custom field values with Options.Fields.
func (s *Service) checkCustomFields(ctx context.Context, values map[string]any, partial bool) (map[string]any, error) {
	if len(values) == 0 && partial {
		return map[string]any{}, nil
	}
	if s.opts.Fields == nil {
		if len(values) == 0 {
			return map[string]any{}, nil
		}
		var v store.ValidationError
		for k := range values {
			v.Add("cf_"+strings.TrimPrefix(k, "cf_"), "Unknown custom field")
		}
		return nil, v.Err()
	}
	out, err := s.opts.Fields.CheckValues(ctx, CustomFieldsEntity, values, partial)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// checkRef validates an entity or record id.
func checkRef(v *store.ValidationError, field, s string) {
	switch {
	case s == "":
		v.Add(field, "Required.")
	case len(s) > maxRefText || !store.Storable(s):
		v.Add(field, "Use at most 500 bytes of valid UTF-8 text without NUL characters.")
	}
}

// checkTags trims and validates tags, dropping repeats; a non-empty
// message says what is wrong.
func checkTags(tags []string) ([]string, string) {
	if len(tags) > maxTags {
		return nil, "Use at most 50 tags."
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return nil, "Tags cannot be empty."
		case len(t) > maxTag || !store.Storable(t):
			return nil, "Each tag is text of at most 100 bytes."
		}
		out = append(out, t)
	}
	return dedupe(out), ""
}

// checkAssignments validates assignments; a non-empty message says what
// is wrong.
func checkAssignments(list []Assignment) ([]Assignment, string) {
	if len(list) > maxAssignments {
		return nil, "Use at most 100 assignments."
	}
	out := make([]Assignment, 0, len(list))
	for _, a := range list {
		a.Type, a.ID = strings.TrimSpace(a.Type), strings.TrimSpace(a.ID)
		if a.Type == "" || a.ID == "" {
			return nil, "Each assignment needs a type and an id."
		}
		for _, s := range []string{a.Type, a.ID, a.Href, a.Label} {
			if len(s) > maxRefText || !store.Storable(s) {
				return nil, "Assignment values are text of at most 500 bytes."
			}
		}
		if !hasLink(out, a) {
			out = append(out, a)
		}
	}
	return out, ""
}

// hasLink reports whether list links to a's target (type and id).
func hasLink(list []Assignment, a Assignment) bool {
	for _, x := range list {
		if x.Type == a.Type && x.ID == a.ID {
			return true
		}
	}
	return false
}

// extractable reports whether a's text can be extracted (a format the
// Extractor reads, or OCR for images and PDFs).
func (s *Service) extractable(a *Attachment) bool {
	if s.opts.Extractor != nil && s.opts.Extractor.Extracts(a.FileName, a.MimeType) {
		return true
	}
	return s.opts.OCR != nil && (strings.HasPrefix(a.MimeType, "image/") || strings.HasPrefix(a.MimeType, "application/pdf"))
}

// attachmentEvent is the data of the area's events.
type attachmentEvent struct {
	ID             string  `json:"id"`
	TenantID       string  `json:"tenantId"`
	OrganizationID *string `json:"organizationId"`
	EntityID       string  `json:"entityId"`
	RecordID       string  `json:"recordId"`
	FileName       string  `json:"fileName"`
	FileSize       int64   `json:"fileSize"`
	MimeType       string  `json:"mimeType"`
	PartitionCode  string  `json:"partitionCode"`
}

func eventOf(a *Attachment) attachmentEvent {
	e := attachmentEvent{ID: a.ID, TenantID: a.TenantID, EntityID: a.EntityID, RecordID: a.RecordID, FileName: a.FileName,
		FileSize: a.FileSize, MimeType: a.MimeType, PartitionCode: a.PartitionCode}
	if a.OrganizationID != "" {
		org := a.OrganizationID
		e.OrganizationID = &org
	}
	return e
}

// Blob keys: "<tenant>/<attachment id>/original" for the file and
// "<tenant>/<attachment id>/thumbs/<w>x<h>-<fit>" for its resized
// images, so that an attachment's blobs share one prefix.
func attachmentPrefix(tenantID, id string) string { return tenantSegment(tenantID) + "/" + id + "/" }

func originalKey(tenantID, id string) string { return attachmentPrefix(tenantID, id) + "original" }

// tenantSegment is the tenant id as a key segment: itself when it is a
// plain identifier, otherwise a hash of it.
func tenantSegment(tenantID string) string {
	if plainSegment(tenantID) {
		return tenantID
	}
	return "t-" + shortHash(tenantID)
}
