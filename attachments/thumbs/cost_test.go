package thumbs

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// pngHeaderOf returns a PNG signature and IHDR declaring w×h with the bit
// depth, colour type and interlace method given (and, for a palette, a
// one-entry PLTE and an empty IDAT), with no pixel data.
func pngHeaderOf(w, h uint32, depth, colour, interlace byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		b.Write(c)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	chunk("IHDR", append(ihdr, depth, colour, 0, 0, interlace))
	if colour == 3 {
		chunk("PLTE", []byte{0, 0, 0})
		chunk("IDAT", nil) // DecodeConfig reads a palette image's up to here
	}
	return b.Bytes()
}

// The estimate comes from the header alone, and follows what decoding
// takes rather than the pixel count: the 7000×7000 16-bit RGBA
// PNG (49 MP, under MaxPixels) needs some 392 MB decoded, twice an 8-bit
// one's, eight times a palette's; interlacing doubles it.
func TestMemoryNeededFromHeader(t *testing.T) {
	const w, h = 7000, 7000
	need := func(header []byte, width, height int) int64 {
		t.Helper()
		info, n, err := MemoryNeeded(bytes.NewReader(header), width, height, Cover)
		if err != nil {
			t.Fatalf("MemoryNeeded: %v", err)
		}
		if info != (Info{Format: FormatPNG, Width: w, Height: h}) {
			t.Fatalf("MemoryNeeded's info = %+v", info)
		}
		return n
	}
	rgba16 := need(pngHeaderOf(w, h, 16, 6, 0), 320, 320)
	rgba8 := need(pngHeaderOf(w, h, 8, 6, 0), 320, 320)
	palette := need(pngHeaderOf(w, h, 8, 3, 0), 320, 320)
	interlaced := need(pngHeaderOf(w, h, 8, 6, 1), 320, 320)
	if rgba16 < 8*w*h {
		t.Errorf("16-bit RGBA: %d MB, want at least the 392 MB of its pixels", rgba16>>20)
	}
	if rgba8 < 4*w*h || rgba8 > rgba16-4*w*h {
		t.Errorf("8-bit RGBA: %d MB, want 4 bytes a pixel (196 MB) and 196 MB less than 16-bit (%d MB)", rgba8>>20, rgba16>>20)
	}
	if palette < w*h || palette > rgba8-3*w*h {
		t.Errorf("palette: %d MB, want a byte a pixel (49 MB), 147 MB less than RGBA (%d MB)", palette>>20, rgba8>>20)
	}
	if interlaced < rgba8+4*w*h {
		t.Errorf("interlaced: %d MB, want 196 MB more than progressive rows (%d MB)", interlaced>>20, rgba8>>20)
	}
	// A larger output costs more, from the same header.
	if big := need(pngHeaderOf(w, h, 8, 6, 0), 4000, 4000); big < rgba8+4*4000*4000 {
		t.Errorf("4000×4000 output: %d MB, want at least its 64 MB canvas over 320×320's %d MB", big>>20, rgba8>>20)
	}
	// Refusals are Probe's, and no pixel is read.
	if _, _, err := MemoryNeeded(bytes.NewReader(pngHeader(10000, 10000)), 10, 10, Cover); err == nil {
		t.Error("MemoryNeeded of a 100 MP header succeeded")
	}
	if _, _, err := MemoryNeeded(bytes.NewReader(pngHeader(10, 10)), 0, 10, Cover); err == nil {
		t.Error("MemoryNeeded of a 0×10 size succeeded")
	}
}

// A progressive JPEG keeps its DCT coefficients (4 bytes a sample, at full
// size whatever the decode's scale) until its last scan: it needs more
// than the same image baseline, and 4:4:4 more than 4:2:0.
func TestMemoryNeededProgressiveJPEG(t *testing.T) {
	need := func(name string) (Info, int64) {
		t.Helper()
		info, n, err := MemoryNeeded(bytes.NewReader(readTestdata(t, "../internal/fastjpeg/testdata/"+name)), 16, 16, Cover)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return info, n
	}
	info, baseline := need("video-001.q50.420.jpeg")
	_, progressive := need("video-001.q50.420.progressive.jpeg")
	_, progressive444 := need("video-001.q50.444.progressive.jpeg")
	px := int64(info.Width * info.Height)
	if progressive-baseline < 6*px {
		t.Errorf("4:2:0 progressive needs %d bytes more than baseline, want its coefficients, at least %d", progressive-baseline, 6*px)
	}
	if progressive444-baseline < 12*px {
		t.Errorf("4:4:4 progressive needs %d bytes more than baseline, want at least %d", progressive444-baseline, 12*px)
	}
}

