// Package paymentstest is the conformance suite for payments.Store
// implementations: Run checks every behaviour the payments Service relies
// on from its Store, as documented on payments.Store: transactions (round
// trip, a taken id, missing rows, tenant and organization scoping of every
// read, where the organization cases are store/storetest's OrgScopes grid),
// LockTransaction (returns the tenant's row, and holds it: concurrent
// read-modify-write transactions lose no update), FindBySession across
// tenants, ListTransactions (filters, newest first, paging with ties on
// the creation time, the total), Summarize (counts and captured sums by
// currency and status since a time, the bound included, scoped like the
// lists), what UpdateTransaction replaces and what it leaves, refunds
// (oldest first, with the transaction's currency), kept operations (keyed
// by transaction and operationId: a second insert is store.ErrConflict),
// webhooks (deduplicated per tenant, provider and idempotency key with
// inserted=false, FinishWebhook, ListWebhooks in the order received), and
// that every method runs on the Querier it is given.
// Every case works in two tenants, A and B, and checks that neither sees
// or changes the other's rows.
//
// The SQL store runs it on SQLite and PostgreSQL
// (payments/sqlstore_test.go); a host that plugs in its own Store runs it
// against that:
//
//	func TestMyStore(t *testing.T) {
//		paymentstest.Run(t, openMigratedDatabase(t), mystore.New())
//	}
//
// Subtests run in parallel on the one database, each in tenants of its
// own (fresh random ids). Writes go through a *store.Tx of the database,
// as the Service makes them.
package paymentstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Run runs the suite against s on db (migrated with payments.Migrations,
// or whatever s needs).
func Run(t *testing.T, db *store.DB, s payments.Store) {
	t.Helper()
	if db == nil || s == nil {
		t.Fatal("paymentstest.Run: nil database or Store")
	}
	for _, c := range []struct {
		name string
		test func(*testing.T, *fixture)
	}{
		{"TransactionRoundTrip", testTransactionRoundTrip},
		{"TransactionTenantScoped", testTransactionTenantScoped},
		{"OrganizationScoped", testOrganizationScoped},
		{"LockTransaction", testLockTransaction},
		{"LockTransactionSerialises", testLockTransactionSerialises},
		{"FindBySession", testFindBySession},
		{"ListTransactions", testListTransactions},
		{"ListTransactionsTies", testListTransactionsTies},
		{"UpdateTransaction", testUpdateTransaction},
		{"Summarize", testSummarize},
		{"Refunds", testRefunds},
		{"Operations", testOperations},
		{"Webhooks", testWebhooks},
		{"WebhookDedup", testWebhookDedup},
		{"FinishWebhook", testFinishWebhook},
		{"UsesTheQuerier", testUsesTheQuerier},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, &fixture{t: t, ctx: t.Context(), db: db, st: s, a: store.NewID(), b: store.NewID(),
				clock: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)})
		})
	}
}

// fixture is one subtest's store, database, two tenants and clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *store.DB
	st    payments.Store
	a, b  string // the subtest's two tenants
	mu    sync.Mutex
	clock time.Time
}

// tick returns a new timestamp, a second after the last (UTC,
// microseconds, as the Service's transactions give).
func (f *fixture) tick() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(time.Second + 123456*time.Microsecond)
	return f.clock
}

// tx runs fn in a write transaction of the database.
func (f *fixture) tx(fn func(tx *store.Tx) error) error { return f.db.Tx(f.ctx, fn) }

func (f *fixture) must(err error, what string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

// wantErr fails unless err wraps kind.
func (f *fixture) wantErr(err, kind error, what string) {
	f.t.Helper()
	if !errors.Is(err, kind) {
		f.t.Errorf("%s: error %v, want one wrapping %v", what, err, kind)
	}
}

func (f *fixture) equal(what string, got, want any) {
	f.t.Helper()
	if !reflect.DeepEqual(got, want) {
		f.t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// whole is the scope of every organization of tenant.
func whole(tenant string) store.Scope { return store.Scope{TenantID: tenant} }

// newTransaction is a pending transaction of tenant (in org, "" for none)
// at the provider's session, every field set, not yet stored.
func (f *fixture) newTransaction(tenant, org, provider, session string) *payments.Transaction {
	now := f.tick()
	return &payments.Transaction{ID: store.NewID(), TenantID: tenant, OrganizationID: org, PaymentID: store.NewID(),
		ProviderKey: provider, SessionID: session, Status: payments.StatusPending, GatewayStatus: "requires_payment_method",
		Amount: 12345, Currency: "USD", CaptureMethod: payments.CaptureManual, Description: "Order 42 — ünïcode",
		Metadata:     map[string]any{"order": "A-42", "n": float64(2), "nested": map[string]any{"ok": true}},
		RedirectURL:  "https://pay.example/" + session,
		ProviderData: map[string]any{"clientSecretHint": "cs_" + session, "attempts": float64(1)},
		CreatedAt:    now, UpdatedAt: now}
}

func (f *fixture) insert(t *payments.Transaction) error {
	return f.tx(func(tx *store.Tx) error { return f.st.InsertTransaction(f.ctx, tx, t) })
}

// transaction stores a transaction of tenant (after edit, if any).
func (f *fixture) transaction(tenant, org string, edit func(*payments.Transaction)) *payments.Transaction {
	f.t.Helper()
	t := f.newTransaction(tenant, org, payments.KeyMock, "sess_"+store.NewID())
	if edit != nil {
		edit(t)
	}
	f.must(f.insert(t), "InsertTransaction")
	return t
}

// get reads a transaction in sc, failing the test on an error.
func (f *fixture) get(sc store.Scope, id string) *payments.Transaction {
	f.t.Helper()
	t, err := f.st.GetTransaction(f.ctx, f.db, sc, id)
	f.must(err, "GetTransaction")
	return t
}

// list returns a page of transactions in sc, failing the test on an
// error.
func (f *fixture) list(sc store.Scope, fl payments.Filter) ([]*payments.Transaction, int) {
	f.t.Helper()
	items, total, err := f.st.ListTransactions(f.ctx, f.db, sc, fl)
	f.must(err, fmt.Sprintf("ListTransactions %+v", fl))
	return items, total
}

func ids[T any](list []T, id func(T) string) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = id(x)
	}
	return out
}

func txIDs(list []*payments.Transaction) []string {
	return ids(list, func(t *payments.Transaction) string { return t.ID })
}

func webhookIDs(list []*payments.Webhook) []string {
	return ids(list, func(w *payments.Webhook) string { return w.ID })
}

func refundIDs(list []*payments.Refund) []string {
	return ids(list, func(r *payments.Refund) string { return r.ID })
}

// sameJSON reports whether two JSON-able values are equal as JSON (a
// nil map and an empty one are alike).
func sameJSON(got, want any) bool {
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return err.Error()
		}
		var out any
		_ = json.Unmarshal(b, &out)
		if m, ok := out.(map[string]any); ok && len(m) == 0 {
			return nil
		}
		return out
	}
	return reflect.DeepEqual(norm(got), norm(want))
}

