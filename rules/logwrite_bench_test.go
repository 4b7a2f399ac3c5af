//go:build !tenantkit_nopostgres

package rules_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantkit/tenantkit/internal/testing/cputime"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkInsertExecutions writes the execution log as the group
// committer does under load: batches of 16 executions of ten rules each
// (rules without actions, as most are: each rule row's output is the
// default one; a 491-byte input), one op an execution. On SQLite each
// batch is a transaction of its own (what the single writer does per
// commit), cpu-µs/op the process's CPU; on PostgreSQL each batch is
// InsertExecutions' one statement outside a transaction (as the group
// committer runs a batch of log rows alone) on a pool of one connection,
// and pg-cpu-µs/op is that server process's CPU.
func BenchmarkInsertExecutions(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		db := storetest.SQLite(b, rules.Migrations)
		benchInsertExecutions(b, db, func(batch []*rules.ExecutionRecord) error {
			return db.Tx(b.Context(), func(tx *store.Tx) error { return rules.NewSQLStore().InsertExecutions(b.Context(), tx, batch) })
		}, nil)
	})
	b.Run("postgres", func(b *testing.B) {
		url := storetest.IsolatedPostgresURL(b)
		migrated, err := store.Open(b.Context(), url, nil)
		if err != nil {
			b.Fatal(err)
		}
		err = migrated.Migrate(b.Context(), rules.Migrations)
		migrated.Close()
		if err != nil {
			b.Fatal(err)
		}
		db, pool := storetest.PostgresPool(b, url, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
		conn, err := pool.Acquire(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		pid := conn.Conn().PgConn().PID()
		conn.Release()
		benchInsertExecutions(b, db, func(batch []*rules.ExecutionRecord) error {
			return rules.NewSQLStore().InsertExecutions(b.Context(), db, batch)
		}, func() time.Duration { return procCPU(b, pid) })
	})
}

func benchInsertExecutions(b *testing.B, db *store.DB, write func([]*rules.ExecutionRecord) error, server func() time.Duration) {
	tenant, org, set, actor := store.NewID(), store.NewID(), "BENCH_SET", "api_key:"+store.NewID()
	input := `{"data":{"carrier":"dhl","channel":"web","country":"DE","couponCode":"SPRING26","createdBy":"user-42",` +
		`"currency":"EUR","customerTier":"gold","discount":0.1,"isGift":true,"isRush":false,"itemCount":7,` +
		`"orderId":"ORD-2026-000123","paymentMethod":"card","priority":3,"region":"EU","score":87,"status":"OPEN",` +
		`"total":1234.5,"warehouse":"WH-2","weightKg":12.4},"entityId":"ORD-2026-000123","entityType":"Order",` +
		`"eventType":"beforeSave","user":{"id":"` + actor + `"}}`
	// The rule rows' own ids are not written (a row's is its execution's
	// with its index): every execution shares one slice of them.
	ruleRows := make([]rules.RuleRecord, 10)
	for r := range ruleRows {
		ruleRows[r] = rules.RuleRecord{RuleUUID: store.NewID(), RuleID: fmt.Sprintf("bench_rule_%02d", r+1),
			RuleName: fmt.Sprint("Bench rule ", r+1), RuleType: rules.Validation, Result: rules.StatusSuccess,
			Output: `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`}
	}
	const batchSize = 16
	batch := make([]*rules.ExecutionRecord, 0, batchSize)
	flush := func() {
		if err := write(batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	run := func(n int) {
		for range n {
			now := time.Now().UTC()
			id := store.NewIDAt(now)
			id = id[:32] + "0000"
			x := &rules.ExecutionRecord{ID: id, TenantID: tenant, OrganizationID: org, SetID: set, EntityType: "Order",
				EntityID: "ORD-2026-000123", EventType: "beforeSave", Input: input, ExecutedAt: now, ExecutedBy: actor,
				Rules: ruleRows}
			if batch = append(batch, x); len(batch) == batchSize {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
	}
	run(2000) // a log to write after, and the statements prepared
	b.ResetTimer()
	var srv time.Duration
	if server != nil {
		srv = server()
	}
	cpu := cputime.Process()
	run(b.N)
	b.StopTimer()
	cputime.PerOp(b, cpu, b.N)
	if server != nil {
		b.ReportMetric(float64((server()-srv).Nanoseconds())/1e3/float64(b.N), "pg-cpu-µs/op")
	}
}

// procCPU is a process's user and system time, from /proc/<pid>/stat
// (fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(b *testing.B, pid uint32) time.Duration {
	s, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		b.Skip("no /proc: ", err)
	}
	f := strings.Fields(string(s[strings.LastIndexByte(string(s), ')')+1:])) // f[0] is field 3
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
