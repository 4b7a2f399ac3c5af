package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestWebhooksSurviveSIGKILL runs the built server, subscribes a webhook
// to business-rule events, creates rules, kills the server with SIGKILL
// while deliveries are under way, starts it again on the same data, and
// creates more: every created rule's event arrives at least once, signed,
// and a repeated delivery carries the same webhook-id. Deliveries cut
// short are sent again once the dead drain's lease has lapsed (3 s) and
// another process's takeover (every second) has resumed its queue; the server runs with short job limits so that event
// jobs cut short are rescued within seconds rather than the default 5
// minutes.
func TestWebhooksSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The receiver records, per rule id, the webhook-ids it got it with.
	var mu sync.Mutex
	got := map[string][]string{}
	var bodies []received
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Data struct {
				RuleID string `json:"ruleId"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		got[ev.Data.RuleID] = append(got[ev.Data.RuleID], r.Header.Get("webhook-id"))
		bodies = append(bodies, received{r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()

	env := []string{"DATA_DIR=" + t.TempDir(), "ADDR=127.0.0.1:0", "BOOTSTRAP_API_KEY=" + bootstrapKey,
		"APP_WEBHOOKS_ALLOW_PRIVATE_URLS=true", "RATE_LIMIT_ENABLED=false", "JOBS_TIMEOUT=2", "JOBS_RESCUE_STUCK_AFTER=3",
		"LOG_LEVEL=error", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	p := startProcess(t, bin, env)
	var hook struct {
		Secret string `json:"secret"`
	}
	if code := p.post(t, "/api/webhooks", map[string]any{"name": "crash", "url": rcv.URL, "subscribedEvents": []string{"business_rules.rule.*"},
		"httpMethod": "POST"}, &hook); code != http.StatusCreated {
		t.Fatalf("create webhook: %d", code)
	}

	created := map[string]bool{}
	create := func(p *process, from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("R%03d", i)
			code := p.post(t, "/api/business_rules/rules", map[string]any{"ruleId": id, "ruleName": id, "ruleType": "GUARD",
				"entityType": "order", "conditionExpression": map[string]any{"field": "a", "operator": "=", "value": 1},
				"enabled": true, "priority": 1, "version": 1}, nil)
			if code == http.StatusCreated {
				created[id] = true
			}
		}
	}
	create(p, 0, 40)
	// Kill it while the deliveries of those rules are still going out.
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p = startProcess(t, bin, env)
	create(p, 40, 60)
	if len(created) != 60 {
		t.Fatalf("%d of 60 rules created", len(created))
	}

	deadline := time.Now().Add(240 * time.Second) // a rescue waits for leadership (~15 s), the rescuer (every 30 s) and the scheduler: 20–110 s seen
	for {
		mu.Lock()
		missing := 0
		for id := range created {
			if len(got[id]) == 0 {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			var list struct {
				Items []map[string]any `json:"items"`
				Total int              `json:"total"`
			}
			p.get(t, "/api/webhooks/deliveries?pageSize=100", &list)
			statuses := map[string]int{}
			for _, d := range list.Items {
				statuses[fmt.Sprint(d["status"])]++
			}
			mu.Lock()
			var ids []string
			for id := range created {
				if len(got[id]) == 0 {
					ids = append(ids, id)
				}
			}
			mu.Unlock()
			t.Fatalf("%d of %d rule events never arrived (%v); %d deliveries stored, by status %v", missing, len(created), ids, list.Total, statuses)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	wh, err := standardwebhooks.NewWebhook(hook.Secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if err := wh.VerifyIgnoringTimestamp(b.body, b.header); err != nil {
			t.Errorf("a delivery does not verify: %v", err)
		}
	}
	duplicates := 0
	for id, ids := range got {
		for _, msgID := range ids[1:] {
			duplicates++
			if msgID != ids[0] {
				t.Errorf("rule %s arrived as %v: a repeat must carry the same webhook-id", id, ids)
			}
		}
	}
	t.Logf("%d rules, %d deliveries, %d repeats", len(created), len(bodies), duplicates)
}

type received struct {
	header http.Header
	body   []byte
}

// process is a server started from the built binary.
type process struct {
	cmd  *exec.Cmd
	base string
}

// startProcess starts the binary with env and waits for its "listening
// on" line; the process is killed when the test ends.
func startProcess(t *testing.T, bin string, env []string) *process {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				base <- strings.TrimSuffix(rest, "/api")
			}
		}
	}()
	select {
	case b := <-base:
		return &process{cmd: cmd, base: b}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not start: %s", stderr.String())
		return nil
	}
}

// get sends a GET with the bootstrap key and decodes the answer into out.
func (p *process) get(t *testing.T, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.base+path, nil)
	req.Header.Set("X-Api-Key", bootstrapKey)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Logf("GET %s: %v", path, err)
		return
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(out)
}

// post sends a JSON POST with the bootstrap key and decodes the answer
// into out (when not nil); it returns the status, 0 when the request
// failed.
func (p *process) post(t *testing.T, path string, in, out any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest("POST", p.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", bootstrapKey)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}
