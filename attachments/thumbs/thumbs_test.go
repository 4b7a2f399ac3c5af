package thumbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/attachments/thumbs/internal/fastjpeg"
	"golang.org/x/image/draw"
)

var (
	red   = color.NRGBA{255, 0, 0, 255}
	blue  = color.NRGBA{0, 0, 255, 255}
	green = color.NRGBA{0, 255, 0, 255}
)

// bands returns a 300×100 image: the left and right thirds green, the middle
// third red on its left half and blue on its right half.
func bands() *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 300, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 300; x++ {
			c := green
			switch {
			case x >= 100 && x < 150:
				c = red
			case x >= 150 && x < 200:
				c = blue
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func encPNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encGIF(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, m, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resize runs Resize and decodes its output, checking the content type
// against the decoded format.
func resize(t *testing.T, src []byte, w, h int, fit Fit) (image.Image, string) {
	t.Helper()
	var out bytes.Buffer
	ct, err := Resize(&out, bytes.NewReader(src), w, h, fit)
	if err != nil {
		t.Fatalf("Resize(%dx%d %s): %v", w, h, fit, err)
	}
	m, format, err := image.Decode(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("decoding output: %v", err)
	}
	if want := "image/" + format; ct != want {
		t.Fatalf("content type %q, output is %s", ct, format)
	}
	if b := m.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("Resize(%dx%d %s) gave %dx%d", w, h, fit, b.Dx(), b.Dy())
	}
	return m, ct
}

func nrgba(m image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
}

// near reports whether c is within tol of want on every channel.
func near(c, want color.NRGBA, tol int) bool {
	d := func(a, b uint8) bool { return int(a)-int(b) <= tol && int(b)-int(a) <= tol }
	return d(c.R, want.R) && d(c.G, want.G) && d(c.B, want.B) && d(c.A, want.A)
}

func checkColor(t *testing.T, m image.Image, x, y int, want color.NRGBA, tol int) {
	t.Helper()
	if c := nrgba(m, x, y); !near(c, want, tol) {
		t.Errorf("pixel (%d,%d) = %v, want %v ±%d", x, y, c, want, tol)
	}
}

func TestOutputDimensions(t *testing.T) {
	srcs := map[string][]byte{
		"png":  encPNG(t, bands()),
		"jpeg": encJPEG(t, bands()),
		"gif":  encGIF(t, bands()),
	}
	sizes := [][2]int{{1, 1}, {100, 100}, {320, 320}, {64, 16}, {16, 64}, {1, 200}, {200, 1}, {999, 37}, {640, 480}}
	for _, src := range srcs {
		for _, s := range sizes {
			for _, fit := range []Fit{Cover, Contain} {
				resize(t, src, s[0], s[1], fit)
			}
		}
	}
	// A large JPEG at each DCT scale (1/8, 1/4, 1/2, 1) and extreme shapes.
	for _, s := range [][2]int{{40, 30}, {100, 100}, {320, 320}, {1, 300}, {999, 37}} {
		for _, fit := range []Fit{Cover, Contain} {
			resize(t, photoJPEG(t), s[0], s[1], fit)
		}
	}
}

func TestCoverCropsCentre(t *testing.T) {
	// Cover of the 3:1 bands into a square keeps only the middle third:
	// red on the left, blue on the right, no green anywhere.
	for _, src := range [][]byte{encPNG(t, bands()), encJPEG(t, bands())} {
		m, _ := resize(t, src, 100, 100, Cover)
		checkColor(t, m, 5, 50, red, 12)
		checkColor(t, m, 45, 10, red, 12)
		checkColor(t, m, 55, 90, blue, 12)
		checkColor(t, m, 95, 50, blue, 12)
	}
	// Downscaled by 2 (the box pre-shrink path for k≥2 needs ratio ≥ 4).
	m, _ := resize(t, encPNG(t, bands()), 20, 20, Cover)
	checkColor(t, m, 2, 10, red, 12)
	checkColor(t, m, 17, 10, blue, 12)
}

func TestContainPadsTransparentPNG(t *testing.T) {
	// 300×100 contained in 120×120: a 120×40 band at rows 40..80.
	for _, src := range [][]byte{encPNG(t, bands()), encGIF(t, bands())} {
		m, ct := resize(t, src, 120, 120, Contain)
		if ct != ContentTypePNG {
			t.Fatalf("content type %q", ct)
		}
		for _, y := range []int{0, 20, 39, 80, 100, 119} {
			for _, x := range []int{0, 60, 119} {
				if c := nrgba(m, x, y); c.A != 0 {
					t.Errorf("pad pixel (%d,%d) = %v, want transparent", x, y, c)
				}
			}
		}
		checkColor(t, m, 10, 60, green, 8)
		checkColor(t, m, 45, 60, red, 8)
		checkColor(t, m, 75, 60, blue, 8)
		checkColor(t, m, 110, 60, green, 8)
		checkColor(t, m, 64, 41, blue, 8)
		checkColor(t, m, 55, 78, red, 8)
	}
}

func TestContainJPEGPadsWhite(t *testing.T) {
	m, ct := resize(t, encJPEG(t, bands()), 120, 120, Contain)
	if ct != ContentTypeJPEG {
		t.Fatalf("content type %q", ct)
	}
	white := color.NRGBA{255, 255, 255, 255}
	checkColor(t, m, 60, 5, white, 4)
	checkColor(t, m, 60, 115, white, 4)
	checkColor(t, m, 10, 60, green, 16)
	checkColor(t, m, 45, 60, red, 16)
	checkColor(t, m, 75, 60, blue, 16)
}

func TestContainPortrait(t *testing.T) {
	// A 1×3 portrait source (100×300: top red, bottom blue) in a 300×100
	// box: a 33×100 column centred horizontally.
	src := image.NewNRGBA(image.Rect(0, 0, 100, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 100; x++ {
			c := red
			if y >= 150 {
				c = blue
			}
			src.SetNRGBA(x, y, c)
		}
	}
	m, _ := resize(t, encPNG(t, src), 300, 100, Contain)
	checkColor(t, m, 150, 10, red, 8)
	checkColor(t, m, 150, 90, blue, 8)
	for _, x := range []int{0, 100, 200, 299} {
		if c := nrgba(m, x, 50); c.A != 0 {
			t.Errorf("pad pixel (%d,50) = %v, want transparent", x, c)
		}
	}
}

func TestTransparencyKept(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 100; x++ {
			src.SetNRGBA(x, y, color.NRGBA{255, 0, 0, 128})
		}
	}
	m, _ := resize(t, encPNG(t, src), 20, 20, Cover)
	checkColor(t, m, 3, 10, color.NRGBA{255, 0, 0, 128}, 3)
	checkColor(t, m, 16, 10, color.NRGBA{0, 0, 0, 0}, 0)
}

func TestFormats(t *testing.T) {
	cases := []struct {
		name   string
		src    []byte
		format string
		w, h   int
		ct     string
	}{
		{"png", encPNG(t, bands()), FormatPNG, 300, 100, ContentTypePNG},
		{"jpeg", encJPEG(t, bands()), FormatJPEG, 300, 100, ContentTypeJPEG},
		{"gif", encGIF(t, bands()), FormatGIF, 300, 100, ContentTypePNG},
		{"webp lossless", readTestdata(t, "tiny.lossless.webp"), FormatWebP, 75, 100, ContentTypePNG},
		{"webp lossy", readTestdata(t, "small.lossy.webp"), FormatWebP, 150, 100, ContentTypePNG},
		{"gray png", encPNG(t, image.NewGray(image.Rect(0, 0, 40, 30))), FormatPNG, 40, 30, ContentTypePNG},
		{"gray jpeg", encJPEG(t, image.NewGray(image.Rect(0, 0, 40, 30))), FormatJPEG, 40, 30, ContentTypeJPEG},
		{"png16", encPNG(t, image.NewRGBA64(image.Rect(0, 0, 40, 30))), FormatPNG, 40, 30, ContentTypePNG},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := Probe(bytes.NewReader(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if info != (Info{Format: c.format, Width: c.w, Height: c.h}) {
				t.Fatalf("Probe = %+v", info)
			}
			for _, fit := range []Fit{Cover, Contain} {
				for _, s := range [][2]int{{8, 8}, {50, 20}, {320, 320}} {
					_, ct := resize(t, c.src, s[0], s[1], fit)
					if ct != c.ct {
						t.Errorf("content type %q, want %q", ct, c.ct)
					}
				}
			}
		})
	}
}

// A GIF whose first frame covers only part of its logical screen: the rest
// is transparent.
func TestGIFPartialFrame(t *testing.T) {
	pal := color.Palette{color.NRGBA{0, 0, 0, 0}, red}
	frame := image.NewPaletted(image.Rect(50, 0, 100, 100), pal)
	for i := range frame.Pix {
		frame.Pix[i] = 1
	}
	var b bytes.Buffer
	err := gif.EncodeAll(&b, &gif.GIF{
		Image:  []*image.Paletted{frame},
		Delay:  []int{0},
		Config: image.Config{Width: 100, Height: 100, ColorModel: pal},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := resize(t, b.Bytes(), 50, 50, Cover)
	checkColor(t, m, 10, 25, color.NRGBA{}, 0)
	checkColor(t, m, 40, 25, red, 8)
}

func TestNotImage(t *testing.T) {
	png := encPNG(t, bands())
	for name, src := range map[string][]byte{
		"empty":         {},
		"text":          []byte("hello, world, this is not an image at all"),
		"html":          []byte("<!doctype html><html></html>"),
		"bmp":           []byte("BM\x00\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00"),
		"png magic":     png[:8],
		"png truncated": png[:30],
		"jpeg magic":    {0xff, 0xd8, 0xff},
		"riff not webp": []byte("RIFF\x10\x00\x00\x00WAVEfmt "),
		"gif magic":     []byte("GIF89a"),
	} {
		if _, err := Probe(bytes.NewReader(src)); !errors.Is(err, ErrNotImage) {
			t.Errorf("Probe(%s) = %v, want ErrNotImage", name, err)
		}
		if _, err := Resize(&bytes.Buffer{}, bytes.NewReader(src), 10, 10, Cover); !errors.Is(err, ErrNotImage) {
			t.Errorf("Resize(%s) = %v, want ErrNotImage", name, err)
		}
	}
	// A valid header with truncated pixel data probes fine but does not resize.
	for name, src := range map[string][]byte{
		"png body": png[:len(png)-40],
		"jpeg":     encJPEG(t, bands())[:300],
	} {
		var out bytes.Buffer
		if _, err := Resize(&out, bytes.NewReader(src), 10, 10, Cover); !errors.Is(err, ErrNotImage) {
			t.Errorf("Resize(truncated %s) = %v, want ErrNotImage", name, err)
		}
		if out.Len() != 0 {
			t.Errorf("Resize(truncated %s) wrote %d bytes", name, out.Len())
		}
	}
}

// pngHeader returns a PNG signature plus a valid IHDR chunk (8-bit RGBA)
// declaring w×h, with nothing after it.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 0, 17)
	ihdr = append(ihdr, "IHDR"...)
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // depth, colour type RGBA, compression, filter, interlace
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
	return b.Bytes()
}

func TestBombRefused(t *testing.T) {
	bomb := pngHeader(10000, 10000)
	if info, err := Probe(bytes.NewReader(bomb)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Probe(10000x10000) = %+v, %v; want ErrTooLarge", info, err)
	} else if info.Width != 10000 || info.Height != 10000 || info.Format != FormatPNG {
		t.Errorf("Probe(10000x10000) info = %+v", info)
	}
	// Followed by an IDAT, as a real bomb would be: still refused, and
	// without allocating anything like 400 MB of pixels.
	bomb = append(bomb, 0, 0, 0, 0, 'I', 'D', 'A', 'T', 0x35, 0xaf, 0x06, 0x1e)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Resize(&bytes.Buffer{}, bytes.NewReader(bomb), 100, 100, Cover)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Resize(bomb) = %v, want ErrTooLarge", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("Resize(bomb) allocated %d bytes", n)
	}
	// Just under the limit is accepted by Probe (7071² < 50 MP).
	if _, err := Probe(bytes.NewReader(pngHeader(7071, 7071))); err != nil {
		t.Errorf("Probe(7071x7071) = %v", err)
	}
	if _, err := Probe(bytes.NewReader(pngHeader(50_000_001, 1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Probe(50000001x1) = %v, want ErrTooLarge", err)
	}
	// The other formats' headers, each declaring far more than 50 MP.
	jpegBomb := []byte("\xff\xd8" +
		"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + // APP0 JFIF
		"\xff\xc0\x00\x11\x08\xff\xff\xff\xff\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01") // SOF0 65535×65535
	gifBomb := []byte("GIF89a\xff\xff\xff\xff\x00\x00\x00") // 65535×65535 screen
	webpBomb := []byte("RIFF\x16\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00" +
		"\xff\x3f\x00\xff\x3f\x00") // VP8X canvas 16384×16384
	for name, b := range map[string][]byte{"jpeg": jpegBomb, "gif": gifBomb, "webp": webpBomb} {
		info, err := Probe(bytes.NewReader(b))
		if !errors.Is(err, ErrTooLarge) || info.Format != name {
			t.Errorf("Probe(%s bomb) = %+v, %v; want ErrTooLarge", name, info, err)
		}
		if _, err := Resize(&bytes.Buffer{}, bytes.NewReader(b), 10, 10, Contain); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Resize(%s bomb) = %v, want ErrTooLarge", name, err)
		}
	}
}

func TestDeterministic(t *testing.T) {
	srcs := [][]byte{
		photoJPEG(t),
		encPNG(t, bands()),
		encGIF(t, bands()),
		readTestdata(t, "small.lossy.webp"),
	}
	for i, src := range srcs {
		for _, fit := range []Fit{Cover, Contain} {
			var a, b bytes.Buffer
			if _, err := Resize(&a, bytes.NewReader(src), 97, 61, fit); err != nil {
				t.Fatal(err)
			}
			if _, err := Resize(&b, bytes.NewReader(src), 97, 61, fit); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("source %d %s: two runs differ", i, fit)
			}
		}
	}
}

func TestInvalidParams(t *testing.T) {
	src := encPNG(t, bands())
	for _, c := range []struct {
		w, h int
		fit  Fit
	}{
		{0, 10, Cover}, {10, 0, Cover}, {-1, 10, Contain}, {4001, 10, Cover},
		{10, 4001, Contain}, {10, 10, ""}, {10, 10, "fill"}, {10, 10, "COVER"},
	} {
		var out bytes.Buffer
		if _, err := Resize(&out, bytes.NewReader(src), c.w, c.h, c.fit); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("Resize(%d, %d, %q) = %v, want ErrInvalidParams", c.w, c.h, c.fit, err)
		}
	}
	// The bounds themselves are fine.
	resize(t, src, 4000, 1, Cover)
	resize(t, src, 1, 4000, Contain)
}

func TestIsImageType(t *testing.T) {
	for mime, want := range map[string]bool{
		"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
		"IMAGE/PNG": true, "image/png; charset=binary": true,
		"image/bmp": false, "image/svg+xml": false, "image/tiff": false, "image/x-icon": false,
		"text/plain; charset=utf-8": false, "": false, "application/octet-stream": false,
	} {
		if got := IsImageType(mime); got != want {
			t.Errorf("IsImageType(%q) = %v", mime, got)
		}
	}
}

func TestWriterError(t *testing.T) {
	_, err := Resize(failWriter{}, bytes.NewReader(encPNG(t, bands())), 10, 10, Cover)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Resize to failing writer = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// psnr returns the peak signal-to-noise ratio between two same-size images
// over R, G and B.
func psnr(a, b image.Image) float64 {
	var se, n float64
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c1, c2 := nrgba(a, x, y), nrgba(b, x, y)
			for _, d := range []float64{float64(c1.R) - float64(c2.R), float64(c1.G) - float64(c2.G), float64(c1.B) - float64(c2.B)} {
				se += d * d
				n++
			}
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/n))
}

