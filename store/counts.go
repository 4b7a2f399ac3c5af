package store

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
)

// CountSlots is how many rows one key's count is spread over where
// writers run concurrently (PostgreSQL): a transaction writes to one
// chosen at random, so that concurrent writers of the same key seldom wait
// for each other's commit. A single writer (SQLite; Dialect.SingleWriter)
// uses one row.
const CountSlots = 8

// Counts is a table of kept counts: how many rows of another table have
// each key (a few text columns, such as a tenant, an organization and the
// values a list filters by), written by the transactions that write those
// rows, so that a list's exact total is the sum of a few count rows
// instead of a count of the rows it selects, which grows with them.
//
// The table has the key columns, slot (an integer) and n (BIGINT), with
// the key columns and slot its primary key. A key's count is the sum of
// its rows' n. Rows whose n fell to 0 stay.
type Counts struct {
	table  string
	keys   []string
	insert *BatchInsert
}

// NewCounts returns the counts kept in table by the key columns keys (in
// the order CountDelta.Key lists them). The names are ours, never input.
func NewCounts(table string, keys ...string) *Counts {
	cols := strings.Join(keys, ", ")
	return &Counts{table: table, keys: keys, insert: NewBatchInsert(table, cols+", slot, n",
		"ON CONFLICT ("+cols+", slot) DO UPDATE SET n = "+table+".n + excluded.n")}
}

// CountDelta is a change of one key's count: N added (negative: taken).
type CountDelta struct {
	// Key is the key columns' values, in the order NewCounts named them.
	Key []string
	// N is added to the key's count.
	N int64
}

// Add writes deltas in q's transaction: those of one key summed, the
// zeros dropped, in key order (so that concurrent transactions lock shared
// rows in one order), all on the slot the transaction writes its counts
// to. Every key has as many values as the table has key columns.
func (c *Counts) Add(ctx context.Context, q Querier, deltas ...CountDelta) error {
	merged := make([]CountDelta, 0, len(deltas))
	for _, d := range deltas {
		if len(d.Key) != len(c.keys) {
			panic("store: Counts.Add: a key of " + c.table + " has the wrong number of values")
		}
		if i := slices.IndexFunc(merged, func(m CountDelta) bool { return slices.Equal(m.Key, d.Key) }); i >= 0 {
			merged[i].N += d.N
		} else {
			merged = append(merged, d)
		}
	}
	merged = slices.DeleteFunc(merged, func(d CountDelta) bool { return d.N == 0 })
	if len(merged) == 0 {
		return nil
	}
	slices.SortFunc(merged, func(a, b CountDelta) int { return slices.Compare(a.Key, b.Key) })
	slot := 0
	if !q.Dialect().SingleWriter() {
		slot = countSlot(q)
	}
	values := make([]any, 0, len(merged)*(len(c.keys)+2))
	for _, d := range merged {
		for _, k := range d.Key {
			values = append(values, k)
		}
		values = append(values, slot, d.N)
	}
	_, err := c.insert.InsertValues(ctx, q, values)
	return err
}

// Slot is the slot Add writes q's deltas to: 0 with a single writer,
// else the one q's transaction writes all its counts to. For an engine's
// own statement writing a table's counts beside other rows (Add's
// guarantees then are the caller's: deltas summed per key, written in key
// order, on this slot).
func (c *Counts) Slot(q Querier) int {
	if q.Dialect().SingleWriter() {
		return 0
	}
	return countSlot(q)
}

// countSlotKey keeps a transaction's count slot (Tx.SetValue).
type countSlotKey struct{}

// countSlot returns the slot q's count rows go to: one chosen at random
// for the whole transaction when q is one, so that two transactions that
// each add to a key and later take from it (a row inserted, then its
// status changed) never hold each other's slots of that key in opposite
// orders, a deadlock PostgreSQL would detect only after its
// deadlock_timeout.
func countSlot(q Querier) int {
	tx, ok := q.(*Tx)
	if !ok {
		return rand.IntN(CountSlots)
	}
	if slot, ok := tx.Value(countSlotKey{}).(int); ok {
		return slot
	}
	slot := rand.IntN(CountSlots)
	tx.SetValue(countSlotKey{}, slot)
	return slot
}

// Prepare has Add's statements prepared (BatchInsert.Prepare) before a
// transaction takes the writer; a failure only costs speed.
func (c *Counts) Prepare(ctx context.Context, db *DB) { c.insert.Prepare(ctx, db) }

// Sum returns the sum of the counts of the rows where selects (its
// columns being the table's key columns, unqualified).
func (c *Counts) Sum(ctx context.Context, q Querier, where *Conds) (int, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT COALESCE(SUM(n), 0) FROM `+c.table+` WHERE `+where.SQL(), where.Values()...).Scan(&n)
	return int(n), err
}

// ReadableCounted is Readable for a table that stores "no organization"
// as the empty text rather than NULL (as Counts' keys do): the tenant's
// rows of no organization or of one the scope may read.
func (s Scope) ReadableCounted(tenantCol, orgCol string) *Conds {
	c := Where(tenantCol+" = ?", s.TenantID)
	if s.OrganizationIDs != nil {
		orgs := []string{c.Add("")}
		for _, id := range s.OrganizationIDs {
			orgs = append(orgs, c.Add(id))
		}
		c.And(orgCol + " IN (" + strings.Join(orgs, ", ") + ")")
	}
	return c
}
