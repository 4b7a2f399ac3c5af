package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// embedded are IPv6 addresses carrying an IPv4 address, each with the
// public verdict: refused when the IPv4 address is loopback or private,
// accepted when it is public (never dialled: see TestControl).
var embedded = map[string]bool{
	// IPv4-mapped ::ffff:0:0/96.
	"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:192.168.1.1": false, "::ffff:8.8.8.8": true,
	// IPv4-translated ::ffff:0:0:0/96.
	"::ffff:0:7f00:1": false, "::ffff:0:a00:1": false, "::ffff:0:808:808": true,
	// IPv4-compatible ::/96.
	"::127.0.0.1": false, "::7f00:1": false, "::10.0.0.1": false, "::169.254.169.254": false, "::8.8.8.8": true,
	// NAT64 64:ff9b::/96.
	"64:ff9b::7f00:1": false, "64:ff9b::127.0.0.1": false, "64:ff9b::a00:1": false, "64:ff9b::c0a8:101": false,
	"64:ff9b::a9fe:a9fe": false, "64:ff9b::808:808": true,
	// Local-use NAT64 64:ff9b:1::/48: always refused.
	"64:ff9b:1::7f00:1": false, "64:ff9b:1::808:808": false, "64:ff9b:1:ffff::1": false,
	// 6to4 2002::/16, the IPv4 address in bits 16..48.
	"2002:7f00:1::1": false, "2002:7f00:1::": false, "2002:a00:1::1": false, "2002:c0a8:101::1": false,
	"2002:a9fe:a9fe::1": false, "2002:808:808::1": true,
	// Teredo 2001::/32: server 8.8.8.8 in bits 32..64, client = last 32 bits
	// inverted (127.0.0.1 -> 80ff:fffe, 192.168.1.1 -> 3f57:fefe, 10.0.0.1
	// -> f5ff:fffe, 8.8.4.4 -> f7f7:fbfb).
	"2001:0:808:808::80ff:fffe": false, "2001:0:808:808::3f57:fefe": false, "2001:0:808:808::f5ff:fffe": false,
	"2001:0:808:808::f7f7:fbfb": true,
	// A private Teredo server refuses too.
	"2001:0:7f00:1::f7f7:fbfb": false, "2001:0:a00:1::f7f7:fbfb": false,
}

// plain are the other addresses, with their verdict.
var plain = map[string]bool{
	"8.8.8.8": true, "1.1.1.1": true, "93.184.215.14": true, "2606:4700::1111": true, "2a00:1450:4001::200e": true,
	"127.0.0.1": false, "127.5.5.5": false, "::1": false, "::": false, "10.1.2.3": false, "172.16.0.1": false,
	"192.168.1.1": false, "169.254.169.254": false, "fe80::1": false, "fe80::1%eth0": false, "fc00::1": false,
	"fd12:3456::1": false, "fec0::1": false, "0.0.0.0": false, "0.1.2.3": false, "100.64.0.1": false, "192.0.0.8": false,
	"198.18.0.1": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false, "240.0.0.1": false,
	"2001:db8::1": false, "100::1": false, "192.0.2.1": false, "198.51.100.1": false, "203.0.113.1": false,
}

func TestPublicEmbeddedIPv4(t *testing.T) {
	for _, table := range []map[string]bool{embedded, plain} {
		for addr, want := range table {
			if got := Public(netip.MustParseAddr(addr)); got != want {
				t.Errorf("Public(%s) = %v, want %v", addr, got, want)
			}
		}
	}
}

// TestControl calls the dialer's Control with the address a resolver
// would have returned: nothing is dialled.
func TestControl(t *testing.T) {
	for _, table := range []map[string]bool{embedded, plain} {
		for addr, public := range table {
			err := control("tcp6", net.JoinHostPort(addr, "443"), nil)
			switch {
			case public && err != nil:
				t.Errorf("control(%s) = %v, want nil", addr, err)
			case !public && !errors.Is(err, ErrBlocked):
				t.Errorf("control(%s) = %v, want ErrBlocked", addr, err)
			}
		}
	}
	if err := control("tcp", "not-an-address:80", nil); !errors.Is(err, ErrBlocked) {
		t.Errorf("control of a name = %v, want ErrBlocked", err)
	}
}

