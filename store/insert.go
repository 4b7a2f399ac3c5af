package store

import (
	"context"
	"strconv"
	"strings"
)

// BatchInsert writes rows into a table with multi-row INSERTs of up to 50
// rows (chunks of 50, 20, 10, 5, 2 and 1, the largest that fits first), so
// that only a few statement texts exist and each is prepared once
// (Prepare), and a small batch takes few statements (group commit's
// batches are mostly of 1 to 5 requests: 4 rows are 2 statements, not 4). On
// SQLite the parameters are anonymous (?): its driver looks numbered ones
// ($n) up by name in a list, which makes binding hundreds of them
// quadratic.
type BatchInsert struct {
	columns int
	// statements by engine (sqlite: true) and chunk size
	statements map[bool]map[int]string
}

// batchChunks are the row counts of BatchInsert's statements, largest
// first; the last is 1.
var batchChunks = []int{50, 20, 10, 5, 2, 1}

// NewBatchInsert returns the INSERT of columns (a comma-separated list)
// into table, followed by suffix (for example an ON CONFLICT clause; may
// be empty). The texts are ours, never input.
func NewBatchInsert(table, columns, suffix string) *BatchInsert {
	b := &BatchInsert{columns: strings.Count(columns, ",") + 1, statements: map[bool]map[int]string{true: {}, false: {}}}
	for _, n := range batchChunks {
		for _, sqlite := range []bool{true, false} {
			var sql strings.Builder
			sql.WriteString("INSERT INTO " + table + " (" + columns + ") VALUES ")
			for i := range n {
				if i > 0 {
					sql.WriteString(", ")
				}
				sql.WriteByte('(')
				for c := range b.columns {
					if c > 0 {
						sql.WriteString(", ")
					}
					if sqlite {
						sql.WriteByte('?')
					} else {
						sql.WriteString("$" + strconv.Itoa(i*b.columns+c+1))
					}
				}
				sql.WriteByte(')')
			}
			if suffix != "" {
				sql.WriteString(" " + suffix)
			}
			b.statements[sqlite][n] = sql.String()
		}
	}
	return b
}

// Columns is how many values each row has.
func (b *BatchInsert) Columns() int { return b.columns }

// Prepare has the statements prepared (once; see DB.Prepare) before a
// transaction takes the writer. A failure only costs speed: the
// transaction runs them unprepared and reports real errors.
func (b *BatchInsert) Prepare(ctx context.Context, db *DB) {
	for _, q := range b.statements[db.Dialect().Name() == "sqlite"] {
		_ = db.Prepare(ctx, q)
	}
}

// Insert writes rows, each the columns' values in order, and returns how
// many rows the statements reported (fewer than len(rows) when the suffix
// skips some).
func (b *BatchInsert) Insert(ctx context.Context, q Querier, rows [][]any) (int64, error) {
	values := make([]any, 0, len(rows)*b.columns)
	for _, r := range rows {
		if len(r) != b.columns {
			panic("store: BatchInsert: a row has " + strconv.Itoa(len(r)) + " values for " + strconv.Itoa(b.columns) + " columns")
		}
		values = append(values, r...)
	}
	return b.InsertValues(ctx, q, values)
}

// InsertValues is Insert with the rows' values one row after another in
// one slice (its length a multiple of the column count), which the
// statements take in place: a hot path writes many rows without a slice
// per row.
func (b *BatchInsert) InsertValues(ctx context.Context, q Querier, values []any) (int64, error) {
	if len(values)%b.columns != 0 {
		panic("store: BatchInsert: " + strconv.Itoa(len(values)) + " values for rows of " + strconv.Itoa(b.columns) + " columns")
	}
	statements := b.statements[q.Dialect().Name() == "sqlite"]
	var total int64
	for len(values) > 0 {
		rows, n := len(values)/b.columns, 1
		for _, c := range batchChunks {
			if rows >= c {
				n = c
				break
			}
		}
		affected, err := q.Exec(ctx, statements[n], values[:n*b.columns]...)
		if err != nil {
			return total, err
		}
		total += affected
		values = values[n*b.columns:]
	}
	return total, nil
}
