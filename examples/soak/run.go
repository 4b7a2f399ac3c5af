package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// result is what a run found.
type result struct {
	Engine        string
	Samples       []sample // the printed ones, start and end included
	Fit           []sample // every -fit-every sample
	IdleBefore    sample   // before the traffic (after the setup)
	IdleAfter     *sample  // config.IdleSettle after the traffic stopped
	Verdict       verdict
	Requests      int64
	Elapsed       time.Duration
	N5xx          int64
	Transport     int64
	Unexpected    int64
	ServerExit    string // "" when it exited 0 within 30 s of SIGTERM
	ShutdownTook  time.Duration
	Interrupted   bool
	ServerDied    bool
	ServerWarns   int
	ServerErrors  int
	ReceiverHits  int64
	ReceiverFails int64
}

// OK reports whether the run passed: no 5xx, no request without an
// answer, a flat verdict (or one not judged, for a short run) and a clean
// shutdown.
func (r *result) OK() bool {
	return r.N5xx == 0 && r.Transport == 0 && !r.ServerDied && !r.Interrupted && r.ServerExit == "" &&
		(!r.Verdict.Judged || r.Verdict.Flat)
}

func run(ctx context.Context, cfg config) (*result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	}
	if cfg.Warmup*3 > cfg.Duration {
		cfg.Warmup = cfg.Duration / 6
	}
	res := &result{Engine: "sqlite"}
	if _, _, err := pickable(cfg.Skip); err != nil {
		return nil, err
	}

	tmp, err := os.MkdirTemp("", "tenantkit-soak-")
	if err != nil {
		return nil, err
	}
	if cfg.Keep {
		logf("temporary directory (kept): %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	bin := cfg.Server
	if bin == "" {
		logf("building the server…")
		if bin, err = buildServer(ctx, tmp); err != nil {
			return nil, err
		}
	}

	dbURL := cfg.DatabaseURL
	if isPostgres(dbURL) {
		res.Engine = "postgres"
		if cfg.FreshSchema {
			schema, err := storetest.NewSchema(dbURL, "soak")
			if err != nil {
				return nil, fmt.Errorf("create a schema: %w", err)
			}
			logf("PostgreSQL schema %s (dropped at the end)", schema.Name)
			defer func() {
				if err := schema.Drop(); err != nil {
					logf("drop schema %s: %v", schema.Name, err)
				}
			}()
			dbURL = schema.URL
		}
	} else if dbURL != "" {
		res.Engine = strings.SplitN(dbURL, ":", 2)[0]
	}

	recv := newReceiver()
	defer recv.Close()

	bootKey := "tk_" + randomHex(4) + "." + randomHex(24)
	mockSecret := "soak-" + randomHex(16)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
		"ADDR=127.0.0.1:0",
		"DATA_DIR=" + filepath.Join(tmp, "data"),
		"BOOTSTRAP_API_KEY=" + bootKey,
		"METRICS_ADDR=127.0.0.1:0",
		"APP_WEBHOOKS_ALLOW_PRIVATE_URLS=true",
		"MOCK_GATEWAY_WEBHOOK_SECRET=" + mockSecret,
		"LOG_LEVEL=warn",
	}
	if dbURL != "" {
		env = append(env, "DATABASE_URL="+dbURL)
	}
	if cfg.Pprof {
		env = append(env, "PPROF=1")
	}
	srv, err := startServer(bin, env, filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	defer srv.kill()
	logf("server %s: API %s, metrics %s, engine %s, %d workers, %s", bin, srv.api, srv.metrics, res.Engine, cfg.Workers, cfg.Duration)

	c := newClient(srv.api, cfg.Workers, logf)
	if err := waitReady(ctx, c, srv, 2*time.Minute); err != nil {
		return nil, err
	}
	e, err := setup(ctx, c, cfg, recv, bootKey, mockSecret)
	if err != nil {
		return nil, fmt.Errorf("setup: %w\nserver log:\n%s", err, srv.logTail())
	}
	logf("set up %d tenants, %d workers; traffic for %s (warm-up %s)", len(e.tenants), len(e.workers), cfg.Duration, cfg.Warmup)

	// The traffic: workers until the deadline, the sampler alongside.
	sm := &sampler{metricsURL: srv.metrics, stats: c.st, recv: recv, hc: &http.Client{Timeout: 20 * time.Second}, logf: logf}
	if cfg.Pprof {
		sm.dumpDir = tmp
	}
	sm.header()
	start := time.Now()
	end := start.Add(cfg.Duration)
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		select {
		case <-srv.exited:
			res.ServerDied = true
			logf("THE SERVER EXITED during the run: %v", srv.waitErr)
			stopTraffic()
		case <-trafficCtx.Done():
		}
	}()

	if isPostgres(dbURL) && cfg.VacuumEvery > 0 {
		av := autovacuum{url: dbURL, every: cfg.VacuumEvery, logf: logf}
		waitVacuum, err := av.start(trafficCtx)
		if err != nil {
			return nil, err
		}
		defer func() { stopTraffic(); waitVacuum() }() // on every return, also before the traffic's own stop
	}

	first, err := sm.take(0)
	if err != nil {
		return nil, fmt.Errorf("first sample: %w", err)
	}
	sm.row(first)
	var wg sync.WaitGroup
	for _, w := range e.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(trafficCtx, end)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	fit := time.NewTicker(cfg.FitEvery)
	defer fit.Stop()
	deadline := time.NewTimer(cfg.Duration)
	defer deadline.Stop()
	nextRow := cfg.SampleEvery
	lastTaken := false
loop:
	for {
		select {
		case <-done:
			break loop
		case <-deadline.C:
			// The last row, while the workers finish their last operation.
			if s, err := sm.take(time.Since(start)); err == nil {
				sm.row(s)
				lastTaken = true
			} else {
				logf("sample at the end: %v", err)
			}
		case <-fit.C:
			at := time.Since(start)
			if at >= cfg.Duration-cfg.FitEvery/2 {
				continue // the deadline's sample is due
			}
			s, err := sm.take(at)
			if err != nil {
				logf("sample at %s: %v", fmtDur(at), err)
				continue
			}
			sm.watchStall()
			if at >= nextRow-cfg.FitEvery/2 {
				sm.row(s)
				for nextRow <= at+cfg.FitEvery/2 {
					nextRow += cfg.SampleEvery
				}
			}
		}
	}
	res.Elapsed = time.Since(start)
	stopTraffic()
	<-monitorDone
	if ctx.Err() != nil {
		res.Interrupted = true
		logf("interrupted")
	}
	if !res.ServerDied && !lastTaken {
		if s, err := sm.take(res.Elapsed); err == nil {
			sm.row(s)
		} else {
			logf("final sample: %v", err)
		}
	}
	res.Samples, res.Fit = sm.rows, sm.fit
	res.IdleBefore = first
	if !res.ServerDied && !res.Interrupted {
		// Idle again: what is left once the traffic has stopped.
		time.Sleep(cfg.IdleSettle)
		if s, err := sm.take(time.Since(start)); err == nil {
			res.IdleAfter = &s
			sm.fit = sm.fit[:len(sm.fit)-1] // not part of the traffic
		}
	}

	res.Requests = c.st.total.Load()
	res.N5xx = c.st.class[5].Load()
	res.Transport = c.st.transport.Load()
	res.Unexpected = c.st.unexpected.Load()
	res.ReceiverHits, res.ReceiverFails = recv.hits.Load(), recv.failed.Load()
	res.Verdict = judge(res.Fit, res.Samples, cfg, res.Elapsed)
	if cfg.CSV != "" {
		if err := writeCSV(cfg.CSV, res.Fit); err != nil {
			logf("csv: %v", err)
		}
	}
	report(logf, res, c.st, recv, cfg)
	res.ServerWarns, res.ServerErrors = srv.logSummary(logf)

	if !res.ServerDied {
		took, err := srv.terminate(30 * time.Second)
		res.ShutdownTook = took
		if err != nil {
			res.ServerExit = err.Error()
			logf("shutdown: %v", err)
		} else {
			logf("shutdown: SIGTERM → exit 0 in %s", took.Round(10*time.Millisecond))
		}
	} else {
		res.ServerExit = fmt.Sprint(srv.waitErr)
	}
	if res.OK() {
		logf("RESULT: PASS")
	} else {
		logf("RESULT: FAIL")
	}
	return res, nil
}

