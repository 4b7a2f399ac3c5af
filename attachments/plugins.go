package attachments

import (
	"context"
	"io"
	"time"

	"github.com/tenantkit/tenantkit/internal/imagefit"
)

// Fit says how the image route maps an image onto the requested
// width×height box (its cropType).
type Fit = imagefit.Fit

// The fits of the image route.
const (
	// Cover scales the image so that it fills the whole box and crops the
	// overflow evenly on both sides (the default).
	Cover = imagefit.Cover
	// Contain scales the image so that it fits inside the box and centres
	// it, padding the rest.
	Contain = imagefit.Contain
)

// MaxImageSize is the largest width or height, in pixels, the image
// route makes.
const MaxImageSize = imagefit.MaxSize

// Refusals an Images plug-in returns (wrapped) for a file it does not
// resize; the image route answers 400 for both.
var (
	// ErrImageUnsupported: the file is not an image the plug-in reads,
	// or its header or pixels do not decode.
	ErrImageUnsupported = imagefit.ErrUnsupported
	// ErrImageTooLarge: the image is larger than the plug-in accepts,
	// seen from its header.
	ErrImageTooLarge = imagefit.ErrTooLarge
)

// Images resizes images for the image route (Service.Image). Package
// attachments/thumbs implements it (thumbs.Images{}: PNG, JPEG, GIF and
// WebP in pure Go). Without it, the image route serves the original
// whatever the size asked for (see the package documentation).
type Images interface {
	// IsImage reports whether files of the sniffed MIME type are images
	// it resizes.
	IsImage(mimeType string) bool
	// MemoryNeeded reads the image's header from r and returns an upper
	// bound of the memory Resize takes to make it width×height, before a
	// pixel is decoded: the service refuses what passes
	// Options.ImageMemoryBytes and bounds the sum of the resizes running
	// at once with it.
	MemoryNeeded(r io.Reader, width, height int, fit Fit) (int64, error)
	// Resize writes a width×height image of src to w, in a format a
	// browser shows (the service sniffs it). width and height are in
	// 1..MaxImageSize.
	Resize(w io.Writer, src io.Reader, width, height int, fit Fit) error
}

// Extractor reads the text of files for their content (the extraction
// job). Package attachments/extract implements it (extract.Extractor{}:
// plain text, PDFs' text layer and .docx documents, in pure Go). Without
// it, only OCR (when set) reads text; other files keep a null content.
type Extractor interface {
	// Extracts reports whether Extract reads files of that name and
	// sniffed MIME type.
	Extracts(fileName, mimeType string) bool
	// Extract returns the text of the file r holds (size bytes). found is
	// false when the file holds no text it could read (a PDF without a
	// text layer): the content stays null, or OCR, when set, reads an
	// image or PDF. An error refuses the file (malformed, over a limit),
	// unless ctx ended first. It bounds its own time and memory.
	Extract(ctx context.Context, r io.ReaderAt, size int64, fileName, mimeType string) (text string, found bool, err error)
}

// Defaults of Options' extraction settings.
const (
	// DefaultExtractTimeout bounds one run of the extraction job: the
	// extract plug-in's own limit (30 s) and a margin to store the result.
	DefaultExtractTimeout = time.Minute
	// DefaultMaxContentBytes bounds an attachment's stored content.
	DefaultMaxContentBytes = 1 << 20
)
