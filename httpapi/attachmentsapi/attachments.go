package attachmentsapi

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the attachment routes: the permission a route needs.
const (
	FeatureAttachmentsView   = "attachments.view"
	FeatureAttachmentsManage = "attachments.manage"
)

// multipartOverhead is what a multipart upload may carry beyond its file
// (boundaries, headers, the other fields).
const multipartOverhead = 1 << 20

// maxFormField bounds each non-file field of an upload.
const maxFormField = 64 << 10

// routes are the attachment endpoints: upload, lists, the
// library, transfer, partitions, and file and image delivery.
func routes(svc *attachments.Service, env *apikit.Env) []apikit.Route {
	h := attachmentHandlers{svc: svc, base: env.Base}
	const base = "/attachments"
	view, manage := []string{FeatureAttachmentsView}, []string{FeatureAttachmentsManage}
	imageQuery := []apikit.Param{
		{Name: "width", Type: "integer", Minimum: apikit.Bound(1), Maximum: apikit.Bound(4000), Description: "Width in pixels (alone, it is the height too)"},
		{Name: "height", Type: "integer", Minimum: apikit.Bound(1), Maximum: apikit.Bound(4000), Description: "Height in pixels (alone, it is the width too)"},
		apikit.EnumQuery("cropType", "cover (default: fill the box, cropping) or contain (fit inside it)", string(attachments.Cover), string(attachments.Contain)),
	}
	// A file's bytes go out with their sniffed type (images inline) or as
	// application/octet-stream.
	fileTypes := []string{"application/octet-stream", "image/png", "image/jpeg", "image/gif", "image/webp"}
	imageTypes := []string{"image/png", "image/jpeg", "image/gif", "image/webp"}
	return []apikit.Route{
		{Method: "GET", Path: base, Handler: h.list,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "List a record's attachments, newest first (?entityId, recordId)",
				Query:    []apikit.Param{{Name: "entityId", Required: true, Description: "The record's entity"}, {Name: "recordId", Required: true, Description: "The record"}},
				Response: attachmentListBody{}}},
		{Method: "POST", Path: base, Handler: h.upload,
			Access: apikit.Access{Features: manage},
			Limits: apikit.Limits{MaxBodyBytes: h.svc.MaxUploadBytes() + multipartOverhead},
			Doc: apikit.Doc{Summary: "Upload a file to a record (multipart/form-data)", RequestContent: "multipart/form-data",
				Request: uploadFields{}, Response: attachmentWriteBody{}}},
		{Method: "DELETE", Path: base, Handler: h.deleteByQuery,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Delete an attachment and its file (?id)",
				Query: []apikit.Param{{Name: "id", Required: true, Description: "The attachment's id"}}, Response: attachmentOKBody{},
				Errors: []int{http.StatusNotFound}}},
		{Method: "GET", Path: base + "/library", Handler: h.library,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "Search the attachment library (page, pageSize, search, partition, tags, sortField, sortDir)",
				Query: []apikit.Param{
					{Name: "page", Type: "integer", Minimum: apikit.Bound(1), Description: "Page number, from 1 (default 1)"},
					{Name: "pageSize", Type: "integer", Minimum: apikit.Bound(1), Maximum: apikit.Bound(attachments.MaxPageSize),
						Description: "Items per page (default " + strconv.Itoa(attachments.DefaultPageSize) + ")"},
					apikit.TextQuery("search", "Text in the file name, any case (at most 500 bytes)"),
					apikit.TextQuery("partition", "A partition's code"),
					apikit.TextQuery("tags", "Tags, comma-separated: attachments with all of them"),
					apikit.EnumQuery("sortField", "Field to sort by (default createdAt)", librarySorts...),
					{Name: "sortDir", Pattern: "^([aA][sS][cC]|[dD][eE][sS][cC])$", Description: "asc or desc (default desc: newest first)"},
				}, Response: libraryBody{}}},
		{Method: "GET", Path: base + "/library/{id}", Handler: h.get,
			Access: apikit.Access{Features: view},
			Doc:    apikit.Doc{Summary: "Get an attachment with its partition and custom fields", Response: attachmentBody{}}},
		{Method: "PATCH", Path: base + "/library/{id}", Handler: h.patch,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Rename an attachment or change its tags, assignments and custom fields (also as top-level cf_<key> keys)",
				Request: attachmentPatchInput{}, Response: attachmentPatchBody{}}},
		{Method: "DELETE", Path: base + "/library/{id}", Handler: h.deleteByPath,
			Access: apikit.Access{Features: manage},
			Doc:    apikit.Doc{Summary: "Delete an attachment and its file", Response: attachmentOKBody{}}},
		{Method: "POST", Path: base + "/transfer", Handler: h.transfer,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "Move attachments of an entity to another record", Request: attachments.TransferInput{},
				Response: transferBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "GET", Path: base + "/partitions", Handler: h.partitions,
			Access: apikit.Access{Features: manage},
			Doc: apikit.Doc{Summary: "List storage partitions (the defaults are created on first use)",
				Response: partitionListBody{}}},
		{Method: "POST", Path: base + "/partitions", Handler: h.createPartition,
			Access: apikit.Access{Features: manage, TenantWide: true},
			Doc: apikit.Doc{Summary: "Create a storage partition", Request: attachments.PartitionInput{}, Status: http.StatusCreated,
				Response: partitionBody{}, Errors: []int{http.StatusConflict}}},
		{Method: "PUT", Path: base + "/partitions", Handler: h.updatePartition,
			Access: apikit.Access{Features: manage, TenantWide: true},
			Doc: apikit.Doc{Summary: "Update a storage partition (its code cannot change)", Request: partitionUpdateInput{},
				Response: partitionBody{}, Errors: []int{http.StatusNotFound}}},
		{Method: "DELETE", Path: base + "/partitions", Handler: h.deletePartition,
			Access: apikit.Access{Features: manage, TenantWide: true},
			Doc: apikit.Doc{Summary: "Delete a storage partition (?id; not a default, not one in use)",
				Query: []apikit.Param{{Name: "id", Required: true, Description: "The partition's id"}}, Response: attachmentOKBody{},
				Errors: []int{http.StatusNotFound, http.StatusConflict}}},
		{Method: "GET", Path: base + "/file/{id}", Handler: h.file,
			Access: apikit.Access{Features: view, OptionalAuth: true},
			Doc: apikit.Doc{Summary: "Download an attachment's file (public partitions need no credential; ?download=1 forces a download)",
				Query:           []apikit.Param{apikit.TextQuery("download", "1 or true: serve as a download (application/octet-stream) even an image")},
				ResponseContent: fileTypes, Ranges: true}},
		{Method: "GET", Path: base + "/image/{id}", Handler: h.image,
			Access: apikit.Access{Features: view, OptionalAuth: true},
			Doc: apikit.Doc{Summary: "An image attachment, resized (?width, height, cropType=cover|contain) or as uploaded",
				Query: imageQuery, ResponseContent: imageTypes, Ranges: true}},
		{Method: "GET", Path: base + "/image/{id}/{slug}", Handler: h.image,
			Access: apikit.Access{Features: view, OptionalAuth: true},
			Doc: apikit.Doc{Summary: "An image attachment, resized, with a file name in the path", Query: imageQuery,
				ResponseContent: imageTypes, Ranges: true}},
	}
}