// buildServer builds examples/server into dir from the module's root.
func buildServer(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the tenantkit module: run from its directory or pass -server")
	}
	bin := filepath.Join(dir, "server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/server")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/server: %w\n%s", err, out)
	}
	return bin, nil
}

// server is the child process.
type server struct {
	cmd      *exec.Cmd
	api      string // http://127.0.0.1:port/api
	metrics  string // http://127.0.0.1:port/metrics
	logPath  string
	logFile  *os.File
	exited   chan struct{}
	waitErr  error
	stopping atomic.Bool
}

var (
	listeningLine = regexp.MustCompile(`listening on (http://\S+/api)`)
	metricsLine   = regexp.MustCompile(`metrics on (http://\S+/metrics)`)
)

// startServer runs bin with env, its stderr into logPath, and waits for
// the addresses it prints.
func startServer(bin string, env []string, logPath string) (*server, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &server{logPath: logPath, logFile: logFile, exited: make(chan struct{})}
	s.cmd = exec.Command(bin)
	s.cmd.Env = env
	dieWithParent(s.cmd)
	s.cmd.Stderr = logFile
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-time.After(time.Second): // nobody reads any more
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	deadline := time.After(2 * time.Minute)
	for s.api == "" || s.metrics == "" {
		select {
		case l := <-lines:
			if m := listeningLine.FindStringSubmatch(l); m != nil {
				s.api = m[1]
			}
			if m := metricsLine.FindStringSubmatch(l); m != nil {
				s.metrics = m[1]
			}
		case <-s.exited:
			return nil, fmt.Errorf("the server exited before listening: %v\n%s", s.waitErr, s.logTail())
		case <-deadline:
			s.kill()
			return nil, fmt.Errorf("the server printed no addresses within 2 minutes\n%s", s.logTail())
		}
	}
	return s, nil
}

