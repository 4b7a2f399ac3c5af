package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Sync runs end: a source whose cursors come back, one that trickles and
// one that stalls each fail their run with a lastError saying why, within
// the bounds set in datasync.Options (small here), on both engines.

// dsBoundsSetup is dsSetup with the run bounds opts (dsBackoff unless
// set: 3 attempts) and, when jobTimeout is set, that job time limit; it
// counts the times a run's job was handed back to the queue.
func dsBoundsSetup(t *testing.T, db *store.DB, opts datasync.Options, jobTimeout time.Duration) (*dsFixture, *atomic.Int64) {
	t.Helper()
	if opts.Backoff == nil {
		opts.Backoff = dsBackoff
	}
	e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}, DataSync: opts,
		Jobs: jobs.Config{JobTimeout: jobTimeout}})
	var snoozes atomic.Int64
	e.kit.Jobs.Observe(func(kind, outcome string, _ time.Duration) {
		if kind == (datasync.RunArgs{}).Kind() && outcome == jobs.OutcomeSnoozed {
			snoozes.Add(1)
		}
	})
	e.start()
	return dsTenant(t, e, "Bounds", ""), &snoozes
}

// dsFunc is a source on 127.0.0.1 answering GETs with fn, counting them.
type dsFunc struct {
	*httptest.Server
	mu      sync.Mutex
	cursors []string
}

func dsNewFunc(t *testing.T, fn func(w http.ResponseWriter, r *http.Request)) *dsFunc {
	s := &dsFunc{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.cursors = append(s.cursors, r.URL.Query().Get("cursor"))
		s.mu.Unlock()
		fn(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *dsFunc) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cursors...)
}

// lastError returns the run's lastError ("" when null).
func lastError(run map[string]any) string {
	le, _ := run["lastError"].(string)
	return le
}

// A cursor cycling "" → a → b → a fails the run when a comes back: three
// pages read, their records kept, a lastError naming the cursor and the
// cycle, an error log line. Each page outlasts the job's slice (a 4 s job
// limit, a 2 s slice), so the job is handed back to the queue during the
// run and the cursors it read are found in the run's row when it
// resumes.
func TestDataSyncCursorCycle(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, snoozes := dsBoundsSetup(t, db, datasync.Options{}, 4*time.Second)
		next := map[string]string{"": "a", "a": "b", "b": "a"}
		src := dsNewFunc(t, func(w http.ResponseWriter, r *http.Request) {
			cursor := r.URL.Query().Get("cursor")
			select {
			case <-time.After(1200 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"nextCursor": next[cursor],
				"items": []map[string]any{{"externalId": "ext-" + cursor, "data": map[string]any{"title": "at " + cursor}}}})
		})
		f.credentials(src.URL, "")
		id := f.start(f.body("import", "batchSize", 10))
		run := f.wait(id)
		expectRun(t, "the cycling run", run, "failed", 3, 0, 0, 0, 3)
		if le := lastError(run); !strings.Contains(le, `nextCursor "a" was already read in this run`) || !strings.Contains(le, "cycle") {
			t.Errorf("lastError %q: want the cursor that came back and the cycle", le)
		}
		if got := strings.Join(src.requests(), ","); got != ",a,b" {
			t.Errorf("source requests for cursors %q, want \",a,b\" (each page once)", got)
		}
		if got := f.records(); got != 3 {
			t.Errorf("%d records, want the 3 read before the cycle showed", got)
		}
		if logs := f.logs(id, "error"); len(logs) != 1 || !strings.Contains(logs[0]["message"].(string), "cycle") {
			t.Errorf("error log %v", logs)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")
		if snoozes.Load() == 0 {
			t.Errorf("the run's job was never handed back to the queue: the run did not resume")
		}
		// The run ended: the target is free for a new run.
		f.start(f.body("import", "batchSize", 10, "fullSync", true))
	})
}

// A source sending its page at 1 byte a second fails the run at once
// (not retried) with lastError saying it was too slow, against a floor of
// 64 bytes a second judged after 500 ms.
func TestDataSyncSlowSource(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, _ := dsBoundsSetup(t, db, datasync.Options{PageTimeout: 20 * time.Second, MinBytesPerSecond: 64,
			ThroughputGrace: 500 * time.Millisecond}, 0)
		src := dsNewFunc(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for _, b := range []byte(`{"items": [], "nextCursor": null}`) {
				select {
				case <-time.After(time.Second):
				case <-r.Context().Done():
					return
				}
				if _, err := w.Write([]byte{b}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		})
		f.credentials(src.URL, "")
		id := f.start(f.body("import"))
		run := f.wait(id)
		expectRun(t, "the run on a 1 byte/s source", run, "failed", 0, 0, 0, 0, 0)
		if le := lastError(run); !strings.Contains(le, "the source sent its answer too slowly") || !strings.Contains(le, "minimum of 64 bytes a second") {
			t.Errorf("lastError %q", le)
		}
		if n := len(src.requests()); n != 1 {
			t.Errorf("the slow source was asked %d times, want once (a trickle is not retried)", n)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")
		f.start(f.body("import", "fullSync", true)) // not 409: the run ended
	})
}

