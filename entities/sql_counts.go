package entities

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// Value counts: how many live records of a tenant's entity hold each value
// of a filterable field, by organization. A list filtered by equality (or
// In) on one filterable field takes its exact total from them, so that
// the total of a value held by 10,000 records costs what the total of one
// held by 10 does; counting the matches instead grows with their number
// (see doc.go). They are written in the transaction of every record
// write, and rebuilt or dropped with the field's index (sql_filterable.go).
//
// Only scalar values are counted (numbers, booleans, and text of at most
// maxCountedText bytes, which the counts' key can hold): a filter by
// another value counts the records.

// countSlots spreads one value's count over several rows where writers
// run concurrently (PostgreSQL), each transaction adding to one chosen at
// random, so that concurrent writers of the same value seldom wait for
// each other's commit. A single writer (SQLite; Dialect.SingleWriter)
// uses one row.
const countSlots = 8

// maxCountedText bounds the text values counted (bytes).
const maxCountedText = 1500

// filterableKeys returns the keys of entityID's fields that are
// filterable at some scope (and so have an index and counts), as q sees
// them.
func filterableKeys(ctx context.Context, q store.Querier, entityID string) ([]string, error) {
	return store.Many(ctx, q, func(sc store.Scanner) (string, error) {
		var k string
		return k, sc.Scan(&k)
	}, `SELECT field_key FROM custom_entity_filterable_fields WHERE entity_id = $1 ORDER BY field_key`, entityID)
}

// countedValue returns x's canonical text (equal for values the engines
// compare equal) and the parameter the counts table stores, or ok false
// for a value that is not counted.
func countedValue(d store.Dialect, x any) (canon string, param any, ok bool) {
	switch v := x.(type) {
	case string:
		if len(v) > maxCountedText {
			return "", nil, false
		}
	case bool:
	case float64:
		if v == 0 {
			x = 0.0 // -0 equals 0 in both engines
		}
	case int:
		x = float64(v)
	case int64:
		x = float64(v)
	default:
		return "", nil, false
	}
	b, err := appendJSONValue(nil, x) // json.Marshal(x)
	if err != nil {
		return "", nil, false
	}
	param, _ = d.JSONValueArg(x)
	return string(b), param, true
}

type countKey struct{ key, value, org string }

type countDelta struct {
	param any
	n     int64
}

// countDeltas gathers one transaction's changes to the counts of an
// entity's values, to be written at once by flush.
type countDeltas struct {
	dialect store.Dialect
	keys    []string
	m       map[countKey]*countDelta
}

func newCountDeltas(dialect store.Dialect, keys []string) *countDeltas {
	return &countDeltas{dialect: dialect, keys: keys, m: map[countKey]*countDelta{}}
}

// liveKey is the field key of the live-record counts: every live record
// counts once under it (with the value true), whatever its fields, so
// that an unfiltered list's exact total is a sum of a few rows instead of
// a count of the entity's records. No field key is empty.
const liveKey = ""

// add counts (sign +1) or uncounts (-1) a record: once under liveKey, and
// its values of the filterable keys, for the record's organization.
func (d *countDeltas) add(values map[string]any, org string, sign int64) {
	live, param, _ := countedValue(d.dialect, true)
	d.bump(countKey{liveKey, live, org}, param, sign)
	for _, k := range d.keys {
		canon, param, ok := countedValue(d.dialect, values[k])
		if !ok {
			continue
		}
		d.bump(countKey{k, canon, org}, param, sign)
	}
}

// bump adds sign to the count of ck.
func (d *countDeltas) bump(ck countKey, param any, sign int64) {
	if c := d.m[ck]; c != nil {
		c.n += sign
	} else {
		d.m[ck] = &countDelta{param: param, n: sign}
	}
}

// countRowsIn adds to c the predicate of the count rows of entityID's
// key that sc may read: its tenant's, of no organization or of one it
// reads.
func countRowsIn(c *store.Conds, sc store.Scope, entityID, key string) *store.Conds {
	c.And("tenant_id = ?", sc.TenantID)
	c.And("entity_id = ?", entityID)
	c.And("field_key = ?", key)
	if sc.OrganizationIDs != nil {
		orgs := []string{c.Add("")}
		for _, id := range sc.OrganizationIDs {
			orgs = append(orgs, c.Add(id))
		}
		c.And("organization_id IN (" + strings.Join(orgs, ", ") + ")")
	}
	return c
}

// liveTotalExpr is the SQL expression of the number of the caller's live
// records of entityID, from the live-record counts; its arguments go to
// args (whose placeholders it continues).
func liveTotalExpr(sc store.Scope, args *store.Conds, entityID string) string {
	c := countRowsIn(&store.Conds{Args: args.Args}, sc, entityID, liveKey)
	args.Args = c.Args
	return `(SELECT COALESCE(SUM(n), 0) FROM custom_entity_value_counts WHERE ` + c.SQL() + `)`
}

// countRow is one count change of countDeltas.flush: n added to the
// count of (key, value, org), value as the engine binds it
// (Dialect.JSONValueArg).
type countRow struct {
	key   string
	value any
	org   string
	n     int64
}

