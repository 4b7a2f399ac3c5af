package payments_test

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// SQLStore.InsertTransactions (the Service's shared transaction of
// sessions) writes each transaction as InsertTransaction does: the rows,
// the list's counts and the summary counts, exact, in every organization
// and status. On PostgreSQL the summary count of one key is written once
// for the whole statement: 0003's row trigger updated it in place for
// every row (49 dead row versions for 50 transactions of one key, which
// reads step over until a vacuum).
func TestInsertTransactionsCounted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := payments.NewSQLStore()
		now := db.Now()
		var ts []*payments.Transaction
		for i := range 50 {
			p := &payments.Transaction{ID: store.NewID(), TenantID: sc.TenantID, PaymentID: store.NewID(), ProviderKey: "mock",
				SessionID: store.NewID(), Status: payments.StatusCaptured, Amount: 100, CapturedAmount: 100, Currency: "EUR",
				CaptureMethod: "automatic", Metadata: map[string]any{"i": i}, CreatedAt: now, UpdatedAt: now}
			switch i % 10 {
			case 0:
				p.Status, p.CapturedAmount = payments.StatusPending, 0
			case 1:
				p.OrganizationID = "o1"
			}
			ts = append(ts, p)
		}
		var writes int64
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := st.InsertTransactions(ctx, tx, ts); err != nil {
				return err
			}
			if tx.Dialect().Name() != "postgres" {
				return nil
			}
			// This transaction's writes of the summary counts so far.
			return tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_inserted('payment_summary_hours'::regclass)
				+ pg_stat_get_xact_tuples_updated('payment_summary_hours'::regclass)`).Scan(&writes)
		}); err != nil {
			t.Fatal(err)
		}
		// Three keys: captured of no organization, pending, captured of o1.
		if db.Dialect().Name() == "postgres" && writes > 3 {
			t.Errorf("the summary counts were written %d times for 3 keys", writes)
		}
		all := sc
		all.OrganizationIDs = []string{"o1"}
		_, total, err := st.ListTransactions(ctx, db, all, payments.Filter{Limit: 1})
		if err != nil || total != 50 {
			t.Fatalf("list total %d, %v; want 50", total, err)
		}
		_, pending, err := st.ListTransactions(ctx, db, all, payments.Filter{Status: payments.StatusPending, Limit: 1})
		if err != nil || pending != 5 {
			t.Fatalf("pending total %d, %v; want 5", pending, err)
		}
		groups, err := st.Summarize(ctx, db, all, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var captured int64
		for _, g := range groups {
			n, captured = n+g.Count, captured+g.Captured
		}
		if n != 50 || captured != 45*100 {
			t.Errorf("summary: %d transactions, %d captured; want 50, 4500", n, captured)
		}
		got, err := st.GetTransaction(ctx, db, all, ts[1].ID)
		if err != nil || got.OrganizationID != "o1" || got.Metadata["i"] != float64(1) || !got.UpdatedAt.Equal(ts[1].UpdatedAt) {
			t.Fatalf("read back %+v, %v", got, err)
		}
	}, payments.Migrations)
}
