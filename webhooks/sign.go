package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/store"
)

// The Standard Webhooks headers of a delivery.
const (
	HeaderID        = standardwebhooks.HeaderWebhookID
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp
	HeaderSignature = standardwebhooks.HeaderWebhookSignature
)

// NewMessageID returns a delivery's message id: "msg_" and 32 hex digits.
// A delivery keeps it across its retries, so receivers can deduplicate.
func NewMessageID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("webhooks: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return "msg_" + hex.EncodeToString(b)
}

// SignatureHeaders returns the headers that sign body as message msgID
// sent at: webhook-id, webhook-timestamp (Unix seconds) and
// webhook-signature, one "v1,<base64>" per secret, space separated, the
// current secret first (during a rotation a receiver holding either secret
// accepts the delivery). Signing is the Standard Webhooks library's.
func SignatureHeaders(msgID string, at time.Time, body []byte, secrets []string) (http.Header, error) {
	signatures := make([]string, len(secrets))
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, err
		}
		if signatures[i], err = wh.Sign(msgID, at, body); err != nil {
			return nil, err
		}
	}
	h := http.Header{}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(signatures, " "))
	return h, nil
}

// SignCall signs a request that is not a delivery (a business rule's
// CALL_WEBHOOK) like one: with the secrets (both, during a rotation) of
// the tenant's oldest active webhook whose url is exactly url, as message
// msgID sent now. With no such webhook it returns nil headers: the call
// goes unsigned. The Kit hands the service to the rules area as its
// rules.CallSigner.
func (s *Service) SignCall(ctx context.Context, tenantID, url, msgID string, body []byte) (http.Header, error) {
	w, err := s.store.SigningWebhook(ctx, s.db, tenantID, url)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	secrets, err := s.secretsOf(w)
	if err != nil {
		return nil, err
	}
	return SignatureHeaders(msgID, s.opts.Now(), body, secrets)
}
