//go:build !tenantkit_nopostgres

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// execTexts runs the statement on a connection of the pool (ExecTexts).
func (e *pgxEngine) execTexts(ctx context.Context, sql string, params [][]byte) (int64, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	return execTexts(ctx, conn.Conn(), sql, params)
}

// execTexts runs the statement in the transaction (ExecTexts). With
// statements queued (later) it runs as any other statement, in one
// pipeline with them.
func (t *pgxTx) execTexts(ctx context.Context, sql string, params [][]byte) (int64, error) {
	if t.failed != nil || len(t.pending) > 0 {
		return t.exec(ctx, sql, textArgs(params))
	}
	return execTexts(ctx, t.tx.Conn(), sql, params)
}

// execTexts runs sql on conn with params in the text format, handed to
// pgx's connection as they are: the statement is prepared once per
// connection (named by its text, as Conn.Prepare keeps it) and executed
// with its description, so no parameter goes through pgx's encoders
// (which copy them). The connection's query tracer, if any, sees the
// statement as it would see Exec's.
func execTexts(ctx context.Context, conn *pgx.Conn, sql string, params [][]byte) (int64, error) {
	sd, err := conn.Prepare(ctx, sql, sql)
	if err != nil {
		return 0, err
	}
	tracer, _ := conn.Config().Tracer.(pgx.QueryTracer)
	if tracer != nil {
		ctx = tracer.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{SQL: sql, Args: textArgs(params)})
	}
	tag, err := conn.PgConn().ExecStatement(ctx, sd, params, nil, nil).Close()
	if tracer != nil {
		tracer.TraceQueryEnd(ctx, conn, pgx.TraceQueryEndData{CommandTag: tag, Err: err})
	}
	return tag.RowsAffected(), err
}