// TestClientRefusesEmbeddedLoopback dials, through Client, IPv6 forms of
// 127.0.0.1 that the kernel routes to the loopback receiver: the guard
// refuses them; with AllowPrivate the mapped form connects.
func TestClientRefusesEmbeddedLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	mapped := "http://[::ffff:127.0.0.1]:" + port + "/"
	_, err := Client(Options{}).Get(mapped)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("%s: err = %v, want ErrBlocked", mapped, err)
	}
	if Reason(err) != ReasonBlocked {
		t.Errorf("Reason(%v) = %q", err, Reason(err))
	}
	resp, err := Client(Options{AllowPrivate: true}).Get(mapped)
	if err != nil {
		t.Skipf("this host does not route IPv4-mapped addresses: %v", err)
	}
	resp.Body.Close()
}

// obfuscatedLoopback are loopback targets written so that a plain
// netip.ParseAddr of the host does not see an address.
var obfuscatedLoopback = []string{
	"http://127.1", "http://127.1:8080/h", "http://0x7f.1", "http://0x7F.1/h", "http://0x7f000001", "http://2130706433",
	"http://017700000001", "http://0177.0.0.1", "http://0177.1", "http://127.000.000.001", "http://127.0.0.01",
	"http://127.0.1", "http://0x7f.0x0.0x0.0x1", "http://127.0.0.1.", "http://127.1..", "http://localhost..",
	"http://localhost.", "http://LOCALHOST.", "http://api.localhost.", "http://１２７.０.０.１", "http://１２７.０.０.１:8080/h",
	"http://127。0。0。1", "http://ｌｏｃａｌｈｏｓｔ", "http://ＬＯＣＡＬＨＯＳＴ./h", "http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/",
	"http://0", "http://0.0.0.0", "http://0x0", "http://[::ffff:127.0.0.1]", "http://[::ffff:7f00:1]",
	"http://[::127.0.0.1]", "http://[64:ff9b::7f00:1]:8080/h", "http://[64:ff9b::127.0.0.1]", "http://[2002:7f00:1::1]/h",
	"http://[2001:0:808:808::80ff:fffe]", "http://[64:ff9b:1::808:808]", "http://[fe80::1%25eth0]/",
	"http://10.1", "http://0xa.0x1", "http://012.0.0.1", "http://0xa9fea9fe/latest/meta-data/", "http://169.254.43518",
	"http://[::ffff:169.254.169.254]", "http://[64:ff9b::a9fe:a9fe]", "https://printer.local", "http://receiver",
	"http://metadata.google.internal", "http://router.home.arpa",
}

func TestCheckURLObfuscated(t *testing.T) {
	for _, u := range obfuscatedLoopback {
		if err := CheckURL(u, false); !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckURL(%q) = %v, want ErrBlocked", u, err)
		}
		if err := CheckURL(u, true); err != nil {
			t.Errorf("CheckURL(%q, allowPrivate) = %v, want nil", u, err)
		}
	}
}

func TestCheckURLPublic(t *testing.T) {
	for _, u := range []string{
		"https://hooks.example.com/x", "http://example.com", "HTTPS://HOOKS.EXAMPLE.COM/UPPER", "http://8.8.8.8/",
		"http://8.8.2056", "http://0x8080808", "http://134744072", "http://[2606:4700:4700::1111]/hook",
		"http://[::ffff:8.8.8.8]/", "http://[64:ff9b::808:808]/", "http://[2002:808:808::1]/", "https://bücher.example/",
		"https://ＥＸＡＭＰＬＥ.com/", "https://example.com./", "https://1.example", "https://hooks.example.com:8443/a?b=c#d",
	} {
		if err := CheckURL(u, false); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", u, err)
		}
	}
}

