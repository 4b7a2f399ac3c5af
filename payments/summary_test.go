package payments_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/payments/paymentstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// summaryOf returns the caller's summary since, failing the test on an
// error.
func summaryOf(t testing.TB, svc *payments.Service, ctx context.Context, since time.Time) *payments.Summary {
	t.Helper()
	s, err := svc.Summary(ctx, since)
	if err != nil {
		t.Fatalf("Summary since %v: %v", since, err)
	}
	return s
}

// createdAt is the creation time of the caller's transaction.
func createdAt(t testing.TB, svc *payments.Service, ctx context.Context, id string) time.Time {
	t.Helper()
	x, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return x.CreatedAt
}

// wantSummary compares a summary with want, and its JSON with wantJSON.
func wantSummary(t *testing.T, what string, got *payments.Summary, want payments.Summary, wantJSON string) {
	t.Helper()
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, *got, want)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal: %v", what, err)
	}
	if string(b) != wantJSON {
		t.Errorf("%s: JSON\n got %s\nwant %s", what, b, wantJSON)
	}
}

// Summary counts the caller's transactions created at or after since by
// status and adds up what was captured per currency, in the API's
// decimals; older transactions, another tenant's and those of
// organizations the caller may not read stay out.
func TestSummary(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(db, payments.Options{})
		a, b := newTenant(t), newTenant(t)
		open := func(ctx context.Context, provider, amount, currency, method string) string {
			t.Helper()
			s, err := svc.CreateSession(ctx, payments.SessionRequest{ProviderKey: provider, Amount: json.Number(amount),
				CurrencyCode: currency, CaptureMethod: method})
			if err != nil {
				t.Fatalf("CreateSession %s %s %s: %v", amount, currency, method, err)
			}
			return s.TransactionID
		}
		must := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}

		// Before the window: A's captured 99.99 USD, B's 5 USD.
		old := open(a.ctx, payments.KeyMock, "99.99", "USD", payments.CaptureAutomatic)
		open(b.ctx, payments.KeyMock, "5", "USD", payments.CaptureAutomatic)
		time.Sleep(3 * time.Millisecond) // the window starts strictly later
		// The window starts with this one's creation.
		first := open(a.ctx, payments.KeyMock, "10.50", "USD", payments.CaptureAutomatic) // captured 10.50
		since := createdAt(t, svc, a.ctx, first)
		if !createdAt(t, svc, a.ctx, old).Before(since) {
			t.Fatal("the old transaction is not older than the window")
		}
		part := open(a.ctx, payments.KeyMock, "20", "USD", payments.CaptureManual)
		_, err := svc.Capture(a.ctx, payments.CaptureRequest{TransactionID: part, Amount: "5.25"}) // partially_captured 5.25
		must("Capture 5.25", err)
		cancelled := open(a.ctx, payments.KeyMock, "7", "USD", payments.CaptureManual)
		_, err = svc.Cancel(a.ctx, payments.CancelRequest{TransactionID: cancelled})
		must("Cancel", err)
		open(a.ctx, payments.KeyMock, "8", "USD", payments.CaptureManual)              // authorized
		open(a.ctx, payments.KeyMockProcessing, "9", "USD", payments.CaptureAutomatic) // pending
		refunded := open(a.ctx, payments.KeyMock, "30", "USD", payments.CaptureAutomatic)
		_, err = svc.Refund(a.ctx, payments.RefundRequest{TransactionID: refunded, Amount: "10"}) // partially_refunded, 30 received
		must("Refund 10", err)
		open(a.ctx, payments.KeyMock, "0.1", "EUR", payments.CaptureAutomatic)
		open(a.ctx, payments.KeyMock, "0.2", "eur", payments.CaptureAutomatic) // 0.1 + 0.2 = 0.3 exactly
		open(a.ctx, payments.KeyMock, "1500", "JPY", payments.CaptureAutomatic)
		kwd := open(a.ctx, payments.KeyMock, "1.234", "KWD", payments.CaptureManual)
		_, err = svc.Capture(a.ctx, payments.CaptureRequest{TransactionID: kwd}) // captured in full
		must("Capture KWD", err)
		// In another organization of A.
		o2 := store.NewID()
		inO2 := store.WithScope(t.Context(), store.Scope{TenantID: a.id, OrganizationID: o2})
		open(inO2, payments.KeyMock, "100", "GBP", payments.CaptureAutomatic)
		// B's, in the window.
		open(b.ctx, payments.KeyMock, "500", "USD", payments.CaptureAutomatic)
		open(b.ctx, payments.KeyMock, "3", "CHF", payments.CaptureManual)

		wantSummary(t, "A's summary", summaryOf(t, svc, a.ctx, since), payments.Summary{
			Total: 11,
			ByStatus: map[string]int{"captured": 6, "partially_captured": 1, "cancelled": 1, "authorized": 1, "pending": 1,
				"partially_refunded": 1},
			Received: []payments.CurrencyAmount{
				{CurrencyCode: "EUR", Amount: "0.3", AmountMinor: 30, Count: 2},
				{CurrencyCode: "GBP", Amount: "100", AmountMinor: 10000, Count: 1},
				{CurrencyCode: "JPY", Amount: "1500", AmountMinor: 1500, Count: 1},
				{CurrencyCode: "KWD", Amount: "1.234", AmountMinor: 1234, Count: 1},
				{CurrencyCode: "USD", Amount: "45.75", AmountMinor: 4575, Count: 6},
			},
		}, `{"total":11,"byStatus":{"authorized":1,"cancelled":1,"captured":6,"partially_captured":1,"partially_refunded":1,"pending":1},`+
			`"received":[{"currencyCode":"EUR","amount":0.3,"count":2},{"currencyCode":"GBP","amount":100,"count":1},`+
			`{"currencyCode":"JPY","amount":1500,"count":1},{"currencyCode":"KWD","amount":1.234,"count":1},`+
			`{"currencyCode":"USD","amount":45.75,"count":6}]}`)

		// A scope that reads A's first organization only: o2's GBP
		// payment is out (A's others are of that organization).
		onlyFirst := store.WithScope(t.Context(), store.Scope{TenantID: a.id, OrganizationID: a.org, OrganizationIDs: []string{a.org}})
		got := summaryOf(t, svc, onlyFirst, since)
		if got.Total != 10 || got.ByStatus["captured"] != 5 || len(got.Received) != 4 || got.Received[1].CurrencyCode != "JPY" {
			t.Errorf("A's summary without o2: %+v", got)
		}

		// From the old transaction's creation on, it counts too.
		got = summaryOf(t, svc, a.ctx, createdAt(t, svc, a.ctx, old))
		if got.Total != 12 || got.ByStatus["captured"] != 7 || got.Received[4] != (payments.CurrencyAmount{CurrencyCode: "USD",
			Amount: "145.74", AmountMinor: 14574, Count: 7}) {
			t.Errorf("A's summary from the old transaction on: %+v", got)
		}
		// Half a microsecond after the window's first: it is out (times
		// are kept to the microsecond; since rounds up).
		got = summaryOf(t, svc, a.ctx, since.Add(500*time.Nanosecond))
		if got.Total != 10 || got.ByStatus["captured"] != 5 || got.Received[4].Amount != "35.25" {
			t.Errorf("A's summary from just after the first: %+v", got)
		}

		wantSummary(t, "B's summary", summaryOf(t, svc, b.ctx, since), payments.Summary{
			Total:    2,
			ByStatus: map[string]int{"captured": 1, "authorized": 1},
			Received: []payments.CurrencyAmount{
				{CurrencyCode: "CHF", Amount: "0", AmountMinor: 0, Count: 1},
				{CurrencyCode: "USD", Amount: "500", AmountMinor: 50000, Count: 1},
			},
		}, `{"total":2,"byStatus":{"authorized":1,"captured":1},"received":[{"currencyCode":"CHF","amount":0,"count":1},`+
			`{"currencyCode":"USD","amount":500,"count":1}]}`)

		wantSummary(t, "a summary of the future", summaryOf(t, svc, a.ctx, time.Now().Add(time.Hour)),
			payments.Summary{ByStatus: map[string]int{}, Received: []payments.CurrencyAmount{}},
			`{"total":0,"byStatus":{},"received":[]}`)
		wantSummary(t, "a new tenant's summary", summaryOf(t, svc, newTenant(t).ctx, time.Time{}),
			payments.Summary{ByStatus: map[string]int{}, Received: []payments.CurrencyAmount{}},
			`{"total":0,"byStatus":{},"received":[]}`)

		if _, err := svc.Summary(t.Context(), since); !errors.Is(err, store.ErrNoScope) {
			t.Errorf("Summary without a scope: %v, want ErrNoScope", err)
		}
	}, payments.Migrations)
}