// attachmentOKBody is the {ok: true} of the deletes.
type attachmentOKBody struct {
	OK bool `json:"ok"`
}

// attachmentListBody answers GET /attachments.
type attachmentListBody struct {
	Items []attachmentItem `json:"items"`
}

// attachmentBody answers GET /attachments/library/{id}.
type attachmentBody struct {
	Item attachmentItem `json:"item"`
}

// attachmentWriteBody answers an upload.
type attachmentWriteBody struct {
	OK   bool           `json:"ok"`
	Item attachmentItem `json:"item"`
}

// uploadFields documents the parts of an upload (POST /attachments):
// the file, and text fields, the JSON ones as JSON text.
type uploadFields struct {
	File     string `json:"file" jsonschema:"required" jsonschema_extras:"contentMediaType=application/octet-stream"`
	EntityID string `json:"entityId" jsonschema:"required,minLength=1,maxLength=500"`
	RecordID string `json:"recordId" jsonschema:"required,minLength=1,maxLength=500"`
	// FieldKey names the entity's attachment field the file is for: its
	// size limit, accepted extensions and partition apply.
	FieldKey string `json:"fieldKey" jsonschema:"maxLength=100"`
	// PartitionCode defaults to the field's, then to privateAttachments.
	PartitionCode string `json:"partitionCode"`
	// Tags is a JSON array of strings.
	Tags string `json:"tags" jsonschema_extras:"contentMediaType=application/json"`
	// Assignments is a JSON array of {type, id, href?, label?}.
	Assignments string `json:"assignments" jsonschema_extras:"contentMediaType=application/json"`
	// CustomFields is a JSON object.
	CustomFields string `json:"customFields" jsonschema_extras:"contentMediaType=application/json"`
	// TenantID and OrganizationID, when given, must be the caller's.
	TenantID       string `json:"tenantId"`
	OrganizationID string `json:"organizationId"`
}

