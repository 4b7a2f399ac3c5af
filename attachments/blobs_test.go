package attachments_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
)

// eachBlobs runs fn on FSBlobs in a temporary directory (root) and on
// MemBlobs (root "").
func eachBlobs(t *testing.T, fn func(t *testing.T, b attachments.Blobs, root string)) {
	t.Run("fs", func(t *testing.T) {
		t.Parallel()
		root := filepath.Join(t.TempDir(), "files")
		b, err := attachments.NewFSBlobs(root)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, b, root)
	})
	t.Run("mem", func(t *testing.T) {
		t.Parallel()
		fn(t, attachments.NewMemBlobs(), "")
	})
}

// Both Blobs keep what Put stored under its key, replace it on the next
// Put, describe it, list it by prefix and delete it; a missing key is
// fs.ErrNotExist.
func TestBlobs(t *testing.T) {
	t.Parallel()
	eachBlobs(t, func(t *testing.T, b attachments.Blobs, root string) {
		is := is.New(t)
		ctx := t.Context()
		before := time.Now().Add(-2 * time.Second)
		n, err := b.Put(ctx, "t1/a/original", strings.NewReader("hello world"))
		is.NoErr(err)
		is.Equal(n, int64(11))
		_, err = b.Put(ctx, "t1/a/thumbs/10x10-cover", strings.NewReader("thumb"))
		is.NoErr(err)
		_, err = b.Put(ctx, "t1/ab/original", strings.NewReader("other"))
		is.NoErr(err)
		_, err = b.Put(ctx, "t2/a/original", strings.NewReader("t2"))
		is.NoErr(err)

		is.Equal(string(blobBytes(t, b, "t1/a/original")), "hello world")
		info, err := b.Stat(ctx, "t1/a/original")
		is.NoErr(err)
		is.Equal(info.Key, "t1/a/original")
		is.Equal(info.Size, int64(11))
		is.True(info.ModTime.After(before) && info.ModTime.Before(time.Now().Add(2*time.Second))) // ModTime is the Put's

		r, err := b.Open(ctx, "t1/a/original")
		is.NoErr(err)
		is.Equal(r.Info().Size, int64(11))
		is.Equal(r.Info().Key, "t1/a/original")
		is.NoErr(r.Close())

		is.Equal(blobKeys(t, b, "t1/a/"), []string{"t1/a/original", "t1/a/thumbs/10x10-cover"})
		is.Equal(blobKeys(t, b, "t1/a"), []string{"t1/a/original", "t1/a/thumbs/10x10-cover", "t1/ab/original"})
		is.Equal(blobKeys(t, b, "t1/"), []string{"t1/a/original", "t1/a/thumbs/10x10-cover", "t1/ab/original"})
		is.Equal(blobKeys(t, b, ""), []string{"t1/a/original", "t1/a/thumbs/10x10-cover", "t1/ab/original", "t2/a/original"})
		is.Equal(blobKeys(t, b, "t3/"), []string{})
		list, err := b.List(ctx, "t2/")
		is.NoErr(err)
		is.Equal(len(list), 1)
		is.Equal(list[0].Size, int64(2))

		// A Put replaces.
		_, err = b.Put(ctx, "t1/a/original", strings.NewReader("bye"))
		is.NoErr(err)
		is.Equal(string(blobBytes(t, b, "t1/a/original")), "bye")

		is.NoErr(b.Delete(ctx, "t1/a/original"))
		is.NoErr(b.Delete(ctx, "t1/a/original")) // a missing key is no error
		_, err = b.Open(ctx, "t1/a/original")
		is.True(errors.Is(err, fs.ErrNotExist)) // Open of a deleted key
		_, err = b.Stat(ctx, "t1/a/original")
		is.True(errors.Is(err, fs.ErrNotExist)) // Stat of a deleted key
		_, err = b.Open(ctx, "never/was/here")
		is.True(errors.Is(err, fs.ErrNotExist)) // Open of a key never stored
		is.Equal(blobKeys(t, b, "t1/"), []string{"t1/a/thumbs/10x10-cover", "t1/ab/original"})
	})
}

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

