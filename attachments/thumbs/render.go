package thumbs

import (
	"image"
	"image/color"
)

// layout is where the source maps to on the output canvas, in full-size
// source pixel coordinates (before any reduced-scale decode).
type layout struct {
	cropW, cropH float64         // size of the centred source region used
	dst          image.Rectangle // where that region lands on the W×H canvas
}

// plan computes the centred crop (Cover) or the centred placement
// (Contain) for an sw×sh source on a W×H canvas.
func plan(sw, sh, W, H int, fit Fit) layout {
	wider := int64(sw)*int64(H) >= int64(sh)*int64(W) // source aspect ≥ box aspect
	if fit == Cover {
		l := layout{cropW: float64(sw), cropH: float64(sh), dst: image.Rect(0, 0, W, H)}
		if wider {
			l.cropW = float64(sh) * float64(W) / float64(H)
		} else {
			l.cropH = float64(sw) * float64(H) / float64(W)
		}
		return l
	}
	dw, dh := W, H
	if wider {
		dh = roundClamp(float64(sh)*float64(W)/float64(sw), 1, H)
	} else {
		dw = roundClamp(float64(sw)*float64(H)/float64(sh), 1, W)
	}
	x0, y0 := (W-dw)/2, (H-dh)/2
	return layout{cropW: float64(sw), cropH: float64(sh), dst: image.Rect(x0, y0, x0+dw, y0+dh)}
}

func roundClamp(v float64, lo, hi int) int {
	i := int(v + 0.5)
	if i < lo {
		return lo
	}
	if i > hi {
		return hi
	}
	return i
}

// render produces the W×H output image for the decoded source: an
// *image.YCbCr (4:4:4) or *image.RGBA for JPEG output, an *image.RGBA for
// PNG output.
func render(d decoded, info Info, W, H int, fit Fit) image.Image {
	l := plan(d.srcW, d.srcH, W, H, fit)
	b := d.img.Bounds()
	iw, ih := b.Dx(), b.Dy()

	// The centred crop in decoded-image coordinates (relative to b.Min);
	// the decoded image may be a 1/scale DCT-domain decode.
	cw := roundClamp(l.cropW/float64(d.scale), 1, iw)
	ch := roundClamp(l.cropH/float64(d.scale), 1, ih)
	crop := image.Rect(0, 0, cw, ch).Add(image.Pt((iw-cw)/2, (ih-ch)/2))
	dw, dh := l.dst.Dx(), l.dst.Dy()

	// Integer box pre-shrink down to no less than twice the output size,
	// so that the filter below only ever sees a small image. (JPEG sources
	// have mostly been shrunk this way by their DCT-scaled decode already.)
	src := d.img
	if k := min(cw/(2*dw), ch/(2*dh)); k >= 2 {
		// Drop the (fewer than k) leftover pixels evenly from both sides.
		r := crop.Add(b.Min)
		r.Min.X += (cw % k) / 2
		r.Min.Y += (ch % k) / 2
		r.Max.X = r.Min.X + cw - cw%k
		r.Max.Y = r.Min.Y + ch - ch%k
		src = boxShrink(d.img, r, k)
		crop = src.Bounds()
	}
	jpegOut := info.Format == FormatJPEG
	padded := l.dst != image.Rect(0, 0, W, H)

	if m, ok := src.(*image.YCbCr); ok {
		// Resample the Y', Cb and Cr planes separately (chroma straight
		// from its subsampled plane) into a 4:4:4 image.
		var out *image.YCbCr
		if jpegOut && !padded {
			// The JPEG encoder subsamples chroma 2×2 anyway: resample
			// chroma straight to 4:2:0, a quarter of the work.
			out = image.NewYCbCr(image.Rect(0, 0, W, H), image.YCbCrSubsampleRatio420)
		} else {
			out = image.NewYCbCr(image.Rect(0, 0, dw, dh), image.YCbCrSubsampleRatio444)
		}
		resampleYCbCr(out, m, crop)
		if !jpegOut {
			dst := image.NewRGBA(image.Rect(0, 0, W, H))
			ycbcrToRGBA(dst, l.dst.Min, out)
			return dst
		}
		if !padded {
			return out
		}
		// JPEG has no alpha: pad with white.
		dst := image.NewYCbCr(image.Rect(0, 0, W, H), image.YCbCrSubsampleRatio444)
		fill(dst.Y, 0xff)
		fill(dst.Cb, 0x80)
		fill(dst.Cr, 0x80)
		for y := 0; y < dh; y++ {
			o := dst.YOffset(l.dst.Min.X, l.dst.Min.Y+y)
			copy(dst.Y[o:o+dw], out.Y[y*out.YStride:])
			copy(dst.Cb[o:o+dw], out.Cb[y*out.CStride:])
			copy(dst.Cr[o:o+dw], out.Cr[y*out.CStride:])
		}
		return dst
	}

	// Everything else is resampled as premultiplied RGBA, converted a row
	// at a time.
	dst := image.NewRGBA(image.Rect(0, 0, W, H))
	if jpegOut && padded {
		fill(dst.Pix, 0xff)
	}
	sb := src.Bounds()
	c0, c1 := columns(float64(crop.Min.X), float64(crop.Dx()), dw, 0, sb.Dx())
	rf := newRowFetcher(src)
	buf := make([]uint8, 4*(c1-c0))
	rows := func(y int) ([]uint8, int) {
		rf.fetch(buf, sb.Min.X+c0, sb.Min.X+c1, sb.Min.Y+y)
		return buf, c0
	}
	o := dst.PixOffset(l.dst.Min.X, l.dst.Min.Y)
	resample(plane{dst.Pix[o:], dst.Stride, 4}, dw, dh, rows,
		float64(crop.Min.X), float64(crop.Min.Y), float64(crop.Dx()), float64(crop.Dy()),
		0, sb.Dx(), 0, sb.Dy())
	return dst
}

