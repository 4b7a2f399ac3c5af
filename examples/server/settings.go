package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
)

// settings is every variable the server reads, in the README's order: the
// one table behind -help, the flags (each plain variable name has one:
// ADDR is -addr, DATA_DIR -data-dir) and README's configuration table
// (TestSettingsMatchREADME keeps them equal). Each row is the README's
// three cells, Markdown included.
var settings = []setting{
	{"`ADDR`", "`:8080`", "listen address; the API is at `http://ADDR/api`. `127.0.0.1:0` picks a free port (the server prints `listening on http://HOST:PORT/api`)."},
	{"`DATA_DIR`", "`./data`", "SQLite database (`tenantkit.db`), stored files (`files/`) and the generated secret key (`secret.key`)."},
	{"`DATABASE_URL`", "`sqlite:DATA_DIR/tenantkit.db`", "`postgres://…` selects PostgreSQL."},
	{"`FILES_URL`", "`file://DATA_DIR/files`", "where attachments' files are kept: `file://DIR` (this machine only), `postgres` (in the PostgreSQL database of `DATABASE_URL`; refused with SQLite) or `s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION&pathStyle=true` (an S3-compatible bucket, which must exist; `endpoint` and `pathStyle` are for stores other than AWS S3). Several server processes need `postgres` or `s3`. `-copy-files-to URL` copies every file from `FILES_URL` to another location and exits."},
	{"`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`", `unset`, "the credentials of `FILES_URL=s3://…`; unset, the instance's IAM role (on AWS)."},
	{"`APP_SECRET_KEY`", "generated once into `DATA_DIR/secret.key` (mode 0600)", `key for encrypting stored secrets and signing session tokens; any string of at least 32 bytes. Changing it signs everyone out.`},
	{"`BOOTSTRAP_API_KEY`", `unset`, `if set, a super-admin API key with exactly this secret exists for the default tenant and organization (idempotent); no key is generated.`},
	{"`ADMIN_EMAIL`, `ADMIN_PASSWORD`", `unset`, `if both are set, a super-admin user with these credentials exists (idempotent). Setting only one is an error.`},
	{"`LOG_LEVEL`", "`info`", "`debug`, `info`, `warn` or `error`. Logs go to stderr; at `info` each request has an access line (`http request` with requestId, method, route pattern, status, durationMs, tenantId, credential: never a secret, body or query string), written out in batches within 100 ms (at once before a warning or error, and at shutdown)."},
	{"`LOG_FORMAT`", "`text`", "`text` (logfmt-style) or `json` (one object per line)."},
	{"`METRICS_ADDR`", `unset (off)`, "an address (`127.0.0.1:9090`): Prometheus metrics at `GET /metrics` on a listener of its own (requests by route pattern and status class, their latency, the database pool, background jobs run and queued, rate-limit decisions, the Go runtime and process). Keep it off the internet."},
	{"`PPROF`", `unset`, "`1` adds `net/http/pprof` under `/debug/pprof/` on the metrics listener."},
	{"`GOGC`", "`200`", "the garbage collector's target as Go reads it: a percentage of the heap kept by the last collection (`100` is Go's default; higher collects less often and uses more memory) or `off`."},
	{"`RATE_LIMIT_ENABLED`", "`true`", `master switch for rate limiting.`},
	{"`RATE_LIMIT_STRATEGY`", "`memory`", "`memory` (per process, lost on restart) or `redis` (shared by every process; during a Redis outage each process counts in memory). Anything else fails the start."},
	{"`REDIS_URL`", `unset`, "the Redis of `RATE_LIMIT_STRATEGY=redis` (`redis://host:6379/0`); required by it."},
	{"`RATE_LIMIT_KEY_PREFIX`", "`rl`", `prefix of every rate-limit key.`},
	{"`RATE_LIMIT_TRUST_PROXY_DEPTH`", "`0`", "trusted proxies in front of the server. `0` ignores `X-Forwarded-For`/`X-Real-IP`, so all clients of an endpoint share one bucket; `N` reads the Nth `X-Forwarded-For` entry from the end. Set it when running behind a proxy."},
	{"`RATE_LIMIT_<NAME>_POINTS`, `_DURATION`, `_BLOCK_DURATION`", "per `NAME`", "`NAME` is `LOGIN` (5/60/60), `LOGIN_IP` (20/60/60), `RESET` (3/60/60), `RESET_IP` (10/60/60), `RESET_CONFIRM` (5/300, no block), `2FA_VERIFY` (5/300, reserved); whole numbers, durations in seconds."},
	{"`APP_INTEGRATION_TEST`", `unset`, "`true` turns all rate limiting off."},
	{"`APP_TEST_MODE`, `APP_TEST_AUTH_RATE_LIMIT_MODE`", `unset`, "`1` and `opt-in`: the sign-in limits apply only to requests sending `x-app-test-rate-limit: on`."},
	{"`APP_WEBHOOKS_ALLOW_PRIVATE_URLS`", "`false`", "`true` lets webhooks and the business rules' `CALL_WEBHOOK` action target private, loopback and link-local addresses."},
	{"`APP_INBOUND_WEBHOOKS`", `unset`, "inbound webhook endpoints: a JSON object of endpoint id → `{\"adapter\": \"standard\", \"secret\": \"whsec_…\", \"tenantId\": …}` (Standard Webhooks, verified with the secret); served at `POST /api/webhooks/inbound/{endpointId}`."},
	{"`JOBS_TIMEOUT`, `JOBS_RESCUE_STUCK_AFTER`", "`60`, `300`", `seconds: a background job's time limit, and how long a job may stay running before River runs it again as stuck, even while it renews its lease (the backstop for a job that never returns; a killed process's jobs run again within seconds through their leases). The second must exceed the first and 100 (webhook drains' own limit).`},
	{"`APP_ATTACHMENT_MAX_UPLOAD_MB`", "`25`", `the largest file an upload accepts, in MB (413 beyond, refused while streaming).`},
	{"`APP_ATTACHMENT_TENANT_QUOTA_MB`", "`512`", `the sum of a tenant's stored file sizes, in MB (413 beyond).`},
	{"`APP_DEFAULT_ATTACHMENT_OCR_ENABLED`", "`true`", `whether new storage partitions (the two defaults included) extract text from their files.`},
	{"`APP_ATTACHMENT_PARTITIONS_LOCKED`", "`false`", "`true` refuses every storage partition change with 403."},
	{"`APP_ATTACHMENT_IMAGE_MEMORY_MB`", "`128`", "the memory, in MB, the image resizes of one process may take together, as estimated from each image's header before decoding; a resize estimated above it is refused with 400 (the route without sizes still serves the original)."},
	{"`STRIPE_SECRET_KEY`, `STRIPE_PUBLISHABLE_KEY`, `STRIPE_WEBHOOK_SECRET`", `unset`, "the `stripe` payment provider's credentials (`sk_…`, `pk_…`, `whsec_…`), the same for every tenant. Without a secret key, Stripe sessions answer 422."},
	{"`MOCK_GATEWAY_WEBHOOK_SECRET`", `unset`, `the secret that signs the mock providers' webhooks; without it no mock webhook verifies (401).`},
	{"`BUSINESS_RULES_LOG_RETENTION_DAYS`", "`90`", "how long business-rule execution log rows are kept (an hourly job deletes older ones); `0` keeps them forever."},
}