// Broken Summarize implementations: each must make the suite's Summarize
// subtest fail.

// summarizeSQL is Summarize's query without the tenant's predicate,
// summing col.
func summarizeSQL(col string) string {
	return `SELECT currency_code, status, COUNT(*), CAST(SUM(` + col + `) AS BIGINT) FROM payment_transactions
		WHERE created_at >= $1 GROUP BY currency_code, status`
}

func scanGroups(ctx context.Context, q store.Querier, sql string, args ...any) ([]payments.SummaryGroup, error) {
	return store.Many(ctx, q, func(s store.Scanner) (payments.SummaryGroup, error) {
		var g payments.SummaryGroup
		return g, s.Scan(&g.Currency, &g.Status, &g.Count, &g.Captured)
	}, sql, args...)
}

// summarizeEveryTenant adds up every tenant's transactions.
type summarizeEveryTenant struct{ payments.Store }

func (summarizeEveryTenant) Summarize(ctx context.Context, q store.Querier, _ store.Scope, since time.Time) ([]payments.SummaryGroup, error) {
	return scanGroups(ctx, q, summarizeSQL("captured_amount"), since.UTC())
}

// summarizeOrgBlind reads as if the scope allowed every organization.
type summarizeOrgBlind struct{ payments.Store }

func (s summarizeOrgBlind) Summarize(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]payments.SummaryGroup, error) {
	sc.OrganizationIDs = nil
	return s.Store.Summarize(ctx, q, sc, since)
}

