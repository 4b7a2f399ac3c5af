package attachments

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
)

// countingFetcher serves data and counts fetches and bytes fetched.
type countingFetcher struct {
	data         []byte
	mu           sync.Mutex
	calls, bytes int64
}

func (f *countingFetcher) fetch(_ context.Context, off, n int64) (io.ReadCloser, error) {
	f.mu.Lock()
	f.calls++
	f.bytes += n
	f.mu.Unlock()
	return io.NopCloser(bytes.NewReader(f.data[off : off+n])), nil
}

// Small ReadAts in sequence (a parser's) cost one fetch per 256 KiB block,
// not one each; large ones fetch exactly what they ask; the bytes are
// right either way.
func TestRangeBlobReadAtBlocks(t *testing.T) {
	data := make([]byte, 1<<20+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f := &countingFetcher{data: data}
	b := NewRangeBlob(t.Context(), BlobInfo{Key: "k", Size: int64(len(data))}, f.fetch)
	defer b.Close()
	buf := make([]byte, 4096)
	for off := int64(0); off < int64(len(data)); off += 4096 {
		n, err := b.ReadAt(buf, off)
		if err != nil && !(err == io.EOF && off+int64(n) == int64(len(data))) {
			t.Fatalf("ReadAt at %d: %d, %v", off, n, err)
		}
		if !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
			t.Fatalf("ReadAt at %d: wrong bytes", off)
		}
	}
	if f.calls != 5 || f.bytes != int64(len(data)) {
		t.Fatalf("257 sequential 4 KiB reads made %d fetches of %d bytes; want 5 fetches of the file's %d", f.calls, f.bytes, len(data))
	}
	f.calls, f.bytes = 0, 0
	big := make([]byte, 300<<10)
	if n, err := b.ReadAt(big, 1000); err != nil || n != len(big) || !bytes.Equal(big, data[1000:1000+len(big)]) {
		t.Fatalf("large ReadAt: %d, %v", n, err)
	}
	if f.calls != 1 || f.bytes != int64(len(big)) {
		t.Fatalf("a 300 KiB ReadAt made %d fetches of %d bytes; want one of exactly its size", f.calls, f.bytes)
	}
	// Reads spanning two blocks, concurrently.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := make([]byte, 1000)
			off := int64(readAtBlock - 500 + i)
			if n, err := b.ReadAt(p, off); err != nil || n != 1000 || !bytes.Equal(p, data[off:off+1000]) {
				t.Errorf("ReadAt across blocks at %d: %d, %v", off, n, err)
			}
		})
	}
	wg.Wait()
}

// A Range request's read (seek, then the range's length) fetches the
// range, not the rest of the blob.
func TestRangeBlobSeekReadsOnlyTheRange(t *testing.T) {
	data := make([]byte, 64<<20)
	f := &countingFetcher{data: data}
	b := NewRangeBlob(t.Context(), BlobInfo{Key: "k", Size: int64(len(data))}, f.fetch)
	defer b.Close()
	if _, err := b.Seek(10<<20, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, b, 1<<20); err != nil {
		t.Fatal(err)
	}
	if f.bytes > 2<<20 {
		t.Fatalf("reading 1 MiB after a seek fetched %d bytes", f.bytes)
	}
	// Reading on grows the windows: the whole rest in few fetches.
	f.calls = 0
	if _, err := io.Copy(io.Discard, b); err != nil {
		t.Fatal(err)
	}
	if f.calls > 6 {
		t.Fatalf("reading the remaining 53 MiB made %d fetches", f.calls)
	}
}