func fill(b []uint8, v uint8) {
	for i := range b {
		b[i] = v
	}
}

// subsampling returns the chroma subsampling factors of r.
func subsampling(r image.YCbCrSubsampleRatio) (fx, fy int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return 2, 1
	case image.YCbCrSubsampleRatio420:
		return 2, 2
	case image.YCbCrSubsampleRatio440:
		return 1, 2
	case image.YCbCrSubsampleRatio411:
		return 4, 1
	case image.YCbCrSubsampleRatio410:
		return 4, 2
	}
	return 1, 1
}

// resampleYCbCr resamples the crop (relative to m.Rect.Min) of m onto the
// whole of out, whose Rect must start at (0, 0) and which is 4:4:4 or 4:2:0.
// Chroma is read from and written to the subsampled planes directly.
func resampleYCbCr(out, m *image.YCbCr, crop image.Rectangle) {
	dw, dh := out.Rect.Dx(), out.Rect.Dy()
	w, h := m.Rect.Dx(), m.Rect.Dy()
	x0, y0 := float64(crop.Min.X), float64(crop.Min.Y)
	cw, ch := float64(crop.Dx()), float64(crop.Dy())
	resample(plane{out.Y, out.YStride, 1}, dw, dh, planeRows(m.Y[m.YOffset(m.Rect.Min.X, m.Rect.Min.Y):], m.YStride),
		x0, y0, cw, ch, 0, w, 0, h)

	// Chroma sample j of a plane subsampled by f covers luma [f·j, f·(j+1))
	// (centred siting), counted from the subsample-aligned origin.
	fx, fy := subsampling(m.SubsampleRatio)
	ox, oy := m.Rect.Min.X-m.Rect.Min.X/fx*fx, m.Rect.Min.Y-m.Rect.Min.Y/fy*fy
	cpw, cph := (ox+w+fx-1)/fx, (oy+h+fy-1)/fy
	// Output chroma: ocw×och samples covering output luma [0, ofx·ocw)
	// (one more than dw when dw is odd), so the source luma span
	// grows in proportion.
	ofx, ofy := subsampling(out.SubsampleRatio)
	ocw, och := (dw+ofx-1)/ofx, (dh+ofy-1)/ofy
	spanW := cw * float64(ofx*ocw) / float64(dw)
	spanH := ch * float64(ofy*och) / float64(dh)
	ffx, ffy := float64(fx), float64(fy)
	cx0, cy0 := (x0+float64(ox))/ffx, (y0+float64(oy))/ffy
	c0 := m.COffset(m.Rect.Min.X, m.Rect.Min.Y)
	for _, p := range [2]struct{ dst, src []uint8 }{{out.Cb, m.Cb}, {out.Cr, m.Cr}} {
		resample(plane{p.dst, out.CStride, 1}, ocw, och, planeRows(p.src[c0:], m.CStride),
			cx0, cy0, spanW/ffx, spanH/ffy, 0, cpw, 0, cph)
	}
}

