package datasyncapi

import (
	"errors"
	"net/http"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the data sync routes: the permission a route needs.
const (
	FeatureSyncView      = "data_sync.view"
	FeatureSyncConfigure = "data_sync.configure"
	FeatureSyncRun       = "data_sync.run"
)

// routes are the data sync endpoints: validate a target, start,
// list, read, cancel and retry runs.
func routes(svc *datasync.Service, env *apikit.Env) []apikit.Route {
	h := syncHandlers{svc: svc}
	const base = "/data_sync"
	return []apikit.Route{
		{Method: "POST", Path: base + "/validate", Handler: h.validate, ErrorBody: syncErrorBody,
			Access: apikit.Access{Features: []string{FeatureSyncConfigure}},
			Doc: apikit.Doc{Summary: "Check that a sync could run: integration, adapter, entity type, credentials, the adapter's own check",
				Request: syncTarget{}, Response: datasync.ValidateResult{},
				Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity}}},
		{Method: "POST", Path: base + "/run", Handler: h.run,
			Access: apikit.Access{Features: []string{FeatureSyncRun}},
			Doc: apikit.Doc{Summary: "Start an import or export run ({integrationId, entityType, direction, fullSync?, batchSize?, triggeredBy?}); " +
				"an export also needs " + entitiesapi.FeatureEntitiesRecordsView + " and sends only the records of the organizations the caller may read",
				Request: datasync.RunInput{}, Status: http.StatusCreated, Response: syncRunStarted{},
				Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity}}},
		{Method: "GET", Path: base + "/runs", Handler: h.list,
			Access: apikit.Access{Features: []string{FeatureSyncView}},
			Doc: apikit.Doc{Summary: "Sync runs, newest first (integrationId, entityType, direction, status, page, pageSize ≤ 100)",
				Query: append([]apikit.Param{apikit.TextQuery("integrationId", "Exact integration id"), apikit.TextQuery("entityType", "Exact entity type"),
					apikit.EnumQuery("direction", "Direction", string(datasync.Import), string(datasync.Export)),
					apikit.EnumQuery("status", "Run status", string(datasync.StatusPending), string(datasync.StatusRunning),
						string(datasync.StatusCompleted), string(datasync.StatusFailed), string(datasync.StatusCancelled), string(datasync.StatusPaused))},
					apikit.StrictPageQuery(20, 100)...), Response: apikit.PageResponse[*datasync.Run]{}}},
		{Method: "GET", Path: base + "/runs/{id}", Handler: h.get,
			Access: apikit.Access{Features: []string{FeatureSyncView}},
			Doc:    apikit.Doc{Summary: "A sync run with its counters and progress job", Response: syncRunDetail{}}},
		{Method: "POST", Path: base + "/runs/{id}/cancel", Handler: h.cancel,
			Access: apikit.Access{Features: []string{FeatureSyncRun}},
			Doc: apikit.Doc{Summary: "Cancel a pending or running run (it stops after the batch in progress)", Response: apikit.OkBody,
				Errors: []int{http.StatusConflict}}},
		{Method: "POST", Path: base + "/runs/{id}/retry", Handler: h.retry,
			Access: apikit.Access{Features: []string{FeatureSyncRun}},
			Doc: apikit.Doc{Summary: "Retry a failed or cancelled run from its cursor ({fromBeginning?}); " +
				"an export's retry also needs " + entitiesapi.FeatureEntitiesRecordsView, Request: retryInput{}, BodyOptional: true,
				Status: http.StatusCreated, Response: syncRunStarted{}, Errors: []int{http.StatusConflict}}},
	}
}

// A run's status is the status of long-running work (jobstatus.Status),
// whose values progress.go documents; datasync.Run's status field adds
// paused (its jsonschema tag).
var _ = apikit.DocEnum(datasync.Import, datasync.Export)

type syncHandlers struct {
	svc *datasync.Service
}

// syncError gives invalid run input 422.
func syncError(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Err: err}
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
	in, err := apikit.Decode[syncTarget](r)
	if err != nil {
		return syncError(err)
	}
	res, err := h.svc.Validate(r.Context(), in.IntegrationID, in.EntityType, in.Direction)
	var se *datasync.SourceError
	if errors.As(err, &se) {
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Message: se.Error(), Err: err}
	}
	if err != nil {
		return syncError(err)
	}
	return apikit.Encode(w, http.StatusOK, res)
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
	if missing := id.Missing(entitiesapi.FeatureEntitiesRecordsView); len(missing) > 0 {
		return &apikit.ForbiddenError{Features: missing}
	}
	return nil
}

func (h syncHandlers) run(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[datasync.RunInput](r)
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
	return apikit.Encode(w, http.StatusCreated, syncRunStarted{ID: run.ID, ProgressJobID: run.ProgressJobID})
}

// syncRunStarted answers a started or retried run: its id and its
// progress job's (null without the progress area).
type syncRunStarted struct {
	ID            string  `json:"id"`
	ProgressJobID *string `json:"progressJobId"`
}

func (h syncHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.StrictPage(r, 20, 100)
	if err != nil {
		return err
	}
	runs, total, err := h.svc.ListRuns(r.Context(), datasync.RunFilter{IntegrationID: q.Get("integrationId"), EntityType: q.Get("entityType"),
		Direction: datasync.Direction(q.Get("direction")), Status: datasync.Status(q.Get("status")), Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(runs, total, p))
}

func (h syncHandlers) get(w http.ResponseWriter, r *http.Request) error {
	run, pj, err := h.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, syncRunDetail{run, pj})
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
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

// retryInput is the optional body of a retry.
type retryInput struct {
	FromBeginning bool `json:"fromBeginning"`
}

func (h syncHandlers) retry(w http.ResponseWriter, r *http.Request) error {
	var in retryInput
	if r.ContentLength != 0 { // the body is optional
		var err error
		if in, err = apikit.Decode[retryInput](r); err != nil {
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
	return apikit.Encode(w, http.StatusCreated, syncRunStarted{ID: run.ID, ProgressJobID: run.ProgressJobID})
}
