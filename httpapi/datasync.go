package httpapi

import (
	"errors"
	"net/http"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the data sync routes: the permission a route needs.
const (
	featureSyncView      = "data_sync.view"
	featureSyncConfigure = "data_sync.configure"
	featureSyncRun       = "data_sync.run"
)

// dataSyncRoutes are the data sync endpoints: validate a target, start,
// list, read, cancel and retry runs.
func dataSyncRoutes(svc *datasync.Service, env *areaEnv) []route {
	h := syncHandlers{svc: svc}
	const base = "/data_sync"
	return []route{
		{Method: "POST", Path: base + "/validate", Handler: h.validate, ErrorBody: syncErrorBody,
			Access: routeAccess{Features: []string{featureSyncConfigure}},
			Doc: routeDoc{Summary: "Check that a sync could run: integration, adapter, entity type, credentials, the adapter's own check",
				Request: syncTarget{}, Response: datasync.ValidateResult{},
				Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity}}},
		{Method: "POST", Path: base + "/run", Handler: h.run,
			Access: routeAccess{Features: []string{featureSyncRun}},
			Doc: routeDoc{Summary: "Start an import or export run ({integrationId, entityType, direction, fullSync?, batchSize?, triggeredBy?}); " +
				"an export also needs " + featureEntitiesRecordsView + " and sends only the records of the organizations the caller may read",
				Request: datasync.RunInput{}, Status: http.StatusCreated, Response: syncRunStarted{},
				Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity}}},
		{Method: "GET", Path: base + "/runs", Handler: h.list,
			Access: routeAccess{Features: []string{featureSyncView}},
			Doc: routeDoc{Summary: "Sync runs, newest first (integrationId, entityType, direction, status, page, pageSize ≤ 100)",
				Query: append([]Param{textQuery("integrationId", "Exact integration id"), textQuery("entityType", "Exact entity type"),
					enumQuery("direction", "Direction", string(datasync.Import), string(datasync.Export)),
					enumQuery("status", "Run status", string(datasync.StatusPending), string(datasync.StatusRunning),
						string(datasync.StatusCompleted), string(datasync.StatusFailed), string(datasync.StatusCancelled), string(datasync.StatusPaused))},
					strictPageQuery(20, 100)...), Response: pageResponse[*datasync.Run]{}}},
		{Method: "GET", Path: base + "/runs/{id}", Handler: h.get,
			Access: routeAccess{Features: []string{featureSyncView}},
			Doc:    routeDoc{Summary: "A sync run with its counters and progress job", Response: syncRunDetail{}}},
		{Method: "POST", Path: base + "/runs/{id}/cancel", Handler: h.cancel,
			Access: routeAccess{Features: []string{featureSyncRun}},
			Doc: routeDoc{Summary: "Cancel a pending or running run (it stops after the batch in progress)", Response: okBody,
				Errors: []int{http.StatusConflict}}},
		{Method: "POST", Path: base + "/runs/{id}/retry", Handler: h.retry,
			Access: routeAccess{Features: []string{featureSyncRun}},
			Doc: routeDoc{Summary: "Retry a failed or cancelled run from its cursor ({fromBeginning?}); " +
				"an export's retry also needs " + featureEntitiesRecordsView, Request: retryInput{}, BodyOptional: true,
				Status: http.StatusCreated, Response: syncRunStarted{}, Errors: []int{http.StatusConflict}}},
	}
}

// A run's status is the status of long-running work (jobstatus.Status),
// whose values progress.go documents; datasync.Run's status field adds
// paused (its jsonschema tag).
var _ = docEnum(datasync.Import, datasync.Export)

type syncHandlers struct {
	svc *datasync.Service
}

// syncError gives invalid run input 422.
func syncError(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return &statusError{status: http.StatusUnprocessableEntity, err: err}
	}
	return err
}

// syncErrorBody is validate's {ok: false, message} body for its own
// refusals (404, 422); authentication and authorization failures keep the
// default body (nil).
func syncErrorBody(status int, _ error, message string, details map[string]string) any {
	if status == http.StatusUnauthorized || status == http.StatusForbidden || status >= 500 {
		return nil
	}
	return syncErrorResponse{OK: false, Message: message, Details: details}
}

