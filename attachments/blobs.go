package attachments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Blobs stores the bytes of attachments and their thumbnails under keys
// the service makes: slash-separated segments of letters, digits, '.',
// '_' and '-'. FSBlobs keeps them in a directory of one machine;
// SQLBlobs in the database and s3blobs.Blobs in an S3 bucket, which several
// processes can share; MemBlobs in memory. A host may bring its own and
// check it with package blobstest.
//
// A Put is atomic: a reader of its key sees nothing or every byte, never
// a partial file, even across a crash. A missing key is an error wrapping
// fs.ErrNotExist.
type Blobs interface {
	// Put stores r's bytes under key, replacing what was there, and
	// returns how many it stored. If r fails, nothing is stored and its
	// error is returned.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the bytes under key, seekable (for range requests).
	Open(ctx context.Context, key string) (Blob, error)
	// Stat describes the bytes under key.
	Stat(ctx context.Context, key string) (BlobInfo, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the keys that start with prefix, with their info, in
	// no particular order. The orphan sweep lists "" (everything).
	List(ctx context.Context, prefix string) ([]BlobInfo, error)
}

// Blob is an opened blob: seekable (range requests) and readable at
// offsets (extractors read archives and PDFs that way).
type Blob interface {
	io.ReadSeekCloser
	io.ReaderAt
	// Info describes the blob.
	Info() BlobInfo
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Key     string    // the blob's key in Blobs
	Size    int64     // in bytes
	ModTime time.Time // when it was written
}

// blobKeyPattern is what FSBlobs accepts as a key: no empty, "." or ".."
// segment, so that no key leaves the root.
var blobKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)

// FSBlobs stores blobs as files under a root directory: the key
// "t/ab/id" is the file root/t/ab/id. Puts write a temporary file in the
// same directory, sync it and rename it into place.
type FSBlobs struct {
	root string
}

// NewFSBlobs returns blob storage in dir, creating it if needed.
func NewFSBlobs(dir string) (*FSBlobs, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &FSBlobs{root: abs}, nil
}

// tempPrefix starts the names of files being written; List skips them
// and the sweep removes old ones.
const tempPrefix = ".tmp-"

func (b *FSBlobs) path(key string) (string, error) {
	if !blobKeyPattern.MatchString(key) || strings.Contains(key, "..") {
		return "", fmt.Errorf("attachments: bad blob key %q: %w", key, store.ErrInvalid)
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// Put implements Blobs.
func (b *FSBlobs) Put(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	path, err := b.path(key)
	if err != nil {
		return 0, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(dir, tempPrefix+filepath.Base(path)+"-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			b.pruneDirs(dir) // leave no empty directory behind
		}
	}()
	n, err = io.Copy(f, contextReader{ctx, r})
	if err != nil {
		return n, err
	}
	if err = f.Sync(); err != nil {
		return n, err
	}
	if err = f.Close(); err != nil {
		return n, err
	}
	if err = os.Rename(tmp, path); err != nil {
		return n, err
	}
	return n, syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// contextReader stops a copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Open implements Blobs.
func (b *FSBlobs) Open(_ context.Context, key string) (Blob, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileBlob{File: f, info: BlobInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}}, nil
}

type fileBlob struct {
	*os.File
	info BlobInfo
}

func (f *fileBlob) Info() BlobInfo { return f.info }

// Stat implements Blobs.
func (b *FSBlobs) Stat(_ context.Context, key string) (BlobInfo, error) {
	path, err := b.path(key)
	if err != nil {
		return BlobInfo{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return BlobInfo{}, err
	}
	return BlobInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Blobs. Directories it leaves empty are removed too,
// up to the root.
func (b *FSBlobs) Delete(_ context.Context, key string) error {
	path, err := b.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b.pruneDirs(filepath.Dir(path))
	return nil
}

// pruneDirs removes dir and its parents up to the root while they are
// empty.
func (b *FSBlobs) pruneDirs(dir string) {
	for ; dir != b.root && strings.HasPrefix(dir, b.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty, or gone
			return
		}
	}
}

// List implements Blobs. Temporary files of Puts in progress are left
// out, except those older than an hour (a crashed Put's), which List
// removes.
func (b *FSBlobs) List(ctx context.Context, prefix string) ([]BlobInfo, error) {
	// Walk only the directory the prefix's whole segments name.
	start := b.root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		dir, err := b.path(prefix[:i])
		if err != nil {
			return nil, err
		}
		start = dir
	}
	var out []BlobInfo
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if strings.HasPrefix(d.Name(), tempPrefix) {
			if time.Since(info.ModTime()) > time.Hour {
				_ = os.Remove(path)
			}
			return nil
		}
		rel, err := filepath.Rel(b.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, prefix) {
			out = append(out, BlobInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		}
		return nil
	})
	return out, err
}
