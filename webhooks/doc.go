// Package webhooks is the outbound and inbound webhooks area.
//
// Status: built: outbound endpoints (create, read, update, soft delete,
// list, secret rotation), ordered delivery of domain events with retries,
// test sends, the delivery log, signing of business rules' CALL_WEBHOOK
// calls (SignCall), the inbound receiver, the global switch (SetEnabled;
// Options.Disabled), and the per-tenant switch of outbound webhooks
// (Options.TenantEnabled: the Kit asks the tenant's webhooks_custom
// integration; while it is disabled the tenant's deliveries expire unsent
// and its test sends and retries answer 409 "Custom Webhooks integration
// is disabled"; inbound receivers are server-wide and keep the global
// switch).
//
// # Delivery
//
// RegisterJobs installs a store emit hook: inside every transaction that
// emits a domain event (except the area's own), each active webhook of
// the event's tenant whose patterns match (a webhook of an organization
// only gets that organization's events and the tenant's) gets a pending
// delivery. The deliveries commit or vanish with the event, so no
// committed event is ever without them, and the hook runs once per event
// (a transaction run again starts over), so an event never has two
// deliveries to one webhook.
//
// Each webhook has a delivery queue, drained by one DrainJob at a time
// (on its own job queue, DeliveryQueue). The lease, its heartbeat, the
// wake-up flag, the hand-on, the takeover and the sweep are jobs/drain's,
// over the webhook_queues table; this package adds what a drain does. The
// drain holds a lease on the queue (3 s, renewed every second), claims
// the webhook's due deliveries 50 at a time in order of their events,
// and sends them one after the other, recording their outcomes while it
// goes on sending (see At least once). So:
//
//   - One webhook's deliveries are sent in the order of their events' ids
//     (the order they were emitted in, within a process). Events of
//     transactions committing concurrently can commit out of that order;
//     a delivery committed after the drain has passed its place is sent
//     next, not skipped.
//   - A delivery waiting for a retry does not hold back the webhook's
//     later deliveries: order holds "as far as retries allow".
//   - A delivery of a domain event whose last attempt failed (or whose
//     answer is not retried) emits webhooks.delivery.failed
//     (DeliveryFailed), in the transaction that records the failure, as a
//     webhook disabled by its deliveries emits webhooks.webhook.disabled;
//     the Kit tells the tenant's webhooks.manage holders of both when
//     the custom webhooks integration's notifyAdminsOnFailure is on.
//     Test sends emit neither. Like every webhooks.* event, neither is
//     delivered to webhooks.
//   - Different webhooks drain on different workers: a slow target holds
//     only its own queue. A drain yields its worker after 10 s of sends
//     (queuing a follow-up behind the other webhooks' drains).
//
// New deliveries wake their webhook's queue once the emitting transaction
// has committed: a flag on the queue row, and a drain job when none is
// waiting and no drain holds the lease; a drain that is running sees the
// flag before it lets go. A drain with nothing due asks for the
// webhook's earliest retry to come (Store.NextDue) to know when to wake;
// migration 0009 indexes the deliveries waiting for a retry in retry
// order, so that read takes one index entry however long a failing
// receiver's backlog grows (it sorted the backlog before: 2.5 → 48
// buffers a call in a 30-minute PostgreSQL soak). A delivery enters that
// index when an attempt fails or a retry is asked for, not when it is
// enqueued. Migration 0010 indexes the deliveries never attempted, in
// event order, apart from those retries, in place of the one index of
// every delivery still to send (0004): whether anything is due
// (Store.Due) and the next deliveries to send (Store.ClaimDeliveries)
// read each index up to its first due entries, rather than walking every
// delivery still to send and skipping the retries not yet due (with
// 3,000 such retries a claim read all 3,000 on every wake), and the
// sweeps (Stuck, Owners) read the two sets one after the other
// (drain.DueItems.DueSets). A delivery written costs as many index
// entries as before. Decision: a claim takes the first deliveries in
// event order among the union of both, as the one walk did, so the
// order sent is unchanged, but for one bound: of the retries due, it
// reads the 1,000 that came due first (more are due at once only after
// an outage of the receiver long enough to pile them up; the rest follow
// in the next claims).
//
// # Several processes, and failover
//
// Processes sharing a database share the queues: a webhook's deliveries
// are sent by whichever process's worker picked up its drain, one drain
// at a time. Each process runs the queues' takeover (Start, until Stop;
// the Kit does both): every second (±10%) it hands on each queue whose
// lease has lapsed, so a queue whose drain was killed with its process
// (kill -9, a crash, a lost host) is drained on by another process within
// the rest of the lease (at most 3 s after the drain's last renewal), the
// next takeover round (up to 1.1 s) and the job engine's pickup
// (milliseconds on PostgreSQL): 2.6 to 3.6 s after a SIGKILL in
// TestFailoverKill (PostgreSQL, two processes). Each process also sweeps
// every 15 s (queues with due deliveries and no drain, such as a wake-up
// lost with its process), and so does the periodic SweepJob, kept as the
// net for a process that does not run Start: alone it waits for the job
// engine's leader, which is gone when the killed process was the leader
// (32 to 35 s in the same test before Start ran the takeover). Leases are
// stamped with each process's clock: keep the hosts' clocks within 2 s
// (NTP).
//
// QueueOwners (GET /webhooks/queues in httpapi, for super admins) says
// which process (host:pid:instance) holds which webhook's queue, until
// when, and how many deliveries are due and for how long the oldest has
// been; the takeover logs each queue it hands on (Warn, with the holder
// that lapsed).
//
// The takeover's read of the held queue rows scanned webhook_queues (one
// row per webhook that ever had a delivery, deleted ones included): 1.4
// ms a second per process at 10,000 webhooks, 9.6 ms at 100,000
// (PostgreSQL 15), 5 → 33 buffers a read over a 30-minute soak that
// creates webhooks all along. Migration 0012 indexes the held queues
// (lease_until, where owner is set), so the read follows the queues
// being drained (0.07 ms at 100,000 webhooks). Decision, reversing the
// first one (no index): each lease acquired, renewed or released now
// writes an index entry, and PostgreSQL no longer updates those rows in
// place; that cost follows the drains at work, a few writes a second per
// drain, beside the many each delivery writes, while the scan grew for
// the life of a deployment, in every process, every second.
//
// # At least once
//
// Deliveries are at least once, never lost, in order per webhook. What
// can be sent twice is a send whose outcome was not recorded before its
// drain stopped holding the queue: the queue's next drain sends it again
// (the same attempt, the same webhook-id, the same idempotencyKey). A
// drain records its outcomes while it goes on sending: one record (a
// transaction shared with other drains' records, checking the lease
// first) is under way at a time and takes the outcomes got while the one
// before committed; the sender waits when 8 are waiting. So a drain
// killed leaves unrecorded the send under way and at most 8 before it:
// one or two when the database commits faster than the target answers
// (TestFailoverKill: 3 to 5 duplicates over 3 queues; 60, every send
// since the claim, when a claim's 50 were recorded together). A drain
// that stalled past its lease (a paused process, a database that did not
// answer for 2 s) finds the lease gone at its next record and stops: the
// same at most. A record that fails (the database) ends the drain, whose
// retry sends the unrecorded ones again. Claimed deliveries that were not
// sent are not sent twice: the next drain sends them for the first time.
// Receivers deduplicate on webhook-id (one per delivery) or on the body's
// idempotencyKey (below).
//
// An attempt POSTs (or PUTs or PATCHes) the body {type, timestamp, data,
// idempotencyKey} with content-type application/json, the custom
// headers, and the Standard Webhooks headers: webhook-id (the delivery's
// msg_ id, the same on every attempt), webhook-timestamp and
// webhook-signature (one v1 signature per secret, so both during a
// rotation). idempotencyKey is the event's id: the same for every
// webhook, attempt and resend of the event, so a receiver subscribed
// through several webhooks can drop duplicates too. It goes through
// internal/netguard (non-public addresses refused after DNS resolution
// unless AllowPrivateURLs, IPv6 addresses carrying a non-public IPv4
// address included; no redirects followed), within the webhook's
// timeout. It keeps the status, up to 4096 bytes of the response body,
// up to 50 response headers, and the attempt's duration. An attempt that
// got no response records only a generic error message for the tenant
// (netguard.Reason: "blocked address", "DNS failure", "timeout",
// "connection refused", "TLS failure" or "connection failed"; a non-2xx
// answer records "HTTP <status>"); the error itself, which may name the
// server's resolver or the address a name resolved to, is logged (warn,
// with the delivery and webhook ids).
//
//   - 2xx: delivered; the webhook's consecutive failures go back to 0.
//   - 408, 429, 5xx and network errors: retried after about 5 s, 5 min,
//     30 min, 2 h, 5 h, 10 h, then 14–24 h (±10% jitter), or after
//     Retry-After when a 429 or 503 asks for longer, until maxRetries
//     attempts (at least one) have been made; then failed. A drain job is
//     scheduled for the webhook's earliest retry.
//   - Other 4xx and refused addresses: failed at once. 410 also disables
//     the webhook.
//   - Every failed attempt counts: reaching autoDisableThreshold in a row
//     (0: never) disables the webhook. Disabling emits
//     webhooks.webhook.disabled.
//   - A delivery whose webhook was disabled or deleted before an attempt
//     expires unsent, and so do its webhook's other deliveries still to
//     send (retries included) when its queue is next drained.
//   - rateLimitPerMinute > 0 spaces a webhook's sends
//     (golang.org/x/time/rate, in the process holding the queue's lease,
//     which is the only one sending for that webhook): a wait of up to a
//     second is slept; a longer one ends the drain with a follow-up
//     scheduled for when the next send is allowed. A wait is not an
//     attempt.
//
// Test sends (Test) make one signed attempt at once, outside the queue,
// to an inactive webhook too, without retries and without counting
// against the webhook. Retry gives a failed or expired delivery one more
// attempt with the same message id, through the queue (in its event's
// place).
//
// # Storage
//
// The service keeps its data through a Store (store.go): every operation
// it needs, in domain terms, on the Querier (database or transaction) the
// service passes. SQLStore, over Migrations' tables, is the default on
// both engines; Options.Store takes a host's own, which must pass the
// conformance suite webhookstest.Run.
//
// # The deliveries list and its totals
//
// ListDeliveries returns a page, newest first, and the exact total of
// what the filter selects. The page is read from an index in the list's
// order ((tenant, created_at, id); by webhook, (tenant, webhook,
// created_at, id); by status, (tenant, status, created_at, id); by event
// type, (tenant, event_type, created_at, id), migration 0007), never
// sorted. (By event type it walked the tenant's index until the page was
// full, which for a rare type read most of the tenant's deliveries, and
// PostgreSQL without statistics, as on a server without autovacuum,
// read every delivery of the tenant's webhooks and sorted them: 36 ms at
// 2,500 deliveries a tenant in a 6-minute soak, growing with them.)
//
// Counting the deliveries for every call read them all (at 1,000,000 a
// tenant, seconds on SQLite, about a second on PostgreSQL), so SQLStore
// keeps how many deliveries each webhook has per event type and state,
// as insert-only delta rows (webhook_delivery_counts, migrations 0005
// and 0006). The state is "" for a delivery still to send (pending or
// sending) and otherwise its final status (delivered, failed, expired).
// InsertDeliveries adds one row per webhook, event type and state it
// wrote to (+n) in the caller's transaction; a change of a delivery's
// state (sent, failed, retried, expired) adds a row of -1 for the old
// state and one of +1 for the new, written by a trigger on the status
// column in the changing statement's transaction from the row's old and
// new values (so every write path counts, and concurrent changes of one
// delivery, serialised by its row lock, never count twice). Moving
// between pending and sending, which the drain does on every claim,
// changes no state and writes nothing. A counter row per webhook updated
// by every emitting transaction would make PostgreSQL's writers to a
// webhook wait on each other (its row lock, held to commit); insert rows
// never conflict. The total sums the rows of the webhooks the scope may
// read (of its organizations; a deleted webhook's deliveries stay listed
// and counted), and the periodic SweepJob folds each count's rows into
// one (FoldCounts, Store.FoldDeliveryCounts), so a total reads a few
// rows per webhook, event type and state.
//
// Since migration 0008 the delta rows stay in webhook_delivery_counts
// only until the next fold, and the fold moves them into one row per
// count in webhook_delivery_folded_counts: it deletes a count's deltas
// (DELETE ... RETURNING, so concurrent folds and inserts never lose or
// double a row) and adds their sum to the count's row (an upsert in the
// same transaction; a sum that comes to zero leaves no row). Reads sum
// both tables (the view webhook_delivery_kept_counts). Decision: two
// tables rather than one with a "folded" flag. The fold used to find the
// counts to fold by grouping the whole table once a second, which grew
// with every webhook, event type, state and hour ever counted (12 to 57
// ms a sweep in a 30-minute PostgreSQL soak that creates webhooks all
// along); a partial index of the rows not yet folded fixed that but made
// every emitting transaction write up to two more index entries per
// count row (BenchmarkEmit, 10 webhooks: 20-35% slower on SQLite), while
// the deltas table needs none: it holds a second of writes, and the fold
// reads all of it. The sums' table is written by the fold alone, so its
// index by hour (for the deletion of the hours older than two days)
// costs the writers nothing either.
//
// Deliveries are never deleted today; a retention that deletes them must
// add rows of -n in its transaction.
//
// Since migration 0011 the totals not filtered by webhook read sums by
// organization instead of every webhook's counts, which grew with the
// webhooks ever created, deleted ones included (205 → 446 buffers a call
// over a 30-minute PostgreSQL soak that creates webhooks all along):
// webhook_delivery_totals holds the folded counts by event type and state
// summed by the webhook's organization (the empty text for none), kept by
// triggers on the folded counts in the fold's transaction (so a process
// of an earlier version folding still keeps them), and such a total sums
// the scope's rows of it and the delta rows not yet folded (the view
// webhook_delivery_kept_totals). Writing a delivery costs what it did.
// The fold takes its counts in the order of those shared rows (tenant,
// organization, event type, state), so that folds running at once never
// wait on each other in a cycle. A webhook's organization never changes
// through the store; a trigger moves its sums if a host changes one.
//
// Served from the kept counts: the unfiltered total and every total
// filtered by webhook, event type and status delivered, failed or
// expired, under any scope (by webhook from its counts, otherwise from
// the sums by organization). Counted exactly from the deliveries: the
// totals filtered by status pending or sending (one state in the
// counts), from the status index: they grow with the deliveries still to
// send (the backlog), not with the history. Decision: pending and sending
// share a state because the drain moves deliveries between them on every
// claim and unclaim; counting those changes would add a write to each.
// A page filtered by event type and something else reads one of the two
// indexes until it is full: its cost grows with how rare the combination
// is, not with the deliveries. BENCHMARKS.md ("Webhooks") has the
// figures.
//
// # Delivery health by hour
//
// DeliveryHealth (the dashboards' widget) counts each webhook's
// deliveries of a window by state. Reading every delivery of the window
// grew with them (1.8 s on PostgreSQL and 7.3 s on SQLite for 800,000 in
// the window; 93 ms for a tenant's 9,460 after 6 minutes of the soak),
// so the kept counts also hold, since migration 0007, the deliveries by
// webhook, hour of creation (created_hour, Unix seconds; 0 marks the
// counts by event type above) and state, written with the others: the
// same insert of InsertDeliveries, the same trigger on a change of state
// (four delta rows rather than two), folded by the same sweep. The whole
// hours of a window are summed from them (a few rows per webhook and
// hour); the deliveries before the window's first whole hour are counted
// from the tenant's index, so a window starting at an hour (the widget's:
// the start of the hour 24 hours before the read) reads counts alone, and
// any other start stays exact at the cost of counting its first partial
// hour. The sweep deletes the counts of hours older than 48 hours,
// through their index by hour (so the counts stay a few rows per webhook
// and hour of two days); DeliveryHealth reads those of the last
// 36 hours at most (the difference leaves room for clocks) and counts
// the deliveries of a window's earlier part.
//
// # The webhooks list
//
// Its total without a search is kept in webhook_list_counts (migration
// 0006): one row per tenant, organization and activity, kept by triggers
// on the webhooks table in the writing transaction (webhooks are written
// rarely, so writers of one tenant and organization waiting on its row
// costs nothing; a change moving a webhook between two rows takes them
// in key order). Decision: a search's total counts at most
// store.SearchTotalCap (10,000) matches (store.CountCapped); when more
// match, the HTTP list reports 10,000 with "totalCapped": true beside the
// total, a field absent when the total is exact. A substring search has
// no index to count from; a term matching fewer than 10,001 webhooks
// still reads all the tenant's. The page is read
// from (tenant_id, created_at, id) of the live webhooks, newest first.
//
// # Signing other calls
//
// SignCall signs a request that is not a delivery, a business rule's
// CALL_WEBHOOK, with the secrets of the tenant's oldest active webhook
// registered for exactly its URL (nil headers when there is none: the
// call goes unsigned). The Kit hands the service to the rules area as its
// signer, so a receiver verifies rule calls as it verifies deliveries,
// and rotating that webhook's secret rotates theirs.
//
// # Decisions
//
//   - A signing secret is "whsec_" and the base64 of 32 random bytes. It is
//     stored sealed with the Kit's secret key (internal/secretbox) and
//     shown in plaintext only by Create and RotateSecret; reads show
//     MaskedSecret.
//   - After a rotation the previous secret keeps signing for
//     Options.RotationPeriod (24 hours by default); Secrets leaves it out
//     once that has passed, and an hourly job erases it. Rotating again
//     within the period replaces the previous secret with the one rotated
//     out.
//   - An event pattern is "*", or dot-separated segments of lowercase
//     letters, digits and '_', optionally ending in ".*", which matches
//     every event under that prefix at any depth.
//   - httpMethod is POST (default), PUT or PATCH. Custom headers must be
//     HTTP tokens; names starting "webhook-" and "content-type" are the
//     signature's and the body's and are refused.
//   - Settings: maxRetries 0–30 (10), timeoutMs 1000–60000 (15000),
//     rateLimitPerMinute 0–10000 (0, unlimited), autoDisableThreshold
//     0–1000 (100; 0 never disables).
//   - A target that is plainly not public is refused at create and update
//     (netguard.CheckURL), unless Options.AllowPrivateURLs. The host is
//     first canonicalised as a resolver reads it: IDNA mapping (full-width
//     digits and dots become ASCII), lower case, trailing dots dropped, and
//     a numeric host read in any inet_aton notation (127.1, 0x7f.1,
//     0177.0.0.1, 127.000.000.001 and 2130706433 are all 127.0.0.1; a
//     numeric host that is no IPv4 address is malformed). Refused then: IP
//     literals of private, loopback, link-local and other non-public
//     ranges, IPv6 literals carrying such an IPv4 address (IPv4-mapped,
//     IPv4-compatible, NAT64, 6to4, Teredo; local-use NAT64 always),
//     "localhost", single-label names and .local, .localhost, .internal
//     and .home.arpa names. Other names are not resolved then (a name's
//     addresses can change): deliveries check the address they connect to
//     (internal/netguard).
//   - Update is partial: fields left out keep their value (the body of
//     PUT /webhooks/{id}).
//   - Webhooks are stamped with the scope's organization and readable by
//     scopes that may read it.
//
// # Inbound
//
// AddEndpoint registers an inbound endpoint: an Adapter (verify, parse,
// process) and optionally the tenant its messages belong to. The built-in
// StandardAdapter verifies Standard Webhooks headers with a secret (5
// minutes' tolerance). Receive verifies a request, then stores the message
// keyed by endpoint and message id with its job, in one transaction; a
// message id seen before is a duplicate and is not processed again. The
// job runs the adapter's Process, then marks the message processed and
// emits webhooks.inbound.received {endpointId, messageId, type, payload},
// together, for the host to handle.
//
// # Events
//
// webhooks.webhook.created|updated|deleted|secret_rotated, with the
// webhook (never its secret), in the change's transaction, and
// webhooks.webhook.disabled when deliveries disable one. None of them is
// delivered to webhooks.
package webhooks
