// Command server runs the tenantkit REST API standalone, configured from the
// environment or by the same settings as flags (settings.go: a flag per
// plain variable, winning over the environment; -help, -migrate-only,
// -version; a bad flag or value exits 2).
//
//	go run ./examples/server
//
// With no configuration it keeps everything under ./data: the SQLite
// database (data/tenantkit.db), stored files (data/files) and the secret key
// (data/secret.key, generated on first start with mode 0600). On first start
// it creates a default tenant and organization and, unless BOOTSTRAP_API_KEY
// is set, a super-admin API key that it prints once to stdout:
//
//	Super-admin API key (shown once): <key>
//
// Try it with
//
//	curl -H "X-Api-Key: <key>" http://localhost:8080/api/auth/me
//
// # Environment
//
//	ADDR               listen address (default ":8080"); the API is at http://ADDR/api.
//	                   "127.0.0.1:0" picks a free port.
//	DATA_DIR           database, files and secret key (default "./data").
//	DATABASE_URL       default "sqlite:DATA_DIR/tenantkit.db"; "postgres://…" selects
//	                   PostgreSQL (several processes may share one database).
//	APP_SECRET_KEY     encrypts stored secrets and signs session tokens; any string of
//	                   at least 32 bytes. Unset: the contents of DATA_DIR/secret.key,
//	                   generated on first start (64 hex characters, used as they are,
//	                   so copying the file's contents into APP_SECRET_KEY keeps the
//	                   same key).
//	BOOTSTRAP_API_KEY  if set, a super-admin API key with exactly this secret exists
//	                   for the default tenant and organization (idempotent).
//	ADMIN_EMAIL,       if both set, a super-admin user with these credentials exists.
//	ADMIN_PASSWORD     Setting only one of them is an error.
//	LOG_LEVEL          debug, info (default), warn or error. Logs go to stderr,
//	                   one access line per request at info (written out in
//	                   batches within 100 ms; see logbuffer.go).
//	LOG_FORMAT         text (default) or json (one JSON object per line).
//	METRICS_ADDR       unset (default: off) or an address: Prometheus
//	                   metrics at GET /metrics on a listener of its own.
//	PPROF              1 adds net/http/pprof under /debug/pprof/ on the
//	                   metrics listener.
//	GOGC               the garbage collector's target, as Go reads it (a
//	                   percentage or off); default 200, not Go's 100.
//
// Rate limiting reads these variables (see ratelimit.ConfigFromEnv):
//
//	RATE_LIMIT_ENABLED            true (default) or false.
//	RATE_LIMIT_STRATEGY           memory (default) or redis (needs REDIS_URL,
//	                              e.g. redis://127.0.0.1:6379/0); anything else
//	                              fails the start.
//	RATE_LIMIT_KEY_PREFIX         default "rl".
//	RATE_LIMIT_TRUST_PROXY_DEPTH  proxies in front of the server (default 0:
//	                              X-Forwarded-For is ignored and all clients
//	                              share one bucket per endpoint).
//	RATE_LIMIT_<NAME>_POINTS, _DURATION, _BLOCK_DURATION for LOGIN, LOGIN_IP,
//	                              RESET, RESET_IP, RESET_CONFIRM, 2FA_VERIFY.
//	APP_INTEGRATION_TEST=true     turns all limiting off.
//	APP_TEST_MODE=1 with APP_TEST_AUTH_RATE_LIMIT_MODE=opt-in makes the sign-in
//	                              limits apply only to requests sending
//	                              "x-app-test-rate-limit: on".
//
// Attachments (files are stored under DATA_DIR/files unless FILES_URL says
// otherwise: postgres or s3://…, which several processes can share; see
// files.go and -copy-files-to):
//
//	FILES_URL                           file://DIR, postgres or s3://BUCKET/PREFIX?endpoint=…
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  the S3 credentials.
//	APP_ATTACHMENT_MAX_UPLOAD_MB        largest upload in MB (default 25).
//	APP_ATTACHMENT_TENANT_QUOTA_MB      each tenant's stored total in MB (default 512).
//	APP_DEFAULT_ATTACHMENT_OCR_ENABLED  new partitions extract text (default true).
//	APP_ATTACHMENT_PARTITIONS_LOCKED    true refuses partition changes with 403.
//	APP_ATTACHMENT_IMAGE_MEMORY_MB      memory of a process's image resizes in MB (default 128).
//
// Business rules:
//
//	BUSINESS_RULES_LOG_RETENTION_DAYS  execution log retention in whole days
//	                                   (default 90; 0 keeps the log forever).
//	APP_WEBHOOKS_ALLOW_PRIVATE_URLS    true lets webhooks and CALL_WEBHOOK
//	                                   actions target private and loopback
//	                                   addresses.
//	JOBS_TIMEOUT, JOBS_RESCUE_STUCK_AFTER  background jobs' time limit (60 s)
//	                                   and how long a job may stay running
//	                                   before River runs it again as stuck
//	                                   (300 s), in seconds: the backstop; a
//	                                   killed process's jobs run again
//	                                   within seconds (their leases).
//	APP_INBOUND_WEBHOOKS               inbound endpoints: a JSON object of
//	                                   endpoint id → {"adapter":"standard",
//	                                   "secret":"whsec_…", "tenantId"?}.
//
// Password-reset tokens are not mailed: the server logs them (with the
// email address) at INFO level.
//
// # Timeouts
//
// The API's listener gives a client 10 s to send a request's headers
// (ReadHeaderTimeout), 60 s to send the whole request from its first byte
// (ReadTimeout), 120 s from the end of its headers to the answer's last
// byte (WriteTimeout), and closes a keep-alive connection idle for 120 s
// (IdleTimeout); the event stream sets its own deadlines (httpapi). All
// four are kept, each against a slow or stalled client: headers dribbled
// in, a body trickled, an answer never read, a connection held open. Each
// costs a deadline set on the connection per request: ReadTimeout and
// WriteTimeout together measured about 1.5% of the server's CPU a request
// on its cheapest route (a cached toggle check), which does not pay for
// the protection that dropping them would lose (BENCHMARKS.md,
// "toggles-check: SQLite against PostgreSQL, the timeouts and the access
// line").
//
// # Output and shutdown
//
// Stdout carries only what an operator must see: the generated API key
// (first start only) and, once the listener is bound, the line
//
//	listening on http://HOST:PORT/api
//
// with the actual address (tests start the server on 127.0.0.1:0 and read
// the port from this line). Everything else is logged to stderr.
//
// SIGINT or SIGTERM stops accepting connections, waits up to 30 s for
// in-flight requests, then up to 30 s for running background jobs (jobs cut
// short run again on the next start), and exits 0. Startup errors are
// printed to stderr and exit 1.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/metrics"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/webhooks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, errHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// defaultGCPercent is the server's GOGC when none is set: the collector
// runs when the heap has grown by twice what the last collection kept,
// rather than once. The server keeps 15-20 MiB live, so Go's default
// collected many times a second under load; at 200 a dry-run rule
// execution took a quarter less time in-process, for about 20 MiB more
// memory at peak (BENCHMARKS.md, "The server's GOGC").
const defaultGCPercent = 200

