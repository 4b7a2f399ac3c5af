package payments_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/payments/paymentstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines, each in one
// database shared by the suite's subtests (they keep to tenants of their
// own).
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		paymentstest.Run(t, db, payments.NewSQLStore())
	}, payments.Migrations)
}

// Broken stores: the SQL store with one behaviour wrong each. Each must
// make the suite fail in the subtest named.

// tenantOf reads the tenant of a transaction, whichever it is.
func tenantOf(ctx context.Context, q store.Querier, id string) (string, error) {
	var tenant string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM payment_transactions WHERE id = $1`, id).Scan(&tenant)
	return tenant, err
}

// tenantBlind reads a transaction by id whatever its tenant.
type tenantBlind struct{ payments.Store }

func (s tenantBlind) GetTransaction(ctx context.Context, q store.Querier, sc store.Scope, id string) (*payments.Transaction, error) {
	tenant, err := tenantOf(ctx, q, id)
	if err != nil {
		return nil, err
	}
	sc.TenantID = tenant
	return s.Store.GetTransaction(ctx, q, sc, id)
}

// orgBlind reads as if the scope allowed every organization.
type orgBlind struct{ payments.Store }

func (s orgBlind) GetTransaction(ctx context.Context, q store.Querier, sc store.Scope, id string) (*payments.Transaction, error) {
	sc.OrganizationIDs = nil
	return s.Store.GetTransaction(ctx, q, sc, id)
}

func (s orgBlind) ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f payments.Filter) ([]*payments.Transaction, int, error) {
	sc.OrganizationIDs = nil
	return s.Store.ListTransactions(ctx, q, sc, f)
}

// lockAnyTenant locks a transaction whatever the tenant named.
type lockAnyTenant struct{ payments.Store }

func (s lockAnyTenant) LockTransaction(ctx context.Context, tx *store.Tx, _, id string) (*payments.Transaction, error) {
	tenant, err := tenantOf(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	return s.Store.LockTransaction(ctx, tx, tenant, id)
}

// findFirstTenant finds a session's transactions of the first tenant only.
type findFirstTenant struct{ payments.Store }

func (s findFirstTenant) FindBySession(ctx context.Context, q store.Querier, providerKey, sessionID string) ([]*payments.Transaction, error) {
	list, err := s.Store.FindBySession(ctx, q, providerKey, sessionID)
	return list[:min(len(list), 1)], err
}

// listOldestFirst lists transactions oldest first.
type listOldestFirst struct{ payments.Store }

func (s listOldestFirst) ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f payments.Filter) ([]*payments.Transaction, int, error) {
	items, total, err := s.Store.ListTransactions(ctx, q, sc, payments.Filter{Status: f.Status, ProviderKey: f.ProviderKey, Limit: 1000})
	slices.Reverse(items)
	items = items[min(f.Offset, len(items)):]
	return items[:min(f.Limit, len(items))], total, err
}

// pageTotal counts the page rather than every match.
type pageTotal struct{ payments.Store }

func (s pageTotal) ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f payments.Filter) ([]*payments.Transaction, int, error) {
	items, _, err := s.Store.ListTransactions(ctx, q, sc, f)
	return items, len(items), err
}

// ignoresProvider ignores the provider filter.
type ignoresProvider struct{ payments.Store }

func (s ignoresProvider) ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f payments.Filter) ([]*payments.Transaction, int, error) {
	f.ProviderKey = ""
	return s.Store.ListTransactions(ctx, q, sc, f)
}

// updateAnyTenant updates a transaction whatever the tenant named.
type updateAnyTenant struct{ payments.Store }

func (s updateAnyTenant) UpdateTransaction(ctx context.Context, q store.Querier, t *payments.Transaction) error {
	tenant, err := tenantOf(ctx, q, t.ID)
	if err != nil {
		return err
	}
	x := *t
	x.TenantID = tenant
	return s.Store.UpdateTransaction(ctx, q, &x)
}

// updateWritesDescription also writes the description.
type updateWritesDescription struct{ payments.Store }

func (s updateWritesDescription) UpdateTransaction(ctx context.Context, q store.Querier, t *payments.Transaction) error {
	if err := s.Store.UpdateTransaction(ctx, q, t); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `UPDATE payment_transactions SET description = $1 WHERE id = $2`, t.Description, t.ID)
	return err
}

// refundsNewestFirst lists refunds newest first.
type refundsNewestFirst struct{ payments.Store }

func (s refundsNewestFirst) ListRefunds(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*payments.Refund, error) {
	list, err := s.Store.ListRefunds(ctx, q, tenantID, transactionID)
	slices.Reverse(list)
	return list, err
}

// operationReplaced replaces a kept operation's answer.
type operationReplaced struct{ payments.Store }

func (s operationReplaced) InsertOperation(ctx context.Context, q store.Querier, op *payments.Operation) error {
	if _, err := q.Exec(ctx, `DELETE FROM payment_operations WHERE transaction_id = $1 AND operation_id = $2`,
		op.TransactionID, op.OperationID); err != nil {
		return err
	}
	return s.Store.InsertOperation(ctx, q, op)
}

// webhookAlwaysInserted reports every webhook inserted.
type webhookAlwaysInserted struct{ payments.Store }

func (s webhookAlwaysInserted) InsertWebhook(ctx context.Context, q store.Querier, w *payments.Webhook) (bool, error) {
	_, err := s.Store.InsertWebhook(ctx, q, w)
	return true, err
}

// webhookKeyAcrossTenants deduplicates idempotency keys across tenants.
type webhookKeyAcrossTenants struct{ payments.Store }

func (s webhookKeyAcrossTenants) InsertWebhook(ctx context.Context, q store.Querier, w *payments.Webhook) (bool, error) {
	var n int
	if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM payment_webhooks WHERE provider_key = $1 AND idempotency_key = $2`,
		w.ProviderKey, w.IdempotencyKey).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	return s.Store.InsertWebhook(ctx, q, w)
}

