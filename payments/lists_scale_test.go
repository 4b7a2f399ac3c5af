package payments_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListTransactionsAtScale measures the transactions list's first
// page (20 transactions) with its exact total as a tenant's transactions
// grow: unfiltered, by status and by provider, on each engine. It is a
// measurement, not a test, and runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the transaction counts to measure at (for example
// "100000,1000000"); they are inserted straight into the table
// (storetest.SeedRows: multi-row INSERTs, 1,000 per transaction) over two
// providers (75% captured, 15% pending, 10% failed), the kept counts
// recounted as migration 0002 counts them; storetest.GrowAndMeasure says
// how the table grows and what is timed. The last case is the baseline:
// the unfiltered total counted as before the kept counts (20 calls at
// most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./payments -run TestListTransactionsAtScale -v -timeout 2h
func TestListTransactionsAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListTransactions(t, db, engine, sizes, calls) },
		payments.Migrations)
}

// TestListTransactionsStayFlat runs TestListTransactionsAtScale's cases
// at two sizes and fails when one reads more rows as the table grows
// (storetest.FlatLists).
func TestListTransactionsStayFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListTransactions, payments.Migrations)
}

func scaleListTransactions(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := payments.NewSQLStore()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	status := func(i int) payments.Status {
		switch i % 20 {
		case 0, 1, 2:
			return payments.StatusPending
		case 3, 4:
			return payments.StatusFailed
		}
		return payments.StatusCaptured
	}
	provider := func(i int) string { return []string{"mock", "stripe"}[i%2] }
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "payment_transactions", `id, tenant_id, payment_id, provider_key, session_id, status,
			gateway_status, amount, captured_amount, refunded_amount, currency_code, capture_method, description, metadata,
			redirect_url, created_at, updated_at`, from, to, func(i int) []any {
			at := base.Add(time.Duration(i) * time.Millisecond)
			s := status(i)
			captured := 0
			if s == payments.StatusCaptured {
				captured = 1250
			}
			return []any{store.NewIDAt(at), tenant, fmt.Sprint("order-", i), provider(i), fmt.Sprint("cs_", i), string(s),
				string(s), 1250, captured, 0, "EUR", "automatic", "Order", "{}", "", at, at}
		})
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM payment_transaction_counts WHERE tenant_id = $1`, tenant); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO payment_transaction_counts (tenant_id, organization_id, status, provider_key, slot, n)
				SELECT tenant_id, COALESCE(organization_id, ''), status, provider_key, 0, count(*) FROM payment_transactions
				WHERE tenant_id = $1 GROUP BY tenant_id, COALESCE(organization_id, ''), status, provider_key`, tenant)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
	}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		sc := store.Scope{TenantID: tenant}
		failed := 0
		for i := range rows {
			if status(i) == payments.StatusFailed {
				failed++
			}
		}
		list := func(name string, f payments.Filter, want int) storetest.ScaleCase {
			f.Limit = 20
			return storetest.ScaleCase{Name: name, List: func() error {
				items, total, err := st.ListTransactions(ctx, db, sc, f)
				if err != nil {
					return err
				}
				return storetest.CheckPage(name, len(items), total, 20, want)
			}}
		}
		return []storetest.ScaleCase{
			list("unfiltered", payments.Filter{}, rows),
			list("status", payments.Filter{Status: payments.StatusFailed}, failed),
			list("providerKey", payments.Filter{ProviderKey: "stripe"}, rows/2),
			{Name: "unfiltered total by count(*), as before 0002", Calls: 20, Grows: "the baseline: every row counted", List: func() error {
				var n int
				err := db.QueryRow(ctx, `SELECT count(*) FROM payment_transactions WHERE tenant_id = $1`, tenant).Scan(&n)
				if err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", 0, n, 0, rows)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "payment transactions", engine, sizes, calls, seed, cases)
}

// TestSummaryAtScale measures Service.Summary's read (Store.Summarize:
// what the dashboard widget "payment_gateways.summary" shows) as a
// tenant's transactions grow, on each engine. Like
// TestListTransactionsAtScale it runs only when TENANTKIT_BENCH_LIST_ROWS
// lists the transaction counts to measure at, and storetest.GrowAndMeasure
// grows the table and times the cases; the transactions are inserted
// straight into the table (the kept summary counts written by migration
// 0003's trigger, as on every insert), one every 30 hours / the largest
// size, back from now: the largest size spreads over the last 30 hours,
// so the widget's window holds about 80% of it, and the smaller over the
// last hours, all in the window (the table grows within the window, as
// in a soak: 100,000 against 800,000 in the window). The cases, each
// checked against the seeded transactions (their number and captured
// sum) on every call: the widget's window (from the start of the hour 24
// hours ago: kept counts alone); exactly the last 24 hours (the first,
// partial hour counted from the tenant's index); and the statement of
// before the counts (every transaction of the window read; 20 calls at
// most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./payments -run TestSummaryAtScale -v -timeout 2h
func TestSummaryAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleSummary(t, db, engine, sizes, calls) },
		payments.Migrations)
}

