package tenantkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sourceFile is one parsed non-test Go file of the module.
type sourceFile struct {
	path string // slash-separated, relative to the module root
	fset *token.FileSet
	file *ast.File
}

// moduleSources parses every non-test .go file of the module outside
// testdata directories, with comments, but generated ones.
func moduleSources(t *testing.T) []sourceFile {
	t.Helper()
	var files []sourceFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			// Generated code (examples/client's oapi-codegen client) is
			// remade, not edited: its comments are the generator's.
			return nil
		}
		files = append(files, sourceFile{path: filepath.ToSlash(path), fset: fset, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	return files
}

// provenance matches what a comment must not point at: a specification
// or an issue the reader of the code does not have ("the spec's table",
// "issue 6"). It stays clear of "specific", "specified" and the like.
var provenance = regexp.MustCompile(`(?i)\bspecs?\b|\bissues? #?[0-9]+`)

// TestCommentsStateTheRule keeps comments self-contained: they say what
// the code does, never "as the spec says" or "see issue 6".
func TestCommentsStateTheRule(t *testing.T) {
	t.Parallel()
	for _, sf := range moduleSources(t) {
		for _, group := range sf.file.Comments {
			for _, c := range group.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if m := provenance.FindString(line); m != "" {
						pos := sf.fset.Position(c.Pos())
						t.Errorf("%s:%d: comment refers to %q: state the rule itself", sf.path, pos.Line+i, m)
					}
				}
			}
		}
	}
}

// publicAPI reports whether sf belongs to a package a host imports: not
// package main, not under an internal directory.
func publicAPI(sf sourceFile) bool {
	if sf.file.Name.Name == "main" {
		return false
	}
	return !slices.Contains(strings.Split(sf.path, "/"), "internal")
}

// undocumented lists the exported identifiers of sf that go doc shows
// without a doc comment: functions, methods of exported types, types,
// constants and variables (a comment on a const or var group covers its
// members), interface methods and struct fields.
func undocumented(sf sourceFile) (idents, fields []string) {
	at := func(n ast.Node, name string) string {
		return sf.path + ":" + strconv.Itoa(sf.fset.Position(n.Pos()).Line) + ": " + name
	}
	for _, decl := range sf.file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				recv := receiverType(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			if d.Doc == nil {
				idents = append(idents, at(d, name))
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Doc == nil && s.Comment == nil && d.Doc == nil {
						idents = append(idents, at(s, s.Name.Name))
					}
					switch typ := s.Type.(type) {
					case *ast.StructType:
						for _, f := range typ.Fields.List {
							for _, n := range f.Names {
								if n.IsExported() && f.Doc == nil && f.Comment == nil {
									fields = append(fields, at(n, s.Name.Name+"."+n.Name))
								}
							}
						}
					case *ast.InterfaceType:
						for _, m := range typ.Methods.List {
							for _, n := range m.Names {
								if n.IsExported() && m.Doc == nil && m.Comment == nil {
									idents = append(idents, at(n, s.Name.Name+"."+n.Name))
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
							idents = append(idents, at(n, n.Name))
						}
					}
				}
			}
		}
	}
	return idents, fields
}

// receiverType is the name of a method receiver's base type.
func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// TestExportedIdentifiersDocumented: every exported function, method,
// type, constant, variable and interface method of the public packages
// has a doc comment, so go doc explains each of them.
func TestExportedIdentifiersDocumented(t *testing.T) {
	t.Parallel()
	for _, sf := range moduleSources(t) {
		if !publicAPI(sf) {
			continue
		}
		idents, _ := undocumented(sf)
		for _, id := range idents {
			t.Errorf("%s has no doc comment", id)
		}
	}
}

// fieldDocExempt are the public packages whose exported struct fields
// may still lack comments (attachments: Patch's Tags and Assignments).
// Every other public package's fields have comments unless the name says
// it all (selfDescribing).
var fieldDocExempt = []string{"attachments"}

// selfDescribing reports whether a field name needs no comment: an id
// or a list of ids (ID, TenantID, EntityIDs, ...), a name (Name, RuleName, ...), the
// entity or event type an item is about, a timestamp of the row, or a
// paging field.
func selfDescribing(field string) bool {
	switch field {
	case "Description", "Title", "Label", "Message", "CreatedAt", "UpdatedAt", "DeletedAt",
		"EntityType", "EventType", "Items", "Total", "Page", "PageSize", "TotalPages", "Offset", "Limit", "Search":
		return true
	}
	return strings.HasSuffix(field, "ID") || strings.HasSuffix(field, "IDs") || strings.HasSuffix(field, "Name")
}

// TestExportedFieldsDocumented: the exported struct fields of the public
// packages have comments, except in fieldDocExempt; the count for the
// whole module is logged, and with TENANTKIT_LIST_FIELDS=1 the fields
// themselves.
func TestExportedFieldsDocumented(t *testing.T) {
	t.Parallel()
	var all int
	for _, sf := range moduleSources(t) {
		if !publicAPI(sf) {
			continue
		}
		_, fields := undocumented(sf)
		for _, f := range fields {
			if selfDescribing(f[strings.LastIndex(f, ".")+1:]) {
				continue
			}
			all++
			if !slices.Contains(fieldDocExempt, path.Dir(sf.path)) {
				t.Errorf("field %s has no comment", f)
			} else if os.Getenv("TENANTKIT_LIST_FIELDS") != "" {
				t.Logf("field %s has no comment", f)
			}
		}
	}
	t.Logf("%d exported struct fields in the public packages have no comment and a name that needs one", all)
}

// TestPackageDocListsEverySuite: the package doc lists every conformance
// suite, a package whose non-test files declare func Run(t *testing.T, ...).
func TestPackageDocListsEverySuite(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	suites := map[string]bool{}
	for _, sf := range moduleSources(t) {
		for _, decl := range sf.file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "Run" || !publicAPI(sf) {
				continue
			}
			if params := fn.Type.Params.List; len(params) > 0 && types.ExprString(params[0].Type) == "*testing.T" {
				suites[path.Dir(sf.path)] = true
			}
		}
	}
	if len(suites) == 0 {
		t.Fatal("no conformance suites found")
	}
	for dir := range suites {
		if !strings.Contains(string(doc), "//   - "+dir+":") {
			t.Errorf("doc.go does not list the conformance suite %s", dir)
		}
	}
}
