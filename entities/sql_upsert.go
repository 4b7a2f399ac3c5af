package entities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// The batch writes of an upsert (Service.UpsertRecordsTx): the records of
// a batch's ids read and locked with one statement (LockRecords), the
// changed ones written with one (PostgreSQL) or a few prepared ones
// (SQLite), their value counts with one upsert per batch (UpdateRecords).

// recordRow is one record as engineSQL.insertRecords and updateRecords
// write it (updateRecords: tenantID, id, data and updatedAt).
type recordRow struct {
	id, tenantID, orgID, entityID, data string
	createdAt, updatedAt                time.Time
}

// LockRecords implements Store. It first takes the lock every record
// write takes (countsFor's; Dialect.LockForWrites), as changeRecord does
// before it locks its record, then reads the rows in id order, locking
// them where writers run concurrently (Dialect.ForUpdate).
func (*SQLStore) LockRecords(ctx context.Context, q store.Querier, tenantID string, ids []string) ([]*Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	eng, err := engineOf(q)
	if err != nil {
		return nil, err
	}
	if lock := q.Dialect().LockForWrites("custom_entity_records"); lock != "" {
		if _, err := q.Exec(ctx, lock); err != nil {
			return nil, err
		}
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(ids)))
	list, err := eng.idList(sorted)
	if err != nil {
		return nil, err
	}
	return store.Many(ctx, q, scanRecord, `SELECT `+recordColumns+` FROM custom_entity_records WHERE tenant_id = $1 AND `+
		eng.idsIn("$2")+` ORDER BY id`+q.Dialect().ForUpdate(), tenantID, list)
}

// UpdateRecords implements Store: the records' new data in one batch
// (engineSQL.updateRecords), their count changes gathered per tenant and
// entity and written once each (countDeltas.flush), as UpdateRecord
// moves one record's.
func (*SQLStore) UpdateRecords(ctx context.Context, q store.Querier, changes []RecordChange) error {
	if len(changes) == 0 {
		return nil
	}
	eng, err := engineOf(q)
	if err != nil {
		return err
	}
	type group struct{ tenantID, entityID string }
	counts := map[group]*countDeltas{}
	var order []group
	rows := make([]recordRow, len(changes))
	for i, c := range changes {
		g := group{c.New.TenantID, c.New.EntityID}
		d := counts[g]
		if d == nil {
			if d, err = countsFor(ctx, q, g.entityID); err != nil {
				return err
			}
			counts[g] = d
			order = append(order, g)
		}
		d.add(c.Old.Values, c.Old.OrganizationID, -1)
		d.add(c.New.Values, c.New.OrganizationID, 1)
		data, err := valuesJSON(c.New.Values)
		if err != nil {
			return err
		}
		rows[i] = recordRow{tenantID: c.New.TenantID, id: c.New.ID, data: data, updatedAt: c.New.UpdatedAt}
	}
	n, err := eng.updateRecords(ctx, q, rows)
	if err != nil {
		return err
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("entities: %d of %d records to update are not stored live: %w", int64(len(rows))-n, len(rows), store.ErrNotFound)
	}
	for _, g := range order {
		if err := counts[g].flush(ctx, q, g.tenantID, g.entityID); err != nil {
			return err
		}
	}
	return nil
}

// rowChunks are the row counts of a rowStatements' texts, largest first
// (store.BatchInsert's): a batch is cut into as few statements as they
// allow, from few distinct texts, each prepared once.
var rowChunks = []int{50, 10, 1}

// rowStatements is a statement over a list of rows of anonymous
// parameters (SQLite binds numbered ones by name, which makes hundreds of
// them slow: see store.BatchInsert), in texts of rowChunks rows.
type rowStatements struct {
	columns int
	texts   map[int]string
}

// newRowStatements returns the statements prefix, then the rows (each
// row, the parameters of one row, such as "(?, ?)"), joined by commas,
// then suffix. The texts are ours, never input.
func newRowStatements(prefix, row, suffix string) *rowStatements {
	s := &rowStatements{columns: strings.Count(row, "?"), texts: map[int]string{}}
	for _, n := range rowChunks {
		var b strings.Builder
		b.WriteString(prefix)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(row)
		}
		b.WriteString(suffix)
		s.texts[n] = b.String()
	}
	return s
}

// prepare has the texts prepared (DB.Prepare), outside any transaction.
func (s *rowStatements) prepare(ctx context.Context, db *store.DB) {
	for _, text := range s.texts {
		_ = db.Prepare(ctx, text)
	}
}

// exec runs the statements over rows (n rows, row(i, args) appending row
// i's parameters to args) and returns the rows they affected in all.
func (s *rowStatements) exec(ctx context.Context, q store.Querier, n int, row func(i int, args []any) []any) (int64, error) {
	var total int64
	args := make([]any, 0, rowChunks[0]*s.columns)
	for from := 0; from < n; {
		size := rowChunks[len(rowChunks)-1]
		for _, c := range rowChunks {
			if n-from >= c {
				size = c
				break
			}
		}
		args = args[:0]
		for i := from; i < from+size; i++ {
			args = row(i, args)
		}
		affected, err := q.Exec(ctx, s.texts[size], args...)
		if err != nil {
			return total, err
		}
		total += affected
		from += size
	}
	return total, nil
}
