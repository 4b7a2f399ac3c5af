package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// guardedReaderAt is the io.ReaderAt the parsers read the caller's file
// through. Every read first checks ctx, so a parser that cannot be
// interrupted fails at its next read once the deadline has passed; with
// depthGuard set, a read from a call stack deeper than maxReadFrames fails too,
// which turns a parser's unbounded recursion over the file into an error
// before it can overflow the goroutine's stack (a fatal error, not a
// panic). It also records the first error of the file itself (io.EOF
// aside) to tell storage failures from malformed files, and can present
// other bytes for the start of the file (header).
type guardedReaderAt struct {
	r          io.ReaderAt
	ctx        context.Context
	depthGuard bool
	header     []byte

	mu  sync.Mutex
	err error
}

// errTooDeep is the read error of a guardedReaderAt called too deep.
var errTooDeep = errors.New("parser recursion too deep")

func (g *guardedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := g.ctx.Err(); err != nil {
		return 0, err
	}
	if g.depthGuard && stackDeeper() {
		return 0, errTooDeep
	}
	n, err := g.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		g.mu.Lock()
		if g.err == nil {
			g.err = err
		}
		g.mu.Unlock()
	}
	if off < int64(len(g.header)) && n > 0 {
		copy(p[:n], g.header[off:])
	}
	return n, err
}

// ioErr returns the first error the caller's file gave, as a *readError,
// or nil.
func (g *guardedReaderAt) ioErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		return nil
	}
	return &readError{g.err}
}

// maxReadFrames is the call depth past which a guarded read fails. Reads
// of a well-formed PDF happen some 20 to 60 frames deep; the library's
// recursions over a malformed file add frames at every turn.
const maxReadFrames = 400

// stackDeeper reports whether the calling goroutine's stack has more than
// maxReadFrames frames.
func stackDeeper() bool {
	var pcs [maxReadFrames + 1]uintptr
	return runtime.Callers(2, pcs[:]) > maxReadFrames
}

// budget is a number of decompressed bytes shared by the readers that draw
// on it.
type budget struct {
	left, total int64
	what        string
}

func newBudget(total int64, what string) *budget {
	return &budget{left: total, total: total, what: what}
}

func (b *budget) err() error {
	return fmt.Errorf("%w: %s exceeds %d bytes", ErrLimit, b.what, b.total)
}

// budgetReader reads r until its budget is spent (ErrLimit: the bytes past
// it are not returned) and fails once ctx ends.
type budgetReader struct {
	r   io.Reader
	ctx context.Context
	b   *budget
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if err := br.ctx.Err(); err != nil {
		return 0, err
	}
	if br.b.left < 0 {
		return 0, br.b.err()
	}
	if int64(len(p)) > br.b.left+1 {
		p = p[:br.b.left+1]
	}
	n, err := br.r.Read(p)
	br.b.left -= int64(n)
	if br.b.left < 0 {
		return n + int(br.b.left), br.b.err()
	}
	return n, err
}
