package store_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExecTexts: a statement run with its parameters in the text form
// writes what Exec writes with the same values as strings (an array
// literal unnested, a NULL, quotes and backslashes, a timestamp), outside
// a transaction and in one, after statements the transaction queued
// (Tx.ExecLater), on each engine; a failed statement's error is
// classified as Exec's is.
func TestExecTexts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		_, err := db.Exec(ctx, `CREATE TABLE texts_test (id TEXT PRIMARY KEY, note TEXT, at TIMESTAMP)`)
		is.NoErr(err)
		insert := `INSERT INTO texts_test (id, note, at) VALUES ($1, $2, $3)`
		if db.Dialect().Name() == "postgres" {
			insert = `INSERT INTO texts_test (id, note, at) SELECT v.id, $2, $3::timestamptz
				FROM unnest($1::text[]) AS v (id)`
			_, err = db.Exec(ctx, `ALTER TABLE texts_test ALTER COLUMN at TYPE TIMESTAMPTZ`)
			is.NoErr(err)
		}
		ids := func(id string) []byte {
			if db.Dialect().Name() == "postgres" {
				return []byte(`{"` + id + `"}`)
			}
			return []byte(id)
		}

		n, err := store.ExecTexts(ctx, db, insert, [][]byte{ids("a"), []byte(`say "hi" \ bye`), []byte("2026-11-30 18:53:12.123456+00")})
		is.NoErr(err)
		is.Equal(n, int64(1))
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.ExecLater(ctx, `INSERT INTO texts_test (id) VALUES ('queued')`); err != nil {
				return err
			}
			if _, err := store.ExecTexts(ctx, tx, insert, [][]byte{ids("b"), nil, nil}); err != nil {
				return err
			}
			_, err := store.ExecTexts(ctx, tx, insert, [][]byte{ids("c"), []byte("in a transaction"), nil})
			return err
		}))

		var note string
		is.NoErr(db.QueryRow(ctx, `SELECT note FROM texts_test WHERE id = 'a' AND at = $1`,
			"2026-11-30 18:53:12.123456+00").Scan(&note))
		is.Equal(note, `say "hi" \ bye`)
		var nulls int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM texts_test WHERE id IN ('b', 'c', 'queued') AND at IS NULL`).Scan(&nulls))
		is.Equal(nulls, 3)
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM texts_test WHERE note IS NULL`).Scan(&nulls))
		is.Equal(nulls, 2) // b's NULL and the queued row's

		_, err = store.ExecTexts(ctx, db, insert, [][]byte{ids("a"), nil, nil})
		is.True(errors.Is(err, store.ErrConflict)) // the primary key, as Exec reports it
	})
}