// sameTransaction reports how got differs from want, or "".
func sameTransaction(got, want *payments.Transaction) string {
	if got == nil {
		return "nil"
	}
	var diffs []string
	diff := func(field string, g, w any) { diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", field, g, w)) }
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"ID", got.ID, want.ID}, {"TenantID", got.TenantID, want.TenantID},
		{"OrganizationID", got.OrganizationID, want.OrganizationID}, {"PaymentID", got.PaymentID, want.PaymentID},
		{"ProviderKey", got.ProviderKey, want.ProviderKey}, {"SessionID", got.SessionID, want.SessionID},
		{"Status", got.Status, want.Status}, {"GatewayStatus", got.GatewayStatus, want.GatewayStatus},
		{"Amount", got.Amount, want.Amount}, {"CapturedAmount", got.CapturedAmount, want.CapturedAmount},
		{"RefundedAmount", got.RefundedAmount, want.RefundedAmount}, {"Currency", got.Currency, want.Currency},
		{"CaptureMethod", got.CaptureMethod, want.CaptureMethod}, {"Description", got.Description, want.Description},
		{"RedirectURL", got.RedirectURL, want.RedirectURL},
	} {
		if c.got != c.want {
			diff(c.field, c.got, c.want)
		}
	}
	if !sameJSON(got.Metadata, want.Metadata) {
		diff("Metadata", got.Metadata, want.Metadata)
	}
	if !sameJSON(got.ProviderData, want.ProviderData) {
		diff("ProviderData", got.ProviderData, want.ProviderData)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		diff("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		diff("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	}
	return strings.Join(diffs, "; ")
}

func (f *fixture) sameTransaction(what string, got, want *payments.Transaction) {
	f.t.Helper()
	if d := sameTransaction(got, want); d != "" {
		f.t.Errorf("%s: %s", what, d)
	}
}

// ---- Transactions

func testTransactionRoundTrip(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, store.NewID(), nil)
	tb := f.transaction(f.b, "", func(x *payments.Transaction) {
		// No organization, no provider data, other amounts and a
		// currency of no decimals.
		x.ProviderData, x.Currency, x.Amount, x.CapturedAmount, x.RefundedAmount = nil, "JPY", 5000, 5000, 1200
		x.Status, x.CaptureMethod, x.Metadata = payments.StatusPartiallyRefunded, payments.CaptureAutomatic, map[string]any{}
	})
	f.sameTransaction("GetTransaction of A's", f.get(whole(f.a), ta.ID), ta)
	f.sameTransaction("GetTransaction of B's", f.get(whole(f.b), tb.ID), tb)
	f.sameTransaction("GetTransaction in A's active organization", f.get(store.Scope{TenantID: f.a,
		OrganizationID: ta.OrganizationID, OrganizationIDs: []string{ta.OrganizationID}}, ta.ID), ta)

	_, err := f.st.GetTransaction(f.ctx, f.db, whole(f.a), store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetTransaction of a missing id")

	// An amount near the limit (10^15 minor units) is kept exactly.
	big := f.transaction(f.a, "", func(x *payments.Transaction) { x.Amount, x.CapturedAmount = 1_000_000_000_000_000, 999_999_999_999_999 })
	f.sameTransaction("GetTransaction of 10^15 minor units", f.get(whole(f.a), big.ID), big)

	// A taken id is a conflict, and changes nothing.
	again := f.newTransaction(f.a, "", payments.KeyMock, "sess_other")
	again.ID = ta.ID
	f.wantErr(f.insert(again), store.ErrConflict, "InsertTransaction of a taken id")
	f.sameTransaction("A's after the conflicting insert", f.get(whole(f.a), ta.ID), ta)
}

func testTransactionTenantScoped(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	_, err := f.st.GetTransaction(f.ctx, f.db, whole(f.b), ta.ID)
	f.wantErr(err, store.ErrNotFound, "GetTransaction of A's in B")
	_, err = f.st.GetTransaction(f.ctx, f.db, whole(f.a), tb.ID)
	f.wantErr(err, store.ErrNotFound, "GetTransaction of B's in A")
	items, total := f.list(whole(f.a), payments.Filter{Limit: 10})
	f.equal("ListTransactions of A", txIDs(items), []string{ta.ID})
	f.equal("ListTransactions of A, total", total, 1)
	items, total = f.list(whole(f.b), payments.Filter{Limit: 10})
	f.equal("ListTransactions of B", txIDs(items), []string{tb.ID})
	f.equal("ListTransactions of B, total", total, 1)
	items, total = f.list(whole(store.NewID()), payments.Filter{Limit: 10})
	f.equal("ListTransactions of a third tenant", len(items)+total, 0)
}

