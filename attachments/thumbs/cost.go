package thumbs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// MemoryNeeded reads the image header from r, as Probe does, and returns
// an upper bound of the memory, in bytes, that Resize of that image to
// width×height with fit allocates: the decoded source (which depends on
// the format, colour type and bit depth, not only on the pixel count: a
// 16-bit RGBA PNG takes 8 bytes per pixel, an interlaced PNG twice its
// decoded size, a progressive JPEG its DCT coefficients besides its
// pixels), the intermediate images of the resampling, the output and its
// encoding. A caller bounds the memory of concurrent resizes with it
// before any pixel is decoded. Errors are Probe's.
func MemoryNeeded(r io.Reader, width, height int, fit Fit) (Info, int64, error) {
	if width < 1 || width > MaxSize || height < 1 || height > MaxSize {
		return Info{}, 0, fmt.Errorf("%w: size %dx%d not in 1..%d", ErrInvalidParams, width, height, MaxSize)
	}
	if fit != Cover && fit != Contain {
		return Info{}, 0, fmt.Errorf("%w: fit %q", ErrInvalidParams, string(fit))
	}
	var head bytes.Buffer
	info, err := probe(bufio.NewReaderSize(io.TeeReader(r, &head), 512))
	if err != nil {
		return info, 0, err
	}
	return info, memoryNeeded(info, head.Bytes(), width, height, fit), nil
}

// fixedCost covers what does not grow with the image: decoder and
// encoder state (a deflate compressor alone is some 700 KB), buffers.
const fixedCost = 4 << 20

// memoryNeeded is MemoryNeeded for a probed image whose leading bytes
// (at least those its header decoder read) are head. width and height
// are as displayed (a JPEG's EXIF orientation may turn them).
func memoryNeeded(info Info, head []byte, width, height int, fit Fit) int64 {
	w, h := int64(info.Width), int64(info.Height)
	W, H := int64(width), int64(height)
	scale, orientation := int64(1), 1
	if info.Format == FormatJPEG {
		orientation = jpegOrientation(head)
		tw, th := width, height
		if transposed(orientation) {
			tw, th = height, width
		}
		scale = int64(jpegScale(info, tw, th, fit))
	}
	// The decoded image, at 1/scale for a JPEG decoded in the DCT domain.
	dw, dh := (w+scale-1)/scale, (h+scale-1)/scale
	decoded := decodeCost(info.Format, head, w, h, dw, dh)
	// The box pre-shrink makes an RGBA (4 bytes a pixel) image of at most
	// a quarter of the decoded pixels.
	shrink := dw * dh
	// The horizontal pass of the filter keeps every source row it reads
	// (at most about four times the output's height, and at most the
	// decoded height) at the output's width, 4 bytes a sample.
	side := max(W, H)
	filter := 4 * side * min(max(dw, dh), 4*side+64)
	// The output canvas (RGBA, 4 bytes a pixel), a 4:4:4 intermediate for
	// Y'CbCr sources (3), a JPEG's turn to its EXIF orientation (4 + 4),
	// and the encoded bytes in a buffer that grows by doubling (the old
	// and the new array live at once: three times the bytes at most) of
	// at most about the raw size for PNG, a third of that for JPEG.
	output := 4 * W * H
	ycc := info.Format == FormatJPEG || info.Format == FormatWebP && len(head) >= 16 && string(head[12:16]) == "VP8 "
	if ycc {
		output += 3 * W * H
	}
	if orientation != 1 {
		output += 8 * W * H
	}
	if info.Format == FormatJPEG {
		output += 4 * W * H
	} else {
		output += 3 * (4*W + 1) * H
	}
	return fixedCost + decoded + shrink + filter + output
}

// decodeCost is what decoding takes: an image of w×h declared by head,
// decoded at dw×dh.
func decodeCost(format string, head []byte, w, h, dw, dh int64) int64 {
	switch format {
	case FormatPNG:
		return w * h * pngCost(head)
	case FormatGIF:
		// The frame (1 byte a pixel) and, when it covers less than the
		// screen, an RGBA canvas.
		return 5 * w * h
	case FormatWebP:
		if len(head) >= 16 && string(head[12:16]) == "VP8 " {
			// Lossy: 4:2:0 planes, plus alpha.
			return 3 * w * h
		}
		// Lossless (or extended, which may be lossless): ARGB words,
		// a transform's copy and the NRGBA image.
		return 12 * w * h
	case FormatJPEG:
		comps, coefficients := jpegFrame(head, w, h)
		// The pixels at the decode's scale, MCU-padded (CMYK keeps a 4th
		// plane and converts through RGBA), and a progressive JPEG's DCT
		// coefficients, kept until its last scan whatever the scale.
		perPixel := int64(4)
		if comps == 4 {
			perPixel = 8
		}
		return perPixel*(dw+32)*(dh+32) + coefficients
	}
	return 8 * w * h
}

// pngCost is the bytes a pixel of the PNG whose signature and IHDR are
// head takes decoded: image/png decodes 16-bit images to 8 bytes a pixel
// (RGBA64, NRGBA64; Gray16 with a transparent colour becomes NRGBA64),
// 8-bit colour and grey with a transparent colour to 4, palettes to 1.
// An interlaced image is decoded pass by pass into images of their own,
// then copied: twice the memory.
func pngCost(head []byte) int64 {
	// Signature (8), IHDR length and type (8), width, height (8), depth,
	// colour type, compression, filter, interlace.
	if len(head) < 29 {
		return 16 // not seen: the largest
	}
	depth, color, interlace := head[24], head[25], head[28]
	var bpp int64
	switch {
	case color == 3:
		bpp = 1
	case depth == 16:
		bpp = 8
	default:
		bpp = 4
	}
	if interlace != 0 {
		bpp *= 2
	}
	return bpp
}

// jpegFrame returns the number of components and, for a progressive
// frame, the bytes of its DCT coefficients (a 256-byte block per 8×8
// samples of each component, over whole MCUs, as the decoder keeps them;
// 0 for a baseline frame), from the SOF segment in head (the JPEG's
// leading bytes, which image/jpeg's DecodeConfig read through). Without
// one it answers the costliest: 4 components at full resolution.
func jpegFrame(head []byte, w, h int64) (comps int, coefficients int64) {
	worst := 4 * 4 * (w + 32) * (h + 32)
	i := 2
	for i+4 <= len(head) {
		if head[i] != 0xff {
			break
		}
		marker := head[i+1]
		if marker == 0xff {
			i++
			continue
		}
		if marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01 {
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(head[i+2:]))
		if marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc {
			if i+10 > len(head) {
				break
			}
			comps = int(head[i+9])
			if marker != 0xc2 && marker != 0xc6 && marker != 0xca && marker != 0xce {
				return comps, 0
			}
			if comps < 1 || i+10+3*comps > len(head) {
				return 4, worst
			}
			// MCUs are counted from the first component's sampling.
			h0, v0 := int64(head[i+11]>>4), int64(head[i+11]&15)
			if h0 == 0 || v0 == 0 {
				return 4, worst
			}
			mxx, myy := (w+8*h0-1)/(8*h0), (h+8*v0-1)/(8*v0)
			var blocks int64
			for k := range comps {
				hv := head[i+11+3*k]
				blocks += mxx * myy * int64(hv>>4) * int64(hv&15)
			}
			return comps, 256 * blocks
		}
		if marker == 0xda || marker == 0xd9 || n < 2 {
			break
		}
		i += 2 + n
	}
	return 4, worst
}
