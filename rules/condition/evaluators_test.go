package condition_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/rules/condition"
)

// exprEvaluator is set while TestExprEvaluator runs: the tests then
// evaluate every condition they parse with its expr-lang program
// (exprprog_test.go) instead of the tree walker, Condition.Eval's own.
var exprEvaluator bool

// evaluated returns c as the evaluator under test runs it.
func evaluated(t testing.TB, c *condition.Condition) *condition.Condition {
	t.Helper()
	if !exprEvaluator {
		return c
	}
	e, err := condition.CompileExpr(c)
	if err != nil {
		t.Fatalf("CompileExpr: %v", err)
	}
	return e
}

// TestExprEvaluator runs the tests of condition_test.go again, unchanged,
// on the expr-lang evaluator: its truth tables, paths, references, groups
// and limits must hold for both evaluators.
func TestExprEvaluator(t *testing.T) {
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestEquals", TestEquals},
		{"TestOrdering", TestOrdering},
		{"TestIn", TestIn},
		{"TestContains", TestContains},
		{"TestStartsEndsWith", TestStartsEndsWith},
		{"TestMatches", TestMatches},
		{"TestIsEmpty", TestIsEmpty},
		{"TestEveryOperatorCovered", TestEveryOperatorCovered},
		{"TestPaths", TestPaths},
		{"TestEvalDoesNotModifyData", TestEvalDoesNotModifyData},
		{"TestFieldToField", TestFieldToField},
		{"TestReferences", TestReferences},
		{"TestGroups", TestGroups},
		{"TestValidationRefuses", TestValidationRefuses},
		{"TestValidationAccepts", TestValidationAccepts},
		{"TestLimits", TestLimits},
		{"TestErrorText", TestErrorText},
		{"TestParseValue", TestParseValue},
		{"TestConcurrentEval", TestConcurrentEval},
	}
	// The tree walker's promise of no allocations is its own (the expr
	// evaluator's allocations are BenchmarkSetOfTenRules/expr's, and the
	// race detector makes its sync.Pool drop states).
	// ReadsContext reads the parsed tree, whichever evaluator runs it.
	notRerun := map[string]bool{"TestScalarComparisonsDoNotAllocate": true, "TestReadsContext": true}

	// A test added to condition_test.go is added above, or to notRerun.
	listed := map[string]bool{}
	for _, tt := range tests {
		listed[tt.name] = true
	}
	file, err := parser.ParseFile(token.NewFileSet(), "condition_test.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") &&
			!listed[fn.Name.Name] && !notRerun[fn.Name.Name] {
			t.Errorf("%s is not run on the expr evaluator: list it in TestExprEvaluator", fn.Name.Name)
		}
	}

	exprEvaluator = true
	defer func() { exprEvaluator = false }()
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// noContext has fuzzEnv's time and no context: {{user.id}} and the like
// are null.
var noContext = &condition.Env{Now: fuzzEnv.Now}

// agree fails t unless c and its expr program e give the same result on
// data, with and without a context.
func agree(t *testing.T, c, e *condition.Condition, data map[string]any, what string) {
	t.Helper()
	for _, env := range []*condition.Env{fuzzEnv, noContext} {
		if tree, expr := c.Eval(data, env), e.Eval(data, env); tree != expr {
			t.Fatalf("%s: the tree walker says %v, the expr program %v (context %v)", what, tree, expr, env.Context != nil)
		}
	}
}

// FuzzEvaluatorsAgree: for every expression Parse accepts, the expr
// program compiles and agrees with the tree walker on FuzzParse's data.
func FuzzEvaluatorsAgree(f *testing.F) {
	for _, seed := range parseSeeds {
		f.Add([]byte(seed))
	}
	data := make([]map[string]any, len(fuzzData))
	for i, d := range fuzzData {
		data[i] = decode(f, d)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := condition.Parse(raw)
		if err != nil {
			return
		}
		e, err := condition.CompileExpr(c)
		if err != nil {
			t.Fatalf("CompileExpr(%s): %v", raw, err)
		}
		for i, d := range data {
			agree(t, c, e, d, string(raw)+" on "+fuzzData[i])
		}
	})
}

// FuzzEvaluatorsAgreeOnData: on any JSON data, the expr programs of
// FuzzEval's conditions agree with the tree walker.
func FuzzEvaluatorsAgreeOnData(f *testing.F) {
	for _, seed := range evalSeeds {
		f.Add([]byte(seed))
	}
	conds := fuzzConditions(f)
	exprs := make([]*condition.Condition, len(conds))
	for i, c := range conds {
		e, err := condition.CompileExpr(c)
		if err != nil {
			f.Fatal(err)
		}
		exprs[i] = e
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var data map[string]any
		if err := json.Unmarshal(raw, &data); err != nil {
			return
		}
		for i, c := range conds {
			agree(t, c, exprs[i], data, fmt.Sprintf("condition %d on %s", i, raw))
		}
	})
}