func testOrganizationScoped(t *testing.T, f *fixture) {
	o1, o2 := store.NewID(), store.NewID()
	tenantWide := f.transaction(f.a, "", nil)
	ofO1 := f.transaction(f.a, o1, nil)
	// B's transaction in an organization of the same id sees nothing of A.
	f.transaction(f.b, o1, nil)

	grid := storetest.NewOrgScopes(f.a, o1, o2)
	check := func(see bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, err := store.ScopeFrom(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.st.GetTransaction(ctx, f.db, sc, ofO1.ID)
			if see {
				if d := sameTransaction(got, ofO1); err != nil || d != "" {
					t.Errorf("GetTransaction of o1's: %v %s", err, d)
				}
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetTransaction of o1's: %v, want ErrNotFound", err)
			}
			if _, err := f.st.GetTransaction(ctx, f.db, sc, tenantWide.ID); err != nil {
				t.Errorf("the tenant's transaction (no organization) is hidden: %v", err)
			}
			want := []string{tenantWide.ID}
			if see {
				want = []string{ofO1.ID, tenantWide.ID}
			}
			items, total, err := f.st.ListTransactions(ctx, f.db, sc, payments.Filter{Limit: 10})
			if err != nil {
				t.Fatalf("ListTransactions: %v", err)
			}
			if got := txIDs(items); !slices.Equal(got, want) || total != len(want) {
				t.Errorf("ListTransactions: %v (total %d), want %v", got, total, want)
			}
			items, total, err = f.st.ListTransactions(ctx, f.db, sc, payments.Filter{Status: payments.StatusPending, Limit: 1})
			if err != nil {
				t.Fatalf("ListTransactions, filtered and paged: %v", err)
			}
			if len(items) != 1 || total != len(want) {
				t.Errorf("ListTransactions, filtered and paged: %d items (total %d), want 1 (total %d)", len(items), total, len(want))
			}
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))
}

func testLockTransaction(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, store.NewID(), nil)
	tb := f.transaction(f.b, "", nil)
	f.must(f.tx(func(tx *store.Tx) error {
		got, err := f.st.LockTransaction(f.ctx, tx, f.a, ta.ID)
		if err != nil {
			return fmt.Errorf("LockTransaction of A's: %w", err)
		}
		f.sameTransaction("LockTransaction of A's", got, ta)
		got, err = f.st.LockTransaction(f.ctx, tx, f.b, tb.ID)
		if err != nil {
			return fmt.Errorf("LockTransaction of B's: %w", err)
		}
		f.sameTransaction("LockTransaction of B's", got, tb)
		return nil
	}), "the locking transaction")
	for _, c := range []struct{ what, tenant, id string }{
		{"A's transaction as B", f.b, ta.ID},
		{"B's transaction as A", f.a, tb.ID},
		{"a missing id", f.a, store.NewID()},
	} {
		err := f.tx(func(tx *store.Tx) error {
			_, err := f.st.LockTransaction(f.ctx, tx, c.tenant, c.id)
			return err
		})
		f.wantErr(err, store.ErrNotFound, "LockTransaction of "+c.what)
	}
	// What a transaction changes after the lock, the next lock reads.
	f.must(f.tx(func(tx *store.Tx) error {
		got, err := f.st.LockTransaction(f.ctx, tx, f.a, ta.ID)
		if err != nil {
			return err
		}
		got.Status, got.CapturedAmount, got.UpdatedAt = payments.StatusPartiallyCaptured, 100, f.tick()
		return f.st.UpdateTransaction(f.ctx, tx, got)
	}), "lock and update")
	f.must(f.tx(func(tx *store.Tx) error {
		got, err := f.st.LockTransaction(f.ctx, tx, f.a, ta.ID)
		if err != nil {
			return err
		}
		if got.Status != payments.StatusPartiallyCaptured || got.CapturedAmount != 100 {
			t.Errorf("LockTransaction after an update: %s %d", got.Status, got.CapturedAmount)
		}
		return nil
	}), "the second lock")
}

