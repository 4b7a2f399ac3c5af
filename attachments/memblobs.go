package attachments

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"time"
)

// MemBlobs keeps blobs in memory: for tests and trials, lost when the
// process ends.
type MemBlobs struct {
	mu    sync.RWMutex
	blobs map[string]memBlob
}

type memBlob struct {
	data    []byte
	modTime time.Time
}

// NewMemBlobs returns empty in-memory blob storage.
func NewMemBlobs() *MemBlobs { return &MemBlobs{blobs: map[string]memBlob{}} }

// Put implements Blobs.
func (m *MemBlobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := CheckBlobKey(key); err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, contextReader{ctx, r})
	if err != nil {
		return n, err
	}
	m.mu.Lock()
	m.blobs[key] = memBlob{data: buf.Bytes(), modTime: time.Now()}
	m.mu.Unlock()
	return n, nil
}

// Open implements Blobs.
func (m *MemBlobs) Open(_ context.Context, key string) (Blob, error) {
	m.mu.RLock()
	b, ok := m.blobs[key]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("attachments: blob %q: %w", key, fs.ErrNotExist)
	}
	return &memReader{Reader: bytes.NewReader(b.data), info: BlobInfo{Key: key, Size: int64(len(b.data)), ModTime: b.modTime}}, nil
}

type memReader struct {
	*bytes.Reader
	info BlobInfo
	// onClose, when set, runs on Close (once: callers make it idempotent).
	onClose func()
}

func (r *memReader) Close() error {
	if r.onClose != nil {
		r.onClose()
	}
	return nil
}
func (r *memReader) Info() BlobInfo { return r.info }

// Stat implements Blobs.
func (m *MemBlobs) Stat(ctx context.Context, key string) (BlobInfo, error) {
	b, err := m.Open(ctx, key)
	if err != nil {
		return BlobInfo{}, err
	}
	return b.Info(), nil
}

// Delete implements Blobs.
func (m *MemBlobs) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.blobs, key)
	m.mu.Unlock()
	return nil
}

// List implements Blobs.
func (m *MemBlobs) List(_ context.Context, prefix string) ([]BlobInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []BlobInfo
	for k, b := range m.blobs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, BlobInfo{Key: k, Size: int64(len(b.data)), ModTime: b.modTime})
		}
	}
	return out, nil
}

// plainSegmentPattern is a tenant id usable as a key segment as it is.
var plainSegmentPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

func plainSegment(s string) bool { return plainSegmentPattern.MatchString(s) }

// shortHash is a stable 128-bit hex digest of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
