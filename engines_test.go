package tenantkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEnginesOnlyInStore keeps engine differences in package store: no
// code outside store/ (tests aside) compares a value with an engine's
// name ("postgres", "sqlite"), with == and != or as a switch case. Such a
// difference belongs in the Dialect (or in the engine's build-tagged
// files under store/), where a third engine would find every one.
func TestEnginesOnlyInStore(t *testing.T) {
	engines := map[string]bool{"postgres": true, "sqlite": true}
	isEngine := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(lit.Value)
		return err == nil && engines[s]
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "store" || (path != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isEngine(n.X) || isEngine(n.Y)) {
					t.Errorf("%s: compares with an engine name; put the difference in store.Dialect", fset.Position(n.Pos()))
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isEngine(e) {
						t.Errorf("%s: a switch case on an engine name; put the difference in store.Dialect", fset.Position(e.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk missed the tree", checked)
	}
}
