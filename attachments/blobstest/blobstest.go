// Package blobstest is the conformance suite for attachments.Blobs
// implementations: Run checks what the attachments Service relies on from
// its file storage, as documented on attachments.Blobs: a Put's bytes
// come back whole (Open, Stat, List), a second Put replaces them, a
// failed Put stores nothing and keeps what was there, a reader of a
// blob replaced meanwhile reads the old bytes or fails, seeking and
// ReadAt read any range (also through http.ServeContent, as the file
// routes serve), Delete removes (a missing key is no error), a missing
// key is fs.ErrNotExist, a key outside the service's alphabet is
// store.ErrInvalid, List filters by prefix, and a large upload streams
// without being held in memory whole.
//
// The package's own stores run it (attachments/blobs_conformance_test.go:
// FSBlobs, MemBlobs, SQLBlobs on SQLite and PostgreSQL, s3blobs.Blobs against a
// local S3 server); a host that plugs in its own Blobs runs it too:
//
//	func TestMyBlobs(t *testing.T) {
//		blobstest.Run(t, func(t *testing.T) attachments.Blobs { return myblobs.New(...) }, blobstest.Options{})
//	}
//
// newBlobs may return the same storage for every call: each subtest uses
// keys under a fresh random first segment. Subtests run in parallel,
// except the large upload, which runs alone after them (it measures the
// heap).
package blobstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
)

// Options adapt the suite to a store.
type Options struct {
	// HoldsInMemory skips the check that a large upload is not held in
	// memory whole (MemBlobs holds everything).
	HoldsInMemory bool
	// LargeSize is the size of the large upload (64 MiB when 0).
	LargeSize int64
}

// Run runs the suite; newBlobs is called once per subtest.
func Run(t *testing.T, newBlobs func(t *testing.T) attachments.Blobs, opts Options) {
	t.Helper()
	t.Run("group", func(t *testing.T) {
		for _, c := range []struct {
			name string
			test func(*testing.T, attachments.Blobs, string)
		}{
			{"PutOpenStat", testPutOpenStat},
			{"Empty", testEmpty},
			{"Overwrite", testOverwrite},
			{"Ranges", testRanges},
			{"ServeContentRange", testServeContentRange},
			{"Delete", testDelete},
			{"List", testList},
			{"Missing", testMissing},
			{"BadKeys", testBadKeys},
			{"FailedPut", testFailedPut},
			{"ReplacedWhileRead", testReplacedWhileRead},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.test(t, newBlobs(t), newPrefix())
			})
		}
	})
	t.Run("LargeStreamingPut", func(t *testing.T) {
		testLarge(t, newBlobs(t), newPrefix(), opts)
	})
}

// newPrefix is a fresh first key segment.
func newPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bt" + hex.EncodeToString(b[:]) + "/"
}

// pattern returns n deterministic, incompressible-looking bytes seeded by
// seed.
func pattern(seed string, n int) []byte {
	out := make([]byte, 0, n+32)
	sum := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

func readAll(t *testing.T, b attachments.Blobs, key string) []byte {
	t.Helper()
	r, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return data
}

func put(t *testing.T, b attachments.Blobs, key string, data []byte) {
	t.Helper()
	n, err := b.Put(t.Context(), key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if n != int64(len(data)) {
		t.Fatalf("Put(%q) = %d bytes, want %d", key, n, len(data))
	}
}

// streamOf hides a reader's other methods (a seeker's size), as an
// upload's body does.
type streamOf struct{ r io.Reader }

func (s streamOf) Read(p []byte) (int, error) { return s.r.Read(p) }

func testPutOpenStat(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	before := time.Now().Add(-time.Minute) // stores' clocks may differ a little
	data := pattern("put", 3000)
	// A stream of unknown size, as an upload's body.
	n, err := b.Put(ctx, p+"a/original", streamOf{bytes.NewReader(data)})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put = %d, %v; want %d, nil", n, err, len(data))
	}
	if got := readAll(t, b, p+"a/original"); !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes back, not the %d put", len(got), len(data))
	}
	r, err := b.Open(ctx, p+"a/original")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info := r.Info()
	if info.Key != p+"a/original" || info.Size != int64(len(data)) || info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Open's Info = %+v", info)
	}
	st, err := b.Stat(ctx, p+"a/original")
	if err != nil || st.Key != info.Key || st.Size != info.Size {
		t.Fatalf("Stat = %+v, %v; want %+v", st, err, info)
	}
}

