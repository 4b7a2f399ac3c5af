// Package jsonenc writes JSON without reflection, byte for byte as
// encoding/json's json.Marshal writes it: object keys sorted byte-wise,
// strings HTML-escaped (<, > and & as \u003c, \u003e and \u0026), U+2028
// and U+2029 escaped, invalid UTF-8 as U+FFFD, numbers as encoding/json
// formats a float64. It serves the hot paths that write decoded JSON
// values (map[string]any and what it holds): records' values and events,
// rule execution results and logs, where reflection and the second pass
// encoding/json makes over a Marshaler's output (compaction) cost a large
// share of a request.
//
// Values of other types than the ones JSON decodes into are handed to
// json.Marshal, so any value writes what json.Marshal writes; the tests
// compare the two on generated values.
package jsonenc

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendObject appends json.Marshal(m).
func AppendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [32]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json's order: byte-wise
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = AppendValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendValue appends json.Marshal(x).
func AppendValue(b []byte, x any) ([]byte, error) {
	switch v := x.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			return AppendFloat(b, v), nil
		}
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []string:
		return AppendStrings(b, v), nil
	case map[string]any:
		return AppendObject(b, v)
	case time.Time:
		return AppendTime(b, v)
	}
	j, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// AppendStrings appends json.Marshal(ss): null for a nil slice.
func AppendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// AppendFloat appends a finite float64 as encoding/json writes it (ES6
// number to string: %f, %e outside [1e-6, 1e21), exponents without
// padding). Infinities and NaN, which JSON cannot hold, are the caller's
// to refuse (AppendValue hands them to json.Marshal, which errs).
func AppendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// safe reports whether encoding/json writes the ASCII byte c as is in a
// string (HTML-escaping, as json.Marshal does).
func safe(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// plain[c] reports whether AppendString copies the byte c as is without
// looking further: a safe ASCII byte. Every other byte (one to escape, or
// part of a multi-byte UTF-8 sequence) takes the careful path. A table
// lookup per byte rather than safe's six comparisons: texts are mostly
// plain, and AppendString writes every key and text of an answer.
var plain = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = safe(byte(c))
	}
	return t
}()

// AppendString appends s as json.Marshal writes a string: quoted, with ",
// \ and control characters escaped, <, > and & as \u003c, \u003e and
// \u0026, U+2028 and U+2029 escaped, and invalid UTF-8 as U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	i := 0
	for i < len(s) && plain[s[i]] {
		i++
	}
	if i == len(s) { // nothing to escape: most texts
		b = append(b, s...)
		return append(b, '"')
	}
	start := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendTime appends t as json.Marshal writes a time.Time (RFC 3339 with
// nanoseconds, trailing zeros dropped).
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