// libraryBody answers GET /attachments/library: a page, every tag of the
// attachments the caller may read, and the tenant's partitions.
type libraryBody struct {
	Items         []attachmentItem         `json:"items"`
	Total         int                      `json:"total"`
	TotalCapped   bool                     `json:"totalCapped,omitempty" jsonschema:"description=Present and true when a search matched more attachments than a search's total counts (10000): total is then 10000 and totalPages follows from it. Without a search the total is exact and the field is absent."`
	Page          int                      `json:"page"`
	PageSize      int                      `json:"pageSize"`
	TotalPages    int                      `json:"totalPages"`
	AvailableTags []string                 `json:"availableTags"`
	Partitions    []*attachments.Partition `json:"partitions"`
}

// attachmentPatchInput documents the body of PATCH
// /attachments/library/{id} (read as a JSON object): each field given
// replaces the stored one (customFields are merged, null clearing one);
// top-level cf_<key> keys are custom fields too.
type attachmentPatchInput struct {
	// FileName renames the file: the rules of an upload's name apply
	// (bidirectional control characters, executable and active-content
	// extensions are refused) and the extension must stay.
	FileName     string                   `json:"fileName,omitempty" jsonschema:"maxLength=255"`
	Tags         []string                 `json:"tags" jsonschema:"nullable,maxItems=50"`
	Assignments  []attachments.Assignment `json:"assignments" jsonschema:"nullable,maxItems=100"`
	CustomFields map[string]any           `json:"customFields" jsonschema:"nullable"`
}

// attachmentPatchBody answers PATCH /attachments/library/{id}.
type attachmentPatchBody struct {
	OK   bool                `json:"ok"`
	Item attachmentPatchItem `json:"item"`
}

// attachmentPatchItem is what a patch may have changed.
type attachmentPatchItem struct {
	ID           string                   `json:"id"`
	Tags         []string                 `json:"tags"`
	Assignments  []attachments.Assignment `json:"assignments"`
	CustomFields map[string]any           `json:"customFields"`
}

// transferBody answers POST /attachments/transfer: how many attachments
// changed.
type transferBody struct {
	OK      bool `json:"ok"`
	Updated int  `json:"updated"`
}

// partitionListBody answers GET /attachments/partitions.
type partitionListBody struct {
	Items []*attachments.Partition `json:"items"`
}

// partitionBody answers a partition's create and update.
type partitionBody struct {
	Item attachments.Partition `json:"item"`
}

// partitionUpdateInput is the body of PUT /attachments/partitions: an
// attachments.PartitionInput (it converts to one), whose id is required
// here (a create ignores it).
type partitionUpdateInput struct {
	ID          string `json:"id" jsonschema:"required,format=uuid"`
	Code        string `json:"code" jsonschema:"required,maxLength=60,pattern=^[A-Za-z0-9_-]+$"`
	Title       string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=1000"`
	IsPublic    *bool  `json:"isPublic"`
	RequiresOcr *bool  `json:"requiresOcr"`
}

type attachmentHandlers struct {
	svc  *attachments.Service
	base string
}

// attachmentItem is an attachment as the API shows it.
type attachmentItem struct {
	ID             string  `json:"id"`
	URL            string  `json:"url"`
	FileName       string  `json:"fileName"`
	FileSize       int64   `json:"fileSize"`
	MimeType       string  `json:"mimeType"`
	PartitionCode  string  `json:"partitionCode"`
	PartitionTitle string  `json:"partitionTitle,omitempty"`
	ThumbnailURL   string  `json:"thumbnailUrl"`
	Content        *string `json:"content"`
	// ExtractionStatus: done, retrying or failed once text extraction
	// has run; null before, and for partitions without it.
	ExtractionStatus *string `json:"extractionStatus"`
	// ExtractionError says why extraction is retrying or failed; null
	// otherwise.
	ExtractionError *string                  `json:"extractionError"`
	Tags            []string                 `json:"tags"`
	Assignments     []attachments.Assignment `json:"assignments"`
	CustomFields    map[string]any           `json:"customFields"`
	CreatedAt       time.Time                `json:"createdAt"`
}

