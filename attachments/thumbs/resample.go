package thumbs

// A separable Catmull-Rom resampler on 8-bit samples with fixed-point
// weights, in the style of Pillow's: weights for each axis are computed once,
// the horizontal pass runs over the source rows that are needed and the
// vertical pass over its (narrower) result. Integer arithmetic makes the
// output identical on every platform, and working on plain byte slices (one
// plane, or interleaved RGBA) avoids image.Image's per-pixel interface calls.

const (
	weightBits = 14
	weightOne  = 1 << weightBits
)

// catmullRom is the Catmull-Rom cubic (Keys, a = -0.5), support 2. The
// conversions to float64 forbid fused multiply-adds, so the weights, and so
// the output bytes, do not depend on the CPU architecture.
func catmullRom(x float64) float64 {
	if x < 0 {
		x = -x
	}
	switch {
	case x < 1:
		return float64(float64(float64(1.5*x)-2.5)*x)*x + 1
	case x < 2:
		return float64(float64(float64(float64(-0.5*x)+2.5)*x)-4)*x + 2
	}
	return 0
}

// axis holds the weights mapping a source span onto dn output samples.
type axis struct {
	taps  int     // weight slots per output sample
	start []int   // first source index of each output sample
	n     []int   // weights used by each output sample (n[i] <= taps)
	w     []int32 // taps weight slots per output sample, the first n[i] summing to weightOne
}

// newAxis maps the source span [s0, s0+sn) (sample indices; s0 and sn may
// be fractional, as when a chroma plane is half the luma size) onto dn
// output samples. Taps never reach outside [lo, hi), the valid source
// samples; weights there are dropped and the rest renormalised.
func newAxis(s0, sn float64, dn, lo, hi int) axis {
	scale := sn / float64(dn)
	fscale := max(scale, 1)
	support := 2 * fscale
	taps := int(2*support) + 2
	a := axis{taps: taps, start: make([]int, dn), n: make([]int, dn), w: make([]int32, dn*taps)}
	fw := make([]float64, taps)
	for i := 0; i < dn; i++ {
		// Centre of output sample i in source sample coordinates (where
		// sample j covers [j, j+1)).
		c := s0 + float64(float64(float64(i)+0.5)*scale)
		first := int(c - support + 0.5) // floor for the positive values used here
		if c-support+0.5 < 0 {
			first = 0
		}
		first = max(first, lo)
		last := min(int(c+support+0.5), hi) // exclusive
		if last-first > taps {
			last = first + taps
		}
		if last <= first { // degenerate: nearest valid sample
			first = min(max(int(c), lo), hi-1)
			last = first + 1
		}
		var sum float64
		for j := first; j < last; j++ {
			v := catmullRom((float64(j) + 0.5 - c) / fscale)
			fw[j-first] = v
			sum += v
		}
		a.start[i] = first
		a.n[i] = last - first
		row := a.w[i*taps : (i+1)*taps]
		if sum == 0 {
			j := min(max(int(c)-first, 0), last-first-1)
			a.start[i], a.n[i] = first+j, 1
			row[0] = weightOne
			continue
		}
		// Quantise, then put the rounding residue on the largest weight so
		// each set sums to exactly weightOne (flat areas stay flat).
		var isum int32
		big := 0
		for j := 0; j < last-first; j++ {
			q := int32(fw[j]/sum*weightOne + 0.5)
			if fw[j]/sum*weightOne < -0.5 {
				q = -int32(-fw[j]/sum*weightOne + 0.5)
			}
			row[j] = q
			isum += q
			if q > row[big] {
				big = j
			}
		}
		row[big] += weightOne - isum
		for a.n[i] > 1 && row[a.n[i]-1] == 0 {
			a.n[i]--
		}
		for a.n[i] > 1 && row[0] == 0 {
			copy(row, row[1:a.n[i]])
			row[a.n[i]-1] = 0
			a.start[i]++
			a.n[i]--
		}
	}
	return a
}

