package thumbs

import "testing"

func TestAxisWeights(t *testing.T) {
	for _, c := range []struct {
		s0, sn float64
		dn     int
		lo, hi int
	}{
		{0, 100, 100, 0, 100}, {0, 100, 37, 0, 100}, {0, 100, 400, 0, 100},
		{10.5, 33.25, 7, 0, 60}, {0, 1, 50, 0, 1}, {0, 3, 1, 0, 3},
		{500, 1333, 320, 0, 2000}, {0.25, 0.5, 3, 0, 1}, {0, 4000, 1, 0, 4000},
	} {
		a := newAxis(c.s0, c.sn, c.dn, c.lo, c.hi)
		for i := 0; i < c.dn; i++ {
			if a.start[i] < c.lo || a.start[i]+a.n[i] > c.hi || a.n[i] < 1 || a.n[i] > a.taps {
				t.Fatalf("%+v: sample %d reads [%d, %d)", c, i, a.start[i], a.start[i]+a.n[i])
			}
			var sum int32
			for _, w := range a.w[i*a.taps : i*a.taps+a.n[i]] {
				sum += w
			}
			if sum != weightOne {
				t.Fatalf("%+v: sample %d weights sum to %d", c, i, sum)
			}
		}
	}
}

// A flat image stays exactly flat through any resampling, in one channel
// and in four.
func TestResampleFlat(t *testing.T) {
	for _, ch := range []int{1, 4} {
		const sw, sh = 53, 31
		src := make([]uint8, sw*sh*ch)
		for i := range src {
			src[i] = uint8(50 + i%ch*50) // valid premultiplied RGBA: colour <= alpha
		}
		rows := func(y int) ([]uint8, int) { return src[y*sw*ch : (y+1)*sw*ch], 0 }
		for _, d := range [][2]int{{10, 7}, {53, 31}, {200, 90}, {1, 1}} {
			dst := make([]uint8, d[0]*d[1]*ch)
			resample(plane{dst, d[0] * ch, ch}, d[0], d[1], rows, 3, 2, 40, 25, 0, sw, 0, sh)
			for i, v := range dst {
				if want := uint8(50 + i%ch*50); v != want {
					t.Fatalf("ch=%d %dx%d: sample %d = %d, want %d", ch, d[0], d[1], i, v, want)
				}
			}
		}
	}
}
