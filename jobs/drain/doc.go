// Package drain runs one ordered drain per key at a time, across the
// processes sharing a database, surviving crashes: the lease, heartbeat,
// hand-on and sweep machinery under the webhooks area's delivery queues,
// apart from what is drained.
//
// Each key (Key: a group, such as a tenant, and an id, such as a webhook)
// has a queue row carrying a lease and a "queued" flag. New work sets the
// flag (Queues.Wake, inside the transaction that made it, or
// Queues.WakeAfterCommit) and enqueues a drain job only when the flag was
// clear and no drain holds the lease. The drain job's worker calls
// Queues.Drain, which takes the lease (clearing the flag), renews it every
// HeartbeatEvery, and runs the area's step function until it has nothing
// more to do; before it lets the lease go it looks at the flag and at the
// area's due items again, and drains on if work arrived. So no item waits
// for a drain that will not come, and there is never more than one drain
// job waiting per key. A drain whose step fails, or whose job runs out of
// time, hands the queue on at once (flag set, drain enqueued). A drain
// killed with its process stops renewing its lease; Queues.Run, which the
// owning area runs in every process, hands on each queue whose lease has
// lapsed (TakeOver, every TakeOverEvery) and sweeps (Sweep, every
// SweepEvery: every queue with due items and no live lease, or a flag
// older than StaleQueued with no drain taking it). A drain whose lease
// was taken over (it was not renewed in time) sees its context cancelled
// with ErrLeaseLost; the area's step checks Leases.Holds before it
// records anything.
//
// The area decides what an item is, in what order its step takes them
// and when one is due (Items), and enqueues its own job kind (Enqueue),
// whose worker calls Drain with its step.
//
// # Across processes: failover
//
// What processes share is the queue rows (lease, flag) and the job
// engine's queue; each process runs its own drains, heartbeats and Run.
// With the defaults a killed drain's queue is drained on by another
// process within LeaseTTL + TakeOverEvery + 10% jitter + the job
// engine's pickup of the enqueued drain: at most 3 s + 1.1 s + pickup
// (milliseconds on PostgreSQL, whose job engine is notified; up to 20 ms
// on SQLite), measured at 3.0–4.1 s when the kill follows a renewal
// (TestFailoverWithin5s, both engines). The takeover runs in the
// process, not as a periodic job: a periodic job would wait for the job
// engine to elect a new leader when the killed process was the leader
// (River's leadership lapses after 15 s, and is sought every 5–6 s). The lease row names its holder (Lease.Owner is
// "host:pid:instance/drain", HolderOf), so logs (take, release and yield
// at Debug; hand-on at Info; takeover and a lost lease at Warn, each with
// the holder, and the lapsed holder on a takeover) and Queues.Owners (per
// queue: holder, lease end, flag, and with Table.OwnersDue the due items
// and the oldest one's age) say which process drains what.
//
// The heartbeat, the takeover and the sweep run on the database's
// background pool (store.DB.Background on PostgreSQL; SQLite's one
// writer otherwise), as the job engine's own renewals do: they work to
// deadlines (a renewal later than LeaseTTL − HeartbeatEvery loses the
// lease), and on the request pool they waited behind requests for a
// connection. Two 30-minute soaks on one server lost a lease that way
// once each, a drain under way then cancelled and its queue handed on
// (TestLeaseKeptUnderRequestLoad: requests waiting 2.4 s for a request
// connection, a 1 s lease; it lapsed and was taken over with one pool,
// and is kept with two). A drain's steps, the area's own work, stay on
// the request pool, as its acquire, release and yield do.
//
// A renewal that finds the lease gone while the drain is letting it go
// itself (its release, yield or hand-on under way or committed) is not a
// loss: the drain is ending, and the heartbeat stops without a warning
// (TestReleaseBesideHeartbeat). A soak on a loaded machine logged such a
// false "lease lost" once, the drain's goroutine held up between its
// release's commit and stopping its heartbeat.
//
// Lease times are stamped with each process's clock: hosts whose clocks
// are more than LeaseTTL − HeartbeatEvery (2 s) apart take each other's
// live leases. Keep them synchronised (NTP), or raise LeaseTTL (and the
// failover time with it).
//
// # The at-least-once window
//
// Items are done at least once, never lost, in order per key. What can
// be done twice is what a drain had started but not recorded when it
// stopped holding its queue: for a killed process, every item its step
// had taken (claimed) and not yet recorded; for a drain that stalled past
// LeaseTTL (a paused process, a database that did not answer), the same,
// since its step's Holds check then refuses to record. The next holder
// does those items again. How wide the window is, is the area's step's
// choice: a step that records each item as soon as its effect is known
// (before it starts the next) leaves one item in flight; a step that
// records a batch together leaves the batch. The webhooks area records
// outcomes while it sends (at most 8 waiting for their record), so a kill
// can re-send that many plus the send under way: 1 to 5 a queue in its
// kill test. Each carries the same webhook-id and idempotencyKey, which is
// what receivers deduplicate on.
//
// # Tables
//
// The package owns no tables and has no migration line. Its SQL
// (Table) runs over a queue table the owning area creates, whose name and
// key columns it is given, and the area's Store answers Items over its
// work table (Table.Stuck joins the two for the sweep). The reason is the
// databases already running: the webhooks area's queue rows live in
// webhook_queues (webhooks migration 0004, keyed by webhook_id with a
// foreign key to webhooks), and a table of this package's would need a
// data migration across two migration lines, or would lose the leases
// and flags of drains under way at the upgrade. A queue row is also the
// area's to delete with what it queues. An area's Store implements Store
// (Leases by embedding a Table, Items itself), so a host's own store can
// keep its queues anywhere; TakeOver needs Failover and Owners needs
// Inspector of it, both of which an embedded Table provides (a Store
// without Failover is only swept).
//
// The work table's due items are a predicate (DueItems.Due), or several
// disjoint ones (DueItems.DueSets) that Stuck and OwnersDue read one
// after the other (UNION ALL), each through an index of its own: the
// webhooks' deliveries never attempted and their retries due have a
// partial index each, which SQLite would not use for an OR of the two
// (it scans the table). Sets whose indexes are led by the key
// (DueItems.ByKey, as the webhooks' deliveries are) let Stuck walk each
// index's keys instead (WITH RECURSIVE: one entry per key, then one due
// item looked up per key), so the sweep costs what the queues with work
// do rather than what their backlogs do.
//
// The failover added no column: the holder is written into owner (TEXT
// already), and owners written by older versions (a bare id) read as an
// unknown holder, so processes of both versions can share a database
// during an upgrade. The takeover's read (owner IS NOT NULL AND
// lease_until < now) scans the queue table, one row per key; an area
// with many keys may add, in its own migrations, CREATE INDEX … ON
// <queue table> (lease_until) WHERE owner IS NOT NULL.
package drain
