// Package attachments is the attachments area: files uploaded to records,
// their storage partitions, the library (search, tags, assignments,
// custom fields), transfer between records, file and image delivery, and
// text extraction in the background.
//
// # Storage
//
// A file's bytes live in Blobs (FSBlobs on disk: the standalone server
// uses DATA_DIR/files unless FILES_URL names the database or an S3
// bucket; MemBlobs in memory for tests; see "Where files are kept"); the
// attachment row in the Store. An upload streams: Stage reads the first 3 KiB to sniff
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
// # Where files are kept
//
// Four Blobs ship, all passing the conformance suite of package
// blobstest:
//
//   - FSBlobs: a directory of this machine (temporary file, sync,
//     rename). One machine only.
//   - MemBlobs: memory, for tests.
//   - SQLBlobs: the database (the attachments_blobs migration line,
//     applied with the area's). A file is 1 MiB chunk rows under a version
//     id (a UUIDv7) and a row naming the key's current version. Put writes
//     the chunks one statement at a time outside any transaction (one
//     chunk in memory, no transaction holding locks while a slow client
//     uploads), then swaps the key's row and deletes the old version's
//     chunks in one short transaction. Reads fetch one chunk at a time,
//     and of a range only the chunks it covers, cut with substr; on
//     PostgreSQL the chunks are stored uncompressed out of line (STORAGE
//     EXTERNAL), so substr reads only the bytes it returns. A crashed
//     Put's chunks are removed by the orphan sweep's listing once an hour
//     old. It runs on SQLite too, but only PostgreSQL shares files between
//     machines (the standalone server refuses FILES_URL=postgres with
//     SQLite).
//   - s3blobs.Blobs (package attachments/s3blobs): a bucket of any
//     S3-compatible store, through github.com/minio/minio-go/v7. A
//     package of its own, so that the S3 client is linked only into
//     programs that use it; see its documentation.
//
// Reads of SQLBlobs and s3blobs.Blobs are lazy (NewRangeBlob, which a
// host's Blobs may use too): Open reads the size, Seek
// costs nothing, and Read fetches a window from where the reader is, of 1
// MiB first, doubling up to 32 MiB while reading on. http.ServeContent
// serves a Range by seeking to its start and reading its length, so a 1
// MiB range of a large file reads about 1 MiB from storage (httpapi's
// TestAttachmentFilesInS3 counts the bytes S3 sends), and a whole download
// needs a handful of requests. ReadAt fetches exactly what it asks for.
// Every fetch of an opened blob is bound to the version it opened (S3: a
// condition on the ETag; SQL: the version id), so a blob replaced while
// being read fails the read rather than mixing two versions.
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
//   - A name carrying a bidirectional control character (U+202A-U+202E,
//     U+2066-U+2069, U+200E, U+200F, U+061C) is refused with 400 naming
//     the field (file on upload, fileName on rename), never stored with
//     them removed (decision: "cat_\u202Egnp.zip" shows as "cat_piz.png";
//     dropping the control would silently give the file a name its
//     uploader never saw, and a refusal tells the client why).
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
// Partitions belong to the tenant: one decides for every organization's
// files whether they are public. Over HTTP only a caller of the whole
// tenant (no organization limit) may create, change or delete one
// (httpapi's tenant-wide rule: 403 requiredScope "tenant"); the Service
// itself trusts the scope its caller puts in the context.
//
// Update (PATCH) replaces what it is given: tags or assignments given as
// null or [] clear them (the owning record's assignment stays); an update
// that changes nothing writes nothing and emits no event. fileName
// renames the file under an upload's rules (above) and must keep its
// extension (case aside), so the field's acceptExtensions and the text
// extraction chosen by the extension still hold; a rename bumps the
// delivery cache so downloads carry the new name at once.
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
// which ids exist.
//
// # Plug-ins: image resizing and text extraction
//
// Decoding images and parsing documents is heavy code (image/jpeg,
// image/png, golang.org/x/image, a PDF parser) that a program using
// attachments only to keep files need not link, so the area's core has
// none of it. Two plug-ins of Options bring it:
//
//   - Images (interface Images): package attachments/thumbs,
//     thumbs.Images{}, resizes PNG, JPEG, GIF and WebP in pure Go.
//   - Extractor (interface Extractor): package attachments/extract,
//     extract.Extractor{}, reads plain text, PDFs' text layer and .docx
//     documents in pure Go.
//
// Package full (github.com/tenantkit/tenantkit/full) sets both (and the
// other built-in plug-ins), and the standalone server uses it; a host
// that calls tenantkit.Open itself sets the ones it wants.
//
// Without Images (decision): the image route serves the original file,
// unresized, for any width and height it accepts (1..MaxImageSize,
// cover or contain, still checked), with the file's own type; IsImage
// still says yes for PNG, JPEG, GIF and WebP, which every browser shows.
// A page asking for a thumbnail then gets a larger image that the browser
// scales (an <img> with width and height, CSS object-fit for cover or
// contain) rather than a broken image, and nothing is decoded on the
// server. Nothing is stored under thumbs/.
//
// Without Extractor (decision): no text is read but by Options.OCR when
// a host plugs one in (images and PDFs); every other file keeps a null
// content, and no extraction job is enqueued for it, so extractionStatus
// stays null. Plain text is not kept back in the core either: one rule
// (the plug-in reads what it reads) is simpler to predict than a core
// that reads some formats.
//
// # Images and their cost
//
// Images (png, jpeg, gif, webp) are resized by the Images plug-in; what
// follows holds for package thumbs (pure Go), the budget and limits for
// any plug-in.
// The image route is public for public partitions, so what one request
// may cost is bounded, whoever asks:
//
//   - An image whose header declares more than 50 megapixels is refused
//     before decoding (the image route without sizes serves the original
//     bytes, decoding nothing).
//   - Memory. Images.MemoryNeeded (thumbs.MemoryNeeded) estimates a resize from the header
//     before any pixel is decoded: the decoded source by format, colour
//     type and bit depth (a 16-bit PNG takes 8 bytes a pixel, so the
//     7000×7000 16-bit PNG under the 50 MP guard needs 392 MB; an
//     interlaced PNG twice its pixels; a progressive JPEG its DCT
//     coefficients besides), the filter's rows, the output canvas and its
//     encoding. A resize estimated above Options.ImageMemoryBytes
//     (APP_ATTACHMENT_IMAGE_MEMORY_MB, 128 MB) is refused with 400 saying
//     so (decision: refuse rather than decode by rows or subsample; a
//     smaller size may fit, and the original is served without sizes).
//     The others share that budget per process through a weighted
//     semaphore of their estimates: at most 128 MB of resizes are under
//     way at once. A resized image served from memory (just made, or too
//     large to store) stays charged to the budget until its response is
//     sent, so slow clients cannot hold resized images beyond it (the
//     first request takes the resize's charge; requests that shared the
//     resize wait for their own). A resize estimated at an eighth of the budget or more
//     runs a garbage collection when it ends (decision: left to the
//     pacer, the heap grows to twice what was live at the last
//     collection, and the garbage of one resize beside the pixels of the
//     next took the heap to 2.5 times the budget).
//   - CPU. At most Options.ImageResizes resizes run at once (half the
//     CPUs, at least one), so the other routes keep the rest.
//   - Tenants. A tenant has at most Options.ImageResizesPerTenant (2)
//     resizes running or waiting in a process; more are refused at once
//     with ErrBusy. A resize that gets no memory or CPU within
//     Options.ImageWait (10 s) is ErrBusy too. The route answers both with
//     503 and Retry-After: 5.
//   - Storage. Each size is made once (concurrent first requests share
//     one resize) and kept in Blobs if it fits the file's allowance: at
//     most 32 sizes of one attachment, together no larger than the file
//     itself (64 KiB at least). A size larger than the allowance is served
//     but not stored (made again when asked for); one that does not fit
//     beside the stored ones drops them (any caller may ask for any size:
//     they are a cache). So a tenant's stored sizes take at most what its
//     files take (which the quota bounds) plus 64 KiB a file; they do not
//     count towards the quota. Resizes of one file's different sizes that
//     finish together may each see room: the allowance can be passed by
//     the few resizes running at once, never more.
//
// The budget, the CPUs and the tenants' shares are per process: several
// server processes may together take as many times as much.
//
// With these, 32 concurrent anonymous requests for new sizes of the
// costliest files under the guard grow the heap and the RSS by less than
// 256 MB, and a cheap route keeps answering in milliseconds
// (TestAttachmentImageCampaign in httpapi; BENCHMARKS.md has the figures
// against the unbounded route: 1.6 GB).
//
// # Text extraction
//
// The Extractor plug-in (package extract) fills content in a durable job (attachments.extract,
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
// the job's lease (jobs.Fence). A run is stopped after
// Options.ExtractTimeout (1 minute) and retried, and the content is cut
// at Options.MaxContentBytes (1 MiB). Options.OCR, when a host
// plugs one in, reads images and PDFs without a text layer. The content
// fill is not an event (decision: it is not a user's change).
//
// # Events
//
// attachments.attachment.created, .updated (metadata changes and
// transfers) and .deleted, with the attachment's id, tenantId,
// organizationId, entityId, recordId, fileName, fileSize, mimeType and
// partitionCode; .extraction_finished with the same fields and
// extractionStatus (done, or failed for a file the extractors refused)
// and extractionError, in the transaction that records the outcome. All
// four reach clients on the events stream (ClientBroadcast, feature
// attachments.view).
//
// # Progress of extractions
//
// With Options.Progress (the Kit wires the progress area) each
// extraction is a progress job of type attachments.extract, named "Text
// extraction of <file name>", of one item: created pending in the
// upload's transaction (its id travels in the job's arguments), begun by
// each attempt, and finished by the attempt that ends the extraction:
// completed (the item processed, 100 %), failed with the attachment's
// extractionError when the file is refused or no attempt is left,
// cancelled when the attachment was deleted meanwhile. Between a failed
// attempt and its retry the job is left running, so it shows failed by
// the progress area's stale rule until the retry begins it again
// (decision: progress has no way back to pending, and a retry may be
// minutes away). A progress write that fails is logged and never fails
// the extraction. Files of partitions without extraction get no job.
//
// # The library's totals
//
// Library returns a page and the exact total of what the filter selects,
// and Tags the tags to filter by. Counting the attachments (and reading
// every tag row for the tags) on every call grew with the tenant's files,
// so SQLStore keeps counts (store.Counts, migration 0003): per
// organization and partition (attachment_counts) and per organization,
// partition and tag (attachment_tag_counts), written by InsertAttachment,
// UpdateAttachment (the tags it replaces) and DeleteAttachment in the
// caller's transaction. The total of the unfiltered library, of a
// partition and of one tag (with or without a partition) sums a few of
// them; Tags are those counted above zero for the organizations the scope
// reads, and CountAttachments (the usage's file count) sums them too.
// Several tags (each required) still count the matching attachments, but
// from the rarest tag's rows (by the kept counts), each tested for the
// others, rather than from every attachment of the tenant each tested for
// every tag: a tag no readable attachment carries answers at once, and
// the cost is the rarest tag's attachments, not the tenant's. When the
// matches cannot be dense (at most the rarest tag's count match, and
// (offset+limit)·attachments is not below its square), the page and the
// total come from one statement that reads the matches once (COUNT(*)
// OVER (): each row of the page carries the count of all; an empty page
// past the first counts on its own). Otherwise the total is counted
// first, and the page is read from those rows too unless the matches
// are dense enough that reading in the page's order finds the page
// sooner (the total known, (offset+limit)·attachments/total against the
// rarest tag's count). A rare intersection of common tags still reads a
// common tag's rows. On PostgreSQL the page is taken from all the
// matches (a subquery the planner may not merge): planned for the page
// alone, it read the attachments in the page's order testing each, the
// tags taken for independent. And the count and that page are planned for their tags at
// every run (store.PlanEachRun): the plan PostgreSQL kept for the
// statement, made without the tag (generic), read a rare tag's few rows
// as a common tag's many (at 1,000,000 attachments, 191 ms for a tag of
// 1,000 against 24 ms planned for it).
//
// A file-name search matches anywhere in the name, which no count
// serves. Decision: its
// total counts at most store.SearchTotalCap (10,000) matches
// (store.CountCapped stops after the cap + 1; LibraryPage.TotalCapped),
// and the HTTP library reports 10,000 with "totalCapped": true beside the
// total when more match (absent when exact: answers without a search are
// unchanged). Counting every match took 0.78 s on PostgreSQL and 2.6 s on
// SQLite at 1,000,000 attachments.
//
// # The file-name search's index
//
// A capped count still read every name of the tenant for a term that
// matches fewer than the cap (36 s on a loaded SQLite at 1,000,000
// attachments for a term that matches none), so migration 0004 indexes
// the names' trigrams, as an exact-preserving prefilter: the index only
// narrows the rows the search's own predicate (store.Dialect.ContainsFold
// on the folded name) then decides, so answers are what they were.
//
//   - PostgreSQL: a GIN index on (tenant_id, lower(file_name)), the
//     predicate's own expressions: pg_trgm's trigrams of the name and,
//     through btree_gin, the tenant, which the planner uses for the
//     search as it is (each candidate rechecked). Decision: the tenant is
//     in the index so that a term common in another tenant's names does
//     not put that tenant's rows in the search's bitmap (a term in 10% of
//     the names of a tenant of 100,000 beside one of 1,000,000: 2.7 s
//     with the name alone, 0.39 s), at a cost to the large tenant's own
//     common terms (its 10% term 0.80 → 1.10 s: its tenant entry is read
//     too; the ordered read without the index took 0.2 s). pg_trgm and
//     btree_gin ship with PostgreSQL and are trusted since version 13, so
//     a database owner may create them. Decision: the migration creates each when it is
//     missing (in schema public, else the current schema) and uses it
//     where it is when an administrator installed it; when creating one
//     is refused, the migration fails with an error naming it and the
//     remedy (have an owner or superuser run CREATE EXTENSION, then
//     migrate again), rather than leaving every search to read the table
//     unnoticed.
//   - SQLite: attachment_names, a contentless FTS5 table with the trigram
//     tokenizer holding each attachment's name folded by tk_fold (the
//     store's lower-casing; the tokenizer's own folding differs from it
//     for 391 letters, İ among them, so it is not used) under the
//     attachment's key in attachment_name_keys (an INTEGER PRIMARY KEY
//     per attachment id), kept by triggers on every insert, rename and
//     delete. Decision: the index is keyed by the attachment's id, not by
//     the attachments table's rowid (its primary key is TEXT), which
//     SQLite documents VACUUM as free to renumber (3.54 keeps it) and
//     which a dump and restore or a rebuild of the table renumbers:
//     a rowid-keyed index would then miss attachments unnoticed. A
//     candidate costs two more lookups (its key's id, then the attachment
//     by id): terms with thousands of candidates about 1.5–1.9× slower
//     at 100,000 attachments. The list reads the candidates from it
//     (CROSS JOIN, so a count stops at the cap) for a term of three
//     characters or more; shorter terms, which a trigram index cannot
//     look up, read the names as before. When more than the cap match,
//     the page is read in its order as before (common matches come
//     early) rather than from every candidate. The triggers call tk_fold, so the attachments table is
//     written only through a connection of the store package (as every
//     write of this package is).
//
// SQLite's index holds every tenant's names, so a term common in other
// tenants' names has their candidates too, which the tenant predicate
// drops. On SQLite the total reads at most 2×(store.SearchCap+1)
// candidates; when they run out before the count is known, the search
// counts and pages by reading the names in order, as without the index
// (which stops early for a common term). On PostgreSQL the planner
// chooses: a term whose trigrams are in most names (as ".pdf" is) can be
// slower through the index than the ordered read it replaced.
// The pages are read from indexes in the library's orders (newest first;
// by partition; by file name; by size).
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass attachmentstest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package attachments