// Concurrent transactions that each lock a payment, add one to its
// captured amount and store it lose no update: the lock holds the row
// until the transaction ends. (On PostgreSQL without SELECT … FOR UPDATE
// two of them read the same amount.)
func testLockTransactionSerialises(t *testing.T, f *fixture) {
	const workers, rounds = 6, 5
	ta := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant, id := f.a, ta.ID
			if w%3 == 2 {
				tenant, id = f.b, tb.ID
			}
			for range rounds {
				errs <- f.tx(func(tx *store.Tx) error {
					got, err := f.st.LockTransaction(f.ctx, tx, tenant, id)
					if err != nil {
						return err
					}
					got.CapturedAmount++
					got.UpdatedAt = f.tick()
					return f.st.UpdateTransaction(f.ctx, tx, got)
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a locked increment: %v", err)
		}
	}
	f.equal("A's captured amount after the locked increments", f.get(whole(f.a), ta.ID).CapturedAmount, int64(workers/3*2*rounds))
	f.equal("B's captured amount after the locked increments", f.get(whole(f.b), tb.ID).CapturedAmount, int64(workers/3*rounds))
}

func testFindBySession(t *testing.T, f *fixture) {
	session := "sess_" + store.NewID()
	ta := f.transaction(f.a, store.NewID(), func(x *payments.Transaction) { x.SessionID = session })
	tb := f.transaction(f.b, "", func(x *payments.Transaction) { x.SessionID = session })
	// The same session id at another provider, and another session.
	f.transaction(f.a, "", func(x *payments.Transaction) { x.SessionID, x.ProviderKey = session, "stripe" })
	f.transaction(f.a, "", nil)

	got, err := f.st.FindBySession(f.ctx, f.db, payments.KeyMock, session)
	f.must(err, "FindBySession")
	sort.Slice(got, func(i, j int) bool { return got[i].TenantID == f.a && got[j].TenantID != f.a })
	if len(got) != 2 {
		t.Fatalf("FindBySession: %v, want A's and B's", txIDs(got))
	}
	f.sameTransaction("FindBySession, A's", got[0], ta)
	f.sameTransaction("FindBySession, B's", got[1], tb)

	got, err = f.st.FindBySession(f.ctx, f.db, "stripe", session)
	f.must(err, "FindBySession at stripe")
	if len(got) != 1 || got[0].ProviderKey != "stripe" || got[0].TenantID != f.a {
		t.Errorf("FindBySession at stripe: %v", txIDs(got))
	}
	got, err = f.st.FindBySession(f.ctx, f.db, payments.KeyMock, "sess_"+store.NewID())
	f.must(err, "FindBySession of an unknown session")
	f.equal("FindBySession of an unknown session", len(got), 0)
}

func testListTransactions(t *testing.T, f *fixture) {
	type spec struct {
		status   payments.Status
		provider string
	}
	specs := []spec{
		{payments.StatusPending, payments.KeyMock}, {payments.StatusCaptured, payments.KeyMock},
		{payments.StatusCaptured, "stripe"}, {payments.StatusRefunded, payments.KeyMock},
		{payments.StatusCaptured, payments.KeyMock}, {payments.StatusPending, "stripe"},
		{payments.StatusCaptured, "stripe"},
	}
	// A's transactions, created a second apart; stored in another order.
	var all []*payments.Transaction
	for _, s := range specs {
		x := f.newTransaction(f.a, "", s.provider, "sess_"+store.NewID())
		x.Status = s.status
		all = append(all, x)
	}
	for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
		f.must(f.insert(all[i]), "InsertTransaction")
	}
	// B's, of the same statuses and providers, newer than all of A's.
	for _, s := range specs {
		f.transaction(f.b, "", func(x *payments.Transaction) { x.Status, x.ProviderKey = s.status, s.provider })
	}
	newestFirst := func(match func(spec) bool) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- {
			if match(specs[i]) {
				out = append(out, all[i].ID)
			}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		filter payments.Filter
		match  func(spec) bool
	}{
		{"everything", payments.Filter{}, func(spec) bool { return true }},
		{"captured", payments.Filter{Status: payments.StatusCaptured}, func(s spec) bool { return s.status == payments.StatusCaptured }},
		{"stripe", payments.Filter{ProviderKey: "stripe"}, func(s spec) bool { return s.provider == "stripe" }},
		{"captured at mock", payments.Filter{Status: payments.StatusCaptured, ProviderKey: payments.KeyMock},
			func(s spec) bool { return s.status == payments.StatusCaptured && s.provider == payments.KeyMock }},
		{"expired", payments.Filter{Status: payments.StatusExpired}, func(s spec) bool { return s.status == payments.StatusExpired }},
		{"another provider", payments.Filter{ProviderKey: "adyen"}, func(spec) bool { return false }},
	} {
		want := newestFirst(c.match)
		fl := c.filter
		fl.Limit = 100
		items, total := f.list(whole(f.a), fl)
		f.equal("ListTransactions "+c.name+", newest first", txIDs(items), orEmpty(want))
		f.equal("ListTransactions "+c.name+", total", total, len(want))
		// Pages of two add up to the whole list, each with the total.
		var paged []string
		for offset := 0; offset < len(want)+2; offset += 2 {
			fl.Limit, fl.Offset = 2, offset
			items, total := f.list(whole(f.a), fl)
			if len(items) > 2 {
				t.Errorf("ListTransactions %s, page at %d: %d items, limit 2", c.name, offset, len(items))
			}
			f.equal(fmt.Sprintf("ListTransactions %s, total of the page at %d", c.name, offset), total, len(want))
			paged = append(paged, txIDs(items)...)
		}
		f.equal("ListTransactions "+c.name+", pages of two", orEmpty(paged), orEmpty(want))
	}
	// Each item is the whole transaction.
	items, _ := f.list(whole(f.a), payments.Filter{Limit: 1})
	if len(items) == 1 {
		f.sameTransaction("the newest listed transaction", items[0], all[len(all)-1])
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Transactions created at the same instant page in one stable order:
// every one on exactly one page.
func testListTransactionsTies(t *testing.T, f *fixture) {
	at := f.tick()
	older := f.transaction(f.a, "", nil)
	want := map[string]bool{}
	for _, tenant := range []string{f.a, f.b, f.a, f.a, f.b, f.a, f.a} {
		x := f.transaction(tenant, "", func(x *payments.Transaction) { x.CreatedAt, x.UpdatedAt = at.Add(time.Hour), at })
		if tenant == f.a {
			want[x.ID] = true
		}
	}
	var paged []string
	for offset := 0; offset < 8; offset += 2 {
		items, total := f.list(whole(f.a), payments.Filter{Limit: 2, Offset: offset})
		f.equal(fmt.Sprintf("total of the page at %d", offset), total, len(want)+1)
		paged = append(paged, txIDs(items)...)
	}
	if len(paged) != len(want)+1 || paged[len(paged)-1] != older.ID {
		t.Fatalf("pages of two: %v, want the %d ties then the older one", paged, len(want))
	}
	seen := map[string]bool{}
	for _, id := range paged[:len(want)] {
		if !want[id] || seen[id] {
			t.Errorf("pages of two: %v: %s is not one of the ties, or listed twice", paged, id)
		}
		seen[id] = true
	}
}

func testUpdateTransaction(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, store.NewID(), nil)
	tb := f.transaction(f.b, "", nil)
	update := func(x *payments.Transaction) error {
		return f.tx(func(tx *store.Tx) error { return f.st.UpdateTransaction(f.ctx, tx, x) })
	}

	// The six fields change; everything else the struct says is not
	// written.
	want := *ta
	want.Status, want.GatewayStatus, want.CapturedAmount, want.RefundedAmount = payments.StatusPartiallyRefunded, "succeeded", 12000, 345
	want.ProviderData = map[string]any{"chargeId": "ch_1", "attempts": float64(2)}
	want.UpdatedAt = f.tick()
	sent := want
	sent.PaymentID, sent.ProviderKey, sent.SessionID, sent.Amount, sent.Currency = "other", "stripe", "sess_other", 99999, "EUR"
	sent.CaptureMethod, sent.Description, sent.RedirectURL = payments.CaptureAutomatic, "changed", "https://other"
	sent.Metadata, sent.CreatedAt, sent.OrganizationID = map[string]any{"changed": true}, f.tick(), store.NewID()
	f.must(update(&sent), "UpdateTransaction")
	f.sameTransaction("A's after UpdateTransaction", f.get(whole(f.a), ta.ID), &want)
	f.sameTransaction("B's after A's update", f.get(whole(f.b), tb.ID), tb)

	// Provider data may become empty.
	want.ProviderData, want.Status, want.UpdatedAt = nil, payments.StatusRefunded, f.tick()
	f.must(update(&want), "UpdateTransaction without provider data")
	f.sameTransaction("A's after an update without provider data", f.get(whole(f.a), ta.ID), &want)

	// Another tenant's id, or a missing one, is not found and changes
	// nothing.
	asB := want
	asB.TenantID, asB.Status, asB.GatewayStatus, asB.UpdatedAt = f.b, payments.StatusFailed, "hijacked", f.tick()
	f.wantErr(update(&asB), store.ErrNotFound, "UpdateTransaction of A's id as B")
	f.sameTransaction("A's after B's update of its id", f.get(whole(f.a), ta.ID), &want)
	missing := want
	missing.ID = store.NewID()
	f.wantErr(update(&missing), store.ErrNotFound, "UpdateTransaction of a missing id")
}

// ---- Refunds

func (f *fixture) newRefund(t *payments.Transaction, amount int64, at time.Time) *payments.Refund {
	return &payments.Refund{ID: store.NewID(), TransactionID: t.ID, TenantID: t.TenantID,
		ProviderRefundID: "re_" + store.NewID(), Amount: amount, Currency: t.Currency, Reason: "requested_by_customer",
		GatewayStatus: "succeeded", CreatedAt: at}
}

func (f *fixture) insertRefund(r *payments.Refund) {
	f.t.Helper()
	f.must(f.tx(func(tx *store.Tx) error { return f.st.InsertRefund(f.ctx, tx, r) }), "InsertRefund")
}

func (f *fixture) refunds(tenant, transactionID string) []*payments.Refund {
	f.t.Helper()
	list, err := f.st.ListRefunds(f.ctx, f.db, tenant, transactionID)
	f.must(err, "ListRefunds")
	return list
}

func sameRefund(got, want *payments.Refund) string {
	if got.ID != want.ID || got.TransactionID != want.TransactionID || got.TenantID != want.TenantID ||
		got.ProviderRefundID != want.ProviderRefundID || got.Amount != want.Amount || got.Currency != want.Currency ||
		got.Reason != want.Reason || got.GatewayStatus != want.GatewayStatus || !got.CreatedAt.Equal(want.CreatedAt) {
		return fmt.Sprintf("%+v, want %+v", *got, *want)
	}
	return ""
}

func testRefunds(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", func(x *payments.Transaction) {
		x.Currency, x.Status, x.CapturedAmount = "KWD", payments.StatusCaptured, x.Amount
	})
	other := f.transaction(f.a, "", func(x *payments.Transaction) { x.Status, x.CapturedAmount = payments.StatusCaptured, x.Amount })
	tb := f.transaction(f.b, "", func(x *payments.Transaction) { x.Status, x.CapturedAmount = payments.StatusCaptured, x.Amount })
	f.equal("ListRefunds before any refund", len(f.refunds(f.a, ta.ID)), 0)

	t1, t2, t3 := f.tick(), f.tick(), f.tick()
	second, third, first := f.newRefund(ta, 200, t2), f.newRefund(ta, 300, t3), f.newRefund(ta, 100, t1)
	third.Reason, third.ProviderRefundID = "", third.ID
	// Stored in another order than their age.
	for _, r := range []*payments.Refund{second, third, first} {
		f.insertRefund(r)
	}
	f.insertRefund(f.newRefund(other, 1, f.tick()))
	bRefund := f.newRefund(tb, 50, t1)
	f.insertRefund(bRefund)

	got := f.refunds(f.a, ta.ID)
	f.equal("ListRefunds, oldest first", refundIDs(got), []string{first.ID, second.ID, third.ID})
	for i, want := range []*payments.Refund{first, second, third} {
		if i < len(got) {
			if d := sameRefund(got[i], want); d != "" {
				t.Errorf("ListRefunds[%d]: %s", i, d)
			}
		}
	}
	f.equal("ListRefunds of B's transaction as A", len(f.refunds(f.a, tb.ID)), 0)
	f.equal("ListRefunds of A's transaction as B", len(f.refunds(f.b, ta.ID)), 0)
	f.equal("ListRefunds of B", refundIDs(f.refunds(f.b, tb.ID)), []string{bRefund.ID})
	f.equal("ListRefunds of a missing transaction", len(f.refunds(f.a, store.NewID())), 0)
}

