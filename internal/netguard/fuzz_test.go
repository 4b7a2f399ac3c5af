package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

// FuzzCanonicalHost: any host is refused with ErrInvalidURL or
// canonicalised; the canonical form is its own canonical form, and an
// address the guard refuses stays refused whichever spelling reached it.
func FuzzCanonicalHost(f *testing.F) {
	for _, seed := range []string{"example.com", "EXAMPLE.com.", "127.0.0.1", "0x7f.1", "2130706433", "017700000001",
		"::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "２０６.１", "xn--nxasmq6b.com", "", ".", "a..b", "1.2.3.4.5",
		"[::1]", "fe80::1%eth0", "0", "0x", "999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, host string) {
		canon, err := CanonicalHost(host)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("CanonicalHost(%q): %v, want ErrInvalidURL", host, err)
			}
			return
		}
		again, err := CanonicalHost(canon)
		if err != nil || again != canon {
			t.Fatalf("CanonicalHost(%q) = %q, then %q (%v): not stable", host, canon, again, err)
		}
		if ip, err := netip.ParseAddr(canon); err == nil && !Public(ip) {
			if CheckURL("http://"+bracket(canon)+"/", false) == nil {
				t.Fatalf("%q (as %q) is not public, yet CheckURL admits it", host, canon)
			}
		}
	})
}

func bracket(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() {
		return "[" + host + "]"
	}
	return host
}
