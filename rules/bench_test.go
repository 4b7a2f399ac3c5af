package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/rulebench"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// benchSet stores rulebench's set on SQLite and returns the service, a
// scope and the data.
func benchSet(b *testing.B) (*rules.Service, context.Context, map[string]any) {
	db := storetest.SQLite(b, rules.Migrations)
	svc := must(rules.New(db, rules.Options{}))
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: store.NewID(), ActorID: "bench"})
	if err := rulebench.CreateSet(ctx, svc); err != nil {
		b.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(rulebench.Data), &data); err != nil {
		b.Fatal(err)
	}
	return svc, ctx, data
}

// BenchmarkExecuteSet executes the ten-rule set in-process: a dry run
// (evaluation and planning only) and a logged run (ten log rows committed
// per execution, one execution at a time and in parallel).
func BenchmarkExecuteSet(b *testing.B) {
	svc, ctx, data := benchSet(b)
	in := rules.Input{EntityType: "order", EntityID: "order-1", EventType: "beforeUpdate", Data: data, DryRun: true}
	res, err := svc.ExecuteSet(ctx, "BENCH", in)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range res.ExecutedRules {
		if r.Result != rules.StatusSuccess || len(r.ActionsPlanned) != 1 {
			b.Fatalf("rule %s: %s with %d actions, want SUCCESS with 1", r.RuleID, r.Result, len(r.ActionsPlanned))
		}
	}
	b.Run("dryRun", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.ExecuteSet(ctx, "BENCH", in); err != nil {
				b.Fatal(err)
			}
		}
	})
	logged := in
	logged.DryRun = false
	b.Run("logged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.ExecuteSet(ctx, "BENCH", logged); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("logged-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := svc.ExecuteSet(ctx, "BENCH", logged); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkHandWrittenSet is the baselines of BenchmarkExecuteSet: the
// same thirty comparisons as Go if statements ("ifs"), and the same
// comparisons building the same dry-run result a host would return
// ("result": entries with the planned action of each outcome).
func BenchmarkHandWrittenSet(b *testing.B) {
	var data map[string]any
	if err := json.Unmarshal([]byte(rulebench.Data), &data); err != nil {
		b.Fatal(err)
	}
	b.Run("ifs", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if rulebench.HandWritten(data)[9] {
				n++
			}
		}
		benchSink = n
	})
	ids, names, seqs := make([]string, 10), make([]string, 10), make([]int, 10)
	for i := range ids {
		ids[i], names[i], seqs[i] = fmt.Sprintf("RULE_%d", i), fmt.Sprintf("Rule %d", i), 10*(i+1)
	}
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			held := rulebench.HandWritten(data)
			res := &rules.Result{SetID: "BENCH", SetName: "Benchmark set", Allowed: held[0], ExecutedRules: make([]rules.RuleResult, 10)}
			for i, h := range held {
				r := &res.ExecutedRules[i]
				r.RuleID, r.RuleName, r.RuleType, r.Sequence, r.ConditionResult = ids[i], names[i], rules.Validation, &seqs[i], h
				r.Result = rules.StatusFailure
				if h {
					r.Result = rules.StatusSuccess
				}
				switch {
				case i == 0 && h:
					r.RuleType = rules.Guard
					r.ActionsPlanned = []action.Outcome{{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Transition allowed"}}
				case h:
					r.ActionsPlanned = []action.Outcome{{"type": "SHOW_INFO", "severity": "info", "message": "Order checked"}}
				default:
					r.ActionsPlanned = []action.Outcome{{"type": "SHOW_ERROR", "severity": "error", "message": "Order refused"}}
				}
			}
			benchResult = res
		}
	})
}

var (
	benchSink   int
	benchResult *rules.Result
)
