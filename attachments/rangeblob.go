package attachments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// rangeBlob is a Blob over storage that reads byte ranges (SQLBlobs,
// package s3blobs): seeking costs nothing, and reading fetches only from where
// the reader is. A sequential read fetches windows that start at
// firstWindow bytes and double up to maxWindow, so that a range request
// (http.ServeContent seeks to the start, then reads the range's length)
// reads little more than the range from storage, while a whole download
// needs few fetches. Each window streams: nothing is held in memory but
// the fetch's own buffers.
type rangeBlob struct {
	ctx   context.Context
	info  BlobInfo
	fetch RangeFetcher

	pos    int64         // where the next Read reads
	body   io.ReadCloser // the open window, reading at pos; nil when none
	left   int64         // bytes of body not yet read
	window int64         // the next window's length
	closed bool

	blockMu    sync.Mutex // ReadAt's block
	block      []byte
	blockStart int64
}

// RangeFetcher returns a stream of the n bytes from off (n > 0, off+n at
// most the blob's size). A blob replaced or deleted since it was opened is
// an error, never another blob's bytes.
type RangeFetcher func(ctx context.Context, off, n int64) (io.ReadCloser, error)

// Window bounds of rangeBlob's sequential reads.
const (
	firstWindow = 1 << 20
	maxWindow   = 32 << 20
)

// NewRangeBlob returns a Blob of info's size over storage that reads
// byte ranges with fetch (ctx is passed to each fetch): SQLBlobs and
// package s3blobs use it, and so may a host's Blobs. Seeking costs
// nothing; sequential reads fetch windows of 1 MiB doubling up to 32 MiB;
// ReadAt fetches what it asks for (small reads through a 256 KiB block).
func NewRangeBlob(ctx context.Context, info BlobInfo, fetch RangeFetcher) Blob {
	return &rangeBlob{ctx: ctx, info: info, fetch: fetch, window: firstWindow}
}

// Info implements Blob.
func (b *rangeBlob) Info() BlobInfo { return b.info }

// Read implements io.Reader.
func (b *rangeBlob) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errClosedBlob
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.pos >= b.info.Size {
		return 0, io.EOF
	}
	if b.body == nil {
		n := min(b.window, b.info.Size-b.pos)
		body, err := b.fetch(b.ctx, b.pos, n)
		if err != nil {
			return 0, err
		}
		b.body, b.left = body, n
		b.window = min(2*b.window, maxWindow)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.pos += int64(n)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		b.dropBody()
		return n, nil
	case errors.Is(err, io.EOF):
		b.dropBody()
		return n, fmt.Errorf("attachments: blob %q ended early: %w", b.info.Key, io.ErrUnexpectedEOF)
	case err != nil:
		b.dropBody()
		return n, err
	}
	return n, nil
}

// Seek implements io.Seeker. It reads nothing: the next Read fetches
// from the new position.
func (b *rangeBlob) Seek(offset int64, whence int) (int64, error) {
	if b.closed {
		return 0, errClosedBlob
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = b.pos + offset
	case io.SeekEnd:
		abs = b.info.Size + offset
	default:
		return 0, errors.New("attachments: seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("attachments: seek: negative position")
	}
	if abs != b.pos {
		b.dropBody()
		b.window = firstWindow
		b.pos = abs
	}
	return abs, nil
}

// readAtBlock is the unit of ReadAt's small reads: parsers (PDF objects
// through a 4 KiB buffer, zip entries) read a file in many small pieces,
// each of which would otherwise be a request to the store.
const readAtBlock = 256 << 10

// ReadAt implements io.ReaderAt (safe for concurrent use). A read of
// readAtBlock or more is one fetch of exactly those bytes; smaller ones
// are served from the aligned block around them, fetched whole and kept
// until a read needs another block.
func (b *rangeBlob) ReadAt(p []byte, off int64) (int, error) {
	if b.closed {
		return 0, errClosedBlob
	}
	if off < 0 {
		return 0, errors.New("attachments: read at a negative offset")
	}
	if off >= b.info.Size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), b.info.Size-off)
	if want == 0 {
		return 0, nil
	}
	var n int
	var err error
	if want >= readAtBlock {
		n, err = b.fetchFull(p[:want], off)
	} else {
		n, err = b.readBlocks(p[:want], off)
	}
	if err != nil {
		return n, err
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// fetchFull reads exactly len(p) bytes at off with one fetch.
func (b *rangeBlob) fetchFull(p []byte, off int64) (int, error) {
	body, err := b.fetch(b.ctx, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p)
	if err != nil {
		return n, fmt.Errorf("attachments: blob %q ended early: %w", b.info.Key, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// readBlocks fills p from the blocks covering [off, off+len(p)).
func (b *rangeBlob) readBlocks(p []byte, off int64) (int, error) {
	b.blockMu.Lock()
	defer b.blockMu.Unlock()
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		start := pos - pos%readAtBlock
		if b.block == nil || b.blockStart != start {
			size := min(readAtBlock, b.info.Size-start)
			if cap(b.block) < int(size) {
				b.block = make([]byte, readAtBlock)
			}
			b.block = b.block[:size]
			if _, err := b.fetchFull(b.block, start); err != nil {
				b.block = nil
				return n, err
			}
			b.blockStart = start
		}
		n += copy(p[n:], b.block[pos-start:])
	}
	return n, nil
}

// Close implements io.Closer.
func (b *rangeBlob) Close() error {
	b.dropBody()
	b.closed = true
	return nil
}

func (b *rangeBlob) dropBody() {
	if b.body != nil {
		_ = b.body.Close()
		b.body, b.left = nil, 0
	}
}

var errClosedBlob = errors.New("attachments: blob is closed")
