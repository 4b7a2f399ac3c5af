package store

import "context"

// SearchIndex is how a free-text search reads its candidates from an
// index of an area's own (see "Search totals" in the package
// documentation): From, the FROM clause that reads the area's rows
// through the index, and Cond, the condition that selects the indexed
// candidates, each '?' in it taking the next of Args. The candidates must
// include every row the search's own predicate selects (they may include
// more); the predicate still decides.
//
// Scoped says that the candidates are the search's tenant's (and, in an
// area that lists by more, of that part) only, as an index that holds the
// tenant beside the text selects them: CountCandidates then counts the
// matches in one statement that stops after SearchCap(ctx)+1 of them,
// without a candidate budget.
type SearchIndex struct {
	From, Cond string
	Args       []any
	Scoped     bool
}

// CountCandidates counts the rows c (the search's whole predicate: the
// tenant, the search and any other condition) selects among ix's
// candidates, reading at most 2×(SearchCap(ctx)+1) candidates: an index
// may hold every tenant's rows, so a term common in other tenants' rows
// can have many candidates before this tenant's. It returns the count (at
// most SearchCap(ctx)+1, as CountCapped's) and true, or false when the
// candidates ran out before the count was known: the search then counts
// by reading its rows as without the index, which stops early for a
// common term. A Scoped index's candidates are counted in one statement
// instead (CountCapped over the candidates and c), and never run out. It
// adds ix's and its own arguments to c's.
func CountCandidates(ctx context.Context, q Querier, c *Conds, ix SearchIndex) (int, bool, error) {
	if ix.Scoped {
		where := c.bind("CountCandidates", ix.Cond, ix.Args)
		n, err := CountCapped(ctx, q, `FROM `+ix.From+` WHERE `+where+` AND `+c.SQL(), c.Values()...)
		return n, err == nil, err
	}
	limit := SearchCap(ctx) + 1
	budget := 2 * limit
	where := c.bind("CountCandidates", ix.Cond, ix.Args)
	rows, err := q.Query(ctx, `SELECT CASE WHEN `+c.SQL()+` THEN 1 ELSE 0 END FROM `+ix.From+` WHERE `+where+` LIMIT `+c.Add(budget),
		c.Values()...)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	candidates, hits := 0, 0
	for hits < limit && rows.Next() {
		var hit int
		if err := rows.Scan(&hit); err != nil {
			return 0, false, err
		}
		candidates++
		if hit == 1 {
			hits++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	return hits, hits >= limit || candidates < budget, rows.Close()
}

// DenseMatches says whether a page ending at pageEnd (offset + limit) of
// a search whose matches CountCandidates counted (total) is expected to
// be read sooner in the list's order, testing each row, than from every
// one of the total indexed candidates: when the total is capped (above
// SearchCap(ctx)), or when the rows read in order until pageEnd matches
// (pageEnd times rows over total, the matches spread evenly) are fewer
// than the matches. rows returns how many rows the list reads without
// the search (the tenant's); it is called only when needed.
func DenseMatches(ctx context.Context, total, pageEnd int, rows func() (int, error)) (bool, error) {
	if total > SearchCap(ctx) {
		return true, nil
	}
	if total <= pageEnd {
		return false, nil
	}
	n, err := rows()
	return pageEnd*n < total*total, err
}