// setGCPercent applies GOGC as the Go runtime reads it (a whole percentage
// or "off"), or defaultGCPercent when it is empty. The runtime has already
// applied the environment's value; this applies the flag's and the
// default.
func setGCPercent(v string) error {
	switch {
	case v == "":
		debug.SetGCPercent(defaultGCPercent)
	case v == "off":
		debug.SetGCPercent(-1)
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("GOGC: want a whole percentage or off, not %q", v)
		}
		debug.SetGCPercent(n)
	}
	return nil
}

// badSetting marks err as a setting the server refuses (exit status 2).
func badSetting(err error) error { return fmt.Errorf("%w: %w", errUsage, err) }

// Shutdown budgets: in-flight requests first, then background jobs.
const (
	drainRequests = 30 * time.Second
	drainJobs     = 30 * time.Second
)

// minBootstrapKey is the length below which BOOTSTRAP_API_KEY draws a
// warning (it is still accepted: the contract says "exactly this secret").
const minBootstrapKey = 16

// rulesFromEnv reads the business rules' settings:
// BUSINESS_RULES_LOG_RETENTION_DAYS (whole days, default 90, 0 keeps the
// execution log forever) and APP_WEBHOOKS_ALLOW_PRIVATE_URLS (CALL_WEBHOOK
// may reach private addresses).
func rulesFromEnv(getenv func(string) string) (rules.Options, error) {
	var opts rules.Options
	if v := getenv("BUSINESS_RULES_LOG_RETENTION_DAYS"); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 0 {
			return opts, fmt.Errorf("BUSINESS_RULES_LOG_RETENTION_DAYS: want a whole number of days (0 keeps logs forever), got %q", v)
		}
		opts.LogRetention = time.Duration(days) * 24 * time.Hour
		if days == 0 {
			opts.LogRetention = -1
		}
	}
	if v := getenv("APP_WEBHOOKS_ALLOW_PRIVATE_URLS"); v != "" {
		allow, err := strconv.ParseBool(v)
		if err != nil {
			return opts, fmt.Errorf("APP_WEBHOOKS_ALLOW_PRIVATE_URLS: want true or false, got %q", v)
		}
		opts.AllowPrivateURLs = allow
	}
	return opts, nil
}

