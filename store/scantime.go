package store

import (
	"fmt"
	"time"
)

// NullTime is a scan destination for a time that an expression computes
// (MIN, MAX, COALESCE, a subquery), on both engines: PostgreSQL hands it
// over as a time, SQLite as the text it stores times in (only a column
// declared as a time is read back as one). NULL leaves Valid false. Time
// is in UTC.
type NullTime struct {
	Time  time.Time // the value, in UTC; zero when Valid is false
	Valid bool      // false when the expression was NULL
}

// sqliteTimeLayouts are the text forms of times SQLite holds: the store
// writes the first (see sqliteDSN); the others are what hand-written SQL
// and SQLite's own functions produce.
var sqliteTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02",
}

// Scan implements sql.Scanner (and pgx scans through it too).
func (t *NullTime) Scan(src any) error {
	*t = NullTime{}
	switch v := src.(type) {
	case nil:
		return nil
	case time.Time:
		t.Time, t.Valid = v.UTC(), true
		return nil
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	}
	return fmt.Errorf("store: scan %T as a time", src)
}

func (t *NullTime) parse(s string) error {
	for _, layout := range sqliteTimeLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time, t.Valid = v.UTC(), true
			return nil
		}
	}
	return fmt.Errorf("store: scan %q as a time", s)
}