// syncErrorResponse is validate's error body: {ok: false, message,
// details?}.
type syncErrorResponse struct {
	OK      bool              `json:"ok"`
	Message string            `json:"message"`
	Details map[string]string `json:"details,omitempty"`
}

// syncTarget is the body of POST /data_sync/validate.
type syncTarget struct {
	IntegrationID string             `json:"integrationId" jsonschema:"required,minLength=1"`
	EntityType    string             `json:"entityType" jsonschema:"required,minLength=1"`
	Direction     datasync.Direction `json:"direction" jsonschema:"required"`
}

func (h syncHandlers) validate(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[syncTarget](r)
	if err != nil {
		return syncError(err)
	}
	res, err := h.svc.Validate(r.Context(), in.IntegrationID, in.EntityType, in.Direction)
	var se *datasync.SourceError
	if errors.As(err, &se) {
		return &statusError{status: http.StatusUnprocessableEntity, message: se.Error(), err: err}
	}
	if err != nil {
		return syncError(err)
	}
	return encode(w, http.StatusOK, res)
}

// mayExport refuses (403, naming the feature) a caller who may not read
// the records an export would send: the feature GET /entities/records
// asks for. Which organizations' records it sends is the run's scope, the
// caller's (datasync.Run.OrganizationIDs).
func mayExport(r *http.Request, d datasync.Direction) error {
	if d != datasync.Export {
		return nil
	}
	id := identity.IdentityFrom(r.Context())
	if id == nil {
		return identity.ErrUnauthenticated
	}
	if missing := id.Missing(featureEntitiesRecordsView); len(missing) > 0 {
		return &forbiddenError{features: missing}
	}
	return nil
}

func (h syncHandlers) run(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[datasync.RunInput](r)
	if err != nil {
		return syncError(err)
	}
	if err := mayExport(r, in.Direction); err != nil {
		return err
	}
	run, err := h.svc.StartRun(r.Context(), in)
	if err != nil {
		return syncError(err)
	}
	return encode(w, http.StatusCreated, syncRunStarted{ID: run.ID, ProgressJobID: run.ProgressJobID})
}

// syncRunStarted answers a started or retried run: its id and its
// progress job's (null without the progress area).
type syncRunStarted struct {
	ID            string  `json:"id"`
	ProgressJobID *string `json:"progressJobId"`
}

func (h syncHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := strictPage(r, 20, 100)
	if err != nil {
		return err
	}
	runs, total, err := h.svc.ListRuns(r.Context(), datasync.RunFilter{IntegrationID: q.Get("integrationId"), EntityType: q.Get("entityType"),
		Direction: datasync.Direction(q.Get("direction")), Status: datasync.Status(q.Get("status")), Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, newPage(runs, total, p))
}

func (h syncHandlers) get(w http.ResponseWriter, r *http.Request) error {
	run, pj, err := h.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, syncRunDetail{run, pj})
}

// syncRunDetail is a run with its progress job's summary (null without
// one).
type syncRunDetail struct {
	*datasync.Run
	ProgressJob *datasync.ProgressJob `json:"progressJob"`
}

func (h syncHandlers) cancel(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.CancelRun(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return encode(w, http.StatusOK, okBody)
}

// retryInput is the optional body of a retry.
type retryInput struct {
	FromBeginning bool `json:"fromBeginning"`
}

func (h syncHandlers) retry(w http.ResponseWriter, r *http.Request) error {
	var in retryInput
	if r.ContentLength != 0 { // the body is optional
		var err error
		if in, err = decode[retryInput](r); err != nil {
			return err
		}
	}
	old, _, err := h.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := mayExport(r, old.Direction); err != nil {
		return err
	}
	run, err := h.svc.RetryRun(r.Context(), old.ID, in.FromBeginning)
	if err != nil {
		return err
	}
	return encode(w, http.StatusCreated, syncRunStarted{ID: run.ID, ProgressJobID: run.ProgressJobID})
}