// jobsFromEnv reads the job engine's time limits: JOBS_TIMEOUT (seconds
// one attempt of a job may run, default 60) and JOBS_RESCUE_STUCK_AFTER
// (seconds after which River takes a job still running for stuck and
// runs it again, the backstop of the jobs' leases; default 300; it must exceed
// JOBS_TIMEOUT and every worker's own limit, 100 s for webhook drains).
func jobsFromEnv(getenv func(string) string) (jobs.Config, error) {
	var cfg jobs.Config
	for name, dst := range map[string]*time.Duration{"JOBS_TIMEOUT": &cfg.JobTimeout, "JOBS_RESCUE_STUCK_AFTER": &cfg.RescueStuckAfter} {
		if v := getenv(name); v != "" {
			secs, err := strconv.Atoi(v)
			if err != nil || secs <= 0 {
				return cfg, fmt.Errorf("%s: want a whole number of seconds, got %q", name, v)
			}
			*dst = time.Duration(secs) * time.Second
		}
	}
	if cfg.RescueStuckAfter != 0 && cfg.RescueStuckAfter <= cmp.Or(cfg.JobTimeout, time.Minute) {
		return cfg, errors.New("JOBS_RESCUE_STUCK_AFTER must exceed JOBS_TIMEOUT (60 s by default)")
	}
	return cfg, nil
}

// secretKeyFile is the name of the generated key in DATA_DIR.
const secretKeyFile = "secret.key"

