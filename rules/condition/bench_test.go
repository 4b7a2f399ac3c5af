package condition_test

import (
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/rulebench"
	"github.com/tenantkit/tenantkit/rules/condition"
)

func benchConditions(b *testing.B) []*condition.Condition {
	conds := make([]*condition.Condition, len(rulebench.Rules))
	for i := range rulebench.Rules {
		conds[i] = parse(b, rulebench.Group(i))
	}
	return conds
}

func benchMap(b *testing.B) map[string]any {
	var data map[string]any
	if err := json.Unmarshal([]byte(rulebench.Data), &data); err != nil {
		b.Fatal(err)
	}
	if len(data) != 20 {
		b.Fatalf("%d fields, want 20", len(data))
	}
	return data
}

var sink int

// BenchmarkSetOfTenRules evaluates the 10 parsed conditions once per op,
// by each evaluator: the tree walker (Condition.Eval, the default) and
// their expr-lang programs (exprprog_test.go), in the same run.
func BenchmarkSetOfTenRules(b *testing.B) {
	tree := benchConditions(b)
	exprs := make([]*condition.Condition, len(tree))
	for i, c := range tree {
		e, err := condition.CompileExpr(c)
		if err != nil {
			b.Fatal(err)
		}
		exprs[i] = e
	}
	data := benchMap(b)
	env := &condition.Env{}
	for _, ev := range []struct {
		name  string
		conds []*condition.Condition
	}{{"tree", tree}, {"expr", exprs}} {
		b.Run(ev.name, func(b *testing.B) {
			for _, c := range ev.conds {
				if !c.Eval(data, env) {
					b.Fatal("every benchmark rule should hold")
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, c := range ev.conds {
					if c.Eval(data, env) {
						n++
					}
				}
				sink += n
			}
		})
	}
}

// BenchmarkHandWrittenIfs does the same 30 comparisons as Go if statements.
func BenchmarkHandWrittenIfs(b *testing.B) {
	data := benchMap(b)
	if rulebench.HandWritten(data) != [10]bool{true, true, true, true, true, true, true, true, true, true} {
		b.Fatal("every hand-written rule should hold")
	}
	b.ReportAllocs()
	for b.Loop() {
		if rulebench.HandWritten(data)[9] {
			sink++
		}
	}
}

// BenchmarkParse is the one-off cost of compiling one rule.
func BenchmarkParse(b *testing.B) {
	raw := []byte(rulebench.Group(0))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := condition.Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileExpr is the one-off cost of compiling one parsed rule
// to an expr-lang program (on top of BenchmarkParse).
func BenchmarkCompileExpr(b *testing.B) {
	c := parse(b, rulebench.Group(0))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := condition.CompileExpr(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDateComparison is one ISO-date comparison (see the known
// allocation bug in TestScalarComparisonsDoNotAllocate).
func BenchmarkDateComparison(b *testing.B) {
	c := parse(b, `{"field":"due","operator":"<","value":"2024-02-01"}`)
	data := map[string]any{"due": "2024-01-15"}
	env := &condition.Env{}
	b.ReportAllocs()
	for b.Loop() {
		if !c.Eval(data, env) {
			b.Fatal("should hold")
		}
	}
}
