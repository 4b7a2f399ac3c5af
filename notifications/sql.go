package notifications

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on tenantkit's schema (Migrations), one SQL text
// per query for both SQLite and PostgreSQL.
type SQLStore struct{}

// NewSQLStore returns the SQL Store, the Service's default.
func NewSQLStore() *SQLStore { return &SQLStore{} }

var _ Store = (*SQLStore)(nil)

const columns = `id, tenant_id, recipient, notification_type, title, body, severity, link, COALESCE(dedup_key, ''), created_at, read_at`

func scan(s store.Scanner) (*Notification, error) {
	var n Notification
	var severity string
	if err := s.Scan(&n.ID, &n.TenantID, &n.Recipient, &n.Type, &n.Title, &n.Body, &severity, &n.Link, &n.DedupKey,
		&n.CreatedAt, &n.ReadAt); err != nil {
		return nil, err
	}
	n.Severity = Severity(severity)
	n.CreatedAt = n.CreatedAt.UTC()
	if n.ReadAt != nil {
		t := n.ReadAt.UTC()
		n.ReadAt = &t
	}
	return &n, nil
}

// Insert implements Store.
func (*SQLStore) Insert(ctx context.Context, q store.Querier, n *Notification) (bool, error) {
	c, err := q.Exec(ctx, `INSERT INTO notifications (id, tenant_id, recipient, notification_type, title, body, severity, link,
			dedup_key, created_at, read_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (tenant_id, recipient, dedup_key) DO NOTHING`,
		n.ID, n.TenantID, n.Recipient, n.Type, n.Title, n.Body, string(n.Severity), n.Link, store.NullIfEmpty(n.DedupKey),
		n.CreatedAt, n.ReadAt)
	if err != nil || c == 0 {
		return false, err
	}
	return true, inboxCounts.Add(ctx, q, store.CountDelta{Key: countKey(n.TenantID, n.Recipient, n.ReadAt == nil), N: 1})
}

// inboxCounts keeps how many notifications each inbox holds, read and
// unread (migration 0002).
var inboxCounts = store.NewCounts("notification_counts", "tenant_id", "recipient", "state")

// countKey is the key of an inbox's read or unread count.
func countKey(tenantID, recipient string, unread bool) []string {
	if unread {
		return []string{tenantID, recipient, "unread"}
	}
	return []string{tenantID, recipient, "read"}
}

// moved counts n notifications of an inbox as moved from read to unread
// (unread true) or back.
func moved(ctx context.Context, q store.Querier, tenantID, recipient string, unread bool, n int64) error {
	return inboxCounts.Add(ctx, q, store.CountDelta{Key: countKey(tenantID, recipient, unread), N: n},
		store.CountDelta{Key: countKey(tenantID, recipient, !unread), N: -n})
}

// Get implements Store.
func (*SQLStore) Get(ctx context.Context, q store.Querier, tenantID, recipient, id string) (*Notification, error) {
	return store.One(ctx, q, scan, `SELECT `+columns+` FROM notifications WHERE tenant_id = $1 AND recipient = $2 AND id = $3`,
		tenantID, recipient, id)
}

func inboxConds(tenantID, recipient string, unreadOnly bool) *store.Conds {
	c := store.Where("tenant_id = ?", tenantID).And("recipient = ?", recipient)
	if unreadOnly {
		c.And("read_at IS NULL")
	}
	return c
}

// List implements Store.
func (*SQLStore) List(ctx context.Context, q store.Querier, tenantID, recipient string, unreadOnly bool, limit, offset int) ([]*Notification, error) {
	c := inboxConds(tenantID, recipient, unreadOnly)
	return store.Many(ctx, q, scan, `SELECT `+columns+` FROM notifications WHERE `+c.SQL()+
		c.OrderPage("created_at", "id", true, limit, offset), c.Values()...)
}

// Count implements Store: a sum of the inbox's kept counts.
func (*SQLStore) Count(ctx context.Context, q store.Querier, tenantID, recipient string, unreadOnly bool) (int, error) {
	c := store.Where("tenant_id = ?", tenantID).And("recipient = ?", recipient)
	if unreadOnly {
		c.And("state = ?", "unread")
	}
	return inboxCounts.Sum(ctx, q, c)
}

// SetRead implements Store. The update that changes the notification's
// state (read or unread) moves it between the inbox's counts; otherwise
// only its ReadAt changes.
func (*SQLStore) SetRead(ctx context.Context, q store.Querier, tenantID, recipient, id string, readAt *time.Time) error {
	other := "read_at IS NULL" // the state it leaves
	if readAt == nil {
		other = "read_at IS NOT NULL"
	}
	n, err := q.Exec(ctx, `UPDATE notifications SET read_at = $4 WHERE tenant_id = $1 AND recipient = $2 AND id = $3 AND `+other,
		tenantID, recipient, id, readAt)
	if err != nil {
		return err
	}
	if n > 0 {
		return moved(ctx, q, tenantID, recipient, readAt == nil, n)
	}
	return store.ExecOne(ctx, q, `UPDATE notifications SET read_at = $4 WHERE tenant_id = $1 AND recipient = $2 AND id = $3`,
		tenantID, recipient, id, readAt)
}

// ReadAll implements Store.
func (*SQLStore) ReadAll(ctx context.Context, q store.Querier, tenantID, recipient string, at time.Time) (int64, error) {
	n, err := q.Exec(ctx, `UPDATE notifications SET read_at = $3 WHERE tenant_id = $1 AND recipient = $2 AND read_at IS NULL`,
		tenantID, recipient, at)
	if err != nil || n == 0 {
		return n, err
	}
	return n, moved(ctx, q, tenantID, recipient, false, n)
}

// Delete implements Store.
func (*SQLStore) Delete(ctx context.Context, q store.Querier, tenantID, recipient, id string) error {
	unread, err := store.Many(ctx, q, func(s store.Scanner) (bool, error) {
		var u bool
		return u, s.Scan(&u)
	}, `DELETE FROM notifications WHERE tenant_id = $1 AND recipient = $2 AND id = $3 RETURNING read_at IS NULL`,
		tenantID, recipient, id)
	if err != nil {
		return err
	}
	if len(unread) == 0 {
		return store.ErrNotFound
	}
	return inboxCounts.Add(ctx, q, store.CountDelta{Key: countKey(tenantID, recipient, unread[0]), N: -1})
}
