package attachments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenantkit/tenantkit/internal/imagefit"
	"github.com/tenantkit/tenantkit/store"
)

// Access says on whose behalf a file is delivered.
type Access int

const (
	// Anonymous callers (no credential) get files of public partitions
	// only; any other id is ErrCredentialRequired, whether or not it
	// exists.
	Anonymous Access = iota
	// Scoped callers get the files their scope (in ctx) may read, and
	// files of public partitions (a credential never gets less than
	// none); others are ErrNotFound.
	Scoped
	// AnyTenant callers (super admins) get any tenant's file.
	AnyTenant
)

// ErrCredentialRequired answers an anonymous request for a file that is
// not public (or does not exist).
var ErrCredentialRequired = errors.New("attachments: a credential is required for this file")

// File is an attachment to deliver, with its partition (whose isPublic
// decides the cache headers).
type File struct {
	Attachment *Attachment // the file served
	Partition  *Partition  // its partition, which decides who may read it
}

// Lookup finds an attachment to deliver for a caller with the access
// given. Lookups are cached in memory by id (the file routes run one per
// request) and kept fresh by a version counter that deletes and partition
// changes bump: this process sees them at once, others within
// fileCacheCheck. File.Attachment's metadata (tags, assignments, custom
// fields) may lag as long; read it with Get. The File is shared with
// other callers: do not change it.
func (s *Service) Lookup(ctx context.Context, id string, access Access) (*File, error) {
	notFound := ErrNotFound
	if access == Anonymous {
		notFound = ErrCredentialRequired
	}
	var sc store.Scope
	if access == Scoped {
		var err error
		if sc, err = scope(ctx); err != nil {
			return nil, err
		}
	}
	if !store.IsID(id) {
		return nil, notFound
	}
	f, err := s.files.Get(ctx, id, func(tx *store.Tx) (*File, error) {
		a, p, err := s.store.GetAnyAttachment(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		return &File{Attachment: a, Partition: p}, nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, err
	case access == Anonymous && (f.Partition == nil || !f.Partition.IsPublic):
		return nil, ErrCredentialRequired
	case access == Scoped && !(f.Partition != nil && f.Partition.IsPublic) &&
		(f.Attachment.TenantID != sc.TenantID || !sc.AllowsOrganization(f.Attachment.OrganizationID)):
		return nil, ErrNotFound
	}
	return f, nil
}

// fileCacheCheck is how often Lookup's cache reads the version counter to
// see other processes' deletes and partition changes.
const fileCacheCheck = 250 * time.Millisecond

// Open returns the file's bytes. A file gone from storage (its attachment
// deleted meanwhile, by another process) is ErrNotFound.
func (s *Service) Open(ctx context.Context, f *File) (Blob, error) {
	b, err := s.blobs.Open(ctx, f.Attachment.StorageKey)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	return b, err
}

// IsImage reports whether the file is an image the image route serves:
// one Options.Images resizes, or without Images a PNG, JPEG, GIF or WebP
// (served as it is).
func (s *Service) IsImage(f *File) bool {
	if s.opts.Images == nil {
		return imagefit.WebImage(f.Attachment.MimeType)
	}
	return s.opts.Images.IsImage(f.Attachment.MimeType)
}

// Image returns the file resized to width×height (fit cover or contain),
// from blob storage when that size was made before, with its content
// type. A file that is not an image (IsImage) is ErrNotImage; one the
// Images plug-in refuses (ErrImageTooLarge, ErrImageUnsupported), or
// whose resize Images.MemoryNeeded estimates above
// Options.ImageMemoryBytes, is refused (store.ErrInvalid) before
// decoding. Without Options.Images it returns the original file, sizes
// checked alike.
//
// Concurrent first requests of one size share one resize. Resizes take a
// share of the process's memory budget (their estimate) and a CPU
// (Options.ImageResizes), waiting at most Options.ImageWait for them; a
// tenant has at most Options.ImageResizesPerTenant resizes running or
// waiting. Past either, ErrBusy. The result is stored for the next
// request when it fits the attachment's thumbnail allowance (storeThumb).
func (s *Service) Image(ctx context.Context, f *File, width, height int, fit Fit) (Blob, string, error) {
	a := f.Attachment
	if !s.IsImage(f) {
		return nil, "", ErrNotImage
	}
	if width < 1 || width > MaxImageSize || height < 1 || height > MaxImageSize || fit != Cover && fit != Contain {
		return nil, "", store.Errorf(store.ErrInvalid, "Invalid size parameters")
	}
	if s.opts.Images == nil {
		b, err := s.Open(ctx, f)
		return b, a.MimeType, err
	}
	key := fmt.Sprintf("%sthumbs/%dx%d-%s", attachmentPrefix(a.TenantID, a.ID), width, height, fit)
	if b, err := s.blobs.Open(ctx, key); err == nil {
		return sniffed(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	res, err, _ := s.resizes.Do(key, func() (any, error) {
		// Detached from the first caller: the others wait on this resize.
		ctx := context.WithoutCancel(ctx)
		m, err := s.resize(ctx, f, width, height, fit)
		if err != nil {
			return nil, err
		}
		if err := s.storeThumb(ctx, a, key, m.data); err != nil {
			m.release()
			return nil, err
		}
		return m, nil
	})
	if err != nil {
		return nil, "", err
	}
	// Served from memory (the size may not have been stored, and another
	// size's storeThumb may already have dropped it), and charged to the
	// memory budget until the response is sent: a slow client cannot
	// keep resized images in memory beyond it. The first reader takes the
	// resize's charge; readers that shared the resize wait for their own.
	m := res.(*madeImage)
	release := m.release
	if !m.claimed.CompareAndSwap(false, true) {
		if release, err = s.limits.hold(ctx, int64(len(m.data))); err != nil {
			return nil, "", err
		}
	}
	info := BlobInfo{Key: key, Size: int64(len(m.data)), ModTime: time.Now()}
	return &memReader{Reader: bytes.NewReader(m.data), info: info, onClose: release}, http.DetectContentType(m.data), nil
}

// madeImage is a resized image, shared by the requests that asked for
// it at once, with the release of its memory charge, which the first
// reader claims.
type madeImage struct {
	data    []byte
	release func()
	claimed atomic.Bool
}

// resize makes one size of f within the limits: the tenant's share first
// (refused at once when full), then the header's estimate against the
// budget (refused when it can never fit), then memory and a CPU.
func (s *Service) resize(ctx context.Context, f *File, width, height int, fit Fit) (*madeImage, error) {
	done, err := s.limits.admit(f.Attachment.TenantID)
	if err != nil {
		return nil, err
	}
	defer done()
	src, err := s.Open(ctx, f)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	need, err := s.opts.Images.MemoryNeeded(src, width, height, fit) // the header only
	if err != nil {
		return nil, imageError(err)
	}
	if need > s.limits.memoryBytes {
		return nil, store.Errorf(store.ErrInvalid,
			"Resizing this image to %dx%d needs about %d MB, more than the %d MB a resize may use; a smaller size may fit, and the image route without sizes serves the original.",
			width, height, (need+1<<20-1)>>20, s.limits.memoryBytes>>20)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	g, err := s.limits.acquire(ctx, need)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := s.opts.Images.Resize(&out, src, width, height, fit); err != nil {
		g.finish(0)
		return nil, imageError(err)
	}
	// The encoded image stays charged (within the estimate) while served.
	return &madeImage{data: out.Bytes(), release: g.finish(int64(out.Len()))}, nil
}

// maxThumbSizes is how many resized sizes of one attachment storage
// keeps.
const maxThumbSizes = 32

// minThumbBytes is the storage the resized sizes of any attachment may
// take together, however small the file: a small image's thumbnails are
// usually larger than it.
const minThumbBytes = 64 << 10

// thumbAllowance is the storage the resized sizes of a may take
// together: its own size, at least minThumbBytes. So a tenant's resized
// images take at most what its files take (which the quota bounds) plus
// 64 KiB a file.
func thumbAllowance(a *Attachment) int64 { return max(a.FileSize, minThumbBytes) }

// storeThumb keeps one more size of a in storage when it fits: at most
// maxThumbSizes sizes, together within thumbAllowance. A size larger
// than the allowance is not stored (it is made again when asked for);
// one that does not fit beside the stored ones drops them first (any
// caller may ask for any size, so the stored ones are only a cache).
// Resizes of different sizes of one file that finish together may each
// see room for themselves: the allowance can be passed by the few
// resizes running at once (Options.ImageResizes), never more.
func (s *Service) storeThumb(ctx context.Context, a *Attachment, key string, data []byte) error {
	size, allowance := int64(len(data)), thumbAllowance(a)
	if size > allowance {
		return nil
	}
	stored, err := s.blobs.List(ctx, attachmentPrefix(a.TenantID, a.ID)+"thumbs/")
	if err != nil {
		return err
	}
	total := size
	for _, b := range stored {
		total += b.Size
	}
	if len(stored) >= maxThumbSizes || total > allowance {
		for _, b := range stored {
			if err := s.blobs.Delete(ctx, b.Key); err != nil {
				return err
			}
		}
	}
	_, err = s.blobs.Put(ctx, key, bytes.NewReader(data))
	return err
}

// sniffed returns a resized image with its type, read from its first
// bytes (the Images plug-in picks the format).
func sniffed(b Blob) (Blob, string, error) {
	head := make([]byte, 512)
	n, err := io.ReadFull(b, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		b.Close()
		return nil, "", err
	}
	if _, err := b.Seek(0, io.SeekStart); err != nil {
		b.Close()
		return nil, "", err
	}
	return b, http.DetectContentType(head[:n]), nil
}

// imageError maps the Images plug-in's refusals to the area's errors.
func imageError(err error) error {
	switch {
	case errors.Is(err, ErrImageTooLarge):
		// The plug-in's detail ("8000x8000 exceeds 50000000 pixels").
		detail := strings.TrimPrefix(err.Error(), ErrImageTooLarge.Error())
		if detail = strings.TrimLeft(detail, ": "); detail == "" {
			return store.Errorf(store.ErrInvalid, "The image is too large to resize.")
		}
		return store.Errorf(store.ErrInvalid, "The image is too large to resize (%s).", detail)
	case errors.Is(err, ErrImageUnsupported):
		return ErrNotImage
	}
	return err
}
