package thumbs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/tenantkit/tenantkit/attachments/thumbs/internal/fastjpeg"
	"github.com/tenantkit/tenantkit/internal/imagefit"
	"golang.org/x/image/webp"
)

// MaxPixels is the largest image, in pixels (width×height as declared by the
// image header), that Probe accepts and Resize decodes. Anything larger is
// refused with ErrTooLarge before a single pixel is allocated.
const MaxPixels = 50_000_000

// MaxSize is the largest width or height, in pixels, that Resize produces
// (attachments.MaxImageSize).
const MaxSize = imagefit.MaxSize

// Fit says how Resize maps the source image onto the requested box. It is
// attachments.Fit.
type Fit = imagefit.Fit

const (
	// Cover scales the image so that it fills the whole box and crops the
	// overflow evenly on both sides (centre crop). The output is exactly the
	// requested width×height and has no padding.
	Cover = imagefit.Cover
	// Contain scales the image so that it fits entirely inside the box and
	// centres it on a canvas of exactly the requested width×height. The
	// padding is transparent for PNG output and white for JPEG output.
	Contain = imagefit.Contain
)

var (
	// ErrNotImage reports input that is not a PNG, JPEG, GIF or WebP image,
	// whose header cannot be decoded, or (from Resize) whose pixel data is
	// corrupt. It is attachments.ErrImageUnsupported.
	ErrNotImage = imagefit.ErrUnsupported
	// ErrTooLarge reports an image whose header declares more than MaxPixels
	// pixels (a decompression or "pixel" bomb). It is detected from the
	// header alone. It is attachments.ErrImageTooLarge.
	ErrTooLarge = imagefit.ErrTooLarge
	// ErrInvalidParams reports a width or height outside 1..MaxSize or an
	// unknown Fit passed to Resize.
	ErrInvalidParams = errors.New("thumbs: invalid resize parameters")
)

// Format names reported in Info.Format.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	FormatGIF  = "gif"
	FormatWebP = "webp"
)

// Info describes an image as declared by its header.
type Info struct {
	// Format is one of "png", "jpeg", "gif" or "webp".
	Format string
	// Width and Height are the pixel dimensions declared by the header
	// (as stored: before any EXIF orientation, which Resize applies).
	Width, Height int
}

// sniff returns the format whose magic number starts b, or "".
func sniff(b []byte) string {
	switch {
	case len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return FormatPNG
	case len(b) >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff:
		return FormatJPEG
	case len(b) >= 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return FormatGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return FormatWebP
	}
	return ""
}

// Probe reads the image header from r (only as much of r as the format's
// DecodeConfig needs, plus read-ahead buffering) and reports the format and
// declared dimensions.
//
// It returns an error wrapping ErrNotImage if r does not start with a PNG,
// JPEG, GIF or WebP signature or the header does not decode, and
// ErrTooLarge, together with the decoded Info, if the header declares more
// than MaxPixels pixels.
func Probe(r io.Reader) (Info, error) {
	return probe(bufio.NewReaderSize(r, 512))
}

func probe(br *bufio.Reader) (info Info, err error) {
	defer func() {
		if p := recover(); p != nil {
			info, err = Info{}, fmt.Errorf("%w: header decoder panic: %v", ErrNotImage, p)
		}
	}()
	magic, _ := br.Peek(12)
	format := sniff(magic)
	var cfg image.Config
	switch format {
	case FormatPNG:
		cfg, err = png.DecodeConfig(br)
	case FormatJPEG:
		cfg, err = jpeg.DecodeConfig(br)
	case FormatGIF:
		cfg, err = gif.DecodeConfig(br)
	case FormatWebP:
		cfg, err = webp.DecodeConfig(br)
	default:
		return Info{}, fmt.Errorf("%w: unrecognised signature", ErrNotImage)
	}
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s header: %v", ErrNotImage, format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Info{}, fmt.Errorf("%w: %s header declares %dx%d", ErrNotImage, format, cfg.Width, cfg.Height)
	}
	info = Info{Format: format, Width: cfg.Width, Height: cfg.Height}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return info, fmt.Errorf("%w: %dx%d exceeds %d pixels", ErrTooLarge, cfg.Width, cfg.Height, MaxPixels)
	}
	return info, nil
}

// IsImageType reports whether a sniffed MIME type (for example from
// http.DetectContentType; parameters such as "; charset=" are ignored) is one
// that Resize accepts: image/png, image/jpeg, image/gif or image/webp.
func IsImageType(mime string) bool { return imagefit.WebImage(mime) }

// Content types returned by Resize.
const (
	ContentTypeJPEG = "image/jpeg"
	ContentTypePNG  = "image/png"
)

// JPEGQuality is the quality used for JPEG output.
const JPEGQuality = 85

