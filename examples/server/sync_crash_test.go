package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// syncCrashItems is how many items the crash test's source serves, in
// pages of syncCrashBatch.
const (
	syncCrashItems = 5000
	syncCrashBatch = 100
)

// TestDataSyncImportSurvivesSIGKILL starts an import of 5,000 items
// through sync_http_json from a slow local source (40 ms a page, 50
// pages), kills the server with SIGKILL once the run has committed a few
// batches (right after the source answered a page, so that the batch of
// that page is most likely being written), starts it again on the same
// data and waits for the run to complete: every item exists exactly once,
// and the run's counters count each once (a batch cut short commits
// neither its records nor its counters, and is read again).
//
// The run resumes when the job engine rescues the job the dead process
// held: after the dead leader's lease lapses (up to ~15 s), the rescuer's
// first pass and the scheduler (JOBS_RESCUE_STUCK_AFTER=3).
func TestDataSyncImportSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		syncCrashScenario(t, bin, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		syncCrashScenario(t, bin, []string{"DATABASE_URL=" + storetest.IsolatedPostgresURL(t)})
	})
}

// crashSource is the test's JSON source: GET /{entityType}?cursor=&limit=
// pages total items (the cursor is the next index), each page
// after a delay. It counts the requests per cursor and signals each page
// written on answered (without blocking).
type crashSource struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests map[string]int
	answered chan string
	served   atomic.Int64
}

