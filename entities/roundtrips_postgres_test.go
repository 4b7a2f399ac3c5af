//go:build !tenantkit_nopostgres

package entities_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// roundTrips counts what a pool sends to the server: each statement on
// its own, and each batch, is one round trip; begins counts transactions.
type roundTrips struct{ trips, begins atomic.Int64 }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	c.trips.Add(1)
	if strings.HasPrefix(q.SQL, "begin") {
		c.begins.Add(1)
	}
	return ctx
}

func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
	return ctx
}

func (c *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestCreateRoundTrips: on PostgreSQL a create's transaction (a shared
// one, here of one create: each waits for the last) costs four round
// trips: BEGIN, the record with the read of the filterable keys and the
// definitions' version, its value counts with its event, and COMMIT. The
// record's and the counts' writes are queued (store.Tx.ExecLater) and
// sent with the next statement; each was a round trip of its own (six).
func TestCreateRoundTrips(t *testing.T) {
	t.Parallel()
	trips := &roundTrips{}
	db := storetest.PostgresTraced(t, storetest.IsolatedPostgresURL(t), trips, entities.Migrations)
	svc := must(entities.New(db, entities.Options{}))
	ctx, _ := storetest.NewScope(t)
	defineBenchEntity(t, svc, ctx)
	create := func() {
		t.Helper()
		if _, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: "bench.items", Values: benchItem(1, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	create() // loads the definitions
	const creates = 5
	before, begun := trips.trips.Load(), trips.begins.Load()
	for range creates {
		create()
	}
	got, txs := trips.trips.Load()-before, trips.begins.Load()-begun
	if txs != creates || got != 4*creates {
		t.Errorf("%d creates one after another: %d round trips in %d transactions, want %d in %d", creates, got, txs, 4*creates, creates)
	}
}
