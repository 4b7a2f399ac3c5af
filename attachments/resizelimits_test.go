package attachments_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/attachments/thumbs/thumbstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// flat16 is the file: a 7000×7000 16-bit RGBA PNG (49 MP, under
// the 50 MP guard) of some 400 KB that decodes to 392 MB. Made once.
var flat16 = sync.OnceValue(func() []byte { return thumbstest.FlatPNG(7000, 7000, 16, 6) })

// A resize is measured against the memory budget from the header, before
// anything is decoded: a 16-bit 49 MP PNG is refused (400, saying why),
// whatever size is asked for, as is a large output of a small image; the
// same image smaller, or a smaller output, is made. A lower budget
// refuses more.
func TestImageMemoryBudget(t *testing.T) {
	t.Parallel()
	big := flat16()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		lookup := func(a *attachments.Attachment) *attachments.File {
			f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
			is.NoErr(err)
			return f
		}
		refused := func(f *attachments.File, w, h int, fit thumbs.Fit) {
			t.Helper()
			_, _, err := svc.Image(tn.ctx, f, w, h, fit)
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(store.PublicMessage(err), "needs about") {
				t.Errorf("Image(%s, %dx%d %s) = %v, want the budget's refusal", f.Attachment.FileName, w, h, fit, err)
			}
		}
		made := func(f *attachments.File, w, h int, fit thumbs.Fit) {
			t.Helper()
			b, _, err := svc.Image(tn.ctx, f, w, h, fit)
			if err != nil {
				t.Errorf("Image(%s, %dx%d %s) = %v", f.Attachment.FileName, w, h, fit, err)
				return
			}
			cfg, _, err := image.DecodeConfig(b)
			is.NoErr(err)
			is.NoErr(b.Close())
			is.Equal(image.Pt(cfg.Width, cfg.Height), image.Pt(w, h))
		}

		f49 := lookup(upload(t, svc, tn.ctx, "R1", "big16.png", big, nil))
		for _, size := range []int{1, 320, 4000} {
			refused(f49, size, size, thumbs.Cover)
		}
		// Its header alone, with no pixels: refused the same way, so the
		// refusal came before decoding (which would fail).
		headerOnly := lookup(upload(t, svc, tn.ctx, "R1", "header16.png", big[:33], nil))
		refused(headerOnly, 320, 320, thumbs.Cover)

		f4 := lookup(upload(t, svc, tn.ctx, "R1", "mid16.png", thumbstest.FlatPNG(2000, 2000, 16, 6), nil))
		made(f4, 320, 320, thumbs.Cover)        // 32 MB decoded
		made(f4, 1000, 1000, thumbs.Contain)    // and a larger output
		refused(f4, 4000, 4000, thumbs.Contain) // a 64 MB canvas, its filter and encoding on top
		small := lookup(upload(t, svc, tn.ctx, "R1", "small.png", pngImage(t, 40, 30), nil))
		refused(small, 4000, 4000, thumbs.Contain) // the output alone passes the budget
		made(small, 1000, 1000, thumbs.Contain)

		// A 16 MB budget: the 2000×2000 16-bit image is refused at any
		// size, a 1000×1000 8-bit one still made.
		tight := newService(db, attachments.Options{Blobs: blobs, ImageMemoryBytes: 16 << 20})
		ft, err := tight.Lookup(tn.ctx, f4.Attachment.ID, attachments.Scoped)
		is.NoErr(err)
		_, _, err = tight.Image(tn.ctx, ft, 10, 10, thumbs.Cover)
		is.True(errors.Is(err, store.ErrInvalid))
		f8 := upload(t, tight, tn.ctx, "R1", "mid8.png", thumbstest.FlatPNG(1000, 1000, 8, 6), nil)
		ft, err = tight.Lookup(tn.ctx, f8.ID, attachments.Scoped)
		is.NoErr(err)
		b, _, err := tight.Image(tn.ctx, ft, 100, 100, thumbs.Cover)
		is.NoErr(err)
		is.NoErr(b.Close())
	}, attachments.Migrations)
}

// gatedBlobs is MemBlobs whose originals, once a resize has read their
// header and seeked back (so within the resize's memory and CPU), stop
// reading until gate closes: the resize holds its place meanwhile.
type gatedBlobs struct {
	*attachments.MemBlobs
	gate    chan struct{}
	holding chan string // the key of each read that waits on gate
}

func (b *gatedBlobs) Open(ctx context.Context, key string) (attachments.Blob, error) {
	blob, err := b.MemBlobs.Open(ctx, key)
	if err != nil || !strings.HasSuffix(key, "/original") {
		return blob, err
	}
	return &gatedBlob{Blob: blob, b: b, key: key}, nil
}

type gatedBlob struct {
	attachments.Blob
	b       *gatedBlobs
	key     string
	read    bool
	rewound bool
	waited  bool
}

func (g *gatedBlob) Seek(off int64, whence int) (int64, error) {
	g.rewound = g.read // after the header: a resize (serving the file seeks first)
	return g.Blob.Seek(off, whence)
}

func (g *gatedBlob) Read(p []byte) (int, error) {
	g.read = true
	if g.rewound && !g.waited {
		g.waited = true
		g.b.holding <- g.key
		<-g.b.gate
	}
	return g.Blob.Read(p)
}