// terminate sends SIGTERM and waits up to limit for exit status 0.
func (s *server) terminate(limit time.Duration) (time.Duration, error) {
	s.stopping.Store(true)
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-s.exited:
		took := time.Since(start)
		if s.waitErr != nil {
			return took, fmt.Errorf("the server exited with %v after SIGTERM\n%s", s.waitErr, s.logTail())
		}
		return took, nil
	case <-time.After(limit):
		s.kill()
		return limit, fmt.Errorf("the server did not exit within %s of SIGTERM (killed)", limit)
	}
}

// kill ends the process if it still runs.
func (s *server) kill() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.logFile.Close()
}

// logTail returns the end of the server's log.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// logSummary counts the WARN and ERROR lines of the server's log and
// prints the first few of each.
func (s *server) logSummary(logf func(string, ...any)) (warns, errs int) {
	f, err := os.Open(s.logPath)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var firstW, firstE []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "level=ERROR"):
			errs++
			if len(firstE) < 5 {
				firstE = append(firstE, l)
			}
		case strings.Contains(l, "level=WARN"):
			warns++
			if len(firstW) < 5 {
				firstW = append(firstW, l)
			}
		}
	}
	logf("server log (LOG_LEVEL=warn): %d WARN lines, %d ERROR lines", warns, errs)
	for _, l := range firstE {
		logf("  %s", truncate(l, 600))
	}
	for _, l := range firstW {
		logf("  %s", truncate(l, 600))
	}
	return warns, errs
}

// waitReady polls GET /api/ready until it answers 200.
func waitReady(ctx context.Context, c *client, s *server, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := c.hc.Get(c.base + "/ready")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("GET /api/ready: %d %s after %s", resp.StatusCode, body, limit)
			}
		} else if time.Now().After(deadline) {
			return fmt.Errorf("GET /api/ready: %v after %s", err, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.exited:
			return fmt.Errorf("the server exited: %v\n%s", s.waitErr, s.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isPostgres(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// receiver is the HTTP endpoint inside the soak that webhooks and
// CALL_WEBHOOK actions deliver to. /flaky answers 503 one time in four.
type receiver struct {
	*httptest.Server
	hits, failed atomic.Int64
	mu           sync.Mutex
	byPath       map[string]int64
}

func newReceiver() *receiver {
	r := &receiver{byPath: map[string]int64{}}
	var n atomic.Int64
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		r.hits.Add(1)
		kind := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 2)[0]
		r.mu.Lock()
		r.byPath[kind]++
		r.mu.Unlock()
		if kind == "flaky" && n.Add(1)%4 == 0 {
			r.failed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return r
}

func (r *receiver) counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.byPath))
	for k, v := range r.byPath {
		out[k] = v
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// oneLine makes a response body printable on one line.
func oneLine(b []byte) string {
	return truncate(string(bytes.Join(bytes.Fields(b), []byte(" "))), 400)
}
