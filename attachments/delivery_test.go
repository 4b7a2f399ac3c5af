package attachments_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// slowThumbs is MemBlobs whose Puts of resized images are counted and
// slow, so that concurrent first requests of a size overlap.
type slowThumbs struct {
	*attachments.MemBlobs
	thumbPuts atomic.Int32
}

func (b *slowThumbs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if strings.Contains(key, "/thumbs/") {
		b.thumbPuts.Add(1)
		time.Sleep(200 * time.Millisecond)
	}
	return b.MemBlobs.Put(ctx, key, r)
}

// hugePNG is a PNG whose header declares width×height pixels, with no
// image data: a pixel bomb's header.
func hugePNG(width, height uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		body := append([]byte(typ), data...)
		b.Write(body)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(body))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// Image resizes once per size, however many ask at once, keeps the result
// for the next request, and refuses files that are not images, pixel
// bombs (before decoding) and sizes out of range.
func TestImage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := &slowThumbs{MemBlobs: attachments.NewMemBlobs()}
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		a := upload(t, svc, tn.ctx, "R1", "photo.png", pngImage(t, 40, 30), nil)
		f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		is.True(svc.IsImage(f))

		var wg sync.WaitGroup
		sizes := make(chan image.Point, 8)
		for range 8 {
			wg.Go(func() {
				b, mime, err := svc.Image(tn.ctx, f, 16, 12, thumbs.Cover)
				if err != nil {
					t.Errorf("Image: %v", err)
					return
				}
				defer b.Close()
				if mime != "image/png" {
					t.Errorf("Image type %q", mime)
				}
				cfg, _, err := image.DecodeConfig(b)
				if err != nil {
					t.Errorf("decoding the resized image: %v", err)
					return
				}
				sizes <- image.Pt(cfg.Width, cfg.Height)
			})
		}
		wg.Wait()
		close(sizes)
		for s := range sizes {
			is.Equal(s, image.Pt(16, 12))
		}
		is.Equal(blobs.thumbPuts.Load(), int32(1)) // eight concurrent first requests, one resize

		// The next request reads the stored one.
		b, _, err := svc.Image(tn.ctx, f, 16, 12, thumbs.Cover)
		is.NoErr(err)
		is.NoErr(b.Close())
		is.Equal(blobs.thumbPuts.Load(), int32(1))
		b, _, err = svc.Image(tn.ctx, f, 16, 12, thumbs.Contain)
		is.NoErr(err)
		cfg, _, err := image.DecodeConfig(b)
		is.NoErr(err)
		is.NoErr(b.Close())
		is.True(cfg.Width <= 16 && cfg.Height <= 12)
		is.Equal(blobs.thumbPuts.Load(), int32(2)) // another fit is another image
		prefix := tn.id + "/" + a.ID + "/"
		is.Equal(blobKeys(t, blobs, prefix), []string{prefix + "original", prefix + "thumbs/16x12-contain", prefix + "thumbs/16x12-cover"})

		// Not an image.
		txt := upload(t, svc, tn.ctx, "R1", "notes.txt", []byte("text"), nil)
		ft, err := svc.Lookup(tn.ctx, txt.ID, attachments.Scoped)
		is.NoErr(err)
		is.True(!svc.IsImage(ft))
		_, _, err = svc.Image(tn.ctx, ft, 10, 10, thumbs.Cover)
		is.True(errors.Is(err, attachments.ErrNotImage))

		// A pixel bomb's header: refused, nothing stored.
		bomb := upload(t, svc, tn.ctx, "R1", "bomb.png", hugePNG(20000, 20000), nil)
		is.Equal(bomb.MimeType, "image/png")
		fb, err := svc.Lookup(tn.ctx, bomb.ID, attachments.Scoped)
		is.NoErr(err)
		_, _, err = svc.Image(tn.ctx, fb, 10, 10, thumbs.Cover)
		is.True(errors.Is(err, store.ErrInvalid))
		is.Equal(blobKeys(t, blobs, tn.id+"/"+bomb.ID+"/"), []string{tn.id + "/" + bomb.ID + "/original"})

		// Sizes and fits out of range are invalid input.
		for _, c := range []struct {
			w, h int
			fit  thumbs.Fit
		}{{0, 10, thumbs.Cover}, {10, 4001, thumbs.Cover}, {-1, -1, thumbs.Contain}, {10, 10, "stretch"}} {
			_, _, err := svc.Image(tn.ctx, f, c.w, c.h, c.fit)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Image(%d, %d, %q): %v, want ErrInvalid", c.w, c.h, c.fit, err)
			}
		}
		is.Equal(len(blobKeys(t, blobs, prefix)), 3) // nothing stored for them
	}, attachments.Migrations)
}

