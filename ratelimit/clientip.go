package ratelimit

import (
	"net/http"
	"net/netip"
	"strings"
)

// SharedBucket is the key part used instead of a client address when the
// address cannot be trusted: every such request to one endpoint shares one
// bucket.
const SharedBucket = "global"

// ClientIP returns the client's address as reported by a chain of depth
// trusted proxies, or "" when it cannot be trusted:
//
//   - depth 0 (or less) ignores X-Forwarded-For and X-Real-IP: "".
//   - depth N reads the Nth entry from the end of X-Forwarded-For (all the
//     request's X-Forwarded-For headers, in order, as one list). The
//     entries before it were written by the client and are never used.
//   - a chain shorter than N, or an entry that is not an IP address: "".
//   - with depth 1 and no X-Forwarded-For, X-Real-IP is used.
//
// The connection's own address (RemoteAddr) is never used: behind N proxies
// it is the nearest proxy, and with depth 0 every client shares one
// bucket. The address is returned in canonical form (IPv4-mapped IPv6
// unmapped), so one client always has one key.
func ClientIP(r *http.Request, depth int) string {
	if depth <= 0 {
		return ""
	}
	forwarded := r.Header.Values("X-Forwarded-For")
	if len(forwarded) == 0 {
		if depth == 1 {
			return parseIP(r.Header.Get("X-Real-IP"))
		}
		return ""
	}
	var chain []string
	for _, h := range forwarded {
		for entry := range strings.SplitSeq(h, ",") {
			chain = append(chain, entry)
		}
	}
	if len(chain) < depth {
		return ""
	}
	return parseIP(chain[len(chain)-depth])
}

// parseIP returns s as a canonical IP address, accepting an optional port
// ("1.2.3.4:80", "[::1]:80"), or "" if it is not one.
func parseIP(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return ""
		}
		addr = ap.Addr()
	}
	return addr.Unmap().WithZone("").String()
}