// flush writes the gathered changes for (tenantID, entityID), in key
// order (so that concurrent transactions lock shared rows in one order).
func (d *countDeltas) flush(ctx context.Context, q store.Querier, tenantID, entityID string) error {
	keys := make([]countKey, 0, len(d.m))
	for k, c := range d.m {
		if c.n != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.value, b.value), strings.Compare(a.org, b.org))
	})
	slot := 0
	if !d.dialect.SingleWriter() {
		slot = rand.IntN(countSlots)
	}
	rows := make([]countRow, len(keys))
	for i, k := range keys {
		c := d.m[k]
		rows[i] = countRow{key: k.key, value: c.param, org: k.org, n: c.n}
	}
	eng, err := engineOf(q)
	if err != nil {
		return err
	}
	return eng.addCounts(ctx, q, tenantID, entityID, slot, rows)
}

// countedTotalExpr returns the SQL of the number of the caller's live
// records of entityID whose key holds one of values, from the counts: a
// condition that key is filterable (has counts) and the sum of its
// counts, whose arguments go to args (whose placeholders they continue).
// ok is false when a value is not counted: the caller counts the records
// instead, as it does when the condition is false.
func countedTotalExpr(dialect store.Dialect, sc store.Scope, args *store.Conds, entityID, key string, values []any) (sql [2]string, ok bool) {
	_, cast := dialect.JSONValueArg("")
	seen := map[string]bool{}
	c := countRowsIn(&store.Conds{Args: args.Args}, sc, entityID, key)
	var marks []string
	for _, x := range values {
		canon, param, counted := countedValue(dialect, x)
		if !counted {
			return sql, false
		}
		if seen[canon] {
			continue
		}
		seen[canon] = true
		marks = append(marks, c.Add(param)+cast)
	}
	c.And("value IN (" + strings.Join(marks, ", ") + ")")
	filterable := c.Add(entityID)
	filterableKey := c.Add(key)
	args.Args = c.Args
	return [2]string{`EXISTS (SELECT 1 FROM custom_entity_filterable_fields WHERE entity_id = ` + filterable +
		` AND field_key = ` + filterableKey + `)`,
		`(SELECT COALESCE(SUM(n), 0) FROM custom_entity_value_counts WHERE ` + c.SQL() + `)`}, true
}

// rebuildCounts recounts (entityID, key)'s values over every tenant's live
// records; dropCounts forgets them.
func rebuildCounts(ctx context.Context, q store.Querier, entityID, key string) error {
	if err := dropCounts(ctx, q, entityID, key); err != nil {
		return err
	}
	// Keys are checked identifiers, written into the statement as in the
	// indexes (sql_filterable.go).
	value := valueExpr(q, key)
	// The values countedValue counts.
	scalar := q.Dialect().JSONScalar("data", key, maxCountedText)
	_, err := q.Exec(ctx, `INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
		SELECT tenant_id, entity_id, '`+key+`', `+value+`, COALESCE(organization_id, ''), 0, count(*) FROM custom_entity_records
		WHERE entity_id = $1 AND deleted_at IS NULL AND `+scalar+`
		GROUP BY tenant_id, entity_id, `+value+`, COALESCE(organization_id, '')`, entityID)
	return err
}

func dropCounts(ctx context.Context, q store.Querier, entityID, key string) error {
	_, err := q.Exec(ctx, `DELETE FROM custom_entity_value_counts WHERE entity_id = $1 AND field_key = $2`, entityID, key)
	return err
}

// countsFor starts a record write's count changes with the entity's
// filterable keys. It first takes the lock a write of
// custom_entity_records takes (Dialect.LockForWrites; SQLite's writer
// holds it already): a definition change making a key filterable holds a lock
// conflicting with it while it builds the key's index and counts
// (syncFilterableIndex), so a record write either commits before that
// change starts (and the rebuild counts it) or reads the key after it
// commits (and counts itself).
func countsFor(ctx context.Context, q store.Querier, entityID string) (*countDeltas, error) {
	if lock := q.Dialect().LockForWrites("custom_entity_records"); lock != "" {
		if _, err := q.Exec(ctx, lock); err != nil {
			return nil, err
		}
	}
	keys, err := filterableKeys(ctx, q, entityID)
	if err != nil {
		return nil, err
	}
	return newCountDeltas(q.Dialect(), keys), nil
}

// definitionsVersionRead is the key (store.Tx.SetValue) under which
// countsInserted leaves the definitions' version it read, for the
// Service's check of a batch of creates (writeCreates).
type definitionsVersionRead struct{}

// countsInserted is countsFor in a transaction that has just inserted
// records of entityID, and so holds the lock countsFor takes. The one
// statement that reads the filterable keys also reads the definitions'
// version counter, from the same snapshot, and leaves it in q when q is a
// transaction (definitionsVersionRead): a batch of creates needs it, and
// reading it here saves the batch a round trip.
func countsInserted(ctx context.Context, q store.Querier, entityID string) (*countDeltas, error) {
	var version int64
	keys, err := store.Many(ctx, q, func(sc store.Scanner) (string, error) {
		var k *string
		if err := sc.Scan(&version, &k); err != nil || k == nil {
			return "", err
		}
		return *k, nil
	}, `SELECT COALESCE((SELECT version FROM store_versions WHERE name = $2), 0), f.field_key
		FROM (SELECT 1 AS one) AS o LEFT JOIN custom_entity_filterable_fields AS f ON f.entity_id = $1
		ORDER BY f.field_key`, entityID, versionCounter)
	if err != nil {
		return nil, err
	}
	if len(keys) == 1 && keys[0] == "" { // no filterable key: the one row's key is NULL
		keys = nil
	}
	if tx, ok := q.(*store.Tx); ok {
		tx.SetValue(definitionsVersionRead{}, version)
	}
	return newCountDeltas(q.Dialect(), keys), nil
}