func (h attachmentHandlers) item(a *attachments.Attachment) attachmentItem {
	it := attachmentItem{ID: a.ID, URL: h.base + "/attachments/file/" + a.ID, FileName: a.FileName, FileSize: a.FileSize,
		MimeType: a.MimeType, PartitionCode: a.PartitionCode,
		ThumbnailURL: h.base + "/attachments/image/" + a.ID + "/" + attachments.Slug(a.FileName) + "?width=320&height=320",
		Content:      a.Content, ExtractionError: a.ExtractionError, Tags: a.Tags, Assignments: a.Assignments, CustomFields: a.CustomFields, CreatedAt: a.CreatedAt}
	if a.ExtractionStatus != "" {
		it.ExtractionStatus = &a.ExtractionStatus
	}
	if it.Tags == nil {
		it.Tags = []string{}
	}
	if it.Assignments == nil {
		it.Assignments = []attachments.Assignment{}
	}
	if it.CustomFields == nil {
		it.CustomFields = map[string]any{}
	}
	return it
}

func (h attachmentHandlers) items(list []*attachments.Attachment) []attachmentItem {
	out := make([]attachmentItem, len(list))
	for i, a := range list {
		out[i] = h.item(a)
	}
	return out
}

func (h attachmentHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	list, err := h.svc.ForRecord(r.Context(), q.Get("entityId"), q.Get("recordId"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, attachmentListBody{Items: h.items(list)})
}

// uploadForm is what an upload's parts say besides the file.
type uploadForm struct {
	values map[string]string
	staged *attachments.StagedFile
}

// readUpload reads a multipart upload part by part: the file streams to
// storage as it arrives (Stage), the other fields are read whole (each
// at most maxFormField). On error the staged file, if any, is discarded.
func (h attachmentHandlers) readUpload(r *http.Request) (*uploadForm, error) {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" {
		return nil, store.Errorf(store.ErrInvalid, "Expected multipart/form-data")
	}
	if r.ContentLength > h.svc.MaxUploadBytes()+multipartOverhead {
		return nil, attachments.ErrTooLarge
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, store.Errorf(store.ErrInvalid, "Expected multipart/form-data")
	}
	form := &uploadForm{values: map[string]string{}}
	fail := func(err error) (*uploadForm, error) {
		h.svc.Discard(r.Context(), form.staged)
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		// Only the bare io.EOF after the closing boundary ends the body;
		// one wrapped ("multipart: NextPart: EOF") is a body cut short.
		if err == io.EOF {
			return form, nil
		}
		if err != nil {
			return fail(multipartError(bodyError{err}))
		}
		name := part.FormName()
		if name == "file" && part.FileName() != "" {
			if form.staged != nil {
				return fail(store.Invalid("file", "Send one file per upload."))
			}
			staged, err := h.svc.Stage(r.Context(), part.FileName(), bodyReader{part})
			if err != nil {
				return fail(multipartError(err))
			}
			form.staged = staged
			continue
		}
		value, err := io.ReadAll(io.LimitReader(bodyReader{part}, maxFormField+1))
		if err != nil {
			return fail(multipartError(err))
		}
		if len(value) > maxFormField {
			return fail(store.Invalid(name, "The field is longer than 64 KiB."))
		}
		if name != "" {
			form.values[name] = string(value)
		}
	}
}

// bodyError is a failure to read the request body: a malformed multipart
// structure or part header (textproto's errors carry no "multipart:"
// prefix), a bad transfer encoding, a body cut short. It is the client's,
// unlike a failure of the service or of storage.
type bodyError struct{ err error }

func (e bodyError) Error() string { return e.err.Error() }
func (e bodyError) Unwrap() error { return e.err }

// bodyReader marks the errors of reading a part as bodyErrors (io.EOF
// passes as it is).
type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = bodyError{err}
	}
	return n, err
}

