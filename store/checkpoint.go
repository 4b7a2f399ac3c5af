//go:build !tenantkit_nosqlite

package store

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"
)

// SQLite's write-ahead log has to be copied back into the database file
// from time to time (a checkpoint). By default the connection that commits
// does it, when the log passes 1,000 pages: on the one writer connection,
// so every write waits while it reads the log, writes the pages and syncs
// both files. Under a steady write load that was about a quarter of a
// logged rule execution's time in-process (BENCHMARKS.md, "Checkpoints off
// the writer").
//
// A file database therefore checkpoints from a connection of its own in
// the background: a PASSIVE checkpoint every checkpointInterval, which
// copies what no reader still needs and never takes the writer's lock.
// The interval is a quarter of a second. A checkpoint still holds writes
// up in proportion to what it copies and syncs (the machine's write-back
// of that much data at once): at a second, logged rule executions and
// record creates over HTTP had a p90 of 17–40 ms and a p99 of 77–113 ms
// beside a p50 of 2.4–3.6 ms; at 250 ms, p90 6–15 ms and p99 28–62 ms,
// at the same or a higher rate (BENCHMARKS.md, "Checkpoints every
// 250 ms"). Shorter is not free: a page written again and again (an
// index taking keys all over it, as bulk imports of records do) is copied
// once a checkpoint however many commits wrote it in between, so an
// import of records used 2–3% more CPU at 250 ms than at a second and
// 10% more at 100 ms (while finishing 7% sooner at 250 ms). The writer
// keeps SQLite's automatic checkpoint only as a backstop, at
// writerAutoCheckpointPages, for a log the background checkpoints cannot
// keep short. Durability is SQLite's own either way: a commit is in the
// log when it returns, and a checkpoint syncs the log before it copies
// it.
const (
	checkpointInterval        = 250 * time.Millisecond
	writerAutoCheckpointPages = 10000 // about 40 MiB of log
)

// checkpointer runs the background checkpoints of one file database.
type checkpointer struct {
	conn   *sql.DB
	logger *slog.Logger
	stop   chan struct{}
	done   sync.WaitGroup
	once   sync.Once // close may be called again, as DB.Close may
}

// startCheckpointer opens a connection of its own to path and checkpoints
// through it every interval until close.
func startCheckpointer(path string, interval time.Duration, logger *slog.Logger) (*checkpointer, error) {
	conn, err := sql.Open("sqlite", sqliteDSN(path, false))
	if err != nil {
		return nil, err
	}
	conn.SetMaxOpenConns(1)
	conn.SetConnMaxIdleTime(0)
	conn.SetConnMaxLifetime(0)
	if logger == nil {
		logger = slog.Default()
	}
	c := &checkpointer{conn: conn, logger: logger, stop: make(chan struct{})}
	c.done.Add(1)
	go c.run(interval)
	return c, nil
}

func (c *checkpointer) run(interval time.Duration) {
	defer c.done.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		err := c.checkpoint(context.Background())
		switch {
		case err != nil && !failing:
			c.logger.Warn("store: background checkpoint failed; the writer checkpoints past its backstop", "err", err)
			failing = true
		case err == nil && failing:
			c.logger.Info("store: background checkpoints resumed")
			failing = false
		}
	}
}

// checkpoint runs one PASSIVE checkpoint. With nothing new in the log it
// reads SQLite's shared index and returns.
func (c *checkpointer) checkpoint(ctx context.Context) error {
	var busy, logFrames, checkpointed int
	return c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &checkpointed)
}

// close stops the checkpoints and closes the connection.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	c.done.Wait()
	return c.conn.Close()
}
