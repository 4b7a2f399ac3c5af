// Package attachments is the attachments area: files uploaded to records,
// their storage partitions, the library (search, tags, assignments,
// custom fields), transfer between records, file and image delivery, and
// text extraction in the background.
//
// # Storage
//
// A file's bytes live in Blobs (FSBlobs on disk: the standalone server
// uses DATA_DIR/files; MemBlobs in memory for tests); the attachment row
// in the Store. An upload streams: Stage reads the first 3 KiB to sniff
// the type (github.com/gabriel-vasile/mimetype; the client's type is never
// trusted), then copies the rest to a temporary file that is synced and
// renamed into place under a fresh id, stopping at the size limit. Only
// then does Upload validate the rest and insert the row, in one
// transaction with the tenant's usage, the created event and the
// extraction job. A file no row names (a failed upload, a crash between
// the two steps, a delete whose file removal failed) is removed by the
// hourly orphan sweep once it is an hour old. A delete removes the row
// first and the file after the commit, so no row ever names a missing
// file. Keys: "<tenant>/<attachment id>/original" and
// "<tenant>/<attachment id>/thumbs/<w>x<h>-<fit>".
//
// # Limits and refusals
//
//   - A file over Options.MaxUploadBytes (APP_ATTACHMENT_MAX_UPLOAD_MB,
//     25 MB by default) is refused with ErrTooLarge (413) while it
//     streams; over HTTP a Content-Length beyond it plus 1 MiB is refused
//     before reading. A field's maxAttachmentSizeMb can only lower it.
//   - The sum of a tenant's file sizes is kept in attachment_usage,
//     changed in the transaction of every upload and delete. An upload is
//     refused with ErrQuota (413) when it would pass
//     Options.TenantQuotaBytes (APP_ATTACHMENT_TENANT_QUOTA_MB, 512 MB):
//     early, while streaming past what the quota leaves, and for certain
//     by a conditional update at insert, so concurrent uploads cannot
//     together pass it.
//   - Executable extensions in any dot segment (exe, dll, bat, … ;
//     case-insensitive) and active content (html, htm, xhtml, svg, xml by
//     extension, or sniffed as such, or starting with such markup) are
//     refused with 400.
//   - A file keeps the last element of the name it was sent with (after
//     any '/' or '\'); an empty name, "." and ".." are refused, and an
//     extension before a ':' counts ("x.exe::$DATA" is an executable).
//   - A field (fieldKey, a definition of the record's entity) applies its
//     configJson's maxAttachmentSizeMb, acceptExtensions and
//     partitionCode.
//
// # Partitions
//
// Per tenant. The two defaults, productsMedia (public) and
// privateAttachments (private), are created on first use (listing
// partitions or the library, uploading). New partitions extract text
// unless Options.NoDefaultOCR (APP_DEFAULT_ATTACHMENT_OCR_ENABLED=false)
// or their requiresOcr says otherwise. A partition's code is immutable;
// the defaults cannot be removed; one that holds attachments cannot
// either (the attachments' foreign key decides, so a concurrent upload
// cannot slip in). Options.PartitionsLocked
// (APP_ATTACHMENT_PARTITIONS_LOCKED) refuses every partition change with
// 403. Uploads go to privateAttachments unless they name a partition
// (decision: a public one may be named explicitly).
//
// # Scope
//
// Attachment rows carry the tenant and the uploader's organization, and
// read like records: a caller sees its tenant's attachments of no
// organization and of the organizations it may read; another tenant's id
// is ErrNotFound. A record's attachments are those linked to it: every
// upload gets the assignment {type: entityId, id: recordId}, and an update
// keeps the assignment of the record the attachment belongs to
// (decision: assignments link, the owning record stays). Transfer moves
// the owning record and rewrites the assignments of the old record; all
// ids must be the caller's and of the entity, or nothing changes.
//
// Update (PATCH) replaces what it is given: tags or assignments given as
// null or [] clear them (the owning record's assignment stays); an update
// that changes nothing writes nothing and emits no event.
//
// Custom fields of attachments are the entities area's definitions for
// the entity "attachments:attachment" (Options.Fields; the Kit wires it):
// an undeclared key is refused naming it; an update merges, null clears.
//
// # Delivery
//
// Files of public partitions are served to anyone (with a credential of
// any tenant too: a credential never gets less than none); others need a
// credential with attachments.view, and the caller's scope must read the
// attachment (a super admin reads any tenant's). Lookups are cached in
// memory by id behind a version counter that deletes and partition
// changes bump, so a delete stops this process's deliveries at once and
// other processes' within milliseconds on PostgreSQL (a notification;
// 250 ms when it is not heard) (and a file already removed from storage
// answers 404). An anonymous request for
// a private or unknown id gets the same 401, so it learns nothing of
// which ids exist. Images (png, jpeg, gif, webp) are resized by package
// thumbs (pure Go): an image whose header declares more than 50
// megapixels is refused before decoding (the image route without sizes
// serves the original bytes, decoding nothing); each size is made once
// (concurrent first requests share one resize, one resize per CPU runs at
// a time) and kept in Blobs, at most 32 sizes per attachment (asking for
// one more drops the stored ones: any caller may ask for any size).
// Stored sizes do not count towards the quota.
//
// # Text extraction
//
// Package extract fills content in a durable job (attachments.extract,
// enqueued in the upload's transaction, so a crash or restart never loses
// one): text files as trimmed UTF-8, the PDF text layer and .docx
// documents in-process, bounded in pages, output (1 MB), decompressed
// bytes and time; other formats stay null, as do files of partitions with
// requiresOcr false. A file the extractors refuse keeps null content (the
// refusal is logged, the job is not retried). Each attachment shows how
// extraction went: extractionStatus null until the job has run, then
// done, retrying or failed, with extractionError saying why. A stored
// file missing while its attachment exists (a server that does not share
// the files, a lost file) is an error, never "done": the job retries (on
// any server; 5 attempts), the attachment shows retrying, and after the
// last attempt failed, with an error log line and the job discarded with
// the error. The content and status commit in one transaction fenced by
// the job's lease (jobs.Fence). Options.OCR, when a host
// plugs one in, reads images and PDFs without a text layer. The content
// fill is not an event (decision: it is not a user's change).
//
// # Events
//
// attachments.attachment.created, .updated (metadata changes and
// transfers) and .deleted, with the attachment's id, tenantId,
// organizationId, entityId, recordId, fileName, fileSize, mimeType and
// partitionCode.
package attachments