// ---- Operations

func testOperations(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", nil)
	ta2 := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	insert := func(op *payments.Operation) error {
		return f.tx(func(tx *store.Tx) error { return f.st.InsertOperation(f.ctx, tx, op) })
	}
	get := func(tenant, transactionID, operationID string) (*payments.Operation, error) {
		return f.st.GetOperation(f.ctx, f.db, tenant, transactionID, operationID)
	}
	same := func(what string, got, want *payments.Operation) {
		t.Helper()
		var g, w any
		_ = json.Unmarshal(got.Response, &g)
		_ = json.Unmarshal(want.Response, &w)
		if got.TenantID != want.TenantID || got.TransactionID != want.TransactionID || got.OperationID != want.OperationID ||
			got.Action != want.Action || !reflect.DeepEqual(g, w) || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("%s: %+v (response %s), want %+v (response %s)", what, *got, got.Response, *want, want.Response)
		}
	}

	_, err := get(f.a, ta.ID, "op-1")
	f.wantErr(err, store.ErrNotFound, "GetOperation before any")

	op := &payments.Operation{TenantID: f.a, TransactionID: ta.ID, OperationID: "op-1", Action: payments.ActionCapture,
		Response: json.RawMessage(`{"status":"captured","capturedAmount":123.45}`), CreatedAt: f.tick()}
	f.must(insert(op), "InsertOperation")
	got, err := get(f.a, ta.ID, "op-1")
	f.must(err, "GetOperation")
	same("GetOperation", got, op)

	// The same operationId on the transaction again: a conflict, whatever
	// the action, and the first answer stays.
	again := &payments.Operation{TenantID: f.a, TransactionID: ta.ID, OperationID: "op-1", Action: payments.ActionRefund,
		Response: json.RawMessage(`{"refundId":"re_1"}`), CreatedAt: f.tick()}
	f.wantErr(insert(again), store.ErrConflict, "InsertOperation of a kept operationId")
	got, err = get(f.a, ta.ID, "op-1")
	f.must(err, "GetOperation after the conflict")
	same("GetOperation after the conflict", got, op)

	// The same operationId on another transaction, of either tenant, is
	// another operation.
	other := &payments.Operation{TenantID: f.a, TransactionID: ta2.ID, OperationID: "op-1", Action: payments.ActionCancel,
		Response: json.RawMessage(`{"status":"cancelled"}`), CreatedAt: f.tick()}
	f.must(insert(other), "InsertOperation of the id on another transaction")
	ofB := &payments.Operation{TenantID: f.b, TransactionID: tb.ID, OperationID: "op-1", Action: payments.ActionRefund,
		Response: json.RawMessage(`{"status":"refunded"}`), CreatedAt: f.tick()}
	f.must(insert(ofB), "InsertOperation of B")
	got, err = get(f.a, ta2.ID, "op-1")
	f.must(err, "GetOperation on the other transaction")
	same("GetOperation on the other transaction", got, other)
	got, err = get(f.b, tb.ID, "op-1")
	f.must(err, "GetOperation of B")
	same("GetOperation of B", got, ofB)

	_, err = get(f.b, ta.ID, "op-1")
	f.wantErr(err, store.ErrNotFound, "GetOperation of A's operation as B")
	_, err = get(f.a, tb.ID, "op-1")
	f.wantErr(err, store.ErrNotFound, "GetOperation of B's operation as A")
	_, err = get(f.a, ta.ID, "op-2")
	f.wantErr(err, store.ErrNotFound, "GetOperation of another operationId")
}

