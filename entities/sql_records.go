package entities

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/internal/jsondec"
	"github.com/tenantkit/tenantkit/store"
)

const recordColumns = `id, entity_id, data, tenant_id, COALESCE(organization_id, ''), created_at, updated_at, deleted_at`

func scanRecord(s store.Scanner) (*Record, error) {
	var r Record
	var data string
	if err := s.Scan(&r.ID, &r.EntityID, &data, &r.TenantID, &r.OrganizationID, &r.CreatedAt, &r.UpdatedAt, &r.DeletedAt); err != nil {
		return nil, err
	}
	return &r, decodeValues(data, &r.Values)
}

// decodeValues reads a record's stored values: in one pass without
// reflection (jsondec), or, for what that declines, with encoding/json.
func decodeValues(data string, values *map[string]any) error {
	if m, ok := jsondec.Object([]byte(data)); ok {
		*values = m
		return nil
	}
	return json.Unmarshal([]byte(data), values)
}

// PrepareInserts implements Store: it has the statements of batches of
// records prepared (engineSQL.prepare) before a transaction takes the
// writer (SQLite parses a 50-row INSERT in about the time it runs it).
func (*SQLStore) PrepareInserts(ctx context.Context, db *store.DB) {
	if eng, err := engineOf(db); err == nil && eng.prepare != nil {
		eng.prepare(ctx, db)
	}
}

// InsertRecords implements Store. The records are of one entity, or each
// counted under its own. The records are inserted first: the INSERT takes
// the lock countsFor would take (Dialect.LockForWrites), so the
// filterable keys read after it (countsInserted) are those the counts
// must follow, without a statement of its own for the lock.
func (*SQLStore) InsertRecords(ctx context.Context, q store.Querier, records []*Record) error {
	eng, err := engineOf(q)
	if err != nil {
		return err
	}
	rows := make([]recordRow, len(records))
	for i, r := range records {
		data, err := valuesJSON(r.Values)
		if err != nil {
			return err
		}
		rows[i] = recordRow{id: r.ID, tenantID: r.TenantID, orgID: r.OrganizationID, entityID: r.EntityID, data: data,
			createdAt: r.CreatedAt, updatedAt: r.UpdatedAt}
	}
	if err := eng.insertRecords(ctx, q, rows); err != nil {
		return err
	}
	byEntity := map[string]*countDeltas{}
	var entityOrder []string
	for _, r := range records {
		counts := byEntity[r.EntityID]
		if counts == nil {
			var err error
			if counts, err = countsInserted(ctx, q, r.EntityID); err != nil {
				return err
			}
			byEntity[r.EntityID] = counts
			entityOrder = append(entityOrder, r.EntityID)
		}
		counts.add(r.Values, r.OrganizationID, 1)
	}
	for _, id := range entityOrder {
		// One tenant per call: the Service writes in one scope.
		if err := byEntity[id].flush(ctx, q, records[0].TenantID, id); err != nil {
			return err
		}
	}
	return nil
}

// GetRecord implements Store.
func (*SQLStore) GetRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, withDeleted bool) (*Record, error) {
	return readRecord(ctx, q, sc, entityID, recordID, withDeleted, "")
}

// lockRecord is GetRecord of a live record for a transaction that changes
// it: where writers run concurrently the row stays locked until the
// transaction ends (Dialect.ForUpdate), so that concurrent changes of one
// record apply one after the other, each to the other's result (and a
// record deleted meanwhile is not found). SQLite's single writer does
// that already.
func lockRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string) (*Record, error) {
	return readRecord(ctx, q, sc, entityID, recordID, false, q.Dialect().ForUpdate())
}

func readRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, withDeleted bool, lock string) (*Record, error) {
	c := sc.Readable("tenant_id", "organization_id")
	c.And("entity_id = ?", entityID)
	c.And("id = ?", recordID)
	if !withDeleted {
		c.And("deleted_at IS NULL")
	}
	return store.One(ctx, q, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE `+c.SQL()+lock, c.Values()...)
}

// changeRecord starts a change of a live record: it locks the record
// (lockRecord, after countsFor's lock) and returns it with count changes
// that uncount its values.
func changeRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string) (*Record, *countDeltas, error) {
	counts, err := countsFor(ctx, q, entityID)
	if err != nil {
		return nil, nil, err
	}
	r, err := lockRecord(ctx, q, sc, entityID, recordID)
	if err != nil {
		return nil, nil, err
	}
	counts.add(r.Values, r.OrganizationID, -1)
	return r, counts, nil
}

// UpdateRecord implements Store, moving the record's counts from its old
// values to its new ones.
func (*SQLStore) UpdateRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string,
	change func(r *Record) error) (*Record, error) {
	r, counts, err := changeRecord(ctx, q, sc, entityID, recordID)
	if err != nil {
		return nil, err
	}
	if err := change(r); err != nil {
		return nil, err
	}
	data, err := valuesJSON(r.Values)
	if err != nil {
		return nil, err
	}
	if err := store.ExecOne(ctx, q, `UPDATE custom_entity_records SET data = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2`,
		r.TenantID, r.ID, data, r.UpdatedAt); err != nil {
		return nil, err
	}
	counts.add(r.Values, r.OrganizationID, 1)
	return r, counts.flush(ctx, q, r.TenantID, entityID)
}

// DeleteRecord implements Store, uncounting the record's values.
func (*SQLStore) DeleteRecord(ctx context.Context, q store.Querier, sc store.Scope, entityID, recordID string, now time.Time) (*Record, error) {
	r, counts, err := changeRecord(ctx, q, sc, entityID, recordID)
	if err != nil {
		return nil, err
	}
	r.DeletedAt, r.UpdatedAt = &now, now
	if err := store.ExecOne(ctx, q, `UPDATE custom_entity_records SET deleted_at = $3, updated_at = $3 WHERE tenant_id = $1 AND id = $2`,
		r.TenantID, r.ID, now); err != nil {
		return nil, err
	}
	return r, counts.flush(ctx, q, r.TenantID, entityID)
}

// ListRecords implements Store, in one statement: the page's rows each
// carry the total (totalExpr), so that a list costs one round trip and
// needs no transaction (only an empty page reads its total apart).
func (*SQLStore) ListRecords(ctx context.Context, q store.Querier, sc store.Scope, l RecordList) ([]*Record, int, error) {
	return listRecords(ctx, q, sc, l, scanRecordAfter)
}

// listRecordsJSON is ListRecords with each record's values left as the
// stored JSON (Service.ListRecordsJSON).
func (*SQLStore) listRecordsJSON(ctx context.Context, q store.Querier, sc store.Scope, l RecordList) ([]ListedRecord, int, error) {
	return listRecords(ctx, q, sc, l, scanListedAfter)
}

// listRecords runs ListRecords' statement, each row read by scan after
// its leading total column (into n).
func listRecords[T any](ctx context.Context, q store.Querier, sc store.Scope, l RecordList,
	scan func(s store.Scanner, n *int64) (T, error)) ([]T, int, error) {
	d := q.Dialect()
	c := sc.Readable("tenant_id", "organization_id")
	// The entity id is written into the statement (a checked identifier),
	// as in the filterable indexes' predicate, so that the engines can use
	// those partial indexes.
	c.And("entity_id = '" + l.EntityID + "'")
	if !l.WithDeleted {
		c.And("deleted_at IS NULL")
	}
	for _, f := range l.Filters {
		if f.Multi && (f.Op == OpEq || f.Op == OpIn) {
			// A list value matches when it holds any of the values (no
			// index serves this).
			anyOf := make([]string, len(f.Values))
			args := make([]any, len(f.Values))
			for i, x := range f.Values {
				anyOf[i], args[i] = d.JSONListHas("data", f.Key, "?", x)
			}
			c.And("("+strings.Join(anyOf, " OR ")+")", args...)
			continue
		}
		// Filters compare the indexed form of the value (indexedExpr), but
		// equality with a value too long for PostgreSQL's index.
		indexed := indexedExpr(q, f.Key)
		switch f.Op {
		case OpEq, OpIn:
			marks := make([]string, len(f.Values))
			args := make([]any, len(f.Values))
			expr := indexed
			for i, x := range f.Values {
				p, cast := d.JSONValueArg(x)
				marks[i], args[i] = "?"+cast, p
				if !shortFilterValue(x) {
					expr = valueExpr(q, f.Key)
				}
			}
			if len(marks) == 1 {
				c.And(expr+" = "+marks[0], args...)
			} else {
				c.And(expr+" IN ("+strings.Join(marks, ", ")+")", args...)
			}
		case OpGt, OpGte, OpLt, OpLte:
			op := map[string]string{OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}[f.Op]
			p, cast := d.JSONValueArg(f.Values[0])
			c.And(indexed+" "+op+" ?"+cast, p)
		}
	}
	if len(l.IDs) > 0 {
		marks := make([]string, len(l.IDs))
		for i, id := range l.IDs {
			marks[i] = c.Add(id)
		}
		c.And("id IN (" + strings.Join(marks, ", ") + ")")
	}
	if l.Search != "" {
		c.And(d.JSONValuesContainFold("data", "?"), store.LikeContains(store.FoldCase(l.Search)))
	}
	// The total is a scalar subquery of the page's statement, so that the
	// page and its total are one statement: one round trip, one snapshot.
	// Its own conditions take placeholders after the page's.
	where := c.SQL()
	k := withArgs(c)
	total, _ := totalExpr(ctx, q, sc, k, l, where)
	page := ""
	switch {
	case l.Limit <= 0:
	case len(l.Filters) > 0 || len(l.IDs) > 0 || l.Search != "":
		// A filtered list keeps its page size a parameter, as the
		// unfiltered one did before: PostgreSQL then weighs a plan for
		// each run's values against a kept generic one, where a literal
		// page size would have it keep the generic plan, and a rare
		// value and a common one want different plans.
		page = " LIMIT " + k.Add(l.Limit) + " OFFSET " + k.Add(l.Offset)
	default:
		eng, err := engineOf(q)
		if err != nil {
			return nil, 0, err
		}
		page = eng.page(k, l.Limit, l.Offset)
	}
	var n int64
	items, err := store.Many(ctx, q, func(s store.Scanner) (T, error) {
		return scan(s, &n)
	}, `SELECT `+total+`, `+recordColumns+` FROM custom_entity_records WHERE `+where+
		recordOrder(q, l.SortField, l.SortDesc)+page, k.Values()...)
	if err != nil || len(items) > 0 {
		return items, int(n), err
	}
	// An empty page has no row to carry the total: it is read alone, with
	// the page's arguments only where it counts the page's matches.
	k = &store.Conds{}
	total, usesWhere := totalExpr(ctx, q, sc, k, l, where)
	if usesWhere {
		k = withArgs(c)
		total, _ = totalExpr(ctx, q, sc, k, l, where)
	}
	err = q.QueryRow(ctx, `SELECT `+total, k.Values()...).Scan(&n)
	return items, int(n), err
}

// withArgs returns conditions holding a copy of c's arguments (none of
// its fragments), whose placeholders continue c's.
func withArgs(c *store.Conds) *store.Conds {
	k := &store.Conds{}
	for _, v := range c.Values() {
		k.Add(v)
	}
	return k
}

// totalExpr returns the SQL expression of l's exact total, whose
// arguments it adds to k, and whether it uses where, the list's WHERE
// clause (whose placeholders must then be k's first). A list with no
// condition takes its total from the live-record counts, one with one
// equality or In filter on a filterable field and no other condition from
// the value counts, falling back to counting the records when the key is
// not (or no longer) filterable (sql_counts.go); others count their
// matches.
func totalExpr(ctx context.Context, q store.Querier, sc store.Scope, k *store.Conds, l RecordList, where string) (string, bool) {
	count := `(SELECT count(*) FROM custom_entity_records WHERE ` + where + `)`
	if l.Search != "" {
		// A search counts at most store.SearchCap(ctx)+1 matches.
		return store.CountCappedExpr(ctx, `FROM custom_entity_records WHERE `+where), true
	}
	if l.WithDeleted || len(l.IDs) > 0 {
		return count, true
	}
	if len(l.Filters) == 0 {
		return liveTotalExpr(sc, k, l.EntityID), false
	}
	if len(l.Filters) == 1 {
		f := l.Filters[0]
		if (f.Op == OpEq || f.Op == OpIn) && !f.Multi && f.Filterable {
			if counted, ok := countedTotalExpr(q.Dialect(), sc, k, l.EntityID, f.Key, f.Values); ok {
				return `(CASE WHEN ` + counted[0] + ` THEN ` + counted[1] + ` ELSE ` + count + ` END)`, true
			}
		}
	}
	return count, true
}

// scanRecordAfter scans a record after a leading count column (into n).
func scanRecordAfter(s store.Scanner, n *int64) (*Record, error) {
	r, err := scanListedAfter(s, n)
	if err != nil {
		return nil, err
	}
	rec := r.Record
	return &rec, decodeValues(r.ValuesJSON, &rec.Values)
}

// scanListedAfter scans a record after a leading count column (into n),
// its values left as the stored JSON.
func scanListedAfter(s store.Scanner, n *int64) (ListedRecord, error) {
	var r ListedRecord
	err := s.Scan(n, &r.ID, &r.EntityID, &r.ValuesJSON, &r.TenantID, &r.OrganizationID, &r.CreatedAt, &r.UpdatedAt, &r.DeletedAt)
	return r, err
}

// recordOrder returns the ORDER BY clause of a sort field and direction.
// A list reads its page in the orders without a field from an index of
// that order, from either end: by id from custom_entity_records_list_idx,
// by createdAt or updatedAt (live records) from migration 0007's (tenant,
// entity, the column, id); in a filterable field's order from that
// field's index (sql_filterable.go). Page 1 reads one page of index
// entries whatever the entity's size.
func recordOrder(q store.Querier, field string, desc bool) string {
	d := " ASC"
	if desc {
		d = " DESC"
	}
	switch field {
	case "", "id":
		return " ORDER BY id" + d
	case "createdAt":
		return " ORDER BY created_at" + d + ", id" + d
	case "updatedAt":
		return " ORDER BY updated_at" + d + ", id" + d
	}
	// Records without the value come first ascending and last descending,
	// on both engines (SQLite's own order; the PostgreSQL indexes are
	// built NULLS FIRST to match).
	nulls := " NULLS FIRST"
	if desc {
		nulls = " NULLS LAST"
	}
	return " ORDER BY " + indexedExpr(q, field) + d + nulls + ", id" + d
}

// RecordsAfter implements Store.
func (*SQLStore) RecordsAfter(ctx context.Context, q store.Querier, sc store.Scope, entityID, afterID, search string, limit int) ([]*Record, error) {
	c := sc.Readable("tenant_id", "organization_id")
	c.And("entity_id = ?", entityID)
	c.And("deleted_at IS NULL")
	if afterID != "" {
		c.And("id > ?", afterID)
	}
	if search != "" {
		c.And(q.Dialect().JSONValuesContainFold("data", "?"), store.LikeContains(store.FoldCase(search)))
	}
	return store.Many(ctx, q, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE `+c.SQL()+
		` ORDER BY id LIMIT `+c.Add(limit), c.Values()...)
}
