package attachments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// ValidBlobKey reports whether key is a key the service makes: segments
// of letters, digits, '.', '_' and '-', none empty, "." or "..". Every
// Blobs of this package (and of package s3blobs) refuses other keys with
// store.ErrInvalid (CheckBlobKey).
func ValidBlobKey(key string) bool {
	return blobKeyPattern.MatchString(key) && !strings.Contains(key, "..")
}

// CopyResult counts what CopyBlobs did.
type CopyResult struct {
	// Copied blobs and their bytes.
	Copied int
	Bytes  int64 // see Copied
	// Skipped blobs: dst already held them with the same size.
	Skipped int
}

// CopyBlobs copies every blob of src to dst, streaming each, and checks
// that dst then holds each with its size in src. A blob dst already holds
// with the same size is skipped, so an interrupted copy can be run again.
// It stops at the first failure, returning what it did until then.
// progress, when not nil, is called after each blob.
func CopyBlobs(ctx context.Context, dst, src Blobs, progress func(CopyResult)) (CopyResult, error) {
	var res CopyResult
	list, err := src.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing the source: %w", err)
	}
	for _, info := range list {
		have, err := dst.Stat(ctx, info.Key)
		switch {
		case err == nil && have.Size == info.Size:
			res.Skipped++
			if progress != nil {
				progress(res)
			}
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return res, fmt.Errorf("%s: %w", info.Key, err)
		}
		n, err := copyBlob(ctx, dst, src, info.Key)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile (a delete, the orphan sweep)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", info.Key, err)
		}
		got, err := dst.Stat(ctx, info.Key)
		if err != nil {
			return res, fmt.Errorf("%s: checking the copy: %w", info.Key, err)
		}
		if got.Size != n {
			return res, fmt.Errorf("%s: the copy holds %d bytes, the source %d", info.Key, got.Size, n)
		}
		res.Copied++
		res.Bytes += n
		if progress != nil {
			progress(res)
		}
	}
	return res, nil
}

func copyBlob(ctx context.Context, dst, src Blobs, key string) (int64, error) {
	b, err := src.Open(ctx, key)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	n, err := dst.Put(ctx, key, b)
	if err != nil {
		return 0, err
	}
	if n != b.Info().Size {
		return 0, fmt.Errorf("read %d bytes, the source says %d", n, b.Info().Size)
	}
	return n, nil
}
