package store

import (
	"time"

	"github.com/google/uuid"
)

// NewID returns a new time-ordered identifier (UUIDv7, canonical text form).
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// NewIDWithTime returns a NewID and the instant its timestamp encodes
// (UUIDv7 keeps the millisecond and, in google/uuid, 256 ns steps below
// it). A row stamped with that instant sorts by id exactly as by time, so
// a time cut through IDTimeBound and one through the stamp agree.
func NewIDWithTime() (string, time.Time) {
	u := uuid.Must(uuid.NewV7())
	var ms int64
	for i := range 6 {
		ms = ms<<8 | int64(u[i])
	}
	sub := int64(u[6]&0x0F)<<8 | int64(u[7]) // google/uuid's (ns within the ms) >> 8
	return u.String(), time.UnixMilli(ms).Add(time.Duration(sub << 8))
}

// NewIDAt returns a new UUIDv7 whose timestamp is t's millisecond rather
// than the clock's, so that rows made for one moment share a time prefix
// (and sort, by id, with that moment). The other bits are random, as in
// NewID.
func NewIDAt(t time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// IDTimeBound returns the smallest UUIDv7 of t's millisecond: every id made
// (by NewID or NewIDAt) before that millisecond is below it in text order.
func IDTimeBound(t time.Time) string {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6], u[8] = 0x70, 0x80 // version 7, RFC 4122 variant
	return u.String()
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
