package payments_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
)

// TestMockSessionIDsFollowTime checks that the mock's session ids keep
// their form (mock_pi_ and 16 hex digits) and sort in the order they
// were made, so that the index of sessions by provider takes each new one
// at its end (doc.go, "Mock session ids"). Sessions made 2 ms
// apart; random ids would sort so by chance once in 20! (a run across
// the instant the millisecond bits wrap, once in 3.1 days, would fail).
func TestMockSessionIDsFollowTime(t *testing.T) {
	form := regexp.MustCompile(`^mock_pi_[0-9a-f]{16}$`)
	for _, key := range []string{payments.KeyMock, payments.KeyMockProcessing} {
		m := payments.NewMock(key)
		var ids []string
		for range 20 {
			res, err := m.CreateSession(context.Background(), payments.SessionInput{Amount: 100, Currency: "USD"})
			if err != nil {
				t.Fatal(err)
			}
			if !form.MatchString(res.SessionID) {
				t.Fatalf("%s: session id %q is not mock_pi_ and 16 hex digits", key, res.SessionID)
			}
			ids = append(ids, res.SessionID)
			time.Sleep(2 * time.Millisecond)
		}
		if !slices.IsSorted(ids) {
			t.Errorf("%s: session ids made one after another do not sort in that order: %v", key, ids)
		}
		if len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Errorf("%s: a session id repeats: %v", key, ids)
		}
	}
}
