package notifications

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of notifications: what the Service asks of its
// database, in the area's terms. SQLStore (sql.go) is the implementation
// on tenantkit's SQLite and PostgreSQL schema, used when Options.Store is
// nil; notificationstest.Run is the conformance suite any other
// implementation must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or
// a transaction, a write the *store.Tx of the Service's change, so that
// the change and its domain event commit together.
//
// Every method names the inbox by tenant and recipient and touches only
// that inbox's notifications: another tenant's or recipient's id is
// ErrNotFound, exactly like an unknown one.
//
// Errors: a missing row is an error wrapping store.ErrNotFound; anything
// else is returned as is.
type Store interface {
	// Insert stores a new notification, every field as given. When
	// n.DedupKey is not "" and the inbox already holds a notification
	// with that key, it stores nothing and returns false.
	Insert(ctx context.Context, q store.Querier, n *Notification) (inserted bool, err error)
	// Get returns the inbox's notification id, or ErrNotFound.
	Get(ctx context.Context, q store.Querier, tenantID, recipient, id string) (*Notification, error)
	// List returns the inbox's notifications (only the unread ones when
	// unreadOnly), newest CreatedAt first (then ID descending), skipping
	// offset and returning at most limit.
	List(ctx context.Context, q store.Querier, tenantID, recipient string, unreadOnly bool, limit, offset int) ([]*Notification, error)
	// Count counts the inbox's notifications (only the unread ones when
	// unreadOnly).
	Count(ctx context.Context, q store.Querier, tenantID, recipient string, unreadOnly bool) (int, error)
	// SetRead sets the notification's ReadAt (nil: unread); ErrNotFound
	// when the inbox has no such notification.
	SetRead(ctx context.Context, q store.Querier, tenantID, recipient, id string, readAt *time.Time) error
	// ReadAll sets ReadAt to at on every unread notification of the
	// inbox (read ones keep theirs) and returns how many it changed.
	ReadAll(ctx context.Context, q store.Querier, tenantID, recipient string, at time.Time) (int64, error)
	// Delete removes the notification; ErrNotFound when the inbox has no
	// such notification.
	Delete(ctx context.Context, q store.Querier, tenantID, recipient, id string) error
}
