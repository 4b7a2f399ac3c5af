// Package notificationstest is the conformance suite for
// notifications.Store implementations: Run checks every behaviour the
// notifications Service relies on from its Store, as documented on
// notifications.Store. The SQL store runs it on SQLite and PostgreSQL
// (notifications/store_test.go); a host that plugs in its own Store runs
// it against that:
//
//	func TestMyStore(t *testing.T) {
//		notificationstest.Run(t, func(t *testing.T) (*store.DB, notifications.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// Every subtest works in tenants of its own (random ids), so one database
// may serve them all.
package notificationstest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/store"
)

// Run runs the suite. newStore is called once per subtest and returns a
// migrated database and the Store to test on it. Writes get a transaction
// on that database (*store.Tx), as the Service passes them.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, notifications.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"RoundTrip", testRoundTrip},
		{"Inboxes", testInboxes},
		{"ListOrderAndPages", testList},
		{"Unread", testUnread},
		{"ReadAll", testReadAll},
		{"Delete", testDelete},
		{"Dedup", testDedup},
		{"UsesTheTransaction", testUsesTheTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, s := newStore(t)
			c.test(t, &env{t: t, db: db, s: s, ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	db  *store.DB
	s   notifications.Store
	ctx context.Context
}

// tx runs fn in a committed transaction, failing the test on error.
func (e *env) tx(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, fn); err != nil {
		e.t.Fatal(err)
	}
}

// at is the suite's base time, with microseconds (the precision both
// engines keep).
var at = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

func tenant() string { return "t-" + store.NewID() }

// newNotification is a notification of the inbox, created at the base
// time plus minutes.
func newNotification(tenantID, recipient string, minutes int) *notifications.Notification {
	return &notifications.Notification{ID: store.NewID(), TenantID: tenantID, Recipient: recipient, Type: "suite.test",
		Title: fmt.Sprintf("Title %d", minutes), Body: "Body ✓", Severity: notifications.SeverityWarning,
		Link: "/somewhere", CreatedAt: at.Add(time.Duration(minutes) * time.Minute)}
}

// insert stores the notifications, failing unless each is inserted.
func (e *env) insert(ns ...*notifications.Notification) {
	e.t.Helper()
	e.tx(func(tx *store.Tx) error {
		for _, n := range ns {
			ok, err := e.s.Insert(e.ctx, tx, n)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("Insert of %s (no dedup key) reported nothing inserted", n.ID)
			}
		}
		return nil
	})
}

func (e *env) get(tenantID, recipient, id string) (*notifications.Notification, error) {
	return e.s.Get(e.ctx, e.db, tenantID, recipient, id)
}

