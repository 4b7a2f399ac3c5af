package paymentstest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// sortedGroups is groups by currency, then status; never nil.
func sortedGroups(groups []payments.SummaryGroup) []payments.SummaryGroup {
	out := append([]payments.SummaryGroup{}, groups...)
	slices.SortFunc(out, func(a, b payments.SummaryGroup) int {
		return cmp.Or(cmp.Compare(a.Currency, b.Currency), cmp.Compare(a.Status, b.Status))
	})
	return out
}

// summarize returns the groups Summarize gives on q in sc, sorted,
// failing the test on an error.
func (f *fixture) summarize(q store.Querier, sc store.Scope, since time.Time) []payments.SummaryGroup {
	f.t.Helper()
	groups, err := f.st.Summarize(f.ctx, q, sc, since)
	f.must(err, fmt.Sprintf("Summarize since %v", since))
	return sortedGroups(groups)
}

// testSummarize: Summarize groups by currency and status the
// transactions created at or after since (one exactly at since counts,
// one a microsecond before does not), with their number and the sum of
// their captured amounts (refunds not subtracted); it reads what the
// scope may read (the OrgScopes grid), never another tenant's, and runs
// on the Querier it is given.
func testSummarize(t *testing.T, f *fixture) {
	since := time.Date(2031, 6, 1, 10, 0, 0, 100_000, time.UTC) // .000100
	o1, o2 := store.NewID(), store.NewID()
	type spec struct {
		tenant, org string
		at          time.Duration // from since
		currency    string
		status      payments.Status
		amount      int64
		captured    int64
		refunded    int64
	}
	specs := []spec{
		{f.a, "", -time.Microsecond, "USD", payments.StatusCaptured, 5000, 5000, 0}, // just before
		{f.a, "", -24 * time.Hour, "EUR", payments.StatusPending, 300, 0, 0},        // long before
		{f.a, "", 0, "USD", payments.StatusCaptured, 1050, 1050, 0},                 // exactly at since
		{f.a, "", time.Second, "USD", payments.StatusPartiallyRefunded, 2000, 2000, 500},
		{f.a, o2, 2 * time.Second, "USD", payments.StatusAuthorized, 700, 0, 0},
		{f.a, "", 3 * time.Second, "JPY", payments.StatusCaptured, 1500, 1500, 0},
		{f.a, "", 4 * time.Second, "USD", payments.StatusCancelled, 900, 0, 0},
		{f.a, o1, 5 * time.Second, "KWD", payments.StatusPartiallyCaptured, 10000, 1234, 0},
		{f.a, "", 6 * time.Second, "USD", payments.StatusCaptured, 1, 1, 0},
		{f.a, "", 7 * time.Second, "USD", payments.StatusRefunded, 250, 250, 250},
		// B's, in the window, one in an organization of the same id as A's.
		{f.b, "", time.Second, "USD", payments.StatusCaptured, 99999, 99999, 0},
		{f.b, o1, 2 * time.Second, "KWD", payments.StatusPartiallyCaptured, 777, 700, 0},
		{f.b, "", 3 * time.Second, "CHF", payments.StatusPending, 10, 0, 0},
	}
	// Stored in another order than their age.
	for _, i := range []int{5, 0, 9, 2, 12, 7, 1, 10, 3, 8, 6, 11, 4} {
		s := specs[i]
		f.transaction(s.tenant, s.org, func(x *payments.Transaction) {
			x.CreatedAt, x.UpdatedAt = since.Add(s.at), since.Add(s.at+time.Hour)
			x.Currency, x.Status, x.Amount, x.CapturedAmount, x.RefundedAmount = s.currency, s.status, s.amount, s.captured, s.refunded
		})
	}
	group := func(currency string, status payments.Status, count int, captured int64) payments.SummaryGroup {
		return payments.SummaryGroup{Currency: currency, Status: status, Count: count, Captured: captured}
	}
	seen := []payments.SummaryGroup{
		group("JPY", payments.StatusCaptured, 1, 1500),
		group("KWD", payments.StatusPartiallyCaptured, 1, 1234),
		group("USD", payments.StatusAuthorized, 1, 0),
		group("USD", payments.StatusCancelled, 1, 0),
		group("USD", payments.StatusCaptured, 2, 1051),
		group("USD", payments.StatusPartiallyRefunded, 1, 2000),
		group("USD", payments.StatusRefunded, 1, 250),
	}
	f.equal("Summarize of A since", f.summarize(f.db, whole(f.a), since), sortedGroups(seen))
	// A microsecond later, the one created at since is out.
	later := slices.Clone(seen)
	later[4] = group("USD", payments.StatusCaptured, 1, 1)
	f.equal("Summarize of A a microsecond after since", f.summarize(f.db, whole(f.a), since.Add(time.Microsecond)),
		sortedGroups(later))
	// A microsecond earlier, the one just before is in.
	earlier := slices.Clone(seen)
	earlier[4] = group("USD", payments.StatusCaptured, 3, 6051)
	f.equal("Summarize of A a microsecond before since", f.summarize(f.db, whole(f.a), since.Add(-time.Microsecond)),
		sortedGroups(earlier))
	// The zero time: everything.
	all := append(slices.Clone(earlier), group("EUR", payments.StatusPending, 1, 0))
	f.equal("Summarize of A since the zero time", f.summarize(f.db, whole(f.a), time.Time{}), sortedGroups(all))
	// since in another time zone is the same instant.
	f.equal("Summarize of A since, in another zone", f.summarize(f.db, whole(f.a), since.In(time.FixedZone("X", -7*3600))),
		sortedGroups(seen))
	f.equal("Summarize of A after everything", f.summarize(f.db, whole(f.a), since.Add(time.Hour)),
		[]payments.SummaryGroup{})

	f.equal("Summarize of B since", f.summarize(f.db, whole(f.b), since), []payments.SummaryGroup{
		group("CHF", payments.StatusPending, 1, 0),
		group("KWD", payments.StatusPartiallyCaptured, 1, 700),
		group("USD", payments.StatusCaptured, 1, 99999),
	})
	f.equal("Summarize of a third tenant", f.summarize(f.db, whole(store.NewID()), time.Time{}), []payments.SummaryGroup{})

	// Organizations: o1's KWD transaction shows to scopes that read o1;
	// o2's authorized one shows to scopes that read o2.
	grid := storetest.NewOrgScopes(f.a, o1, o2)
	check := func(seeO1 bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, err := store.ScopeFrom(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var want []payments.SummaryGroup
			for _, g := range seen {
				if g.Currency == "KWD" && !seeO1 || g.Status == payments.StatusAuthorized && !sc.AllowsOrganization(o2) {
					continue
				}
				want = append(want, g)
			}
			groups, err := f.st.Summarize(ctx, f.db, sc, since)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			if got := sortedGroups(groups); !slices.Equal(got, sortedGroups(want)) {
				t.Errorf("Summarize:\n got %v\nwant %v", got, sortedGroups(want))
			}
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))

	// A transaction's own insert counts in it, and not after its rollback.
	err := f.tx(func(tx *store.Tx) error {
		x := f.newTransaction(f.a, "", payments.KeyMock, "sess_"+store.NewID())
		x.CreatedAt, x.Currency, x.Status, x.CapturedAmount = since.Add(time.Minute), "GBP", payments.StatusCaptured, x.Amount
		if err := f.st.InsertTransaction(f.ctx, tx, x); err != nil {
			return err
		}
		got := f.summarize(tx, whole(f.a), since.Add(time.Minute))
		if want := []payments.SummaryGroup{group("GBP", payments.StatusCaptured, 1, x.Amount)}; !slices.Equal(got, want) {
			return fmt.Errorf("Summarize in the transaction: %v, want %v", got, want)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("the transaction: %v", err)
	}
	f.equal("Summarize after the rollback", f.summarize(f.db, whole(f.a), since.Add(time.Minute)), []payments.SummaryGroup{})

	// Windows from the start of an hour, and across hours (a store may
	// keep counts by hour of creation): A's from since's hour are the ones
	// from a microsecond before since.
	hour := since.Truncate(time.Hour)
	f.equal("Summarize of A from since's hour", f.summarize(f.db, whole(f.a), hour), sortedGroups(earlier))
	f.equal("Summarize of A from the hour before", f.summarize(f.db, whole(f.a), hour.Add(-time.Hour)), sortedGroups(earlier))
	f.equal("Summarize of A from 25 hours before", f.summarize(f.db, whole(f.a), hour.Add(-25*time.Hour)), sortedGroups(all))
	// A transaction's status and captured amount changed after it was
	// stored count as they are now, under whatever window.
	c := store.NewID()
	x := f.transaction(c, "", func(x *payments.Transaction) {
		x.CreatedAt, x.Currency, x.Status, x.Amount, x.CapturedAmount = hour.Add(90*time.Minute), "USD", payments.StatusAuthorized, 800, 0
	})
	y := f.transaction(c, "", func(y *payments.Transaction) {
		y.CreatedAt, y.Currency, y.Status, y.Amount, y.CapturedAmount = hour.Add(-30*time.Minute), "USD", payments.StatusPartiallyCaptured, 900, 100
	})
	x.Status, x.CapturedAmount = payments.StatusPartiallyCaptured, 300
	y.CapturedAmount = 400 // the status stays
	for _, tr := range []*payments.Transaction{x, y} {
		f.must(f.tx(func(tx *store.Tx) error { return f.st.UpdateTransaction(f.ctx, tx, tr) }), "UpdateTransaction")
	}
	for _, w := range []struct {
		since time.Time
		want  []payments.SummaryGroup
	}{
		{hour.Add(-time.Hour), []payments.SummaryGroup{group("USD", payments.StatusPartiallyCaptured, 2, 700)}},
		{hour.Add(-30 * time.Minute), []payments.SummaryGroup{group("USD", payments.StatusPartiallyCaptured, 2, 700)}},
		{hour, []payments.SummaryGroup{group("USD", payments.StatusPartiallyCaptured, 1, 300)}},
		{hour.Add(time.Hour), []payments.SummaryGroup{group("USD", payments.StatusPartiallyCaptured, 1, 300)}},
		{hour.Add(91 * time.Minute), []payments.SummaryGroup{}},
	} {
		f.equal(fmt.Sprintf("Summarize of changed transactions from %s", w.since.Sub(hour)), f.summarize(f.db, whole(c), w.since), w.want)
	}
}