// webhooksNewestFirst lists webhooks newest first.
type webhooksNewestFirst struct{ payments.Store }

func (s webhooksNewestFirst) ListWebhooks(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*payments.Webhook, error) {
	list, err := s.Store.ListWebhooks(ctx, q, tenantID, transactionID)
	slices.Reverse(list)
	return list, err
}

// finishAnyTenant finishes a webhook whatever the tenant named.
type finishAnyTenant struct{ payments.Store }

func (s finishAnyTenant) FinishWebhook(ctx context.Context, q store.Querier, w *payments.Webhook) error {
	var tenant string
	if err := q.QueryRow(ctx, `SELECT tenant_id FROM payment_webhooks WHERE id = $1`, w.ID).Scan(&tenant); err != nil {
		return err
	}
	x := *w
	x.TenantID = tenant
	return s.Store.FinishWebhook(ctx, q, &x)
}

// brokenStores are the broken stores by name, with the subtest of
// paymentstest.Run that must fail against each.
var brokenStores = map[string]struct {
	wrap    func(payments.Store) payments.Store
	subtest string
}{
	"tenantBlind":             {func(s payments.Store) payments.Store { return tenantBlind{s} }, "TransactionTenantScoped"},
	"orgBlind":                {func(s payments.Store) payments.Store { return orgBlind{s} }, "OrganizationScoped"},
	"lockAnyTenant":           {func(s payments.Store) payments.Store { return lockAnyTenant{s} }, "LockTransaction"},
	"findFirstTenant":         {func(s payments.Store) payments.Store { return findFirstTenant{s} }, "FindBySession"},
	"listOldestFirst":         {func(s payments.Store) payments.Store { return listOldestFirst{s} }, "ListTransactions"},
	"pageTotal":               {func(s payments.Store) payments.Store { return pageTotal{s} }, "ListTransactions"},
	"ignoresProvider":         {func(s payments.Store) payments.Store { return ignoresProvider{s} }, "ListTransactions"},
	"updateAnyTenant":         {func(s payments.Store) payments.Store { return updateAnyTenant{s} }, "UpdateTransaction"},
	"updateWritesDescription": {func(s payments.Store) payments.Store { return updateWritesDescription{s} }, "UpdateTransaction"},
	"refundsNewestFirst":      {func(s payments.Store) payments.Store { return refundsNewestFirst{s} }, "Refunds"},
	"operationReplaced":       {func(s payments.Store) payments.Store { return operationReplaced{s} }, "Operations"},
	"webhookAlwaysInserted":   {func(s payments.Store) payments.Store { return webhookAlwaysInserted{s} }, "WebhookDedup"},
	"webhookKeyAcrossTenants": {func(s payments.Store) payments.Store { return webhookKeyAcrossTenants{s} }, "WebhookDedup"},
	"webhooksNewestFirst":     {func(s payments.Store) payments.Store { return webhooksNewestFirst{s} }, "Webhooks"},
	"finishAnyTenant":         {func(s payments.Store) payments.Store { return finishAnyTenant{s} }, "FinishWebhook"},
}

