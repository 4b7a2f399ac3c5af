//go:build !tenantkit_nopostgres

package store_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExecTextsTraced: a connection's query tracer sees a statement run
// by ExecTexts as it sees Exec's (the round-trip counts of the tests and
// benchmarks).
func TestExecTextsTraced(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	trips := &storetest.RoundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips)
	ctx := t.Context()
	_, err := store.ExecTexts(trips.Mark(ctx), db, `SELECT $1::text`, [][]byte{[]byte("traced")})
	is.NoErr(err)
	marked := trips.MarkedStatements()
	is.Equal(len(marked), 1)
	is.Equal(marked[0].SQL, `SELECT $1::text`)
	is.Equal(marked[0].Args, []any{"traced"})
}
