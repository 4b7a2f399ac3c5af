package httpapi

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

// requestIDPattern is plainRequestID as a regular expression.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// FuzzRequestID sends arbitrary X-Request-Id headers through the
// middleware: a plain caller id (1 to 64 of [A-Za-z0-9._:-]) is echoed as
// is, anything else is replaced by a generated one, so that the header
// echoed and logged never carries the caller's other bytes.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "abc-123", "a:b.c_d", "a b", "x\r\nSet-Cookie: a=b", "\x00", "é",
		"0123456789012345678901234567890123456789012345678901234567890123", "01234567890123456789012345678901234567890123456789012345678901234"} {
		f.Add(s)
	}
	generated := regexp.MustCompile(`^[0-9a-f]{12}-[0-9]+$`)
	var seen string
	h := withRequestID(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = requestID(r) }))
	f.Fuzz(func(t *testing.T, id string) {
		r := httptest.NewRequest("GET", "/api/health", nil)
		r.Header["X-Request-Id"] = []string{id}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		got := rec.Header().Get("X-Request-Id")
		if got != seen {
			t.Fatalf("X-Request-Id %q: echoed %q, logged %q", id, got, seen)
		}
		if plainRequestID(id) != requestIDPattern.MatchString(id) {
			t.Fatalf("X-Request-Id %q: plainRequestID %v, the pattern says otherwise", id, plainRequestID(id))
		}
		if requestIDPattern.MatchString(id) {
			if got != id {
				t.Fatalf("X-Request-Id %q: echoed %q, want it as is", id, got)
			}
		} else if !generated.MatchString(got) {
			t.Fatalf("X-Request-Id %q: echoed %q, want a generated id", id, got)
		}
	})
}
