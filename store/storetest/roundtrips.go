//go:build !tenantkit_nopostgres

package storetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer (for PostgresTraced) that counts what a
// pool sends to the server: each statement sent on its own and each batch
// (a pipeline of statements, store.Tx.ExecLater's) is one round trip.
type RoundTrips struct {
	// Trips counts round trips.
	Trips atomic.Int64
	// Begins counts transactions begun (a BEGIN sent on its own).
	Begins atomic.Int64
	// Marked counts the round trips sent with a context of Mark's: those
	// of one call, not of the background work sharing the pool.
	Marked atomic.Int64

	// all, when set, has every statement kept, marked or not (FlatLists:
	// a list's calls through a context of the test's own).
	all atomic.Bool

	mu         sync.Mutex
	statements []Statement // sent with a marked context (or any, with all)
}

// MarkedStatements returns the statements sent with a context of Mark's,
// in the order they were sent (a batch's one by one).
func (c *RoundTrips) MarkedStatements() []Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.statements)
}

// takeStatements returns the statements kept so far and forgets them.
func (c *RoundTrips) takeStatements() []Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.statements
	c.statements = nil
	return s
}

// record keeps a statement sent with ctx when ctx is marked, or when all
// is set.
func (c *RoundTrips) record(ctx context.Context, sql string, args []any) {
	if ctx.Value(roundTripMark{}) == nil && !c.all.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statements = append(c.statements, Statement{SQL: sql, Args: slices.Clone(args)})
}

// roundTripMark marks a context whose round trips RoundTrips.Marked counts.
type roundTripMark struct{}

// Mark returns ctx with a mark: the round trips sent with it (or a
// context derived from it) are counted in Marked too.
func (c *RoundTrips) Mark(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundTripMark{}, true)
}

// count adds a round trip sent with ctx.
func (c *RoundTrips) count(ctx context.Context) {
	c.Trips.Add(1)
	if ctx.Value(roundTripMark{}) != nil {
		c.Marked.Add(1)
	}
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	c.count(ctx)
	c.record(ctx, q.SQL, q.Args)
	if strings.HasPrefix(q.SQL, "begin") {
		c.Begins.Add(1)
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.count(ctx)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, q pgx.TraceBatchQueryData) {
	c.record(ctx, q.SQL, q.Args)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