// multipartError turns a failure to read a multipart body into a 4xx: a
// body over the route's limit is 413, a malformed one 400. Errors of the
// service pass as they are.
func multipartError(err error) error {
	var tooLarge *http.MaxBytesError
	var body bodyError
	switch {
	case errors.As(err, &tooLarge):
		return attachments.ErrTooLarge
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrTooLarge), errors.Is(err, store.ErrForbidden),
		errors.Is(err, store.ErrNoScope):
		return err
	case errors.As(err, &body), errors.Is(err, io.ErrUnexpectedEOF), strings.HasPrefix(err.Error(), "multipart:"):
		return store.Errorf(store.ErrInvalid, "Malformed multipart body")
	}
	return err
}

func (h attachmentHandlers) upload(w http.ResponseWriter, r *http.Request) error {
	form, err := h.readUpload(r)
	if err != nil {
		return err
	}
	in, err := uploadInput(r, form)
	if err != nil {
		h.svc.Discard(r.Context(), form.staged)
		return err
	}
	a, err := h.svc.Upload(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, attachmentWriteBody{OK: true, Item: h.item(a)})
}

// uploadInput checks an upload's fields: the required ones, the JSON
// ones, and the scope fields, which must equal the caller's.
func uploadInput(r *http.Request, form *uploadForm) (attachments.UploadInput, error) {
	f := form.values
	in := attachments.UploadInput{EntityID: f["entityId"], RecordID: f["recordId"], FieldKey: f["fieldKey"],
		PartitionCode: f["partitionCode"], Staged: form.staged}
	var v store.ValidationError
	for _, name := range []string{"entityId", "recordId"} {
		if strings.TrimSpace(f[name]) == "" {
			v.Add(name, "Required.")
		}
	}
	if form.staged == nil {
		v.Add("file", "A file is required.")
	}
	jsonField(&v, f, "tags", "a JSON array of strings", &in.Tags)
	jsonField(&v, f, "assignments", "a JSON array of {type, id, href?, label?}", &in.Assignments)
	jsonField(&v, f, "customFields", "a JSON object", &in.CustomFields)
	if err := v.Err(); err != nil {
		return in, err
	}
	sc, err := store.ScopeFrom(r.Context())
	if err != nil {
		return in, err
	}
	if t, ok := f["tenantId"]; ok && t != "" && t != sc.TenantID {
		return in, attachments.ErrScopeMismatch
	}
	if o, ok := f["organizationId"]; ok && o != "" && o != sc.OrganizationID {
		return in, attachments.ErrScopeMismatch
	}
	return in, nil
}

// jsonField decodes the form field name, when present, into dst; a
// malformed value is recorded in v.
func jsonField(v *store.ValidationError, form map[string]string, name, want string, dst any) {
	raw, ok := form[name]
	if !ok || strings.TrimSpace(raw) == "" {
		return
	}
	if err := json.Unmarshal([]byte(raw), dst); err != nil {
		v.Add(name, "Must be "+want+".")
	}
}

func (h attachmentHandlers) deleteByQuery(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	return h.delete(w, r, id)
}

func (h attachmentHandlers) deleteByPath(w http.ResponseWriter, r *http.Request) error {
	return h.delete(w, r, r.PathValue("id"))
}

func (h attachmentHandlers) delete(w http.ResponseWriter, r *http.Request, id string) error {
	if err := h.svc.Delete(r.Context(), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, attachmentOKBody{OK: true})
}

// librarySorts are the library's sort fields.
var librarySorts = []string{"createdAt", "fileName", "fileSize"}

