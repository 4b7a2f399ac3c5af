// Command soak runs the standalone server (examples/server) as a child
// process, drives it with mixed traffic over every area for a while, and
// samples its memory and goroutines to show whether they stay flat. It is
// run on demand, not in CI:
//
//	go run ./examples/soak -duration 30m                      # SQLite
//	go run ./examples/soak -duration 30m -database-url postgres://postgres@127.0.0.1:5432/test
//
// # What it does
//
//  1. Builds the server (go build -o <tmp>/server ./examples/server, from
//     the module's root) unless -server names a binary.
//  2. With a postgres:// -database-url, creates a fresh schema
//     (tktest_<unix>_soak_<hex>, as store/storetest's IsolatedPostgresURL
//     does) and hands the server the URL with ?search_path=<schema>; the
//     schema and the job engine's <schema>_river are dropped at the end.
//     Without -database-url the server uses SQLite in its DATA_DIR.
//     When that PostgreSQL server runs with autovacuum off (test servers
//     often do), the soak runs VACUUM (ANALYZE) on both schemas every
//     -vacuum-every (1 minute, autovacuum's own default wake-up) in its
//     stead: without it the planner never gets statistics and every
//     updated or deleted row stays behind for index scans to walk, which
//     no production database does. -vacuum-every 0 measures that
//     database instead.
//  3. Starts the server on loopback with a fresh temporary DATA_DIR,
//     ADDR=127.0.0.1:0 and METRICS_ADDR=127.0.0.1:0 (it prints the ports
//     it bound, which the soak reads), a random BOOTSTRAP_API_KEY
//     (tk_<8 hex>.<48 hex>), APP_WEBHOOKS_ALLOW_PRIVATE_URLS=true (webhooks
//     and CALL_WEBHOOK actions go to a receiver inside this process),
//     MOCK_GATEWAY_WEBHOOK_SECRET (signed mock payment webhooks) and
//     LOG_LEVEL=warn (its log goes to <tmp>/server.log); on Linux the
//     server gets SIGTERM if the soak dies first. Rate limiting
//     stays on, as in production: the soak paces the limited routes (rule
//     sets, sign-in, payment webhooks) below their limits.
//  4. Waits for GET /api/ready to answer 200, then sets up, as the
//     bootstrap super admin, a tenant per two workers (organization, a
//     role holding "*", a key and a user per worker), feature toggles, and
//     per tenant a custom entity with fields, three business rules in a
//     set (one of them calls the receiver with CALL_WEBHOOK and emits an
//     event), and a webhook subscribed to every event ("*") pointing at
//     the receiver.
//  5. Runs -workers concurrent workers for -duration, each picking
//     weighted operations over every area: feature toggles (checks,
//     overrides and admin reads as the super admin, temporary toggles),
//     business rules (set executions with durable logs, entity and
//     single-rule executions, rule CRUD, the log, temporary sets with
//     members), custom entities (records created, listed with cf_
//     filters, sorts and search, updated, deleted, exported; definition
//     reads and occasional redefinitions), attachments (text and PNG
//     uploads, the record list, the library, details, tag edits,
//     downloads, thumbnails, transfers, deletes), webhooks (reads, the
//     delivery log, temporary webhooks with a test send, rotation, update
//     and delete, pointing at a flaky receiver path that answers 503 one
//     time in four), payments (mock sessions with automatic and manual
//     capture, partial captures and refunds with operation ids and their
//     replays, cancels, status reads and refreshes, lists and details,
//     mock_processing sessions settled by a signed provider webhook),
//     dashboards (layout read, PUT with If-Match, a stale If-Match that
//     must answer 412, one widget, the widget catalog and every widget's
//     data) and identity (GET /api/auth/me, directory, role and key
//     lists, keys created with a role, used and deleted, sign-in with a
//     password and requests with the session token). Data stays bounded
//     where an area lets it: each worker deletes its oldest records,
//     attachments, rules and keys beyond a cap; payments, execution logs,
//     deliveries and events grow as they would in production.
//     Sign-ins are paced by -logins-per-minute (see the verdict).
//  6. Every -fit-every (5 s) it reads the server's /metrics: go_goroutines,
//     go_memstats_heap_inuse_bytes, go_memstats_heap_alloc_bytes,
//     go_memstats_next_gc_bytes, process_resident_memory_bytes,
//     process_open_fds, tenantkit_http_requests_total, tenantkit_jobs_queued
//     and tenantkit_db_connections. Every -sample-every (30 s), at the
//     start and at the end it prints a row: time, requests so far (the
//     soak's, answered or not), req/s over the interval, 4xx, 5xx,
//     goroutines (at the sample, and g(med): the median of the interval's
//     5-s samples), heap in use (at the sample, and heapFloor: the lowest of
//     the interval's samples), the next GC target, RSS, open fds, queued
//     jobs, open database connections and the requests the receiver got.
//     The first 5xx bodies, requests without an answer and answers with
//     an unexpected status are printed as they happen, and so is a stall
//     (a 5-s interval under a fifth of the median rate; with -pprof the
//     server's goroutines are saved then, into the temporary directory).
//  7. At the end it prints the totals, the idle server before and 5 s after
//     the traffic, each operation's count by status with its mean and
//     longest latency, a condensed Markdown table (a row per
//     -summary-every), each operation's mean latency per condensed
//     interval (to tell a server slowing down as its tables grow from a
//     busier machine: /auth/me and toggle checks read no growing table),
//     the verdict, and the WARN and ERROR lines of the server's log; then
//     it sends SIGTERM to the server and checks that it exits 0 within
//     30 s.
//
// # The verdict: "flat"
//
// The samples before -warmup (default 5m, or a sixth of a run shorter than
// 15m) are left out. The figures judged are per printed row (30 s), over
// that row's 5-s samples, so that a sample landing on a burst of
// in-flight requests or on the top of the GC's sawtooth does not decide:
//
//   - goroutines are flat when the interval medians after the warm-up all
//     lie within ±10% of their median, and their slope over the second
//     half of the run is below +5% of that median per 10 minutes (no
//     monotonic growth);
//   - the heap is flat when the slope of the interval floors of
//     go_memstats_heap_inuse_bytes (the lowest heap in use of each
//     interval: what is live plus what the GC has not returned, without
//     most of the garbage of the moment) over the second half of the run
//     is below +10% of their median per 10 minutes.
//
// The slopes judged are Theil–Sen slopes (the median of the slopes
// between every two rows), which a few outlying rows do not move; the
// least-squares slopes are printed beside them. Reported but not judged:
// the least-squares slope of every heap-in-use sample, of the
// next GC target (about twice the heap live after the last collection),
// of the RSS (which includes SQLite's page cache, outside Go's heap), the
// range of open fds, the most jobs queued. A sign-in hashes its password
// with Argon2id (19 MiB, taken from the heap at once), so sign-ins are
// paced (-logins-per-minute, default 4) to keep them from dominating the
// heap samples. A run shorter than 10 minutes is too short to judge: it
// reports the figures and says so.
//
// To find what a growth comes from, -skip leaves operations or whole areas
// out (-skip rules.crud, -skip payments,webhooks.temp); -csv keeps every
// 5-s sample, and -judge <file.csv> prints a kept run's condensed table
// and verdict again by the current rule, without running anything.
//
// The soak exits 1 when any request answered 5xx, a request failed
// without an answer (a reset or a timeout: the server may have died), the
// verdict is "not flat", or the server did not exit 0 within 30 s of
// SIGTERM; otherwise 0.
//
// Traffic stays on loopback and within bounds: the workers, the receiver
// and the server are on 127.0.0.1, and the workers wait for each answer
// before sending the next request.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg := defaultConfig()
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long the traffic runs")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent workers (a tenant per two)")
	flag.StringVar(&cfg.DatabaseURL, "database-url", "", "postgres://… runs on PostgreSQL in a fresh schema (dropped at the end); empty: SQLite in the temporary DATA_DIR")
	flag.BoolVar(&cfg.FreshSchema, "fresh-schema", cfg.FreshSchema, "with a postgres:// -database-url, create a schema of its own and drop it at the end")
	flag.StringVar(&cfg.Server, "server", "", "a server binary to run (default: go build ./examples/server)")
	flag.DurationVar(&cfg.SampleEvery, "sample-every", cfg.SampleEvery, "interval of the printed samples")
	flag.DurationVar(&cfg.FitEvery, "fit-every", cfg.FitEvery, "interval of the samples each printed row's median goroutines and heap floor are taken over")
	flag.DurationVar(&cfg.SummaryEvery, "summary-every", cfg.SummaryEvery, "interval of the rows of the condensed table")
	flag.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "samples before this are left out of the verdict (shortened to a sixth of a short run)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the temporary directory (DATA_DIR, server.log)")
	flag.IntVar(&cfg.LoginsPerMinute, "logins-per-minute", cfg.LoginsPerMinute, "password sign-ins a minute (each hashes with Argon2id, 19 MiB; at most 15: the server allows 20 a minute per address)")
	flag.BoolVar(&cfg.Pprof, "pprof", false, "run the server with PPROF=1 (net/http/pprof on its metrics listener) and save its goroutines on a stall (into the temporary directory: add -keep)")
	skip := flag.String("skip", "", "operations or areas to leave out, comma-separated (rules.crud, payments, …), to find what a growth comes from")
	judgeCSV := flag.String("judge", "", "judge the samples of an earlier run (its -csv file) and print its condensed table and verdict; runs nothing")
	flag.StringVar(&cfg.CSV, "csv", "", "write every -fit-every sample to this CSV file")
	flag.DurationVar(&cfg.VacuumEvery, "vacuum-every", cfg.VacuumEvery, "on a PostgreSQL server whose autovacuum is off, run VACUUM (ANALYZE) on the soak's schemas this often, as autovacuum would (0: never)")
	flag.Parse()
	if *skip != "" {
		cfg.Skip = strings.Split(*skip, ",")
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "soak: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if cfg.Duration <= 0 || cfg.Workers < 1 || cfg.SampleEvery <= 0 || cfg.FitEvery <= 0 {
		fmt.Fprintln(os.Stderr, "soak: -duration, -workers, -sample-every and -fit-every must be positive")
		os.Exit(2)
	}

	if *judgeCSV != "" {
		v, err := judgeFile(*judgeCSV, cfg, func(format string, args ...any) { fmt.Printf(format+"\n", args...) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		if v.Judged && !v.Flat {
			os.Exit(1)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !res.OK() {
		os.Exit(1)
	}
}

// config is a soak run's settings.
type config struct {
	Duration     time.Duration
	Workers      int
	DatabaseURL  string
	FreshSchema  bool
	Server       string
	SampleEvery  time.Duration
	FitEvery     time.Duration
	SummaryEvery time.Duration
	Warmup       time.Duration
	Keep         bool
	CSV          string
	Skip         []string // operations or areas left out
	Pprof        bool
	// VacuumEvery is how often the soak vacuums and analyzes its
	// PostgreSQL schemas when the server's autovacuum is off (0: never);
	// see vacuum.go.
	VacuumEvery time.Duration
	// IdleSettle is how long the soak waits after the traffic before the
	// idle sample.
	IdleSettle time.Duration
	// LoginsPerMinute paces password sign-ins.
	LoginsPerMinute int
	// Logf prints the run's output (a line each call); nil prints to
	// stdout.
	Logf func(format string, args ...any)
}

func defaultConfig() config {
	return config{
		Duration:     30 * time.Minute,
		Workers:      8,
		FreshSchema:  true,
		SampleEvery:  30 * time.Second,
		FitEvery:     5 * time.Second,
		SummaryEvery: 5 * time.Minute,
		Warmup:       5 * time.Minute,
		VacuumEvery:  time.Minute,

		LoginsPerMinute: 4,
		IdleSettle:      5 * time.Second,
	}
}
