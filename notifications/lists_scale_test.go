package notifications_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListInboxAtScale measures the inbox's first page (20
// notifications) with its total and unread count, as the Service's List
// asks the Store for them, as a tenant's notifications grow: the whole
// inbox and its unread page, on each engine. It is a measurement, not a
// test, and runs only when TENANTKIT_BENCH_LIST_ROWS lists the
// notification counts to measure at (for example "100000,1000000"); they
// are inserted straight into the table (storetest.SeedRows: multi-row
// INSERTs, 1,000 per transaction), 90% into one recipient's inbox and the
// rest over nine others, 5% of them unread, the kept counts recounted as
// migration 0002 counts them; storetest.GrowAndMeasure says how the table
// grows and what is timed. The last case is the baseline: the inbox's
// total and unread count counted as before the kept counts (20 calls at
// most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./notifications -run TestListInboxAtScale -v -timeout 2h
func TestListInboxAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListInbox(t, db, engine, sizes, calls) },
		notifications.Migrations)
}

// TestListInboxStaysFlat runs TestListInboxAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListInboxStaysFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListInbox, notifications.Migrations)
}

func scaleListInbox(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := notifications.NewSQLStore()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	recipient := func(i int) string {
		if i%10 != 0 {
			return "u-1"
		}
		return fmt.Sprint("u-", 2+i/10%9)
	}
	unread := func(i int) bool { return i%20 == 7 }
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "notifications", "id, tenant_id, recipient, notification_type, title, body, severity, link, created_at, read_at",
			from, to, func(i int) []any {
				at := base.Add(time.Duration(i) * time.Millisecond)
				var read any = at
				if unread(i) {
					read = nil
				}
				return []any{store.NewIDAt(at), tenant, recipient(i), "rules.notify", "An order needs review", "", "info", "", at, read}
			})
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM notification_counts WHERE tenant_id = $1`, tenant); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO notification_counts (tenant_id, recipient, state, slot, n)
				SELECT tenant_id, recipient, CASE WHEN read_at IS NULL THEN 'unread' ELSE 'read' END, 0, count(*) FROM notifications
				WHERE tenant_id = $1 GROUP BY tenant_id, recipient, CASE WHEN read_at IS NULL THEN 'unread' ELSE 'read' END`, tenant)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		inbox, unreadInbox := 0, 0
		for i := range rows {
			if recipient(i) == "u-1" {
				inbox++
				if unread(i) {
					unreadInbox++
				}
			}
		}
		// What Service.List asks for: the page, the total and (for the
		// whole inbox) the unread count.
		list := func(name string, unreadOnly bool, want int) storetest.ScaleCase {
			return storetest.ScaleCase{Name: name, List: func() error {
				items, err := st.List(ctx, db, tenant, "u-1", unreadOnly, 20, 0)
				if err != nil {
					return err
				}
				total, err := st.Count(ctx, db, tenant, "u-1", unreadOnly)
				if err != nil {
					return err
				}
				if !unreadOnly {
					n, err := st.Count(ctx, db, tenant, "u-1", true)
					if err == nil && n != unreadInbox {
						err = fmt.Errorf("unread count %d, want %d", n, unreadInbox)
					}
					if err != nil {
						return err
					}
				}
				return storetest.CheckPage(name, len(items), total, 20, want)
			}}
		}
		return []storetest.ScaleCase{
			list("all", false, inbox),
			list("unread", true, unreadInbox),
			{Name: "total and unread count by count(*), as before 0002", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				var total, unread int
				err := db.QueryRow(ctx, `SELECT count(*), count(CASE WHEN read_at IS NULL THEN 1 END) FROM notifications
					WHERE tenant_id = $1 AND recipient = $2`, tenant, "u-1").Scan(&total, &unread)
				if err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", unread, total, unreadInbox, inbox)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "notifications inbox", engine, sizes, calls, seed, cases)
}
