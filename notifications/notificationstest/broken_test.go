package notificationstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/notifications/notificationstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// anyRecipient reads a notification of the tenant whoever it belongs to.
type anyRecipient struct{ *notifications.SQLStore }

func (s anyRecipient) Get(ctx context.Context, q store.Querier, tenantID, _, id string) (*notifications.Notification, error) {
	var recipient string
	if err := q.QueryRow(ctx, `SELECT recipient FROM notifications WHERE tenant_id = $1 AND id = $2`, tenantID, id).Scan(&recipient); err != nil {
		return nil, err
	}
	return s.SQLStore.Get(ctx, q, tenantID, recipient, id)
}

// oldestFirst lists the inbox oldest first.
type oldestFirst struct{ *notifications.SQLStore }

func (s oldestFirst) List(ctx context.Context, q store.Querier, tenantID, recipient string, unreadOnly bool, limit, offset int) ([]*notifications.Notification, error) {
	ns, err := s.SQLStore.List(ctx, q, tenantID, recipient, unreadOnly, 1000, 0)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(ns)-1; i < j; i, j = i+1, j-1 {
		ns[i], ns[j] = ns[j], ns[i]
	}
	ns = ns[min(offset, len(ns)):]
	return ns[:min(limit, len(ns))], nil
}

// readAllRewrites stamps every notification of the inbox, read or not.
type readAllRewrites struct{ *notifications.SQLStore }

func (s readAllRewrites) ReadAll(ctx context.Context, q store.Querier, tenantID, recipient string, at time.Time) (int64, error) {
	return q.Exec(ctx, `UPDATE notifications SET read_at = $3 WHERE tenant_id = $1 AND recipient = $2`, tenantID, recipient, at)
}

// noDedup inserts every notification, whatever its key.
type noDedup struct{ *notifications.SQLStore }

func (s noDedup) Insert(ctx context.Context, q store.Querier, n *notifications.Notification) (bool, error) {
	cp := *n
	cp.DedupKey = ""
	return s.SQLStore.Insert(ctx, q, &cp)
}

// brokenStores are the broken stores by name.
var brokenStores = map[string]func() notifications.Store{
	"anyRecipient":    func() notifications.Store { return anyRecipient{notifications.NewSQLStore()} },
	"oldestFirst":     func() notifications.Store { return oldestFirst{notifications.NewSQLStore()} },
	"readAllRewrites": func() notifications.Store { return readAllRewrites{notifications.NewSQLStore()} },
	"noDedup":         func() notifications.Store { return noDedup{notifications.NewSQLStore()} },
}

// TestBrokenStore runs the suite on SQLite against the broken store
// storetest.Broken names; it is run, and meant to fail, by
// TestSuiteCatchesBrokenStores.
func TestBrokenStore(t *testing.T) {
	newStore, ok := brokenStores[storetest.Broken()]
	if !ok {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	db := storetest.SQLite(t, notifications.Migrations)
	notificationstest.Run(t, func(*testing.T) (*store.DB, notifications.Store) { return db, newStore() })
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	storetest.SuiteCatches(t, "TestBrokenStore", map[string]string{
		"anyRecipient":    "Inboxes",
		"oldestFirst":     "ListOrderAndPages",
		"readAllRewrites": "ReadAll",
		"noDedup":         "Dedup",
	})
}
