package store

// Dialect holds the few SQL differences between the engines that cannot be
// written once. DDL differences live in per-engine migration files instead.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// JSONText returns an expression for the text value of key in the JSON
	// column col (NULL when absent). key is a trusted identifier.
	JSONText(col, key string) string
	// ContainsFold returns a predicate that holds when col, case-folded,
	// matches the LIKE pattern in placeholder param (built with LikeContains
	// or LikePrefix). It folds non-ASCII letters on both engines.
	ContainsFold(col, param string) string
	// Notifies reports whether the engine wakes listeners on commit
	// (PostgreSQL's LISTEN/NOTIFY); without it, pollers poll more often.
	Notifies() bool
	// Classify maps a driver error to an error kind (ErrNotFound,
	// ErrConflict, ErrInvalid, or retryable), keeping the driver error
	// wrapped. It is the only place driver errors are interpreted, and it
	// reads error codes, never message text.
	Classify(err error) error
}
