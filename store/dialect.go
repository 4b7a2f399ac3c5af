package store

// Dialect holds the few SQL differences between the engines that cannot be
// written once, grouped by concern (Capabilities, Locking, JSONDialect,
// TextMatch) so that each can be read alone; code calls the methods on the
// Dialect itself. DDL differences live in per-engine migration files
// instead.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	Capabilities
	Locking
	Planning
	JSONDialect
	TextMatch
	// Classify maps a driver error to an error kind (ErrNotFound,
	// ErrConflict, ErrInvalid, or retryable), keeping the driver error
	// wrapped. It is the only place driver errors are interpreted, and it
	// reads error codes, never message text.
	Classify(err error) error
}

// Capabilities are what an engine does that changes how code around it
// works: whether commits wake listeners and whether writers run one at a
// time.
type Capabilities interface {
	// Notifies reports whether the engine wakes listeners on commit
	// (PostgreSQL's LISTEN/NOTIFY); without it, pollers poll more often.
	Notifies() bool
	// SingleWriter reports whether write transactions run one at a time
	// (SQLite). Then a row a write reads cannot change before it commits,
	// and rows spread to lessen contention between writers are not needed.
	SingleWriter() bool
}

// Planning holds what a statement tells an engine's planner where the
// planner cannot tell on its own.
type Planning interface {
	// IndexedBy returns table, for a FROM clause, read through the index
	// named: SQLite's "table INDEXED BY index", for a read whose best
	// index SQLite cannot tell without statistics (which tenantkit does
	// not gather), and which fails rather than read otherwise; table
	// alone on PostgreSQL, whose planner chooses from its statistics.
	IndexedBy(table, index string) string
	// SubqueryFence is the clause a subquery in a FROM clause ends with so
	// that the planner plans it on its own, for all its rows, rather than
	// merge it into the statement around it: PostgreSQL's " OFFSET 0",
	// for a page taken from matches the planner would take for dense
	// (planned for the page, it reads in the page's order, testing each
	// row); "" on SQLite, where the statement's CROSS JOIN order holds
	// either way.
	SubqueryFence() string
}

// Locking holds the clauses and statements that lock rows or tables for
// a transaction's writes, empty where writers are serialised anyway.
type Locking interface {
	// ForUpdate is the clause a SELECT ends with to lock the rows it reads
	// until the transaction ends (" FOR UPDATE"), or "" where writers are
	// serialised anyway.
	ForUpdate() string
	// LockForWrites returns a statement taking, in a transaction, the
	// lock on table that its row writes take (so that a transaction
	// holding a conflicting lock, such as CREATE INDEX, is waited for), or
	// "" where writers are serialised anyway.
	LockForWrites(table string) string
}

// JSONDialect builds the SQL that reads JSON columns: values, their text,
// list membership and array elements.
type JSONDialect interface {
	// JSONText returns an expression for the text value of key in the JSON
	// column col (NULL when absent). key is a trusted identifier.
	JSONText(col, key string) string
	// JSONValue returns an expression for the JSON value of key in the
	// JSON column col (NULL when absent), in the engine's own comparison
	// and sort order for JSON values: SQLite's json_extract (numbers
	// compare as numbers, text as text), PostgreSQL's jsonb value (numbers
	// numerically, strings as text). Compare it with JSONValueArg's
	// argument. key is a trusted identifier.
	JSONValue(col, key string) string
	// BoundedJSONValue is JSONValue as an index key: where index entries
	// are bounded in size (PostgreSQL, about 2,700 bytes), it is NULL for
	// a value whose JSON text is longer than maxBytes, so that any value
	// can be written under the index; elsewhere it is JSONValue.
	BoundedJSONValue(col, key string, maxBytes int) string
	// JSONValueArg returns x (a decoded JSON scalar: string, float64,
	// bool) as the argument to compare with JSONValue, and the text to
	// write right after its placeholder (a cast, or ""). On SQLite a
	// whole float64 that fits in 64 bits becomes an int64, as json_extract
	// reads it.
	JSONValueArg(x any) (arg any, cast string)
	// JSONListHas returns a predicate that holds when the JSON list at key
	// of col holds x, and the argument to bind at param.
	JSONListHas(col, key, param string, x any) (pred string, arg any)
	// JSONValuesContainFold returns a predicate that holds when one of the
	// values of the JSON object in col (not its keys; lists and objects
	// as their JSON text, booleans as true and false), case-folded,
	// matches the LIKE pattern in param (see ContainsFold).
	JSONValuesContainFold(col, param string) string
	// JSONScalar returns a predicate that holds when the value at key of
	// col is a number, a boolean, or a text of at most maxText bytes.
	JSONScalar(col, key string, maxText int) string
	// JSONArrayElements returns a table expression, to follow CROSS JOIN,
	// of the elements of the JSON array array: its columns are value (the
	// element, on which ->> reads members) and key (its index, from 0).
	JSONArrayElements(array string) string
}

// TextMatch builds case-insensitive text predicates.
type TextMatch interface {
	// ContainsFold returns a predicate that holds when col, case-folded,
	// matches the LIKE pattern in placeholder param (built with LikeContains
	// or LikePrefix). It folds non-ASCII letters on both engines.
	ContainsFold(col, param string) string
}