func testEmpty(t *testing.T, b attachments.Blobs, p string) {
	put(t, b, p+"e", nil)
	if got := readAll(t, b, p+"e"); len(got) != 0 {
		t.Fatalf("empty blob read %d bytes", len(got))
	}
	st, err := b.Stat(t.Context(), p+"e")
	if err != nil || st.Size != 0 {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
}

func testOverwrite(t *testing.T, b attachments.Blobs, p string) {
	key := p + "x/original"
	put(t, b, key, pattern("first", 2<<20+5)) // several chunks or parts
	second := pattern("second", 1000)
	put(t, b, key, second)
	if got := readAll(t, b, key); !bytes.Equal(got, second) {
		t.Fatalf("after overwrite read %d bytes, want the second put's %d", len(got), len(second))
	}
	list, err := b.List(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != key || list[0].Size != int64(len(second)) {
		t.Fatalf("List after overwrite = %+v", list)
	}
}

func testRanges(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	const size = 3<<20 + 123 // crosses 1 MiB boundaries
	data := pattern("ranges", size)
	key := p + "r/original"
	put(t, b, key, data)
	r, err := b.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if end, err := r.Seek(0, io.SeekEnd); err != nil || end != size {
		t.Fatalf("Seek(0, End) = %d, %v; want %d", end, err, size)
	}
	for _, rg := range [][2]int64{{0, 10}, {1<<20 - 7, 20}, {size - 5, 5}, {12345, 2<<20 + 99}, {0, size}} {
		off, n := rg[0], rg[1]
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("reading %d bytes at %d: %v", n, off, err)
		}
		if !bytes.Equal(got, data[off:off+n]) {
			t.Fatalf("%d bytes at %d differ", n, off)
		}
		buf := make([]byte, n)
		if m, err := r.ReadAt(buf, off); m != int(n) || (err != nil && !(err == io.EOF && off+n == size)) || !bytes.Equal(buf, data[off:off+n]) {
			t.Fatalf("ReadAt(%d bytes, %d) = %d, %v", n, off, m, err)
		}
	}
	// Reading on from a position, then at the end.
	if _, err := r.Seek(-100, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[size-100:]) {
		t.Fatalf("read to the end: %d bytes, %v", len(rest), err)
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v; want 0, EOF", n, err)
	}
	// ReadAt past the end: what there is, and io.EOF.
	buf := make([]byte, 50)
	if n, err := r.ReadAt(buf, size-20); n != 20 || err != io.EOF || !bytes.Equal(buf[:20], data[size-20:]) {
		t.Fatalf("ReadAt over the end = %d, %v; want 20, EOF", n, err)
	}
	if n, err := r.ReadAt(buf, size+10); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt after the end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("Seek to a negative position succeeded")
	}
}

