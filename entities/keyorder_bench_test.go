package entities_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/internal/testing/cputime"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkCreateRecordKeyOrder creates records one at a time (one
// transaction each) on SQLite, after 100,000 records
// (TENANTKIT_BENCH_PREFILL), with the filterable field "code" in the
// order of creation ("ordered") or random ("random"): a random value goes
// into the middle of the field's index. TENANTKIT_BENCH_WRITER_CACHE_KIB
// sets the writer's page cache before the prefill (default: the store's).
// "update" changes a field without an index of a record chosen at random
// among the ordered prefill's: the writer reads pages all over the file.
// Metrics: cpu-µs/op (the process, after a 3 s pause and 500 unmeasured
// operations), prefill-cpu-µs/rec (the prefill's CreateRecords, 1,000 a
// transaction), db-MiB. TENANTKIT_BENCH_CPUPROFILE=<file> profiles the
// measured operations alone into <file>.<order>.
//
//	go test ./entities -run '^$' -bench CreateRecordKeyOrder -benchtime 5000x
func BenchmarkCreateRecordKeyOrder(b *testing.B) {
	prefill := 100000
	if v, err := strconv.Atoi(os.Getenv("TENANTKIT_BENCH_PREFILL")); err == nil {
		prefill = v
	}
	for _, order := range []string{"ordered", "random", "update"} {
		b.Run(order, func(b *testing.B) {
			db := storetest.SQLite(b, entities.Migrations)
			svc := must(entities.New(db, entities.Options{}))
			ctx, _ := storetest.NewScope(b)
			if kib, err := strconv.Atoi(os.Getenv("TENANTKIT_BENCH_WRITER_CACHE_KIB")); err == nil {
				if err := db.Tx(ctx, func(tx *store.Tx) error {
					_, err := tx.Exec(ctx, "PRAGMA cache_size(-"+strconv.Itoa(kib)+")")
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			defineBenchEntity(b, svc, ctx)
			n := 0
			code := func() string {
				n++
				if order == "random" {
					var r [8]byte
					rand.Read(r[:])
					return hex.EncodeToString(r[:])
				}
				return fmt.Sprintf("%016x", n)
			}
			item := func() map[string]any {
				v := benchItem(0, 1)
				v["code"] = code()
				return v
			}
			pcpu := cputime.Process()
			var ids []string
			for done := 0; done < prefill; done += 1000 {
				batch := make([]map[string]any, 1000)
				for i := range batch {
					batch[i] = item()
				}
				got, err := svc.CreateRecords(ctx, "bench.items", batch)
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, got...)
			}
			op := func() error {
				if order != "update" {
					_, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: "bench.items", Values: item()})
					return err
				}
				// A record chosen at random, a field without an index.
				_, err := svc.UpdateRecord(ctx, entities.RecordInput{EntityID: "bench.items", RecordID: ids[mrand.IntN(len(ids))],
					Values: map[string]any{"title": "Item " + strconv.Itoa(n)}})
				n++
				return err
			}
			pcpu = cputime.Process() - pcpu
			// The prefill's log is checkpointed in the background: let
			// it finish, then warm up, before measuring.
			time.Sleep(3 * time.Second)
			for range 500 {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			if f := os.Getenv("TENANTKIT_BENCH_CPUPROFILE"); f != "" {
				out, err := os.Create(f + "." + order)
				if err != nil {
					b.Fatal(err)
				}
				pprof.StartCPUProfile(out)
				defer func() { pprof.StopCPUProfile(); out.Close() }()
			}
			start := cputime.Process()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			cputime.PerOp(b, start, b.N)
			b.ReportMetric(float64(pcpu.Microseconds())/float64(prefill), "prefill-cpu-µs/rec")
			var pages int64
			if err := db.Tx(ctx, func(tx *store.Tx) error {
				return tx.QueryRow(ctx, "PRAGMA page_count").Scan(&pages)
			}); err == nil {
				b.ReportMetric(float64(pages)*4/1024, "db-MiB")
			}
		})
	}
}
