package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantkit/tenantkit/internal/testing/cputime"
)

// pgCost counts the statements a pool runs and reads the CPU time of the
// PostgreSQL server processes behind its connections.
type pgCost struct {
	pool       *pgxpool.Pool
	statements atomic.Int64
	trips      atomic.Int64 // round trips: statements on their own and batches
	// texts counts statements by their first line, when
	// TENANTKIT_BENCH_STATEMENTS names a file (measure appends them to
	// it).
	texts sync.Map // string → *atomic.Int64
}

func (c *pgCost) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	c.trips.Add(1)
	c.statement(q.SQL)
	return ctx
}

func (c *pgCost) statement(sql string) {
	c.statements.Add(1)
	if logStatements {
		text, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
		n, _ := c.texts.LoadOrStore(text[:min(len(text), 100)], new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
}

func (c *pgCost) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
	return ctx
}

func (c *pgCost) TraceBatchQuery(_ context.Context, _ *pgx.Conn, q pgx.TraceBatchQueryData) {
	c.statement(q.SQL)
}

func (c *pgCost) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var logStatements = os.Getenv("TENANTKIT_BENCH_STATEMENTS") != ""

// writeStatements appends the statements counted since measure began,
// most frequent first, per operation, to the file
// TENANTKIT_BENCH_STATEMENTS names.
func (c *pgCost) writeStatements(b *testing.B) {
	type row struct {
		text string
		n    int64
	}
	var rows []row
	c.texts.Range(func(k, v any) bool {
		rows = append(rows, row{k.(string), v.(*atomic.Int64).Load()})
		return true
	})
	slices.SortFunc(rows, func(x, y row) int { return cmp.Compare(y.n, x.n) })
	var out strings.Builder
	fmt.Fprintf(&out, "%s, %d operations:\n", b.Name(), b.N)
	for _, r := range rows {
		fmt.Fprintf(&out, "%8.3f/op  %s\n", float64(r.n)/float64(b.N), r.text)
	}
	f, err := os.OpenFile(os.Getenv("TENANTKIT_BENCH_STATEMENTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Log(err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(out.String())
}

func (c *pgCost) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// serverCPU returns the CPU time (user and system) of the server processes
// of the pool's idle connections so far, by process id; nil when /proc
// cannot tell (another machine's server, another OS).
func (c *pgCost) serverCPU() map[uint32]time.Duration {
	conns := c.pool.AcquireAllIdle(context.Background())
	out := make(map[uint32]time.Duration, len(conns))
	for _, conn := range conns {
		pid := conn.Conn().PgConn().PID()
		conn.Release()
		cpu, ok := procCPU(pid)
		if !ok {
			return nil
		}
		out[pid] = cpu
	}
	return out
}

// procCPU reads a process's user and system time from /proc/<pid>/stat
// (fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(pid uint32) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// measure runs run and reports, per operation: statements (stmts/op),
// round trips (trips/op: fewer where statements go in batches), the CPU time of this process (cpu-µs/op, as benchCheck) and
// of the PostgreSQL server processes behind the pool (pg-cpu-µs/op). c may
// be nil (SQLite): only cpu-µs/op is reported.
func (c *pgCost) measure(b *testing.B, run func()) {
	var stmts, trips int64
	var server map[uint32]time.Duration
	if c != nil {
		c.texts.Clear()
		stmts, trips, server = c.statements.Load(), c.trips.Load(), c.serverCPU()
	}
	cpu := cputime.Process()
	run()
	if cpu != 0 {
		b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	}
	if c == nil {
		return
	}
	b.ReportMetric(float64(c.statements.Load()-stmts)/float64(b.N), "stmts/op")
	b.ReportMetric(float64(c.trips.Load()-trips)/float64(b.N), "trips/op")
	if logStatements {
		c.writeStatements(b)
	}
	if server == nil {
		return
	}
	var used time.Duration
	for pid, now := range c.serverCPU() {
		used += now - server[pid] // a connection opened meanwhile counts from 0
	}
	b.ReportMetric(float64(used.Nanoseconds())/1e3/float64(b.N), "pg-cpu-µs/op")
}
