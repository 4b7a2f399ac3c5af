package payments_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The list's totals come from kept counts that follow inserts and status
// changes (an update that keeps the status moves nothing; one after
// LockTransaction in the same transaction, or with a stale copy), per status,
// provider and organization, as counting the transactions would.
func TestTransactionCountsFollowWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := payments.NewSQLStore()
		var txs []*payments.Transaction
		for i := range 6 {
			p := &payments.Transaction{ID: store.NewID(), TenantID: sc.TenantID, PaymentID: store.NewID(), ProviderKey: "mock",
				SessionID: store.NewID(), Status: payments.StatusPending, Amount: 100, Currency: "EUR", CaptureMethod: "automatic",
				CreatedAt: db.Now(), UpdatedAt: db.Now()}
			if i%2 == 1 {
				p.ProviderKey = "stripe"
			}
			if i == 5 {
				p.OrganizationID = "o1"
			}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertTransaction(ctx, tx, p) }); err != nil {
				t.Fatal(err)
			}
			txs = append(txs, p)
		}
		update := func(p *payments.Transaction, s payments.Status) {
			t.Helper()
			p.Status, p.GatewayStatus = s, string(s)
			if err := db.Tx(ctx, func(tx *store.Tx) error { return st.UpdateTransaction(ctx, tx, p) }); err != nil {
				t.Fatal(err)
			}
		}
		update(txs[0], payments.StatusCaptured)
		update(txs[0], payments.StatusCaptured)
		update(txs[1], payments.StatusFailed)
		update(txs[5], payments.StatusCaptured)
		update(txs[2], payments.StatusPending)
		// Locked and updated twice in one transaction (as the Service
		// does: the second update moves it from the first's status).
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			p, err := st.LockTransaction(ctx, tx, sc.TenantID, txs[4].ID)
			if err != nil {
				return err
			}
			for _, s := range []payments.Status{payments.StatusAuthorized, payments.StatusCaptured} {
				p.Status = s
				if err := st.UpdateTransaction(ctx, tx, p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// A stale copy (read before that transaction) updated later: the
		// stored status is read again.
		update(txs[4], payments.StatusFailed)
		for _, c := range []struct {
			scope store.Scope
			f     payments.Filter
			want  int
		}{
			{sc, payments.Filter{}, 6},
			{sc, payments.Filter{Status: payments.StatusCaptured}, 2},
			{sc, payments.Filter{Status: payments.StatusFailed}, 2},
			{sc, payments.Filter{Status: payments.StatusAuthorized}, 0},
			{sc, payments.Filter{Status: payments.StatusPending}, 2},
			{sc, payments.Filter{ProviderKey: "stripe"}, 3},
			{sc, payments.Filter{ProviderKey: "stripe", Status: payments.StatusPending}, 1},
			{sc, payments.Filter{ProviderKey: "mock", Status: payments.StatusFailed}, 1},
			{store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{}}, payments.Filter{Status: payments.StatusCaptured}, 1},
			{store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{"o1"}}, payments.Filter{}, 6},
			{store.Scope{TenantID: sc.TenantID, OrganizationIDs: []string{"o2"}}, payments.Filter{}, 5},
		} {
			c.f.Limit = 10
			items, total, err := st.ListTransactions(ctx, db, c.scope, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if total != c.want || len(items) != c.want {
				t.Errorf("%+v in %v: %d rows of %d, want %d", c.f, c.scope.OrganizationIDs, len(items), total, c.want)
			}
		}
	}, payments.Migrations)
}