// TestBrokenStoreHelper runs the suite against the broken store
// storetest.Broken names, on SQLite, in the child process
// TestSuiteCatchesBrokenStores starts; otherwise it does nothing.
func TestBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenStores's child process")
	}
	broken, ok := brokenStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	paymentstest.Run(t, storetest.SQLite(t, payments.Migrations), broken.wrap(payments.NewSQLStore()))
}

// TestSuiteCatchesBrokenStores proves the suite bites: against each
// broken store it fails, in the subtest that checks the broken behaviour.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name, b := range brokenStores {
		subtests[name] = b.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStoreHelper", subtests)
}

// unlocked reads the payment in LockTransaction without locking it, and
// holds each caller after its read until racyReaders have read (or a
// second has passed), so that concurrent read-modify-write transactions
// read the same amount every run. SQLite's one writer serialises them
// anyway; only PostgreSQL shows it, hence a test of its own.
type unlocked struct {
	payments.Store
	gate *racyGate
}

const racyReaders = 3

type racyGate struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (g *racyGate) wait() {
	g.mu.Lock()
	g.arrived++
	if g.arrived == racyReaders {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(time.Second):
	}
}

func (s unlocked) LockTransaction(ctx context.Context, tx *store.Tx, tenantID, id string) (*payments.Transaction, error) {
	t, err := s.GetTransaction(ctx, tx, store.Scope{TenantID: tenantID}, id)
	if err == nil {
		s.gate.wait()
	}
	return t, err
}

// unlockedEnv marks the child process of
// TestSuiteCatchesUnlockedOnPostgres.
const unlockedEnv = "PAYMENTS_TEST_UNLOCKED"

// TestUnlockedHelper runs the suite on PostgreSQL against unlocked, in
// the child process TestSuiteCatchesUnlockedOnPostgres starts; otherwise
// it does nothing.
func TestUnlockedHelper(t *testing.T) {
	if os.Getenv(unlockedEnv) == "" {
		t.Skip("runs only in TestSuiteCatchesUnlockedOnPostgres's child process")
	}
	paymentstest.Run(t, storetest.Postgres(t, payments.Migrations),
		unlocked{payments.NewSQLStore(), &racyGate{all: make(chan struct{})}})
}

// TestSuiteCatchesUnlockedOnPostgres proves LockTransactionSerialises
// bites: on PostgreSQL it fails against a LockTransaction that does not
// lock.
func TestSuiteCatchesUnlockedOnPostgres(t *testing.T) {
	if os.Getenv(unlockedEnv) != "" {
		t.Skip("in the child process")
	}
	if os.Getenv(storetest.PostgresEnv) == "" {
		t.Skipf("set %s to run it", storetest.PostgresEnv)
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestUnlockedHelper$/^LockTransactionSerialises$",
		"-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), unlockedEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the suite passed against unlocked (err %v); output:\n%s", err, out)
	}
	if want := "--- FAIL: TestUnlockedHelper/LockTransactionSerialises "; !strings.Contains(string(out), want) {
		t.Errorf("the suite failed, but not in LockTransactionSerialises; output:\n%s", out)
	}
}
