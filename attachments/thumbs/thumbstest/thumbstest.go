// Package thumbstest makes images for tests of the resize limits: valid
// files that are small on disk and large decoded.
package thumbstest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// FlatPNG returns a valid, non-interlaced PNG of w×h pixels whose bytes
// are all zero (black, transparent where there is alpha), of bit depth 8
// or 16 and colour type 0 (grey), 2 (RGB), 4 (grey and alpha) or 6
// (RGBA). Its rows compress about a thousand to one: a 7000×7000 16-bit
// RGBA one is some 400 KB on disk and 392 MB decoded. Its rows are
// compressed as they are made, so making it takes little memory.
func FlatPNG(w, h int, depth, colour byte) []byte {
	channels := map[byte]int{0: 1, 2: 3, 4: 2, 6: 4}[colour]
	row := make([]byte, 1+w*channels*int(depth)/8) // filter byte 0, then zeros
	var idat bytes.Buffer
	z := zlib.NewWriter(&idat)
	for range h {
		_, _ = z.Write(row)
	}
	_ = z.Close()

	b := bytes.NewBuffer(PNGHeader(w, h, depth, colour))
	chunk(b, "IDAT", idat.Bytes())
	chunk(b, "IEND", nil)
	return b.Bytes()
}

// PNGHeader returns the signature and IHDR chunk of a non-interlaced w×h
// PNG of the bit depth and colour type given: the 33 bytes that
// thumbs.Probe and thumbs.MemoryNeeded read of such a file.
func PNGHeader(w, h int, depth, colour byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	chunk(&b, "IHDR", append(ihdr, depth, colour, 0, 0, 0))
	return b.Bytes()
}

// chunk appends a PNG chunk to b.
func chunk(b *bytes.Buffer, typ string, data []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(data)))
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	_ = binary.Write(b, binary.BigEndian, crc.Sum32())
}