func scaleSummary(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := payments.NewSQLStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const span = 30 * time.Hour
	step := span / time.Duration(sizes[len(sizes)-1])
	at := func(i int) time.Time { return now.Add(-time.Duration(i) * step) } // the newest first
	status := func(i int) payments.Status {
		switch i % 20 {
		case 0, 1, 2:
			return payments.StatusPending
		case 3, 4:
			return payments.StatusFailed
		}
		return payments.StatusCaptured
	}
	seed := func(tenant string, from, to int) {
		storetest.SeedRows(t, db, "payment_transactions", `id, tenant_id, payment_id, provider_key, session_id, status,
			gateway_status, amount, captured_amount, refunded_amount, currency_code, capture_method, description, metadata,
			redirect_url, created_at, updated_at`, from, to, func(i int) []any {
			s := status(i)
			captured := 0
			if s == payments.StatusCaptured {
				captured = 1250
			}
			return []any{store.NewIDAt(at(i)), tenant, fmt.Sprint("order-", i), "mock", fmt.Sprint("cs_", i), string(s),
				string(s), 1250, captured, 0, []string{"EUR", "USD"}[i%2], "automatic", "Order", "{}", "", at(i), at(i)}
		})
		storetest.Analyze(t, db)
	}
	widget := now.Add(-24 * time.Hour).Truncate(time.Hour)
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		sc := store.Scope{TenantID: tenant}
		want := func(since time.Time) (n int, captured int64) {
			for i := range rows {
				if !at(i).Before(since) {
					n++
					if status(i) == payments.StatusCaptured {
						captured += 1250
					}
				}
			}
			return n, captured
		}
		// The expected figures, counted before the timed calls.
		figures := map[time.Time][2]int64{}
		for _, since := range []time.Time{widget, now.Add(-24 * time.Hour)} {
			n, captured := want(since)
			figures[since] = [2]int64{int64(n), captured}
		}
		check := func(name string, since time.Time, groups []payments.SummaryGroup) error {
			n, captured := int(figures[since][0]), figures[since][1]
			var gotN int
			var gotCaptured int64
			for _, g := range groups {
				gotN, gotCaptured = gotN+g.Count, gotCaptured+g.Captured
			}
			if gotN != n || gotCaptured != captured {
				return fmt.Errorf("%s: %d transactions, %d captured; want %d, %d", name, gotN, gotCaptured, n, captured)
			}
			return nil
		}
		summarize := func(name string, since time.Time) storetest.ScaleCase {
			return storetest.ScaleCase{Name: name, List: func() error {
				groups, err := st.Summarize(ctx, db, sc, since)
				if err != nil {
					return err
				}
				return check(name, since, groups)
			}}
		}
		return []storetest.ScaleCase{
			summarize("widget window", widget),
			summarize("exactly 24 hours", now.Add(-24*time.Hour)),
			{Name: "widget window, the statement before 0003", Calls: 20, List: func() error {
				groups, err := store.Many(ctx, db, func(s store.Scanner) (payments.SummaryGroup, error) {
					var g payments.SummaryGroup
					return g, s.Scan(&g.Currency, &g.Status, &g.Count, &g.Captured)
				}, `SELECT currency_code, status, COUNT(*), CAST(SUM(captured_amount) AS BIGINT) FROM payment_transactions
					WHERE tenant_id = $1 AND created_at >= $2 GROUP BY currency_code, status`, tenant, widget)
				if err != nil {
					return err
				}
				return check("before", widget, groups)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "payments summary", engine, sizes, calls, seed, cases)
}
