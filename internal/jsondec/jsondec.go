// Package jsondec reads a JSON object into map[string]any without
// reflection, exactly as encoding/json's json.Unmarshal does into a
// map[string]any (objects as map[string]any, arrays as []any, numbers as
// float64, the later of two equal keys kept) in one pass, where
// encoding/json makes two (a validity scan, then the decoding) and sets
// every map entry through reflection. It serves the body of a rule
// execution, where decoding was a fifth of a dry run's server time.
//
// It reads only what it is sure to read as encoding/json does and
// reports false for anything else: malformed JSON, a number out of
// float64's range, a lone UTF-16 surrogate escape, invalid UTF-8, nesting
// deeper than maxDepth. The caller then decodes with encoding/json, whose
// value or error is the answer; the tests compare the two on generated
// and fuzzed input.
package jsondec

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting; deeper input is left to encoding/json.
const maxDepth = 1000

// Object decodes b, a JSON object with nothing but white space after
// it. ok is false when b is not one, or not one this package reads; then
// m is nil.
func Object(b []byte) (m map[string]any, ok bool) {
	m, _, ok = object(b)
	return m, ok
}

// ObjectOnce is Object for an object whose top level names each key once:
// it declines one that repeats a key. (Decoding into a struct,
// encoding/json merges two objects given for one map field, where a map
// keeps the later.)
func ObjectOnce(b []byte) (m map[string]any, ok bool) {
	m, members, ok := object(b)
	if !ok || members != len(m) {
		return nil, false
	}
	return m, true
}

// ObjectOnceShared is ObjectOnce making one copy of b, as a string, that
// the decoded strings without escapes are parts of, rather than a copy
// of each: one allocation instead of one per key and string value (a rule
// execution's 20-field entity has 35 or so). Every decoded value then
// keeps the whole of b's copy in memory: for a body that lives as long
// as its request.
func ObjectOnceShared(b []byte) (m map[string]any, ok bool) {
	m, members, ok := objectOf(decoder{b: b, src: string(b), members: make([]member, 0, 32)})
	if !ok || members != len(m) {
		return nil, false
	}
	return m, true
}

// String decodes b, a JSON string with nothing after it, as
// json.Unmarshal does into a string. ok is false when b is not one, or
// not one this package reads (a lone surrogate escape, invalid UTF-8).
func String(b []byte) (s string, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	d := decoder{b: b}
	s, ok = d.string()
	return s, ok && d.i == len(b)
}

// object reads b as Object does and counts its top level's members.
func object(b []byte) (m map[string]any, members int, ok bool) {
	return objectOf(decoder{b: b, members: make([]member, 0, 32)})
}

// objectOf reads d's input as object does.
func objectOf(d decoder) (m map[string]any, members int, ok bool) {
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, 0, false
	}
	v, ok := d.object(0)
	if !ok {
		return nil, 0, false
	}
	d.space()
	if d.i != len(d.b) {
		return nil, 0, false
	}
	return v, d.topMembers, true
}

type decoder struct {
	b []byte
	// src is b as a string (ObjectOnceShared), or "": strings without
	// escapes are then its substrings rather than copies of b's bytes.
	src        string
	i          int
	topMembers int // members read at depth 1
	// members holds the members of the objects being read, innermost
	// last, so that each map is made once at its size rather than grown.
	members []member
}

type member struct {
	key   string
	value any
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads any JSON value at d.i (after white space).
func (d *decoder) value(depth int) (any, bool) {
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		m, ok := d.object(depth)
		return m, ok
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.string()
		return s, ok
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *decoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// object reads {…} at d.i; encoding/json makes a new map for every
// object, even an empty one.
func (d *decoder) object(depth int) (map[string]any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	d.i++ // {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return make(map[string]any), true
	}
	first := len(d.members)
	defer func() { d.members = d.members[:first] }()
	for {
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		d.members = append(d.members, member{k, v})
		more, ok := d.separator('}')
		if !ok {
			return nil, false
		}
		if more {
			continue
		}
		read := d.members[first:]
		if depth == 1 {
			d.topMembers = len(read)
		}
		m := make(map[string]any, len(read))
		for _, kv := range read {
			m[kv.key] = kv.value // the later of equal keys wins
		}
		clear(read) // no references kept past the map
		return m, true
	}
}

// array reads […] at d.i; an empty one is a non-nil []any, as
// encoding/json makes it.
func (d *decoder) array(depth int) (any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	d.i++ // [
	a := make([]any, 0)
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		more, ok := d.separator(']')
		if !ok {
			return nil, false
		}
		if !more {
			return a, true
		}
	}
}

// separator reads what follows a member or an element: a comma (more
// follow) or the closing byte (the object or array ends).
func (d *decoder) separator(closing byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.b) {
		return false, false
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		d.space()
		return true, true
	case closing:
		d.i++
		return false, true
	}
	return false, false
}

// number reads a number with JSON's grammar (-? int frac? exp?) and
// converts it as encoding/json does, with strconv.ParseFloat; out of
// float64's range is encoding/json's error, so not ours to read.
func (d *decoder) number() (any, bool) {
	start := d.i
	if d.b[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == '0':
		d.i++
	case d.i < len(d.b) && '1' <= d.b[d.i] && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

// digits skips one or more decimal digits; false if there is none.
func (d *decoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// string reads "…" at d.i. A string without escapes is one copy of its
// bytes; escapes are decoded as encoding/json does, except a lone
// surrogate (which encoding/json replaces with U+FFFD): not read.
func (d *decoder) string() (string, bool) {
	d.i++ // "
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			if d.src != "" {
				return d.src[start : d.i-1], true
			}
			return string(s), true
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escapedString reads the rest of a string that has an escape at d.i;
// its first d.i-start bytes are plain.
func (d *decoder) escapedString(start int) (string, bool) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		d.i += 2
		switch e := d.b[d.i-1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return "", false
				}
				d.i += 2
				r2, ok := d.hex4()
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape.
func (d *decoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}