func newCrashSource(t *testing.T, total int, delay time.Duration) *crashSource {
	s := &crashSource{requests: map[string]int{}, answered: make(chan string, 1)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cursor := r.URL.Query().Get("cursor")
		from, _ := strconv.Atoi(cursor)
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		s.mu.Lock()
		s.requests[cursor]++
		s.mu.Unlock()
		time.Sleep(delay)
		to := min(from+limit, total)
		items := make([]map[string]any, 0, max(to-from, 0))
		for i := from; i < to; i++ {
			items = append(items, map[string]any{"externalId": fmt.Sprintf("ext-%d", i), "data": map[string]any{"title": syncCrashTitle(i)}})
		}
		var next any
		if to < total {
			next = strconv.Itoa(to)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next, "totalEstimate": total})
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		s.served.Add(1)
		select {
		case s.answered <- cursor:
		default:
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func syncCrashTitle(i int) string { return fmt.Sprintf("Item %05d", i) }

// checkEveryItemOnce exports the entity's records through p and fails
// unless each of the source's n items is there exactly once (by its
// title), and nothing else.
func checkEveryItemOnce(t *testing.T, p *process, entity string, n int) {
	t.Helper()
	var all []map[string]any
	mustStatus(t, p, "GET", "/api/entities/records?entityId="+entity+"&format=json&exportScope=full", nil, &all, http.StatusOK)
	titles := map[string]int{}
	for _, r := range all {
		titles[fmt.Sprint(r["title"])]++
	}
	missing, twice := 0, 0
	for i := range n {
		switch titles[syncCrashTitle(i)] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	if len(all) != n || missing != 0 || twice != 0 || len(titles) != n {
		t.Errorf("%d records listed, %d distinct titles: %d items missing, %d more than once", len(all), len(titles), missing, twice)
	}
}

// syncRun is the part of GET /api/data_sync/runs/{id} the test reads.
type syncRun struct {
	Status           string  `json:"status"`
	CreatedCount     int64   `json:"createdCount"`
	UpdatedCount     int64   `json:"updatedCount"`
	SkippedCount     int64   `json:"skippedCount"`
	FailedCount      int64   `json:"failedCount"`
	BatchesCompleted int64   `json:"batchesCompleted"`
	LastError        *string `json:"lastError"`
	ProgressJob      *struct {
		Status         string `json:"status"`
		ProcessedCount int64  `json:"processedCount"`
	} `json:"progressJob"`
}

func syncCrashScenario(t *testing.T, bin string, extraEnv []string) {
	src := newCrashSource(t, syncCrashItems, 40*time.Millisecond)
	env := append([]string{"DATA_DIR=" + t.TempDir(), "ADDR=127.0.0.1:0", "BOOTSTRAP_API_KEY=" + bootstrapKey,
		"APP_WEBHOOKS_ALLOW_PRIVATE_URLS=true", "RATE_LIMIT_ENABLED=false", "JOBS_TIMEOUT=2", "JOBS_RESCUE_STUCK_AFTER=3",
		"LOG_LEVEL=error", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extraEnv...)
	p := startProcess(t, bin, env)

	const entity = "sync.crash_items"
	mustStatus(t, p, "POST", "/api/entities/entities", map[string]any{"entityId": entity, "label": "Crash items"}, nil, http.StatusOK)
	mustStatus(t, p, "POST", "/api/entities/definitions.batch", map[string]any{"entityId": entity,
		"definitions": []map[string]any{{"key": "title", "kind": "text"}}}, nil, http.StatusOK)
	mustStatus(t, p, "PUT", "/api/integrations/sync_http_json/credentials", map[string]any{"credentials": map[string]any{"baseUrl": src.srv.URL}},
		nil, http.StatusOK)
	var started struct {
		ID string `json:"id"`
	}
	mustStatus(t, p, "POST", "/api/data_sync/run", map[string]any{"integrationId": "sync_http_json", "entityType": entity,
		"direction": "import", "batchSize": syncCrashBatch}, &started, http.StatusCreated)

	// Wait for 3 committed batches, then for the next page answered, and
	// kill the process at once: the worker holds that page and is
	// writing it (or about to).
	before := waitSyncRun(t, p, started.ID, 30*time.Second, func(r syncRun) bool { return r.BatchesCompleted >= 3 || r.Status != "running" && r.Status != "pending" })
	if before.Status != "running" {
		t.Fatalf("the run is %s before the kill, want running: %+v", before.Status, before)
	}
	select {
	case <-src.answered: // drop a page answered while we polled
	default:
	}
	var killedAfter string
	select {
	case killedAfter = <-src.answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the source was not asked for a page within 10 s of the third batch")
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	killedAt := time.Now()
	var atKill syncRun
	// The numbers as the dead process left them, read by the next one.
	p = startProcess(t, bin, env)
	if code := p.request(t, "GET", "/api/data_sync/runs/"+started.ID, nil, &atKill); code != http.StatusOK {
		t.Fatalf("GET the run after the restart: %d", code)
	}
	t.Logf("killed right after the source answered the page at cursor %q; the run had then committed %d batches (%d created)",
		killedAfter, atKill.BatchesCompleted, atKill.CreatedCount)
	if atKill.CreatedCount != atKill.BatchesCompleted*syncCrashBatch {
		t.Errorf("after the kill: createdCount %d for %d batches of %d", atKill.CreatedCount, atKill.BatchesCompleted, syncCrashBatch)
	}

	final := waitSyncRun(t, p, started.ID, 60*time.Second, func(r syncRun) bool {
		return r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled"
	})
	t.Logf("the run completed %s after the kill; %d page requests in all", time.Since(killedAt).Round(time.Second), src.served.Load())
	if final.Status != "completed" || final.LastError != nil {
		t.Fatalf("the run ended %s (lastError %v): %+v", final.Status, deref(final.LastError), final)
	}
	if final.CreatedCount != syncCrashItems || final.UpdatedCount != 0 || final.SkippedCount != 0 || final.FailedCount != 0 ||
		final.BatchesCompleted != syncCrashItems/syncCrashBatch {
		t.Errorf("counters: created %d, updated %d, skipped %d, failed %d, batches %d; want %d created and %d batches, nothing else",
			final.CreatedCount, final.UpdatedCount, final.SkippedCount, final.FailedCount, final.BatchesCompleted,
			syncCrashItems, syncCrashItems/syncCrashBatch)
	}
	if pj := final.ProgressJob; pj == nil || pj.Status != "completed" || pj.ProcessedCount != syncCrashItems {
		t.Errorf("progress job: %+v, want completed with %d processed", pj, syncCrashItems)
	}

	var page struct {
		Total int `json:"total"`
	}
	mustStatus(t, p, "GET", "/api/entities/records?entityId="+entity, nil, &page, http.StatusOK)
	if page.Total != syncCrashItems {
		t.Errorf("records total %d, want %d", page.Total, syncCrashItems)
	}
	checkEveryItemOnce(t, p, entity, syncCrashItems)

	// Which pages were read more than once: the one cut short (if the kill
	// caught it before its commit) and the one in flight.
	src.mu.Lock()
	var again []string
	for c, n := range src.requests {
		if n > 1 {
			again = append(again, fmt.Sprintf("%q×%d", c, n))
		}
	}
	src.mu.Unlock()
	t.Logf("pages read more than once: %v", again)
}

// waitSyncRun polls the run until done reports true, for at most within.
func waitSyncRun(t *testing.T, p *process, id string, within time.Duration, done func(syncRun) bool) syncRun {
	t.Helper()
	deadline := time.Now().Add(within)
	var r syncRun
	for {
		r = syncRun{}
		if code := p.request(t, "GET", "/api/data_sync/runs/"+id, nil, &r); code == http.StatusOK && done(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not get there within %s: %+v", within, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustStatus sends a request with the bootstrap key and fails the test
// unless the answer has status want.
func mustStatus(t *testing.T, p *process, method, path string, in, out any, want int) {
	t.Helper()
	if code := p.request(t, method, path, in, out); code != want {
		t.Fatalf("%s %s: status %d, want %d", method, path, code, want)
	}
}

// request sends a JSON request (in may be nil) with the bootstrap key and
// decodes the answer into out (when not nil); it returns the status, 0
// when the request failed.
func (p *process) request(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	var body *bytes.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	} else {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, p.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Api-Key", bootstrapKey)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Logf("%s %s: %v", method, path, err)
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Logf("%s %s: status %d, decoding the body: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
