package progressapi

import (
	"net/http"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/progress"
)

// featureProgressView is the permission the progress routes need.
const FeatureProgressView = "progress.view"

// routes are the job progress endpoints: what runs and what just
// finished in the caller's scope, and one job. Jobs are created and
// reported through the Go API (progress.Service); no route writes.
func routes(svc *progress.Service, env *apikit.Env) []apikit.Route {
	h := progressHandlers{svc: svc}
	view := []string{FeatureProgressView}
	return []apikit.Route{
		{Method: "GET", Path: "/progress/active", Handler: h.active,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The caller's pending and running jobs and those finished in the last minutes ({active, recentlyCompleted})",
				Response: progressActive{}}},
		{Method: "GET", Path: "/progress/jobs/{id}", Handler: h.job,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "One job's progress (a running job without a heartbeat for 60 s shows failed)",
				Response: progressJob{}}},
	}
}

// The status of long-running work (jobstatus.Status): a progress job's
// and a data sync run's, whose Run.Status field adds paused.
var _ = apikit.DocEnum(progress.StatusPending, progress.StatusRunning, progress.StatusCompleted, progress.StatusFailed, progress.StatusCancelled)

type progressHandlers struct {
	svc *progress.Service
}

// progressJob is a job as the routes show it: exactly the documented
// keys, null where not set, times RFC 3339 in UTC.
type progressJob struct {
	ID              string          `json:"id"`
	JobType         string          `json:"jobType"`
	Name            string          `json:"name"`
	Status          progress.Status `json:"status"`
	ProgressPercent int             `json:"progressPercent" jsonschema:"minimum=0,maximum=100"`
	ProcessedCount  int64           `json:"processedCount"`
	TotalCount      *int64          `json:"totalCount"`
	ETASeconds      *int64          `json:"etaSeconds"`
	Cancellable     bool            `json:"cancellable"`
	StartedAt       *string         `json:"startedAt" jsonschema:"format=date-time"`
	FinishedAt      *string         `json:"finishedAt" jsonschema:"format=date-time"`
	ErrorMessage    *string         `json:"errorMessage"`
}

func progressJSON(j *progress.Job) progressJob {
	out := progressJob{ID: j.ID, JobType: j.JobType, Name: j.Name, Status: j.Status, ProgressPercent: j.ProgressPercent,
		ProcessedCount: j.ProcessedCount, TotalCount: j.TotalCount, ETASeconds: j.ETASeconds, Cancellable: j.Cancellable,
		StartedAt: apikit.TimeOrNull(j.StartedAt), FinishedAt: apikit.TimeOrNull(j.FinishedAt)}
	if j.ErrorMessage != "" {
		out.ErrorMessage = &j.ErrorMessage
	}
	return out
}

func progressList(jobs []*progress.Job) []progressJob {
	out := make([]progressJob, len(jobs))
	for i, j := range jobs {
		out[i] = progressJSON(j)
	}
	return out
}

func (h progressHandlers) active(w http.ResponseWriter, r *http.Request) error {
	a, err := h.svc.Active(r.Context())
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, progressActive{Active: progressList(a.Active), RecentlyCompleted: progressList(a.RecentlyCompleted)})
}

// progressActive is GET /progress/active: the scope's pending and running
// jobs, and those finished in the last minutes.
type progressActive struct {
	Active            []progressJob `json:"active"`
	RecentlyCompleted []progressJob `json:"recentlyCompleted"`
}

func (h progressHandlers) job(w http.ResponseWriter, r *http.Request) error {
	j, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, progressJSON(j))
}
