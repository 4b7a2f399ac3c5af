// Package stream pushes domain events to clients as they commit: the Go
// API under GET /api/events/stream (httpapi), for hosts that serve the
// same stream their own way (a WebSocket, gRPC).
//
// A Hub follows one database's event log (store_events) and fans the
// events out to Subscriptions. Hub.Subscribe takes the caller's
// identity and a Filter (event patterns, a last event id); Next returns
// the messages: events, a reset, an overflow. The Kit has one Hub
// (Kit.Events).
//
// # What a subscriber receives
//
// Only the event types whose store.EventType has ClientBroadcast set
// (each area flags its own: records, attachments with the extraction's
// outcome, progress jobs, sync runs, payments' status changes), of the
// caller's tenant, of no organization or of one its scope allows
// (store.Scope.AllowsOrganization), of types whose ViewFeature it holds
// (the feature of the area's read routes: entities.records.view,
// attachments.view, progress.view, data_sync.view,
// payment_gateways.view), and matching the filter's patterns (the
// webhooks' syntax and matcher: "*", "entities.record.*"). A type with a
// RecipientField (a notification's "userId") reaches only the session of
// the user its event names, never an API key. The checks run when an
// event is queued for a subscriber and again for every replayed event,
// with the identity of the subscription (a reconnection authenticates
// afresh, so it sees what the caller may see then).
//
// # Ordering: positions, not ids
//
// Event ids are UUIDv7, stamped when emitted; on PostgreSQL concurrent
// transactions commit in any order, so a reader that followed ids could
// pass an id whose event commits afterwards and skip it. The log has a
// position per event instead (store.EventPosition, store migration 3):
// the emitting transaction's id (pg_current_xact_id) and a sequence
// number. A read takes only the events of transactions older than the
// oldest still running (the snapshot's xmin, read in the same
// statement), which have all finished: nothing can later commit below a
// position already read (store.ReadEventLog). SQLite writes one
// transaction at a time, so its AUTOINCREMENT key is in commit order
// already. The cost on PostgreSQL: a transaction that stays open (an
// idle session in a transaction, anywhere on the server) holds back
// delivery, never loses it; the hub reads again 2 ms later, doubling to
// 20 ms, while events are held. The webhooks' per-webhook drains order
// by id "as far as retries allow"; a stream must not skip, hence the
// watermark rather than that mechanism.
//
// A message's id is that position and the event's time in unix
// milliseconds, in fixed-width hex (FormatID): opaque to clients, and
// increasing along a stream, as strings too.
//
// # Delivery across processes
//
// Each process's hub reads the log once for all its subscribers (one
// goroutine, started by the first Subscribe; Close stops it), past the
// last position it read. It is woken by this process's commits
// (store.DB.WatchEventLog) and, on PostgreSQL, by the other processes'
// announcements: every commit that emitted events is announced after it
// commits with a pg_notify on the store's version channel, coalesced to
// one in flight per process (store.DB.NotifyEventCommits, which New
// calls). A lost notification (a listener reconnecting) costs at most the
// poll, once a second. Measured on loopback: see BENCHMARKS.md ("Events
// stream").
//
// # Resuming
//
// Filter.LastEventID (the Last-Event-ID header) replays the tenant's
// events after that position from the log, paged, checking each, then
// passes on live ones; a live event at or before the last one passed on
// is dropped, so each event comes once, in order, across the switch and
// across servers (the position is the database's, not the process's). The
// window is 24 hours (Window): an id whose event is older answers a
// KindReset message first, as does an id that is not one, and the stream
// goes on live. The event log keeps events at least 25 hours
// (jobs.MinEventRetention; Config.EventRetention, 7 days by default):
// the hour more covers an event stamped by a long transaction's start.
// There is no bound in events: a tenant's events of the last 24 hours
// replay, however many.
//
// # Slow clients
//
// A subscription queues at most Options.Buffer (1,000) live messages
// not yet read. One more ends it: Next answers KindOverflow, then
// ErrClosed. Memory per subscriber is bounded by the buffer (queued events
// are shared between subscribers, not copied). The client reconnects with
// its last id and reads the rest from the log. The HTTP route gives
// each write 30 s (a connection that takes nothing for that long is
// closed), sends a comment every 15 s of quiet (Heartbeat), and then also
// checks that the credential still authenticates.
package stream
