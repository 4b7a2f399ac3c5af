package attachments

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed blobmigrations
var blobMigrationsFS embed.FS

// BlobMigrations creates SQLBlobs' tables. The Service applies them with
// its own (Service.Migrations), so a Kit's database always has them.
var BlobMigrations = store.Migrations{Line: "attachments_blobs", FS: blobMigrationsFS, Dir: "blobmigrations"}

// SQLChunkSize is how many bytes of a file one row of SQLBlobs holds: a
// Put buffers one chunk at a time, a read fetches one at a time.
const SQLChunkSize = 1 << 20

// sqlOrphanAge is how old the chunks of a Put that never completed must be
// before List("") removes them.
const sqlOrphanAge = time.Hour

// SQLBlobs stores blobs in the database (BlobMigrations' tables), so that
// every server process sharing a PostgreSQL database shares the files
// too. It runs on SQLite as well (where it only adds to the one file).
//
// A blob is a row naming its current version and that version's chunks
// (SQLChunkSize bytes each). Put writes the chunks one statement at a
// time, outside any transaction, then swaps the key's row to the new
// version and deletes the old version's chunks in one short transaction:
// a reader sees the old bytes or the new, never a mix, and memory stays at
// one chunk per request whatever the file's size. A reader of a version
// replaced or deleted while it reads gets an error, never other bytes.
type SQLBlobs struct {
	db *store.DB
}

// NewSQLBlobs returns blob storage in db, which must have BlobMigrations
// applied.
func NewSQLBlobs(db *store.DB) *SQLBlobs { return &SQLBlobs{db: db} }

// CheckBlobKey returns an error wrapping store.ErrInvalid when key is not
// ValidBlobKey: how the package's Blobs refuse such a key.
func CheckBlobKey(key string) error {
	if !ValidBlobKey(key) {
		return fmt.Errorf("attachments: bad blob key %q: %w", key, store.ErrInvalid)
	}
	return nil
}

// Put implements Blobs.
func (b *SQLBlobs) Put(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	if err := CheckBlobKey(key); err != nil {
		return 0, err
	}
	id := store.NewID()
	defer func() {
		// Leave no chunks behind, unless the swap may have committed:
		// then List("") removes them if no blob names them.
		if err != nil && !errors.Is(err, store.ErrCommitUnknown) {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = b.db.Exec(dctx, `DELETE FROM attachment_blob_chunks WHERE blob_id = $1`, id)
		}
	}()
	buf := make([]byte, SQLChunkSize)
	seq := 0
	for {
		m, rerr := io.ReadFull(contextReader{ctx, r}, buf)
		if m > 0 {
			if _, err := b.db.Exec(ctx, `INSERT INTO attachment_blob_chunks (blob_id, seq, data) VALUES ($1, $2, $3)`,
				id, seq, buf[:m]); err != nil {
				return n, err
			}
			seq++
			n += int64(m)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	err = b.db.Tx(ctx, func(tx *store.Tx) error {
		// The chunks must all be there (an orphan removal cannot have
		// taken a slow Put's).
		var count int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM attachment_blob_chunks WHERE blob_id = $1`, id).Scan(&count); err != nil {
			return err
		}
		if count != seq {
			return fmt.Errorf("attachments: blob %q lost chunks while it was written", key)
		}
		var old string
		err := tx.QueryRow(ctx, `SELECT blob_id FROM attachment_blobs WHERE blob_key = $1`+tx.Dialect().ForUpdate(), key).Scan(&old)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO attachment_blobs (blob_key, blob_id, size, mod_time) VALUES ($1, $2, $3, $4)
			ON CONFLICT (blob_key) DO UPDATE SET blob_id = excluded.blob_id, size = excluded.size, mod_time = excluded.mod_time`,
			key, id, n, tx.Now().UnixMicro()); err != nil {
			return err
		}
		if old != "" {
			_, err = tx.Exec(ctx, `DELETE FROM attachment_blob_chunks WHERE blob_id = $1`, old)
			return err
		}
		return nil
	})
	return n, err
}

// Open implements Blobs. Reads fetch the chunks they cover, one at a
// time, and only the bytes asked for of the first and last.
func (b *SQLBlobs) Open(ctx context.Context, key string) (Blob, error) {
	id, info, err := b.stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return NewRangeBlob(ctx, info, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		return &chunkReader{db: b.db, ctx: ctx, key: key, id: id, off: off, end: off + n}, nil
	}), nil
}

