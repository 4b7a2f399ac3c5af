package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// textLines is the server's text handler for the HTTP handler's logger:
// it writes a record whose attributes are all plain values (strings,
// integers, floats, booleans, durations) itself, with the bytes
// slog.TextHandler would write, and hands any other record to a
// slog.TextHandler on the same writer. The access line, one per request,
// is such a record; formatting it through slog's generic handler was a
// tenth of the standalone server's CPU on a cheap read (BENCHMARKS.md,
// "The check's middleware, per request", and "Both engines, every
// scenario, at 115e685" for the server with this handler). TestTextLinesMatchSlog and FuzzTextLines check the
// bytes against slog.TextHandler's.
//
// It has no options beyond the level: no source, no ReplaceAttr. WithAttrs
// and WithGroup return slog's handler, which formats everything.
type textLines struct {
	w     io.Writer
	level slog.Leveler
	slow  slog.Handler // slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	mu    *sync.Mutex  // serializes writes to w, as slog's handler does
}

func newTextLines(w io.Writer, level slog.Leveler) *textLines {
	return &textLines{w: w, level: level, slow: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), mu: new(sync.Mutex)}
}

// Enabled reports whether level is at or above the handler's level.
func (h *textLines) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs returns slog's text handler with attrs.
func (h *textLines) WithAttrs(attrs []slog.Attr) slog.Handler { return h.slow.WithAttrs(attrs) }

// WithGroup returns slog's text handler with the group.
func (h *textLines) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

var textLineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Handle writes r as one line.
func (h *textLines) Handle(ctx context.Context, r slog.Record) error {
	bp := textLineBufs.Get().(*[]byte)
	b, plain := appendTextLine((*bp)[:0], r)
	if !plain {
		textLineBufs.Put(bp)
		return h.slow.Handle(ctx, r)
	}
	h.mu.Lock()
	_, err := h.w.Write(b)
	h.mu.Unlock()
	if cap(b) <= 16<<10 { // a huge line's buffer is not kept
		*bp = b
		textLineBufs.Put(bp)
	}
	return err
}

// plainAttr reports whether a is written by appendTextLine: a non-empty
// key and a value of a kind whose text needs no resolving.
func plainAttr(a slog.Attr) bool {
	if a.Key == "" {
		return false
	}
	switch a.Value.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration:
		return true
	}
	return false
}

// appendTextLine appends r in slog.TextHandler's format: time (when set,
// to the millisecond), level, msg, then each attribute as key=value, a
// value quoted where slog quotes it, and a newline. It reports false,
// having stopped at the first, when r has an attribute that is not plain
// (plainAttr): such a record is slog's to write. One pass over the
// attributes, not a check and then the writing.
func appendTextLine(b []byte, r slog.Record) ([]byte, bool) {
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = appendMillis(b, r.Time)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendTextString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendTextString(b, r.Message)
	plain := true
	r.Attrs(func(a slog.Attr) bool {
		if plain = plainAttr(a); !plain {
			return false
		}
		b = append(b, ' ')
		b = appendTextString(b, a.Key)
		b = append(b, '=')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			b = appendTextString(b, v.String())
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindFloat64:
			b = strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = append(b, v.Duration().String()...)
		}
		return true
	})
	return append(b, '\n'), plain
}

// appendMillis appends t as RFC 3339 with exactly three fractional
// digits, t truncated to the millisecond (slog's text time). The part up
// to the second and the zone are formatted once per second (lastSecond),
// as every line of that second shares them; only the milliseconds are
// written per line.
func appendMillis(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := lastSecond.Load()
	if s == nil || s.unix != sec || s.loc != loc {
		s = formatSecond(t)
		if s == nil { // a year outside 1-9999
			return appendMillisSlow(b, t)
		}
		lastSecond.Store(s)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, s.head...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// formattedSecond is one second of one location, formatted: head is
// "2006-01-02T15:04:05", zone "Z07:00".
type formattedSecond struct {
	unix       int64
	loc        *time.Location
	head, zone string
}

// lastSecond is the second the last line was written in.
var lastSecond atomic.Pointer[formattedSecond]

// formatSecond formats t's second, or returns nil for a year outside
// 1-9999 (before year 1 slog's truncation to the millisecond does not
// floor within the second; past 9999 the text is longer).
func formatSecond(t time.Time) *formattedSecond {
	if y := t.Year(); y < 1 || y > 9999 {
		return nil
	}
	return &formattedSecond{unix: t.Unix(), loc: t.Location(),
		head: t.Format("2006-01-02T15:04:05"), zone: t.Format("Z07:00")}
}

// appendMillisSlow is appendMillis as slog writes it, for any year.
func appendMillisSlow(b []byte, t time.Time) []byte {
	const prefix = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano drops trailing zeros; a tenth of a millisecond more
	// keeps four digits, and the fourth is cut.
	b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefix], b[n+prefix+1:]...)
}

// appendTextString appends s, quoted (strconv.Quote) where slog's text
// handler quotes it: empty, or holding a space, '=', '"', an ASCII
// control character (not DEL), a non-ASCII space or non-printing rune, or
// invalid UTF-8. A string of printable ASCII without '"' or '\\' (a
// route such as "GET /api/x") is quoted by copying it between quotes,
// which is what strconv.Quote writes for it.
func appendTextString(b []byte, s string) []byte {
	quote, plain := textQuoting(s)
	switch {
	case !quote:
		return append(b, s...)
	case plain:
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}

// textQuoting reports whether slog quotes s, and whether s is printable
// ASCII without '"' or '\\' (its quoted form is s between quotes). An
// ASCII byte is looked up in textByte (one load a byte, the line's
// strings being mostly ASCII); any other rune is decoded.
func textQuoting(s string) (quote, plain bool) {
	if s == "" {
		return true, true
	}
	var seen uint8
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			seen |= textByte[c]
			i++
			continue
		}
		seen |= textNotPlain
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true, false
		}
		i += size
	}
	return seen&textQuote != 0, seen&textNotPlain == 0
}

// What an ASCII byte makes of a string in textQuoting: textQuote, slog
// quotes it (a space, '=', '"', a control character other than DEL);
// textNotPlain, its quoted form is not the string between quotes ('"',
// '\\', a control character, DEL).
const (
	textQuote    = 1
	textNotPlain = 2
)

// textByte holds textQuoting's flags of each ASCII byte.
var textByte = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == ' ' || c == '=':
			t[c] = textQuote
		case c < ' ' || c == '"':
			t[c] = textQuote | textNotPlain
		case c == '\\' || c == 0x7f:
			t[c] = textNotPlain
		}
	}
	return t
}()
