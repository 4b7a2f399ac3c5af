// Package payments is the payment gateways area: payment sessions through
// a provider, capture, refund, cancel, status, and the providers' inbound
// webhooks, for each tenant.
//
// Status: built: the Service (sessions, capture, refund, cancel, status,
// transaction lists with refunds and webhook history), the Store and its
// SQL implementation on SQLite and PostgreSQL, the mock providers, the
// durable webhook intake and its processing job. The Stripe provider lives
// in the subpackage stripeprovider (the Kit registers it).
//
// # Model
//
// A Transaction is one payment session at one Provider. Its id (the API's
// transactionId) names it in every later call; sessionId is the
// provider's own id. Amounts are exact: the API's decimal numbers are read
// as decimals, never through float64, and stored as integers in the
// currency's minor units (MinorUnits: 2 for most currencies, 0 for JPY,
// 3 for KWD), so 0.1 + 0.2 is 0.3. An amount with more decimal places than
// its currency allows is refused.
//
// Transactions are stamped with the caller's tenant and active
// organization and read through store.Scope like every organization-scoped
// area: another tenant's (or an organization the caller may not read)
// transaction is 404, exactly as one that does not exist.
//
// # Statuses
//
// The unified statuses are pending, authorized, captured,
// partially_captured, refunded, partially_refunded, cancelled, failed,
// expired and unknown. One function, Decide, decides every status change,
// whether a caller's action, a provider's answer or a webhook caused it:
//
//	pending            → authorized, captured, failed, expired, cancelled
//	authorized         → captured, partially_captured, cancelled, failed
//	captured           → refunded, partially_refunded
//	partially_captured → captured, refunded, partially_refunded, cancelled
//	partially_refunded → refunded
//
// refunded, cancelled, failed and expired are terminal; unknown moves
// nowhere (a provider status the area does not know changes nothing). A
// move the table does not allow is ignored, never an error: a late
// "authorized" webhook after a capture leaves the payment captured.
//
// Allows decides which action a status admits: capture from pending,
// authorized or partially_captured (and from captured, where it repeats
// the answer and calls nothing); refund from captured, partially_captured
// and partially_refunded; cancel from pending and authorized only (a
// cancel of a partially captured payment would strand the captured part,
// which no refund could return; a provider may still report it).
// Anything else is a *StatusConflictError, shown as
// 409 `Cannot <action> a payment in status "<status>"`.
//
// # Actions
//
// Capture without an amount captures what is left; with one, at most what
// is left (more is 409), and a capture of part of the payment leaves it
// partially_captured. Refund without an amount refunds what is left of
// the captured amount; with one, at most that (more is 409); the payment
// is partially_refunded until its refunds add up to what was captured,
// then refunded. The refund answer's refundedAmount is that refund's
// amount; the transaction's refundedAmount is the total.
//
// Actions on one payment are serialised: within a process by a lock per
// payment, and on PostgreSQL, where several processes share the
// database, by the payment's row lock (SELECT … FOR UPDATE) held through
// the provider call. On SQLite (one process) the provider call happens
// outside any transaction, so a slow provider never holds the database's
// single writer. So 100 concurrent partial refunds never refund more than
// was captured. Each provider call carries an idempotency key (the
// payment, the action and the operationId when given), so a provider that
// honours keys (Stripe) never acts twice for one operation.
//
// Refresh (POST /payment_gateways/status, payment_gateways.manage) asks
// the provider for the payment's state and applies it as a webhook would,
// for hosts that poll after the customer's confirmation. GET /status
// reads the stored payment, kept current by webhooks and refreshes.
//
// operationId: an action sent with an operationId keeps its answer with
// the change, in one transaction. The same operationId on the same
// payment again returns that answer and changes nothing (even if the
// payment changed since); used for another action it is 409. Different
// operationIds are different operations: two equal partial refunds with
// two ids are both applied.
//
// # Events
//
// Every change emits its event in the transaction that makes it, so
// outbound webhooks deliver each exactly when it commits:
// payment_gateways.session.created for every session, then one event per
// status change: payment.authorized, payment.captured (also for
// partially_captured), payment.failed, payment.refunded (also for
// partially_refunded), payment.cancelled, and session.expired. A session
// the provider confirms at once (the mock providers) emits session.created
// and its status's event together. A replayed operation or an ignored
// webhook emits nothing. The payload holds the ids, status,
// previousStatus, amounts and currency.
//
// # Providers
//
// A Provider talks to one gateway; the Registry holds them by key, and a
// host adds its own with Register. Built in: "mock" (confirms at once:
// captured, or authorized with captureMethod manual), "mock_processing"
// (every session stays pending until a webhook moves it), which a nil
// Options.Providers holds, and "stripe" (package stripeprovider, with
// stripe-go), a plug-in: a host registers it, or opens its Kit with
// package full, which does (decision: the Stripe client is heavy code that
// a host without Stripe need not link, so neither this package nor
// package tenantkit imports it). A provider error is
// logged in full and answered 502 with a vague message; ErrDeclined (a
// refusal the caller should see) is 409 with the provider's message;
// ErrNotConfigured (missing credentials) is 422.
//
// Credentials come from a CredentialSource, per tenant and provider. The
// default, EnvCredentials, reads the environment for every tenant:
// STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET, and
// MOCK_GATEWAY_WEBHOOK_SECRET for both mock providers. Fallback layers a
// tenant's stored credentials over the environment. There is no built-in
// development secret: without a webhookSecret no mock webhook verifies.
//
// # Webhooks
//
// Receive (POST /payment_gateways/webhook/{provider}) reads which session
// the body names (Provider.WebhookSessionID), finds that session's
// payments and verifies the signature with each one's tenant's
// credentials: the tenant whose secret verifies it owns it, so a webhook
// signed with one tenant's secret never moves another tenant's payment.
// The two mock providers share one webhook format and secret, so each
// one's route takes both's webhooks (WebhookSharer); no other provider's
// route reaches another provider's sessions. An unknown provider is
// ErrUnknownProvider (404); a body the provider
// cannot read, an unknown session or a bad signature is ErrVerification
// (401, one message for all, so the answer tells nothing about which
// sessions exist).
//
// A verified webhook is stored with its processing job in one
// transaction (group-committed with concurrent webhooks, store.Batcher)
// before the 202: nothing acknowledged is lost, and a restart resumes
// processing. Webhooks are deduplicated on (tenant, provider,
// idempotencyKey): a duplicate is answered 202 and neither stored again
// nor processed again. The key is the provider's (the mock's id, Stripe's
// event id), or the body's SHA-256 when it has none.
//
// The job (ApplyWebhook) locks the payment, maps the provider status
// (Provider.MapStatus) and applies it through Decide, with the amounts it
// implies (a capture without an amount is of the whole payment, a refund
// without one of everything captured), then records in the webhook's
// history entry the mapped status, the statuses before and after and the
// outcome: applied, or ignored when the move is not allowed. The mock's
// data.amount, when present, is in minor units, as Stripe's are.
//
// # Routes
//
// httpapi serves the Service under /payment_gateways: sessions (422 with
// {error: "Invalid payload", details} naming each bad field, or with "No
// gateway adapter for provider: <key>"), capture, refund, cancel, status
// (400 for a missing or malformed transactionId), transactions (paged,
// newest first, status and providerKey filters), transactions/{id} (with
// refunds and webhooks), providers, and the webhook receiver (no
// credential; 60 requests a minute per provider and client address).
//
// # Known limits
//
//   - Several processes on one SQLite file are not supported (the
//     per-payment lock is in-process); use PostgreSQL to scale out.
//   - On SQLite a webhook applied between an action's check and its
//     commit can leave the action unrecorded although the provider acted
//     (answered 409 "The payment changed while it was refunded"); the
//     webhook history and the provider still show it.
//   - The mock providers keep no state of their own: Status reports
//     unknown, which changes nothing.
//
// # Integration log
//
// With Options.IntegrationLog set (the Kit sets it), every status change
// of a payment writes an info line (code status_changed, the transaction
// as entity, from and to as payload) in the change's transaction, and a
// failed provider call an error line (code provider_error, without the
// provider's own words), under the provider's gateway integration
// (gateway_mock, gateway_stripe).
//
// # Sessions: one shared transaction, a few statements
//
// CreateSession validates, reads the tenant's credentials and calls the
// provider outside any database transaction, then hands the new
// transaction to a group commit (store.Group, writeSessions): concurrent
// sessions of any tenants are written in one database transaction, with
// one write of their rows and list counts (SQLStore.InsertTransactions:
// on PostgreSQL one statement over array parameters, elsewhere multi-row
// INSERTs and one counts upsert) and one insert of all their events, the
// shape of the records area's creates. A session is answered only once
// that transaction committed its row and its events. When a batch fails,
// each session is written again alone, so only the faulty one fails.
// Decision: another Store (a host's, which may embed SQLStore and
// override InsertTransaction) is written one transaction at a time
// through InsertTransaction, never through SQLStore's batch write behind
// its back. Before, each session ran its own insert, counts upsert and
// events insert in the shared transaction (store.Batcher), and 0003's
// trigger per row: about 4 statements a session on PostgreSQL against
// about 1.2 since (BENCHMARKS.md, Payments). The Kit's credentials come
// from the integrations area's cache, which reads nothing per call while
// its process's lease holds (integrations' doc, "Credentials
// acknowledged"), and the events' payloads, the JSON columns and the
// answer are written without reflection (internal/jsonenc, byte for byte
// what encoding/json wrote): about 0.6 statements a session on
// PostgreSQL, fewer than a records create, and a fifth less CPU.
//
// # Mock session ids
//
// The mock providers' session ids are "mock_pi_" and 16 hex digits, as
// they always were, but no longer 64 random bits: the first 28 bits are
// the Unix millisecond (they wrap every 3.1 days), the other 36 random.
// Decision: on SQLite a random key's insert lands on any page of the
// index by provider and session, so each session of a shared transaction
// dirtied a page of its own, and a transaction whose insert split a page
// inside the index made SQLite scan its whole page cache (64 MiB on the
// writer) at the commit (the split renumbers pages through the lock-byte
// page's number, past the file's end, and the commit drops every cached
// page past the end by walking all of them): that scan alone was a fifth of a session's time
// in the single writer once the cache was full, as it is after a load of
// records creates (BENCHMARKS.md, Payments, "Mock session ids in time
// order"). Ids made close in time land on the last page of the index.
// Repeats: two ids can only meet within one millisecond of a 3.1-day
// cycle, on 36 random bits; at a steady 20,000 sessions a second about
// once in 4 days, the rate random 64-bit ids reach after a day and a half
// of that load. A real provider's ids (Stripe's) are the provider's.
//
// # The transactions list's totals
//
// ListTransactions returns a page, newest first, and the exact total.
// SQLStore keeps how many transactions each tenant has per organization,
// status and provider (store.Counts, migration 0002), written by
// InsertTransaction and UpdateTransaction: a status change moves the
// transaction from the old status's count to the new one's. The old
// status is the one LockTransaction read (or InsertTransaction wrote) in
// the same database transaction, remembered by the Transaction it
// returned; otherwise UpdateTransaction reads the stored one, locking the
// row. Every total the list offers (unfiltered, by status, by provider,
// by both) sums a few count rows of the organizations the scope reads;
// the pages are read from indexes by status and by provider in list
// order.
//
// # The summary by hour
//
// Summary (the dashboards' payments widget: the last 24 hours) read
// every transaction of its window, growing with them. SQLStore keeps, by
// tenant, organization, hour of creation, currency and status, how many
// transactions there are and their captured sum (payment_summary_hours,
// migration 0003), spread over slots like the list's counts (all the
// writes of one connection on its slot, so that two transactions never
// take each other's in opposite orders). Triggers on
// payment_transactions write them in the writing transaction from the
// row's old and new values (an insert, a change of status or captured
// amount, a delete), so every write path counts. On PostgreSQL inserts
// are counted once per INSERT statement (migration 0004: a statement
// trigger over the statement's transition table, one upsert per count it
// touches, in key order), not once per row: with autovacuum off the row
// trigger's in-place update of a count for every transaction left as many
// dead row versions, which the summary's read stepped over (it grew 4.3×
// from 100,000 to 1,000,000 transactions; flat since). SQLite updates a
// row in place and has no statement triggers: its row trigger stays. Summarize sums the counts of the window's
// whole hours and counts the transactions of its first, partial hour
// from the tenant's index: a window starting at an hour (the widget's)
// reads counts alone, any other stays exact. Counts are kept for every
// hour (Summary from the zero time sums them all); they are a few rows
// per tenant and hour with transactions.
//
// Every writer takes the two kinds of count in one order: the list's
// (payment_transaction_counts), then the summary's. New transactions do
// so by construction on PostgreSQL (one statement upserts the list's
// counts; its statement trigger, which runs at the statement's end, the
// summary's); UpdateTransaction moves the list's counts before it
// updates the row (whose trigger moves the summary's). It did the
// reverse until a soak's deadlock named the two tables (PostgreSQL
// detects one after deadlock_timeout, a second, and the store runs the
// transaction again): TestStatusChangesBesideNewSessionsDoNotDeadlock
// provokes it, 5 deadlocks in 5 s with the reverse order, none since.
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass paymentstest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package payments
