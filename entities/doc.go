// Package entities is the custom entities and custom fields area.
//
// It provides custom entities (upsert, soft delete, list, sidebar
// list) and code entities registered by the host; custom field
// definitions across scopes (define, batch with field sets, delete as a
// tombstone, restore, the resolved view, the manage view, a cache kept
// fresh across processes); records (create, batch create, update, soft
// delete, list with filters, sorting, search and export, value validation
// by kind and rule, an index per filterable field, exact totals from kept
// counts); relation options; their routes; a Store interface with the
// SQL store on both engines and its conformance suite (entitiestest).
// Measured in BENCHMARKS.md
// ("Records and entities").
//
// # Entities
//
// An entity id is "module.name" or "module:name": lowercase letters,
// digits and '_' on each side. Both name the same entity; it is stored
// and returned in the dotted form. A custom entity belongs to the
// caller's scope: its organization's when the caller acts in one, the
// tenant's otherwise. A caller sees the tenant's entities and its
// organization's, the organization's winning for the same id. Deleting
// one sets deletedAt (and isActive false); upserting the id again makes
// a new one.
//
// Code entities are entity types defined by the host: it registers
// them with RegisterEntity (process-wide, at start-up,
// next to DefineGlobal for their global fields). Every tenant's list
// shows them with source "code"; a custom entity of the same id, the
// tenant's or an organization's, overrides how one shows (label,
// description, labelField, defaultEditor, showInSidebar) for that scope
// and keeps source "code"; deleting the override shows the code entity
// again. Records of a code entity's id are stored like any other's
// (decision: a host keeping its own tables for such an entity simply does
// not use the records routes for it).
//
// # Definitions and scopes
//
// A field definition lives at one scope: global (tenant_id NULL, made
// by the host through DefineGlobal), a tenant's, or an organization's.
// For a caller in tenant T and organization O the candidates of a key
// are the global row, T's row and O's row; the most specific wins
// (organization over tenant over global), ties going to the newest.
// Definitions with isActive false (not deleted) are not candidates: a
// disabled field lets a wider scope's definition show, and its history
// is kept.
//
// DELETE tombstones the key at the caller's scope: the row stays with
// deletedAt set, and as a candidate it wins like any other, so the key is
// hidden at that scope and in narrower ones that do not define it again.
// A key defined only in a wider scope gets a tombstone row at the
// caller's scope (decision: a tenant deleting a global field hides it for
// itself only). Restore lifts the tombstone: a deleted definition is
// active again, a tombstone-only row goes. Defining a deleted key again
// lifts its tombstone too.
//
// Batch writes an entity's definitions at the caller's scope in the
// given order, configJson.priority being each one's index, and stores
// its field sets and singleFieldsetPerRecord at that scope; keys the
// batch leaves out are kept (decision: a batch adds and updates, and
// DELETE removes).
//
// Kinds: text, multiline, integer, float, boolean, select, currency,
// relation, attachment, dictionary, phone, date, datetime; the aliases
// "string" and "enum" are stored as text and select. Keys are
// snake_case, at most 100 characters. configJson keys the service knows
// are checked (label, description, options, optionsUrl, multi, editor,
// input, filterable, formEditable, listVisible, priority, encrypted,
// relatedEntityId, dictionaryId, dictionaryInlineCreate, validation,
// fieldset, group, defaultValue); others pass through. Normalised: label
// defaults to the key, formEditable and listVisible to true; a currency
// field's options come from /api/currencies/currencies/options; a
// multiline field's editor defaults to markdown; a dictionary field needs
// a dictionaryId. Validation rules: required, date, integer, float, lt,
// lte, gt, gte (numeric param), eq, ne (any param), regex (a pattern that
// compiles, at most 500 characters); at most 32.
//
// # Cache
//
// Resolved definitions are cached per tenant, organization and entity.
// Every change bumps a version counter in its transaction: the process
// that made it drops its cache on commit; on PostgreSQL other processes
// hear of it by notification within milliseconds (store.DB.WatchVersions),
// reading the counter every 250 ms as a fallback. No record write through
// any process validates against definitions older than its start: updates,
// deletes and batch creates read the counter before they validate
// (vcache's Sync); a single create validates against the cache as it
// stands and its shared transaction reads the counter once for its whole
// batch, after the records' INSERT, in the statement that reads the
// filterable keys. A record validated against an older version fails the
// batch, and its create is validated and written again in a transaction of
// its own that reads the counter first; a refusal is checked again against
// the current definitions before it is answered. (Decision: the read
// moved into the batch because each create's own read was a round trip per
// request, a sixth of a create's statements on PostgreSQL.)
//
// # Records
//
// Records of every entity share one table; a record's values are one JSON
// object (JSONB on PostgreSQL) keyed by field key, without the cf_
// prefix (which input may carry). Values are checked against the
// definitions that apply to the caller: an undeclared key is refused
// ("Unknown custom field"); each kind type-checks (kind alone refuses
// "abc" for an integer, with no validation rule needed), and stores its canonical form: numbers
// for integer, float and currency (numeric text accepted), booleans
// (true/false text accepted), dates as YYYY-MM-DD, date-times as RFC
// 3339 in UTC, select values within the options, lists for multi and
// attachment fields. Then the field's validation rules apply, the first
// failing one giving the message. Any failure refuses the whole write,
// naming each field as "cf_<key>". Over HTTP the values come under
// "values", under "customFields" (the shared custom-field convention) or
// as top-level "cf_<key>" keys, merged in that order. Update merges: values given replace
// the stored ones, null clears one, others stay. Reserved keys (id,
// createdAt, …) are dropped from input and cannot be field keys.
//
// Lists filter by id (the common filter; a comma makes it a list, at most
// 100), by search (any value's text contains it, case-folded; booleans
// read true and false on both engines), and with cf_<key>=value (coerced
// by the field's kind; a comma makes it a list), cf_<key>In, and
// cf_<key>Gt|Gte|Lt|Lte for integer, float, currency, date and datetime
// fields; keys without a definition are ignored. Sorting is by id (default; ids this service makes are UUIDv7,
// so creation order), createdAt, updatedAt or any field. A field marked
// filterable gets an expression index, created and dropped with its
// definitions: (tenant, value, id) over the entity's live records
// (json_extract on SQLite, the jsonb value on PostgreSQL). Filters and
// sorting on it read one tenant's matching records only, and an equality
// filter's page in id order reads just that page. A list without a
// filter reads its page from an index in its order too, from either end:
// (tenant, entity, id) by id, and by createdAt or updatedAt the indexes
// of migration 0007, (tenant, entity, created_at or updated_at, id) over
// live records. Page 1 of 1,000,000 records, with its exact total, takes
// under 5 ms in each of these orders on both engines, as at 100,000
// (BENCHMARKS.md, TestRecordsScale), where sorting by a time read every
// record of the entity. (Decision: the two indexes cost record creates
// about a tenth of their throughput on SQLite; a record list's first
// screen is usually sorted by a time, so they are kept. A third, id-order
// index over live records only was measured and dropped: it cost creates
// as much again, and the id order was already within the goal.) The entity id is written
// into the list statement (it is a checked identifier) so that the
// engines can match the indexes' predicate. Creating the index locks the
// table for writes while it builds (PostgreSQL builds it inside the
// definition's transaction, not CONCURRENTLY).
//
// PostgreSQL cannot index an entry of more than about 2,700 bytes, so its
// filterable indexes hold a value only when its jsonb text is at most
// 1,500 bytes, and NULL for a longer one (indexedExpr): any value can be
// written, whoever marked the field filterable (the index of an entity id
// serves every tenant that has it). An equality filter by a value of more
// than 1,000 bytes reads the values themselves, and on PostgreSQL a value
// over 1,500 bytes sorts as if empty. PostgreSQL's indexes are named
// custom_entity_records_k_<md5 prefix>: migration 0003 rebuilt 0002's
// indexes, which held the whole value, under those names.
//
// # Record ids
//
// A record's key is (tenant, id) (migration 0004): ids are unique within
// a tenant, not across tenants. A create may name its id (a UUID); an id
// that a record of another tenant holds is free for the caller, so the
// create succeeds and answers exactly as for an unused id, and nothing
// tells a tenant which ids other tenants use. Only a record of the
// caller's own tenant with that id, deleted or not, of any entity and
// organization, is a conflict (409 "A record with this id already
// exists"). Every read, update and delete names the caller's tenant, so
// two tenants' records of one id never touch. Batch creates always make
// fresh ids. (Decision: the issue also allowed keeping one global key and
// making a fresh id when the requested one belongs to another tenant;
// that answer still differs from a free id's, since the id returned is
// not the one asked for, so it keeps a weaker signal; scoping the key
// removes it, and lookups already filtered by tenant.) Migration 0004
// changes the key in place on PostgreSQL; SQLite cannot, so it rebuilds
// custom_entity_records, and the service makes the filterable indexes
// the rebuild dropped again before its first list (SQLStore.PrepareLists). The
// value counts hold no record ids and need no change.
//
// # Totals
//
// A list's total is exact, but for a search's. Decision: with a search
// (a substring of any value, which no index serves) the total counts at
// most store.SearchTotalCap (10,000) matches, the subquery stopping after
// the cap + 1 (store.CountCappedExpr); when more match, the HTTP list
// reports 10,000 with "totalCapped": true beside the total, a field
// absent when the total is exact. A term that matches fewer still reads
// the entity's records. Counting the matches of a filter costs time in
// proportion to their number, even from an index, and PostgreSQL cannot
// count from an expression index without reading each matching record.
// So the service keeps, for every filterable field, how many live records
// of each tenant hold each scalar value, by organization (table
// custom_entity_value_counts), written in the transaction of every record
// write and rebuilt or dropped with the field's index. A list with one
// equality or In filter on such a field, and no search, takes its total
// from them: a value held by 10,000 records costs what one held by 10
// does. Every live record also counts once under the empty field key
// (migration 0006), so a list with no filter, ids or search, the list
// every client makes first, takes its total from those counts too (a sum
// of a few rows instead of a count of the entity's records: page 1 of
// 20,000 records on SQLite, 5 ms before, 0.55 ms after). Texts over 1,500
// bytes are not counted (the counts' key could not
// hold them); other lists, and filters by such a text, count their
// matches. On PostgreSQL a value's count is
// spread over 8 rows (each transaction adds to one at random), so that
// concurrent writers of one value seldom wait for each other; record
// updates and deletes lock their row, so that concurrent changes of one
// record apply in turn.
//
// A list and its total are one statement: the total (from the counts, or
// counting the matches) is a scalar subquery of the page's SELECT, which
// each row carries, so the page and its total come from one snapshot in
// one round trip, without a transaction (on PostgreSQL four round trips
// before: BEGIN, the total, the page, COMMIT). Only an empty page reads
// its total in a second statement.
//
// On PostgreSQL the list's page size is written into its statement (at
// most 100: a few texts) and page 1 has no OFFSET, so that the server
// keeps one generic plan of it: with a LIMIT or OFFSET parameter it costs
// a generic plan as reading a tenth of the rows and planned every list
// again, most of its CPU per list (BENCHMARKS.md). SQLite keeps both
// parameters (its kept statement plans without their values).
//
// ListRecordsJSON lists as ListRecords does, each record's values left as
// the stored JSON object (ListedRecord.ValuesJSON), for a caller that
// writes them out as JSON: the HTTP list on PostgreSQL spent a quarter
// of its process time decoding 20 records' values into maps only to
// encode them again. The text is the engine's: jsonb's output on
// PostgreSQL (keys by length, then bytes; a space after each ':' and
// ','; numbers as written), json.Marshal's on SQLite; ListedRecord.Decoded
// reads it as ListRecords does. Decision: it is no Store method; only the
// package's own *SQLStore lists so, and a Store of the host's own (even
// one embedding *SQLStore and overriding ListRecords) is listed through
// ListRecords, its values decoded.
//
// # Group commit
//
// Concurrent CreateRecord calls share transactions (store.Group): what
// queued up while a transaction ran is written by the next one with
// multi-row statements (records, counts, events), so many requests pay for
// one commit and one fsync and a few statements. On SQLite, single-record
// updates and deletes share transactions too (store.Batcher); on
// PostgreSQL, whose transactions commit side by side, they run alone (a
// shared one would take several records' count rows in an order a
// concurrent one could reverse). Nothing a caller sees changes: a record,
// its counts and its event commit together; the call returns after that
// commit; a write that fails (a taken record id, a record not found)
// rolls the shared transaction back and is written alone for its own
// answer, while the others commit without it. Values are validated
// before a write joins a batch. On PostgreSQL a batch of creates is
// BEGIN, the records' INSERT (which takes the table lock a definition
// change making a key filterable waits for, or holds), one read of the
// filterable keys and the definitions' version, the webhook subscriptions
// (an emit hook), the value counts, the events, COMMIT.
//
// Relation options page through an entity's records in id order with an
// opaque cursor; the label is labelField's value (the request's, else the
// entity's), else name, title, code or email, else the id.
//
// # Storage
//
// The Service keeps the area's behaviour: validation and normalisation,
// scope resolution of definitions (winners), the definitions cache,
// transactions (on the store.DB it is given) and events. It reads and
// writes through a Store (store.go), an interface in the area's terms:
// entities, definition rows at each scope with their tombstones, field
// settings, records (insert, get, update through a change function,
// soft delete, list with checked filters, sorting, paging and exact
// totals, relation options, and for batch upserts: read and lock a
// batch's records by id, update many at once). Each method takes the store.Querier to run
// on, the Service's transaction for writes, so that a record's write, its
// counts and its event commit together. New uses the SQL store unless
// Options.Store names a host's own (decision: the transaction, the
// version counter and the events stay on store.DB, so a Store is a way
// to lay the data out, not another database).
//
// NewSQLStore serves both engines with one body of SQL. Where the engines
// differ it asks the Querier's store.Dialect (JSON values, bounded index
// values, value parameters, list containment, search over values,
// whether writers are serialised: row locks, the table lock of record
// writes, value-count slots); what differs only in the area's own history
// (the filterable indexes' names and columns, which migration dropped
// them) and the shape of batch statements lives in sql_sqlite.go and
// sql_postgres.go, each registering itself under its store.Dialect value,
// build-tagged like the store's engines. No code compares engine names.
// Batch writes (records, value counts, a batch's id lookup) are a few
// prepared statements of up to 50 rows of anonymous parameters on SQLite,
// and one statement over array parameters on PostgreSQL, so that a batch
// of 1000 records costs a handful of statements, not a few per record.
//
// Package entitiestest is the conformance suite of a Store: Run drives a
// Service over it through every behaviour above (scoping of every read
// and write, tombstones, record ids per tenant, soft delete, filters by
// kind, sorting, paging, totals from counts across writes, concurrent
// updates, batch upserts alone and beside concurrent updates). The SQL
// store runs it on SQLite and PostgreSQL, and entitiestest's own tests
// check that it fails stores broken on purpose (organization scope
// ignored, a delete that keeps its counts, sorting reversed, tombstones
// ignored, a batch update that keeps its counts, a batch lookup that
// leaves deleted records out), each in the subtest meant to catch it.
//
// # Imports
//
// UpsertRecordsTx writes a data sync batch (up to 1000 records) in its
// caller's transaction: one statement reads and locks the tenant's
// records of the batch's ids (Store.LockRecords), new ids are inserted
// and existing records updated in batches (InsertRecords,
// UpdateRecords), their value counts move in one upsert per batch, and
// their events are written together (store.Tx.EmitMany). The batch writes
// as the caller's scope allows, as UpdateRecord does: new records belong
// to the scope's organization, and an existing record (found whatever its
// organization, since its id is taken) is updated only when the scope may
// read its organization (store.Scope.AllowsOrganization). The item of a
// record of any other organization fails with ErrOutsideScope, whether
// the record is live or deleted, so its outcome tells nothing of it.
// A record's data and its event payload are written without reflection
// (jsonenc.go), byte for byte as encoding/json writes them. See BENCHMARKS.md, "Data
// sync".
//
// # Events
//
// entities.entity.created|updated|deleted with the entity,
// entities.definition.created|updated|deleted|restored with the
// definition, and entities.record.created|updated|deleted with the record
// and its values, each carrying tenantId and organizationId (global
// definitions' events have no tenant and reach no webhook).
//
// # A store of your own
//
// A host may keep this area's data elsewhere by passing its own Store; it
// must pass entitiestest.Run. It stays compatible across versions by embedding
// *SQLStore and overriding what it keeps elsewhere: a method added to Store
// is then supplied by the embedded store. Every addition to Store is listed
// in the module's CHANGELOG.md with what it must do.
package entities
