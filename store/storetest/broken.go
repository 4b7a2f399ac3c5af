package storetest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// BrokenEnv names the variable that tells a test binary, run again by
// SuiteCatches, which deliberately broken store to run a conformance
// suite against.
const BrokenEnv = "TENANTKIT_BROKEN_STORE"

// Broken returns the broken store this process is to run a conformance
// suite against: "" in an ordinary run, where the helper test that reads
// it should skip.
func Broken() string { return os.Getenv(BrokenEnv) }

// SuiteCatches proves a conformance suite bites. broken maps each
// deliberately broken store's name to the suite's subtest that must catch
// it. For each, it runs the test binary again with only the test named
// helper (which runs the suite against the store Broken names, on
// SQLite: PostgreSQL is switched off in the child) and fails unless the
// child fails, in helper/subtest.
func SuiteCatches(t *testing.T, helper string, broken map[string]string) {
	t.Helper()
	if Broken() != "" {
		t.Skip("in a broken store's child process")
	}
	for name, subtest := range broken {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+helper+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), BrokenEnv+"="+name, PostgresEnv+"=")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed against %s (err %v); output:\n%s", name, err, out)
			}
			if want := "--- FAIL: " + helper + "/" + subtest + " "; !strings.Contains(string(out), want) {
				t.Errorf("against %s the suite failed, but not in %s; output:\n%s", name, subtest, out)
			}
		})
	}
}
