// Package netguard makes the outbound calls of webhooks and the business
// rules' CALL_WEBHOOK action safe from server-side request forgery.
//
// # Connect time
//
// Client's connections refuse loopback, private, link-local and other
// non-public addresses, checked on the address actually dialled (after
// DNS resolution, so a name that resolves to 127.0.0.1 is refused too).
// The client uses no proxy from the environment and follows no
// redirects.
//
// # What is public
//
// Public decides. Refused: loopback, private (10/8, 172.16/12, 192.168/16,
// fc00::/7), link-local, multicast, unspecified, and 0.0.0.0/8,
// 100.64.0.0/10 (carrier-grade NAT), 192.0.0.0/24, 198.18.0.0/15,
// 240.0.0.0/4 (with broadcast), the documentation ranges, 100::/64
// (discard), fec0::/10 (deprecated site-local) and 64:ff9b:1::/48
// (local-use NAT64, whose IPv4 may sit anywhere: always refused).
//
// IPv6 addresses that carry an IPv4 address are judged by that IPv4
// address too (refused when it is not public), since a host may route
// them to it:
//
//   - IPv4-mapped ::ffff:a.b.c.d (::ffff:0:0/96) and IPv4-translated
//     ::ffff:0:a.b.c.d (::ffff:0:0:0/96): the last 32 bits;
//   - IPv4-compatible ::a.b.c.d (::/96): the last 32 bits;
//   - NAT64 64:ff9b::/96: the last 32 bits;
//   - 6to4 2002::/16: bits 16 to 48;
//   - Teredo 2001::/32: the server (bits 32 to 64) and the client (the
//     last 32 bits inverted); refused when either is not public.
//
// # Create time
//
// CheckURL validates a target URL before any request (when a webhook or a
// rule is written). It canonicalises the host as a resolver or the HTTP
// client would read it (CanonicalHost): IDNA mapping (UTS #46, the
// Lookup profile net/http uses: full-width digits and dots become ASCII)
// for non-ASCII hosts, lower case, trailing dots dropped, and a host whose
// last label is a number read as an IPv4 address in any inet_aton
// notation (1 to 4 parts, each decimal, octal with a leading 0 or hex
// with 0x: 127.1, 0x7f.1, 0177.0.0.1, 2130706433 and 127.000.000.001 are
// all 127.0.0.1); such a host that is not a valid address is refused as
// malformed (as the WHATWG URL standard does). Unless private targets are
// allowed, the canonical host is then refused when it is an IP literal
// that is not public, or a name that is plainly not public: localhost,
// single-label names, and names under .localhost, .local, .internal and
// .home.arpa. Other names are not resolved (their addresses can change):
// Client checks the address it connects to.
//
// # Errors shown to tenants
//
// Transport errors name resolvers, resolved addresses and other details
// of the server's network. Reason reduces one to a generic text fit to
// show a tenant (blocked address, DNS failure, timeout, connection
// refused, TLS failure, connection failed); callers log the error itself.
//
// Tests and deployments that call targets on a private network opt in
// with Options.AllowPrivate (and CheckURL's allowPrivate).
package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrBlocked is returned (wrapped) for a connection to, or a target URL
// naming, a refused address.
var ErrBlocked = errors.New("netguard: destination address is not public")

// ErrInvalidURL is returned (wrapped) by CheckURL and CanonicalHost for a
// URL that is not http or https with a valid host.
var ErrInvalidURL = errors.New("netguard: not an http or https URL with a valid host")

// Options configure a Client.
type Options struct {
	// Timeout bounds a whole request, body included. Zero means 15 s.
	Timeout time.Duration
	// AllowPrivate permits non-public destinations.
	AllowPrivate bool
}

// Client returns an HTTP client for outbound calls: public destinations
// only (unless opts.AllowPrivate), no proxy, no redirects (the 3xx
// response is returned as it is).
func Client(opts Options) *http.Client {
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Second
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = control
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// control runs before each connection, with the resolved address. Its
// error names the address, for the server's log; what a tenant sees is
// Reason's generic text.
func control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, host)
	}
	if !Public(ip) {
		return fmt.Errorf("%w: %s", ErrBlocked, ip)
	}
	return nil
}

// nonPublic are the ranges besides loopback, private, link-local,
// multicast and unspecified addresses that are not on the public
// internet.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// IPv6 ranges that embed an IPv4 address.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// Public reports whether ip is a public unicast address: outside every
// non-public range, and, for an IPv6 address carrying IPv4 addresses
// (see the package documentation), with every one of them public.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap() // IPv4-mapped ::ffff:a.b.c.d
	if !publicRange(ip) {
		return false
	}
	for _, v4 := range embeddedIPv4(ip) {
		if !publicRange(v4) {
			return false
		}
	}
	return true
}

// publicRange reports whether ip is in no non-public range.
func publicRange(ip netip.Addr) bool {
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries: none
// for an IPv4 address or an IPv6 address of no embedding range.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	ip = ip.WithZone("")
	b := ip.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case ipv4Compatible.Contains(ip), ipv4Translated.Contains(ip), nat64.Contains(ip):
		return []netip.Addr{v4(12)}
	case sixToFour.Contains(ip):
		return []netip.Addr{v4(2)}
	case teredo.Contains(ip):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{v4(4), client}
	}
	return nil
}