// ids lists the inbox's ids as List returns them.
func (e *env) ids(tenantID, recipient string, unreadOnly bool, limit, offset int) []string {
	e.t.Helper()
	ns, err := e.s.List(e.ctx, e.db, tenantID, recipient, unreadOnly, limit, offset)
	if err != nil {
		e.t.Fatal(err)
	}
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func (e *env) count(tenantID, recipient string, unreadOnly bool) int {
	e.t.Helper()
	n, err := e.s.Count(e.ctx, e.db, tenantID, recipient, unreadOnly)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func expectNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: error %v, want store.ErrNotFound", what, err)
	}
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testRoundTrip(t *testing.T, e *env) {
	tid := tenant()
	unread := newNotification(tid, "u-1", 0)
	unread.DedupKey = "event:1"
	read := newNotification(tid, "api_key:k-1", 1)
	read.Severity, read.Link, read.Body = notifications.SeverityError, "", ""
	readAt := at.Add(time.Hour)
	read.ReadAt = &readAt
	e.insert(unread, read)
	for _, want := range []*notifications.Notification{unread, read} {
		got, err := e.get(tid, want.Recipient, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "read back", got, want)
	}
}

func testInboxes(t *testing.T, e *env) {
	tid, other := tenant(), tenant()
	mine := newNotification(tid, "u-1", 0)
	theirs := newNotification(tid, "u-2", 1)
	elsewhere := newNotification(other, "u-1", 2)
	e.insert(mine, theirs, elsewhere)
	_, err := e.get(tid, "u-1", theirs.ID)
	expectNotFound(t, "Get of another recipient's notification", err)
	_, err = e.get(tid, "u-1", elsewhere.ID)
	expectNotFound(t, "Get of another tenant's notification", err)
	same(t, "u-1's inbox", e.ids(tid, "u-1", false, 10, 0), []string{mine.ID})
	same(t, "u-1's inbox in the other tenant", e.ids(other, "u-1", false, 10, 0), []string{elsewhere.ID})
	same(t, "u-1's count", e.count(tid, "u-1", false), 1)
	now := at.Add(time.Hour)
	e.tx(func(tx *store.Tx) error {
		expectNotFound(t, "SetRead of another recipient's notification", e.s.SetRead(e.ctx, tx, tid, "u-1", theirs.ID, &now))
		expectNotFound(t, "SetRead of another tenant's notification", e.s.SetRead(e.ctx, tx, tid, "u-1", elsewhere.ID, &now))
		expectNotFound(t, "Delete of another recipient's notification", e.s.Delete(e.ctx, tx, tid, "u-1", theirs.ID))
		expectNotFound(t, "Delete of another tenant's notification", e.s.Delete(e.ctx, tx, tid, "u-1", elsewhere.ID))
		return nil
	})
	for _, n := range []*notifications.Notification{theirs, elsewhere} {
		got, err := e.get(n.TenantID, n.Recipient, n.ID)
		if err != nil {
			t.Fatalf("%s after another inbox's writes: %v", n.Title, err)
		}
		if got.ReadAt != nil {
			t.Errorf("%s was marked read by another inbox's SetRead", n.Title)
		}
	}
}

func testList(t *testing.T, e *env) {
	tid := tenant()
	a, b, c := newNotification(tid, "u-1", 0), newNotification(tid, "u-1", 5), newNotification(tid, "u-1", 2)
	// d has c's time: the later id comes first.
	d := newNotification(tid, "u-1", 2)
	d.ID = store.NewIDAt(time.Now().Add(time.Hour))
	e.insert(a, b, c, d)
	same(t, "newest first", e.ids(tid, "u-1", false, 10, 0), []string{b.ID, d.ID, c.ID, a.ID})
	same(t, "first page of 2", e.ids(tid, "u-1", false, 2, 0), []string{b.ID, d.ID})
	same(t, "second page of 2", e.ids(tid, "u-1", false, 2, 2), []string{c.ID, a.ID})
	same(t, "past the end", e.ids(tid, "u-1", false, 2, 4), []string{})
	same(t, "count", e.count(tid, "u-1", false), 4)
	same(t, "an empty inbox", e.ids(tid, "u-9", false, 10, 0), []string{})
	same(t, "an empty inbox's count", e.count(tid, "u-9", false), 0)
}

func testUnread(t *testing.T, e *env) {
	tid := tenant()
	a, b, c := newNotification(tid, "u-1", 0), newNotification(tid, "u-1", 1), newNotification(tid, "u-1", 2)
	e.insert(a, b, c)
	readAt := at.Add(time.Hour)
	e.tx(func(tx *store.Tx) error { return e.s.SetRead(e.ctx, tx, tid, "u-1", b.ID, &readAt) })
	got, err := e.get(tid, "u-1", b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReadAt == nil || !got.ReadAt.Equal(readAt) {
		t.Errorf("ReadAt after SetRead: %v, want %v", got.ReadAt, readAt)
	}
	same(t, "unread only", e.ids(tid, "u-1", true, 10, 0), []string{c.ID, a.ID})
	same(t, "unread count", e.count(tid, "u-1", true), 2)
	same(t, "all", e.ids(tid, "u-1", false, 10, 0), []string{c.ID, b.ID, a.ID})
	e.tx(func(tx *store.Tx) error { return e.s.SetRead(e.ctx, tx, tid, "u-1", b.ID, nil) })
	if got, err = e.get(tid, "u-1", b.ID); err != nil {
		t.Fatal(err)
	}
	if got.ReadAt != nil {
		t.Errorf("ReadAt after SetRead(nil): %v, want nil", got.ReadAt)
	}
	same(t, "unread count after SetRead(nil)", e.count(tid, "u-1", true), 3)
	e.tx(func(tx *store.Tx) error {
		expectNotFound(t, "SetRead of an unknown id", e.s.SetRead(e.ctx, tx, tid, "u-1", store.NewID(), &readAt))
		return nil
	})
}

func testReadAll(t *testing.T, e *env) {
	tid := tenant()
	a, b, c := newNotification(tid, "u-1", 0), newNotification(tid, "u-1", 1), newNotification(tid, "u-1", 2)
	earlier := at.Add(time.Minute)
	b.ReadAt = &earlier
	theirs := newNotification(tid, "u-2", 3)
	elsewhere := newNotification(tenant(), "u-1", 3)
	e.insert(a, b, c, theirs, elsewhere)
	now := at.Add(time.Hour)
	var changed int64
	e.tx(func(tx *store.Tx) error {
		var err error
		changed, err = e.s.ReadAll(e.ctx, tx, tid, "u-1", now)
		return err
	})
	same(t, "notifications ReadAll changed", changed, int64(2))
	same(t, "unread after ReadAll", e.count(tid, "u-1", true), 0)
	for _, n := range []*notifications.Notification{a, b, c} {
		got, err := e.get(tid, "u-1", n.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := now
		if n == b {
			want = earlier
		}
		if got.ReadAt == nil || !got.ReadAt.Equal(want) {
			t.Errorf("%s: ReadAt %v, want %v", n.Title, got.ReadAt, want)
		}
	}
	same(t, "another recipient's unread", e.count(tid, "u-2", true), 1)
	same(t, "another tenant's unread", e.count(elsewhere.TenantID, "u-1", true), 1)
}

func testDelete(t *testing.T, e *env) {
	tid := tenant()
	a, b := newNotification(tid, "u-1", 0), newNotification(tid, "u-1", 1)
	e.insert(a, b)
	e.tx(func(tx *store.Tx) error { return e.s.Delete(e.ctx, tx, tid, "u-1", a.ID) })
	_, err := e.get(tid, "u-1", a.ID)
	expectNotFound(t, "Get after Delete", err)
	same(t, "inbox after Delete", e.ids(tid, "u-1", false, 10, 0), []string{b.ID})
	e.tx(func(tx *store.Tx) error {
		expectNotFound(t, "a second Delete", e.s.Delete(e.ctx, tx, tid, "u-1", a.ID))
		return nil
	})
}

func testDedup(t *testing.T, e *env) {
	tid := tenant()
	first := newNotification(tid, "u-1", 0)
	first.DedupKey = "event:42"
	e.insert(first)
	again := newNotification(tid, "u-1", 1)
	again.DedupKey = "event:42"
	e.tx(func(tx *store.Tx) error {
		ok, err := e.s.Insert(e.ctx, tx, again)
		if err != nil {
			return err
		}
		if ok {
			t.Errorf("a second Insert with the inbox's dedup key reported inserted")
		}
		return nil
	})
	same(t, "inbox after a duplicate", e.ids(tid, "u-1", false, 10, 0), []string{first.ID})
	// The key is per inbox; notifications without a key never collide.
	other := newNotification(tid, "u-2", 2)
	other.DedupKey = "event:42"
	elsewhere := newNotification(tenant(), "u-1", 2)
	elsewhere.DedupKey = "event:42"
	plain1, plain2 := newNotification(tid, "u-1", 3), newNotification(tid, "u-1", 4)
	e.insert(other, elsewhere, plain1, plain2)
	same(t, "u-1's inbox", e.ids(tid, "u-1", false, 10, 0), []string{plain2.ID, plain1.ID, first.ID})
}

func testUsesTheTransaction(t *testing.T, e *env) {
	tid := tenant()
	kept := newNotification(tid, "u-1", 0)
	e.insert(kept)
	rollback := errors.New("roll back")
	lost := newNotification(tid, "u-1", 1)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if _, err := e.s.Insert(e.ctx, tx, lost); err != nil {
			return err
		}
		now := at.Add(time.Hour)
		if err := e.s.SetRead(e.ctx, tx, tid, "u-1", kept.ID, &now); err != nil {
			return err
		}
		if _, err := e.s.ReadAll(e.ctx, tx, tid, "u-1", now); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("Tx: %v", err)
	}
	same(t, "inbox after a rolled-back transaction", e.ids(tid, "u-1", false, 10, 0), []string{kept.ID})
	same(t, "unread after a rolled-back transaction", e.count(tid, "u-1", true), 1)
	err = e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if err := e.s.Delete(e.ctx, tx, tid, "u-1", kept.ID); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("Tx: %v", err)
	}
	if _, err := e.get(tid, "u-1", kept.ID); err != nil {
		t.Errorf("Get after a rolled-back Delete: %v", err)
	}
}