// Resize decodes the image in src and writes a width×height thumbnail of it
// to w, returning the Content-Type of what it wrote ("image/jpeg" or
// "image/png").
//
// The header is checked first exactly as Probe does, so unsupported input
// fails with ErrNotImage and pixel bombs with ErrTooLarge before anything
// is decoded. Width and height must be in 1..MaxSize and fit Cover or
// Contain, otherwise the error wraps ErrInvalidParams.
//
// JPEG sources produce JPEG output (quality JPEGQuality; with Contain the
// padding is white). PNG, GIF and WebP sources produce PNG output (with
// Contain the padding is fully transparent). Only the first frame of an
// animated GIF is used. A JPEG's EXIF orientation is applied: width and
// height are those of the image as displayed.
//
// The output is a deterministic function of the input bytes and parameters.
// Nothing is written to w unless the whole thumbnail was produced, except
// when w itself fails part-way.
func Resize(w io.Writer, src io.Reader, width, height int, fit Fit) (contentType string, err error) {
	if width < 1 || width > MaxSize || height < 1 || height > MaxSize {
		return "", fmt.Errorf("%w: size %dx%d not in 1..%d", ErrInvalidParams, width, height, MaxSize)
	}
	if fit != Cover && fit != Contain {
		return "", fmt.Errorf("%w: fit %q", ErrInvalidParams, string(fit))
	}

	// Probe through a tee so that the decoder can re-read the header bytes.
	var head bytes.Buffer
	info, err := probe(bufio.NewReaderSize(io.TeeReader(src, &head), 512))
	if err != nil {
		return "", err
	}
	// JPEG EXIF orientation: resize in stored orientation (to the box
	// turned the same way), then turn the small result.
	orientation := 1
	if info.Format == FormatJPEG {
		orientation = jpegOrientation(head.Bytes())
	}
	tw, th := width, height
	if transposed(orientation) {
		tw, th = height, width
	}
	img, err := decode(io.MultiReader(&head, src), info, tw, th, fit)
	if err != nil {
		return "", err
	}

	out, err := renderSafe(img, info, tw, th, fit, orientation)
	if err != nil {
		return "", err
	}

	// A *bytes.Buffer is encoded into directly (and cut back on failure):
	// the output is not held twice.
	buf, direct := w.(*bytes.Buffer)
	if !direct {
		buf = new(bytes.Buffer)
	}
	n0 := buf.Len()
	if info.Format == FormatJPEG {
		contentType = ContentTypeJPEG
		err = jpeg.Encode(buf, out, &jpeg.Options{Quality: JPEGQuality})
	} else {
		contentType = ContentTypePNG
		err = pngEncoder.Encode(buf, out)
	}
	if err != nil {
		buf.Truncate(n0)
		return "", fmt.Errorf("thumbs: encode: %w", err)
	}
	if !direct {
		if _, err := w.Write(buf.Bytes()); err != nil {
			return "", err
		}
	}
	return contentType, nil
}

// renderSafe is render with panics (bugs) turned into errors, so that one
// bad image cannot take the server down.
func renderSafe(d decoded, info Info, width, height int, fit Fit, orientation int) (out image.Image, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("thumbs: internal error resizing %s %dx%d to %dx%d %s: %v",
				info.Format, info.Width, info.Height, width, height, fit, p)
		}
	}()
	out = render(d, info, width, height, fit)
	if orientation != 1 {
		out = orient(out, orientation)
	}
	return out, nil
}

var pngEncoder = png.Encoder{CompressionLevel: png.DefaultCompression}

// decoded is a decoded source image together with the size of the image it
// represents: a JPEG decoded at a reduced DCT scale is smaller than the
// header's dimensions.
type decoded struct {
	img   image.Image
	srcW  int // full-size width declared by the header
	srcH  int
	scale int // img is the source downscaled by 1/scale (1, 2, 4 or 8)
}

// decode decodes the image body. r starts at the beginning of the file.
// Panics in the decoders (hostile input) are turned into ErrNotImage.
func decode(r io.Reader, info Info, width, height int, fit Fit) (d decoded, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = decoded{}, fmt.Errorf("%w: %s decoder panic: %v", ErrNotImage, info.Format, p)
		}
	}()
	var img image.Image
	scale := 1
	switch info.Format {
	case FormatPNG:
		img, err = png.Decode(r)
	case FormatJPEG:
		scale = jpegScale(info, width, height, fit)
		img, err = fastjpeg.Decode(r, scale)
	case FormatGIF:
		img, err = gif.Decode(r)
	case FormatWebP:
		img, err = webp.Decode(r)
	}
	if err != nil {
		return decoded{}, fmt.Errorf("%w: %s: %v", ErrNotImage, info.Format, err)
	}
	b := img.Bounds()
	if info.Format == FormatGIF && b != image.Rect(0, 0, info.Width, info.Height) {
		// The first frame may cover only part of the logical screen (the
		// decoder has checked that it lies within it): the rest is
		// transparent.
		canvas := image.NewRGBA(image.Rect(0, 0, info.Width, info.Height))
		draw.Draw(canvas, b, img, b.Min, draw.Src)
		img, b = canvas, canvas.Rect
	}
	if wantW, wantH := (info.Width+scale-1)/scale, (info.Height+scale-1)/scale; b.Dx() != wantW || b.Dy() != wantH {
		return decoded{}, fmt.Errorf("%w: %s decoded %dx%d at 1/%d, header said %dx%d",
			ErrNotImage, info.Format, b.Dx(), b.Dy(), scale, info.Width, info.Height)
	}
	return decoded{img: img, srcW: info.Width, srcH: info.Height, scale: scale}, nil
}

// jpegScale picks the DCT scaling denominator for decoding a JPEG: the
// largest of 8, 4 and 2 that still leaves the used part of the image at
// least twice the size it is drawn at (so the final filter has room to
// anti-alias; libvips' shrink-on-load uses the same margin), else 1.
func jpegScale(info Info, width, height int, fit Fit) int {
	l := plan(info.Width, info.Height, width, height, fit)
	for _, s := range []int{8, 4, 2} {
		if l.cropW/float64(s) >= 2*float64(l.dst.Dx()) && l.cropH/float64(s) >= 2*float64(l.dst.Dy()) {
			return s
		}
	}
	return 1
}
