// Package jsoncanon rewrites JSON text into the form encoding/json writes
// the value it reads from that text: json.Marshal of what json.Unmarshal
// decodes into an any (objects as map[string]any, arrays as []any,
// numbers as float64). Object keys sorted byte-wise, the later of two
// equal keys kept; no white space; strings escaped as json.Marshal escapes
// them (HTML characters, U+2028 and U+2029, control characters); numbers
// as it formats a float64.
//
// It writes without building those Go values (a map per object, a string
// per key and value), which a records list spent a large share of its
// process time on: the list passes each record's stored JSON through to
// its answer, PostgreSQL's jsonb output (keys by length, then bytes; a
// space after each ':' and ','; numbers as stored) as well as SQLite's
// text (already in this form), and the answer stays byte for byte what
// decoding and encoding wrote.
//
// It declines (false) what it is not sure to write as that round trip
// does: malformed JSON, a number out of float64's range, a string that
// package jsondec does not read (a lone surrogate escape, invalid UTF-8),
// nesting deeper than maxDepth. The caller then decodes and encodes,
// whose answer or error stands; the tests compare the two on generated
// and fuzzed input.
package jsoncanon

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/jsondec"
	"github.com/tenantkit/tenantkit/internal/jsonenc"
)

// maxDepth bounds nesting, as in package jsondec; deeper input is the
// caller's to decode.
const maxDepth = 1000

// Member is an object member whose value is JSON in the form this package
// writes (json.Marshal's) already.
type Member struct {
	Key   string
	Value []byte
}

// AppendObject appends the form json.Marshal writes of the object raw
// holds (a JSON object with nothing but white space around it), with
// extra's members in place of raw's of the same keys and beside them
// where raw has none. It sorts extra by key, in place; extra's keys must
// differ. When it declines (ok false) b is returned as it came.
func AppendObject(b []byte, raw string, extra []Member) (_ []byte, ok bool) {
	n := len(b)
	w := writer{src: raw}
	w.space()
	if w.i >= len(raw) || raw[w.i] != '{' {
		return b[:n], false
	}
	slices.SortFunc(extra, func(x, y Member) int { return strings.Compare(x.Key, y.Key) })
	if b, ok = w.object(b, 0, extra); !ok {
		return b[:n], false
	}
	if w.space(); w.i != len(raw) {
		return b[:n], false
	}
	return b, true
}

// writer reads src from i on.
type writer struct {
	src string
	i   int
	// members holds the members of the objects being written, innermost
	// last: each object's are sorted before its values are written.
	members []member
}

// member is a key, decoded, and where its value's text is in src.
type member struct {
	key        string
	start, end int
}

