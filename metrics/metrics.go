package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Metrics holds a Kit's series in a registry of its own.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New returns the metrics of the Kit whose database is db: the HTTP
// series (fed by ObserveRequest), db's connection pool, the Go runtime
// and the process.
func New(db *store.DB) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantkit_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status class.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenantkit_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
	}
	m.reg.MustRegister(m.requests, m.duration, poolCollector{db},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry holding the series, for a host to add
// collectors to or to gather from.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the series in Prometheus' text format. A collector that
// fails (the job queue's depth when the database is slow) leaves its
// series out and is logged; the others are still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError,
		ErrorLog: slogPrinter{}})
}

// slogPrinter logs promhttp's collection errors through slog.
type slogPrinter struct{}

func (slogPrinter) Println(v ...any) {
	slog.Warn("metrics: collection failed", "err", fmt.Sprint(v...))
}

// ObserveRequest counts one answered request (httpapi calls it with
// Options.Metrics set). route is a route pattern, never a raw path.
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	class := ""
	if c := status / 100; c >= 0 && c < len(statusClasses) {
		class = statusClasses[c]
	} else {
		class = strconv.Itoa(c) + "xx"
	}
	m.requests.WithLabelValues(method, route, class).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

// statusClasses are the status label's values ("2xx"), made once rather
// than on every request.
var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx"}

// poolCollector reads the database pool's statistics at each scrape.
type poolCollector struct{ db *store.DB }

var (
	poolConnections = prometheus.NewDesc("tenantkit_db_connections",
		"Database connections of the pool, by state (open, in_use, idle, max).", []string{"state"}, nil)
	poolWaits = prometheus.NewDesc("tenantkit_db_wait_total",
		"Times a query waited for a free database connection.", nil, nil)
	poolWaitSeconds = prometheus.NewDesc("tenantkit_db_wait_seconds_total",
		"Time queries waited for a free database connection, in all.", nil, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConnections
	ch <- poolWaits
	ch <- poolWaitSeconds
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(state string, v float64) {
		ch <- prometheus.MustNewConstMetric(poolConnections, prometheus.GaugeValue, v, state)
	}
	st := c.db.PoolStats()
	gauge("open", float64(st.Open))
	gauge("in_use", float64(st.InUse))
	gauge("idle", float64(st.Idle))
	gauge("max", float64(st.Max))
	ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(st.Waits))
	ch <- prometheus.MustNewConstMetric(poolWaitSeconds, prometheus.CounterValue, st.WaitTime.Seconds())
}

// WatchJobs adds the job engine's series: every job run by this process
// by kind and outcome, how long it worked, and the jobs waiting or running
// by kind and state (read from the database at each scrape, so across
// every process). Call it before the engine starts.
func (m *Metrics) WatchJobs(e *jobs.Engine) {
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenantkit_jobs_total",
		Help: "Background jobs run by this process, by kind and outcome (completed, failed, cancelled, snoozed).",
	}, []string{"kind", "outcome"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tenantkit_job_duration_seconds",
		Help:    "Time a background job worked, by kind.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"kind"})
	m.reg.MustRegister(runs, durations, depthCollector{e})
	e.Observe(func(kind, outcome string, d time.Duration) {
		runs.WithLabelValues(kind, outcome).Inc()
		durations.WithLabelValues(kind).Observe(d.Seconds())
	})
}

var queued = prometheus.NewDesc("tenantkit_jobs_queued",
	"Background jobs waiting or running, by kind and state (available, scheduled, retryable, running).", []string{"kind", "state"}, nil)

// depthCollector counts the queued jobs at each scrape.
type depthCollector struct{ e *jobs.Engine }

func (c depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queued }

func (c depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	depth, err := c.e.QueueDepth(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queued, err)
		return
	}
	for k, n := range depth {
		ch <- prometheus.MustNewConstMetric(queued, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// WatchLimiter adds the rate limiter's decisions:
// tenantkit_ratelimit_decisions_total{prefix, decision}, decision allowed,
// limited or error (a limiter failure, let through). Call it before the
// policy is used.
func (m *Metrics) WatchLimiter(p *ratelimit.Policy) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenantkit_ratelimit_decisions_total",
		Help: "Rate limit decisions, by limit prefix and decision (allowed, limited, error: the limiter failed and let the request through).",
	}, []string{"prefix", "decision"})
	m.reg.MustRegister(decisions)
	p.Observe(func(prefix, decision string) { decisions.WithLabelValues(prefix, decision).Inc() })
}

// WatchWebhooks adds the outbound webhooks' delivery attempts made by this
// process: tenantkit_webhook_deliveries_total{outcome} (delivered,
// retrying, failed) and tenantkit_webhook_delivery_lag_seconds{outcome},
// from the event to the attempt's end. Call it before the Kit starts.
func (m *Metrics) WatchWebhooks(s *webhooks.Service) {
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenantkit_webhook_deliveries_total",
		Help: "Outbound webhook delivery attempts, by outcome (delivered, retrying, failed).",
	}, []string{"outcome"})
	lag := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tenantkit_webhook_delivery_lag_seconds",
		Help:    "Time from a webhook delivery's event to its attempt's end, by outcome.",
		Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
	}, []string{"outcome"})
	m.reg.MustRegister(attempts, lag)
	s.Observe(func(outcome string, d time.Duration) {
		attempts.WithLabelValues(outcome).Inc()
		lag.WithLabelValues(outcome).Observe(d.Seconds())
	})
}

// WatchToggles adds tenantkit_toggles_cache_version: the version of the
// toggles this process resolves from. Processes on one database that
// show different versions for longer than the cache's check interval are
// serving stale toggles.
func (m *Metrics) WatchToggles(s *toggles.Service) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tenantkit_toggles_cache_version",
		Help: "Version of the feature toggles this process resolves from (0 before the first resolution).",
	}, func() float64 { return float64(s.CacheVersion()) }))
}