// peakHeap runs f and returns how far the heap grew above where it
// started, sampled every 100 µs with the collector running often (so
// that what is sampled is what f holds, not garbage).
func peakHeap(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var top atomic.Uint64
	top.Store(base)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > top.Load() {
				top.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return int64(top.Load() - base)
}

// noise fills m's pixel bytes at random: incompressible, so its PNG is as
// large as its pixels.
func noise[M interface {
	*image.NRGBA | *image.NRGBA64 | *image.RGBA64 | *image.Gray16
}](m M) M {
	r := rand.New(rand.NewPCG(3, 4))
	var pix []uint8
	switch m := any(m).(type) {
	case *image.NRGBA:
		pix = m.Pix
	case *image.NRGBA64:
		pix = m.Pix
	case *image.RGBA64:
		pix = m.Pix
	case *image.Gray16:
		pix = m.Pix
	}
	for i := range pix {
		pix[i] = uint8(r.Uint32())
	}
	return m
}

// What a resize holds at its peak stays under MemoryNeeded's estimate, for
// the images that cost the most for their size: 16-bit and interlaced
// PNGs of incompressible noise, enlarged and reduced, and JPEGs.
func TestMemoryNeededBoundsResize(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes several megapixels of noise")
	}
	cases := []struct {
		name          string
		src           []byte
		width, height int
		fit           Fit
	}{
		{"16-bit RGBA 1200×1200 to 320×320", encPNG(t, noise(image.NewNRGBA64(image.Rect(0, 0, 1200, 1200)))), 320, 320, Cover},
		{"16-bit RGBA 1200×1200 to 1200×1200", encPNG(t, noise(image.NewNRGBA64(image.Rect(0, 0, 1200, 1200)))), 1200, 1200, Contain},
		{"8-bit RGBA 1500×1000 to 200×200", encPNG(t, noise(image.NewNRGBA(image.Rect(0, 0, 1500, 1000)))), 200, 200, Cover},
		{"8-bit RGBA 300×300 to 2000×2000", encPNG(t, noise(image.NewNRGBA(image.Rect(0, 0, 300, 300)))), 2000, 2000, Contain},
		{"16-bit grey 1000×1000 to 999×999", encPNG(t, noise(image.NewGray16(image.Rect(0, 0, 1000, 1000)))), 999, 999, Cover},
		{"JPEG 2000×1333 to 320×320", photoJPEG(t), 320, 320, Cover},
		{"JPEG 2000×1333 to 2000×2000", photoJPEG(t), 2000, 2000, Contain},
	}
	for _, c := range cases {
		_, need, err := MemoryNeeded(bytes.NewReader(c.src), c.width, c.height, c.fit)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		peak := peakHeap(func() {
			if _, err := Resize(&bytes.Buffer{}, bytes.NewReader(c.src), c.width, c.height, c.fit); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		})
		t.Logf("%s: peak %.1f MB, estimate %.1f MB", c.name, float64(peak)/1e6, float64(need)/1e6)
		if peak > need {
			t.Errorf("%s: the heap grew %d bytes, more than the estimate %d", c.name, peak, need)
		}
	}
}

// 16-bit images are read into premultiplied 8-bit rows exactly as the
// generic path (At(x, y).RGBA()) reads them.
func TestFetch16BitAsGeneric(t *testing.T) {
	for _, m := range []image.Image{
		noise(image.NewNRGBA64(image.Rect(0, 0, 64, 3))),
		noise(image.NewRGBA64(image.Rect(0, 0, 64, 3))),
		noise(image.NewGray16(image.Rect(0, 0, 64, 3))),
	} {
		fast, generic := make([]uint8, 4*60), make([]uint8, 4*60)
		newRowFetcher(m).fetch(fast, 2, 62, 1)
		newRowFetcher(struct{ image.Image }{m}).fetch(generic, 2, 62, 1)
		if !bytes.Equal(fast, generic) {
			t.Errorf("%T: fast row differs from the generic one", m)
		}
	}
}
