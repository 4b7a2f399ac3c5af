package payments

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Summary is what the caller's transactions created since a time add up
// to: how many there are, in each status, and what was received in each
// currency.
type Summary struct {
	// Total is the number of transactions.
	Total int `json:"total"`
	// ByStatus counts them by unified status; every status with at least
	// one transaction is present, no other.
	ByStatus map[string]int `json:"byStatus"`
	// Received is the amount received (captured) per currency: one entry
	// per currency with at least one transaction, whatever its status, in
	// the order of the currency codes. Never nil.
	Received []CurrencyAmount `json:"received"`
}

// CurrencyAmount is the amount received in one currency.
type CurrencyAmount struct {
	// CurrencyCode is the ISO 4217 code, upper-case as stored.
	CurrencyCode string `json:"currencyCode"`
	// Amount is AmountMinor as a decimal, as the API writes every amount
	// (FormatAmount: 1050 USD is 10.5, 1050 JPY is 1050): exact, never a
	// float.
	Amount json.Number `json:"amount"`
	// AmountMinor is the sum of the transactions' captured amounts
	// (their amountReceived: refunds are not subtracted) in the
	// currency's minor units.
	AmountMinor int64 `json:"-"`
	// Count is the number of the currency's transactions, of every
	// status (those with nothing captured too).
	Count int `json:"count"`
}

// SummaryGroup is what Store.Summarize returns for the transactions of
// one currency in one status.
type SummaryGroup struct {
	Currency string // ISO 4217 code
	Status   Status // one status
	// Count is how many transactions the group has (at least one).
	Count int
	// Captured is the sum of their captured amounts, in minor units.
	Captured int64
}

// Summary adds up the caller's transactions created at or after since
// (the zero time: all of them): their number, how many are in each
// status, and per currency how many there are and the sum of their
// captured amounts. It reads what List reads: the caller's tenant's
// transactions of no organization and of the organizations the scope may
// read (store.Scope.Readable), never another tenant's. Statuses are the
// current ones: a payment created in the window and refunded since counts
// as refunded, with its captured amount still received. since is
// compared with the creation times at the microsecond the database keeps
// (a finer since is rounded up, so "at or after" holds exactly). No scope
// in ctx is an error wrapping store.ErrNoScope.
func (s *Service) Summary(ctx context.Context, since time.Time) (*Summary, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	groups, err := s.store.Summarize(ctx, s.db, sc, microsecondCeil(since))
	if err != nil {
		return nil, err
	}
	return summarize(groups), nil
}

// summarize adds up a store's groups.
func summarize(groups []SummaryGroup) *Summary {
	out := &Summary{ByStatus: map[string]int{}, Received: []CurrencyAmount{}}
	byCurrency := map[string]int{} // index in out.Received
	for _, g := range groups {
		out.Total += g.Count
		out.ByStatus[string(g.Status)] += g.Count
		i, ok := byCurrency[g.Currency]
		if !ok {
			i = len(out.Received)
			byCurrency[g.Currency] = i
			out.Received = append(out.Received, CurrencyAmount{CurrencyCode: g.Currency})
		}
		out.Received[i].Count += g.Count
		out.Received[i].AmountMinor += g.Captured
	}
	slices.SortFunc(out.Received, func(a, b CurrencyAmount) int { return cmp.Compare(a.CurrencyCode, b.CurrencyCode) })
	for i := range out.Received {
		r := &out.Received[i]
		r.Amount = FormatAmount(r.AmountMinor, r.CurrencyCode)
	}
	return out
}

// microsecondCeil is t in UTC, rounded up to the microsecond (the
// precision of stored times on both engines).
func microsecondCeil(t time.Time) time.Time {
	t = t.UTC()
	if down := t.Truncate(time.Microsecond); down.Before(t) {
		return down.Add(time.Microsecond)
	}
	return t.Truncate(time.Microsecond)
}
