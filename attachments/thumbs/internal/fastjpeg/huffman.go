// Copyright 2009 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fastjpeg

import "encoding/binary"

// maxCodeLength is the maximum (inclusive) number of bits in a Huffman code.
const maxCodeLength = 16

// maxNCodes is the maximum (inclusive) number of codes in a Huffman tree.
const maxNCodes = 256

// lutSize is the log-2 size of the Huffman decoder's look-up table.
const lutSize = 9

// huffman is a Huffman decoder, specified in section C.
type huffman struct {
	// length is the number of codes in the tree.
	nCodes int32
	// lut is the look-up table for the next lutSize bits in the bit-stream.
	// The high 8 bits of the uint16 are the encoded value. The low 8 bits
	// are 1 plus the code length, or 0 if the code is longer than lutSize
	// bits.
	lut [1 << lutSize]uint16
	// fastAC is, for AC tables, a look-up table for the next lutSize bits
	// that decodes a whole (run, coefficient) pair when the code and the
	// coefficient's extra bits together fit in lutSize bits (libjpeg-turbo
	// and stb_image do the same). An entry is the coefficient value << 16 |
	// run << 8 | total bit length, or 0 if the slow path is needed
	// (including for EOB and ZRL, whose coefficient bits are zero).
	fastAC [1 << lutSize]int32
	// vals are the decoded values, sorted by their encoding.
	vals [maxNCodes]uint8
	// minCodes[i] is the minimum code of length i, or -1 if there are no
	// codes of that length.
	minCodes [maxCodeLength]int32
	// maxCodes[i] is the maximum code of length i, or -1 if there are no
	// codes of that length.
	maxCodes [maxCodeLength]int32
	// valsIndices[i] is the index into vals of minCodes[i].
	valsIndices [maxCodeLength]int32
}

// errShortHuffmanData means that an unexpected EOF occurred while decoding
// Huffman data.
var errShortHuffmanData = FormatError("short Huffman data")

// fillBits tops up d.bits to more than 56 unread bits, from the byte
// buffer while the entropy-coded data lasts and with zero padding after it
// (see the bits type).
func (d *decoder) fillBits() {
	// Fast path: take whole bytes from 8 buffered bytes that hold no 0xff
	// (so no stuffing and no marker).
	if i := d.bytes.i; !d.bits.end && i+8 <= d.bytes.j {
		v := binary.BigEndian.Uint64(d.bytes.buf[i : i+8])
		if x := ^v; (x-0x0101010101010101)&^x&0x8080808080808080 == 0 {
			k := uint32(64-d.bits.n) >> 3 // 1..8 bytes, leaving 57..64 bits
			d.bits.a = d.bits.a<<(8*k) | v>>(64-8*k)
			d.bits.n += int32(8 * k)
			d.bytes.i = i + int(k)
			return
		}
	}
	for d.bits.n <= 56 {
		if d.bits.end {
			d.bits.a <<= 8
			d.bits.n += 8
			d.bits.pad += 8
			continue
		}
		i, j := d.bytes.i, d.bytes.j
		if i+1 < j {
			c := d.bytes.buf[i]
			if c != 0xff {
				d.bytes.i = i + 1
				d.bits.a = d.bits.a<<8 | uint64(c)
				d.bits.n += 8
				continue
			}
			if d.bytes.buf[i+1] == 0x00 {
				d.bytes.i = i + 2
				d.bits.a = d.bits.a<<8 | 0xff
				d.bits.n += 8
				continue
			}
			// A marker: the entropy-coded data ends here.
			d.bits.end = true
			continue
		}
		// Fewer than two bytes buffered.
		if d.fill() == nil {
			continue
		}
		// No more input: take a last lone non-0xff byte, then pad.
		if i, j := d.bytes.i, d.bytes.j; i < j && d.bytes.buf[i] != 0xff {
			d.bytes.i = i + 1
			d.bits.a = d.bits.a<<8 | uint64(d.bytes.buf[i])
			d.bits.n += 8
			continue
		}
		d.bits.end = true
	}
}

// short reports whether more bits were consumed than the entropy-coded data
// held (that is, some padding was consumed).
func (d *decoder) short() bool { return d.bits.n < d.bits.pad }

// receiveExtend is the composition of RECEIVE and EXTEND, specified in section
// F.2.2.1.
func (d *decoder) receiveExtend(t uint8) (int32, error) {
	if d.bits.n < int32(t) {
		d.fillBits()
	}
	d.bits.n -= int32(t)
	return extend(int32(d.bits.a>>uint32(d.bits.n)), t), nil
}

// extend is EXTEND (section F.2.2.1) of the low t bits of x, branch-free:
// values below 1<<(t-1) are negative. t is at most 16.
func extend(x int32, t uint8) int32 {
	s := int32(1) << t
	x &= s - 1
	// neg is -1 if x < s/2 (the sign bit of x - s/2), else 0.
	neg := (x - s>>1) >> 31
	return x + neg&(-s+1)
}