var errReader = errors.New("the client went away")

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errReader
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// A Put whose reader fails stores nothing: no file under the key, no
// temporary file left in the directory or listed, and a key that held
// bytes keeps them.
func TestBlobsPutIsAtomic(t *testing.T) {
	t.Parallel()
	eachBlobs(t, func(t *testing.T, b attachments.Blobs, root string) {
		is := is.New(t)
		ctx := t.Context()
		_, err := b.Put(ctx, "t/new/original", &failingReader{n: 200 << 10})
		is.True(errors.Is(err, errReader)) // Put returns the reader's error
		_, err = b.Stat(ctx, "t/new/original")
		is.True(errors.Is(err, fs.ErrNotExist)) // nothing under the key
		is.Equal(blobKeys(t, b, ""), []string{})

		_, err = b.Put(ctx, "t/old/original", strings.NewReader("the old bytes"))
		is.NoErr(err)
		_, err = b.Put(ctx, "t/old/original", &failingReader{n: 100 << 10})
		is.True(errors.Is(err, errReader))
		is.Equal(string(blobBytes(t, b, "t/old/original")), "the old bytes") // a failed replacement keeps the old bytes
		is.Equal(blobKeys(t, b, ""), []string{"t/old/original"})

		// A Put whose context ends stops and stores nothing either.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = b.Put(cctx, "t/cancelled/original", strings.NewReader("never"))
		is.True(errors.Is(err, context.Canceled))
		is.Equal(blobKeys(t, b, ""), []string{"t/old/original"})

		if root != "" {
			is.Equal(filesUnder(t, root), []string{"t/old/original"}) // no file on disk but the stored one
			is.Equal(dirsUnder(t, root), []string{"t", "t/old"})      // and no directory a failed Put made
		}
	})
}