func testServeContentRange(t *testing.T, b attachments.Blobs, p string) {
	const size = 2<<20 + 17
	data := pattern("serve", size)
	key := p + "s/original"
	put(t, b, key, data)
	for _, c := range []struct {
		header     string
		status     int
		start, end int64 // of the body in data
	}{
		{"", http.StatusOK, 0, size},
		{"bytes=0-99", http.StatusPartialContent, 0, 100},
		{"bytes=1048570-1048600", http.StatusPartialContent, 1048570, 1048601},
		{"bytes=-10", http.StatusPartialContent, size - 10, size},
		{"bytes=2097000-", http.StatusPartialContent, 2097000, size},
	} {
		r, err := b.Open(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/f", nil)
		if c.header != "" {
			req.Header.Set("Range", c.header)
		}
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(rec, req, "", time.Time{}, r)
		r.Close()
		if rec.Code != c.status || !bytes.Equal(rec.Body.Bytes(), data[c.start:c.end]) {
			t.Fatalf("Range %q: %d with %d bytes; want %d with bytes %d-%d", c.header, rec.Code, rec.Body.Len(), c.status, c.start, c.end)
		}
	}
}

func testDelete(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	put(t, b, p+"d/original", []byte("bye"))
	put(t, b, p+"d/thumbs/1x1-cover", []byte("stays"))
	if err := b.Delete(ctx, p+"d/original"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, p+"d/original"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open after Delete: %v, want fs.ErrNotExist", err)
	}
	if _, err := b.Stat(ctx, p+"d/original"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after Delete: %v, want fs.ErrNotExist", err)
	}
	if err := b.Delete(ctx, p+"d/original"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if got := readAll(t, b, p+"d/thumbs/1x1-cover"); string(got) != "stays" {
		t.Fatalf("a sibling after Delete: %q", got)
	}
}

func keys(list []attachments.BlobInfo) []string {
	var out []string
	for _, i := range list {
		out = append(out, i.Key)
	}
	slices.Sort(out)
	return out
}

func testList(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	tenant := strings.TrimSuffix(p, "/")
	for _, k := range []string{p + "a/original", p + "a/thumbs/10x10-cover", p + "ab/original", tenant + "_x/a/original"} {
		put(t, b, k, []byte(k))
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{p + "a/", []string{p + "a/original", p + "a/thumbs/10x10-cover"}},
		{p + "a/thumbs/", []string{p + "a/thumbs/10x10-cover"}},
		{p + "a", []string{p + "a/original", p + "a/thumbs/10x10-cover", p + "ab/original"}},
		{p, []string{p + "a/original", p + "a/thumbs/10x10-cover", p + "ab/original"}},
		{p + "none/", nil},
	} {
		list, err := b.List(ctx, c.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(list); !slices.Equal(got, c.want) {
			t.Fatalf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
		for _, i := range list {
			if i.Size != int64(len(i.Key)) || i.ModTime.IsZero() {
				t.Fatalf("List(%q): %+v", c.prefix, i)
			}
		}
	}
	all, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := keys(all)
	for _, k := range []string{p + "a/original", tenant + "_x/a/original"} {
		if !slices.Contains(got, k) {
			t.Fatalf("List(\"\") lacks %q", k)
		}
	}
}

func testMissing(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	if _, err := b.Open(ctx, p+"missing/original"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := b.Stat(ctx, p+"missing/original"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing key: %v, want fs.ErrNotExist", err)
	}
	if err := b.Delete(ctx, p+"missing/original"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
}

func testBadKeys(t *testing.T, b attachments.Blobs, p string) {
	for _, k := range []string{"", "/abs", "../up", p + "a/../../up", p + "a//b", p + "a/", p + "sp ace", p + "a/./b"} {
		if _, err := b.Put(t.Context(), k, strings.NewReader("x")); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Put(%q): %v, want store.ErrInvalid", k, err)
		}
	}
}

// failingReader yields n bytes, then fails.
type failingReader struct {
	n   int
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	m := min(len(p), r.n)
	clear(p[:m])
	r.n -= m
	return m, nil
}

func testFailedPut(t *testing.T, b attachments.Blobs, p string) {
	ctx := t.Context()
	boom := errors.New("client went away")
	for _, n := range []int{10, 3<<20 + 1} { // before and after the first chunk or part
		key := fmt.Sprintf("%sf%d/original", p, n)
		if _, err := b.Put(ctx, key, &failingReader{n: n, err: boom}); !errors.Is(err, boom) {
			t.Fatalf("Put of a failing reader (%d bytes): %v, want its error", n, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after a failed Put (%d bytes) Stat: %v, want fs.ErrNotExist", n, err)
		}
		// A failed Put over a stored blob keeps it.
		put(t, b, key, []byte("kept"))
		if _, err := b.Put(ctx, key, &failingReader{n: n, err: boom}); !errors.Is(err, boom) {
			t.Fatalf("second failing Put: %v", err)
		}
		if got := readAll(t, b, key); string(got) != "kept" {
			t.Fatalf("a failed Put replaced the blob: %d bytes", len(got))
		}
	}
	list, err := b.List(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list); len(got) != 2 {
		t.Fatalf("after failed Puts List = %q, want the two kept blobs", got)
	}
}

// A blob replaced while a reader reads it gives that reader the old
// bytes whole or an error, never the new bytes or a mix.
func testReplacedWhileRead(t *testing.T, b attachments.Blobs, p string) {
	key := p + "v/original"
	first, second := pattern("first", 3<<20), pattern("second", 3<<20)
	put(t, b, key, first)
	r, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 100<<10)
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, first[:len(head)]) {
		t.Fatalf("reading the start: %v", err)
	}
	put(t, b, key, second)
	rest, err := io.ReadAll(r)
	if err == nil && !bytes.Equal(append(head, rest...), first) {
		t.Fatal("a reader of a replaced blob read bytes of the new one, without an error")
	}
	if got := readAll(t, b, key); !bytes.Equal(got, second) {
		t.Fatal("a new reader does not read the new blob")
	}
}

// generated is a stream of n pattern bytes made as it is read.
type generated struct {
	n, off int64
	block  [32]byte
}

func newGenerated(n int64) *generated {
	g := &generated{n: n}
	g.block = sha256.Sum256([]byte("large"))
	return g
}

func (g *generated) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.off)]
	for i := range p {
		k := (g.off + int64(i)) % 32
		if k == 0 && g.off+int64(i) > 0 {
			g.block = sha256.Sum256(g.block[:])
		}
		p[i] = g.block[k]
	}
	g.off += int64(len(p))
	return len(p), nil
}

func testLarge(t *testing.T, b attachments.Blobs, p string, opts Options) {
	size := opts.LargeSize
	if size == 0 {
		size = 64 << 20
	}
	want := sha256.New()
	if _, err := io.Copy(want, newGenerated(size)); err != nil {
		t.Fatal(err)
	}
	key := p + "large/original"
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the heap's high-water mark while the Put runs
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	n, err := b.Put(t.Context(), key, newGenerated(size))
	close(stop)
	<-sampled
	if err != nil || n != size {
		t.Fatalf("large Put = %d, %v; want %d, nil", n, err, size)
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap grew by at most %d MiB during a %d MiB Put", grew>>20, size>>20)
	// Holding the upload whole takes at least its size; a part or chunk
	// buffer (and garbage not yet collected) stays well below.
	if !opts.HoldsInMemory && grew > size*3/4 {
		t.Errorf("the heap grew by %d MiB during a %d MiB Put: the upload was held in memory", grew>>20, size>>20)
	}
	r, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sha256.New()
	if m, err := io.Copy(got, r); err != nil || m != size {
		t.Fatalf("reading the large blob back: %d bytes, %v", m, err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("the large blob read back differs")
	}
	if err := b.Delete(context.WithoutCancel(t.Context()), key); err != nil {
		t.Fatal(err)
	}
}