// The fast path (DCT-scaled decode, box pre-shrink, integer Catmull-Rom)
// must look like the slow, obviously right one: a full image/jpeg decode
// scaled with x/image/draw's Catmull-Rom. Both are compared before JPEG
// re-encoding, as lossless PNGs, and against the pristine source too.
func TestQualityAgainstNaive(t *testing.T) {
	orig := photoRGBA()
	src := photoJPEG(t)
	full, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w, h int
		fit  Fit
	}{{320, 320, Cover}, {100, 100, Cover}, {640, 200, Cover}, {300, 300, Contain}, {50, 40, Contain}} {
		d := decoded{srcW: 2000, srcH: 1333, scale: jpegScale(Info{FormatJPEG, 2000, 1333}, c.w, c.h, c.fit)}
		d.img, err = fastjpeg.Decode(bytes.NewReader(src), d.scale)
		if err != nil {
			t.Fatal(err)
		}
		// Render as if for PNG output, to compare pixels without another
		// lossy encode.
		got := render(d, Info{FormatPNG, 2000, 1333}, c.w, c.h, c.fit)
		l := plan(2000, 1333, c.w, c.h, c.fit)
		cw, ch := int(l.cropW+0.5), int(l.cropH+0.5)
		crop := image.Rect(0, 0, cw, ch).Add(image.Pt((2000-cw)/2, (1333-ch)/2))
		want := image.NewRGBA(image.Rect(0, 0, c.w, c.h))
		draw.CatmullRom.Scale(want, l.dst, full, crop, draw.Src, nil)
		ideal := image.NewRGBA(image.Rect(0, 0, c.w, c.h))
		draw.CatmullRom.Scale(ideal, l.dst, orig, crop, draw.Src, nil)
		p, pi := psnr(got, want), psnr(got, ideal)
		t.Logf("%dx%d %s (JPEG decoded at 1/%d): PSNR %.1f dB against the naive path, %.1f dB against the unencoded source (naive: %.1f dB)",
			c.w, c.h, c.fit, d.scale, p, pi, psnr(want, ideal))
		if p < 30 {
			t.Errorf("%dx%d %s: PSNR %.1f dB against the naive path", c.w, c.h, c.fit, p)
		}
	}
}