// CheckURL checks the target of an outbound call before any request: an
// http or https URL with a host that is valid once canonicalised
// (CanonicalHost), else an error wrapping ErrInvalidURL; and, unless
// allowPrivate, a canonical host that is not plainly non-public, else an
// error wrapping ErrBlocked (see the package documentation). It does not
// look at credentials in the URL, nor resolve names.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return ErrInvalidURL
	}
	host, err := CanonicalHost(u.Hostname())
	if err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	return checkCanonical(host)
}

// checkCanonical refuses a canonical host that is a non-public IP literal
// or a plainly local name.
func checkCanonical(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !Public(ip) {
			return fmt.Errorf("%w: %s", ErrBlocked, host)
		}
		return nil
	}
	if !strings.Contains(host, ".") {
		return fmt.Errorf("%w: %s is a single-label name", ErrBlocked, host)
	}
	for _, local := range []string{"localhost", "local", "internal", "home.arpa"} {
		if host == local || strings.HasSuffix(host, "."+local) {
			return fmt.Errorf("%w: %s is a local name", ErrBlocked, host)
		}
	}
	return nil
}

// CanonicalHost returns a URL's host (url.URL.Hostname: no brackets, no
// port) as a resolver or the HTTP client reads it: an IPv6 literal in its
// standard form; a name mapped with IDNA when not ASCII (full-width
// characters become ASCII, as net/http maps them), in lower case, without
// trailing dots; and a name whose last label is a number (decimal, or hex
// with 0x) read as an IPv4 address in inet_aton notation and returned
// dotted-quad. An error wraps ErrInvalidURL: an IPv6 literal or an IDNA
// name that is not valid, an empty name, or a numeric name that is no
// IPv4 address.
func CanonicalHost(host string) (string, error) {
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return "", fmt.Errorf("%w: %q is not an IPv6 address", ErrInvalidURL, host)
		}
		return ip.String(), nil
	}
	h := host
	if !isASCII(h) {
		if !utf8.ValidString(h) {
			return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidURL, host)
		}
		var err error
		if h, err = idna.Lookup.ToASCII(h); err != nil {
			return "", fmt.Errorf("%w: %q is not a valid international name", ErrInvalidURL, host)
		}
	}
	h = strings.TrimRight(strings.ToLower(h), ".")
	if h == "" {
		return "", fmt.Errorf("%w: %q is empty", ErrInvalidURL, host)
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if !numeric(last) {
		return h, nil
	}
	ip, ok := parseInetAton(h)
	if !ok {
		return "", fmt.Errorf("%w: %q ends in a number but is not an IPv4 address", ErrInvalidURL, host)
	}
	return ip.String(), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// numeric reports whether a label is a number: decimal digits, or 0x
// and hex digits (the WHATWG URL standard's "ends in a number").
func numeric(label string) bool {
	if label == "" {
		return false
	}
	if strings.HasPrefix(label, "0x") {
		return strings.Trim(label[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

// parseInetAton reads s (lower case) as glibc's inet_aton does: 1 to 4
// dot-separated parts, each decimal, octal (a leading 0) or hex (0x), the
// last filling the remaining bytes (a, a.b with b 24 bits, a.b.c with c
// 16 bits, a.b.c.d). A bare "0x" counts as 0.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := atonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// atonPart reads one part of an inet_aton address, at most 32 bits.
func atonPart(p string) (uint64, bool) {
	base, digits := uint64(10), p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	case p == "":
		return 0, false
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		if v = v*base + d; v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

// CheckHost refuses, before any request, a host that is a non-public IP
// literal or resolves only to non-public addresses (for validation at
// create time; Client checks again when it connects). The host is
// canonicalised first (CanonicalHost).
func CheckHost(ctx context.Context, host string) error {
	canonical, err := CanonicalHost(host)
	if err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(canonical); err == nil {
		if !Public(ip) {
			return fmt.Errorf("%w: %s", ErrBlocked, ip)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", canonical)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !Public(a) {
			return fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, a)
		}
	}
	return nil
}

// The generic texts of Reason.
const (
	ReasonBlocked          = "blocked address"
	ReasonDNS              = "DNS failure"
	ReasonTimeout          = "timeout"
	ReasonRefused          = "connection refused"
	ReasonTLS              = "TLS failure"
	ReasonConnectionFailed = "connection failed"
)

// Reason classifies the error of an outbound call (http.Client.Do, a
// dial) into a generic text fit to show a tenant, which names no address,
// resolver or other detail of the server's network: ReasonBlocked (a
// destination netguard refuses), ReasonDNS (the name did not resolve),
// ReasonTimeout, ReasonRefused, ReasonTLS, or ReasonConnectionFailed for
// anything else. Log the error itself for the operator.
func Reason(err error) string {
	var (
		dnsErr    *net.DNSError
		netErr    net.Error
		recordErr tls.RecordHeaderError
		alertErr  tls.AlertError
		verifyErr *tls.CertificateVerificationError
		echErr    *tls.ECHRejectionError
		authErr   x509.UnknownAuthorityError
		nameErr   x509.HostnameError
		certErr   x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrBlocked):
		return ReasonBlocked
	case errors.As(err, &dnsErr):
		return ReasonDNS
	case errors.As(err, &recordErr), errors.As(err, &alertErr), errors.As(err, &verifyErr), errors.As(err, &echErr),
		errors.As(err, &authErr), errors.As(err, &nameErr), errors.As(err, &certErr):
		return ReasonTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case strings.Contains(err.Error(), "tls: ") || strings.Contains(err.Error(), "x509: ") ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// TLS handshake errors are mostly plain errors.New values.
		return ReasonTLS
	}
	return ReasonConnectionFailed
}
