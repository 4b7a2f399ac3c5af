package attachments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// ForRecord returns the attachments linked to a record (an assignment
// {type: entityID, id: recordID}), newest first.
func (s *Service) ForRecord(ctx context.Context, entityID, recordID string) ([]*Attachment, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	var v store.ValidationError
	checkRef(&v, "entityId", strings.TrimSpace(entityID))
	checkRef(&v, "recordId", strings.TrimSpace(recordID))
	if err := v.Err(); err != nil {
		return nil, err
	}
	return s.store.ListLinked(ctx, s.db, sc, strings.TrimSpace(entityID), strings.TrimSpace(recordID))
}

// LibraryQuery selects a library page.
type LibraryQuery struct {
	LibraryFilter
	// Page is 1-based; PageSize at most MaxPageSize.
	Page, PageSize int
}

// Library page sizes.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
)

// LibraryPage is a page of the library with what its filters can offer.
type LibraryPage struct {
	Items []*Attachment
	// Total is how many attachments the filters select; with a search, at
	// most store.SearchTotalCap, TotalCapped saying that more match.
	Total       int
	TotalCapped bool
	Page        int
	PageSize    int
	TotalPages  int
	// AvailableTags are every tag of the attachments the caller may read.
	AvailableTags []string
	// Partitions are the tenant's partitions.
	Partitions []*Partition
}