func clampByte(v int32) uint8 {
	v = (v + weightOne/2) >> weightBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// plane is a view of 8-bit samples with ch interleaved channels.
type plane struct {
	pix    []uint8
	stride int // bytes per row
	ch     int // channels per sample (1 or 4)
}

// rowFunc returns source row y as samples starting at sample index x0 (so
// sample x is row[(x-x0)*ch:]). The slice is only used until the next call.
type rowFunc func(y int) (row []uint8, x0 int)

// resample draws the source span (x0, y0, sw, sh), in source sample
// coordinates, onto the dw×dh samples of dst. Source samples outside
// [xlo, xhi)×[ylo, yhi) are never read.
func resample(dst plane, dw, dh int, rows rowFunc, x0, y0, sw, sh float64, xlo, xhi, ylo, yhi int) {
	ax := newAxis(x0, sw, dw, xlo, xhi)
	ay := newAxis(y0, sh, dh, ylo, yhi)
	// Source rows needed by the vertical pass.
	r0, r1 := ay.start[0], ay.start[0]
	for i, s := range ay.start {
		r0 = min(r0, s)
		r1 = max(r1, s+ay.n[i])
	}
	ch := dst.ch
	// Horizontal pass into tmp (rows r0..r1, dw samples wide).
	tstride := dw * ch
	tmp := make([]uint8, (r1-r0)*tstride)
	start := make([]int, len(ax.start))
	for y := r0; y < r1; y++ {
		row, rx := rows(y)
		for i, s := range ax.start {
			start[i] = s - rx
		}
		trow := tmp[(y-r0)*tstride : (y-r0+1)*tstride]
		if ch == 1 {
			hpass1(trow, row, start, &ax)
		} else {
			hpass4(trow, row, start, &ax)
		}
	}
	// Vertical pass into dst.
	for y := 0; y < dh; y++ {
		drow := dst.pix[y*dst.stride : y*dst.stride+tstride]
		w := ay.w[y*ay.taps : y*ay.taps+ay.n[y]]
		base := (ay.start[y] - r0) * tstride
		vpass(drow, tmp[base:], tstride, w)
		if ch == 4 {
			// Filter overshoot must not leave a premultiplied colour
			// channel above alpha.
			for i := 0; i < len(drow); i += 4 {
				p := drow[i : i+4 : i+4]
				a := p[3]
				p[0], p[1], p[2] = min(p[0], a), min(p[1], a), min(p[2], a)
			}
		}
	}
}

// columns returns the range of source samples that resampling the span
// (x0, sw) to dw samples reads, within [lo, hi).
func columns(x0, sw float64, dw, lo, hi int) (c0, c1 int) {
	a := newAxis(x0, sw, dw, lo, hi)
	c0, c1 = a.start[0], a.start[0]
	for i, s := range a.start {
		c0 = min(c0, s)
		c1 = max(c1, s+a.n[i])
	}
	return c0, c1
}

func hpass1(dst, src []uint8, start []int, a *axis) {
	taps := a.taps
	for i := range dst {
		n := a.n[i]
		s := src[start[i] : start[i]+n]
		w := a.w[i*taps : i*taps+n]
		w = w[:len(s)] // one bounds check here instead of one per tap
		var acc int32
		for k, v := range s {
			acc += w[k] * int32(v)
		}
		dst[i] = clampByte(acc)
	}
}

func hpass4(dst, src []uint8, start []int, a *axis) {
	taps := a.taps
	for i := 0; i < len(dst)/4; i++ {
		n := a.n[i]
		s := src[4*start[i] : 4*(start[i]+n)]
		w := a.w[i*taps : i*taps+n]
		s = s[:4*len(w)]
		var r, g, b, al int32
		for k, wk := range w {
			p := s[4*k : 4*k+4 : 4*k+4]
			r += wk * int32(p[0])
			g += wk * int32(p[1])
			b += wk * int32(p[2])
			al += wk * int32(p[3])
		}
		d := dst[4*i : 4*i+4 : 4*i+4]
		d[0], d[1], d[2], d[3] = clampByte(r), clampByte(g), clampByte(b), clampByte(al)
	}
}

// vpass computes one output row from the rows of src (stride apart)
// weighted by w.
func vpass(dst, src []uint8, stride int, w []int32) {
	n := len(w)
	var acc [512]int32
	for x0 := 0; x0 < len(dst); x0 += len(acc) {
		chunk := min(len(acc), len(dst)-x0)
		a := acc[:chunk]
		clear(a)
		for k := 0; k < n; k++ {
			wk := w[k]
			row := src[k*stride+x0 : k*stride+x0+chunk]
			for x, v := range row {
				a[x] += wk * int32(v)
			}
		}
		d := dst[x0 : x0+chunk]
		for x, v := range a {
			d[x] = clampByte(v)
		}
	}
}