// run starts the server and blocks until ctx is cancelled (then shuts down
// cleanly and returns nil) or the server fails. args is unused: all
// configuration comes from getenv.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		args = args[1:] // the program's name
	}
	opts, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	if opts.version {
		fmt.Fprintln(stdout, version())
		return nil
	}
	getenv = opts.lookup(getenv)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(env("LOG_LEVEL", "info"))); err != nil {
		return badSetting(fmt.Errorf("LOG_LEVEL: want debug, info, warn or error: %w", err))
	}
	var newHandler, newAccessHandler func(io.Writer) slog.Handler
	switch format := env("LOG_FORMAT", "text"); format {
	case "text":
		newHandler = func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}) }
		// The same lines, the access line written without slog's
		// generic formatting (textlines.go).
		newAccessHandler = func(w io.Writer) slog.Handler { return newTextLines(w, level) }
	case "json":
		newHandler = func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}) }
		newAccessHandler = newHandler
	default:
		return badSetting(fmt.Errorf("LOG_FORMAT: want text or json, not %q", format))
	}
	logger := slog.New(newHandler(stderr))
	// The HTTP handler's logger (access lines, 5xx errors) writes through
	// a buffer (logbuffer.go), written out at shutdown.
	accessBuf := newLineBuffer(stderr, accessFlushEvery, accessBufferMax)
	defer accessBuf.Flush()
	httpLogger := slog.New(flushAtWarn{newAccessHandler(accessBuf), accessBuf})

	if err := setGCPercent(getenv("GOGC")); err != nil {
		return badSetting(err)
	}

	addr := env("ADDR", ":8080")
	dataDir := env("DATA_DIR", "./data")
	if err := os.MkdirAll(filepath.Join(dataDir, "files"), 0o700); err != nil {
		return fmt.Errorf("DATA_DIR: %w", err)
	}
	databaseURL := env("DATABASE_URL", "sqlite:"+filepath.Join(dataDir, "tenantkit.db"))
	secret, err := secretKey(getenv("APP_SECRET_KEY"), dataDir, logger)
	if err != nil {
		return err
	}
	boot := identity.BootstrapInput{
		APIKey:        getenv("BOOTSTRAP_API_KEY"),
		AdminEmail:    getenv("ADMIN_EMAIL"),
		AdminPassword: getenv("ADMIN_PASSWORD"),
	}
	if (boot.AdminEmail == "") != (boot.AdminPassword == "") {
		return badSetting(errors.New("ADMIN_EMAIL and ADMIN_PASSWORD must be set together"))
	}
	if boot.APIKey != "" && len(boot.APIKey) < minBootstrapKey {
		logger.Warn("BOOTSTRAP_API_KEY is short and easy to guess; use at least 32 random characters", "length", len(boot.APIKey))
	}

	limitCfg, err := ratelimit.ConfigFromEnv(getenv, logger)
	if err != nil {
		return badSetting(err)
	}
	logger.Info("rate limiting", "enabled", limitCfg.Enabled, "strategy", limitCfg.Strategy,
		"trustProxyDepth", limitCfg.TrustProxyDepth, "authOptIn", limitCfg.AuthOptIn)

	rulesCfg, err := rulesFromEnv(getenv)
	if err != nil {
		return badSetting(err)
	}
	jobsCfg, err := jobsFromEnv(getenv)
	if err != nil {
		return badSetting(err)
	}

	attachmentsCfg, err := attachments.OptionsFromEnv(getenv)
	if err != nil {
		return badSetting(err)
	}

	inbound, err := webhooks.ParseInboundEndpoints(getenv("APP_INBOUND_WEBHOOKS"))
	if err != nil {
		return badSetting(fmt.Errorf("APP_INBOUND_WEBHOOKS: %w", err))
	}

	files, err := parseFilesLocation("FILES_URL", getenv("FILES_URL"), dataDir, databaseURL, getenv)
	if err != nil {
		return badSetting(err)
	}
	var copyTo filesLocation
	if opts.copyFilesTo != "" {
		if copyTo, err = parseFilesLocation("-copy-files-to", opts.copyFilesTo, dataDir, databaseURL, getenv); err != nil {
			return badSetting(err)
		}
	}

	logger.Info("opening database", describeDatabase(databaseURL)...)
	kitCfg := full.Config{DatabaseURL: databaseURL, SecretKey: secret, Logger: logger, Rules: rulesCfg,
		Webhooks: webhooks.Options{AllowPrivateURLs: rulesCfg.AllowPrivateURLs}, Jobs: jobsCfg,
		Attachments: attachmentsCfg,
		Payments:    payments.Options{Credentials: payments.EnvCredentials{Getenv: getenv}},
		Identity:    identity.Options{Mailer: logMailer{logger}}}
	if err := files.configure(ctx, &kitCfg); err != nil {
		return err
	}
	logger.Info("attachments' files", "location", files.String())
	warnUnshared(logger, files, databaseURL)
	kit, err := full.Open(ctx, kitCfg)
	if err != nil {
		return err
	}
	closeKit := func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainJobs)
		defer cancel()
		return kit.Close(cctx)
	}

	for id, ep := range inbound {
		kit.Webhooks.AddEndpoint(id, ep)
	}

	svc := kit.Identity
	if opts.migrateOnly { // opening the Kit migrated every area
		logger.Info("migrations applied; exiting (-migrate-only)")
		fmt.Fprintln(stdout, "migrations applied")
		return closeKit()
	}
	if opts.copyFilesTo != "" {
		return errors.Join(copyFiles(ctx, kit, files, copyTo, logger, stdout), closeKit())
	}
	releaseFiles, err := claimFiles(ctx, kit.DB, files)
	if err != nil {
		return errors.Join(err, closeKit())
	}
	closeDB := closeKit
	closeKit = func() error {
		releaseFiles() // its connection closes before the database does
		return closeDB()
	}
	limits, err := ratelimit.Open(limitCfg, logger)
	if err != nil {
		return errors.Join(err, closeKit())
	}
	defer limits.Close()
	res, err := svc.Bootstrap(ctx, boot)
	if err != nil {
		return errors.Join(fmt.Errorf("bootstrap: %w", err), closeKit())
	}
	logger.Info("bootstrap done", "tenantId", res.TenantID, "organizationId", res.OrganizationID, "firstStart", res.FirstStart)
	if res.GeneratedAPIKey != "" {
		fmt.Fprintf(stdout, "\n"+
			"=====================================================================\n"+
			"Super-admin API key (shown once): %s\n"+
			"Store it now; it is not shown again.\n"+
			"=====================================================================\n\n",
			res.GeneratedAPIKey)
	}

	// The metrics watch the job engine from before it starts.
	metricsAddr := getenv("METRICS_ADDR")
	var m *metrics.Metrics
	if metricsAddr != "" {
		m = metrics.New(kit.DB)
		m.WatchJobs(kit.Jobs)
		m.WatchLimiter(limits)
		m.WatchWebhooks(kit.Webhooks)
		m.WatchToggles(kit.Toggles)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Join(err, closeKit())
	}
	// Jobs get a context that SIGTERM does not cancel: cancelling it would
	// cut running jobs short; kit.Close drains them instead.
	if err := kit.Start(context.WithoutCancel(ctx)); err != nil {
		ln.Close()
		return errors.Join(err, closeKit())
	}

	var observer httpapi.RequestObserver
	var metricsSrv *http.Server
	if m != nil {
		observer = m
		mln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			ln.Close()
			return errors.Join(fmt.Errorf("METRICS_ADDR: %w", err), closeKit())
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		if getenv("PPROF") == "1" {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() { _ = metricsSrv.Serve(mln) }()
		logger.Info("metrics on http://" + mln.Addr().String() + "/metrics")
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", mln.Addr())
	}

	api, err := httpapi.New(kit.Kit, httpapi.Options{Logger: httpLogger, RateLimit: limits, AccessLog: true, Metrics: observer})
	if err != nil {
		return errors.Join(err, closeKit())
	}
	// The four timeouts and why each stays: the package doc, "Timeouts".
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	bound := ln.Addr().String()
	logger.Info("listening on http://" + bound + "/api")
	fmt.Fprintf(stdout, "listening on http://%s/api\n", bound)

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down: draining requests, then jobs")
	case serveErr = <-served:
		logger.Error("server stopped", "err", serveErr)
	}

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainRequests)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	if metricsSrv != nil {
		_ = metricsSrv.Close()
	}
	if shutdownErr != nil {
		shutdownErr = fmt.Errorf("shutdown: %w", shutdownErr)
	}
	if err := errors.Join(serveErr, shutdownErr, closeKit()); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// secretKey returns the key from APP_SECRET_KEY, or the one kept in
