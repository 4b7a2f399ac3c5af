package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// autovacuum stands in for PostgreSQL's autovacuum on a server that runs
// without it (autovacuum = off, as test servers often are): every
// interval it runs VACUUM (ANALYZE) on each table of the soak's schemas
// (the server's and the job engine's <schema>_river). Without it no
// table is ever analyzed, so the planner has no statistics, and every
// updated or deleted row stays behind as a dead version that index scans
// walk: a soak then measures a database no production server is (the
// default is autovacuum on, waking every minute). On a server whose
// autovacuum is on, it does nothing and says so.
type autovacuum struct {
	url   string
	every time.Duration
	logf  func(format string, args ...any)
}

// start reports whether the server's autovacuum is off and, if so,
// vacuums in the background until ctx ends. The returned function waits
// for the background work to stop.
func (a autovacuum) start(ctx context.Context) (wait func(), err error) {
	conn, err := pgx.Connect(ctx, a.url)
	if err != nil {
		return nil, fmt.Errorf("autovacuum: %w", err)
	}
	var setting string
	if err := conn.QueryRow(ctx, `SHOW autovacuum`).Scan(&setting); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("autovacuum: %w", err)
	}
	if setting != "off" {
		conn.Close(ctx)
		a.logf("PostgreSQL's autovacuum is %s: the soak leaves vacuuming to it", setting)
		return func() {}, nil
	}
	a.logf("PostgreSQL's autovacuum is off: the soak runs VACUUM (ANALYZE) on its schemas every %s in its stead (-vacuum-every 0: never)", a.every)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(a.every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := a.pass(ctx, conn); err != nil && ctx.Err() == nil {
					a.logf("autovacuum: %v", err)
				}
			}
		}
	}()
	return func() { <-done }, nil
}

// pass vacuums and analyzes every table of the connection's schema and
// of the job engine's schema beside it.
func (a autovacuum) pass(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables
		WHERE schemaname IN (current_schema(), current_schema() || '_river') ORDER BY 1`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, table := range tables {
		if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) `+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	return nil
}