// summarizeAfter leaves out the transactions created at since exactly.
type summarizeAfter struct{ payments.Store }

func (s summarizeAfter) Summarize(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]payments.SummaryGroup, error) {
	return s.Store.Summarize(ctx, q, sc, since.Add(time.Microsecond))
}

// summarizeAll ignores since.
type summarizeAll struct{ payments.Store }

func (s summarizeAll) Summarize(ctx context.Context, q store.Querier, sc store.Scope, _ time.Time) ([]payments.SummaryGroup, error) {
	return s.Store.Summarize(ctx, q, sc, time.Time{})
}

// summarizeNetOfRefunds subtracts refunds from the captured sums.
type summarizeNetOfRefunds struct{ payments.Store }

func (summarizeNetOfRefunds) Summarize(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]payments.SummaryGroup, error) {
	c := sc.Readable("tenant_id", "organization_id").And("created_at >= ?", since.UTC())
	return scanGroups(ctx, q, `SELECT currency_code, status, COUNT(*), CAST(SUM(captured_amount - refunded_amount) AS BIGINT)
		FROM payment_transactions WHERE `+c.SQL()+` GROUP BY currency_code, status`, c.Values()...)
}

// summarizeCommitted reads a database of its own, not the Querier given.
type summarizeCommitted struct {
	payments.Store
	db *store.DB
}

func (s summarizeCommitted) Summarize(ctx context.Context, _ store.Querier, sc store.Scope, since time.Time) ([]payments.SummaryGroup, error) {
	return s.Store.Summarize(ctx, s.db, sc, since)
}

// brokenSummaries are the broken stores of Summarize by name.
var brokenSummaries = map[string]func(payments.Store, *store.DB) payments.Store{
	"summarizeEveryTenant":  func(s payments.Store, _ *store.DB) payments.Store { return summarizeEveryTenant{s} },
	"summarizeOrgBlind":     func(s payments.Store, _ *store.DB) payments.Store { return summarizeOrgBlind{s} },
	"summarizeAfter":        func(s payments.Store, _ *store.DB) payments.Store { return summarizeAfter{s} },
	"summarizeAll":          func(s payments.Store, _ *store.DB) payments.Store { return summarizeAll{s} },
	"summarizeNetOfRefunds": func(s payments.Store, _ *store.DB) payments.Store { return summarizeNetOfRefunds{s} },
	"summarizeCommitted":    func(s payments.Store, db *store.DB) payments.Store { return summarizeCommitted{s, db} },
}

// TestBrokenSummaryHelper runs the suite against the broken store
// storetest.Broken names, on SQLite, in the child process
// TestSuiteCatchesBrokenSummaries starts; otherwise it does nothing.
func TestBrokenSummaryHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenSummaries's child process")
	}
	wrap, ok := brokenSummaries[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	db := storetest.SQLite(t, payments.Migrations)
	paymentstest.Run(t, db, wrap(payments.NewSQLStore(), db))
}

// TestSuiteCatchesBrokenSummaries proves the Summarize case bites.
func TestSuiteCatchesBrokenSummaries(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name := range brokenSummaries {
		subtests[name] = "Summarize"
	}
	storetest.SuiteCatches(t, "TestBrokenSummaryHelper", subtests)
}
