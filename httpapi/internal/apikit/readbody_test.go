package apikit

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// ReadBody reads the whole body whatever the length the request
// announces (none, short, exact, long, larger than presized), and a body
// of a known length with one allocation.
func TestReadBody(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, presized + 100} {
		body := strings.Repeat("x", n)
		for _, announced := range []int64{-1, 0, 1, int64(n) / 2, int64(n), int64(n) + 1, int64(n) * 3} {
			r := httptest.NewRequest("POST", "/", iotest.OneByteReader(strings.NewReader(body)))
			r.ContentLength = announced
			got, err := ReadBody(r)
			if err != nil || string(got) != body {
				t.Errorf("%d bytes announced as %d: read %d bytes, %v", n, announced, len(got), err)
			}
		}
	}
	body := bytes.Repeat([]byte("y"), 600)
	src := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		src.Reset(body)
		if b, err := readAll(src, int64(len(body))); err != nil || len(b) != len(body) {
			t.Fatalf("read %d bytes, %v", len(b), err)
		}
	})
	if allocs != 1 {
		t.Errorf("reading a 600-byte body of a known length allocates %v times, want 1", allocs)
	}
}
