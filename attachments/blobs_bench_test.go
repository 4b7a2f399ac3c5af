package attachments_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/internal/s3test"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkBlobs measures blob throughput on each store in one run, so
// they compare against FSBlobs measured alongside: Upload puts an 8 MiB
// stream of unknown size (as an upload's body), Download reads an 8 MiB
// blob whole, Range reads 1 MiB at an offset of a 32 MiB blob (as a Range
// request does). MB/s is of the bytes moved. PostgreSQL needs
// TENANTKIT_TEST_POSTGRES_URL; S3 needs versitygw (see internal/s3test).
func BenchmarkBlobs(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) attachments.Blobs
	}{
		{"fs", func(b *testing.B) attachments.Blobs {
			fs, err := attachments.NewFSBlobs(filepath.Join(b.TempDir(), "files"))
			if err != nil {
				b.Fatal(err)
			}
			return fs
		}},
		{"postgres", func(b *testing.B) attachments.Blobs {
			return attachments.NewSQLBlobs(storetest.Postgres(b, attachments.BlobMigrations))
		}},
		{"s3", func(b *testing.B) attachments.Blobs {
			return s3test.Start(b).Blobs(b, "bench")
		}},
	}
	data := benchData(32 << 20)
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			blobs := st.open(b)
			ctx := b.Context()
			b.Run("Upload", func(b *testing.B) {
				body := data[:8<<20]
				b.SetBytes(int64(len(body)))
				i := 0
				for b.Loop() {
					i++
					if _, err := blobs.Put(ctx, fmt.Sprintf("bench/up/%d", i%4), struct{ io.Reader }{bytes.NewReader(body)}); err != nil {
						b.Fatal(err)
					}
				}
			})
			if _, err := blobs.Put(ctx, "bench/big/original", bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
			if _, err := blobs.Put(ctx, "bench/mid/original", bytes.NewReader(data[:8<<20])); err != nil {
				b.Fatal(err)
			}
			b.Run("Download", func(b *testing.B) {
				b.SetBytes(8 << 20)
				for b.Loop() {
					r, err := blobs.Open(ctx, "bench/mid/original")
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, r); err != nil || n != 8<<20 {
						b.Fatal(n, err)
					}
					r.Close()
				}
			})
			b.Run("Range", func(b *testing.B) {
				b.SetBytes(1 << 20)
				buf := make([]byte, 1<<20)
				i := 0
				for b.Loop() {
					i++
					r, err := blobs.Open(ctx, "bench/big/original")
					if err != nil {
						b.Fatal(err)
					}
					off := int64(i%31)<<20 + 4096 // not chunk-aligned
					if _, err := r.Seek(off, io.SeekStart); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(r, buf); err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
			})
		})
	}
}

// benchData is n incompressible-looking bytes (files are mostly
// compressed already).
func benchData(n int) []byte {
	out := make([]byte, 0, n+32)
	for sum := sha256.Sum256([]byte("bench")); len(out) < n; sum = sha256.Sum256(sum[:]) {
		out = append(out, sum[:]...)
	}
	return out[:n]
}
