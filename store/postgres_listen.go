//go:build !tenantkit_nopostgres

package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection outside the pool, made as the pool makes its
// own (the pool's connection configuration, BeforeConnect and
// AfterConnect), named app unless the configuration names it.
func (e *pgxEngine) connect(ctx context.Context, app string) (*pgx.Conn, error) {
	pcfg := e.pool.Config()
	cc := pcfg.ConnConfig.Copy()
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = app
	}
	if pcfg.BeforeConnect != nil {
		if err := pcfg.BeforeConnect(ctx, cc); err != nil {
			return nil, err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	if pcfg.AfterConnect != nil {
		if err := pcfg.AfterConnect(ctx, conn); err != nil {
			_ = conn.Close(ctx)
			return nil, err
		}
	}
	return conn, nil
}

// listen implements notifier on a connection of its own, made as the
// pool makes its own (the pool's connection configuration, BeforeConnect
// and AfterConnect), so that the listener reaches the same server with
// the same credentials without holding one of the pool's connections.
func (e *pgxEngine) listen(ctx context.Context, channel string, connected func(pid uint32), notify func(payload string)) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := e.connect(cctx, "tenantkit versions listener")
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	connected(conn.PgConn().PID())
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPingEvery)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if n != nil {
			notify(n.Payload)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Quiet for a while: check that the connection still answers.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
