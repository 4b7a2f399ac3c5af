package thumbs

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"testing"

	"github.com/tenantkit/tenantkit/attachments/thumbs/internal/fastjpeg"
	"golang.org/x/image/draw"
)

// BenchmarkResizeCover2000x1333 is the target: a cold 320×320 cover
// thumbnail of a 2000×1333 JPEG (decode, resize, encode).
func BenchmarkResizeCover2000x1333(b *testing.B) {
	src := photoJPEG(b)
	b.Logf("source: %d bytes (%.2f bits/pixel)", len(src), float64(8*len(src))/(2000*1333))
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := Resize(io.Discard, bytes.NewReader(src), 320, 320, Cover); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResizeCover2000x1333Naive does the same work the naive way:
// image/jpeg decode of the whole image, draw.CatmullRom over the full-size
// crop, JPEG encode. It is the in-run baseline for the benchmark above.
func BenchmarkResizeCover2000x1333Naive(b *testing.B) {
	src := photoJPEG(b)
	defer cpuMeter(b)()
	for b.Loop() {
		img, err := jpeg.Decode(bytes.NewReader(src))
		if err != nil {
			b.Fatal(err)
		}
		r := img.Bounds()
		side := min(r.Dx(), r.Dy())
		crop := image.Rect(0, 0, side, side).Add(image.Pt((r.Dx()-side)/2, (r.Dy()-side)/2))
		dst := image.NewRGBA(image.Rect(0, 0, 320, 320))
		draw.CatmullRom.Scale(dst, dst.Rect, img, crop, draw.Src, nil)
		if err := jpeg.Encode(io.Discard, dst, &jpeg.Options{Quality: JPEGQuality}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJPEG2000x1333 is image/jpeg's full decode alone, for
// comparison.
func BenchmarkDecodeJPEG2000x1333(b *testing.B) {
	src := photoJPEG(b)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := jpeg.Decode(bytes.NewReader(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFastJPEG2000x1333 is this package's JPEG decoder at full
// size and at the 1/2 DCT scale that the cover benchmark uses.
func BenchmarkDecodeFastJPEG2000x1333(b *testing.B) {
	src := photoJPEG(b)
	for _, scale := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("denom=%d", scale), func(b *testing.B) {
			defer cpuMeter(b)()
			for b.Loop() {
				if _, err := fastjpeg.Decode(bytes.NewReader(src), scale); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResizeContainPNG1000x667 is a PNG source (decoded as RGBA, so
// the premultiplied-RGBA path) to a 320×320 contain thumbnail, PNG output.
func BenchmarkResizeContainPNG1000x667(b *testing.B) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, synthPhoto(1000, 667)); err != nil {
		b.Fatal(err)
	}
	src := buf.Bytes()
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := Resize(io.Discard, bytes.NewReader(src), 320, 320, Contain); err != nil {
			b.Fatal(err)
		}
	}
}
