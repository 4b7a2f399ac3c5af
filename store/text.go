package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// HasNUL reports whether s holds U+0000, which PostgreSQL cannot store in
// text or JSONB (and SQLite's LIKE stops at). Services refuse such input
// with the field named, and treat such keys as matching nothing, so that
// both engines answer alike.
func HasNUL(s string) bool { return strings.ContainsRune(s, 0) }

// Storable reports whether both engines can store and compare s: valid
// UTF-8 without U+0000. JSON bodies always decode to valid UTF-8; paths and
// query parameters may not, and a key that is not storable matches
// nothing.
func Storable(s string) bool { return utf8.ValidString(s) && !HasNUL(s) }

// JSONHasNUL reports whether any string or object key in the JSON text raw
// holds U+0000. Invalid JSON reports false (its own validation refuses it).
func JSONHasNUL(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`\u0000`)) { // not strings.Contains(string(raw)): a copy
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return valueHasNUL(v)
}

func valueHasNUL(v any) bool {
	switch t := v.(type) {
	case string:
		return HasNUL(t)
	case []any:
		for _, e := range t {
			if valueHasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range t {
			if HasNUL(k) || valueHasNUL(e) {
				return true
			}
		}
	}
	return false
}

// quoteText returns s as an SQL string literal.
func quoteText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
