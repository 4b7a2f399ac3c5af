// Package ackstest holds what tests of acknowledged caches
// (internal/vcache.Acks) share.
package ackstest

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
)

// AwaitTrusted waits until a's lease holds (its cache serves without
// reading the counter), failing the test after 10 s: no beat got
// through. what names the process in the failure ("B").
func AwaitTrusted(t testing.TB, a *vcache.Acks, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !a.Trusted() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never trusted its cache: no beat got through", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