// withOrientation inserts an APP1 Exif segment with the given Orientation
// after a JPEG's SOI marker, in big- or little-endian TIFF.
func withOrientation(jpg []byte, o uint16, little bool) []byte {
	var bo binary.AppendByteOrder = binary.BigEndian
	tiff := []byte("MM\x00*")
	if little {
		bo, tiff = binary.LittleEndian, []byte("II*\x00")
	}
	tiff = bo.AppendUint32(tiff, 8)       // IFD0 offset
	tiff = bo.AppendUint16(tiff, 2)       // entries
	tiff = bo.AppendUint16(tiff, 0x010f)  // Make, ASCII, an unrelated entry first
	tiff = bo.AppendUint16(tiff, 2)       //
	tiff = bo.AppendUint32(tiff, 4)       //
	tiff = append(tiff, 'G', 'o', 0, 0)   //
	tiff = bo.AppendUint16(tiff, 0x0112)  // Orientation
	tiff = bo.AppendUint16(tiff, 3)       // SHORT
	tiff = bo.AppendUint32(tiff, 1)       // count
	tiff = bo.AppendUint16(tiff, o)       // value
	tiff = append(tiff, 0, 0, 0, 0, 0, 0) // padding, next IFD = 0
	seg := append([]byte("Exif\x00\x00"), tiff...)
	out := append([]byte{0xff, 0xd8, 0xff, 0xe1}, byte((len(seg)+2)>>8), byte(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

func TestEXIFOrientation(t *testing.T) {
	// Stored: 200×100, left half red, right half blue.
	src := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 200; x++ {
			c := color.RGBA{255, 0, 0, 255}
			if x >= 100 {
				c = color.RGBA{0, 0, 255, 255}
			}
			src.SetRGBA(x, y, c)
		}
	}
	jpg := encJPEG(t, src)
	if o := jpegOrientation(jpg); o != 1 {
		t.Fatalf("no EXIF: orientation %d", o)
	}
	for _, c := range []struct {
		o      uint16
		w, h   int
		pts    [2][2]int // where red, then blue, must be
		little bool
	}{
		{1, 80, 40, [2][2]int{{10, 20}, {70, 20}}, false},
		{2, 80, 40, [2][2]int{{70, 20}, {10, 20}}, true},  // mirrored
		{3, 80, 40, [2][2]int{{70, 20}, {10, 20}}, false}, // 180°
		{4, 80, 40, [2][2]int{{10, 20}, {70, 20}}, true},  // flipped vertically
		{5, 40, 80, [2][2]int{{20, 10}, {20, 70}}, false}, // transposed
		{6, 40, 80, [2][2]int{{20, 10}, {20, 70}}, true},  // 90° clockwise: left goes to the top
		{7, 40, 80, [2][2]int{{20, 70}, {20, 10}}, false},
		{8, 40, 80, [2][2]int{{20, 70}, {20, 10}}, true}, // 90° anticlockwise: left goes to the bottom
	} {
		data := withOrientation(jpg, c.o, c.little)
		if o := jpegOrientation(data); o != int(c.o) {
			t.Fatalf("jpegOrientation = %d, want %d", o, c.o)
		}
		info, err := Probe(bytes.NewReader(data))
		if err != nil || info.Width != 200 || info.Height != 100 {
			t.Fatalf("Probe = %+v, %v", info, err)
		}
		// Cover to the display aspect ratio: nothing is cropped.
		m, _ := resize(t, data, c.w, c.h, Cover)
		checkColor(t, m, c.pts[0][0], c.pts[0][1], red, 20)
		checkColor(t, m, c.pts[1][0], c.pts[1][1], blue, 20)
		// Contain into a square: padded along the display's short side.
		m, _ = resize(t, data, 60, 60, Contain)
		white := color.NRGBA{255, 255, 255, 255}
		if transposed(int(c.o)) {
			checkColor(t, m, 2, 30, white, 20)
			checkColor(t, m, 57, 30, white, 20)
		} else {
			checkColor(t, m, 30, 2, white, 20)
			checkColor(t, m, 30, 57, white, 20)
		}
	}
	// Malformed EXIF is ignored.
	bad := withOrientation(jpg, 9, false)
	if o := jpegOrientation(bad); o != 1 {
		t.Errorf("orientation 9 read as %d", o)
	}
	for cut := 4; cut < 60; cut++ {
		b := append([]byte(nil), withOrientation(jpg, 6, false)[:cut]...)
		jpegOrientation(b) // must not panic
	}
}
