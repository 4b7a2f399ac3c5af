package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// failoverItemsEnv sets how many items TestDataSyncFailover imports
// (default 5,000; BENCHMARKS.md measures 20,000).
const failoverItemsEnv = "TENANTKIT_SYNC_FAILOVER_ITEMS"

// failoverBatch is the run's page size.
const failoverBatch = 100

// TestDataSyncFailover kills (SIGKILL) the server running a data sync
// import mid-run, with the job engine's defaults (no tuned rescue): on
// PostgreSQL a second server, running all along, resumes the run; on
// SQLite the server is started again at once. The run resumes (a batch
// commits) within 10 s of the kill and ends completed with every item
// exactly once and each counted once. It logs the time from the kill to
// the first batch committed after it.
func TestDataSyncFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills server processes")
	}
	t.Parallel()
	items := 5000
	if v := os.Getenv(failoverItemsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10*failoverBatch {
			t.Fatalf("%s: want a number of items of at least %d, got %q", failoverItemsEnv, 10*failoverBatch, v)
		}
		items = n
	}
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		syncFailover(t, bin, "", items)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		syncFailover(t, bin, storetest.IsolatedPostgresURL(t), items)
	})
}

// syncFailover runs the scenario on the database dbURL ("": SQLite in
// the data directory, one server restarted; otherwise two servers).
func syncFailover(t *testing.T, bin, dbURL string, items int) {
	src := newCrashSource(t, items, 20*time.Millisecond)
	dataDir := t.TempDir()
	env := []string{"DATA_DIR=" + dataDir, "ADDR=127.0.0.1:0", "BOOTSTRAP_API_KEY=" + bootstrapKey, "APP_WEBHOOKS_ALLOW_PRIVATE_URLS=true",
		"RATE_LIMIT_ENABLED=false", "LOG_LEVEL=error", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if dbURL != "" {
		env = append(env, "DATABASE_URL="+dbURL)
	}
	procs := []*process{startProcess(t, bin, env)}
	if dbURL != "" {
		procs = append(procs, startProcess(t, bin, env))
	}
	p := procs[0]
	const entity = "sync.failover_items"
	mustStatus(t, p, "POST", "/api/entities/entities", map[string]any{"entityId": entity, "label": "Failover items"}, nil, http.StatusOK)
	mustStatus(t, p, "POST", "/api/entities/definitions.batch", map[string]any{"entityId": entity,
		"definitions": []map[string]any{{"key": "title", "kind": "text"}}}, nil, http.StatusOK)
	mustStatus(t, p, "PUT", "/api/integrations/sync_http_json/credentials", map[string]any{"credentials": map[string]any{"baseUrl": src.srv.URL}},
		nil, http.StatusOK)
	var started struct {
		ID string `json:"id"`
	}
	mustStatus(t, p, "POST", "/api/data_sync/run", map[string]any{"integrationId": "sync_http_json", "entityType": entity,
		"direction": "import", "batchSize": failoverBatch}, &started, http.StatusCreated)

	// Which server runs the job: the holder of its lease (host:pid:…),
	// once it has renewed it (a second after it started).
	victim := p
	if dbURL != "" {
		victim = leaseHolder(t, dbURL, procs)
	}
	before := waitSyncRun(t, p, started.ID, 30*time.Second, func(r syncRun) bool {
		return r.BatchesCompleted >= 5 || r.Status != "running" && r.Status != "pending"
	})
	if before.Status != "running" {
		t.Fatalf("the run is %s before the kill, want running: %+v", before.Status, before)
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = victim.cmd.Wait()
	survivor := victim
	if dbURL == "" {
		survivor = startProcess(t, bin, env)
	} else {
		for _, q := range procs {
			if q != victim {
				survivor = q
			}
		}
	}
	var atKill syncRun
	mustStatus(t, survivor, "GET", "/api/data_sync/runs/"+started.ID, nil, &atKill, http.StatusOK)
	// The bound is the failover the job engine promises (a lease of 5 s,
	// a sweep every second, the pickup), not a measurement.
	resumed := waitSyncRun(t, survivor, started.ID, time.Until(killed.Add(10*time.Second)), func(r syncRun) bool {
		return r.BatchesCompleted > atKill.BatchesCompleted || r.Status != "running"
	})
	failover := time.Since(killed)
	final := waitSyncRun(t, survivor, started.ID, 5*time.Minute, func(r syncRun) bool {
		return r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled"
	})
	t.Logf("%s: %d items; killed after %d batches; the next batch committed %s after the kill (batch %d); the run completed %s after it; %d page requests",
		t.Name(), items, atKill.BatchesCompleted, failover.Round(10*time.Millisecond), resumed.BatchesCompleted,
		time.Since(killed).Round(100*time.Millisecond), src.served.Load())
	if final.Status != "completed" || final.LastError != nil {
		t.Fatalf("the run ended %s (lastError %v): %+v", final.Status, deref(final.LastError), final)
	}
	if final.CreatedCount != int64(items) || final.UpdatedCount != 0 || final.SkippedCount != 0 || final.FailedCount != 0 ||
		final.BatchesCompleted != int64(items/failoverBatch) {
		t.Errorf("counters: created %d, updated %d, skipped %d, failed %d, batches %d; want %d created and %d batches, nothing else",
			final.CreatedCount, final.UpdatedCount, final.SkippedCount, final.FailedCount, final.BatchesCompleted, items, items/failoverBatch)
	}
	checkEveryItemOnce(t, survivor, entity, items)
}

// leaseHolder returns the process holding the lease of the data sync job,
// read from the database, waiting up to 20 s for it.
func leaseHolder(t *testing.T, dbURL string, procs []*process) *process {
	t.Helper()
	db, err := store.Open(t.Context(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var holder string
		err := db.QueryRow(t.Context(), `SELECT l.holder FROM job_leases l JOIN `+db.Schema()+`_river.river_job j ON j.id = l.job_id
			WHERE j.kind = 'data_sync.run' AND l.holder IS NOT NULL`).Scan(&holder)
		if err == nil {
			parts := strings.Split(holder, ":")
			pid, _ := strconv.Atoi(parts[len(parts)-2])
			for _, p := range procs {
				if p.cmd.Process.Pid == pid {
					t.Logf("lease holder %s; servers %d, %d", holder, procs[0].cmd.Process.Pid, procs[1].cmd.Process.Pid)
					return p
				}
			}
			t.Fatalf("the lease holder %s is none of the servers", holder)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server holds the data sync job's lease after 20 s (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
