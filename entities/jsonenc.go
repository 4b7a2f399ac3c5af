package entities

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The JSON of records' values and of their events, written without
// reflection: a batch of 1000 records writes each record's values twice
// (the record's data, its event), which encoding/json spent a tenth of an
// import's time on. The output is byte for byte json.Marshal's (keys
// sorted, strings HTML-escaped, numbers as encoding/json writes them), so
// that stored data and event payloads do not depend on the path that
// wrote them; a value of a type values do not hold is left to
// encoding/json.

// valuesJSON is json.Marshal(values) as a string.
func valuesJSON(values map[string]any) (string, error) {
	b, err := appendValuesJSON(make([]byte, 0, 64+32*len(values)), values)
	return string(b), err
}

// appendValuesJSON appends json.Marshal(values).
func appendValuesJSON(b []byte, values map[string]any) ([]byte, error) {
	if values == nil {
		return append(b, "null"...), nil
	}
	var buf [32]string
	keys := buf[:0]
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json's order: byte-wise
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, values[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONValue appends json.Marshal(x).
func appendJSONValue(b []byte, x any) ([]byte, error) {
	switch v := x.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			return appendJSONFloat(b, v), nil
		}
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
			if b, err = appendJSONValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		return appendValuesJSON(b, v)
	}
	j, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendJSONFloat appends a finite float64 as encoding/json writes it
// (ES6 number to string: %f, %e outside [1e-6, 1e21), exponents without
// padding).
func appendJSONFloat(b []byte, f float64) []byte {
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

// jsonSafe reports whether encoding/json writes the ASCII byte c as is in
// a string (HTML-escaping, as json.Marshal does).
func jsonSafe(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendJSONString appends s as json.Marshal writes a string: quoted,
// with ", \ and control characters escaped, <, > and & as \u003c, \u003e
// and \u0026, U+2028 and U+2029 escaped, and invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe(c) {
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

// appendJSONTime appends t as json.Marshal writes a time.Time.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// recordEventJSON is json.Marshal(eventOf(r)): the record as its events
// carry it, organizationId null for a record of the tenant's own.
func recordEventJSON(r *Record) ([]byte, error) {
	b := make([]byte, 0, 256+32*len(r.Values))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"entityId":`...)
	b = appendJSONString(b, r.EntityID)
	b = append(b, `,"values":`...)
	b, err := appendValuesJSON(b, r.Values)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"tenantId":`...)
	b = appendJSONString(b, r.TenantID)
	b = append(b, `,"createdAt":`...)
	if b, err = appendJSONTime(b, r.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updatedAt":`...)
	if b, err = appendJSONTime(b, r.UpdatedAt); err != nil {
		return nil, err
	}
	if r.DeletedAt != nil {
		b = append(b, `,"deletedAt":`...)
		if b, err = appendJSONTime(b, *r.DeletedAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"organizationId":`...)
	if r.OrganizationID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, r.OrganizationID)
	}
	return append(b, '}'), nil
}