// Library returns a page of the attachments the caller may read, with
// the tags and partitions to filter by.
func (s *Service) Library(ctx context.Context, q LibraryQuery) (*LibraryPage, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	var v store.ValidationError
	if q.Page == 0 {
		q.Page = 1
	}
	if q.PageSize == 0 {
		q.PageSize = DefaultPageSize
	}
	if q.Page < 1 {
		v.Add("page", "Use a page number of at least 1.")
	}
	if q.PageSize < 1 || q.PageSize > MaxPageSize {
		v.Add("pageSize", "Use a page size from 1 to 100.")
	}
	if q.Page > 1 && q.PageSize >= 1 && q.Page-1 > math.MaxInt/q.PageSize {
		v.Add("page", "The page is too large.")
	}
	switch q.SortField {
	case "", "fileName", "fileSize", "createdAt":
	default:
		v.Add("sortField", "Sort by fileName, fileSize or createdAt.")
	}
	for _, text := range []struct{ field, value string }{{"search", q.Search}, {"partition", q.Partition}} {
		if len(text.value) > maxRefText || !store.Storable(text.value) {
			v.Add(text.field, "Use at most 500 bytes of text.")
		}
	}
	for _, t := range q.Tags {
		if len(t) > maxTag || !store.Storable(t) {
			v.Add("tags", "Each tag is text of at most 100 bytes.")
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	partitions, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	f := q.LibraryFilter
	f.Limit, f.Offset = q.PageSize, (q.Page-1)*q.PageSize
	items, total, err := s.store.Library(ctx, s.db, sc, f)
	if err != nil {
		return nil, err
	}
	tags, err := s.store.Tags(ctx, s.db, sc)
	if err != nil {
		return nil, err
	}
	if tags == nil {
		tags = []string{}
	}
	total, capped := store.CapTotal(ctx, total, f.Search != "")
	return &LibraryPage{Items: items, Total: total, TotalCapped: capped, Page: q.Page, PageSize: q.PageSize,
		TotalPages: (total + q.PageSize - 1) / q.PageSize, AvailableTags: tags, Partitions: partitions}, nil
}

// Get returns an attachment the caller may read, and its partition.
func (s *Service) Get(ctx context.Context, id string) (*Attachment, *Partition, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !store.IsID(id) {
		return nil, nil, ErrNotFound
	}
	var a *Attachment
	var p *Partition
	// A read transaction: its statements are prepared once and reused
	// (the file routes call this on every request).
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		if a, err = s.store.GetAttachment(ctx, tx, sc, id); err != nil {
			return err
		}
		p, err = s.store.GetPartitionByCode(ctx, tx, sc.TenantID, a.PartitionCode)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return a, p, nil
}

// Patch is a change of an attachment's metadata; nil fields stay.
type Patch struct {
	// FileName renames the file, under the rules of an upload's name
	// (cleanFileName: bidirectional controls, executable and active
	// extensions are refused) and keeping its extension, so the file's
	// field rules and text extraction still hold. Refusals name
	// "fileName".
	FileName    *string
	Tags        *[]string
	Assignments *[]Assignment
	// CustomFields are merged into the stored ones (null clears one).
	CustomFields map[string]any
}

// Update changes an attachment's file name, tags, assignments and custom
// fields. The link to the record it belongs to stays whatever the assignments
// say. An update that changes nothing writes nothing and emits no event.
func (s *Service) Update(ctx context.Context, id string, p Patch) (*Attachment, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	var v store.ValidationError
	var tags []string
	var assignments []Assignment
	var fileName string
	if p.FileName != nil {
		var msg string
		if fileName, msg = renamed(*p.FileName); msg != "" {
			v.Add("fileName", msg)
		}
	}
	if p.Tags != nil {
		var msg string
		if tags, msg = checkTags(*p.Tags); msg != "" {
			v.Add("tags", msg)
		}
	}
	if p.Assignments != nil {
		var msg string
		if assignments, msg = checkAssignments(*p.Assignments); msg != "" {
			v.Add("assignments", msg)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	fields, err := s.checkCustomFields(ctx, p.CustomFields, true)
	if err != nil {
		return nil, err
	}
	if !store.IsID(id) {
		return nil, ErrNotFound
	}
	var out *Attachment
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		a, err := s.store.GetAttachment(ctx, tx, sc, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		before, err := metadataJSON(a)
		if err != nil {
			return err
		}
		rename := p.FileName != nil && fileName != a.FileName
		if rename {
			if !strings.EqualFold(path.Ext(fileName), path.Ext(a.FileName)) {
				return store.Invalid("fileName", fmt.Sprintf("A renamed file keeps its extension (%q).", path.Ext(a.FileName)))
			}
			a.FileName = fileName
		}
		if p.Tags != nil {
			a.Tags = tags
		}
		if p.Assignments != nil {
			a.Assignments = assignments
		}
		if primary := (Assignment{Type: a.EntityID, ID: a.RecordID}); !hasLink(a.Assignments, primary) {
			a.Assignments = append([]Assignment{primary}, a.Assignments...)
		}
		if a.CustomFields == nil {
			a.CustomFields = map[string]any{}
		}
		for k, val := range fields {
			if val == nil {
				delete(a.CustomFields, k)
			} else {
				a.CustomFields[k] = val
			}
		}
		out = a
		if after, err := metadataJSON(a); err != nil || after == before {
			return err // nothing changed: no write, no event
		}
		a.UpdatedAt = tx.Now()
		if err := s.store.UpdateAttachment(ctx, tx, a); err != nil {
			return err
		}
		if rename { // deliveries name the file
			if _, err := s.files.Changed(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.EmitData(ctx, EventUpdated, eventScope(a), eventOf(a))
		return err
	})
	return out, err
}

// metadataJSON is what Update may change of a, as comparable text.
func metadataJSON(a *Attachment) (string, error) {
	tags, assignments, fields, err := attachmentJSON(a)
	return a.FileName + "\x00" + tags + "\x00" + assignments + "\x00" + fields, err
}

// renamed checks a new file name as an upload's (cleanFileName), and
// returns it cleaned, or the message of its refusal.
func renamed(name string) (string, string) {
	clean, err := cleanFileName(name)
	var ve *store.ValidationError
	switch {
	case err == nil:
		return clean, ""
	case errors.As(err, &ve):
		for _, msg := range ve.Fields {
			return "", msg
		}
	}
	return "", store.PublicMessage(err)
}

// eventScope is the scope an attachment's events are emitted in: its
// tenant and organization.
func eventScope(a *Attachment) store.Scope {
	return store.Scope{TenantID: a.TenantID, OrganizationID: a.OrganizationID}
}

// Delete removes an attachment, then its file and resized images (after
// the row's removal commits; the orphan sweep removes any the process
// could not).
func (s *Service) Delete(ctx context.Context, id string) error {
	sc, err := scope(ctx)
	if err != nil {
		return err
	}
	if !store.IsID(id) {
		return ErrNotFound
	}
	var gone *Attachment
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		a, err := s.store.GetAttachment(ctx, tx, sc, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		// The usage row first, then the counts (in DeleteAttachment), as an
		// upload takes them: the other order deadlocks with a concurrent
		// upload on PostgreSQL.
		if _, err := s.store.AddUsage(ctx, tx, a.TenantID, -a.FileSize, -1); err != nil {
			return err
		}
		if err := s.store.DeleteAttachment(ctx, tx, a.TenantID, a.ID); err != nil {
			return err
		}
		if _, err := s.files.Changed(ctx, tx); err != nil { // no more deliveries
			return err
		}
		gone = a
		_, err = tx.EmitData(ctx, EventDeleted, eventScope(a), eventOf(a))
		return err
	})
	if err != nil {
		return err
	}
	s.removeBlobs(context.WithoutCancel(ctx), gone.TenantID, gone.ID)
	return nil
}

// removeBlobs removes an attachment's file and resized images; failures
// are logged and left to the orphan sweep.
func (s *Service) removeBlobs(ctx context.Context, tenantID, id string) {
	blobs, err := s.blobs.List(ctx, attachmentPrefix(tenantID, id))
	if err != nil {
		s.logger.WarnContext(ctx, "attachments: listing a deleted attachment's files", "attachmentId", id, "err", err)
		return
	}
	for _, b := range blobs {
		if err := s.blobs.Delete(ctx, b.Key); err != nil {
			s.logger.WarnContext(ctx, "attachments: removing a deleted attachment's file", "key", b.Key, "err", err)
		}
	}
}

// TransferInput moves attachments of one entity to another record.
type TransferInput struct {
	EntityID      string   `json:"entityId" jsonschema:"required,minLength=1,maxLength=500"`
	AttachmentIDs []string `json:"attachmentIds" jsonschema:"required,minItems=1,maxItems=100,format=uuid"`
	// FromRecordID, when set, is the record whose links are moved;
	// otherwise each attachment's own record is.
	FromRecordID string `json:"fromRecordId" jsonschema:"maxLength=500"`
	ToRecordID   string `json:"toRecordId" jsonschema:"required,minLength=1,maxLength=500"`
}

// Transfer moves attachments to another record of the same entity: each
// assignment {type: entityId, id: from} becomes {type: entityId, id:
// toRecordId}, and an attachment uploaded to from now belongs to
// toRecordId. Every id must name an attachment of the caller's scope and
// of that entity, or nothing changes (ErrNotFound). It returns how many
// attachments changed.
func (s *Service) Transfer(ctx context.Context, in TransferInput) (int, error) {
	sc, err := scope(ctx)
	if err != nil {
		return 0, err
	}
	var v store.ValidationError
	in.EntityID, in.ToRecordID, in.FromRecordID = strings.TrimSpace(in.EntityID), strings.TrimSpace(in.ToRecordID), strings.TrimSpace(in.FromRecordID)
	checkRef(&v, "entityId", in.EntityID)
	checkRef(&v, "toRecordId", in.ToRecordID)
	if in.FromRecordID != "" {
		checkRef(&v, "fromRecordId", in.FromRecordID)
	}
	switch {
	case len(in.AttachmentIDs) == 0:
		v.Add("attachmentIds", "At least one attachment id is required.")
	case len(in.AttachmentIDs) > MaxPageSize:
		v.Add("attachmentIds", "Use at most 100 ids.")
	}
	for _, id := range in.AttachmentIDs {
		if !store.IsID(id) {
			v.Add("attachmentIds", "Each id is an attachment id (UUID).")
		}
	}
	if err := v.Err(); err != nil {
		return 0, err
	}
	updated := 0
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		for _, id := range dedupe(in.AttachmentIDs) {
			a, err := s.store.GetAttachment(ctx, tx, sc, id)
			if errors.Is(err, store.ErrNotFound) || err == nil && a.EntityID != in.EntityID {
				return store.Errorf(store.ErrNotFound, "Attachments not found")
			}
			if err != nil {
				return err
			}
			from := in.FromRecordID
			if from == "" {
				from = a.RecordID
			}
			if !transfer(a, in.EntityID, from, in.ToRecordID) {
				continue
			}
			a.UpdatedAt = tx.Now()
			if err := s.store.UpdateAttachment(ctx, tx, a); err != nil {
				return err
			}
			if _, err := tx.EmitData(ctx, EventUpdated, eventScope(a), eventOf(a)); err != nil {
				return err
			}
			updated++
		}
		return nil
	})
	if err != nil {
		return 0, err // rolled back: nothing changed
	}
	return updated, nil
}

// transfer rewrites a's links from record from to record to of entityID
// and reports whether anything changed.
func transfer(a *Attachment, entityID, from, to string) bool {
	changed := false
	if a.RecordID == from && from != to {
		a.RecordID = to
		changed = true
	}
	out := make([]Assignment, 0, len(a.Assignments))
	for _, as := range a.Assignments {
		if as.Type == entityID && as.ID == from && from != to {
			as.ID = to
			as.Href = ""
			changed = true
		}
		if !hasLink(out, as) {
			out = append(out, as)
		}
	}
	a.Assignments = out
	return changed
}