// ---- Webhooks

func (f *fixture) newWebhook(t *payments.Transaction, provider, key string) *payments.Webhook {
	return &payments.Webhook{ID: store.NewID(), TenantID: t.TenantID, TransactionID: t.ID, ProviderKey: provider,
		IdempotencyKey: key, EventType: "payment.updated", EventID: "evt_" + key, ProviderStatus: "captured",
		MappedStatus: payments.StatusCaptured, ReceivedAt: f.tick()}
}

func (f *fixture) insertWebhook(w *payments.Webhook) (bool, error) {
	var inserted bool
	err := f.tx(func(tx *store.Tx) error {
		var err error
		inserted, err = f.st.InsertWebhook(f.ctx, tx, w)
		return err
	})
	return inserted, err
}

func (f *fixture) webhooks(tenant, transactionID string) []*payments.Webhook {
	f.t.Helper()
	list, err := f.st.ListWebhooks(f.ctx, f.db, tenant, transactionID)
	f.must(err, "ListWebhooks")
	return list
}

func sameWebhook(got, want *payments.Webhook) string {
	if got == nil {
		return "nil"
	}
	amount := func(p *int64) string {
		if p == nil {
			return "<nil>"
		}
		return fmt.Sprint(*p)
	}
	processed := func(p *time.Time) string {
		if p == nil {
			return "<nil>"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	if got.ID != want.ID || got.TenantID != want.TenantID || got.TransactionID != want.TransactionID ||
		got.ProviderKey != want.ProviderKey || got.IdempotencyKey != want.IdempotencyKey || got.EventType != want.EventType ||
		got.EventID != want.EventID || got.ProviderStatus != want.ProviderStatus || amount(got.Amount) != amount(want.Amount) ||
		got.MappedStatus != want.MappedStatus || got.Outcome != want.Outcome || got.StatusBefore != want.StatusBefore ||
		got.StatusAfter != want.StatusAfter || !got.ReceivedAt.Equal(want.ReceivedAt) ||
		processed(got.ProcessedAt) != processed(want.ProcessedAt) {
		return fmt.Sprintf("%+v (amount %s, processed %s), want %+v (amount %s, processed %s)", *got, amount(got.Amount),
			processed(got.ProcessedAt), *want, amount(want.Amount), processed(want.ProcessedAt))
	}
	return ""
}

func (f *fixture) sameWebhook(what string, got, want *payments.Webhook) {
	f.t.Helper()
	if d := sameWebhook(got, want); d != "" {
		f.t.Errorf("%s: %s", what, d)
	}
}

func (f *fixture) getWebhook(tenant, id string) (*payments.Webhook, error) {
	return f.st.GetWebhook(f.ctx, f.db, tenant, id)
}

func testWebhooks(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", nil)
	ta2 := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	f.equal("ListWebhooks before any", len(f.webhooks(f.a, ta.ID)), 0)

	t1, t2, t3 := f.tick(), f.tick(), f.tick()
	amount, zero := int64(4321), int64(0)
	w1, w2, w3 := f.newWebhook(ta, payments.KeyMock, "evt_1"), f.newWebhook(ta, payments.KeyMock, "evt_2"), f.newWebhook(ta, payments.KeyMock, "evt_3")
	w1.ReceivedAt, w2.ReceivedAt, w3.ReceivedAt = t3, t1, t2
	w2.Amount, w3.Amount = &amount, &zero
	w3.MappedStatus, w3.ProviderStatus, w3.EventType = payments.StatusUnknown, "weird", "payment.weird"
	// Stored in another order than received.
	for _, w := range []*payments.Webhook{w1, w2, w3} {
		inserted, err := f.insertWebhook(w)
		f.must(err, "InsertWebhook")
		f.equal("InsertWebhook of a new key: inserted", inserted, true)
	}
	onOther := f.newWebhook(ta2, payments.KeyMock, "evt_4")
	ofB := f.newWebhook(tb, payments.KeyMock, "evt_1")
	for _, w := range []*payments.Webhook{onOther, ofB} {
		inserted, err := f.insertWebhook(w)
		f.must(err, "InsertWebhook")
		f.equal("InsertWebhook of a new key: inserted", inserted, true)
	}

	for _, w := range []*payments.Webhook{w1, w2, w3} {
		got, err := f.getWebhook(f.a, w.ID)
		f.must(err, "GetWebhook")
		f.sameWebhook("GetWebhook", got, w)
	}
	got := f.webhooks(f.a, ta.ID)
	f.equal("ListWebhooks, in the order received", webhookIDs(got), []string{w2.ID, w3.ID, w1.ID})
	for i, want := range []*payments.Webhook{w2, w3, w1} {
		if i < len(got) {
			f.sameWebhook(fmt.Sprintf("ListWebhooks[%d]", i), got[i], want)
		}
	}
	f.equal("ListWebhooks of the other transaction", webhookIDs(f.webhooks(f.a, ta2.ID)), []string{onOther.ID})
	f.equal("ListWebhooks of B", webhookIDs(f.webhooks(f.b, tb.ID)), []string{ofB.ID})
	f.equal("ListWebhooks of A's transaction as B", len(f.webhooks(f.b, ta.ID)), 0)
	f.equal("ListWebhooks of B's transaction as A", len(f.webhooks(f.a, tb.ID)), 0)

	_, err := f.getWebhook(f.b, w1.ID)
	f.wantErr(err, store.ErrNotFound, "GetWebhook of A's as B")
	_, err = f.getWebhook(f.a, ofB.ID)
	f.wantErr(err, store.ErrNotFound, "GetWebhook of B's as A")
	_, err = f.getWebhook(f.a, store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetWebhook of a missing id")
}

// A webhook is stored once per tenant, provider and idempotency key: a
// second one is not inserted (no error) and leaves the first as it was.
func testWebhookDedup(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", nil)
	ta2 := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	first := f.newWebhook(ta, payments.KeyMock, "evt_dup")
	inserted, err := f.insertWebhook(first)
	f.must(err, "InsertWebhook")
	f.equal("InsertWebhook: inserted", inserted, true)

	for _, c := range []struct {
		what string
		w    *payments.Webhook
	}{
		{"the same key again", f.newWebhook(ta, payments.KeyMock, "evt_dup")},
		{"the same key on another transaction of the tenant", f.newWebhook(ta2, payments.KeyMock, "evt_dup")},
	} {
		c.w.EventType, c.w.ProviderStatus, c.w.MappedStatus = "other.type", "failed", payments.StatusFailed
		inserted, err := f.insertWebhook(c.w)
		f.must(err, "InsertWebhook of "+c.what)
		f.equal("InsertWebhook of "+c.what+": inserted", inserted, false)
		_, err = f.getWebhook(f.a, c.w.ID)
		f.wantErr(err, store.ErrNotFound, "GetWebhook of the duplicate ("+c.what+")")
	}
	got, err := f.getWebhook(f.a, first.ID)
	f.must(err, "GetWebhook of the first")
	f.sameWebhook("the first after its duplicates", got, first)
	f.equal("ListWebhooks after the duplicates", webhookIDs(f.webhooks(f.a, ta.ID)), []string{first.ID})
	f.equal("ListWebhooks of the other transaction", len(f.webhooks(f.a, ta2.ID)), 0)

	// The key at another provider, or in another tenant, is another
	// webhook.
	atStripe := f.newWebhook(ta, "stripe", "evt_dup")
	ofB := f.newWebhook(tb, payments.KeyMock, "evt_dup")
	for _, w := range []*payments.Webhook{atStripe, ofB} {
		inserted, err := f.insertWebhook(w)
		f.must(err, "InsertWebhook")
		f.equal("InsertWebhook of the key at another provider or tenant: inserted", inserted, true)
	}
	f.equal("ListWebhooks of A", webhookIDs(f.webhooks(f.a, ta.ID)), []string{first.ID, atStripe.ID})
	f.equal("ListWebhooks of B", webhookIDs(f.webhooks(f.b, tb.ID)), []string{ofB.ID})

	// In one transaction, the second of two with one key is not inserted
	// either (the Service stores a batch of webhooks at once).
	w1, w2 := f.newWebhook(ta2, payments.KeyMock, "evt_batch"), f.newWebhook(ta2, payments.KeyMock, "evt_batch")
	var ins1, ins2 bool
	f.must(f.tx(func(tx *store.Tx) error {
		var err error
		if ins1, err = f.st.InsertWebhook(f.ctx, tx, w1); err != nil {
			return err
		}
		ins2, err = f.st.InsertWebhook(f.ctx, tx, w2)
		return err
	}), "two webhooks of one key in one transaction")
	f.equal("two of one key in one transaction: inserted", []bool{ins1, ins2}, []bool{true, false})
	f.equal("ListWebhooks after the batch", webhookIDs(f.webhooks(f.a, ta2.ID)), []string{w1.ID})
}

func testFinishWebhook(t *testing.T, f *fixture) {
	ta := f.transaction(f.a, "", nil)
	tb := f.transaction(f.b, "", nil)
	w := f.newWebhook(ta, payments.KeyMock, "evt_finish")
	w.MappedStatus = ""
	wb := f.newWebhook(tb, payments.KeyMock, "evt_finish")
	for _, x := range []*payments.Webhook{w, wb} {
		_, err := f.insertWebhook(x)
		f.must(err, "InsertWebhook")
	}
	finish := func(x *payments.Webhook) error {
		return f.tx(func(tx *store.Tx) error { return f.st.FinishWebhook(f.ctx, tx, x) })
	}

	// What FinishWebhook records; the rest of the struct is not written.
	processed := f.tick()
	want := *w
	want.MappedStatus, want.Outcome, want.StatusBefore, want.StatusAfter, want.ProcessedAt =
		payments.StatusCaptured, payments.OutcomeApplied, payments.StatusPending, payments.StatusCaptured, &processed
	sent := want
	sent.EventType, sent.ProviderStatus, sent.IdempotencyKey, sent.ReceivedAt = "changed", "changed", "changed", f.tick()
	f.must(finish(&sent), "FinishWebhook")
	got, err := f.getWebhook(f.a, w.ID)
	f.must(err, "GetWebhook after FinishWebhook")
	f.sameWebhook("GetWebhook after FinishWebhook", got, &want)
	list := f.webhooks(f.a, ta.ID)
	if len(list) == 1 {
		f.sameWebhook("ListWebhooks after FinishWebhook", list[0], &want)
	}
	got, err = f.getWebhook(f.b, wb.ID)
	f.must(err, "GetWebhook of B's")
	f.sameWebhook("B's after A's FinishWebhook", got, wb)

	// Another tenant's id, or a missing one, is not found and changes
	// nothing.
	asB := want
	asB.TenantID, asB.Outcome, asB.StatusAfter = f.b, payments.OutcomeIgnored, payments.StatusFailed
	f.wantErr(finish(&asB), store.ErrNotFound, "FinishWebhook of A's id as B")
	got, err = f.getWebhook(f.a, w.ID)
	f.must(err, "GetWebhook")
	f.sameWebhook("A's after B's FinishWebhook of its id", got, &want)
	missing := want
	missing.ID = store.NewID()
	f.wantErr(finish(&missing), store.ErrNotFound, "FinishWebhook of a missing id")

	// An ignored outcome is recorded as such.
	processed2 := f.tick()
	ignored := *wb
	ignored.MappedStatus, ignored.Outcome, ignored.StatusBefore, ignored.StatusAfter, ignored.ProcessedAt =
		payments.StatusAuthorized, payments.OutcomeIgnored, payments.StatusCaptured, payments.StatusCaptured, &processed2
	f.must(finish(&ignored), "FinishWebhook of B's")
	got, err = f.getWebhook(f.b, wb.ID)
	f.must(err, "GetWebhook of B's")
	f.sameWebhook("B's after FinishWebhook", got, &ignored)
}

// ---- The Querier

var errRollback = errors.New("paymentstest: roll back")

// Every method runs on the Querier it is given: reads through a
// transaction see its writes, and a rolled-back transaction leaves
// nothing.
func testUsesTheQuerier(t *testing.T, f *fixture) {
	ctx := f.ctx
	kept := f.transaction(f.a, "", nil)
	x := f.newTransaction(f.a, "", payments.KeyMock, "sess_"+store.NewID())
	r := f.newRefund(x, 10, f.tick())
	w := f.newWebhook(x, payments.KeyMock, "evt_rolled_back")
	wKept := f.newWebhook(kept, payments.KeyMock, "evt_kept")
	op := &payments.Operation{TenantID: f.a, TransactionID: x.ID, OperationID: "op", Action: payments.ActionRefund,
		Response: json.RawMessage(`{}`), CreatedAt: f.tick()}
	_, err := f.insertWebhook(wKept)
	f.must(err, "InsertWebhook")
	err = f.tx(func(tx *store.Tx) error {
		if err := f.st.InsertTransaction(ctx, tx, x); err != nil {
			return err
		}
		if err := f.st.InsertRefund(ctx, tx, r); err != nil {
			return err
		}
		if err := f.st.InsertOperation(ctx, tx, op); err != nil {
			return err
		}
		if ok, err := f.st.InsertWebhook(ctx, tx, w); err != nil || !ok {
			return fmt.Errorf("InsertWebhook in the transaction: %v, %v", ok, err)
		}
		upd := *kept
		upd.Status, upd.UpdatedAt = payments.StatusFailed, f.tick()
		if err := f.st.UpdateTransaction(ctx, tx, &upd); err != nil {
			return err
		}
		done := f.tick()
		finished := *wKept
		finished.Outcome, finished.ProcessedAt = payments.OutcomeApplied, &done
		if err := f.st.FinishWebhook(ctx, tx, &finished); err != nil {
			return err
		}
		// Reads through the transaction see its writes.
		if _, err := f.st.GetTransaction(ctx, tx, whole(f.a), x.ID); err != nil {
			return fmt.Errorf("GetTransaction in the transaction: %w", err)
		}
		if got, err := f.st.LockTransaction(ctx, tx, f.a, kept.ID); err != nil || got.Status != payments.StatusFailed {
			return fmt.Errorf("LockTransaction in the transaction: %v", err)
		}
		if list, err := f.st.FindBySession(ctx, tx, payments.KeyMock, x.SessionID); err != nil || len(list) != 1 {
			return fmt.Errorf("FindBySession in the transaction: %d, %v", len(list), err)
		}
		if _, total, err := f.st.ListTransactions(ctx, tx, whole(f.a), payments.Filter{Status: payments.StatusPending, Limit: 10}); err != nil || total != 1 {
			return fmt.Errorf("ListTransactions in the transaction: %d, %v", total, err)
		}
		if list, err := f.st.ListRefunds(ctx, tx, f.a, x.ID); err != nil || len(list) != 1 {
			return fmt.Errorf("ListRefunds in the transaction: %d, %v", len(list), err)
		}
		if _, err := f.st.GetOperation(ctx, tx, f.a, x.ID, "op"); err != nil {
			return fmt.Errorf("GetOperation in the transaction: %w", err)
		}
		if _, err := f.st.GetWebhook(ctx, tx, f.a, w.ID); err != nil {
			return fmt.Errorf("GetWebhook in the transaction: %w", err)
		}
		if got, err := f.st.GetWebhook(ctx, tx, f.a, wKept.ID); err != nil || got.ProcessedAt == nil {
			return fmt.Errorf("GetWebhook of the finished webhook in the transaction: %v", err)
		}
		if list, err := f.st.ListWebhooks(ctx, tx, f.a, x.ID); err != nil || len(list) != 1 {
			return fmt.Errorf("ListWebhooks in the transaction: %d, %v", len(list), err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("the transaction: %v", err)
	}
	_, err = f.st.GetTransaction(ctx, f.db, whole(f.a), x.ID)
	f.wantErr(err, store.ErrNotFound, "GetTransaction after the rollback")
	f.sameTransaction("the updated transaction after the rollback", f.get(whole(f.a), kept.ID), kept)
	list, err := f.st.FindBySession(ctx, f.db, payments.KeyMock, x.SessionID)
	f.must(err, "FindBySession")
	f.equal("FindBySession after the rollback", len(list), 0)
	f.equal("ListRefunds after the rollback", len(f.refunds(f.a, x.ID)), 0)
	_, err = f.st.GetOperation(ctx, f.db, f.a, x.ID, "op")
	f.wantErr(err, store.ErrNotFound, "GetOperation after the rollback")
	_, err = f.getWebhook(f.a, w.ID)
	f.wantErr(err, store.ErrNotFound, "GetWebhook after the rollback")
	got, err := f.getWebhook(f.a, wKept.ID)
	f.must(err, "GetWebhook")
	f.sameWebhook("the finished webhook after the rollback", got, wKept)
}
