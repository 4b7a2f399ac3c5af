package fastjpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testFiles(t testing.TB) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob("testdata/*.jpeg")
	if err != nil || len(names) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	m := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(n)] = b
	}
	// Encoded by image/jpeg: 4:2:0, odd size, and grayscale.
	rng := rand.New(rand.NewPCG(3, 4))
	rgba := image.NewRGBA(image.Rect(0, 0, 133, 71))
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(i/97) + uint8(rng.IntN(40))
	}
	gray := image.NewGray(image.Rect(0, 0, 37, 90))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i) ^ uint8(rng.IntN(30))
	}
	for name, img := range map[string]image.Image{"rgba.jpeg": rgba, "gray.jpeg": gray} {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		m[name] = b.Bytes()
	}
	return m
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	switch a := a.(type) {
	case *image.YCbCr:
		if b, ok := b.(*image.YCbCr); ok && a.SubsampleRatio == b.SubsampleRatio && a.YStride == b.YStride && a.CStride == b.CStride {
			return bytes.Equal(a.Y, b.Y) && bytes.Equal(a.Cb, b.Cb) && bytes.Equal(a.Cr, b.Cr)
		}
	case *image.Gray:
		if b, ok := b.(*image.Gray); ok && a.Stride == b.Stride {
			return bytes.Equal(a.Pix, b.Pix)
		}
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// At scale 1 the fork must decode exactly as image/jpeg does.
func TestScale1MatchesStdlib(t *testing.T) {
	for name, data := range testFiles(t) {
		want, werr := jpeg.Decode(bytes.NewReader(data))
		got, gerr := Decode(bytes.NewReader(data), 1)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: image/jpeg err %v, fastjpeg err %v", name, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		if !samePixels(want, got) {
			t.Errorf("%s: pixels differ from image/jpeg (%T %v vs %T %v)", name, want, want.Bounds(), got, got.Bounds())
		}
	}
}

// Scaled decodes must have the right size and their luma must stay close to
// a box-filtered full decode. (Chroma is not compared: where it is
// subsampled, the reduced decode averages over the whole subsampled block,
// which a box over the nearest-upsampled full decode does not.) The
// difference is only bounded on the natural images: the generated noise
// images have most of their energy in frequencies that a DCT-domain
// low-pass drops but a box filter partly keeps.
func TestScaledCloseToBoxFilter(t *testing.T) {
	for name, data := range testFiles(t) {
		full, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			continue
		}
		checkMAD := strings.HasPrefix(name, "video-") && !strings.Contains(name, ".rgb.")
		fb := full.Bounds()
		for _, s := range []int{2, 4, 8} {
			m, err := Decode(bytes.NewReader(data), s)
			if err != nil {
				t.Errorf("%s scale %d: %v", name, s, err)
				continue
			}
			b := m.Bounds()
			if w, h := (fb.Dx()+s-1)/s, (fb.Dy()+s-1)/s; b.Dx() != w || b.Dy() != h {
				t.Errorf("%s scale %d: %v, want %dx%d", name, s, b, w, h)
				continue
			}
			var sum, n float64
			for y := 0; y+1 < fb.Dy()/s; y++ {
				for x := 0; x+1 < fb.Dx()/s; x++ {
					var box float64
					for j := 0; j < s; j++ {
						for i := 0; i < s; i++ {
							box += float64(color.GrayModel.Convert(full.At(fb.Min.X+x*s+i, fb.Min.Y+y*s+j)).(color.Gray).Y)
						}
					}
					got := float64(color.GrayModel.Convert(m.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y)
					sum += abs(box/float64(s*s) - got)
					n++
				}
			}
			mad := sum / n
			if checkMAD && mad > 4 {
				t.Errorf("%s scale %d: luma mean abs difference from box filter %.2f", name, s, mad)
			} else {
				t.Logf("%s scale %d: luma mean abs difference from box filter %.2f", name, s, mad)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestTruncated(t *testing.T) {
	for name, data := range testFiles(t) {
		for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) - 30} {
			_, werr := jpeg.Decode(bytes.NewReader(data[:cut]))
			for _, s := range []int{1, 2, 8} {
				_, gerr := Decode(bytes.NewReader(data[:cut]), s)
				if gerr == nil && werr != nil {
					t.Errorf("%s cut at %d scale %d: no error (image/jpeg: %v)", name, cut, s, werr)
				}
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, data := range testFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Small images only: the fuzzer should spend its time on many
		// inputs, not on big allocations.
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width*cfg.Height > 1<<16 {
			return
		}
		want, werr := jpeg.Decode(bytes.NewReader(data))
		got, gerr := Decode(bytes.NewReader(data), 1)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("image/jpeg err %v, fastjpeg err %v", werr, gerr)
		}
		if werr == nil && !samePixels(want, got) {
			t.Fatalf("pixels differ from image/jpeg")
		}
		for _, s := range []int{2, 4, 8} {
			m, err := Decode(bytes.NewReader(data), s)
			// The scale changes only the inverse DCT, never what is
			// accepted.
			if (err == nil) != (gerr == nil) {
				t.Fatalf("scale %d err %v, scale 1 err %v", s, err, gerr)
			}
			if err == nil {
				if b := m.Bounds(); b.Dx() != (cfg.Width+s-1)/s || b.Dy() != (cfg.Height+s-1)/s {
					t.Fatalf("scale %d: %v for %dx%d", s, b, cfg.Width, cfg.Height)
				}
			}
		}
	})
}
