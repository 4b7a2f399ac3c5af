package webhookstest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
	"github.com/tenantkit/tenantkit/webhooks/webhookstest"
)

// The SQL store passes the suite on both engines.
func TestSQLStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		webhookstest.Run(t, func(*testing.T) (*store.DB, webhooks.Store) { return db, webhooks.NewSQLStore() })
	}, webhooks.Migrations)
}

// Deliberately broken stores: the SQL store with one method wrong each.

// orgBlind reads a webhook by tenant alone, ignoring the organizations
// the scope may read.
type orgBlind struct{ *webhooks.SQLStore }

func (s orgBlind) GetWebhook(ctx context.Context, q store.Querier, sc store.Scope, id string) (*webhooks.Webhook, error) {
	sc.OrganizationIDs = nil
	return s.SQLStore.GetWebhook(ctx, q, sc, id)
}

// oldestFirst lists webhooks in the wrong order.
type oldestFirst struct{ *webhooks.SQLStore }

func (s oldestFirst) ListWebhooks(ctx context.Context, q store.Querier, sc store.Scope, f webhooks.Filter) ([]*webhooks.Webhook, int, error) {
	items, total, err := s.SQLStore.ListWebhooks(ctx, q, sc, f)
	slices.Reverse(items)
	return items, total, err
}

// lostUnclaim never puts an unsent delivery back to pending: it stays
// sending.
type lostUnclaim struct{ *webhooks.SQLStore }

func (lostUnclaim) UnclaimDelivery(context.Context, store.Querier, *webhooks.Delivery, time.Time) error {
	return nil
}

// healthAllTime counts every delivery, whenever it was made.
type healthAllTime struct{ *webhooks.SQLStore }

func (s healthAllTime) DeliveryHealth(ctx context.Context, q store.Querier, sc store.Scope, _ time.Time) ([]webhooks.DeliveryHealth, error) {
	return s.SQLStore.DeliveryHealth(ctx, q, sc, time.Time{})
}

// healthOrgBlind reports every organization's webhooks.
type healthOrgBlind struct{ *webhooks.SQLStore }

func (s healthOrgBlind) DeliveryHealth(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]webhooks.DeliveryHealth, error) {
	sc.OrganizationIDs = nil
	return s.SQLStore.DeliveryHealth(ctx, q, sc, since)
}

// foldLosesCounts folds the kept delivery counts by dropping them.
type foldLosesCounts struct{ *webhooks.SQLStore }

func (foldLosesCounts) FoldDeliveryCounts(ctx context.Context, q store.Querier, _ int) (int64, error) {
	return q.Exec(ctx, `DELETE FROM webhook_delivery_counts`)
}

// brokenStores maps each broken store to the subtest that must catch it.
var brokenStores = map[string]struct {
	store   webhooks.Store
	subtest string
}{
	"orgBlind":       {orgBlind{webhooks.NewSQLStore()}, "OrganizationScope"},
	"oldestFirst":    {oldestFirst{webhooks.NewSQLStore()}, "ListOrderPagingFilters"},
	"lostUnclaim":    {lostUnclaim{webhooks.NewSQLStore()}, "ClaimOrderAndStates"},
	"healthAllTime":  {healthAllTime{webhooks.NewSQLStore()}, "DeliveryHealth"},
	"healthOrgBlind": {healthOrgBlind{webhooks.NewSQLStore()}, "DeliveryHealth"},
	"foldLoses":      {foldLosesCounts{webhooks.NewSQLStore()}, "DeliveryTotals"},
}

// TestBrokenStoreHelper runs the suite against the broken store
// storetest.Broken names (on SQLite); TestSuiteCatchesBrokenStores runs it
// in a child process and expects it to fail. Without one it is skipped.
func TestBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	b, ok := brokenStores[name]
	if !ok {
		t.Fatalf("no broken store %q", name)
	}
	db := storetest.SQLite(t, webhooks.Migrations)
	webhookstest.Run(t, func(*testing.T) (*store.DB, webhooks.Store) { return db, b.store })
}

// The suite bites: each broken store fails it, in the subtest meant to
// catch it.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	catches := map[string]string{}
	for name, b := range brokenStores {
		catches[name] = b.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStoreHelper", catches)
}
