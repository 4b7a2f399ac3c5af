package thumbs

import (
	"bytes"
	"errors"
	"image"
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds every file in testdata/ (not the fuzz/ corpus, which the
// fuzzing engine adds itself) plus generated images to the seed corpus.
func addSeeds(f *testing.F, add func([]byte)) {
	f.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
	small := image.NewNRGBA(image.Rect(0, 0, 12, 7))
	for i := range small.Pix {
		small.Pix[i] = uint8(i * 7)
	}
	add(encPNG(f, small))
	add(encJPEG(f, small))
	add(encGIF(f, small))
	add(encJPEG(f, image.NewGray(image.Rect(0, 0, 9, 17))))
	add(pngHeader(10000, 10000))
	add(pngHeader(1, 1))
	add([]byte("not an image"))
}

// FuzzProbe checks that Probe never panics and never reports success for an
// image larger than MaxPixels (or with a non-positive dimension), that
// the EXIF orientation parser never panics, and that MemoryNeeded agrees
// with Probe.
func FuzzProbe(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		if o := jpegOrientation(data); o < 1 || o > 8 {
			t.Fatalf("jpegOrientation = %d", o)
		}
		info, err := Probe(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Probe error %v is neither ErrNotImage nor ErrTooLarge", err)
			}
			return
		}
		if info.Width <= 0 || info.Height <= 0 || int64(info.Width)*int64(info.Height) > MaxPixels {
			t.Fatalf("Probe accepted %+v", info)
		}
		switch info.Format {
		case FormatPNG, FormatJPEG, FormatGIF, FormatWebP:
		default:
			t.Fatalf("Probe format %q", info.Format)
		}
		// The estimate reads the same header: it agrees with Probe and
		// counts at least a byte per decoded pixel.
		got, need, err := MemoryNeeded(bytes.NewReader(data), 320, 240, Cover)
		if err != nil || got != info || need < int64(info.Width)*int64(info.Height) {
			t.Fatalf("MemoryNeeded = %+v, %d, %v; Probe said %+v", got, need, err, info)
		}
	})
}

// FuzzResize checks that Resize never panics, returns the documented errors
// and, on success, writes a decodable image of exactly the requested size.
func FuzzResize(f *testing.F) {
	addSeeds(f, func(b []byte) {
		f.Add(b, uint8(7), uint8(5), false)
		f.Add(b, uint8(3), uint8(40), true)
	})
	f.Fuzz(func(t *testing.T, data []byte, w, h uint8, contain bool) {
		// Keep the fuzzer fast: images that are valid but large only burn
		// memory and time (the pixel limit itself is covered by FuzzProbe).
		if info, err := Probe(bytes.NewReader(data)); err == nil && info.Width*info.Height > 1<<20 {
			t.Skip()
		}
		width, height := int(w%64)+1, int(h%64)+1
		fit := Cover
		if contain {
			fit = Contain
		}
		var out bytes.Buffer
		ct, err := Resize(&out, bytes.NewReader(data), width, height, fit)
		if err != nil {
			if !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Resize error %v is neither ErrNotImage nor ErrTooLarge", err)
			}
			if out.Len() != 0 {
				t.Fatalf("Resize failed but wrote %d bytes", out.Len())
			}
			return
		}
		m, format, err := image.Decode(&out)
		if err != nil {
			t.Fatalf("output does not decode: %v", err)
		}
		if "image/"+format != ct {
			t.Fatalf("content type %q for %s output", ct, format)
		}
		if b := m.Bounds(); b.Dx() != width || b.Dy() != height {
			t.Fatalf("output %v, want %dx%d", b, width, height)
		}
	})
}
