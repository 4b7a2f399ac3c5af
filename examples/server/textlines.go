package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
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
	plain := true
	r.Attrs(func(a slog.Attr) bool {
		plain = plainAttr(a)
		return plain
	})
	if !plain {
		return h.slow.Handle(ctx, r)
	}
	bp := textLineBufs.Get().(*[]byte)
	b := appendTextLine((*bp)[:0], r)
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
// value quoted where slog quotes it, and a newline.
func appendTextLine(b []byte, r slog.Record) []byte {
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = appendMillis(b, r.Time)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendTextString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendTextString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
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
	return append(b, '\n')
}

// appendMillis appends t as RFC 3339 with exactly three fractional
// digits, t truncated to the millisecond (slog's text time).
func appendMillis(b []byte, t time.Time) []byte {
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
// invalid UTF-8.
func appendTextString(b []byte, s string) []byte {
	if needsTextQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func needsTextQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
