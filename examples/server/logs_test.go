package main

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestAccessLog: with LOG_FORMAT=json every line on stderr is a JSON
// object, each request has its access line (route pattern, status,
// caller's tenant and credential kind, the request id), and no line holds
// the API key or a request's query string.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	const key = "tk_accesslog_0123456789abcdef0123"
	s := start(t, map[string]string{"DATA_DIR": t.TempDir(), "LOG_FORMAT": "json", "BOOTSTRAP_API_KEY": key})
	if status := s.do(t, "GET", "/api/auth/me", key, nil, nil); status != 200 {
		t.Fatalf("GET /api/auth/me: %d", status)
	}
	if status := s.do(t, "GET", "/api/payment_gateways/status?transactionId=secret-query", key, nil, nil); status != 400 {
		t.Fatalf("GET /api/payment_gateways/status: %d, want 400", status)
	}
	s.do(t, "GET", "/api/nowhere", "", nil, nil)
	s.stop(t)

	var access []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if rec["msg"] == "http request" {
			access = append(access, rec)
		}
	}
	if strings.Contains(s.stderr.String(), key[3:]) || strings.Contains(s.stderr.String(), "secret-query") {
		t.Fatalf("the logs hold the key or a query string:\n%s", s.stderr)
	}
	find := func(route string) map[string]any {
		for _, rec := range access {
			if rec["route"] == route {
				return rec
			}
		}
		t.Fatalf("no access line for %s in %v", route, access)
		return nil
	}
	me := find("GET /api/auth/me")
	if me["status"] != float64(200) || me["credential"] != "api_key" || me["tenantId"] == "" || me["method"] != "GET" {
		t.Errorf("access line of GET /api/auth/me: %v", me)
	}
	if id, _ := me["requestId"].(string); id == "" {
		t.Errorf("access line without a request id: %v", me)
	}
	if _, ok := me["durationMs"].(float64); !ok {
		t.Errorf("access line without durationMs: %v", me)
	}
	if st := find("GET /api/payment_gateways/status"); st["status"] != float64(400) {
		t.Errorf("access line of a 400: %v", st)
	}
	if un := find("unmatched"); un["status"] != float64(404) || un["credential"] != "none" {
		t.Errorf("access line of an unmatched path: %v", un)
	}
}

// TestMetrics: with METRICS_ADDR the server serves Prometheus metrics on
// a listener of its own: requests counted by route pattern and status
// class (never by raw path or tenant), the database pool, the Go
// runtime; PPROF=1 adds pprof there. The API listener serves neither.
func TestMetrics(t *testing.T) {
	t.Parallel()
	const key = "tk_metrics_0123456789abcdef012345"
	s := start(t, map[string]string{"DATA_DIR": t.TempDir(), "METRICS_ADDR": "127.0.0.1:0", "PPROF": "1", "BOOTSTRAP_API_KEY": key})
	m := regexp.MustCompile(`metrics on (http://\S+)/metrics`).FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("the server did not print its metrics address:\n%s", s.stdout)
	}
	id := "01a21396-1ee4-7668-893b-192651ce5640"
	for range 3 {
		s.do(t, "GET", "/api/payment_gateways/status?transactionId="+id, key, nil, nil) // 404
	}
	s.do(t, "GET", "/api/auth/me", key, nil, nil)
	get := func(url string) (int, string) {
		resp, err := s.client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get(m[1] + "/metrics")
	if status != 200 {
		t.Fatalf("GET /metrics: %d", status)
	}
	for _, want := range []string{
		`tenantkit_http_requests_total{code="4xx",method="GET",route="GET /api/payment_gateways/status"} 3`,
		`tenantkit_http_requests_total{code="2xx",method="GET",route="GET /api/auth/me"} 1`,
		`tenantkit_http_request_duration_seconds_count{method="GET",route="GET /api/auth/me"} 1`,
		`tenantkit_db_connections{state="max"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, id) || strings.Contains(body, "tenantId") {
		t.Error("/metrics holds an id: labels must be bounded")
	}
	if status, _ := get(m[1] + "/debug/pprof/cmdline"); status != 200 {
		t.Errorf("pprof with PPROF=1: %d", status)
	}
	if status, _ := get(s.base + "/metrics"); status != 404 {
		t.Errorf("/metrics on the API listener: %d, want 404", status)
	}
}
