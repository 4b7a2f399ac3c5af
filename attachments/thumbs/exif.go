package thumbs

import (
	"encoding/binary"
	"image"
	"image/draw"
)

// jpegOrientation returns the EXIF Orientation (1..8) of the JPEG whose
// leading bytes are b, or 1 if b has none (or it is malformed). It walks
// the marker segments before the first SOF/SOS and reads IFD0 of the first
// APP1 "Exif" segment; every offset is bounds-checked.
func jpegOrientation(b []byte) int {
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return 1
	}
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return 1
		}
		marker := b[i+1]
		if marker == 0xff { // fill byte
			i++
			continue
		}
		if marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01 {
			i += 2 // no length
			continue
		}
		if marker == 0xda || marker == 0xd9 || (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc) {
			return 1 // SOS, EOI or SOF: EXIF comes before these
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return 1
		}
		seg := b[i+4 : i+2+n]
		if marker == 0xe1 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 from IFD0 of the TIFF structure t.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return 1
	}
	count := int64(bo.Uint16(t[off:]))
	for e := off + 2; e+12 <= int64(len(t)) && count > 0; e, count = e+12, count-1 {
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		// Type SHORT (3), count 1: the value is in the entry's first two
		// value bytes.
		if bo.Uint16(t[e+2:]) != 3 || bo.Uint32(t[e+4:]) != 1 {
			return 1
		}
		if o := int(bo.Uint16(t[e+8:])); o >= 1 && o <= 8 {
			return o
		}
		return 1
	}
	return 1
}

// transposed reports whether orientation o swaps width and height.
func transposed(o int) bool { return o >= 5 && o <= 8 }

// orient returns m (as stored) turned to display orientation o, as a new
// RGBA image. Display pixel (x, y) comes from stored pixel (sx, sy).
func orient(m image.Image, o int) *image.RGBA {
	b := m.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dw, dh := sw, sh
	if transposed(o) {
		dw, dh = sh, sw
	}
	src, ok := m.(*image.RGBA)
	if !ok || src.Rect.Min != (image.Point{}) {
		src = image.NewRGBA(image.Rect(0, 0, sw, sh))
		draw.Draw(src, src.Rect, m, b.Min, draw.Src)
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := 0; y < dh; y++ {
		for x := 0; x < dw; x++ {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = sw-1-x, y
			case 3:
				sx, sy = sw-1-x, sh-1-y
			case 4:
				sx, sy = x, sh-1-y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, sh-1-x
			case 7:
				sx, sy = sw-1-y, sh-1-x
			case 8:
				sx, sy = sw-1-y, x
			default:
				sx, sy = x, y
			}
			copy(dst.Pix[dst.PixOffset(x, y):dst.PixOffset(x, y)+4], src.Pix[src.PixOffset(sx, sy):])
		}
	}
	return dst
}
