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
// killed with its process stops renewing its lease; the periodic
// Queues.Sweep restarts every queue with due items and no live lease (or
// a flag older than StaleQueued with no drain taking it). A drain whose
// lease was taken over (it was not renewed in time) sees its context
// cancelled with ErrLeaseLost; the area's step checks Leases.Holds before
// it records anything.
//
// The area decides what an item is, in what order its step takes them
// and when one is due (Items), and enqueues its own job kind (Enqueue),
// whose worker calls Drain with its step.
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
// keep its queues anywhere.
package drain
