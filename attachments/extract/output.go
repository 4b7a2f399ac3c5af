package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// output collects extracted text as Extract returns it, bounded and clean
// while it is written: invalid UTF-8 becomes U+FFFD (one per byte that
// starts no valid sequence), NUL bytes are dropped (and, when strict, every
// other C0 control character but tab and newline), leading and trailing
// white space is never stored, and nothing past max bytes is kept. Once
// nothing more can fit, full is set and writers stop reading.
type output struct {
	b       strings.Builder
	max     int
	strict  bool
	started bool   // a non-space rune has been stored
	skip    bool   // drop white space until the next non-space (after a boundary)
	pending []byte // white space seen since the last non-space rune
	carry   []byte // an incomplete UTF-8 sequence at the end of the last write
	full    bool
}

func newOutput(max int, strict bool) *output {
	return &output{max: max, strict: strict}
}

// writeBytes writes p, which may end inside a UTF-8 sequence: the
// incomplete tail is kept for the next write.
func (o *output) writeBytes(p []byte) {
	if len(o.carry) > 0 {
		p = append(o.carry, p...)
		o.carry = nil
	}
	for len(p) > 0 && !o.full {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n == 1 && !utf8.FullRune(p) {
			o.carry = append([]byte(nil), p...)
			return
		}
		p = p[n:]
		o.rune(r)
	}
}

// writeString writes s, whose invalid bytes become U+FFFD.
func (o *output) writeString(s string) {
	for len(s) > 0 && !o.full {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		o.rune(r)
	}
}

// boundary separates what follows from what precedes by sep, as when
// trimmed parts are joined: white space pending or to come before the next
// non-space rune is dropped. Nothing is added before the first non-space
// rune, and two boundaries in a row give one sep.
func (o *output) boundary(sep string) {
	if !o.started {
		return
	}
	o.pending = append(o.pending[:0], sep...)
	o.skip = true
}

func (o *output) rune(r rune) {
	switch {
	case r == 0:
		return
	case o.strict && r < 0x20 && r != '\t' && r != '\n':
		return
	}
	if unicode.IsSpace(r) {
		if !o.started || o.skip {
			return
		}
		o.pending = utf8.AppendRune(o.pending, r)
		if o.b.Len()+len(o.pending) >= o.max {
			o.full = true
		}
		return
	}
	n := utf8.RuneLen(r)
	if n < 0 {
		r, n = utf8.RuneError, 3
	}
	if o.b.Len()+len(o.pending)+n > o.max {
		o.full = true
		return
	}
	o.b.Write(o.pending)
	o.pending = o.pending[:0]
	o.b.WriteRune(r)
	o.started, o.skip = true, false
	if o.b.Len() >= o.max {
		o.full = true
	}
}

// lastIsSpace reports whether the text so far ends in white space (or is
// empty), so that a writer need not add a separating space.
func (o *output) lastIsSpace() bool {
	if len(o.pending) > 0 || !o.started || o.skip {
		return true
	}
	s := o.b.String()
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(r)
}

// String returns the text: an incomplete UTF-8 sequence left at the end of
// the input counts as invalid bytes.
func (o *output) String() string {
	if len(o.carry) > 0 {
		c := o.carry
		o.carry = nil
		for range c {
			o.rune(utf8.RuneError)
		}
	}
	return o.b.String()
}