func TestCheckURLInvalid(t *testing.T) {
	for _, u := range []string{
		"", "ftp://example.com/", "example.com/hook", "//example.com/hook", "https://", "https:///path", "javascript:alert(1)",
		"https://exa mple.com/", "https://example.com:port/", "http://[::1", "http://[127.0.0.1]/", "http://%31%32%37.0.0.1/", "http://a.0x", "http://[zz::1]/",
		"http://256.0.0.1", "http://127.0.0.256", "http://1.2.3.4.5", "http://0x100.1", "http://08.0.0.1", "http://0x1g.1",
		"http://4294967296", "http://0x100000000", "http://1.16777216", "http://example.123", "http://.", "http://..",
		"http://a..1", "http://exa\u200dmple.ｃom",
	} {
		for _, allow := range []bool{false, true} {
			if err := CheckURL(u, allow); !errors.Is(err, ErrInvalidURL) {
				t.Errorf("CheckURL(%q, %v) = %v, want ErrInvalidURL", u, allow, err)
			}
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for host, want := range map[string]string{
		"127.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "0X7F.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"127.000.000.001": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1", "017700000001": "127.0.0.1",
		"127.0.1": "127.0.0.1", "1.2.3": "1.2.0.3", "1.65535": "1.0.255.255", "0": "0.0.0.0", "0x": "0.0.0.0",
		"127.0.0.1.": "127.0.0.1", "localhost..": "localhost", "LocalHost.": "localhost", "１２７.０.０.１": "127.0.0.1",
		"ｌｏｃａｌｈｏｓｔ": "localhost", "bücher.example": "xn--bcher-kva.example", "Example.COM": "example.com",
		"::1": "::1", "0:0:0:0:0:ffff:7f00:1": "::ffff:127.0.0.1", "64:FF9B::7F00:1": "64:ff9b::7f00:1",
		"8.8.8.8": "8.8.8.8",
	} {
		got, err := CanonicalHost(host)
		if err != nil || got != want {
			t.Errorf("CanonicalHost(%q) = %q, %v, want %q", host, got, err, want)
		}
	}
}

func TestCheckHostCanonicalises(t *testing.T) {
	for _, host := range []string{"127.1", "0x7f.1", "0177.0.0.1", "１２７.０.０.１", "64:ff9b::7f00:1", "::127.0.0.1", "2002:7f00:1::1"} {
		if err := CheckHost(t.Context(), host); !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckHost(%q) = %v, want ErrBlocked", host, err)
		}
	}
}

func TestReason(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://x.example/h", Err: err} }
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{urlErr(opErr(fmt.Errorf("%w: 127.0.0.1", ErrBlocked))), ReasonBlocked},
		{urlErr(opErr(&net.DNSError{Err: "no such host", Name: "0x7f.1", Server: "10.0.0.53:53", IsNotFound: true})), ReasonDNS},
		{urlErr(opErr(&net.DNSError{Err: "i/o timeout", Name: "x.example", Server: "10.0.0.53:53", IsTimeout: true})), ReasonDNS},
		{urlErr(opErr(os.NewSyscallError("connect", syscall.ECONNREFUSED))), ReasonRefused},
		{urlErr(context.DeadlineExceeded), ReasonTimeout},
		{urlErr(opErr(os.NewSyscallError("connect", syscall.ETIMEDOUT))), ReasonTimeout},
		{urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), ReasonTLS},
		{urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), ReasonTLS},
		{urlErr(x509.HostnameError{Host: "10.0.0.7"}), ReasonTLS},
		{urlErr(errors.New("remote error: tls: handshake failure")), ReasonTLS},
		{urlErr(io.EOF), ReasonConnectionFailed},
		{urlErr(opErr(os.NewSyscallError("read", syscall.ECONNRESET))), ReasonConnectionFailed},
		{errors.New("net/http: invalid header field value for \"X\""), ReasonConnectionFailed},
	} {
		if got := Reason(c.err); got != c.want {
			t.Errorf("Reason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestReasonOfRealErrors classifies what Client returns for a closed
// loopback port and a non-TLS loopback server spoken to with TLS, and
// checks the generic text names no address.
func TestReasonOfRealErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer plainSrv.Close()
	client := Client(Options{AllowPrivate: true})
	for target, want := range map[string]string{
		"http://" + closed + "/": ReasonRefused,
		"https://" + strings.TrimPrefix(plainSrv.URL, "http://") + "/": ReasonTLS,
	} {
		resp, err := client.Get(target)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: no error", target)
		}
		if got := Reason(err); got != want {
			t.Errorf("Reason(%v) = %q, want %q", err, got, want)
		}
	}
	_, err = Client(Options{}).Get(plainSrv.URL)
	if got := Reason(err); got != ReasonBlocked || strings.Contains(got, "127.0.0.1") {
		t.Errorf("Reason(%v) = %q, want %q", err, got, ReasonBlocked)
	}
}
