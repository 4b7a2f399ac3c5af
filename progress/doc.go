// Package progress is the job progress area: any long-running work (an
// entities export, attachment text extraction, a data sync run) records
// a job and reports its progress through a Go API, and the tenant's users
// see what runs and what just finished (GET /progress/active, GET
// /progress/jobs/{id}, feature progress.view).
//
// # The area's shape
//
// As in every area (see package toggles): progress.go holds the domain
// types (Job, Status, CreateInput, Active, the errors and events),
// store.go the Store interface, sql.go SQLStore (the only SQL),
// service.go the Service, run.go Run and its Reporter, area.go its part
// in a Kit's lifecycle, and progresstest the Store conformance suite,
// run on both engines and shown to catch broken stores. httpapi/progress.go
// serves the two routes.
//
// # What reports
//
// The module's own long-running work reports here (areas never import
// this package: the Kit wires each area's small progress interface to
// the Service):
//
//   - data_sync.run: every data sync run, import or export, one job per
//     run, reported in each batch's transaction (package datasync);
//   - entities.export: a records export (GET /entities/records with
//     format), sent in the response itself: the job runs from the read
//     rows to the last byte sent (see package httpapi);
//   - attachments.extract: an attachment's text extraction, one job of
//     one item per upload (package attachments).
//
// # The Go API
//
// Every method acts in the scope ctx carries (store.ScopeFrom). Writes
// come in pairs, as store.Tx recommends: X runs in a transaction of its
// own, XTx joins the caller's *store.Tx, so that a job is created in the
// transaction that creates the work it tracks, and each batch's progress
// commits with the batch (a crash never shows progress that was not
// committed; a rolled-back batch leaves the job as it was).
//
//   - Create / CreateTx: a pending job (progress.job.created).
//   - Begin / BeginTx: pending → running, StartedAt and the heartbeat
//     set (progress.job.started). Beginning a running job again (a worker
//     retried after a crash) only renews its heartbeat.
//   - Report / ReportTx: processed items and, when given, the total (nil
//     keeps the stored one); recomputes the percent and ETA and renews the
//     heartbeat. No event.
//   - Heartbeat / HeartbeatTx: renews a running job's heartbeat during a
//     long step without progress. No event.
//   - Finish / FinishTx: completed, failed or cancelled
//     (progress.job.completed, .failed, .cancelled), from pending or
//     running.
//   - RequestCancel / RequestCancelTx, CancelRequested /
//     CancelRequestedTx: a user's request to stop a cancellable job, and
//     the worker's check. Report, Heartbeat and Begin also return the job,
//     CancelRequested included.
//   - Get / GetTx and Active: the reads the routes serve.
//   - Run: for work without a transaction of its own: creates and begins
//     the job, calls the function with a Reporter (Report at most once a
//     second, the counts in between kept for the next write or the
//     finish), sends a heartbeat every StaleAfter/4 while it runs, and
//     finishes the job from its result (nil: completed; ErrCancelRequested:
//     cancelled; another error: failed, showing the error's public message
//     or "The job failed", never an internal error's text).
//
// Transitions: pending → running → completed | failed | cancelled, and
// pending → completed | failed | cancelled directly (a job cancelled or
// failed before it began). Report and Heartbeat need a running job
// (ErrNotRunning for a pending one). Everything but a repeated Finish
// with the same status refuses a finished job (ErrFinished; both are
// store.ErrConflict): finishing again with the job's own status is a
// no-op, so a retried finish is harmless.
//
// # Decisions
//
//   - Scope: jobs are organization scoped like the data they describe.
//     Create stamps the scope's tenant and active organization (none:
//     NULL, a job of the whole tenant, visible to all its organizations);
//     reads and writes by id follow store.Scope.Readable, so a job of
//     another tenant, or of an organization the caller may not read, is
//     ErrJobNotFound (404), exactly like an unknown id, and is left out of
//     the lists.
//   - Counts: processed ≥ 0 and total ≥ 0 (else a validation error).
//     totalCount is null while the total is unknown. processed may exceed
//     total (totals are often estimates): the percent then stops at 100.
//   - progressPercent is an integer, ⌊processed·100/total⌋ capped at 100;
//     0 while the total is unknown or 0 (the UI tells an unknown total by
//     totalCount null); 100 once completed, whatever was reported. It
//     stays as reported on a failed or cancelled job.
//   - etaSeconds is computed when a running job reports (and renewed by
//     Begin and Heartbeat) from the rate since StartedAt:
//     ⌈(total − processed) · elapsed / processed⌉, 0 once processed
//     reaches the total, null when the total is unknown, nothing was
//     processed yet, no time elapsed, or the job is not running (it is
//     cleared by Finish and on stale jobs).
//   - The stale rule: a running job whose heartbeat (the last Begin,
//     Report, Heartbeat) is StaleAfter (60 s) old or older is shown
//     failed by every read: status failed, errorMessage "No heartbeat for
//     60 s", finishedAt its heartbeat plus StaleAfter, etaSeconds null
//     (Job.Stale tells it apart). Nothing is written and no event is
//     emitted, so there is no background sweep: a worker that was only
//     slow and reports again makes the job running again, and a stale job
//     can still be finished. Pending jobs never go stale (queued work may
//     wait long); the heartbeat clock is the database's (store.DB.Now),
//     so every process agrees.
//   - GET /progress/active answers {active, recentlyCompleted}: active
//     are the pending and running (not stale) jobs, newest created first,
//     at most 50 (ActiveLimit); recentlyCompleted the completed, failed
//     and cancelled jobs finished within RecentWindow (10 min; a job
//     finished exactly 10 min ago is still in), stale jobs included at
//     their shown finishedAt, latest finished first, at most 20
//     (RecentLimit). Both lists are read in one snapshot (ReadTx).
//   - GET /progress/jobs/{id} answers the job object itself. Jobs stay
//     readable by id after they leave the lists; nothing deletes them
//     (no retention yet: a job row is small and written once per piece
//     of long work).
//   - The job JSON has exactly the documented keys {id, jobType, name,
//     status, progressPercent, processedCount, totalCount, etaSeconds,
//     cancellable, startedAt, finishedAt, errorMessage}; times are RFC
//     3339 in UTC, unset values null (errorMessage null when empty). The
//     description, meta, cancelRequested and heartbeat are kept but not
//     shown.
//   - Input: jobType is required, a lowercase letter then lowercase
//     letters, digits, '.', '_', '-', at most 100 characters; name is
//     required (not blank), at most 200 characters; description at most
//     2000; meta a JSON object of at most 16 KiB (absent: {}); text must
//     be UTF-8 without NUL (PostgreSQL cannot store it). Problems are a
//     store.ValidationError naming jobType, name, description, total or
//     meta. A Finish error message is cleaned instead (invalid UTF-8
//     replaced, NUL dropped, cut at 2000 characters): a failure must
//     never fail to be recorded. It is shown to the tenant's users, so
//     callers pass a message meant for them; completed jobs keep none.
//   - Cancellation: RequestCancel on a job created with Cancellable sets
//     CancelRequested (again: no-op) and emits nothing; the worker sees it
//     and finishes the job as cancelled (which emits). A job not
//     cancellable is ErrNotCancellable, a finished one ErrFinished. There
//     is no HTTP route for it: the area that owns the work exposes its own
//     cancel (the data sync run's, for example).
//   - Concurrency: every change is a read-modify-write under Store.Lock
//     (SELECT … FOR UPDATE on PostgreSQL; SQLite has one writer), so a
//     Report racing a Finish cannot bring a finished job back.
//
// # The active jobs at scale
//
// Active reads three short lists, none with a total: the pending jobs and
// the running ones with a fresh heartbeat (ListActive, two branches of a
// UNION ALL, each from the status index: an OR of the two made SQLite
// read every job of the tenant), the jobs finished in the window (from
// the finished_at index) and those gone stale in it (the status index).
// Each reads only the jobs it returns or nearly, so the answer's cost does
// not grow with the jobs finished long ago.
//
// # Events
//
// progress.job.created, .started, .completed, .failed and .cancelled, one
// per stored status change (never per Report or Heartbeat, nor for a job
// only shown stale), in the transaction of the change, in the job's own
// tenant and organization; data {id, jobType, name, status,
// processedCount, totalCount, errorMessage?}.
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass progresstest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package progress
