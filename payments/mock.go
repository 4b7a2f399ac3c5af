package payments

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Keys of the built-in mock providers.
const (
	KeyMock           = "mock"
	KeyMockProcessing = "mock_processing"
)

// MockSignatureHeader carries a mock webhook's signature: the hex
// HMAC-SHA256 of the raw body with the webhookSecret credential.
const MockSignatureHeader = "X-Mock-Signature"

// Mock is a provider that pays at once, without a network: a session is
// confirmed when created, as a client-side confirmation would. KeyMock
// captures at once (captureMethod automatic) or authorizes (manual);
// KeyMockProcessing leaves every session pending, for webhooks to move.
// Its webhooks are JSON {id, type, data: {id: sessionId, status,
// amount?}} signed with MockSignatureHeader; the event's status is the
// unified status it reports, and id its idempotency key.
type Mock struct {
	key string
}

// NewMock returns the mock provider with the key (KeyMock or
// KeyMockProcessing; any other key behaves as KeyMock).
func NewMock(key string) *Mock { return &Mock{key: key} }

// Key implements Provider.
func (m *Mock) Key() string { return m.key }

// SharesWebhooksWith implements WebhookSharer: each mock provider's route
// takes the other's webhooks.
func (m *Mock) SharesWebhooksWith() []string {
	if m.key == KeyMockProcessing {
		return []string{KeyMock}
	}
	return []string{KeyMockProcessing}
}

func mockID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// mockSessionID returns a new session id made at t: "mock_pi_" and 16
// hex digits, the low 28 bits of t's Unix millisecond first (they wrap
// every 3.1 days), then 36 random bits (doc.go, "Mock session ids").
func mockSessionID(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	v := uint64(t.UnixMilli())&(1<<mockSessionTimeBits-1)<<(64-mockSessionTimeBits) |
		binary.BigEndian.Uint64(b[:])&(1<<(64-mockSessionTimeBits)-1)
	binary.BigEndian.PutUint64(b[:], v)
	return "mock_pi_" + hex.EncodeToString(b[:])
}

// mockSessionTimeBits is how many leading bits of a mock session id are
// its millisecond.
const mockSessionTimeBits = 28

// CreateSession implements Provider.
func (m *Mock) CreateSession(_ context.Context, in SessionInput) (*SessionResult, error) {
	id := mockSessionID(time.Now())
	status := StatusCaptured
	switch {
	case m.key == KeyMockProcessing:
		status = StatusPending
	case in.CaptureMethod == CaptureManual:
		status = StatusAuthorized
	}
	return &SessionResult{SessionID: id, ClientSecret: "mock_secret_" + id,
		ProviderData: map[string]any{"mockPaymentIntentId": id}, Status: status, GatewayStatus: string(status)}, nil
}

// Capture implements Provider.
func (m *Mock) Capture(_ context.Context, in CaptureInput) (*CaptureResult, error) {
	return &CaptureResult{CapturedAmount: in.Amount, GatewayStatus: string(StatusCaptured),
		ProviderData: map[string]any{"mockChargeId": mockID("mock_ch_")}}, nil
}

// Refund implements Provider.
func (m *Mock) Refund(context.Context, RefundInput) (*RefundResult, error) {
	return &RefundResult{RefundID: mockID("mock_re_"), GatewayStatus: "succeeded"}, nil
}

// Cancel implements Provider.
func (m *Mock) Cancel(context.Context, CancelInput) (*CancelResult, error) {
	return &CancelResult{GatewayStatus: string(StatusCancelled)}, nil
}

// Status implements Provider: the mock keeps no state, so it reports
// nothing new (StatusUnknown moves no payment).
func (m *Mock) Status(context.Context, StatusInput) (*StatusResult, error) {
	return &StatusResult{Status: StatusUnknown, GatewayStatus: string(StatusUnknown)}, nil
}

// mockEvent is a mock webhook's body.
type mockEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		ID     string       `json:"id"`
		Status string       `json:"status"`
		Amount *json.Number `json:"amount"`
	} `json:"data"`
}

func readMockEvent(body []byte) (*mockEvent, error) {
	var ev mockEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerification, err)
	}
	if ev.Data.ID == "" {
		return nil, fmt.Errorf("%w: data.id is missing", ErrVerification)
	}
	return &ev, nil
}

// WebhookSessionID implements Provider: data.id.
func (m *Mock) WebhookSessionID(body []byte) (string, error) {
	ev, err := readMockEvent(body)
	if err != nil {
		return "", err
	}
	return ev.Data.ID, nil
}

// MockSignature returns the signature of a mock webhook body.
func MockSignature(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook implements Provider. With no webhookSecret nothing
// verifies.
func (m *Mock) VerifyWebhook(_ context.Context, in WebhookInput) (*WebhookEvent, error) {
	secret := in.Credentials["webhookSecret"]
	if secret == "" {
		return nil, fmt.Errorf("%w: no webhookSecret", ErrVerification)
	}
	got, err := hex.DecodeString(strings.TrimSpace(in.Header.Get(MockSignatureHeader)))
	want, _ := hex.DecodeString(MockSignature(in.Body, secret))
	if err != nil || !hmac.Equal(got, want) {
		return nil, fmt.Errorf("%w: bad signature", ErrVerification)
	}
	ev, err := readMockEvent(in.Body)
	if err != nil {
		return nil, err
	}
	out := &WebhookEvent{EventType: ev.Type, EventID: ev.ID, SessionID: ev.Data.ID, ProviderStatus: ev.Data.Status,
		IdempotencyKey: ev.ID}
	if ev.Data.Amount != nil {
		// The mock's amounts are minor units.
		n, err := ev.Data.Amount.Int64()
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: data.amount must be a whole number of minor units", ErrVerification)
		}
		out.Amount = &n
	}
	return out, nil
}

// MapStatus implements Provider: authorized, captured, refunded,
// cancelled and failed are themselves, anything else unknown.
func (m *Mock) MapStatus(providerStatus, _ string) Status {
	switch s := Status(providerStatus); s {
	case StatusAuthorized, StatusCaptured, StatusRefunded, StatusCancelled, StatusFailed:
		return s
	}
	return StatusUnknown
}
