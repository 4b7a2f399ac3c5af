package store

import (
	"context"
	"strconv"

	"github.com/tenantkit/tenantkit/internal/searchcap"
)

// SearchTotalCap is how many matches a list's total counts at most where
// the list is filtered by a free-text search. A search is a substring
// match that, unless its area indexes it (the attachments library's file
// names), no index serves, so counting every match reads every row the
// search selects (or, for a term that matches few, every row of the
// tenant): 0.8 s on PostgreSQL and 2.6 s on SQLite at 1,000,000 rows.
// Counting stops after SearchTotalCap+1 matches instead; when more match,
// the list reports SearchTotalCap as its total and says that it is capped
// (the HTTP responses' "totalCapped": true). Lists without a search keep
// exact totals.
const SearchTotalCap = 10000

// SearchCap returns the cap in force for a list called with ctx:
// SearchTotalCap, unless a test lowered it (storetest.WithSearchCap).
func SearchCap(ctx context.Context) int { return searchcap.Get(ctx, SearchTotalCap) }

// CountCapped counts the rows of from (the query's text after "SELECT 1",
// such as "FROM t WHERE …", with its arguments args), stopping after
// SearchCap(ctx)+1 of them: a total above SearchCap(ctx) means that more
// than SearchCap(ctx) rows match (CapTotal turns it into the capped
// total).
func CountCapped(ctx context.Context, q Querier, from string, args ...any) (int, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT `+CountCappedExpr(ctx, from), args...).Scan(&n)
	return int(n), err
}

// CountCappedExpr is CountCapped's count as a scalar subquery, for a
// statement that reads it beside other columns: "(SELECT count(*) FROM
// (SELECT 1 from LIMIT cap+1) …)". The LIMIT lets the engine stop reading
// rows after cap+1 matches.
func CountCappedExpr(ctx context.Context, from string) string {
	return `(SELECT count(*) FROM (SELECT 1 ` + from + ` LIMIT ` + strconv.Itoa(SearchCap(ctx)+1) + `) capped)`
}

// CapTotal turns a list's total into the total it reports and whether
// that is capped. searched says whether the list had a free-text search
// (its total then counted by CountCapped): if so and more than
// SearchCap(ctx) rows matched, it returns SearchCap(ctx) and true.
// Otherwise the total is exact and returned unchanged, with false.
func CapTotal(ctx context.Context, total int, searched bool) (int, bool) {
	if c := SearchCap(ctx); searched && total > c {
		return c, true
	}
	return total, false
}
