package httpapi

import (
	"context"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The progress routes, black box over HTTP on both engines, with jobs
// made through the Go API (Kit.Progress): tenants and organizations, the
// exact job JSON, percent and ETA, the stale rule and the
// recentlyCompleted window (a clock the test moves: store.Options.Clock),
// and the feature.

const progBase = "/api/progress"

// progClock is the database's clock, moved by hand.
type progClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *progClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *progClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// progEach runs fn on both engines with an environment whose database
// runs on a clock of the test's: a fresh SQLite file, and the package's
// shared PostgreSQL schema opened again with the clock (tests stay apart
// by their own tenants).
func progEach(t *testing.T, fn func(t *testing.T, e *testEnv, clk *progClock)) {
	t.Helper()
	run := func(t *testing.T, dbURL string) {
		clk := &progClock{now: time.Now().UTC().Truncate(time.Second)}
		db, err := store.Open(t.Context(), dbURL, &store.Options{Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, newTestEnv(t, db), clk)
	}
	t.Run("sqlite", func(t *testing.T) { run(t, storetest.SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) {
		shared := storetest.Postgres(t) // skips without PostgreSQL
		u, err := url.Parse(os.Getenv(storetest.PostgresEnv))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", shared.Schema())
		u.RawQuery = q.Encode()
		run(t, u.String())
	})
}

// progJobKeys are the keys of a job, exactly.
var progJobKeys = []string{"id", "jobType", "name", "status", "progressPercent", "processedCount", "totalCount", "etaSeconds",
	"cancellable", "startedAt", "finishedAt", "errorMessage"}

// progScope is a context acting in the tenant's organization, as a
// worker of the tenant's would.
func progScope(t *testing.T, tf tenantFixture) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: tf.ID, OrganizationID: tf.OrgID})
}

// progGet reads a job over HTTP (200), checking its keys.
func progGet(e *testEnv, key, id string) map[string]any {
	e.t.Helper()
	body := e.do("GET", progBase+"/jobs/"+id, key, nil).expect(200).JSON()
	expectKeys(e.t, "job", body, progJobKeys...)
	return body
}

// progActive reads GET /progress/active (200) and returns the ids of
// both lists, checking every job's keys.
func progActive(e *testEnv, key string) (active, recent []string) {
	e.t.Helper()
	body := e.do("GET", progBase+"/active", key, nil).expect(200).JSON()
	expectKeys(e.t, "active body", body, "active", "recentlyCompleted")
	ids := func(name string) []string {
		list, ok := body[name].([]any)
		if !ok {
			e.t.Fatalf("%s is not an array: %v", name, body[name])
		}
		out := []string{}
		for _, it := range list {
			job := it.(map[string]any)
			expectKeys(e.t, name+" job", job, progJobKeys...)
			out = append(out, job["id"].(string))
		}
		return out
	}
	return ids("active"), ids("recentlyCompleted")
}

func progTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func progMust(t *testing.T) func(*progress.Job, error) *progress.Job {
	return func(j *progress.Job, err error) *progress.Job {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
}

func TestProgressRoutes(t *testing.T) {
	t.Parallel()
	progEach(t, func(t *testing.T, e *testEnv, clk *progClock) {
		svc, must := e.kit.Progress, progMust(t)
		acme, beta := e.newTenant("Acme"), e.newTenant("Beta")
		keyA, keyB := e.newKey(acme, progressapi.FeatureProgressView), e.newKey(beta, progressapi.FeatureProgressView)
		ctxA, ctxB := progScope(t, acme), progScope(t, beta)

		// A running export: 50 of 200 in 10 s.
		export := must(svc.Create(ctxA, progress.CreateInput{JobType: "entities.export", Name: "Export orders", Cancellable: true,
			Total: progPtr(int64(200))}))
		begun := must(svc.Begin(ctxA, export.ID))
		clk.advance(10 * time.Second)
		must(svc.Report(ctxA, export.ID, 50, nil))
		sameJSON(t, "the running export", progGet(e, keyA, export.ID), map[string]any{
			"id": export.ID, "jobType": "entities.export", "name": "Export orders", "status": "running", "progressPercent": 25,
			"processedCount": 50, "totalCount": 200, "etaSeconds": 30, "cancellable": true,
			"startedAt": progTime(*begun.StartedAt), "finishedAt": nil, "errorMessage": nil})
		if _, err := time.Parse(time.RFC3339, progGet(e, keyA, export.ID)["startedAt"].(string)); err != nil {
			t.Fatalf("startedAt is not RFC 3339: %v", err)
		}

		// Unknown total: no percent beyond 0, no ETA.
		extract := must(svc.Create(ctxA, progress.CreateInput{JobType: "attachments.extract", Name: "Extract text"}))
		must(svc.Begin(ctxA, extract.ID))
		must(svc.Report(ctxA, extract.ID, 7, nil))
		got := progGet(e, keyA, extract.ID)
		if got["totalCount"] != nil || got["progressPercent"] != 0.0 || got["etaSeconds"] != nil || got["processedCount"] != 7.0 {
			t.Fatalf("a job of unknown total: %v", got)
		}

		// Tenants: B's key finds none of A's jobs, and A none of B's.
		betaJob := must(svc.Create(ctxB, progress.CreateInput{JobType: "b.job", Name: "Beta's"}))
		for _, id := range []string{export.ID, extract.ID} {
			sameJSON(t, "another tenant's job", e.do("GET", progBase+"/jobs/"+id, keyB, nil).expect(404).JSON(),
				map[string]any{"error": "Job not found"})
		}
		e.do("GET", progBase+"/jobs/"+betaJob.ID, keyA, nil).expect(404)
		e.do("GET", progBase+"/jobs/"+store.NewID(), keyA, nil).expect(404)
		e.do("GET", progBase+"/jobs/not-a-uuid", keyA, nil).expect(404)
		active, recent := progActive(e, keyA)
		sameJSON(t, "A's active jobs", active, []string{extract.ID, export.ID})
		sameJSON(t, "A's recent jobs", recent, []string{})
		active, recent = progActive(e, keyB)
		sameJSON(t, "B's active jobs", active, []string{betaJob.ID})
		sameJSON(t, "B's recent jobs", recent, []string{})

		// Organizations: a key of A restricted to another organization
		// sees neither A's jobs (made in A's organization) by id nor in
		// the lists.
		org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Acme West", "tenantId": acme.ID}).
			expect(201).JSON()["id"].(string)
		keyOrg2 := permOrgKey(e, acme.ID, org2, progressapi.FeatureProgressView)
		e.do("GET", progBase+"/jobs/"+export.ID, keyOrg2, nil).expect(404)
		active, recent = progActive(e, keyOrg2)
		if len(active)+len(recent) != 0 {
			t.Fatalf("the other organization's key lists %v %v", active, recent)
		}
		keyOrg1 := permOrgKey(e, acme.ID, acme.OrgID, progressapi.FeatureProgressView)
		progGet(e, keyOrg1, export.ID)

		// The feature: a key without progress.view is refused.
		noView := e.newKey(acme, "dashboard.widgets.view")
		e.do("GET", progBase+"/active", noView, nil).expect(403)
		e.do("GET", progBase+"/jobs/"+export.ID, noView, nil).expect(403)
		e.do("GET", progBase+"/active", "", nil).expect(401)

		// A finished job: completed, 100 %, finishedAt, in
		// recentlyCompleted.
		clk.advance(time.Second)
		must(svc.Heartbeat(ctxA, extract.ID))
		done := must(svc.Finish(ctxA, export.ID, progress.StatusCompleted, ""))
		got = progGet(e, keyA, export.ID)
		if got["status"] != "completed" || got["progressPercent"] != 100.0 || got["etaSeconds"] != nil ||
			got["finishedAt"] != progTime(*done.FinishedAt) || got["errorMessage"] != nil {
			t.Fatalf("the completed export: %v", got)
		}
		failed := must(svc.Create(ctxA, progress.CreateInput{JobType: "a", Name: "Doomed"}))
		must(svc.Begin(ctxA, failed.ID))
		clk.advance(time.Second)
		must(svc.Finish(ctxA, failed.ID, progress.StatusFailed, "Row 3 has no name"))
		if got := progGet(e, keyA, failed.ID); got["status"] != "failed" || got["errorMessage"] != "Row 3 has no name" {
			t.Fatalf("the failed job: %v", got)
		}
		active, recent = progActive(e, keyA)
		sameJSON(t, "A's active jobs after two finished", active, []string{extract.ID})
		sameJSON(t, "A's recent jobs", recent, []string{failed.ID, export.ID})

		// The stale rule: 60 s after its last heartbeat the running
		// extraction shows failed, finished at heartbeat + 60 s.
		lastBeat := must(svc.Get(ctxA, extract.ID)).HeartbeatAt
		clk.advance(lastBeat.Add(59 * time.Second).Sub(clk.Now()))
		if got := progGet(e, keyA, extract.ID); got["status"] != "running" {
			t.Fatalf("59 s after its heartbeat: %v", got["status"])
		}
		clk.advance(time.Second)
		got = progGet(e, keyA, extract.ID)
		if got["status"] != "failed" || got["errorMessage"] != "No heartbeat for 60 s" || got["finishedAt"] != progTime(lastBeat.Add(time.Minute)) ||
			got["etaSeconds"] != nil || got["processedCount"] != 7.0 {
			t.Fatalf("60 s after its heartbeat: %v", got)
		}
		active, recent = progActive(e, keyA)
		sameJSON(t, "A's active jobs once the extraction is stale", active, []string{})
		sameJSON(t, "A's recent jobs with the stale one", recent, []string{extract.ID, failed.ID, export.ID})
		// A late report from a worker that was only slow revives it.
		must(svc.Report(ctxA, extract.ID, 8, nil))
		if got := progGet(e, keyA, extract.ID); got["status"] != "running" || got["errorMessage"] != nil || got["finishedAt"] != nil {
			t.Fatalf("after a late report: %v", got)
		}

		// The window: ten minutes after it finished a job leaves
		// recentlyCompleted (and stays readable by id).
		clk.advance(done.FinishedAt.Add(10 * time.Minute).Sub(clk.Now()))
		must(svc.Heartbeat(ctxA, extract.ID))
		_, recent = progActive(e, keyA)
		sameJSON(t, "recent jobs at ten minutes", recent, []string{failed.ID, export.ID})
		clk.advance(time.Microsecond)
		_, recent = progActive(e, keyA)
		sameJSON(t, "recent jobs just after ten minutes", recent, []string{failed.ID})
		clk.advance(time.Second)
		_, recent = progActive(e, keyA)
		sameJSON(t, "recent jobs later", recent, []string{})
		if got := progGet(e, keyA, export.ID); got["status"] != "completed" {
			t.Fatalf("an old job by id: %v", got)
		}
	})
}

func progPtr[T any](v T) *T { return &v }