func (h attachmentHandlers) library(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := apikit.CheckText(q, "search", "partition", "tags"); err != nil {
		return err
	}
	var v store.ValidationError
	page := apikit.IntParam(q, "page", 1, 1, apikit.MsgPositive, &v)
	pageSize := apikit.IntParam(q, "pageSize", attachments.DefaultPageSize, 1, apikit.MsgPositive, &v)
	if pageSize > attachments.MaxPageSize {
		v.Add("pageSize", "must be at most 100")
	}
	if pageSize > 0 && page-1 > math.MaxInt/pageSize {
		v.Add("page", "is too large") // its offset would overflow (as parsePage refuses)
	}
	if err := v.Err(); err != nil {
		return err
	}
	sort, err := apikit.ParseSort(q, librarySorts, "createdAt")
	if err != nil {
		return err
	}
	if q.Get("sortDir") == "" {
		sort.Desc = true // newest first by default
	}
	var tags []string
	for _, t := range strings.Split(q.Get("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	res, err := h.svc.Library(r.Context(), attachments.LibraryQuery{Page: page, PageSize: pageSize,
		LibraryFilter: attachments.LibraryFilter{Search: q.Get("search"), Partition: q.Get("partition"), Tags: tags,
			SortField: sort.Field, SortDesc: sort.Desc}})
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, libraryBody{Items: h.items(res.Items), Total: res.Total, TotalCapped: res.TotalCapped, Page: res.Page,
		PageSize: res.PageSize, TotalPages: res.TotalPages, AvailableTags: res.AvailableTags, Partitions: res.Partitions})
}

func (h attachmentHandlers) get(w http.ResponseWriter, r *http.Request) error {
	a, p, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	item := h.item(a)
	item.PartitionTitle = p.Title
	return apikit.Encode(w, http.StatusOK, attachmentBody{Item: item})
}

func (h attachmentHandlers) patch(w http.ResponseWriter, r *http.Request) error {
	body, err := apikit.Decode[map[string]json.RawMessage](r)
	if err != nil {
		return err
	}
	var p attachments.Patch
	var v store.ValidationError
	if raw, ok := body["fileName"]; ok {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			v.Add("fileName", "Must be a string.")
		}
		p.FileName = &name
	}
	if raw, ok := body["tags"]; ok {
		var tags []string
		if json.Unmarshal(raw, &tags) != nil {
			v.Add("tags", "Must be an array of strings.")
		}
		p.Tags = &tags
	}
	if raw, ok := body["assignments"]; ok {
		var list []attachments.Assignment
		if json.Unmarshal(raw, &list) != nil {
			v.Add("assignments", "Must be an array of {type, id, href?, label?}.")
		}
		p.Assignments = &list
	}
	p.CustomFields = map[string]any{}
	if raw, ok := body["customFields"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &p.CustomFields) != nil {
			v.Add("customFields", "Must be an object.")
		}
	}
	for k, raw := range body {
		if strings.HasPrefix(k, "cf_") {
			var x any
			_ = json.Unmarshal(raw, &x) // decode checked the body is JSON
			p.CustomFields[k] = x
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	a, err := h.svc.Update(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	it := h.item(a)
	return apikit.Encode(w, http.StatusOK, attachmentPatchBody{OK: true, Item: attachmentPatchItem{ID: it.ID, Tags: it.Tags,
		Assignments: it.Assignments, CustomFields: it.CustomFields}})
}

func (h attachmentHandlers) transfer(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[attachments.TransferInput](r)
	if err != nil {
		return err
	}
	n, err := h.svc.Transfer(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, transferBody{OK: true, Updated: n})
}

func (h attachmentHandlers) partitions(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Partitions(r.Context())
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, partitionListBody{Items: list})
}

func (h attachmentHandlers) createPartition(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[attachments.PartitionInput](r)
	if err != nil {
		return err
	}
	p, err := h.svc.CreatePartition(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, partitionBody{Item: *p})
}

func (h attachmentHandlers) updatePartition(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[partitionUpdateInput](r)
	if err != nil {
		return err
	}
	p, err := h.svc.UpdatePartition(r.Context(), attachments.PartitionInput(in))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, partitionBody{Item: *p})
}

func (h attachmentHandlers) deletePartition(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeletePartition(r.Context(), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, attachmentOKBody{OK: true})
}

// lookup finds the attachment a delivery route serves, for the caller:
// anonymous callers get public files, super admins any tenant's, others
// their scope's.
func (h attachmentHandlers) lookup(r *http.Request) (*attachments.File, error) {
	access := attachments.Scoped
	switch id := identity.IdentityFrom(r.Context()); {
	case id == nil:
		access = attachments.Anonymous
	case id.IsSuperAdmin:
		access = attachments.AnyTenant
	}
	f, err := h.svc.Lookup(r.Context(), r.PathValue("id"), access)
	if errors.Is(err, attachments.ErrCredentialRequired) {
		return nil, apikit.ErrNoCredential
	}
	return f, err
}

