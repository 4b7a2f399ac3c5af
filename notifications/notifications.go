package notifications

import (
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Severity is how much a notification matters: info, warning or error.
type Severity string

// The severities.
const (
	// SeverityInfo: something happened (the default).
	SeverityInfo Severity = "info"
	// SeverityWarning: something may need the recipient's attention.
	SeverityWarning Severity = "warning"
	// SeverityError: something failed.
	SeverityError Severity = "error"
)

// Valid reports whether s is one of the three severities.
func (s Severity) Valid() bool {
	return s == SeverityInfo || s == SeverityWarning || s == SeverityError
}

// Notification is one message in one recipient's inbox, in one tenant.
type Notification struct {
	// ID is a UUIDv7 (store.NewID).
	ID       string
	TenantID string
	// Recipient owns the notification: a user id, or "api_key:<id>" for
	// an API key (store.Scope.ActorID).
	Recipient string
	// Type names what the notification is about ("rules.notify",
	// "webhooks.endpoint_disabled").
	Type string
	// Title is the one line shown in the inbox.
	Title string
	// Body says more, shown with the title ("" for nothing more).
	Body string
	// Severity is info, warning or error.
	Severity Severity
	// Link is where the notification leads in the host's UI: "" for
	// nowhere, a path ("/webhooks/123") or an http(s) URL.
	Link string
	// DedupKey, when not "", makes the notification unique per tenant,
	// recipient and key: a second Create with the same key adds nothing.
	// Feeds delivered at least once (domain events) set it. It is not
	// shown by the HTTP API.
	DedupKey  string
	CreatedAt time.Time
	// ReadAt is when the recipient marked it read; nil while unread.
	ReadAt *time.Time
}

// CreateInput describes a new notification.
type CreateInput struct {
	// Recipient is required: a user id or "api_key:<id>", at most
	// MaxRecipientLength characters.
	Recipient string
	// Type is required: a lowercase letter, then lowercase letters,
	// digits, '.', '_' or '-'; at most MaxTypeLength characters.
	Type string
	// Title is required, at most MaxTitleLength characters.
	Title string
	// Body is optional, at most MaxBodyLength characters.
	Body string
	// Severity is info (the default when ""), warning or error.
	Severity Severity
	// Link is optional: a path starting with one '/', or an http or https
	// URL; at most MaxLinkLength characters.
	Link string
	// DedupKey is optional (see Notification.DedupKey), at most
	// MaxRecipientLength characters.
	DedupKey string
}

// ListOptions selects a page of the caller's inbox.
type ListOptions struct {
	// UnreadOnly keeps only the unread notifications.
	UnreadOnly bool
	// Limit is the page size (1…MaxPageSize; 0 means DefaultPageSize).
	Limit int
	// Offset is how many notifications to skip (≥ 0).
	Offset int
}

// Page is a page of an inbox.
type Page struct {
	// Items are the notifications, newest first.
	Items []*Notification
	// Total counts the notifications the options select (all pages).
	Total int
	// UnreadCount counts the inbox's unread notifications, whatever the
	// options.
	UnreadCount int
}

// Limits.
const (
	// MaxRecipientLength bounds CreateInput.Recipient and DedupKey.
	MaxRecipientLength = 200
	// MaxTypeLength bounds CreateInput.Type.
	MaxTypeLength = 100
	// MaxTitleLength bounds CreateInput.Title.
	MaxTitleLength = 200
	// MaxBodyLength bounds CreateInput.Body.
	MaxBodyLength = 4000
	// MaxLinkLength bounds CreateInput.Link.
	MaxLinkLength = 2000
	// DefaultPageSize is ListOptions.Limit's default.
	DefaultPageSize = 20
	// MaxPageSize bounds ListOptions.Limit.
	MaxPageSize = 100
)

// Errors a caller can test with errors.Is. Each wraps a store error kind,
// which httpapi maps to a status.
var (
	// ErrNotificationNotFound: no notification of that id in the caller's
	// inbox (another recipient's or another tenant's included). It is a
	// store.ErrNotFound.
	ErrNotificationNotFound = store.Errorf(store.ErrNotFound, "Notification not found")
	// ErrNoRecipient: the scope names no actor (store.Scope.ActorID),
	// so there is no inbox to read. It is a store.ErrForbidden.
	ErrNoRecipient = store.Errorf(store.ErrForbidden, "The caller has no inbox")
)

// EventNotificationCreated is emitted, in the creating transaction, for
// every new notification.
const EventNotificationCreated = "notifications.notification.created"

// EventTypes describes the events the area emits.
var EventTypes = []store.EventType{
	// Broadcast on the events stream to its recipient's sessions only.
	{ID: EventNotificationCreated, Label: "Notification created", Description: "A notification was added to a recipient's inbox.",
		ClientBroadcast: true, RecipientField: "recipient"},
}

// NotificationEvent is the data of notifications.notification.created.
// It carries no text (title, body, link): those are the recipient's, and
// the tenant's webhooks subscribed to the event, of any organization,
// receive it.
type NotificationEvent struct {
	ID        string   `json:"id"`
	Recipient string   `json:"recipient"` // a user id or "api_key:<id>"
	Type      string   `json:"type"`      // what the notification is about
	Severity  Severity `json:"severity"`  // info, warning or error
}
