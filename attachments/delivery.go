package attachments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/tenantkit/tenantkit/attachments/thumbs"
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

// IsImage reports whether the file is an image the image route can
// resize.
func (f *File) IsImage() bool { return thumbs.IsImageType(f.Attachment.MimeType) }

// Image returns the file resized to width×height (fit cover or contain),
// from blob storage when that size was made before. Concurrent first
// requests of one size share one resize, and at most one resize per CPU
// runs at once (a large image's decode takes hundreds of megabytes); the
// result is stored for the next. A file that is not an image is
// ErrNotImage; one whose header declares more than thumbs.MaxPixels is
// refused (store.ErrInvalid) before decoding.
func (s *Service) Image(ctx context.Context, f *File, width, height int, fit thumbs.Fit) (Blob, string, error) {
	a := f.Attachment
	if !f.IsImage() {
		return nil, "", ErrNotImage
	}
	if width < 1 || width > thumbs.MaxSize || height < 1 || height > thumbs.MaxSize || fit != thumbs.Cover && fit != thumbs.Contain {
		return nil, "", store.Errorf(store.ErrInvalid, "Invalid size parameters")
	}
	key := fmt.Sprintf("%sthumbs/%dx%d-%s", attachmentPrefix(a.TenantID, a.ID), width, height, fit)
	if b, err := s.blobs.Open(ctx, key); err == nil {
		return sniffed(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	made, err, _ := s.resizes.Do(key, func() (any, error) {
		// Detached from the first caller: the others wait on this resize.
		ctx := context.WithoutCancel(ctx)
		s.resizing <- struct{}{} // one resize per CPU at a time
		defer func() { <-s.resizing }()
		src, err := s.Open(ctx, f)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		var out bytes.Buffer // Resize checks the header (pixel bombs) before decoding
		if _, err := thumbs.Resize(&out, src, width, height, fit); err != nil {
			return nil, imageError(err)
		}
		if err := s.limitThumbs(ctx, a); err != nil {
			return nil, err
		}
		if _, err := s.blobs.Put(ctx, key, bytes.NewReader(out.Bytes())); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	})
	if err != nil {
		return nil, "", err
	}
	// Served from memory: another size's limitThumbs may already have
	// dropped the stored copy.
	data := made.([]byte)
	info := BlobInfo{Key: key, Size: int64(len(data)), ModTime: time.Now()}
	return &memReader{Reader: bytes.NewReader(data), info: info}, http.DetectContentType(data), nil
}

// maxThumbSizes is how many resized sizes of one attachment storage
// keeps: any caller may ask for any of 4000×4000×2, so when one more would
// pass it the attachment's stored sizes are dropped and made again on
// demand.
const maxThumbSizes = 32

// limitThumbs makes room for one more stored size of a.
func (s *Service) limitThumbs(ctx context.Context, a *Attachment) error {
	stored, err := s.blobs.List(ctx, attachmentPrefix(a.TenantID, a.ID)+"thumbs/")
	if err != nil || len(stored) < maxThumbSizes {
		return err
	}
	for _, b := range stored {
		if err := s.blobs.Delete(ctx, b.Key); err != nil {
			return err
		}
	}
	return nil
}

// sniffed returns a resized image with its type, read from its first
// bytes (thumbs.Resize picks the format).
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

// imageError maps the image package's refusals to the area's errors.
func imageError(err error) error {
	switch {
	case errors.Is(err, thumbs.ErrTooLarge):
		return store.Errorf(store.ErrInvalid, "The image is larger than %d megapixels.", thumbs.MaxPixels/1_000_000)
	case errors.Is(err, thumbs.ErrNotImage):
		return ErrNotImage
	case errors.Is(err, thumbs.ErrInvalidParams):
		return store.Errorf(store.ErrInvalid, "Invalid size parameters")
	}
	return err
}
