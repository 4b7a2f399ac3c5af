package integrations

import (
	"encoding/json"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// FieldType is the kind of a credential field, which decides the JSON
// type of its value: text, secret, select and url take strings, boolean
// a boolean.
type FieldType string

// Field types.
const (
	FieldText    FieldType = "text"
	FieldSecret  FieldType = "secret"
	FieldSelect  FieldType = "select"
	FieldBoolean FieldType = "boolean"
	FieldURL     FieldType = "url"
)

// Option is one choice of a select field.
type Option struct {
	Value string `json:"value"` // the value stored when chosen
	Label string `json:"label"`
}

// Field describes one credential an integration takes.
type Field struct {
	Key      string    `json:"key"` // the credential key the value is stored under
	Label    string    `json:"label"`
	Type     FieldType `json:"type"`     // how the value is entered and checked
	Required bool      `json:"required"` // whether a value must be stored
	// Options are the values a select field accepts.
	Options []Option `json:"options,omitempty"`
}

// APIVersion is one version of a provider's API an integration can use.
type APIVersion struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Status is stable, deprecated or experimental.
	Status string `json:"status"`
	// Default marks the version a tenant uses until it picks one (at most
	// one; without any, the first).
	Default bool `json:"default,omitempty"`
}

// Definition describes an integration hosts register (Service.Register).
type Definition struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Category groups integrations: payment, shipping, data_sync,
	// communication, webhook, storage or other.
	Category string `json:"category"`
	// Hub is the area that uses the integration (payment_gateways,
	// data_sync, webhook_endpoints, …).
	Hub string `json:"hub"`
	// ProviderKey names the provider in its hub (a payment provider's key,
	// a sync adapter's key); "" when none.
	ProviderKey string `json:"providerKey"`
	// BundleID names the Bundle it belongs to; "" for none.
	BundleID string `json:"bundleId"`
	// APIVersions are the versions a tenant may pick; none means the
	// integration is not versioned.
	APIVersions []APIVersion `json:"apiVersions"`
	// Credentials are the fields a tenant fills in; an integration
	// without any of its own takes its bundle's.
	Credentials []Field `json:"credentials"`
}

// Bundle groups integrations of one vendor that share credentials.
type Bundle struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Credentials []Field `json:"credentials" jsonschema:"nullable"` // the fields its integrations share; nil when none
}

// State is a tenant's state of an integration. A tenant with no stored
// state has the defaults: enabled, the default API version, no
// re-authentication required, no health check.
type State struct {
	IntegrationID string `json:"-"`
	IsEnabled     bool   `json:"isEnabled"` // default true
	// APIVersion is the version in use; nil for an unversioned
	// integration.
	APIVersion     *string `json:"apiVersion"`
	ReauthRequired bool    `json:"reauthRequired"` // the tenant must enter its credentials again; a flag the host sets
	// NotifyAdminsOnFailure has the tenant's admins notified of the
	// integration's failures (for the custom webhooks integration: an
	// endpoint disabled, a delivery that failed for good). Default false.
	NotifyAdminsOnFailure bool `json:"notifyAdminsOnFailure"`
	// Health fields: the last health check's status (healthy or
	// unhealthy), when it ran and how long it took; nil until one runs
	// (POST /data_sync/validate runs one for a sync integration whose
	// adapter can check its connection).
	LastHealthStatus    *string    `json:"lastHealthStatus"`
	LastHealthCheckedAt *time.Time `json:"lastHealthCheckedAt"` // see LastHealthStatus
	LastHealthLatencyMs *int64     `json:"lastHealthLatencyMs"` // see LastHealthStatus
	// EnabledAt is when it was last enabled after being disabled; nil when
	// it never was.
	EnabledAt *time.Time `json:"enabledAt"`
	// UpdatedAt is when the state last changed; nil when never stored.
	UpdatedAt *time.Time `json:"updatedAt"`
}

// Log levels.
const (
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// LogEntry is one line of an integration's log.
type LogEntry struct {
	ID            string          `json:"id"`
	TenantID      string          `json:"-"`
	IntegrationID string          `json:"integrationId"`
	RunID         *string         `json:"runId"`
	Level         string          `json:"level" jsonschema:"enum=info,enum=warn,enum=error"` // info, warn or error
	Message       string          `json:"message"`
	Code          *string         `json:"code"`    // a machine-readable code, or nil
	Payload       json.RawMessage `json:"payload"` // JSON details, or null
	EntityType    *string         `json:"entityType"`
	EntityID      *string         `json:"entityId"`
	CreatedAt     time.Time       `json:"createdAt"`
}

// Event types emitted by the area.
const (
	EventStateUpdated       = "integrations.state.updated"
	EventVersionUpdated     = "integrations.version.updated"
	EventCredentialsUpdated = "integrations.credentials.updated"
)

// EventTypes describes the events the area emits.
var EventTypes = []store.EventType{
	{ID: EventStateUpdated, Label: "Integration state updated", Description: "An integration was enabled or disabled, its re-authentication flag changed, or a health check ran, for a tenant."},
	{ID: EventVersionUpdated, Label: "Integration API version changed", Description: "A tenant picked another API version of an integration."},
	{ID: EventCredentialsUpdated, Label: "Integration credentials updated", Description: "A tenant's credentials of an integration changed (the event names the keys, never a value)."},
}
