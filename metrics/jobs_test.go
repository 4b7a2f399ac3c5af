package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/metrics"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

type okJob struct{}

func (okJob) Kind() string { return "metrics_test.ok" }

type badJob struct{}

func (badJob) Kind() string { return "metrics_test.bad" }

// TestJobSeries: queued jobs are counted by kind and state before the
// engine starts; once they ran, each run is counted by kind and outcome.
func TestJobSeries(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		e, err := jobs.New(ctx, db, jobs.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := jobs.Register(e, jobs.WorkFunc[okJob](func(context.Context, *jobs.Job[okJob]) error { return nil }), nil); err != nil {
			t.Fatal(err)
		}
		if err := jobs.Register(e, jobs.WorkFunc[badJob](func(context.Context, *jobs.Job[badJob]) error {
			return jobs.Cancel(errors.New("no"))
		}), nil); err != nil {
			t.Fatal(err)
		}
		m := metrics.New(db)
		m.WatchJobs(e)
		for range 3 {
			if _, err := e.Enqueue(ctx, okJob{}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Enqueue(ctx, badJob{}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Enqueue(ctx, okJob{}, &jobs.Opts{ScheduledAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		scrape := func() string {
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			return rec.Body.String()
		}
		body := scrape()
		for _, want := range []string{
			`tenantkit_jobs_queued{kind="metrics_test.ok",state="available"} 3`,
			`tenantkit_jobs_queued{kind="metrics_test.bad",state="available"} 1`,
			`tenantkit_jobs_queued{kind="metrics_test.ok",state="scheduled"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("before start, the scrape lacks %q", want)
			}
		}

		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		want := []string{
			`tenantkit_jobs_total{kind="metrics_test.ok",outcome="completed"} 3`,
			`tenantkit_jobs_total{kind="metrics_test.bad",outcome="cancelled"} 1`,
			`tenantkit_job_duration_seconds_count{kind="metrics_test.ok"} 3`,
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			body = scrape()
			missing := ""
			for _, w := range want {
				if !strings.Contains(body, w) {
					missing = w
				}
			}
			if missing == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the runs, the scrape lacks %q:\n%s", missing, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if strings.Contains(body, `state="available"`) {
			t.Errorf("jobs still available after they ran:\n%s", body)
		}
	})
}
