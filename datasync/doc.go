// Package datasync is the data sync area: import and export runs that move
// a tenant's custom entity records between tenantkit and an integration's
// source, through adapters, as durable jobs that survive restarts.
//
// # The area's shape
//
// datasync.go holds the domain types (Run, the bridges Integrations,
// Records and Progress the Kit fills from the other areas), adapter.go the
// Adapter interface and registry, store.go and sql.go the runs' storage,
// service.go starting, listing, cancelling and retrying runs, worker.go
// the job that moves batches (with its attempts and time limits),
// cursors.go the cursor history that catches cycling sources, area.go its
// part in a Kit's lifecycle.
// datasync/httpjson is the built-in sync_http_json adapter.
//
// # Runs
//
// POST /data_sync/run checks the target and creates the run (pending),
// its progress job and its durable job in one transaction. The worker
// marks it running (data_sync.run.started) and moves batches: it reads a
// page from the source (an import) or the next local records (an export)
// outside any transaction, then commits, in one transaction, the batch's
// records (through the entities area: validation, events, value counts),
// the run's cursor and counters, the progress job and any item's log
// line. A process killed between batches loses nothing: the job runs
// again (River's rescue) and continues at the last committed cursor; a
// batch cut short commits nothing and is read again.
//
// An import reads one page ahead: once a page is read, the worker starts
// reading the next (at the page's nextCursor) before it writes the page,
// so that the source's answer and its decoding overlap the batch's
// transaction. The batch's transaction moves the cursor to that page and
// counts the read as its first attempt (page_attempts 1), so a read ahead
// is an attempt like any other (counted, timed, retried); the next batch
// waits for it instead of asking again. Decision: on 2 cores the page's
// read and decode were about a sixth of a batch of 1000 ten-field records
// on either engine, spent while the database waited (BENCHMARKS.md,
// "Data sync"). No page is read ahead of the last page, of a cursor the
// run already read (a cycle), past the job's time budget, or once the
// run has ended or a cancel was asked (checked in the run's row right
// before the read, as before any attempt); a page read ahead that no
// batch writes (the batch failed, or the run ended meanwhile) is
// dropped, its read cancelled.
//
// Imports upsert by external id: a record's id is derived from the
// tenant, the integration, the entity type and the item's externalId
// (RecordID, a UUIDv5), so a re-run, a retry or a resumed job writes the
// same records and never duplicates one. New ids count createdCount,
// existing ones updatedCount, items failing validation or whose record
// is in an organization the run may not write failedCount (with a warn
// log line naming the item; the run goes on), items whose record was
// deleted locally skippedCount (left alone). batchesCompleted counts
// pages. An export sends the entity's live records in id order, its
// cursor being the last id sent; success counts updatedCount, error
// failedCount, skipped skippedCount.
//
// # Decisions
//
//   - Runs belong to the tenant, as the integration state they run under
//     does: every caller of the tenant with data_sync.view sees them.
//     Records are written in the organization active when the run
//     started.
//   - A run records who started it (Run.StartedBy, the caller's
//     store.Scope.ActorID; for a retry, who asked for the retry), apart
//     from the free-text triggeredBy, so that the Kit can tell that
//     caller when the run fails (package notifications). It is not shown
//     by the routes.
//   - A run reads only what the caller who started it may read: it keeps
//     the caller's readable organizations (Run.OrganizationIDs, nil for
//     every one) and its job, however often resumed or rescued, reads
//     records in that scope, so an export sends their records and those
//     of no organization only. A retry keeps the organizations both the
//     old run and the retrying caller may read. Whether a caller may read
//     records at all is the host's check: httpapi asks an export's start
//     and retry for entities.records.view, the feature of GET
//     /entities/records.
//   - A run writes only where the caller who started it may: an import
//     creates new records in the run's organization, and updates an
//     existing record of an item's derived id only when the run's
//     organizations include the record's (or it has none, as records any
//     organization reads). A record of another organization is left as
//     it is, live or deleted: its item counts failedCount, with the warn
//     log line "Item <externalId> was not imported: record exists in an
//     organization this run may not write" (ErrOutsideScope), and nothing
//     else of the record (its values, organization, whether it is
//     deleted) shows in the run or its log. A run of a caller of every
//     organization updates the record wherever it was made.
//   - Statuses: pending → running → completed | failed | cancelled; paused
//     is part of the vocabulary but nothing sets it.
//   - fullSync true starts an import from the source's first page;
//     otherwise a run continues from the cursor of the latest completed
//     run of the same integration, entity type and direction (the last
//     page it read, so items added to it since are read again and
//     updated, not duplicated).
//   - A source error is retried with backoff (1 s, 4 s, 15 s) when the
//     adapter says it is retryable (5xx, 429, timeouts); after
//     MaxAttempts attempts, or at once for 401, 403, a malformed page or
//     a source too slow, the run ends failed with lastError and an error
//     line in the integration log. See "Runs end".
//   - batchSize is 1 to 1000 (absent: 100; 0 is refused, 422).
//   - At most one run per tenant, integration, entity type and direction
//     is pending or running (a unique index): another start is 409.
//   - Cancel: a pending run is cancelled at once; a running one is
//     flagged and ends cancelled after the batch in progress (the page
//     being read or written completes and its records stay; no page is
//     read after). Every change of a run locks its row (LockRun), so a
//     cancel and a batch never overwrite each other's fields. Retry creates a new run from the old run's cursor
//     (fromBeginning: the first page) with its batch size, so nothing the
//     old run committed is written again; the old run stays as it was.
//   - A run of an integration disabled after it started ends failed
//     ("the integration was disabled") when its job next starts a slice
//     (within about 20 s). A retry needs the integration enabled, as a
//     start does.
//   - A job works for at most 20 s (or half its time limit) and then
//     hands the run back to the queue (snooze), so one long run never
//     trips the job engine's time limit and several runs share workers.
//     The job reads everything it needs from the run's row (cursor,
//     scope, attempts, cursor history), so a resumed job continues the
//     same run.
//   - The run answers carry {id, progressJobId, integrationId, entityType,
//     direction, status, createdCount, updatedCount, skippedCount,
//     failedCount, batchesCompleted, lastError, createdAt, updatedAt};
//     the detail adds progressJob {id, status, progressPercent,
//     processedCount, totalCount, etaSeconds} or null.
//   - Validate answers 200 {ok: true, message}; 404 {ok: false, message}
//     for an unknown integration or one without an adapter; 422 {ok:
//     false, message} for missing credentials or a failed connection
//     check.
//
// # Runs end
//
// A run never waits on its source for ever, whatever the source does:
//
//   - Each attempt at a source call (an import's page, an export's
//     batch) has Options.PageTimeout (30 s), and at most half the job's
//     time limit, from the request to the last byte; one that takes
//     longer fails retryably, "no complete answer within 30s (the page
//     time limit)".
//   - A call is tried at most Options.MaxAttempts times (len(Backoff)+1:
//     4 by default), then the run fails with the last error and "(gave up
//     after 4 attempts)". Attempts are counted in the run's row before
//     they are made (page_attempts) and reset by a committed batch (to 1
//     when it reads the next page ahead, see "Runs"), so a
//     job stopped during one (its time limit, a restart, a rescue) goes
//     on counting where it was; a job that has not the time left for a
//     wait and a whole attempt hands the run back to the queue (snooze)
//     instead. While a run retries, lastError holds the last attempt's
//     error; a committed batch clears it. With the defaults a page that
//     never completes fails its run after at most 4 × 30 s + 20 s of
//     waits.
//   - Call.MinBytesPerSecond (Options.MinBytesPerSecond, 512) is the
//     slowest a response body may arrive, judged from ThroughputGrace
//     (10 s) after it began; sync_http_json fails a slower call, not
//     retryably (a trickling source trickles again, and each attempt
//     would hold the run that long). A source sending 1 byte a second
//     fails its run about 10 s into its first page.
//   - An import whose source gives a nextCursor the run already read
//     fails: its pages go round in a cycle. The page that gave it is
//     committed first, as any page is. The run keeps what it needs in
//     its row (CursorHistory, bounded: the hashes of its last
//     Options.CursorMemory = 1000 cursors and of its pages 1, 2, 4, 8, …),
//     so a resumed job still knows them: a cycle of up to 1000 pages is
//     caught at its first repeat, a longer one within 2μ+λ pages (μ
//     pages before it, λ in it). A retry is a new run, with no history.
//   - A cancel is honoured before every attempt, so also between retries.
//
// # The runs list's totals
//
// ListRuns returns a page, newest first, and the exact total. SQLStore
// keeps how many runs each tenant has per integration, entity type,
// direction and status (store.Counts, migration 0004), written by
// InsertRun and, when the status changes, UpdateRun (which first updates
// the row only if its status is unchanged, the usual case; otherwise it
// reads the stored status, locking the row, and moves the run between the
// counts). Every total the list offers sums a few count rows; the pages
// are read from indexes by status, by integration and by one sync
// (integration, entity type and direction) in list order.
//
// # The dashboards' data sync widget
//
// Service.Summary (the widget data_sync.runs) gives, per integration
// with runs created at or after the window's start, its newest such run
// and how many of them are in each status. It counts every run of the
// window: it used to read the tenant's newest 1,000 runs and count those
// in Go, so its counts covered at most those runs (not the whole window
// of a busy tenant) and its cost was that read's, 68 to 129 ms at a
// million runs. SQLStore.RunSummary (Store) reads kept counts instead:
// data_sync_run_hour_counts (store.Counts, migration 0006, filled from
// the runs stored before it) has, per tenant, UTC hour of the run's
// creation (its start in Unix seconds), integration and status, how many
// runs there are, written with the counts above by InsertRun and by
// UpdateRun when the status changes (a run moves between statuses within
// its creation hour, in the transaction that changes it). The read sums
// the window's whole hours from them and counts a first, partial hour
// from the runs' (tenant, created_at) index, so any since is exact; the
// widget's window starts at an hour (the start of the UTC hour 24 hours
// back, as the other built-in widgets), so it reads only counts. Each
// counted integration's newest run is one entry of the (tenant,
// integration, created_at, id) index. Runs are never deleted, so the
// counts only grow by hour; the rows of old hours stay, and a window
// reads only its own.
//
// # Events
//
// data_sync.run.started, .completed, .failed and .cancelled, with the run
// as data.
package datasync