func (w *writer) space() {
	for w.i < len(w.src) {
		switch w.src[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value writes the value at w.i (after white space).
func (w *writer) value(b []byte, depth int) ([]byte, bool) {
	if w.i >= len(w.src) {
		return b, false
	}
	switch c := w.src[w.i]; {
	case c == '{':
		return w.object(b, depth, nil)
	case c == '[':
		return w.array(b, depth)
	case c == '"':
		s, ok := w.string()
		return jsonenc.AppendString(b, s), ok
	case c == '-' || '0' <= c && c <= '9':
		return w.number(b)
	case c == 't':
		return w.literal(b, "true")
	case c == 'f':
		return w.literal(b, "false")
	case c == 'n':
		return w.literal(b, "null")
	}
	return b, false
}

func (w *writer) literal(b []byte, word string) ([]byte, bool) {
	if !strings.HasPrefix(w.src[w.i:], word) {
		return b, false
	}
	w.i += len(word)
	return append(b, word...), true
}

// object writes the object at w.i, its members by key: first each member
// is read, its value skipped, then the values are written in key order
// (extra's among them, in place of the object's of the same keys).
func (w *writer) object(b []byte, depth int, extra []Member) ([]byte, bool) {
	if depth++; depth > maxDepth {
		return b, false
	}
	first := len(w.members)
	defer func() { w.members = w.members[:first] }()
	w.i++ // {
	w.space()
	if w.i < len(w.src) && w.src[w.i] == '}' {
		w.i++
	} else {
		for {
			if w.i >= len(w.src) || w.src[w.i] != '"' {
				return b, false
			}
			key, ok := w.string()
			if !ok {
				return b, false
			}
			w.space()
			if w.i >= len(w.src) || w.src[w.i] != ':' {
				return b, false
			}
			w.i++
			w.space()
			start := w.i
			if !w.skip() {
				return b, false
			}
			w.members = append(w.members, member{key, start, w.i})
			more, ok := w.separator('}')
			if !ok {
				return b, false
			}
			if !more {
				break
			}
		}
	}
	end := w.i
	ms := w.members[first:]
	slices.SortStableFunc(ms, func(x, y member) int { return strings.Compare(x.key, y.key) })
	b = append(b, '{')
	written := 0
	for j, m := range ms {
		for len(extra) > 0 && extra[0].Key < m.key {
			b = appendExtra(b, written, extra[0])
			written, extra = written+1, extra[1:]
		}
		// A value that is not written (an earlier one of equal keys, as a
		// map keeps the later; one of extra's keys, written in its place)
		// is still checked.
		last := j+1 == len(ms) || ms[j+1].key != m.key
		replaced := len(extra) > 0 && extra[0].Key == m.key
		if last && replaced {
			b = appendExtra(b, written, extra[0])
			written, extra = written+1, extra[1:]
		}
		dropped := !last || replaced
		mark := len(b)
		if !dropped {
			b = appendKey(b, written, m.key)
			written++
		}
		w.i = m.start
		var ok bool
		if b, ok = w.value(b, depth); !ok || w.i != m.end {
			return b, false
		}
		if dropped {
			b = b[:mark]
		}
	}
	for _, e := range extra {
		b = appendExtra(b, written, e)
		written++
	}
	w.i = end
	return append(b, '}'), true
}

// appendKey appends a member's key (after a comma unless it is the
// object's first member) and its colon.
func appendKey(b []byte, written int, key string) []byte {
	if written > 0 {
		b = append(b, ',')
	}
	return append(jsonenc.AppendString(b, key), ':')
}

func appendExtra(b []byte, written int, m Member) []byte {
	return append(appendKey(b, written, m.Key), m.Value...)
}

// array writes the array at w.i.
func (w *writer) array(b []byte, depth int) ([]byte, bool) {
	if depth++; depth > maxDepth {
		return b, false
	}
	w.i++ // [
	b = append(b, '[')
	w.space()
	if w.i < len(w.src) && w.src[w.i] == ']' {
		w.i++
		return append(b, ']'), true
	}
	for {
		var ok bool
		if b, ok = w.value(b, depth); !ok {
			return b, false
		}
		more, ok := w.separator(']')
		if !ok {
			return b, false
		}
		if !more {
			return append(b, ']'), true
		}
		b = append(b, ',')
	}
}

// separator reads what follows a member or an element: a comma (more
// follow) or the closing byte.
func (w *writer) separator(closing byte) (more, ok bool) {
	w.space()
	if w.i >= len(w.src) {
		return false, false
	}
	switch w.src[w.i] {
	case ',':
		w.i++
		w.space()
		return true, true
	case closing:
		w.i++
		return false, true
	}
	return false, false
}

// skip moves past the value at w.i without checking it (object writes it
// later, which checks it): a string, an object or array to its closing
// bracket, a scalar to the next delimiter.
func (w *writer) skip() bool {
	if w.i >= len(w.src) {
		return false
	}
	switch w.src[w.i] {
	case '"':
		return w.skipString()
	case '{', '[':
		open := 0
		for w.i < len(w.src) {
			switch w.src[w.i] {
			case '"':
				if !w.skipString() {
					return false
				}
				continue
			case '{', '[':
				open++
			case '}', ']':
				if open--; open == 0 {
					w.i++
					return true
				}
			}
			w.i++
		}
		return false
	}
	for w.i < len(w.src) {
		switch w.src[w.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		w.i++
	}
	return true
}

// skipString moves past the string at w.i.
func (w *writer) skipString() bool {
	for w.i++; w.i < len(w.src); w.i++ {
		switch w.src[w.i] {
		case '\\':
			w.i++
		case '"':
			w.i++
			return true
		}
	}
	return false
}

// string reads the string at w.i, decoded: a slice of src when it has no
// escape, else what jsondec decodes.
func (w *writer) string() (string, bool) {
	start := w.i
	ascii := true
	for w.i++; w.i < len(w.src); w.i++ {
		switch c := w.src[w.i]; {
		case c == '"':
			w.i++
			s := w.src[start+1 : w.i-1]
			return s, ascii || utf8.ValidString(s)
		case c == '\\':
			w.i = start
			if !w.skipString() {
				return "", false
			}
			return jsondec.String([]byte(w.src[start:w.i]))
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// number writes the number at w.i: as it is when json.Marshal would
// write its float64 so (shortest), else parsed and formatted as
// encoding/json does.
func (w *writer) number(b []byte) ([]byte, bool) {
	start := w.i
	if w.src[w.i] == '-' {
		w.i++
	}
	intStart := w.i
	switch {
	case w.i < len(w.src) && w.src[w.i] == '0':
		w.i++
	case w.i < len(w.src) && '1' <= w.src[w.i] && w.src[w.i] <= '9':
		w.digits()
	default:
		return b, false
	}
	intEnd, fracStart := w.i, w.i
	if w.i < len(w.src) && w.src[w.i] == '.' {
		w.i++
		fracStart = w.i
		if !w.digits() {
			return b, false
		}
	}
	fracEnd := w.i
	exp := false
	if w.i < len(w.src) && (w.src[w.i] == 'e' || w.src[w.i] == 'E') {
		exp = true
		w.i++
		if w.i < len(w.src) && (w.src[w.i] == '+' || w.src[w.i] == '-') {
			w.i++
		}
		if !w.digits() {
			return b, false
		}
	}
	text := w.src[start:w.i]
	if !exp && shortest(w.src[intStart:intEnd], w.src[fracStart:fracEnd]) {
		return append(b, text...), true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return b, false // out of float64's range: encoding/json's error
	}
	return jsonenc.AppendFloat(b, f), true
}

// shortest reports whether a number without exponent, of integer digits
// intPart (without leading zeros, or "0") and fraction digits frac, is
// what jsonenc.AppendFloat writes for its float64: at most 15 significant
// digits (so the float64 nearest to it prints back as the same digits,
// the shortest that do), no trailing zero after the point, and zero or of
// magnitude at least 1e-6 (smaller ones are written with an exponent, as
// are those of 1e21 and more, which have over 15 digits).
func shortest(intPart, frac string) bool {
	if len(frac) > 0 && frac[len(frac)-1] == '0' {
		return false
	}
	if intPart != "0" {
		return len(intPart)+len(frac) <= 15
	}
	zeros := len(frac) - len(strings.TrimLeft(frac, "0"))
	return zeros <= 5 && len(frac)-zeros <= 15
}

// digits moves past one or more decimal digits; false if there is none.
func (w *writer) digits() bool {
	start := w.i
	for w.i < len(w.src) && '0' <= w.src[w.i] && w.src[w.i] <= '9' {
		w.i++
	}
	return w.i > start
}
