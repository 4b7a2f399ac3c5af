package webhooks

import (
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Webhook is an outbound endpoint: where matching domain events are
// delivered, and how. Its signing secret is never part of it; reads show
// MaskedSecret.
type Webhook struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// URL is an http(s) URL on a public address (netguard.CheckURL) unless
	// the service allows private URLs.
	URL string `json:"url"`
	// SubscribedEvents are event types or patterns ("orders.*", "*").
	SubscribedEvents []string `json:"subscribedEvents"`
	// HTTPMethod is one of Methods (POST by default).
	HTTPMethod string `json:"httpMethod"`
	// CustomHeaders are sent with every delivery (they may hold the
	// receiver's credentials: responses showing them are not cached).
	CustomHeaders map[string]string `json:"customHeaders"`
	// MaxRetries is how many attempts a delivery gets in all (at least one).
	MaxRetries int `json:"maxRetries"`
	// TimeoutMs bounds one delivery attempt, in milliseconds.
	TimeoutMs int `json:"timeoutMs"`
	// RateLimitPerMinute caps deliveries to this webhook; 0 is no cap.
	RateLimitPerMinute int `json:"rateLimitPerMinute"`
	// AutoDisableThreshold is how many consecutive failed deliveries switch
	// the webhook off (IsActive false).
	AutoDisableThreshold int  `json:"autoDisableThreshold"`
	IsActive             bool `json:"isActive"` // false: no new deliveries are made to it
	// ConsecutiveFailures counts failed deliveries since the last success.
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LastSuccessAt       *time.Time `json:"lastSuccessAt"` // when a delivery last succeeded; nil never
	LastFailureAt       *time.Time `json:"lastFailureAt"` // when a delivery last failed; nil never
	// MaskedSecret shows that a secret exists, not what it is.
	MaskedSecret string `json:"maskedSecret"`
	// PreviousSecretSetAt is when the secret was last rotated;
	// PreviousSecretExpiresAt is when the previous secret stops signing.
	// Both are nil when no previous secret signs.
	PreviousSecretSetAt     *time.Time `json:"previousSecretSetAt"`
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt"` // see PreviousSecretSetAt
	TenantID                string     `json:"tenantId"`
	OrganizationID          string     `json:"organizationId,omitempty"`
	CreatedAt               time.Time  `json:"createdAt"`
	UpdatedAt               time.Time  `json:"updatedAt"`
}

// MaskedSecret is what reads show in place of a secret.
const MaskedSecret = "whsec_••••••••"

// HTTP methods a webhook may deliver with.
var Methods = []string{"POST", "PUT", "PATCH"}

// Defaults and bounds of the settings.
const (
	DefaultMaxRetries           = 10
	DefaultTimeoutMs            = 15000
	DefaultAutoDisableThreshold = 100
	DefaultRotationPeriod       = 24 * time.Hour

	maxName             = 255
	maxDescription      = 1000
	maxURL              = 2048
	maxEvents           = 100
	maxHeaders          = 50
	maxHeaderValue      = 1000
	maxMaxRetries       = 30
	minTimeoutMs        = 1000
	maxTimeoutMs        = 60000
	maxRateLimit        = 10000
	maxDisableThreshold = 1000
)

// ValidPattern reports whether p is an event pattern Matches takes: "*",
// or dot-separated lowercase names (letters, digits, _), optionally
// ending in ".*", of at most 200 bytes (store.ValidEventPattern).
func ValidPattern(p string) bool { return store.ValidEventPattern(p) }

// Payload is the JSON body a webhook receives for ev, {type, timestamp,
// data, idempotencyKey}; idempotencyKey is the event's id, the same in
// every attempt, retry and resend, to every webhook (and on the events
// stream, which sends the same body: store.EventPayload).
func Payload(ev store.Event) ([]byte, error) { return store.EventPayload(ev) }

// Matches reports whether the event type matches the subscription pattern:
// "*" matches everything, "<prefix>.*" every event under the prefix (at
// any depth), anything else only itself (store.EventMatches).
func Matches(pattern, eventType string) bool { return store.EventMatches(pattern, eventType) }

// The event types the area emits.
const (
	EventWebhookCreated       = "webhooks.webhook.created"
	EventWebhookUpdated       = "webhooks.webhook.updated"
	EventWebhookDeleted       = "webhooks.webhook.deleted"
	EventWebhookSecretRotated = "webhooks.webhook.secret_rotated"
	// EventWebhookDisabled and EventDeliveryFailed (delivery.go)
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []store.EventType{
	{ID: EventWebhookCreated, Label: "Webhook created", Description: "An outbound webhook was created."},
	{ID: EventWebhookUpdated, Label: "Webhook updated", Description: "An outbound webhook's settings changed."},
	{ID: EventWebhookDeleted, Label: "Webhook deleted", Description: "An outbound webhook was deleted."},
	{ID: EventWebhookSecretRotated, Label: "Webhook secret rotated", Description: "An outbound webhook's signing secret was rotated."},
	{ID: EventWebhookDisabled, Label: "Webhook disabled", Description: "An outbound webhook was disabled by its deliveries (a 410 answer, or too many failures in a row)."},
	{ID: EventDeliveryFailed, Label: "Webhook delivery failed", Description: "A delivery of a domain event to an outbound webhook failed for good (its last attempt failed)."},
	{ID: EventInboundReceived, Label: "Inbound webhook received", Description: "An inbound endpoint accepted and processed a message (endpointId, messageId, type, payload)."},
}