// filesUnder lists the regular files under dir (slash-separated, sorted),
// temporary ones included.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	out := []string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dirsUnder lists the directories under dir.
func dirsUnder(t *testing.T, dir string) []string {
	t.Helper()
	out := []string{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != dir {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// An opened blob seeks, and serves byte ranges through http.ServeContent.
func TestBlobsSeekAndRanges(t *testing.T) {
	t.Parallel()
	eachBlobs(t, func(t *testing.T, b attachments.Blobs, root string) {
		is := is.New(t)
		ctx := t.Context()
		data := []byte("0123456789abcdefghij")
		_, err := b.Put(ctx, "t/a/original", bytes.NewReader(data))
		is.NoErr(err)
		r, err := b.Open(ctx, "t/a/original")
		is.NoErr(err)
		defer r.Close()
		pos, err := r.Seek(5, io.SeekStart)
		is.NoErr(err)
		is.Equal(pos, int64(5))
		buf := make([]byte, 3)
		_, err = io.ReadFull(r, buf)
		is.NoErr(err)
		is.Equal(string(buf), "567")
		pos, err = r.Seek(-4, io.SeekEnd)
		is.NoErr(err)
		is.Equal(pos, int64(16))
		rest, err := io.ReadAll(r)
		is.NoErr(err)
		is.Equal(string(rest), "ghij")
		pos, err = r.Seek(-6, io.SeekCurrent)
		is.NoErr(err)
		is.Equal(pos, int64(14))

		_, err = r.Seek(0, io.SeekStart)
		is.NoErr(err)
		req := httptest.NewRequest(http.MethodGet, "/file", nil)
		req.Header.Set("Range", "bytes=10-13")
		rec := httptest.NewRecorder()
		http.ServeContent(rec, req, "a.txt", r.Info().ModTime, r)
		is.Equal(rec.Code, http.StatusPartialContent)
		is.Equal(rec.Body.String(), "abcd")
		is.Equal(rec.Header().Get("Content-Range"), "bytes 10-13/20")

		req = httptest.NewRequest(http.MethodGet, "/file", nil)
		req.Header.Set("Range", "bytes=-3")
		rec = httptest.NewRecorder()
		http.ServeContent(rec, req, "a.txt", r.Info().ModTime, r)
		is.Equal(rec.Code, http.StatusPartialContent)
		is.Equal(rec.Body.String(), "hij")
	})
}

// Deleting a key removes the directories it leaves empty, up to the
// root, and no others.
func TestFSBlobsDeleteRemovesEmptyDirs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	root := filepath.Join(t.TempDir(), "files")
	b, err := attachments.NewFSBlobs(root)
	is.NoErr(err)
	for _, k := range []string{"t/a/original", "t/a/thumbs/10x10-cover", "t/b/original"} {
		_, err := b.Put(ctx, k, strings.NewReader(k))
		is.NoErr(err)
	}
	is.NoErr(b.Delete(ctx, "t/a/thumbs/10x10-cover"))
	is.Equal(dirsUnder(t, root), []string{"t", "t/a", "t/b"}) // thumbs/ went, t/a stays (it holds original)
	is.NoErr(b.Delete(ctx, "t/a/original"))
	is.Equal(dirsUnder(t, root), []string{"t", "t/b"})
	is.NoErr(b.Delete(ctx, "t/b/original"))
	is.Equal(dirsUnder(t, root), []string{})
	_, err = os.Stat(root)
	is.NoErr(err) // the root stays
	is.NoErr(b.Delete(ctx, "t/b/original"))
}

// Keys that would leave the root, or are not plain segments, are
// refused by every method, and nothing is written outside the root.
func TestFSBlobsRefusesKeysOutsideRoot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base := t.TempDir()
	root := filepath.Join(base, "files")
	b, err := attachments.NewFSBlobs(root)
	if err != nil {
		t.Fatal(err)
	}
	bad := []string{"", "..", "../escape", "../../escape", "a/../../escape", "a/..", "a/../b", "/etc/passwd",
		"/abs", "a//b", "a/", "./a", "a/./b", ".hidden", `a\b`, `..\escape`, "a/b..c", "a b", "a/ü"}
	for _, key := range bad {
		if _, err := b.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Put(%q): %v, want ErrInvalid", key, err)
		}
		if _, err := b.Open(ctx, key); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open(%q): %v, want ErrInvalid", key, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Stat(%q): %v, want ErrInvalid", key, err)
		}
		if key != "" {
			if err := b.Delete(ctx, key); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Delete(%q): %v, want ErrInvalid", key, err)
			}
		}
	}
	for _, prefix := range []string{"../", "../../x", "a/../../", "/etc/"} {
		if _, err := b.List(ctx, prefix); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("List(%q): %v, want ErrInvalid", prefix, err)
		}
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "files" {
		t.Errorf("the root's parent holds %v, want only files/", entries)
	}
	if got := filesUnder(t, root); len(got) != 0 {
		t.Errorf("files under the root after refused keys: %v", got)
	}
	// MemBlobs refuses the same keys to Put.
	mem := attachments.NewMemBlobs()
	for _, key := range []string{"", "..", "../escape", "a/../b", "/abs", "a//b", `a\b`} {
		if _, err := mem.Put(ctx, key, strings.NewReader("x")); err == nil {
			t.Errorf("MemBlobs.Put(%q) accepted", key)
		}
	}
}

// List leaves out the temporary files of Puts in progress, and removes
// those older than an hour (a crashed Put's).
func TestFSBlobsListRemovesOldTempFiles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	root := filepath.Join(t.TempDir(), "files")
	b, err := attachments.NewFSBlobs(root)
	is.NoErr(err)
	_, err = b.Put(ctx, "t/a/original", strings.NewReader("kept"))
	is.NoErr(err)
	dir := filepath.Join(root, "t", "a")
	old := filepath.Join(dir, ".tmp-original-0123456789abcdef")
	young := filepath.Join(dir, ".tmp-original-fedcba9876543210")
	is.NoErr(os.WriteFile(old, []byte("crashed"), 0o600))
	is.NoErr(os.WriteFile(young, []byte("in progress"), 0o600))
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	is.NoErr(os.Chtimes(old, twoHoursAgo, twoHoursAgo))

	is.Equal(blobKeys(t, b, ""), []string{"t/a/original"}) // temporary files are not listed
	_, err = os.Stat(old)
	is.True(errors.Is(err, fs.ErrNotExist)) // the old temporary file is removed
	_, err = os.Stat(young)
	is.NoErr(err) // the young one stays (a Put in progress)
	is.Equal(blobKeys(t, b, "t/a/"), []string{"t/a/original"})
}
