package identity

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// TestKeyOf: a credential's cache key is its kind and the SHA-256 of its
// bytes, whatever its length, and an API key's (or a session token of up
// to keyOfStack bytes) is computed without a heap allocation: it is
// computed on every authenticated request.
func TestKeyOf(t *testing.T) {
	for _, n := range []int{0, 1, 32, 33, 54, keyOfStack, keyOfStack + 1, 4096} {
		secret := strings.Repeat("k", n)
		if got, want := keyOf('k', secret), (cacheKey{kind: 'k', sum: sha256.Sum256([]byte(secret))}); got != want {
			t.Errorf("%d bytes: keyOf is %x, want %x", n, got.sum, want.sum)
		}
		if keyOf('k', secret) == keyOf('t', secret) {
			t.Errorf("%d bytes: an API key and a session token share a cache key", n)
		}
	}
	key := "tk_" + strings.Repeat("0123456789abcdef", 3) // a generated API key's length and more
	if allocs := testing.AllocsPerRun(100, func() { _ = keyOf('k', key) }); allocs != 0 {
		t.Errorf("keyOf of a %d-byte key: %.0f allocations, want 0", len(key), allocs)
	}
}
