package thumbs

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// synthPhoto returns a deterministic, photo-like w×h image: smooth colour
// gradients, a few soft-edged discs and stripes (real edges and texture for
// the encoder) and fixed-seed sensor-like noise.
func synthPhoto(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	type disc struct{ cx, cy, r float64 }
	discs := []disc{
		{0.3 * float64(w), 0.4 * float64(h), 0.15 * float64(h)},
		{0.7 * float64(w), 0.6 * float64(h), 0.25 * float64(h)},
		{0.5 * float64(w), 0.2 * float64(h), 0.08 * float64(h)},
	}
	clamp := func(v float64) uint8 {
		if v < 0 {
			return 0
		}
		if v > 255 {
			return 255
		}
		return uint8(v)
	}
	for y := 0; y < h; y++ {
		fy := float64(y) / float64(h)
		for x := 0; x < w; x++ {
			fx := float64(x) / float64(w)
			r := 40 + 160*fx + 30*math.Sin(6*fy)
			g := 60 + 120*fy + 25*math.Sin(9*fx+2*fy)
			b := 140 - 80*fx*fy + 20*math.Cos(5*fx)
			for i, d := range discs {
				dist := math.Hypot(float64(x)-d.cx, float64(y)-d.cy)
				if dist < d.r {
					// Textured disc: fine stripes inside.
					t := 50 * math.Sin(float64(x+2*y)/(3+float64(i)))
					r, g, b = 200-float64(i)*60+t, 80+float64(i)*50+t/2, 60+float64(i)*70-t/3
				}
			}
			n := float64(rng.IntN(17) - 8)
			img.SetRGBA(x, y, color.RGBA{clamp(r + n), clamp(g + n), clamp(b + n/2), 255})
		}
	}
	return img
}

var (
	photoOnce sync.Once
	photo     *image.RGBA
	photoEnc  []byte
)

func makePhoto() {
	photoOnce.Do(func() {
		photo = synthPhoto(2000, 1333)
		var b bytes.Buffer
		if err := jpeg.Encode(&b, photo, &jpeg.Options{Quality: 90}); err != nil {
			panic(err)
		}
		photoEnc = b.Bytes()
	})
}

// photoJPEG returns the 2000×1333 synthetic photo encoded as JPEG quality 90.
func photoJPEG(testing.TB) []byte {
	makePhoto()
	return photoEnc
}

// photoRGBA returns the 2000×1333 synthetic photo before encoding.
func photoRGBA() *image.RGBA {
	makePhoto()
	return photo
}
