package metrics_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/metrics"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestSeries: on both engines the pool's series are there with its
// states, and ObserveRequest counts by status class.
func TestSeries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		m := metrics.New(db)
		m.ObserveRequest("POST", "POST /api/payment_gateways/sessions", 201, 3*time.Millisecond)
		m.ObserveRequest("POST", "POST /api/payment_gateways/sessions", 422, time.Millisecond)
		m.ObserveRequest("POST", "POST /api/payment_gateways/sessions", 502, time.Millisecond)
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body := rec.Body.String()
		for _, want := range []string{
			`tenantkit_http_requests_total{code="2xx",method="POST",route="POST /api/payment_gateways/sessions"} 1`,
			`tenantkit_http_requests_total{code="4xx",method="POST",route="POST /api/payment_gateways/sessions"} 1`,
			`tenantkit_http_requests_total{code="5xx",method="POST",route="POST /api/payment_gateways/sessions"} 1`,
			`tenantkit_http_request_duration_seconds_bucket{method="POST",route="POST /api/payment_gateways/sessions",le="0.005"} 3`,
			`tenantkit_db_connections{state="open"}`, `tenantkit_db_connections{state="in_use"}`,
			`tenantkit_db_connections{state="idle"}`, `tenantkit_db_connections{state="max"}`, `tenantkit_db_wait_total`,
			`tenantkit_db_wait_seconds_total`,
			`process_cpu_seconds_total`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the scrape lacks %q", want)
			}
		}
	})
}

// TestLimiterSeries: the policy's decisions are counted by prefix.
func TestLimiterSeries(t *testing.T) {
	t.Parallel()
	m := metrics.New(storetest.SQLite(t))
	p := ratelimit.NewPolicy(ratelimit.Config{Enabled: true}, nil, nil)
	m.WatchLimiter(p)
	rule := ratelimit.Rule{Points: 2, Duration: time.Minute}
	for range 3 {
		_ = p.Check(t.Context(), rule, "payments-webhook", "127.0.0.1")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`tenantkit_ratelimit_decisions_total{decision="allowed",prefix="payments-webhook"} 2`,
		`tenantkit_ratelimit_decisions_total{decision="limited",prefix="payments-webhook"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
}