// DATA_DIR/secret.key, generating that file on first start.
func secretKey(fromEnv, dataDir string, logger *slog.Logger) ([]byte, error) {
	if fromEnv != "" {
		if len(fromEnv) < 32 {
			return nil, errors.New("APP_SECRET_KEY must be at least 32 bytes")
		}
		return []byte(fromEnv), nil
	}
	path := filepath.Join(dataDir, secretKeyFile)
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}

	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	key = []byte(hex.EncodeToString(raw[:]))
	// O_EXCL: if another process created the file meanwhile, use its key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	_, err = f.Write(append(key, '\n'))
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("secret key: %w", err)
	}
	logger.Info("generated secret key", "path", path)
	return key, nil
}

func readKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(string(b))
	if len(key) < 32 {
		return nil, fmt.Errorf("%s: the key must be at least 32 bytes (delete the file to generate a new one; stored secrets and sessions are then lost)", path)
	}
	return []byte(key), nil
}

// describeDatabase returns log attributes naming the engine and where the
// data is, never a password.
func describeDatabase(databaseURL string) []any {
	if path, ok := strings.CutPrefix(databaseURL, "sqlite:"); ok {
		return []any{"engine", "sqlite", "path", path}
	}
	if strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://") {
		attrs := []any{"engine", "postgres"}
		if u, err := url.Parse(databaseURL); err == nil {
			attrs = append(attrs, "host", u.Host, "database", strings.TrimPrefix(u.Path, "/"))
		}
		return attrs
	}
	return []any{"engine", "unknown"}
}

// logMailer "delivers" password-reset tokens by logging them, so an
// operator of the standalone server can pass them on.
type logMailer struct{ logger *slog.Logger }

func (m logMailer) SendPasswordReset(ctx context.Context, email, token string) error {
	m.logger.InfoContext(ctx, "password reset requested", "email", email, "token", token)
	return nil
}
