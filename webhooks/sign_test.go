package webhooks_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/webhooks"
)

// A receiver verifying with the Standard Webhooks library accepts a
// delivery signed with both secrets of a rotation, whichever it holds, and
// refuses other secrets, other bodies and stale timestamps.
func TestSignatureHeadersVerify(t *testing.T) {
	current, previous, other := webhooks.NewSecret(), webhooks.NewSecret(), webhooks.NewSecret()
	msgID := webhooks.NewMessageID()
	if !regexp.MustCompile(`^msg_[0-9a-f]{32}$`).MatchString(msgID) {
		t.Fatalf("message id %q", msgID)
	}
	body := []byte(`{"type":"business_rules.rule.created","timestamp":"2026-11-22T06:00:00Z","data":{"id":"x"}}`)
	now := time.Now()
	h, err := webhooks.SignatureHeaders(msgID, now, body, []string{current, previous})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(h.Get(webhooks.HeaderSignature)); len(got) != 2 || !strings.HasPrefix(got[0], "v1,") || !strings.HasPrefix(got[1], "v1,") {
		t.Fatalf("signature header %q, want two v1 signatures", h.Get(webhooks.HeaderSignature))
	}
	verify := func(secret string, body []byte) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		return wh.Verify(body, h)
	}
	for _, secret := range []string{current, previous} {
		if err := verify(secret, body); err != nil {
			t.Errorf("a receiver holding one of the secrets refused: %v", err)
		}
	}
	if err := verify(other, body); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("another secret: %v, want no matching signature", err)
	}
	if err := verify(current, append(body, ' ')); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("an altered body: %v, want no matching signature", err)
	}
	stale, err := webhooks.SignatureHeaders(msgID, now.Add(-10*time.Minute), body, []string{current})
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := standardwebhooks.NewWebhook(current)
	if err := wh.Verify(body, stale); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Errorf("a 10-minute-old delivery: %v, want too old", err)
	}
	if _, err := webhooks.SignatureHeaders(msgID, now, body, []string{"whsec_not base64!"}); err == nil {
		t.Error("a malformed secret signed")
	}
}