// A resize waits for a CPU (Options.ImageResizes) at most
// Options.ImageWait, then is refused with ErrBusy; a tenant with
// Options.ImageResizesPerTenant resizes under way is refused at once;
// once the running resize ends, both are made.
func TestImageBusy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := &gatedBlobs{MemBlobs: attachments.NewMemBlobs(), gate: make(chan struct{}), holding: make(chan string, 8)}
		svc := newService(db, attachments.Options{Blobs: blobs, ImageResizes: 1, ImageResizesPerTenant: 1, ImageWait: 100 * time.Millisecond})
		acme, globex := newTenant(t), newTenant(t)
		lookup := func(tn tenant, name string) *attachments.File {
			a := upload(t, svc, tn.ctx, "R1", name, pngImage(t, 40, 30), nil)
			f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
			is.NoErr(err)
			return f
		}
		fa, fg := lookup(acme, "a.png"), lookup(globex, "g.png")

		first := make(chan error, 1)
		go func() {
			b, _, err := svc.Image(acme.ctx, fa, 16, 16, thumbs.Cover)
			if err == nil {
				b.Close()
			}
			first <- err
		}()
		select {
		case <-blobs.holding: // the first resize holds the only CPU
		case <-time.After(10 * time.Second):
			t.Fatal("the first resize never started")
		}
		_, _, err := svc.Image(acme.ctx, fa, 17, 17, thumbs.Cover)
		is.True(errors.Is(err, attachments.ErrBusy)) // Acme's one resize is under way
		_, _, err = svc.Image(globex.ctx, fg, 16, 16, thumbs.Cover)
		is.True(errors.Is(err, attachments.ErrBusy)) // no CPU within ImageWait

		close(blobs.gate)
		is.NoErr(<-first)
		for _, c := range []struct {
			ctx context.Context
			f   *attachments.File
		}{{acme.ctx, fa}, {globex.ctx, fg}} {
			b, _, err := svc.Image(c.ctx, c.f, 17, 17, thumbs.Cover)
			is.NoErr(err)
			is.NoErr(b.Close())
		}
	}, attachments.Migrations)
}

// noisePNG is a w×h PNG of random pixels: its resized sizes are about as
// large as their pixels.
func noisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(5, 6))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.Uint32())
	}
	var b bytes.Buffer
	is.New(t).NoErr(png.Encode(&b, m))
	return b.Bytes()
}

// Stored sizes of a file take at most its own size (64 KiB at least): a
// size larger than that is served but not stored, and one that does not
// fit beside the stored ones drops them.
func TestImageStoredWithinAllowance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs})
		tn := newTenant(t)
		src := noisePNG(t, 200, 200)
		a := upload(t, svc, tn.ctx, "R1", "noise.png", src, nil)
		is.True(a.FileSize > 64<<10) // the allowance is the file's size
		f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		prefix := tn.id + "/" + a.ID + "/thumbs/"
		get := func(w int) int64 {
			t.Helper()
			b, typ, err := svc.Image(tn.ctx, f, w, w, thumbs.Cover)
			is.NoErr(err)
			is.Equal(typ, "image/png")
			data, err := io.ReadAll(b)
			is.NoErr(err)
			is.NoErr(b.Close())
			return int64(len(data))
		}
		stored := func() (n int, total int64) {
			list, err := blobs.List(t.Context(), prefix)
			is.NoErr(err)
			for _, b := range list {
				total += b.Size
			}
			return len(list), total
		}

		// Larger than the file: served, not stored.
		is.True(get(1000) > a.FileSize)
		n, _ := stored()
		is.Equal(n, 0)

		// Smaller sizes are stored until the next would pass the file's
		// size; that one drops them and is stored alone.
		var kept []int64
		for w := 100; w < 200; w += 7 {
			size := get(w)
			var sum int64
			for _, k := range kept {
				sum += k
			}
			if sum+size > a.FileSize {
				kept = kept[:0]
			}
			kept = append(kept, size)
			n, total := stored()
			is.Equal(n, len(kept))
			is.True(total <= a.FileSize)
			if len(kept) == 1 && w > 100 {
				return // dropped and stored again: seen
			}
		}
		t.Error("the stored sizes never reached the file's size")
	}, attachments.Migrations)
}

// A resized image served from memory stays charged to the budget until
// its reader is closed (the response sent): a slow client cannot keep
// resized images in memory beyond the budget. (On SQLite only: the store
// plays no part in it.)
func TestImageHeldWhileServed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := storetest.SQLite(t, attachments.Migrations)
	src := noisePNG(t, 300, 300)
	_, need, err := thumbs.MemoryNeeded(bytes.NewReader(src), 1000, 1000, thumbs.Contain)
	is.NoErr(err)
	// Learn the resized image's size with an unbounded service.
	blobs := attachments.NewMemBlobs()
	tn := newTenant(t)
	a := upload(t, newService(db, attachments.Options{Blobs: blobs}), tn.ctx, "R1", "noise.png", src, nil)
	image := func(svc *attachments.Service) (attachments.Blob, error) {
		f, err := svc.Lookup(tn.ctx, a.ID, attachments.Scoped)
		is.NoErr(err)
		b, _, err := svc.Image(tn.ctx, f, 1000, 1000, thumbs.Contain)
		return b, err
	}
	b, err := image(newService(db, attachments.Options{Blobs: blobs}))
	is.NoErr(err)
	size := b.Info().Size
	is.NoErr(b.Close())
	is.True(size > a.FileSize) // not stored: served from memory each time

	// A budget that fits one resize, but not one beside a held image.
	svc := newService(db, attachments.Options{Blobs: blobs, ImageMemoryBytes: need + size - 1, ImageWait: 100 * time.Millisecond})
	held, err := image(svc)
	is.NoErr(err)
	_, err = image(svc)
	is.True(errors.Is(err, attachments.ErrBusy)) // the first is still being served
	is.NoErr(held.Close())
	b, err = image(svc)
	is.NoErr(err)
	is.NoErr(b.Close())
}
