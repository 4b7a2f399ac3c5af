// Package rules is the business-rules area: rules (a condition and the
// actions its outcome calls for), rule sets (named, ordered groups of
// rules) and their members, executing them, and the execution log.
// Subpackages condition and action parse, validate and evaluate the two
// parts of a rule. Conditions are evaluated by walking their parsed tree:
// compiled to expr-lang/expr programs instead, ten of them took 3.70 µs
// against the tree's 1.79 µs (condition's "Evaluator" section).
//
// A host executes in-process, without HTTP:
//
//	res, err := kit.Rules.ExecuteSet(ctx, "ORDER_APPROVAL", rules.Input{
//		EntityType: "order", EntityID: id, EventType: "beforeUpdate", Data: order})
//	if err == nil && !res.Allowed { … a GUARD blocked … }
//
// # Execution
//
// ExecuteSet runs a set's enabled members by ascending sequence (then
// ruleId); disabled members are not listed. Execute runs the enabled rules
// of an entity type that apply to the event (a rule without an event type
// applies to every event), highest priority first, ties by ruleId (more than
// 100 is refused); rules outside their effective window or of another organization
// than the scope's active one do not apply there. ExecuteRule runs one
// rule whatever its event type.
//
// Each rule's condition is evaluated against the data (a rule whose
// condition cannot be evaluated is ERROR and calls for no actions); its
// outcome calls for the success actions (the condition held) or the
// failure actions. A set member that is disabled, outside its effective
// window, or written for another entity or event type is SKIPPED with a
// reason saying which.
//
// A GUARD blocks when the actions its outcome calls for include
// BLOCK_TRANSITION, passes when they include ALLOW_TRANSITION, and
// otherwise passes when its condition holds; a GUARD that errors blocks.
// A blocking GUARD is FAILURE, the result's Allowed is false, and every
// later rule is SKIPPED ("Previous rule blocked execution"). Other rule
// types never change Allowed: SUCCESS when the condition holds, FAILURE
// when not.
//
// Without DryRun the actions take effect: SET_FIELD sets a field (a dot
// path) in a copy of the data that later rules see and Result.Data returns
// (the caller's map is never modified); NOTIFY and EMIT_EVENT emit
// business_rules.notification.created and business_rules.event.emitted;
// an ERROR emits business_rules.rule.execution_failed; CALL_WEBHOOK
// becomes a durable job (WebhookCall). With DryRun the actions are only
// planned: nothing is written, emitted or sent, and SET_FIELD does not
// change the data.
//
// CALL_WEBHOOK sends JSON with the rule's method and headers through
// internal/netguard: loopback, private and link-local destinations are
// refused (after DNS resolution) unless Options.AllowPrivateURLs,
// redirects are not followed, 15 s per attempt, up to 8 attempts; a 4xx
// other than 408 and 429 is not retried. It is signed by
// Options.Signer: in a Kit, like an outbound webhook delivery
// (Standard Webhooks headers) with the secrets of the tenant's active
// webhook registered for exactly the call's URL, so a receiver verifies
// it as it verifies deliveries, and its secret is managed (rotated,
// masked) through the webhooks API. The webhook-id is the call's
// MessageID, the same on every retry. A call to a URL the tenant has not
// registered goes unsigned (decision: refusing it would break every rule
// written before its target was registered).
//
// # Execution log
//
// A non-dry execution writes one row per evaluated (not skipped) rule:
// the input (the data as that rule saw it, with secrets redacted by
// Redact), the result, conditionResult, the planned and executed actions,
// the time. The rows, events and jobs of an execution commit in one
// transaction, shared with concurrent executions (group commit,
// store.Group: the rows of all the executions that queued up while the
// previous transaction ran are written in multi-row INSERTs), before the
// call returns; should the shared transaction fail, each execution's
// writes are committed alone. An execution is stored as one row (SQLStore):
// what its rules share (entity, event, input, who, when) once, and its
// rule rows as a JSON array in a column of it, in the order they ran; a
// rule row holds its own input only after a SET_FIELD changed the data,
// its output as 1 or 0 when it is a default one (no actions planned: the
// condition held or not), and no error or execution time when it has
// none (a time under a microsecond is 0). Decision: ten such rule rows
// took 1,812 bytes, 770 of them the default output's text, and an
// execution's row of about 2.8 KB filled a 4 KB SQLite page alone; at
// about 2 KB two share a page, and the single writer writes (and
// checkpoints) half the pages per execution (BENCHMARKS.md, "A shorter
// execution log row"). Every read path answers the same text, and rows
// written before read as they were.
// A rule row's id is the execution's with the row's index in its last
// four hex digits, so a logged execution evaluates at most 65,536 rules
// (a larger set is refused, store.ErrInvalid). Decision: one row per
// execution rather than one per rule. Ten rule rows were most of what a
// logged execution cost the single SQLite writer (BENCHMARKS.md); the
// price is that a page filtered by rule id or result expands the
// newest executions' arrays instead of reading an index (its cost
// grows with how rare the rule or result is, not with the log); each
// execution also keeps its rule ids and results as plain text
// (rule_results, "|rule_id:result|" per rule row, the rule id's \, | and
// : escaped), which a LIKE matches first, so only the executions holding
// a match have their JSON parsed, and in which a count counts the
// pattern's occurrences, parsing no JSON at all. The page's query is ordered by execution id alone,
// as the index reads them, and the rows of the page ordered in Go: with
// the rows' index in the ORDER BY too, PostgreSQL's generic plan of the
// prepared statement, blind to a time range's width, expanded and sorted
// the whole range. Totals
// are kept counts (business_rule_log_counts, migrations 0005 and 0006):
// per tenant, organization, entity type, rule id and result, for the
// whole log and for each UTC day and hour, subtracted from by
// DeleteLogsBefore in its transaction (whole days and hours before the
// retention's cut go with it). InsertExecutions adds, in its
// transaction, to an hour's pending counts only (a fourth span); every
// total sums the pending counts of its range beside the others, and
// FoldLogCounts moves pending counts into the whole log's, the day's and
// the hour's rows (deleted and read back in one DELETE … RETURNING, so a
// concurrent write's row is folded or left pending, never lost). The
// service's log writer folds a tenant's pending counts, its current
// hour's included, once a minute per process, after the tenant's first
// logged execution of the minute has committed (it folded once an hour
// until a soak executing 17,000 new rules in half an hour saw the
// unfiltered total read 35, then 222 buffers a call), and
// DeleteLogsBefore folds the hours up to its cut first, so a total reads
// the pending rows of the rules executed in the last minute or two. A
// total not filtered by rule id reads business_rule_log_totals (migration 0013)
// instead of the whole log's, days' and hours' rows: the same counts
// summed over rules, kept by triggers on every change to those spans'
// rows (the fold, retention) in the writing transaction, whatever
// version of the code writes, so that its cost does not grow with the
// rules ever executed (deleted ones included: in a 30-minute soak that
// creates and deletes rules all the while, the unfiltered total went
// from 29 to 718 buffers a call). The pending rows it adds are one per
// rule executed since the last fold. The triggers pass the pending span
// by, so logging an execution writes what it did. Decision: a table of
// its own rather than rows of a reserved rule id in the kept counts,
// which a process of the earlier version would have added into its
// totals during a rolling upgrade. A total filtered by rule id reads
// that rule's kept counts through an index by tenant, rule id, span and
// bucket (migration 0014), rather than walking every rule's rows of the
// span by the primary key (20 → 86 buffers a call over the same soak);
// on SQLite, which without statistics prefers the primary key, the
// statement names the index (INDEXED BY, store.Dialect.IndexedBy). The
// executions' writes add to their pending rows in place, which leaves
// the index alone. Decision: a batch
// of ten rules' executions upserted 30 count rows (whole log, day,
// hour), now 10: on PostgreSQL the upsert of the 30 was about a third of
// the batch statement's time, and the server spends about a quarter less
// per logged execution (BENCHMARKS.md, "Pending hour counts"). A group-committed
// batch sums its count deltas per key in Go before writing them, so a
// count row is written once per batch however many of its executions
// share it. On PostgreSQL the batch's executions and its count deltas are
// one statement (their columns as arrays, unnested; a data-modifying
// WITH), the counts upserted in one key order for every writer, and a
// batch of log rows alone (no events, no webhook calls) runs that
// statement outside a transaction of its own (store.Group's
// SetSingleStatement): the statement is atomic and committed when it
// returns, so BEGIN and COMMIT, two round trips and what the server
// spends on them, bought nothing. The statement's parameters are
// PostgreSQL's text forms written into one buffer, the executions' two
// JSON columns last as one text each, split on U+001F in SQL (JSON text
// never holds it raw; an input that does is refused), and handed to the
// server as they are (store.ExecTexts), from a buffer kept for the next
// batch. Decision: pgx encodes a []string array element by element into
// a buffer it cuts back before every statement, so a batch's 30 KB or so
// of JSON was copied again at each growth of that buffer: about half the
// bytes a logged execution allocated, and the garbage collector a third
// of the process's CPU (BENCHMARKS.md, "Business rules"); each parameter
// as one string still went through that buffer once, and the batch's own
// buffer was made anew (together 14% of the bytes a logged execution
// allocated in BenchmarkExecuteSetHTTP). Decision: an
// execution's results and log rows share their memory where they can
// (the rules' action lists cut from one slice each, capacity capped; the
// log rows' ids parts of one string; an output equal to an earlier
// one of the execution is that string; a SQLite batch's log texts one
// string), and the context names are made only for rules that may read
// them: a logged execution of ten rules allocated about 250 times
// (BENCHMARKS.md, "Fewer allocations per logged execution").
// Decision: an answer is not encoded twice where the log already wrote
// it. The log's input is written in one pass that checks each key and
// value for redaction as it writes them (rather than walking the data
// once to check and again to write); when nothing needed redacting and no
// SET_FIELD changed the data, the data's JSON in it is the answer's, and
// each logged rule's output holds, between its braces, exactly what the
// answer writes of its condition result and actions (a logged rule's
// planned and carried-out actions are never nil).
// Result.AppendReturnedJSON, which the HTTP API answers with, splices
// those in; MarshalJSON and AppendJSON still encode the result's fields,
// so a host that changes a result sees the change. A rule's output is
// not written again when its planned actions hold the same texts,
// booleans and numbers as an earlier rule's of the execution (compared
// before writing, rather than after), and a key's redaction check looks up
// the secret parts by the key's bytes instead of searching for each
// part. With a table lookup per byte in internal/jsonenc's string
// writer, this took about 8% off the standalone server's CPU per logged
// execution on PostgreSQL and 7% on SQLite (BENCHMARKS.md, "The answer
// from the log's JSON"). One batch is
// written at a time on PostgreSQL too, as on SQLite (store.Group's SetRunners(1)). Decision: every batch
// of a tenant's executions of a set upserts the same count rows (10 for
// ten rules), so a second batch written at once waited on their row locks
// until the first committed, and batches half the size upserted them
// twice as often: one at a time, the batches are about twice as large
// and the server spends about a quarter less per execution
// (BENCHMARKS.md, "Business rules"). On SQLite the writer, before each
// batch, lets the goroutines ready to run go first
// (store.Group.SetYieldBeforeBatch), so that executions about to queue
// join the batch. Decision: a SQLite batch's commit costs about ten
// executions' rows (its WAL frames are mostly the pages every batch
// rewrites: the table's and its indexes' last pages, the count rows), and
// under load the machine, not the one writer, is the limit; batches grew
// from about 4 to 9 and the server took about 17% less CPU per logged
// execution (BENCHMARKS.md, "Gathering before a batch"). On PostgreSQL,
// whose batches already gather about 15, it measured no different and is
// not used. The rules column is compressed with
// lz4 rather than pglz on PostgreSQL (migration 0007): ten rules' JSON
// is above the size PostgreSQL compresses, and pglz cost the server
// about twice lz4's time for the same size (BENCHMARKS.md, "Log batches
// without BEGIN and COMMIT"). Decision: the execution's input
// (input_context) is json, not jsonb, on PostgreSQL (migration 0009): no
// query reads into it (no jsonb operator, filter or index; it is read
// back whole), and parsing it into jsonb's binary form cost the server
// three to five times json's check of the same text, 6 to 13 µs an
// execution (BENCHMARKS.md, "The execution's input as json"). json stores the text as written, as
// SQLite does, so both engines answer an execution's input with the keys
// in the order the service wrote them (jsonb sorted them by length and
// spaced them); rows written before the migration keep jsonb's text. On SQLite
// the pending counts of a tenant, organization, entity type and hour are
// written with the four bound once for all the batch's rule ids and
// results (a join with their VALUES): binding eight values per count row was
// most of an upsert's cost to the single writer (BENCHMARKS.md, "Fewer
// statements and bound values for the durable log"). Both counts tables
// are WITHOUT ROWID on SQLite (migration 0011): an upsert seeks and writes
// the primary key's B-tree alone, not the key's index and then the row
// in a rowid table. Decision: one row
// per key, not spread over slots as some kept counts are (store.Counts).
// Two batches of one tenant's executions add to the same rows, so the
// second waits for the first's commit; sampled under load, the count
// statement waited on a lock in 10 of 77 samples, less than the
// slots would add to every total read and to retention. The total of a
// list filtered by any of rule id, result and entity type reads a few
// rows of the whole log's however long the log is; with a time range it
// sums the days and hours wholly inside the range (a date filter's
// range, a day's first to last instant, is only those) and counts the
// executions of the partial hours at its ends, so its cost is bounded by
// the log's rate, not its length (BENCHMARKS.md). Filtered by entity id,
// the page and the total read that entity's executions from the
// (tenant_id, entity_id, id) index: the cost grows with the entity's own
// history, not the tenant's log.
// The execution summary (ExecutionSummary, the dashboards' rule-executions
// widget) reads kept counts too: business_rule_execution_counts (migration
// 0008), per tenant, UTC hour, organization and executed set, the rule
// rows and failures, written with the executions (on PostgreSQL a further
// data-modifying WITH of the batch's statement, which runs after the log
// counts' upsert, so every writer locks the log counts, then these, each
// in key order; on SQLite a multi-row upsert in the batch's transaction)
// and taken from by DeleteLogsBefore as the log counts are. A window
// starting at an hour, as the widget's does, reads a few rows per set and
// hour; one starting inside an hour counts that hour's part from the log.
// Decision: a table of its own rather than the set added to the log
// counts' key, which would multiply their rows by the sets and leave the
// summary to sum per rule and result what it needs per set.
// Decision: counts per rule and result rather than an index over the
// arrays, which neither engine has for a JSON text column without a
// second copy of each rule row. Rows are readable by
// scopes that may read the organization they were written in. An hourly
// job deletes rows older than Options.LogRetention (90 days by default).
//
// # The rules and rule sets lists
//
// Their totals are kept counts too, one row per tenant and combination
// of the filterable fields: business_rule_list_counts (organization,
// type, entity type, event type, category, enabled) and
// business_rule_set_counts (enabled), migration 0006. Table triggers keep
// them in the writing transaction, from the row's old and new values, so
// every write path (and a host's own SQL on these tables) counts. A
// change that moves a rule between two counts takes the rows in key
// order, so concurrent writers never wait on each other crosswise;
// writers of one combination wait on its row until commit, which costs
// nothing at the rate rules and sets are written. Decision: counter rows
// updated in place rather than insert-only delta rows folded later (as
// the webhook deliveries' are): the area has no sweep to fold them, and
// its writes are rare. A total filtered by rule id counts the rule's row
// (a live rule id is unique). Decision: one with a search counts at most
// store.SearchTotalCap (10,000) matches (store.CountCapped stops after
// the cap + 1); when more match, the HTTP list reports 10,000 with
// "totalCapped": true beside the total (absent when exact, so answers
// without a search are unchanged). A substring search has no index to
// count from, so an exact count read every match; a capped one reads at
// most the rows up to the 10,001st match, and all of the tenant's rules
// only for a term that matches fewer. The pages
// are read from an index per order (creation, update, name, priority,
// each then id; sets by creation, then id), so page 1 reads 20 index
// entries of a large tenant, and filtered pages walk that index until
// their rows are found.
//
// Deleted rules stay in business_rules (deleted_at set) for good, so the
// joins from a set's members to their live rules (a set's member count,
// its members, the plan an execution loads) must not read them. On
// PostgreSQL migration 0012 indexes the live rules' ids: without it the
// planner sometimes joined through the primary key in id order (a merge
// join it expected to stop early), and that scan skipped every deleted
// rule between the members and the next live one, more with every
// deletion (a 30-minute soak: 117 to 804 buffers a read in 7 minutes, 4
// once the index was there). TestSetReadsSkipDeletedRules makes the joins
// merge joins and checks that no deleted rule is read. SQLite reaches
// each member's rule by its primary key and needs no such index.
//
// A set's detail (Service.GetSet) is read in one statement, the set's row
// joined with each member the scope may read, rather than in a read
// transaction of two reads (on PostgreSQL four round trips: BEGIN, the
// set, its members, COMMIT); a set none of whose members the scope may
// read is read again alone. Decision: only with the package's own
// SQLStore (a host's store, even one embedding it, may override GetSet or
// ListMembers, and keeps the transaction); the two statements of the
// second case are not one snapshot, which at worst leaves out a member
// added between them (the member count, every organization's, never
// matched the members a scope sees anyway).
//
// # Cached plans
//
// Executions read no rows: sets and entity types are compiled into plans,
// cached per tenant (two internal/vcache caches), and compiled conditions
// are reused by rule id while the rule's updatedAt is unchanged. Every
// change to rules, sets or members bumps the store's version counter
// "rules.definitions" once, in its transaction: this process drops both
// caches' plans when the change commits; other processes on the same
// PostgreSQL database hear of it by notification within milliseconds (the
// counter is also read every 250 ms as a fallback), and an execution that
// is not a dry run never runs rules older than a change that returned
// before it started, through any process. Dry runs may lag by the
// notification's milliseconds.
//
// How, on PostgreSQL, without a read per execution: each Service beats
// once a second in business_rule_servers (migration 0010) with the
// version of the counter its plans have applied (internal/vcache's Acks,
// as identity's revocations and integrations' credentials do), and a
// change to rules, sets or members, once committed, returns only when
// every live process has acknowledged its version (milliseconds while
// notifications flow; at most about 5 s for a process cut off from the
// database, whose lease has lapsed by then). While its lease holds a
// process runs logged executions from its plans without reading the
// counter; without a lease (before its first beat, or cut off) it reads
// the counter before each (vcache's Sync, shared by concurrent
// executions). Decision: the cost moves from every logged execution (a
// statement per few requests, 0.29–0.34 statements a request before,
// 0.11 after; BENCHMARKS.md, "The definitions' version acknowledged") to
// the changes, which are rare and wait for the acknowledgements. On
// SQLite nothing is read or acknowledged: one process owns the database,
// and its own commits drop its plans before they return.
//
// An execution that is not a dry run commits its log through the group
// committer and waits for it; on SQLite, do not run one inside a store
// transaction of your own, which holds the single writer it needs.
//
// # Shape
//
//   - service.go, sets.go, execute.go, effects.go, logs.go: the Service:
//     validation, events, execution and its effects, the execution log's
//     API; plans.go caches plans, commit.go group-commits executions'
//     writes.
//   - store.go: Store, the storage the service needs, in domain terms;
//     every method takes the Querier (database or transaction) the
//     service gives it, so that a change, its version bump and its event
//     commit together. The service never writes SQL.
//   - sql.go: SQLStore, the Store on SQLite and PostgreSQL (one SQL text
//     for both), and the default when Options.Store is nil;
//     sql_postgres.go and sql_sqlite.go hold each engine's own write of
//     the execution log's batches (logWriters).
//   - rulestest: the conformance suite (rulestest.Run) a Store must pass;
//     the SQL store runs it on both engines, and deliberately broken
//     stores prove that it fails where it should.
//
// Decisions of the shape: the store takes the scope (store.Scope) for
// reads that callers make and a bare tenant id for what the tenant as a
// whole reads (plans, member counts, the ruleId check), so that scoping
// is the store's contract and is tested; the group committer keeps its
// batching and events in the service and calls the store only to insert
// the rows; ordering by ruleId is byte order on every store (the SQL store
// sorts in Go, as PostgreSQL's text order follows its collation).
//
// # Scope
//
// Every call reads the tenant from the context's store.Scope. Rules are
// stamped with the scope's organization and readable by scopes that may
// read that organization (a rule without one is the whole tenant's). Rule
// sets and their members belong to the tenant, so over HTTP only a caller
// of the whole tenant (no organization limit) may change them (httpapi's
// tenant-wide rule: 403 requiredScope "tenant"); any caller may execute a
// set, which runs only the member rules the caller may read.
//
// # Decisions
//
//   - A rule's ruleId is unique among the tenant's live rules; a deleted
//     rule frees it. A duplicate is store.ErrConflict ("409 {error}").
//   - PUT replaces every field of a rule (the body is the create body plus
//     id); enabled, priority (0–9999) and version (≥ 1) are required, and
//     conditionExpression and both action lists are validated as packages
//     condition and action describe, with the problem named under the
//     field.
//   - effectiveFrom and effectiveTo accept a date (2025-01-31) or an RFC
//     3339 date-time and are returned as UTC date-times; effectiveTo may
//     not precede effectiveFrom.
//   - Text fields are limited in characters: set id and rule id 50 (a set
//     id is upper-case letters and '_'), names 200, a set's description
//     2000, a rule's description 5000, ruleCategory, entityType and
//     eventType 50; priority is 0 to 9999. NUL
//     characters are refused (PostgreSQL cannot store them), and keys or
//     filters that could not be stored match nothing. version and member
//     sequences fit in 32 bits.
//   - createdBy is the acting user's id ("api_key:<id>" for an API key),
//     from store.Scope.ActorID.
//   - A set id is uppercase letters and underscores (≤ 50); a duplicate is
//     SET_ALREADY_EXISTS (409). A member is added by the rule's business
//     id, with a sequence (≥ 0, required) and enabled (default true).
//     Members of deleted rules disappear from sets and member counts.
//   - Deleting a set with members needs force=true, which detaches them.
//
// # Events
//
// business_rules.rule.created|updated|deleted,
// business_rules.set.created|updated|deleted and
// business_rules.set_member.added|updated|removed, with the tenant, in
// the transaction of the change.
package rules
