package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestAccessLogLine: an access line names the request id the response
// echoes, the method, the route's pattern, the status, the duration, the
// caller's tenant and credential kind, and with a handler that adds
// sources, the access log's own code; a request no route takes is
// "unmatched", without a tenant.
func TestAccessLogLine(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, storetest.SQLite(t))
	acme := e.newTenant("Acme")
	key := e.newKey(acme)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{AddSource: true}))
	h := mustNew(e.kit, Options{Auth: e.auth, Logger: logger, AccessLog: true})

	lines := func() []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not JSON: %q", line)
			}
			if rec["msg"] == "http request" {
				out = append(out, rec)
			}
		}
		buf.Reset()
		return out
	}
	req := httptest.NewRequest("GET", "/api/auth/me", nil)
	req.Header.Set("X-Api-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	got := lines()
	if len(got) != 1 {
		t.Fatalf("%d access lines, want 1", len(got))
	}
	line := got[0]
	for k, want := range map[string]any{"level": "INFO", "requestId": rec.Header().Get("X-Request-Id"), "method": "GET",
		"route": "GET /api/auth/me", "status": float64(200), "tenantId": acme.ID, "credential": "api_key"} {
		if line[k] != want {
			t.Errorf("%s: %v, want %v (%v)", k, line[k], want, line)
		}
	}
	if _, ok := line["durationMs"].(float64); !ok {
		t.Errorf("no durationMs: %v", line)
	}
	if _, ok := line["time"].(string); !ok {
		t.Errorf("no time: %v", line)
	}
	if src, _ := line["source"].(map[string]any); !strings.Contains(src["file"].(string), "httpapi/accesslog.go") {
		t.Errorf("source %v, want the access log's", line["source"])
	}

	req = httptest.NewRequest("GET", "/api/nowhere", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	h.ServeHTTP(httptest.NewRecorder(), req)
	got = lines()
	if len(got) != 1 || got[0]["route"] != unmatchedRoute || got[0]["status"] != float64(404) || got[0]["tenantId"] != "" ||
		got[0]["credential"] != "none" || got[0]["requestId"] != "abc-123" {
		t.Errorf("access line of an unmatched request: %v", got)
	}
}
