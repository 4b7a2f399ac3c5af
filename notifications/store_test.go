package notifications_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/notifications/notificationstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines.
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		notificationstest.Run(t, func(*testing.T) (*store.DB, notifications.Store) { return db, notifications.NewSQLStore() })
	}, notifications.Migrations)
}

// The inbox's kept counts follow every write: inserts (a duplicate
// dedup key adds nothing), read and unread marks (one that changes
// nothing moves nothing), ReadAll and deletes of read and unread
// notifications, as counting the rows would.
func TestInboxCountsFollowWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := notifications.NewSQLStore()
		tid := sc.TenantID
		check := func(step string) {
			t.Helper()
			for _, unread := range []bool{false, true} {
				want := 0
				q := `SELECT count(*) FROM notifications WHERE tenant_id = $1 AND recipient = $2`
				if unread {
					q += ` AND read_at IS NULL`
				}
				if err := db.QueryRow(ctx, q, tid, "u-1").Scan(&want); err != nil {
					t.Fatal(err)
				}
				got, err := st.Count(ctx, db, tid, "u-1", unread)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("%s: Count(unread %v) = %d, counting gives %d", step, unread, got, want)
				}
			}
		}
		tx := func(fn func(tx *store.Tx) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		for i := range 5 {
			n := &notifications.Notification{ID: store.NewID(), TenantID: tid, Recipient: "u-1", Type: "t", Title: "T",
				Severity: notifications.SeverityInfo, CreatedAt: db.Now()}
			if i == 0 {
				n.DedupKey = "k"
			}
			if i == 4 {
				at := db.Now()
				n.ReadAt = &at
			}
			tx(func(tx *store.Tx) error { _, err := st.Insert(ctx, tx, n); return err })
			ids = append(ids, n.ID)
		}
		tx(func(tx *store.Tx) error {
			_, err := st.Insert(ctx, tx, &notifications.Notification{ID: store.NewID(), TenantID: tid, Recipient: "u-1", Type: "t",
				Title: "T", Severity: notifications.SeverityInfo, DedupKey: "k", CreatedAt: db.Now()})
			return err
		})
		check("inserts")
		at := db.Now()
		tx(func(tx *store.Tx) error { return st.SetRead(ctx, tx, tid, "u-1", ids[0], &at) })
		tx(func(tx *store.Tx) error { return st.SetRead(ctx, tx, tid, "u-1", ids[0], &at) })
		tx(func(tx *store.Tx) error { return st.SetRead(ctx, tx, tid, "u-1", ids[1], nil) })
		check("read marks")
		tx(func(tx *store.Tx) error { return st.SetRead(ctx, tx, tid, "u-1", ids[4], nil) })
		check("unread mark")
		tx(func(tx *store.Tx) error { return st.Delete(ctx, tx, tid, "u-1", ids[0]) })
		tx(func(tx *store.Tx) error { return st.Delete(ctx, tx, tid, "u-1", ids[1]) })
		check("deletes")
		tx(func(tx *store.Tx) error { _, err := st.ReadAll(ctx, tx, tid, "u-1", db.Now()); return err })
		check("read all")
	}, notifications.Migrations)
}
