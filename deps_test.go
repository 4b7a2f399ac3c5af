package tenantkit_test

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// modulePath is this module's path; testingHelpers is where the helpers
// only tests use live (multiproc, rulebench, and the explorer's browser
// test module).
const (
	modulePath     = "github.com/tenantkit/tenantkit"
	testingHelpers = modulePath + "/internal/testing/"
)

// testOnlyModules are modules only tests need, which a host must not find
// in its module graph.
var testOnlyModules = []string{"github.com/chromedp/"}

// goList runs the go command in the module's root and returns its output
// lines; the test is skipped when there is no go command.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: the module's dependencies are not checked")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestHostModuleGraph: the modules this module requires (what a host's
// module graph takes from it) include none that only tests need, so
// go get github.com/tenantkit/tenantkit never downloads chromedp.
func TestHostModuleGraph(t *testing.T) {
	t.Parallel()
	for _, mod := range goList(t, "list", "-m", "-f", "{{.Path}}", "all") {
		for _, bad := range testOnlyModules {
			if strings.HasPrefix(mod, bad) {
				t.Errorf("the module graph holds %s, which only tests need: "+
					"move the tests that use it into a module of their own (see internal/testing/explorertest)", mod)
			}
		}
	}
}

// TestHostPackages: a host that imports tenantkit and httpapi builds no
// test helper of internal/testing, and neither those packages nor their
// tests (the packages go mod why looks at) import a test-only module.
func TestHostPackages(t *testing.T) {
	t.Parallel()
	var ours []string
	for _, p := range goList(t, "list", "-deps", "-f", "{{.ImportPath}}", modulePath, modulePath+"/httpapi") {
		if strings.HasPrefix(p, testingHelpers) {
			t.Errorf("a host that imports tenantkit and httpapi builds %s, a test helper", p)
		}
		if p == modulePath || strings.HasPrefix(p, modulePath+"/") {
			ours = append(ours, p)
		}
	}
	if len(ours) < 2 {
		t.Fatalf("go list found %d packages of %s, want the root, httpapi and their imports", len(ours), modulePath)
	}
	args := append([]string{"list", "-deps", "-test", "-f", "{{.ImportPath}}"}, ours...)
	for _, p := range goList(t, args...) {
		for _, bad := range testOnlyModules {
			if strings.HasPrefix(p, bad) {
				t.Errorf("a host that imports tenantkit and httpapi needs %s (through a package or its tests)", p)
			}
		}
	}
}

// TestNoImportOfTestingHelpers: no file of the library but a _test.go
// file imports a package under internal/testing, so the helpers stay out
// of what hosts build (packages under internal/testing may import each
// other).
func TestNoImportOfTestingHelpers(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if filepath.ToSlash(path) == "internal/testing" {
				return filepath.SkipDir
			}
			if path != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, testingHelpers) {
				t.Errorf("%s imports %s: only _test.go files may import test helpers", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files, want the whole library", checked)
	}
}

// pluginCode is the heavy code of the built-in plug-ins: the Stripe
// client, the PDF parser, image codecs and the S3 client, and the
// packages of the module that import them.
var pluginCode = []string{
	"github.com/stripe/stripe-go",
	"github.com/ledongthuc/pdf",
	"image/jpeg",
	"image/png",
	"golang.org/x/image",
	"github.com/minio/minio-go",
	modulePath + "/payments/stripeprovider",
	modulePath + "/attachments/extract",
	modulePath + "/attachments/thumbs",
	modulePath + "/attachments/s3blobs",
}

// isPluginCode reports whether the package p is (in) one of pluginCode.
func isPluginCode(p string) (string, bool) {
	for _, c := range pluginCode {
		if p == c || strings.HasPrefix(p, c+"/") {
			return c, true
		}
	}
	return "", false
}

// smallHost is what a host of feature toggles and business rules that
// mounts httpapi imports (examples/embed/minimal).
var smallHost = []string{modulePath, modulePath + "/httpapi", modulePath + "/httpapi/togglesapi",
	modulePath + "/httpapi/rulesapi", modulePath + "/toggles", modulePath + "/rules"}

// otherAreas are the packages of the areas a host of toggles and rules
// does not compose: their services, their workers and their routes.
var otherAreas = []string{"webhooks", "entities", "attachments", "integrations", "payments", "dashboards",
	"progress", "datasync", "notifications", "jobs/drain"}

// TestSmallHostLinksNoPlugins: a host that composes feature toggles and
// business rules and mounts httpapi (smallHost) links no Stripe, PDF,
// image-decoding or S3 code: those are plug-ins, which package full (and
// attachments/s3blobs) brings. Package full does link them, so the list
// names packages that exist.
func TestSmallHostLinksNoPlugins(t *testing.T) {
	t.Parallel()
	for _, p := range goList(t, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, smallHost...)...) {
		if p == "github.com/jackc/pgx/v5/stdlib" {
			t.Errorf("a host of toggles and rules links %s: the store speaks to PostgreSQL through pgx and pgxpool alone", p)
		}
		if c, ok := isPluginCode(p); ok {
			t.Errorf("a host of toggles and rules with httpapi links %s (%s): an area package or httpapi imports a plug-in; "+
				"move the code behind an interface the plug-in implements (see package full)", p, c)
		}
	}
	linked := map[string]bool{}
	for _, p := range goList(t, "list", "-deps", "-f", "{{.ImportPath}}", modulePath+"/full", modulePath+"/attachments/s3blobs") {
		if c, ok := isPluginCode(p); ok {
			linked[c] = true
		}
	}
	for _, c := range pluginCode {
		if !linked[c] {
			t.Errorf("packages full and attachments/s3blobs link no %s: is the list of plug-in code current?", c)
		}
	}
}

// TestSmallHostLinksNoOtherArea: a host of feature toggles and business
// rules (smallHost) links no package of another area: not its service,
// not its job workers, not its routes (httpapi/<area>api). An area's code
// comes in with its module only; package full links them all, so the
// list names packages that exist.
func TestSmallHostLinksNoOtherArea(t *testing.T) {
	t.Parallel()
	isOther := func(p string) (string, bool) {
		for _, a := range otherAreas {
			for _, pkg := range []string{modulePath + "/" + a, modulePath + "/httpapi/" + a + "api"} {
				if p == pkg || strings.HasPrefix(p, pkg+"/") {
					return a, true
				}
			}
		}
		return "", false
	}
	for _, p := range goList(t, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, smallHost...)...) {
		if a, ok := isOther(p); ok {
			t.Errorf("a host of toggles and rules links %s, of the %s area: a package it imports reaches another area "+
				"(areas meet in their modules, httpapi/<area>api, never in tenantkit, httpapi or store)", p, a)
		}
	}
	linked := map[string]bool{}
	for _, p := range goList(t, "list", "-deps", "-f", "{{.ImportPath}}", modulePath+"/full") {
		if a, ok := isOther(p); ok {
			linked[a] = true
		}
	}
	for _, a := range otherAreas {
		if !linked[a] {
			t.Errorf("package full links no package of %s: is the list of areas current?", a)
		}
	}
}
