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
//     cap a queue near workers ÷ 100ms jobs per second. SQLite has no
//     LISTEN/NOTIFY: River's SQLite driver writes an insert's notification
//     to an outbox table in the insert's transaction, which its listener
//     reads every 50ms, and the queues poll every 100ms as a backstop
//     (Config.FetchPollInterval). An idle engine starts a new job 23ms
//     after its commit on average (BenchmarkPickupLatency; 14ms when the
//     queues polled every 20ms, which took a loaded server's single
//     writer a hundred times a second). Each poll takes the single writer
//     connection (whose connections keep River's fetch statement
//     prepared, see package store), so queues whose jobs may wait
//     (RegisterOpts.Background: data sync runs, text extraction, payment
//     provider webhooks) are polled every 250ms
//     (Config.BackgroundPollInterval): an idle standalone server went from
//     23% to 11% of a core; keeping the fetch prepared took a further third
//     off (BENCHMARKS.md).
//   - On SQLite River shares the store's single writer connection: SQLite
//     allows one writer, and queueing in Go avoids busy errors.
//   - On SQLite a running job may not see a cancel through its context;
//     long-running workers call CancelRequested between steps.
//   - On SQLite, do not call Progress or CancelRequested inside a store
//     transaction: both use the single writer connection the transaction
//     holds. Call them between transactions.
//   - The domain event log is pruned hourly (Config.EventRetention, 7 days
//     by default).
//   - Event deliveries use the "events" queue, other work "default" unless
//     a kind names its own, so a backlog of one never starves the other.
package jobs
