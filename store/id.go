package store

import "github.com/google/uuid"

// NewID returns a new time-ordered identifier (UUIDv7, canonical text form).
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// IsID reports whether s is a UUID in canonical text form. Use it to answer
// "not found" for malformed ids without a query.
func IsID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}
