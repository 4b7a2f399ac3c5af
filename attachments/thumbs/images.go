package thumbs

import "io"

// Images is the attachments area's image plug-in
// (attachments.Options.Images): the image route's resizes through this
// package. The zero value is ready to use.
//
//	opts.Images = thumbs.Images{}
type Images struct{}

// IsImage reports whether files of the sniffed MIME type are resized:
// PNG, JPEG, GIF and WebP (IsImageType).
func (Images) IsImage(mimeType string) bool { return IsImageType(mimeType) }

// MemoryNeeded reads the image's header from r and returns an upper
// bound of the memory Resize takes to make it width×height (see the
// package function MemoryNeeded).
func (Images) MemoryNeeded(r io.Reader, width, height int, fit Fit) (int64, error) {
	_, n, err := MemoryNeeded(r, width, height, fit)
	return n, err
}

// Resize writes a width×height image of src to w: JPEG for a JPEG
// source, PNG otherwise (see the package function Resize).
func (Images) Resize(w io.Writer, src io.Reader, width, height int, fit Fit) error {
	_, err := Resize(w, src, width, height, fit)
	return err
}