func planeRows(pix []uint8, stride int) rowFunc {
	return func(y int) ([]uint8, int) { return pix[y*stride:], 0 }
}

// ycbcrToRGBA converts m (4:4:4) into dst at p.
func ycbcrToRGBA(dst *image.RGBA, p image.Point, m *image.YCbCr) {
	w := m.Rect.Dx()
	for y := 0; y < m.Rect.Dy(); y++ {
		yr := m.Y[y*m.YStride : y*m.YStride+w]
		cb := m.Cb[y*m.CStride : y*m.CStride+w]
		cr := m.Cr[y*m.CStride : y*m.CStride+w]
		o := dst.PixOffset(p.X, p.Y+y)
		d := dst.Pix[o : o+4*w]
		for x := range yr {
			r, g, b := color.YCbCrToRGB(yr[x], cb[x], cr[x])
			q := d[4*x : 4*x+4 : 4*x+4]
			q[0], q[1], q[2], q[3] = r, g, b, 0xff
		}
	}
}

// boxShrink averages each k×k block of r (whose size is a multiple of k) in
// img into one pixel: a 4:4:4 *image.YCbCr for *image.YCbCr sources, a
// premultiplied *image.RGBA otherwise.
func boxShrink(img image.Image, r image.Rectangle, k int) image.Image {
	if m, ok := img.(*image.YCbCr); ok {
		return boxShrinkYCbCr(m, r, k)
	}
	return boxShrinkRows(img, r, k)
}

// reciprocal returns ⌊2³²/n⌉ for dividing block sums by n with a multiply.
func reciprocal(n int) uint64 { return (1<<32 + uint64(n)/2) / uint64(n) }

func avg(sum uint32, recip uint64) uint32 { return uint32((uint64(sum)*recip + 1<<31) >> 32) }