// chunkReader streams bytes [off, end) of a version, one chunk's query at
// a time.
type chunkReader struct {
	db       *store.DB
	ctx      context.Context
	key, id  string
	off, end int64
	buf      []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.buf) == 0 {
		if c.off >= c.end {
			return 0, io.EOF
		}
		seq := c.off / SQLChunkSize
		from := c.off % SQLChunkSize
		n := min(SQLChunkSize-from, c.end-c.off)
		// substr counts from 1; it reads only the bytes it returns from
		// PostgreSQL's uncompressed out-of-line storage.
		var data []byte
		err := c.db.QueryRow(c.ctx, `SELECT substr(data, $3, $4) FROM attachment_blob_chunks WHERE blob_id = $1 AND seq = $2`,
			c.id, seq, from+1, n).Scan(&data)
		if errors.Is(err, store.ErrNotFound) {
			return 0, fmt.Errorf("attachments: blob %q was replaced or deleted while it was read", c.key)
		}
		if err != nil {
			return 0, err
		}
		if int64(len(data)) != n {
			return 0, fmt.Errorf("attachments: blob %q: chunk %d is short", c.key, seq)
		}
		c.buf = data
		c.off += n
	}
	m := copy(p, c.buf)
	c.buf = c.buf[m:]
	return m, nil
}

func (c *chunkReader) Close() error { c.buf = nil; return nil }

// Stat implements Blobs.
func (b *SQLBlobs) Stat(ctx context.Context, key string) (BlobInfo, error) {
	_, info, err := b.stat(ctx, key)
	return info, err
}

func (b *SQLBlobs) stat(ctx context.Context, key string) (string, BlobInfo, error) {
	if err := CheckBlobKey(key); err != nil {
		return "", BlobInfo{}, err
	}
	var id string
	var size, mod int64
	err := b.db.QueryRow(ctx, `SELECT blob_id, size, mod_time FROM attachment_blobs WHERE blob_key = $1`, key).Scan(&id, &size, &mod)
	if errors.Is(err, store.ErrNotFound) {
		return "", BlobInfo{}, fmt.Errorf("attachments: blob %q: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return "", BlobInfo{}, err
	}
	return id, BlobInfo{Key: key, Size: size, ModTime: time.UnixMicro(mod).UTC()}, nil
}

// Delete implements Blobs.
func (b *SQLBlobs) Delete(ctx context.Context, key string) error {
	if err := CheckBlobKey(key); err != nil {
		return err
	}
	return b.db.Tx(ctx, func(tx *store.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `DELETE FROM attachment_blobs WHERE blob_key = $1 RETURNING blob_id`, key).Scan(&id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM attachment_blob_chunks WHERE blob_id = $1`, id)
		return err
	})
}

// List implements Blobs. Listing everything ("", the orphan sweep) also
// removes the chunks of Puts that never completed, once an hour old.
func (b *SQLBlobs) List(ctx context.Context, prefix string) ([]BlobInfo, error) {
	if prefix == "" {
		bound := store.IDTimeBound(time.Now().Add(-sqlOrphanAge))
		if _, err := b.db.Exec(ctx, `DELETE FROM attachment_blob_chunks WHERE blob_id < $1
			AND NOT EXISTS (SELECT 1 FROM attachment_blobs b WHERE b.blob_id = attachment_blob_chunks.blob_id)`, bound); err != nil {
			return nil, err
		}
	}
	// A prefix range rather than LIKE: keys may hold '_', and the range
	// uses the primary key's index on both engines.
	rows, err := b.db.Query(ctx, `SELECT blob_key, size, mod_time FROM attachment_blobs
		WHERE blob_key >= $1 AND ($2 = '' OR blob_key < $2) ORDER BY blob_key`, prefix, prefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BlobInfo
	for rows.Next() {
		var info BlobInfo
		var mod int64
		if err := rows.Scan(&info.Key, &info.Size, &mod); err != nil {
			return nil, err
		}
		info.ModTime = time.UnixMicro(mod).UTC()
		out = append(out, info)
	}
	return out, rows.Err()
}

// prefixEnd is the smallest string above every string that starts with
// prefix ("" when there is none: the prefix is empty or all 0xff).
func prefixEnd(prefix string) string {
	p := []byte(prefix)
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xff {
			p[i]++
			return string(bytes.Clone(p[:i+1]))
		}
	}
	return ""
}
