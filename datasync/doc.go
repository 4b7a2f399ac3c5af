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
// the job that moves batches, area.go its part in a Kit's lifecycle.
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
// Imports upsert by external id: a record's id is derived from the
// tenant, the integration, the entity type and the item's externalId
// (RecordID, a UUIDv5), so a re-run, a retry or a resumed job writes the
// same records and never duplicates one. New ids count createdCount,
// existing ones updatedCount, items failing validation failedCount (with
// a warn log line naming the item; the run goes on), items whose record
// was deleted locally skippedCount (left alone). batchesCompleted counts
// pages. An export sends the entity's live records in id order, its
// cursor being the last id sent; success counts updatedCount, error
// failedCount, skipped skippedCount.
//
// # Decisions where the spec is silent
//
//   - Runs belong to the tenant, as the integration state they run under
//     does: every caller of the tenant with data_sync.view sees them.
//     Records are written in the organization active when the run
//     started.
//   - Statuses: pending → running → completed | failed | cancelled; paused
//     is part of the vocabulary but nothing sets it.
//   - fullSync true starts an import from the source's first page;
//     otherwise a run continues from the cursor of the latest completed
//     run of the same integration, entity type and direction (the last
//     page it read, so items added to it since are read again and
//     updated, not duplicated).
//   - A source error is retried with backoff (1 s, 4 s, 15 s) when the
//     adapter says it is retryable (5xx, 429, timeouts); after that, or at
//     once for 401, 403 or a malformed page, the run ends failed with
//     lastError and an error line in the integration log.
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
// # Events
//
// data_sync.run.started, .completed, .failed and .cancelled, with the run
// as data.
package datasync