// processDHT processes a Define Huffman Table marker, and initializes a huffman
// struct from its contents. Specified in section B.2.4.2.
func (d *decoder) processDHT(n int) error {
	for n > 0 {
		if n < 17 {
			return FormatError("DHT has wrong length")
		}
		if err := d.readFull(d.tmp[:17]); err != nil {
			return err
		}
		tc := d.tmp[0] >> 4
		if tc > maxTc {
			return FormatError("bad Tc value")
		}
		th := d.tmp[0] & 0x0f
		// The baseline th <= 1 restriction is specified in table B.5.
		if th > maxTh || (d.baseline && th > 1) {
			return FormatError("bad Th value")
		}
		h := &d.huff[tc][th]

		// Read nCodes and h.vals (and derive h.nCodes).
		// nCodes[i] is the number of codes with code length i.
		// h.nCodes is the total number of codes.
		h.nCodes = 0
		var nCodes [maxCodeLength]int32
		for i := range nCodes {
			nCodes[i] = int32(d.tmp[i+1])
			h.nCodes += nCodes[i]
		}
		if h.nCodes == 0 {
			return FormatError("Huffman table has zero length")
		}
		if h.nCodes > maxNCodes {
			return FormatError("Huffman table has excessive length")
		}
		n -= int(h.nCodes) + 17
		if n < 0 {
			return FormatError("DHT has wrong length")
		}
		if err := d.readFull(h.vals[:h.nCodes]); err != nil {
			return err
		}

		// Derive minCodes, maxCodes, and valsIndices.
		var c, index int32
		for i, n := range nCodes {
			if n == 0 {
				h.minCodes[i] = -1
				h.maxCodes[i] = -1
				h.valsIndices[i] = -1
			} else {
				h.minCodes[i] = c
				h.maxCodes[i] = c + n - 1
				h.valsIndices[i] = index
				c += n
				index += n
			}
			c <<= 1
		}

		// Derive the look-up table. For well-formed tables this is the
		// usual fill of every lutSize-bit prefix of each short code. For
		// malformed (over-subscribed) tables it must match what image/jpeg
		// decodes, so it is built the way image/jpeg does it: image/jpeg's
		// own 8-bit table (later codes overwrite earlier ones), and where
		// that has no entry, image/jpeg's slow bit-by-bit search.
		var lut8 [256]uint16
		{
			var x, code uint32
			for i := uint32(0); i < 8; i++ {
				code <<= 1
				for j := int32(0); j < nCodes[i]; j++ {
					base := uint8(code << (7 - i))
					lutValue := uint16(h.vals[x])<<8 | uint16(2+i)
					for k := uint8(0); k < 1<<(7-i); k++ {
						lut8[base|k] = lutValue
					}
					code++
					x++
				}
			}
		}
		for p := range h.lut {
			h.lut[p] = lut8[p>>(lutSize-8)]
			if h.lut[p] != 0 {
				continue
			}
			for i := int32(0); i < lutSize; i++ {
				code := int32(p >> (lutSize - 1 - i))
				if code <= h.maxCodes[i] {
					h.lut[p] = uint16(h.vals[h.valsIndices[i]+code-h.minCodes[i]])<<8 | uint16(2+i)
					break
				}
			}
		}

		// Derive the fast AC table.
		clear(h.fastAC[:])
		if tc == acTable {
			for i, v := range h.lut {
				if v == 0 {
					continue
				}
				codeLen := int32(v&0xff) - 1
				rs := uint8(v >> 8)
				run, size := int32(rs>>4), int32(rs&0x0f)
				if size == 0 || codeLen+size > lutSize {
					continue
				}
				// The size extra bits follow the code in the peeked bits.
				x := int32(i>>(lutSize-codeLen-size)) & (1<<size - 1)
				if x < 1<<(size-1) {
					x += -1<<size + 1
				}
				h.fastAC[i] = x<<16 | run<<8 | (codeLen + size)
			}
		}

	}
	return nil
}

// decodeHuffman returns the next Huffman-coded value from the bit-stream,
// decoded according to h.
func (d *decoder) decodeHuffman(h *huffman) (uint8, error) {
	if h.nCodes == 0 {
		return 0, FormatError("uninitialized Huffman table")
	}
	if d.bits.n < maxCodeLength {
		d.fillBits()
	}
	if v := h.lut[(d.bits.a>>uint32(d.bits.n-lutSize))&(1<<lutSize-1)]; v != 0 {
		d.bits.n -= int32(v&0xff) - 1
		return uint8(v >> 8), nil
	}
	return d.decodeHuffmanSlow(h)
}

// decodeHuffmanSlow decodes a code longer than lutSize bits. The caller
// guarantees d.bits.n >= maxCodeLength.
func (d *decoder) decodeHuffmanSlow(h *huffman) (uint8, error) {
	if h.nCodes == 0 {
		// An uninitialized table's look-up table is all zeroes, so every
		// decode lands here.
		return 0, FormatError("uninitialized Huffman table")
	}
	code := int32(0)
	for i := 0; i < maxCodeLength; i++ {
		code = code<<1 | int32(d.bits.a>>uint32(d.bits.n-1-int32(i)))&1
		if code <= h.maxCodes[i] {
			d.bits.n -= int32(i) + 1
			return h.vals[h.valsIndices[i]+code-h.minCodes[i]], nil
		}
	}
	return 0, FormatError("bad Huffman code")
}

func (d *decoder) decodeBit() (bool, error) {
	if d.bits.n == 0 {
		d.fillBits()
	}
	d.bits.n--
	return d.bits.a>>uint32(d.bits.n)&1 != 0, nil
}

func (d *decoder) decodeBits(n int32) (uint32, error) {
	if d.bits.n < n {
		d.fillBits()
	}
	d.bits.n -= n
	ret := uint32(d.bits.a>>uint32(d.bits.n)) & (1<<uint32(n) - 1)
	return ret, nil
}