// boxShrinkYCbCr averages the Y', Cb and Cr planes (chroma read through
// the subsampling) into a 4:4:4 image, reading the planes directly.
func boxShrinkYCbCr(m *image.YCbCr, r image.Rectangle, k int) *image.YCbCr {
	ow, oh := r.Dx()/k, r.Dy()/k
	out := image.NewYCbCr(image.Rect(0, 0, ow, oh), image.YCbCrSubsampleRatio444)
	sumY := make([]uint32, ow)
	sumB := make([]uint32, ow)
	sumR := make([]uint32, ow)
	// Chroma column offsets for each source column of r.
	cx := make([]int32, r.Dx())
	for x := r.Min.X; x < r.Max.X; x++ {
		cx[x-r.Min.X] = int32(m.COffset(x, m.Rect.Min.Y))
	}
	recip := reciprocal(k * k)
	for oy := 0; oy < oh; oy++ {
		clear(sumY)
		clear(sumB)
		clear(sumR)
		for j := 0; j < k; j++ {
			y := r.Min.Y + oy*k + j
			yrow := m.Y[m.YOffset(r.Min.X, y) : m.YOffset(r.Min.X, y)+r.Dx()]
			cbase := m.COffset(m.Rect.Min.X, y) - m.COffset(m.Rect.Min.X, m.Rect.Min.Y)
			cbRow := m.Cb[cbase:]
			crRow := m.Cr[cbase:]
			x := 0
			for ox := 0; ox < ow; ox++ {
				var sy, sb, sr uint32
				for e := x + k; x < e; x++ {
					sy += uint32(yrow[x])
					c := cx[x]
					sb += uint32(cbRow[c])
					sr += uint32(crRow[c])
				}
				sumY[ox] += sy
				sumB[ox] += sb
				sumR[ox] += sr
			}
		}
		yo, co := oy*out.YStride, oy*out.CStride
		for ox := 0; ox < ow; ox++ {
			out.Y[yo+ox] = uint8(avg(sumY[ox], recip))
			out.Cb[co+ox] = uint8(avg(sumB[ox], recip))
			out.Cr[co+ox] = uint8(avg(sumR[ox], recip))
		}
	}
	return out
}

// boxShrinkRows handles every other image type: each source row is first
// converted to premultiplied RGBA, then k×k blocks are averaged.
func boxShrinkRows(img image.Image, r image.Rectangle, k int) *image.RGBA {
	ow, oh := r.Dx()/k, r.Dy()/k
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	sum := make([]uint32, 4*ow)
	row := make([]uint8, 4*r.Dx())
	rf := newRowFetcher(img)
	recip := reciprocal(k * k)
	for oy := 0; oy < oh; oy++ {
		clear(sum)
		for j := 0; j < k; j++ {
			rf.fetch(row, r.Min.X, r.Max.X, r.Min.Y+oy*k+j)
			i := 0
			for ox := 0; ox < ow; ox++ {
				var s0, s1, s2, s3 uint32
				for e := i + 4*k; i < e; i += 4 {
					p := row[i : i+4 : i+4]
					s0 += uint32(p[0])
					s1 += uint32(p[1])
					s2 += uint32(p[2])
					s3 += uint32(p[3])
				}
				s := sum[4*ox : 4*ox+4 : 4*ox+4]
				s[0] += s0
				s[1] += s1
				s[2] += s2
				s[3] += s3
			}
		}
		pix := out.Pix[oy*out.Stride : oy*out.Stride+4*ow]
		for i, s := range sum {
			pix[i] = uint8(avg(s, recip))
		}
	}
	return out
}

// rowFetcher converts image rows to premultiplied 8-bit RGBA.
type rowFetcher struct {
	img image.Image
	pal []color.RGBA // premultiplied palette for *image.Paletted
}

func newRowFetcher(img image.Image) *rowFetcher {
	rf := &rowFetcher{img: img}
	if m, ok := img.(*image.Paletted); ok {
		rf.pal = make([]color.RGBA, 256)
		for i, c := range m.Palette {
			if i >= len(rf.pal) {
				break
			}
			r, g, b, a := c.RGBA()
			rf.pal[i] = color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
		}
		// Indices beyond the palette (invalid input) read as transparent
		// black instead of panicking.
	}
	return rf
}