// inlineTypes are served inline; every other type is a download.
var inlineTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// deliveryHeaders sets what every file and image response carries: a
// sandboxing CSP (a file opened in the browser runs nothing) and the
// partition's cache policy.
func deliveryHeaders(w http.ResponseWriter, f *attachments.File, publicAge, privateAge int) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	if f.Partition != nil && f.Partition.IsPublic {
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(publicAge))
	} else {
		w.Header().Set("Cache-Control", "private, max-age="+strconv.Itoa(privateAge))
	}
}

// disposition is a Content-Disposition header naming the file.
func disposition(kind, fileName string) string {
	if v := mime.FormatMediaType(kind, map[string]string{"filename": fileName}); v != "" {
		return v
	}
	return kind
}

func (h attachmentHandlers) file(w http.ResponseWriter, r *http.Request) error {
	f, err := h.lookup(r)
	if err != nil {
		return err
	}
	b, err := h.svc.Open(r.Context(), f)
	if err != nil {
		return err
	}
	defer b.Close()
	a := f.Attachment
	deliveryHeaders(w, f, 86400, 60)
	download := r.URL.Query().Get("download")
	if inlineTypes[a.MimeType] && download != "1" && download != "true" {
		w.Header().Set("Content-Type", a.MimeType)
		w.Header().Set("Content-Disposition", disposition("inline", a.FileName))
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", disposition("attachment", a.FileName))
	}
	w.Header().Set("ETag", `"`+a.ID+`"`) // a file never changes under its id
	http.ServeContent(w, r, "", a.CreatedAt, b)
	return nil
}

// imageSize reads the image route's size: width and height (1..4000; one
// alone stands for both), cropType (cover by default, or contain).
// resize is false when neither size is given.
func imageSize(q url.Values) (width, height int, fit attachments.Fit, resize bool, err error) {
	var v store.ValidationError
	dim := func(name string) int {
		s := q.Get(name)
		if s == "" {
			return 0
		}
		n, convErr := strconv.Atoi(s)
		if convErr != nil || n < 1 || n > 4000 {
			v.Add(name, "must be an integer from 1 to 4000")
			return 0
		}
		return n
	}
	width, height = dim("width"), dim("height")
	fit = attachments.Fit(q.Get("cropType"))
	switch fit {
	case "":
		fit = attachments.Cover
	case attachments.Cover, attachments.Contain:
	default:
		v.Add("cropType", "must be cover or contain")
	}
	if err := v.Err(); err != nil {
		return 0, 0, "", false, store.Errorf(store.ErrInvalid, "Invalid size parameters: %v", err)
	}
	if width == 0 && height == 0 {
		return 0, 0, fit, false, nil
	}
	if width == 0 {
		width = height
	}
	if height == 0 {
		height = width
	}
	return width, height, fit, true, nil
}

// imageRetryAfter is the Retry-After, in seconds, of a resize refused
// because the process or the tenant has too many under way.
const imageRetryAfter = 5

func (h attachmentHandlers) image(w http.ResponseWriter, r *http.Request) error {
	width, height, fit, resize, err := imageSize(r.URL.Query())
	if err != nil {
		return err
	}
	f, err := h.lookup(r)
	if err != nil {
		return err
	}
	if !h.svc.IsImage(f) {
		return attachments.ErrNotImage
	}
	a := f.Attachment
	var b attachments.Blob
	contentType, etag := a.MimeType, `"`+a.ID+`"`
	if resize {
		b, contentType, err = h.svc.Image(r.Context(), f, width, height, fit)
		etag = `"` + a.ID + "-" + strconv.Itoa(width) + "x" + strconv.Itoa(height) + "-" + string(fit) + `"`
	} else {
		b, err = h.svc.Open(r.Context(), f)
	}
	if errors.Is(err, attachments.ErrBusy) {
		w.Header().Set("Retry-After", strconv.Itoa(imageRetryAfter))
		return &apikit.StatusError{Status: http.StatusServiceUnavailable, Err: err,
			Message: "Too many images are being resized; retry in a few seconds."}
	}
	if err != nil {
		return err
	}
	defer b.Close()
	deliveryHeaders(w, f, 3600, 60)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", disposition("inline", attachments.Slug(a.FileName)))
	w.Header().Set("ETag", etag)
	http.ServeContent(w, r, "", a.CreatedAt, b)
	return nil
}