// setting is one row: the variable name(s), the default and the meaning,
// as Markdown.
type setting struct {
	names, def, meaning string
}

// plainName matches a variable name a flag can stand for (not a pattern
// such as RATE_LIMIT_<NAME>_POINTS).
var plainName = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")

// variables returns the plain variable names of the row.
func (s setting) variables() []string {
	var out []string
	for _, m := range plainName.FindAllStringSubmatch(s.names, -1) {
		if strings.HasPrefix(s.names[strings.Index(s.names, m[0])+len(m[0]):], "_") {
			continue // part of a pattern
		}
		out = append(out, m[1])
	}
	return out
}

// flagName is the flag of a variable: lower case, dashes for underscores.
func flagName(variable string) string {
	return strings.ReplaceAll(strings.ToLower(variable), "_", "-")
}

// markdownRow is the row as README's table has it.
func (s setting) markdownRow() string {
	return "| " + s.names + " | " + s.def + " | " + s.meaning + " |"
}

// plain drops Markdown's backticks, for -help.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// options are the command line: a flag per plain variable (a flag wins
// over the environment), -migrate-only, -version and -help.
type options struct {
	values      map[string]string // by variable, the flags given
	migrateOnly bool
	version     bool
	copyFilesTo string // -copy-files-to: a FILES_URL value
}

// errUsage is a command line the server refuses (exit status 2); errHelp
// asks for the usage (exit status 0).
var (
	errUsage = errors.New("invalid command line or setting")
	errHelp  = flag.ErrHelp
)

// parseArgs reads the command line (args without the program name); the
// usage goes to out.
func parseArgs(args []string, out io.Writer) (*options, error) {
	o := &options{values: map[string]string{}}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, the usage printed below
	byFlag := map[string]string{}
	for _, s := range settings {
		for _, v := range s.variables() {
			name := flagName(v)
			byFlag[name] = v
			fs.String(name, "", "sets "+v)
		}
	}
	fs.BoolVar(&o.migrateOnly, "migrate-only", false, "apply the database migrations and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.copyFilesTo, "copy-files-to", "", "copy every file from FILES_URL to this location and exit")
	fs.Usage = func() {} // the whole usage only for -help
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(out)
			return nil, errHelp
		}
		return nil, fmt.Errorf("%w: %v (-help lists every setting)", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q (settings are flags, -name value)", errUsage, fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := byFlag[f.Name]; ok {
			o.values[v] = f.Value.String()
		}
	})
	return o, nil
}

// lookup returns getenv with the flags given winning over it.
func (o *options) lookup(getenv func(string) string) func(string) string {
	return func(name string) string {
		if v, ok := o.values[name]; ok {
			return v
		}
		return getenv(name)
	}
}

// usage prints every setting: its flags and variables, default and
// meaning.
func usage(out io.Writer) {
	fmt.Fprint(out, `Usage: server [flags]

Runs the tenantkit REST API. Every setting is an environment variable and,
for plain names, a flag (a flag wins over the environment):

`)
	for _, s := range settings {
		var flags []string
		for _, v := range s.variables() {
			flags = append(flags, "-"+flagName(v))
		}
		fmt.Fprintf(out, "  %s", plain(s.names))
		if len(flags) > 0 {
			fmt.Fprintf(out, "  (%s)", strings.Join(flags, ", "))
		}
		fmt.Fprintf(out, "\n      default: %s\n      %s\n", plain(s.def), plain(s.meaning))
	}
	fmt.Fprint(out, `
  -migrate-only  apply the database migrations and exit
  -copy-files-to URL
                 copy every attachment file from FILES_URL to URL (file://DIR,
                 postgres or s3://…; files already there with the same size are
                 skipped), check the sizes, print the counts and exit
  -version       print the version and exit
  -help          print this
`)
}

// version is the module's version and VCS revision, from the build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "tenantkit server (unknown version)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += " (modified)"
			}
		}
	}
	return "tenantkit server " + v + " " + info.GoVersion
}