// A page that never completes (headers, then nothing) is an attempt
// failing at the page time limit: tried MaxAttempts times (3 with the
// tests' backoff), then the run fails with lastError saying so.
func TestDataSyncStalledPage(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, _ := dsBoundsSetup(t, db, datasync.Options{PageTimeout: time.Second}, 0)
		src := dsNewFunc(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		f.credentials(src.URL, "")
		id := f.start(f.body("import"))
		run := f.wait(id)
		expectRun(t, "the run on a stalled page", run, "failed", 0, 0, 0, 0, 0)
		if le := lastError(run); le != "no complete answer within 1s (the page time limit) (gave up after 3 attempts)" {
			t.Errorf("lastError %q", le)
		}
		if n := len(src.requests()); n != 3 {
			t.Errorf("the stalled page was asked %d times, want 3", n)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")
	})
}

// The attempt count survives the job's time limit: with a 2 s job limit
// an attempt gets at most half of it, and the job hands the run back to
// the queue rather than wait and try again past its limit. The next job
// goes on counting from the run's row, so a stalled page still fails the
// run after 3 attempts in all; while it retries, the running run shows
// the last error.
func TestDataSyncAttemptsSurviveJobLimit(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, snoozes := dsBoundsSetup(t, db, datasync.Options{}, 2*time.Second)
		src := dsNewFunc(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		f.credentials(src.URL, "")
		id := f.start(f.body("import"))
		running := f.waitFor(id, func(r map[string]any) bool { return r["status"] != "pending" && lastError(r) != "" })
		if running["status"] == "running" && !strings.Contains(lastError(running), "the page time limit") {
			t.Errorf("a retrying run's lastError %q", lastError(running))
		}
		run := f.wait(id)
		expectRun(t, "the run on a stalled source", run, "failed", 0, 0, 0, 0, 0)
		if le := lastError(run); !strings.Contains(le, "the page time limit") || !strings.HasSuffix(le, "(gave up after 3 attempts)") {
			t.Errorf("lastError %q", le)
		}
		if n := len(src.requests()); n != 3 {
			t.Errorf("the stalled source was asked %d times, want 3", n)
		}
		if snoozes.Load() == 0 {
			t.Errorf("the job was never handed back to the queue between attempts")
		}
	})
}

// An import reads its next page while it writes the page before: with
// the run's row locked, so that the first batch cannot commit, the
// second page is asked for all the same. Each page is read once, and the
// run completes once the lock goes.
func TestDataSyncReadsAheadWhileWriting(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, _ := dsBoundsSetup(t, db, datasync.Options{}, 0)
		src := dsNewSource(t, 250)
		f.credentials(src.URL, "")
		first, second := src.hold(""), src.hold("100")

		id := f.start(f.body("import", "batchSize", 100))
		src.awaitArrival(t, "")
		release := holdInTx(t, db, `UPDATE data_sync_runs SET updated_at = updated_at WHERE id = $1`, id)
		first.open()
		src.awaitArrival(t, "100") // asked while the first batch waits for the row
		if run := f.detail(id); run["batchesCompleted"] != 0.0 {
			t.Errorf("the first batch committed under the lock: %v", run)
		}
		second.open()
		if err := release(); err != nil {
			t.Fatal(err)
		}
		run := f.wait(id)
		expectRun(t, "the run", run, "completed", 250, 0, 0, 0, 3)
		if got := src.cursors(); !slices.Equal(got, []string{"-", "100", "200"}) {
			t.Errorf("requests %v, want each page once", got)
		}
	})
}

// A page read ahead is an attempt like any other: a second page that
// never answers is asked for MaxAttempts times in all (3 with the tests'
// backoff), the read ahead included, and the run fails with the first
// page's records kept.
func TestDataSyncReadAheadCountsAsAttempt(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f, _ := dsBoundsSetup(t, db, datasync.Options{}, 0)
		src := dsNewSource(t, 250)
		src.set(func(s *dsSource) {
			s.fail = func(cursor string, _ int) int {
				if cursor == "100" {
					return http.StatusServiceUnavailable
				}
				return 0
			}
		})
		f.credentials(src.URL, "")
		run := f.wait(f.start(f.body("import", "batchSize", 100)))
		expectRun(t, "the run", run, "failed", 100, 0, 0, 0, 1)
		if le := lastError(run); !strings.HasSuffix(le, "(gave up after 3 attempts)") {
			t.Errorf("lastError %q", le)
		}
		if n := src.count("100"); n != 3 {
			t.Errorf("the failing page was asked %d times, want 3", n)
		}
	})
}
