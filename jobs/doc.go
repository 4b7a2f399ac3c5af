// Package jobs runs tenantkit's durable background work: webhook
// deliveries, extraction, sync runs, inbound processing, periodic
// clean-ups, and the delivery of domain events to subscribers.
//
// It is a small interface over River (github.com/riverqueue/river), driven
// by River's SQLite driver on SQLite and its pgx driver on PostgreSQL, with
// its tables in the same database as the application's. Areas use only
// this package, never River directly:
//
//   - Register a Worker per job kind before Start; a worker may give its
//     own retry schedule (NextRetry) and time limit (Timeout).
//   - EnqueueTx adds a job inside the caller's store transaction, so the job
//     exists exactly when the change that caused it commits.
//   - Cancel stops a waiting job at once and asks a running one to stop;
//     Cancel(err) returned from Work ends a job without retries; Snooze
//     delays it without counting an attempt.
//   - Progress records a running job's progress, readable at once with Get.
//   - Periodic enqueues a job on an interval, on one of the processes
//     sharing the database.
//   - Subscribe delivers committed domain events (store.Tx.Emit): the
//     engine hooks into the store so that each event becomes one job per
//     matching subscriber, in the emitting transaction. Delivery is at least
//     once; the event ID is the idempotency key.
//   - Every job runs under a lease (see Failover below): a job whose
//     process is killed runs again on another process (or the restarted
//     one) within seconds; Fence lets an area refuse the writes of a run
//     that lost its lease.
//
// The subpackage drain runs one ordered drain per key at a time across
// processes (a lease with a heartbeat, a wake-up flag, a sweep), over a
// queue table of the area that uses it: the webhooks' delivery queues.
//
// Decisions and known limits:
//
//   - River's tables live in their own PostgreSQL schema (Config.Schema,
//     by default the store's schema plus "_river") so that a host using
//     River itself never clashes with ours. River's migrations run at New,
//     one transaction per version, under the store's migration lock.
//   - Fetching is tuned for throughput (2ms cooldown). River's defaults
//     cap a queue near workers ÷ 100ms jobs per second. A queue is woken
//     by River's insert notification when a job is committed; its poll
//     (Config.FetchPollInterval, 1s on both engines) is only the
//     backstop. SQLite has no LISTEN/NOTIFY: River's SQLite driver writes
//     an insert's notification to an outbox table in the insert's
//     transaction, which its listener reads every 50ms, so this process
//     also hands its listener the notification of each of its own
//     commits at once (sqlite.go). An idle engine starts a job enqueued by
//     this process 2ms after its commit on average (BenchmarkPickupLatency;
//     23ms when the queues polled every 100ms, 14ms at 20ms), one enqueued
//     by another process sharing the file within the 50ms of the outbox,
//     and a job whose notification was not sent (River sends at most one
//     per queue every cooldown) or not read (the listener reconnecting)
//     within the poll: 1s, 5s for the queues whose jobs may wait
//     (RegisterOpts.Background: data sync runs, text extraction, payment
//     provider webhooks; Config.BackgroundPollInterval). Each poll takes
//     the single writer connection (whose connections keep River's fetch
//     statement prepared, see package store): at 42 polls a second
//     before, 4-6% of the standalone server's CPU serving 20,000 cheap
//     reads a second (BENCHMARKS.md, "Jobs").
//   - On SQLite River shares the store's single writer connection: SQLite
//     allows one writer, and queueing in Go avoids busy errors.
//   - On SQLite a running job may not see a cancel through its context;
//     long-running workers call CancelRequested between steps.
//   - On SQLite, do not call Progress or CancelRequested inside a store
//     transaction: both use the single writer connection the transaction
//     holds. Call them between transactions.
//   - The domain event log is pruned hourly (Config.EventRetention, 7 days
//     by default, never less than MinEventRetention, 25 hours: the events
//     stream replays the last 24 hours to a client that reconnects, and an
//     event of a long transaction may be stamped up to an hour before
//     events it follows in the log).
//   - Event deliveries use the "events" queue, other work "default" unless
//     a kind names its own, so a backlog of one never starves the other.
//
// # Failover
//
// River alone runs a killed process's job again only through its
// stuck-job rescue: after RescueStuckJobsAfter (an hour by default, 5
// minutes here; no less than the job's own time limit), on the elected
// leader (which, if it was the killed process, is replaced only after its
// leadership lapses, up to 15 s), at the rescuer's next round (every 30
// s). A data sync run killed mid-import showed "running" for 316 s. And
// shortening RescueStuckJobsAfter would run healthy long jobs twice.
// River v0.47 has no heartbeat for running jobs, so the engine adds one:
//
//   - Lease. A job's run holds a lease row (job_leases, this package's
//     migration line "jobs": job id, run number, holder, expiry, crash
//     count), renewed every LeaseTTL/5 (1 s) while Work runs, for
//     LeaseTTL (5 s). It is taken at the first renewal: a job that
//     returns within a second writes nothing (event deliveries, most jobs;
//     their cost is unchanged), and until then River's attempted_at counts
//     as the lease's start.
//   - Sweep. Every process, from Start to Stop (not a periodic job, which
//     would wait for a new leader), every LeaseTTL/5 ± 10% reads River's
//     jobs running since before LeaseTTL ago (River's own stuck-job
//     query: one indexed read when none runs that long), and their lease
//     rows; a run whose lease lapsed is declared dead and the job made
//     available at once, in one transaction that first checks (and locks)
//     that River still runs that attempt, so two sweeping processes never
//     both take it. The error list of the job records each such takeover.
//   - Fencing. The run number is River's attempt plus the job's snoozes
//     (a snooze gives its attempt back), one higher at every fetch: the
//     lease's token (Job.Run). A renewal, Fence, and the recording of a
//     run's outcome succeed only while the row holds that run; a run that
//     lost its lease has Work's context cancelled with ErrLeaseLost,
//     Fence refuses its writes (a data sync batch, an extraction's
//     content), and its completion is refused: a completion commits in one
//     transaction with the lease's end (River's completion within a
//     transaction), so a job completes once. River records an attempt's
//     outcome only while the job is running, so a run that lost its lease
//     waits until the job no longer runs elsewhere before it returns.
//   - Parking. Each lapse counts a crash on the row; at the third
//     (ParkAfterCrashes) the job is discarded with the error instead of
//     run again, so a job that kills its process is not run for ever. A
//     job whose cancel was requested is cancelled instead.
//
// Measured (TestFailoverKill, a child process killed with SIGKILL while
// it runs one job of each queue class; the data sync and extraction kill
// tests): the job runs again 5.0–6.1 s after the kill on PostgreSQL
// (another process running all along) and on SQLite (the process
// restarted at once): at most LeaseTTL after the last renewal, plus a
// sweep (≤ 1.1 s), plus the pickup (milliseconds: the rescue wakes the
// job's queue with River's insert notification, in its transaction), so
// under about 6.5 s. BENCHMARKS.md has the figures per job kind with their
// commands.
//
// Limits: lease times are stamped with each process's clock (hosts must
// agree within about LeaseTTL − LeaseTTL/5 = 4 s: NTP); a process that
// stalls longer than LeaseTTL (a pause, a database that does not answer
// its renewals) has its jobs run elsewhere, its own run then fenced; a
// Work that never returns keeps renewing, and is left to River's rescue
// (Config.RescueStuckAfter, 5 minutes), the backstop, which runs it again
// elsewhere (the stuck run is then fenced). During an upgrade from a
// version without leases, a job of an old process that runs longer than
// LeaseTTL is taken for dead and run again (at least once, as River's
// rescue would). A run that lost its lease returns once the job no
// longer runs; should another process fetch the job in the milliseconds
// before River records that run's outcome, River records it over the new
// run (an error: the job is retried, and the new run, fenced, records
// nothing). The lease rows of finished jobs are removed by the hourly
// clean-up.
package jobs
