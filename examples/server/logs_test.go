package main

import (
	"encoding/json"
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
