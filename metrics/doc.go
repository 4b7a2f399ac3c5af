// Package metrics exposes a Kit's Prometheus metrics
// (github.com/prometheus/client_golang): HTTP requests by route pattern,
// the database connection pool, and the Go runtime and process.
//
// A host mounts Handler where it likes (behind its own auth: the metrics
// listener is meant for operators, not the internet) and passes the
// Metrics to httpapi.Options.Metrics so that requests are counted. The
// standalone server serves it at GET /metrics on METRICS_ADDR, a listener
// of its own (unset: off), with net/http/pprof beside it when PPROF=1.
//
// Series (every name starts with tenantkit_):
//
//	http_requests_total{method, route, code}      counter; code is the status class (2xx, 4xx, 5xx)
//	http_request_duration_seconds{method, route}  histogram
//	db_connections{state}                         gauge: open, in_use, idle, max (PostgreSQL: the pool; SQLite: the one writer connection)
//	db_wait_total                                 counter: waits for a free connection
//	db_wait_seconds_total                         counter: time spent in those waits
//	jobs_total{kind, outcome}                     counter (WatchJobs): jobs this process ran; outcome completed, failed, cancelled or snoozed
//	job_duration_seconds{kind}                    histogram (WatchJobs)
//	jobs_queued{kind, state}                      gauge (WatchJobs): waiting or running jobs of every process, read at each scrape
//	ratelimit_decisions_total{prefix, decision}   counter (WatchLimiter): allowed, limited, error
//	webhook_deliveries_total{outcome}             counter (WatchWebhooks): delivered, retrying, failed
//	webhook_delivery_lag_seconds{outcome}         histogram (WatchWebhooks): event to attempt's end
//	toggles_cache_version                         gauge (WatchToggles): the toggles version this process serves
//
// plus the Go collector's go_* and the process collector's process_*.
//
// Decisions:
//
//   - Labels never carry tenant ids, user ids, paths with ids or other
//     unbounded values: route is the route's pattern
//     ("GET /api/payment_gateways/transactions/{id}"), or "unmatched" for
//     a request no route took.
//   - Each Metrics has its own registry, so two Kits in one process (tests,
//     a host with several) never collide; Registry lets a host add its
//     own collectors or gather ours into its registry.
package metrics
