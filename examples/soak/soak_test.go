package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSoakShort runs the soak for 10 seconds on SQLite (and for 5 on
// PostgreSQL when TENANTKIT_TEST_POSTGRES_URL is set, in parallel; its
// migrations take longer): every area answers
// without a 5xx, every request gets an answer, samples are taken, and the
// server exits 0 on SIGTERM. Too short for the verdict, which is not
// judged.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server process for 10 s")
	}
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, "../server").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	type engine struct {
		url      string
		duration time.Duration
	}
	engines := map[string]engine{"sqlite": {"", 10 * time.Second}}
	if u := os.Getenv("TENANTKIT_TEST_POSTGRES_URL"); u != "" {
		engines["postgres"] = engine{u, 5 * time.Second}
	}
	for name, eng := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			cfg.Duration = eng.duration
			cfg.Workers = 4
			cfg.SampleEvery = 2 * time.Second
			cfg.FitEvery = time.Second
			cfg.SummaryEvery = 5 * time.Second
			cfg.IdleSettle = time.Second
			cfg.Server = bin
			cfg.DatabaseURL = eng.url
			cfg.Logf = t.Logf
			res, err := run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.N5xx != 0 {
				t.Errorf("%d responses were 5xx", res.N5xx)
			}
			if res.Transport != 0 {
				t.Errorf("%d requests got no answer", res.Transport)
			}
			if res.Unexpected != 0 {
				t.Errorf("%d responses had a status the soak did not expect (see the log)", res.Unexpected)
			}
			if want := int(eng.duration / cfg.SampleEvery); len(res.Samples) < want || len(res.Fit) < 2*want {
				t.Errorf("%d printed and %d fitted samples, want at least %d and %d", len(res.Samples), len(res.Fit), want, 2*want)
			}
			for _, s := range res.Samples {
				if s.Goroutines == 0 || s.HeapInuse == 0 || s.RSS == 0 || s.FDs == 0 {
					t.Errorf("sample at %s lacks a figure: %+v", s.At, s)
				}
			}
			if res.Requests < 100 {
				t.Errorf("only %d requests in %s", res.Requests, eng.duration)
			}
			if res.Verdict.Judged {
				t.Errorf("a %s run was judged", eng.duration)
			}
			if res.ServerExit != "" || res.ServerDied {
				t.Errorf("server: %s (died during the run: %v)", res.ServerExit, res.ServerDied)
			}
			if !res.OK() {
				t.Error("the run did not pass")
			}
		})
	}
}
