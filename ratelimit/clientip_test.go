package ratelimit

import (
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		depth  int
		xff    []string
		realIP string
		want   string
	}{
		{"depth 0 ignores X-Forwarded-For", 0, []string{"203.0.113.1"}, "", ""},
		{"depth 0 ignores X-Real-IP", 0, nil, "203.0.113.1", ""},
		{"negative depth is 0", -1, []string{"203.0.113.1"}, "", ""},
		{"depth 1 reads the last entry", 1, []string{"198.51.100.1, 203.0.113.1"}, "", "203.0.113.1"},
		{"depth 2 reads the second entry from the end", 2, []string{"198.51.100.1, 203.0.113.1, 10.0.0.1"}, "", "203.0.113.1"},
		{"depth equal to the chain reads the first entry", 3, []string{"198.51.100.1, 203.0.113.1, 10.0.0.1"}, "", "198.51.100.1"},
		{"a shorter chain has no address", 3, []string{"203.0.113.1, 10.0.0.1"}, "", ""},
		{"several headers form one chain", 2, []string{"198.51.100.1", "203.0.113.1, 10.0.0.1"}, "", "203.0.113.1"},
		{"X-Real-IP with depth 1 and no X-Forwarded-For", 1, nil, "203.0.113.5", "203.0.113.5"},
		{"X-Forwarded-For wins over X-Real-IP", 1, []string{"203.0.113.1"}, "203.0.113.5", "203.0.113.1"},
		{"X-Real-IP is not read at depth 2", 2, nil, "203.0.113.5", ""},
		{"an entry that is not an address", 1, []string{"unknown"}, "", ""},
		{"an empty entry", 1, []string{"203.0.113.1, "}, "", ""},
		{"a port is dropped", 1, []string{"203.0.113.1:4711"}, "", "203.0.113.1"},
		{"IPv6 with a port", 1, []string{"[2001:db8::1]:443"}, "", "2001:db8::1"},
		{"IPv6 is canonical", 1, []string{"2001:DB8:0:0::1"}, "", "2001:db8::1"},
		{"IPv4-mapped IPv6 is unmapped", 1, []string{"::ffff:203.0.113.1"}, "", "203.0.113.1"},
		{"a zone is dropped", 1, []string{"fe80::1%eth0"}, "", "fe80::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "192.0.2.99:1234" // never used
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if tc.realIP != "" {
				r.Header.Set("X-Real-IP", tc.realIP)
			}
			if got := ClientIP(r, tc.depth); got != tc.want {
				t.Fatalf("ClientIP(depth %d) = %q, want %q", tc.depth, got, tc.want)
			}
		})
	}
}

func FuzzClientIP(f *testing.F) {
	for _, seed := range []string{"203.0.113.1", "a, b, c", "[::1]:80", "", ",,,", "::ffff:1.2.3.4%x"} {
		f.Add(seed, 1)
	}
	f.Fuzz(func(t *testing.T, xff string, depth int) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Forwarded-For", xff)
		got := ClientIP(r, depth%8)
		if got != "" && parseIP(got) != got {
			t.Fatalf("ClientIP returned a non-canonical address %q", got)
		}
	})
}
