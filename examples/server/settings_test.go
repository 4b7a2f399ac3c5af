package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// TestSettingsMatchREADME: README's configuration table is the settings
// table, row for row, so -help and the README cannot drift.
func TestSettingsMatchREADME(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Configuration")
	if start < 0 {
		t.Fatal("README has no Configuration section")
	}
	var rows []string
	for _, line := range strings.Split(text[start:], "\n") {
		if strings.HasPrefix(line, "## ") && len(rows) > 0 {
			break
		}
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| variable ") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(settings) {
		t.Errorf("README's table has %d rows, settings %d", len(rows), len(settings))
	}
	for i := range min(len(rows), len(settings)) {
		if want := settings[i].markdownRow(); rows[i] != want {
			t.Errorf("README row %d:\n got %s\nwant %s", i+1, rows[i], want)
		}
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	// Every plain variable has its flag, and a flag wins over the
	// environment.
	var args []string
	for _, s := range settings {
		for _, v := range s.variables() {
			args = append(args, "-"+flagName(v), "flag:"+v)
		}
	}
	o, err := parseArgs(args, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	lookup := o.lookup(func(name string) string { return "env:" + name })
	for _, s := range settings {
		for _, v := range s.variables() {
			if got := lookup(v); got != "flag:"+v {
				t.Errorf("%s: %q, want the flag's value", v, got)
			}
		}
	}
	if got := lookup("RATE_LIMIT_LOGIN_POINTS"); got != "env:RATE_LIMIT_LOGIN_POINTS" {
		t.Errorf("a pattern variable without a flag: %q, want the environment's", got)
	}
	if n := len(o.values); n < 30 {
		t.Errorf("only %d variables have flags", n)
	}

	// Refusals are usage errors (exit status 2); -help is not an error.
	for _, bad := range [][]string{{"-bogus"}, {"stray"}, {"-addr"}} {
		if _, err := parseArgs(bad, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
	var help bytes.Buffer
	if _, err := parseArgs([]string{"-help"}, &help); !errors.Is(err, errHelp) || !strings.Contains(help.String(), "-data-dir") ||
		!strings.Contains(help.String(), "BUSINESS_RULES_LOG_RETENTION_DAYS") {
		t.Errorf("-help: %v\n%s", err, help.String())
	}
	env := func(string) string { return "" }
	for _, bad := range [][]string{{"server", "-log-level", "loud"}, {"server", "-log-format", "xml"}, {"server", "-jobs-timeout", "soon"}} {
		err := run(context.Background(), append(bad, "-data-dir", t.TempDir()), env, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

// TestMigrateOnlyAndVersion: -migrate-only applies the migrations into
// the -data-dir given (a flag, with no environment) and exits 0 without
// serving; -version prints the version.
func TestMigrateOnlyAndVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout bytes.Buffer
	env := func(string) string { return "" }
	if err := run(context.Background(), []string{"server", "-migrate-only", "-data-dir", dir, "-log-level", "error"}, env, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "migrations applied") || strings.Contains(stdout.String(), "listening") {
		t.Errorf("stdout: %s", stdout.String())
	}
	db, err := store.Open(t.Context(), "sqlite:"+filepath.Join(dir, "tenantkit.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM store_migrations WHERE line = 'payments'`).Scan(&n); err != nil || n == 0 {
		t.Errorf("payments migrations after -migrate-only: %d, %v", n, err)
	}

	stdout.Reset()
	if err := run(context.Background(), []string{"server", "-version"}, env, &stdout, &bytes.Buffer{}); err != nil || !strings.HasPrefix(stdout.String(), "tenantkit server ") {
		t.Errorf("-version: %v, %q", err, stdout.String())
	}
}
