package condition

// The expr-lang/expr evaluator: the alternative to the tree walker that
// doc.go's "Evaluator" section measures and does not keep. It lives in a
// test file, so the library does not link expr; the truth tables, the
// differential fuzz targets and BenchmarkSetOfTenRules run it through
// CompileExpr.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// CompileExpr returns c evaluated by an expr-lang program instead of its
// tree: same comparisons, expr's VM as the walker.
func CompileExpr(c *Condition) (*Condition, error) {
	p, err := compileExpr(c.root)
	if err != nil {
		return nil, err
	}
	return &Condition{root: p}, nil
}

// exprProgram is a condition compiled to an expr-lang program: the groups
// become expr's &&, || and !, each comparison a call C(i) of the tree's
// i-th comparison, which compare.eval evaluates (so the coercions are the
// tree's). It is a node, so Condition.Eval runs it unchanged.
type exprProgram struct {
	prog   *vm.Program
	leaves []*compare
}

// exprState is the environment of one run. C, the only name the programs
// use, is a method value bound once to its state; states, with their VMs,
// are pooled, so a run allocates nothing. (A struct field is called
// without the per-call allocation of a method or the argument slice of an
// expr.Function.)
type exprState struct {
	C      func(int) bool
	leaves []*compare
	data   map[string]any
	env    *Env
	vm     vm.VM
}

func (s *exprState) call(i int) bool { return s.leaves[i].eval(s.data, s.env) }

var exprStates = sync.Pool{New: func() any {
	s := &exprState{}
	s.C = s.call
	return s
}}

// compileExpr writes the tree as expr source, C(0) && (C(1) || !(C(2) &&
// C(3))), and compiles it. expr's && and || stop where the tree's groups
// stop, so the comparisons run in the same order.
func compileExpr(root node) (*exprProgram, error) {
	p := &exprProgram{}
	var src strings.Builder
	var write func(n node)
	write = func(n node) {
		switch t := n.(type) {
		case *compare:
			src.WriteString("C(" + strconv.Itoa(len(p.leaves)) + ")")
			p.leaves = append(p.leaves, t)
		case *group:
			join := " && "
			switch t.op {
			case Or:
				join = " || "
			case Not: // true unless all hold
				src.WriteString("!")
			}
			src.WriteString("(")
			for i, c := range t.children {
				if i > 0 {
					src.WriteString(join)
				}
				write(c)
			}
			src.WriteString(")")
		default:
			panic(fmt.Sprintf("condition: no expr form for %T", n))
		}
	}
	write(root)
	// The environment is the struct, not a pointer to it, so that C is
	// loaded as a field by index rather than looked up by name. Parse
	// accepts more comparisons than expr's default limit of 10 000 nodes
	// (three per call): its own limits bound the size.
	prog, err := expr.Compile(src.String(), expr.Env(exprState{}), expr.AsBool(),
		expr.DisableAllBuiltins(), expr.MaxNodes(0))
	if err != nil {
		return nil, fmt.Errorf("condition: compiling %.100s: %w", src.String(), err)
	}
	p.prog = prog
	return p, nil
}

func (p *exprProgram) eval(data map[string]any, env *Env) bool {
	s := exprStates.Get().(*exprState)
	s.leaves, s.data, s.env = p.leaves, data, env
	out, err := s.vm.Run(p.prog, s)
	s.leaves, s.data, s.env = nil, nil, nil
	exprStates.Put(s)
	if err != nil {
		panic(err) // a comparison panicked, as it would in the tree
	}
	return out.(bool)
}
