package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestFilesSurviveSIGKILL: two server processes on one PostgreSQL database
// with their files in it (FILES_URL=postgres) take uploads and deletes
// from four clients while one or the other is killed (SIGKILL) at random
// moments and started again, six times. Afterwards every attachment row
// has its bytes (whole: the size it records), every upload a client saw
// answered is there unless a client sent its delete, and once the
// orphan sweep has run no bytes outlive their row.
func TestFilesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills server processes")
	}
	t.Parallel()
	dbURL := storetest.IsolatedPostgresURL(t)
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	envOf := func() []string {
		return []string{"DATA_DIR=" + t.TempDir(), "DATABASE_URL=" + dbURL, "FILES_URL=postgres", "ADDR=127.0.0.1:0",
			"BOOTSTRAP_API_KEY=" + bootstrapKey, "RATE_LIMIT_ENABLED=false", "LOG_LEVEL=error",
			"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	procs := []*process{startProcess(t, bin, envOf()), nil}
	procs[1] = startProcess(t, bin, envOf())

	var mu sync.Mutex
	uploaded := map[string]int{} // answered uploads: id → size
	deleted := map[string]bool{} // answered deletes
	tried := map[string]bool{}   // deletes sent, answered or not (a killed server may have committed one)
	current := func(i int) *process {
		mu.Lock()
		defer mu.Unlock()
		return procs[i]
	}
	client := &http.Client{Timeout: 10 * time.Second}
	work := func(ctx context.Context, w int) {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		for n := 0; ctx.Err() == nil; n++ {
			p := current((w + n) % 2)
			mu.Lock()
			var victim string
			for id := range uploaded {
				if !tried[id] && rng.IntN(3) == 0 {
					victim = id
					tried[id] = true
					break
				}
			}
			mu.Unlock()
			if victim != "" {
				req, _ := http.NewRequestWithContext(ctx, "DELETE", p.base+"/api/attachments/library/"+victim, nil)
				req.Header.Set("X-Api-Key", bootstrapKey)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mu.Lock()
						deleted[victim] = true
						mu.Unlock()
					}
				}
				continue
			}
			size := 50_000 + rng.IntN(1_500_000) // one to two chunks
			data := bytes.Repeat([]byte{byte('a' + w)}, size)
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			_ = mw.WriteField("entityId", "crash.doc")
			_ = mw.WriteField("recordId", fmt.Sprintf("r%d", w))
			fw, _ := mw.CreateFormFile("file", fmt.Sprintf("f%d-%d.bin", w, n))
			_, _ = fw.Write(data)
			_ = mw.Close()
			req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/api/attachments", &body)
			req.Header.Set("X-Api-Key", bootstrapKey)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			var out struct {
				Item struct {
					ID string `json:"id"`
				} `json:"item"`
			}
			if resp.StatusCode == 200 && decodeJSON(resp, &out) == nil && out.Item.ID != "" {
				mu.Lock()
				uploaded[out.Item.ID] = size
				mu.Unlock()
			}
			resp.Body.Close()
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); work(ctx, w) }()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		victim := round % 2
		p := current(victim)
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		next := startProcess(t, bin, envOf())
		mu.Lock()
		procs[victim] = next
		mu.Unlock()
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	wg.Wait()
	for i := range procs {
		_ = current(i).cmd.Process.Kill()
		_ = current(i).cmd.Wait()
	}

	// The database, as a process that starts afterwards sees it.
	db, err := store.Open(t.Context(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kit, err := full.OpenPlain(t.Context(), full.Config{DB: db, FilesInDatabase: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close(context.Background())
	rows := map[string]int64{}
	rs, err := db.Query(t.Context(), `SELECT id, file_size FROM attachments`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id string
		var size int64
		if err := rs.Scan(&id, &size); err != nil {
			t.Fatal(err)
		}
		rows[id] = size
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	blobs := kit.Attachments.Blobs()
	stored := func() map[string]int64 {
		infos, err := blobs.List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, b := range infos {
			if parts := strings.Split(b.Key, "/"); len(parts) == 3 && parts[2] == "original" {
				out[parts[1]] = b.Size
			}
		}
		return out
	}
	before := stored()
	for id, size := range rows {
		if got, ok := before[id]; !ok || got != size {
			t.Errorf("attachment %s: row says %d bytes, the store holds %d (present %v)", id, size, got, ok)
		}
	}
	mu.Lock()
	for id, size := range uploaded {
		if deleted[id] {
			if _, ok := rows[id]; ok {
				t.Errorf("attachment %s: its delete was answered, its row is still there", id)
			}
			continue
		}
		if tried[id] {
			continue // a delete sent to a server killed before it answered: either way is right
		}
		if got, ok := rows[id]; !ok || got != int64(size) {
			t.Errorf("attachment %s: its upload of %d bytes was answered, its row says %d (present %v)", id, size, got, ok)
		}
	}
	answered, removed := len(uploaded), len(deleted)
	mu.Unlock()

	n, err := kit.Attachments.SweepOrphans(t.Context(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	after := stored()
	for id := range after {
		if _, ok := rows[id]; !ok {
			t.Errorf("bytes of %s outlive the sweep, with no row naming them", id)
		}
	}
	t.Logf("6 kills: %d uploads and %d deletes answered, %d rows, %d stored files before the sweep, %d keys swept, %d after",
		answered, removed, len(rows), len(before), n, len(after))
	if answered == 0 || removed == 0 {
		t.Errorf("the clients got %d uploads and %d deletes through: the campaign tested nothing", answered, removed)
	}
}

// decodeJSON decodes resp's body into out.
func decodeJSON(resp *http.Response, out any) error { return json.NewDecoder(resp.Body).Decode(out) }
