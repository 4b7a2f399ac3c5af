// Package store is tenantkit's database layer: one handle over SQLite or
// PostgreSQL, transactions, migrations, tenant scope, domain events and the
// error kinds every area returns.
//
// # Engines
//
// Open takes a URL: "sqlite:PATH", "sqlite::memory:" (modernc.org/sqlite,
// no cgo) or "postgres://…" (a native github.com/jackc/pgx/v5 pool);
// FromPool wraps a pool the host already has. Each engine lives in a
// build-tagged file, so a host can leave one out with the build tag
// tenantkit_nosqlite or tenantkit_nopostgres.
//
// SQLite runs in WAL mode with busy_timeout (set first), foreign keys on
// and synchronous NORMAL. Writes go through a single connection whose
// transactions BEGIN IMMEDIATE, reads through a pool of query-only
// connections; an in-memory database is one shared connection.
//
// A file database copies its write-ahead log back into the database file
// (a checkpoint) from a connection of its own, every 250 ms, in SQLite's
// PASSIVE mode, which never blocks the writer or a reader; SQLite's own
// automatic checkpoint would run on the one writer, after the commit that
// fills the log past 1,000 pages, and hold every write up while it copies
// and syncs. The writer keeps that automatic checkpoint as a backstop, at
// 10,000 pages, for a log the background ones cannot keep short (under a
// steady write load the log does not restart until the writer's own
// checkpoint runs, so the log grows to the backstop, about 40 MiB, before
// it starts over). Durability is unchanged: a commit is in the log when it
// returns; a checkpoint syncs the log before it copies it.
//
// # Connections
//
// On PostgreSQL a DB holds two pgx pools, sized by default from what the
// process runs, so that no setting is needed for a loaded server:
//
//   - The request pool: request handlers, and the queries of job workers'
//     own work (an area's service called from a job). DefaultMaxConns: two
//     connections per CPU this process may use (GOMAXPROCS), at least 4.
//     A query holds its connection for a round trip, during which this
//     process's CPU serves other requests; more connections add
//     PostgreSQL backends (a process each, competing for the cores)
//     without adding throughput, and requests over the pool wait in Go,
//     which costs nothing. Neither requests nor workers (58 in the Kit)
//     are bounded in number otherwise, so the pool is what bounds them.
//     The request pool now has all its connections for requests: before
//     the background pool, pgx's default (the larger of 4 and the CPUs)
//     also held River's listener, a Claim, and River's and the leases'
//     queries. Options.MaxReaders, or pool_max_conns in the URL,
//     overrides it: more where requests spend long in the database
//     (reports) and the server has connections to spare, fewer where
//     max_connections, summed over the processes, is low.
//   - The background pool (DB.Background, DefaultBackgroundConns, 4,
//     opened as used): the job engine's own work, River's listener (which
//     holds one), leader election, the queues' fetches, completions, and
//     the lease renewals and sweeps of package jobs and of the webhook
//     delivery queues (package drain's heartbeats, takeover and sweep),
//     and identity's beats. They run on deadlines (River's leader
//     election gives up after 5 s, a lease after LeaseTTL), so they must
//     never wait behind requests: with one shared pool, requests queueing
//     for it made a soak log 72 leader-election timeouts in 30 minutes,
//     and leases lapse (jobs' TestJobsUnderRequestLoad: 256 requests on a
//     pool of 4 for 20 s, 14 engine errors with one pool, none with two;
//     drain's TestLeaseKeptUnderRequestLoad: a delivery queue's lease
//     taken over with one pool, kept with two).
//     Their queries are short, so they wait for each other a millisecond
//     or so at most. Options.BackgroundConns overrides it; -1 shares the
//     request pool (FromPool: the host's).
//
// Two more connections live outside the pools, one each: the version
// listener (WatchVersions) and a Claim, both held for the process's life.
// So a process uses at most MaxReaders + BackgroundConns + 2 connections
// of the server's max_connections: 10 on two cores. WithLock (migrations,
// the bootstrap, at start) holds one more for as long as its function
// runs, outside the pools too, so that the work under the lock has every
// connection of the request pool: with the lock on a pooled connection, a
// pool of one (pool_max_conns=1) waited for itself in Migrate for ever.
// SQLite has one writer connection and a reader pool (Options.MaxReaders,
// 8); its Background is the DB itself.
//
// # Queries
//
// Store code receives a Querier (*DB or *Tx) and writes each query once,
// with $1…$n placeholders, which both drivers bind by ordinal. The few real
// differences are on Dialect: JSON field access (text, comparable values,
// values bounded for an index, arguments to compare with them, list
// containment, search over an object's values, scalar checks),
// case-insensitive matching (SQLite's lower() folds ASCII only, so SQLite
// gets a registered Go function, tk_fold, with the same mapping as
// PostgreSQL's lower()), how writers meet (SingleWriter, ForUpdate,
// LockForWrites, Notifies), and Classify, the one function per engine that
// turns driver errors into the kinds ErrNotFound, ErrConflict and
// ErrInvalid by error code. No code outside the engines' files compares
// engine names; SQL an area keeps per engine is registered under the
// engine's Dialect value (SQLiteDialect, PostgresDialect). A time that an
// expression computes (MIN, COALESCE) scans into NullTime on both engines
// (SQLite hands it over as text).
//
// DB.Prepare prepares a statement that write transactions run often
// (SQLite parses a long multi-row INSERT for longer than it takes to run
// it); Tx.Exec of the same text then reuses it. PostgreSQL's driver caches
// every statement itself, so there it does nothing. On SQLite, reads (in
// a read transaction, or alone through DB.Query and DB.QueryRow, as a
// records list is) keep every statement text they run (up to 1,024)
// prepared on the reader pool: the first read of a text runs it unprepared and has
// it prepared in the background (preparing on the pool from inside a read
// could wait for a reader while holding one); later reads reuse it, each
// reader connection preparing it once. Parsing was about a third of a
// records list's time. The writer's connections keep every statement text
// they run prepared (up to 512 each, stmtcache.go), whoever runs it: the
// job engine's SQLite driver runs its fetch, a long UPDATE, as text on
// every poll of every queue, and parsing it was 9% of a loaded server's
// CPU. A text run again while rows of it are still being read on the same
// connection gets a statement of its own for that run. SQLite plans a
// LIMIT whose value is a bare parameter with the bound value and prepares
// such a statement again each time that parameter is bound, so every kept
// statement is prepared with its LIMIT and OFFSET parameters written
// +param (sqliteText), which SQLite does not plan with; the areas keep
// writing LIMIT $n, which PostgreSQL gets unchanged.
//
// PostgreSQL may keep a generic plan for a prepared statement (made
// without its values) after five runs; for a read whose right plan
// depends on a value (a tag on a hundred rows or on half of them), the
// caller gives PlanEachRun as its first argument, and the read runs as
// an unnamed statement planned for its values every time (outside a
// transaction; elsewhere PlanEachRun is dropped).
//
// ExecTexts runs a statement whose parameters the caller has already
// written in PostgreSQL's text form, for a statement of many kilobytes of
// parameters run often (the rules' log batch): on PostgreSQL they go to
// the server from the caller's buffer (pgx's ExecStatement on a statement
// prepared once per connection), where Exec copies each into pgx's own
// buffer, which pgx cuts back after every statement and so allocated it
// anew each time. Elsewhere it is Exec with strings.
//
// # Transactions and time
//
// DB.Tx runs a function in a write transaction, retrying a bounded number
// of times on SQLite busy/locked and PostgreSQL serialization or deadlock
// errors, each retry logged at Warn ("store: transaction conflict,
// retrying"). On PostgreSQL the warning carries what the server tells
// the client of the conflict: the relation and tuple it happened on and,
// for a deadlock, which process waited for which (no row values; the
// server's own log has the statements), so that a deadlock in service
// names the table to look at.
//
// Tx.Now is fixed when the transaction begins (UTC, microseconds, the
// precision both engines keep); rows are stamped with it rather than with
// SQL now(). There are no nested transactions: code that composes passes
// the *Tx along.
//
// On PostgreSQL a statement costs the server (and the process) about as
// much in its round trip as in its work for small writes, and more with
// TLS. Tx.ExecLater queues a write whose row count nobody reads; it goes
// to the server in one pipeline (a pgx batch) with the transaction's next
// statement, or before the commit. Decision: its error is that next
// statement's (or the commit's), and the transaction is failed from then
// on, as PostgreSQL has aborted it; so only writes whose failure fails
// the transaction are queued: a batch of records and their value counts,
// and EmitMany's events when there are several (a single event is written
// at once). A group-committed batch of creates is then
// BEGIN, the records with the filterable keys' read, the counts and events
// with the webhooks' read, and COMMIT: four round trips where it was
// seven. SQLite runs a queued statement at once (its statements cost no
// round trip).
//
// A COMMIT sent to PostgreSQL whose answer never comes back (the
// connection broke, or the caller's context ended while it waited) may
// have committed. Decision: Tx reports it as ErrCommitUnknown, does not
// run the function again (nor does a group commit run its batch's items
// again one by one, as it does after a failed batch: they would be
// written twice; a single statement outside a transaction whose answer
// is lost counts the same), and a caller that would undo an effect outside
// the database on failure (attachments discards an upload's stored file)
// keeps it on that error and leaves it to a sweep that reads what did
// commit. pgx marks some such failures "safe to retry" ("conn closed"
// while waiting for the answer), so only a server's answer (a PgError) or
// a failure pgx knows came before sending counts as a known outcome.
//
// # Search totals
//
// A free-text search is a substring match (Dialect.ContainsFold) that no
// index serves, so counting its matches reads every matching row, or
// every row of the tenant for a rare term. Decision: a list with a search
// counts at most SearchTotalCap (10,000) matches (CountCapped,
// CountCappedExpr: a count over "SELECT 1 … LIMIT cap+1"), and CapTotal
// reports more as the cap with a flag the HTTP lists show as
// "totalCapped": true beside the total. Lists without a search keep exact
// totals. Tests lower the cap per context (storetest.WithSearchCap).
//
// A search stays the predicate ContainsFold writes; an area may add an
// index that narrows the rows it reads without changing what it selects.
// The attachments library's file-name search has one (see package
// attachments, "The file-name search's index"): on PostgreSQL a GIN index
// of the pg_trgm extension on lower(col), ContainsFold's own expression,
// beside the tenant (btree_gin), which the planner uses for the predicate
// unchanged (an area's migration that needs an extension creates it, and
// fails naming it when the database refuses); on SQLite an FTS5 table with the trigram tokenizer holding
// tk_fold(col), kept by triggers, that the area's query joins for terms of
// three characters or more. The other searches (rules, rule sets,
// webhooks, toggles, identity's users, records) still read their rows.
//
// # Scope
//
// A Scope (tenant, active organization, readable organizations) travels in
// the context. Service methods read it once with ScopeFrom, which fails
// with ErrNoScope rather than falling back to all tenants, and pass it
// explicitly to store methods, whose SQL starts with the tenant predicate.
//
// # Events
//
// Tx.Emit writes a domain event to store_events in the caller's transaction
// and runs the DB's emit hooks there; the job engine (package jobs) hooks
// in to enqueue one delivery job per subscriber, so subscribers receive
// every committed event at least once, keyed by the event ID, and never an
// event whose transaction rolled back.
//
// The log also has a position per event (EventPosition: the emitting
// transaction's id on PostgreSQL, 0 on SQLite, and a sequence number),
// which ReadEventLog follows in commit order: it returns only events
// below the watermark (PostgreSQL: the oldest transaction still running,
// read in the same statement), so a reader that resumes at its last
// position never skips an event that committed late. DB.WatchEventLog
// wakes such a reader after this process's commits and, once the
// writers called DB.NotifyEventCommits, after other processes' (a
// coalesced pg_notify after the commit, never inside it, so commits do
// not queue on PostgreSQL's notification lock). The events stream
// (package stream) is that reader.
//
// # Across processes
//
// Several processes may share one PostgreSQL database (SQLite is one
// process's). What they share is the database: rows, the migration
// advisory lock, the job engine's tables, and the version counters
// (store_versions) that caches of definitions are kept fresh by. What
// each keeps to itself: its pool, its caches, its OnCommit listeners
// (this process's commits only).
//
// A version bump (Tx.BumpVersion) on PostgreSQL also notifies, in the
// same statement, "name:version" on the channel
// tenantkit_versions:<schema> (a hash of a schema name too long for a
// channel name; pg_notify: delivered to every listener when the
// transaction commits, never when it rolls back). DB.WatchVersions
// subscribes to those notifications: the first subscriber starts one
// goroutine and one connection of the DB's own, outside the pool (so
// count one more connection per process against max_connections, and
// point it at PostgreSQL itself or a session-mode pooler: a
// transaction-mode pooler does not carry LISTEN), reconnecting with
// backoff (immediately, then 100 ms doubling to 5 s) and pinging after
// 15 s of quiet, until Close. Each (re)connection is reported to
// subscribers as ("", 0), since notifications sent while it was down are
// lost; DB.WatchStatus says whether it is listening. internal/vcache
// subscribes its caches: another process's change is served within
// milliseconds while the listener is up (measured p50 0.3–1.7 ms, max
// 2–6 ms over 200 changes between two processes on loopback), and within
// the cache's check interval (the poll, 250 ms in the areas) otherwise:
// the poll is the guarantee, the notification the fast path. A transaction
// that notifies takes PostgreSQL's notification lock at commit (one such
// commit at a time, database-wide), one more reason counters are bumped
// by changes of definitions, not of every row.
//
// # Migrations
//
// Each package owning tables exports a Migrations line with embedded
// sqlite/ and postgres/ files. DB.Migrate applies them in order, one
// transaction per version, recording a checksum in store_migrations and
// refusing to run when an applied file changed; on PostgreSQL it holds an
// advisory lock so several processes can start at once.
//
// Decisions: ids are UUIDv7 text; JSON is JSONB on PostgreSQL and TEXT on
// SQLite and is bound as a string; PostgreSQL's lower() is trusted to fold
// non-ASCII text, which holds for UTF-8 locales (C.UTF-8, en_US.UTF-8) but
// not for the plain "C" locale.
package store