// Open reports a file gone from storage as ErrNotFound.
func TestOpenMissingFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := storetest.SQLite(t, attachments.Migrations)
	blobs := attachments.NewMemBlobs()
	svc := newService(db, attachments.Options{Blobs: blobs})
	tn := newTenant(t)
	a := upload(t, svc, tn.ctx, "R1", "a.txt", []byte("a"), nil)
	f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
	is.NoErr(err)
	is.NoErr(blobs.Delete(t.Context(), tn.id+"/"+a.ID+"/original"))
	_, err = svc.Open(t.Context(), f)
	is.True(errors.Is(err, attachments.ErrNotFound))
}

// Lookups are cached, but a delete or a partition change is seen at once
// by the service that made it and within the check interval by another
// (a second process on the same database).
func TestLookupCacheFollowsChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		other := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		pub, err := svc.CreatePartition(tn.ctx, attachments.PartitionInput{Code: "shop", Title: "Shop", IsPublic: boolp(true)})
		is.NoErr(err)
		a := upload(t, svc, tn.ctx, "R1", "a.png", pngImage(t, 4, 4), func(in *attachments.UploadInput) { in.PartitionCode = "shop" })
		b := upload(t, svc, tn.ctx, "R1", "b.txt", []byte("b"), nil)
		for _, s := range []*attachments.Service{svc, other} {
			_, err := s.Lookup(t.Context(), a.ID, attachments.Anonymous)
			is.NoErr(err) // public: anyone
			_, err = s.Lookup(tn.ctx, b.ID, attachments.Scoped)
			is.NoErr(err)
		}
		eventually := func(what string, s *attachments.Service, ctx context.Context, id string, access attachments.Access, want error) {
			t.Helper()
			deadline := time.Now().Add(3 * time.Second)
			for {
				_, err := s.Lookup(ctx, id, access)
				if errors.Is(err, want) {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: Lookup still answers %v, want %v", what, err, want)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}

		_, err = svc.UpdatePartition(tn.ctx, attachments.PartitionInput{ID: pub.ID, Code: "shop", Title: "Shop", IsPublic: boolp(false)})
		is.NoErr(err)
		_, err = svc.Lookup(t.Context(), a.ID, attachments.Anonymous)
		is.True(errors.Is(err, attachments.ErrCredentialRequired)) // this service sees the change at once
		eventually("the other service after the partition went private", other, t.Context(), a.ID, attachments.Anonymous, attachments.ErrCredentialRequired)
		f, err := other.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		is.True(!f.Partition.IsPublic)

		is.NoErr(svc.Delete(tn.ctx, b.ID))
		_, err = svc.Lookup(tn.ctx, b.ID, attachments.Scoped)
		is.True(errors.Is(err, attachments.ErrNotFound)) // this service sees the delete at once
		eventually("the other service after the delete", other, tn.ctx, b.ID, attachments.Scoped, attachments.ErrNotFound)
		eventually("the other service, as a super admin, after the delete", other, tn.ctx, b.ID, attachments.AnyTenant, attachments.ErrNotFound)
	}, attachments.Migrations)
}