// fetch writes the premultiplied RGBA pixels of row y, columns x0..x1, to dst.
func (rf *rowFetcher) fetch(dst []uint8, x0, x1, y int) {
	n := x1 - x0
	dst = dst[:4*n]
	switch m := rf.img.(type) {
	case *image.RGBA:
		i := m.PixOffset(x0, y)
		copy(dst, m.Pix[i:i+4*n])
	case *image.NRGBA:
		i := m.PixOffset(x0, y)
		s := m.Pix[i : i+4*n]
		for j := 0; j < len(s); j += 4 {
			a := uint32(s[j+3])
			d := dst[j : j+4 : j+4]
			switch a {
			case 0xff:
				d[0], d[1], d[2], d[3] = s[j], s[j+1], s[j+2], 0xff
			case 0:
				d[0], d[1], d[2], d[3] = 0, 0, 0, 0
			default:
				d[0] = uint8((uint32(s[j])*a + 127) / 255)
				d[1] = uint8((uint32(s[j+1])*a + 127) / 255)
				d[2] = uint8((uint32(s[j+2])*a + 127) / 255)
				d[3] = uint8(a)
			}
		}
	case *image.Gray:
		i := m.PixOffset(x0, y)
		for j, v := range m.Pix[i : i+n] {
			d := dst[4*j : 4*j+4 : 4*j+4]
			d[0], d[1], d[2], d[3] = v, v, v, 0xff
		}
	case *image.Paletted:
		i := m.PixOffset(x0, y)
		for j, v := range m.Pix[i : i+n] {
			c := rf.pal[v]
			d := dst[4*j : 4*j+4 : 4*j+4]
			d[0], d[1], d[2], d[3] = c.R, c.G, c.B, c.A
		}
	case *image.NRGBA64:
		// 16-bit PNGs, exactly as the default case's At(x, y).RGBA()
		// (which would box every pixel in an interface: garbage as large
		// as the image).
		i := m.PixOffset(x0, y)
		s := m.Pix[i : i+8*n]
		for j := 0; j < n; j++ {
			p := s[8*j : 8*j+8 : 8*j+8]
			a := uint32(p[6])<<8 | uint32(p[7])
			d := dst[4*j : 4*j+4 : 4*j+4]
			d[0] = uint8((uint32(p[0])<<8 | uint32(p[1])) * a / 0xffff >> 8)
			d[1] = uint8((uint32(p[2])<<8 | uint32(p[3])) * a / 0xffff >> 8)
			d[2] = uint8((uint32(p[4])<<8 | uint32(p[5])) * a / 0xffff >> 8)
			d[3] = uint8(a >> 8)
		}
	case *image.RGBA64:
		i := m.PixOffset(x0, y)
		s := m.Pix[i : i+8*n]
		for j := 0; j < n; j++ {
			p := s[8*j : 8*j+8 : 8*j+8]
			d := dst[4*j : 4*j+4 : 4*j+4]
			d[0], d[1], d[2], d[3] = p[0], p[2], p[4], p[6]
		}
	case *image.Gray16:
		i := m.PixOffset(x0, y)
		for j := 0; j < n; j++ {
			v := m.Pix[i+2*j]
			d := dst[4*j : 4*j+4 : 4*j+4]
			d[0], d[1], d[2], d[3] = v, v, v, 0xff
		}
	case *image.YCbCr:
		for x := x0; x < x1; x++ {
			yi, ci := m.YOffset(x, y), m.COffset(x, y)
			r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			d := dst[4*(x-x0) : 4*(x-x0)+4 : 4*(x-x0)+4]
			d[0], d[1], d[2], d[3] = r, g, b, 0xff
		}
	case *image.NYCbCrA:
		for x := x0; x < x1; x++ {
			yi, ci := m.YOffset(x, y), m.COffset(x, y)
			r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			a := uint32(m.A[m.AOffset(x, y)])
			d := dst[4*(x-x0) : 4*(x-x0)+4 : 4*(x-x0)+4]
			d[0] = uint8((uint32(r)*a + 127) / 255)
			d[1] = uint8((uint32(g)*a + 127) / 255)
			d[2] = uint8((uint32(b)*a + 127) / 255)
			d[3] = uint8(a)
		}
	default:
		for x := x0; x < x1; x++ {
			r, g, b, a := m.At(x, y).RGBA()
			d := dst[4*(x-x0) : 4*(x-x0)+4 : 4*(x-x0)+4]
			d[0], d[1], d[2], d[3] = uint8(r>>8), uint8(g>>8), uint8(b>>8), uint8(a>>8)
		}
	}
}
