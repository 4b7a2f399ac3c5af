// Package imagefit holds what the attachments area and its image
// plug-in, package thumbs, share without importing each other: how a
// resized image fills its box, the largest size, and the two refusals.
// Package attachments re-exports them (attachments.Fit,
// attachments.MaxImageSize, attachments.ErrImageUnsupported,
// attachments.ErrImageTooLarge), and so does package thumbs; this
// package has no dependencies, so neither side links the other's code.
package imagefit

import (
	"errors"
	"strings"
)

// Fit says how a resized image maps onto its width×height box.
type Fit string

const (
	// Cover scales the image so that it fills the whole box and crops the
	// overflow evenly on both sides (centre crop).
	Cover Fit = "cover"
	// Contain scales the image so that it fits inside the box and centres
	// it, padding the rest.
	Contain Fit = "contain"
)

// MaxSize is the largest width or height, in pixels, of a resized image.
const MaxSize = 4000

var (
	// ErrUnsupported reports input that is not an image the resizer
	// reads, or whose header or pixel data cannot be decoded.
	ErrUnsupported = errors.New("not a supported image")
	// ErrTooLarge reports an image larger than the resizer accepts,
	// detected from its header.
	ErrTooLarge = errors.New("image too large")
)

// WebImage reports whether a sniffed MIME type (parameters such as
// "; charset=" ignored) is an image every browser shows: PNG, JPEG, GIF
// or WebP.
func WebImage(mimeType string) bool {
	if i := strings.IndexByte(mimeType, ';'); i >= 0 {
		mimeType = mimeType[:i]
	}
	switch strings.ToLower(strings.TrimSpace(mimeType)) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
