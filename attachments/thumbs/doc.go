// Package thumbs makes thumbnails for the attachments image route
// (GET /attachments/image/{id}/{slug}?width=&height=&cropType=cover|contain).
//
// It is a pure image package: the caller does HTTP, caching and
// singleflight, sniffs the upload's MIME type (IsImageType), and hands the
// bytes to Resize. Probe reads just the header, for metadata and for
// refusing oversized images early.
//
// # Decisions
//
// Formats. PNG, JPEG, GIF and WebP are recognised by their magic numbers
// and decoded by their own decoders (image/png, image/gif,
// golang.org/x/image/webp and, for JPEG, this package's fork of image/jpeg;
// see below), never through image.Decode's registry, so a BMP or TIFF
// decoder registered elsewhere in the binary does not widen what is
// accepted. The importing of image/png, image/jpeg and image/gif (and of
// x/image/webp) registers those formats with package image as a side effect.
//
// Pixel bombs. The header's dimensions are checked before anything is
// decoded: more than MaxPixels (50 MP) is ErrTooLarge, so a tiny file that
// declares a huge image costs nothing. The decoded image must then have
// exactly the declared size. Within the limit, decoding can still take a
// lot of memory, and not in proportion to the pixels: 4 bytes a pixel for
// an 8-bit RGBA PNG, 8 for a 16-bit one (a 49 MP 16-bit PNG of 400 KB
// decodes to 392 MB), twice as much interlaced (the passes, then the
// image), and a progressive JPEG also keeps all its DCT coefficients (4
// bytes per sample) until its last scan. MemoryNeeded reads the header
// (colour type, bit depth, interlacing; the JPEG frame's components and
// sampling) and returns an upper bound of what Resize will hold, output
// and encoding included, before a pixel is decoded: the caller refuses
// what passes its budget and bounds the sum of those running at once
// (TestMemoryNeededBoundsResize samples the heap of real resizes against
// it). 16-bit images are read into the filter's 8-bit rows directly,
// without boxing a colour per pixel. Panics in the decoders or in this
// package are recovered and returned as errors.
//
// Output format. JPEG sources produce JPEG (quality 85, 4:2:0) and
// everything else PNG (default compression): golang.org/x/image has no WebP
// encoder, and PNG keeps GIF and WebP transparency.
//
// Contain on a JPEG source pads with white and stays JPEG, rather than
// switching to a transparent PNG: the content type of a thumbnail then
// depends only on the source's format, and a PNG of a photo would be many
// times larger than the JPEG. PNG output pads with fully transparent pixels.
//
// EXIF orientation is applied for JPEGs (phones and cameras store photos
// sideways and set the Orientation tag): the thumbnail is made in stored
// orientation for the box turned the same way, and the small result is then
// rotated or mirrored, so the cost is negligible. The tag is read from the
// first APP1 Exif segment before the frame header; PNG eXIf and WebP EXIF
// chunks are ignored. Probe's Info reports the dimensions as stored.
//
// Animated GIFs: only the first frame is used. Colour profiles (ICC) are
// ignored; CMYK JPEGs are converted naively; 16-bit PNGs are reduced to 8
// bits.
//
// # Resampling
//
// Cover scales the source so that it fills the box and crops the excess
// equally from both sides; contain scales it to fit inside the box and
// centres it. The output is always exactly width×height. Images smaller
// than the box are enlarged.
//
// Speed comes from doing little work on the full-size image:
//
//   - JPEGs are decoded in the DCT domain at 1/2, 1/4 or 1/8 of their size
//     (like libjpeg's scale_denom and libvips' shrink-on-load), choosing the
//     largest reduction that leaves the used part of the image at least
//     twice the output size. The decoder (internal/fastjpeg) is a fork of
//     image/jpeg with that added and a faster entropy decoder; at full
//     scale it decodes exactly as image/jpeg does (tested, and fuzzed
//     against it).
//   - Anything still more than four times the output size is first
//     averaged down by an integer box filter, again to no less than twice
//     the output size.
//   - The final, quality step is a separable Catmull-Rom filter whose
//     support widens with the reduction (so it anti-aliases), working on
//     byte planes with fixed-point weights: Y', Cb and Cr separately for
//     JPEG and lossy WebP (chroma straight from and, for JPEG cover, to the
//     subsampled planes), premultiplied RGBA for everything else, so that
//     transparent pixels do not bleed dark fringes.
//
// On the reference case, a cold 320×320 cover of a 2000×1333
// quality-90 JPEG (a synthetic photo-like image of 700 kB), this takes
// about 19 ms on one core of the 2-core development machine: a fifth of the
// naive path (image/jpeg decode, x/image/draw Catmull-Rom, JPEG encode:
// about 93 ms) and half of image/jpeg's decode alone (about 38 ms). See
// BenchmarkResizeCover2000x1333, ...Naive and BenchmarkDecodeJPEG2000x1333,
// run with GOMAXPROCS=1. The thumbnails stay within 39 dB PSNR or better of
// the naive path's (TestQualityAgainstNaive).
//
// # Determinism
//
// The same input bytes and parameters always produce the same output
// bytes: decoding and resampling use integer arithmetic (the filter weights
// are computed in float64 with fused multiply-add ruled out, so they are the
// same on every CPU architecture), and the encoders are deterministic. A
// change of Go version may still change the encoders' output (image/png's
// compressor, image/jpeg's quantisation), so caches keyed on the output
// should be invalidated on upgrades.
package thumbs
