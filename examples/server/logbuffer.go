package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Access lines are buffered: the HTTP handler's logger writes through a
// lineBuffer, which gathers lines and writes them out together within
// accessFlushEvery (or at once past accessBufferMax bytes), so that a
// request costs no write system call of its own. A line at WARN or above
// (a 5xx, a recovered panic) is written at once with everything gathered
// before it (flushAtWarn), and shutdown writes the rest. The price: a
// process killed outright loses at most accessFlushEvery of access
// lines; the other logs (start-up, jobs, the server's own) are not
// buffered. Measured on the rule set's dry run over HTTP: the access log
// unbuffered cost 8-25% of the requests a second (BENCHMARKS.md).
const (
	accessFlushEvery = 100 * time.Millisecond
	accessBufferMax  = 64 << 10
)

// lineBuffer gathers writes to w and writes them out together: within
// every of the first write after a flush, when past max bytes, and on
// Flush. Each Write is expected to be whole lines (as slog's handlers
// write), so lines never tear. A write error of w is dropped, as a log
// line that cannot be written has nowhere to be reported.
type lineBuffer struct {
	w     io.Writer
	every time.Duration
	max   int

	mu      sync.Mutex
	buf     []byte
	pending bool // a timed flush is scheduled
	timer   *time.Timer
}

func newLineBuffer(w io.Writer, every time.Duration, max int) *lineBuffer {
	b := &lineBuffer{w: w, every: every, max: max}
	b.timer = time.AfterFunc(time.Hour, func() { b.Flush() })
	b.timer.Stop()
	return b
}

// Write gathers p; it never fails.
func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	switch {
	case len(b.buf) >= b.max:
		b.flushLocked()
	case !b.pending:
		b.pending = true
		b.timer.Reset(b.every)
	}
	return len(p), nil
}

// Flush writes out everything gathered.
func (b *lineBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *lineBuffer) flushLocked() {
	if b.pending {
		b.timer.Stop()
		b.pending = false
	}
	if len(b.buf) == 0 {
		return
	}
	_, _ = b.w.Write(b.buf)
	if cap(b.buf) > 4*b.max { // a burst's buffer is not kept
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
}

// flushAtWarn is a slog.Handler writing through buf that flushes it after
// every record at WARN or above, so that errors are written at once and
// after the lines logged before them.
type flushAtWarn struct {
	slog.Handler
	buf *lineBuffer
}

func (h flushAtWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.buf.Flush()
	}
	return err
}

func (h flushAtWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushAtWarn{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushAtWarn) WithGroup(name string) slog.Handler {
	return flushAtWarn{h.Handler.WithGroup(name), h.buf}
}
