package integrationsapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the integration routes: the permission a route needs.
const (
	FeatureIntegrationsView        = "integrations.view"
	FeatureIntegrationsManage      = "integrations.manage"
	FeatureIntegrationsCredentials = "integrations.credentials.manage"
)

// routes are the integration catalogue, each tenant's state,
// API version and credentials, and the integration log.
func routes(svc *integrations.Service, env *apikit.Env) []apikit.Route {
	h := integrationHandlers{svc: svc}
	const base = "/integrations"
	view := []string{FeatureIntegrationsView}
	// The writes answer 422 for a payload the service refuses.
	writeErrors := []int{http.StatusUnprocessableEntity}
	return []apikit.Route{
		{Method: "GET", Path: base, Handler: h.list,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The integration catalogue with the caller's tenant's state (q, category, isEnabled, page, pageSize)",
				Query: append([]apikit.Param{apikit.TextQuery("q", "Text in the id, title or description (any case)"), apikit.TextQuery("category", "Exact category"),
					apikit.EnumQuery("isEnabled", "Select by the tenant's state", "true", "false", "1", "0")}, apikit.StrictPageQuery(100, 100)...),
				Response: apikit.PageResponse[integrations.ListItem]{}}},
		{Method: "GET", Path: base + "/logs", Handler: h.logs,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The integration log, newest first (integrationId, level, runId, entityType, entityId, page, pageSize ≤ 100)",
				Query: append([]apikit.Param{apikit.TextQuery("integrationId", "Exact integration id"),
					apikit.EnumQuery("level", "Log level", integrations.LevelInfo, integrations.LevelWarn, integrations.LevelError),
					apikit.TextQuery("runId", "Exact sync run id"), apikit.TextQuery("entityType", "Exact entity type"), apikit.TextQuery("entityId", "Exact entity id")},
					apikit.StrictPageQuery(20, 100)...), Response: apikit.PageResponse[*integrations.LogEntry]{}}},
		{Method: "GET", Path: base + "/{id}", Handler: h.get,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "An integration with its bundle, the tenant's state and which credentials are stored",
				Response: integrations.Detail{}}},
		{Method: "PUT", Path: base + "/{id}/state", Handler: h.setState,
			Access: apikit.Access{Features: []string{FeatureIntegrationsManage}, TenantWide: true},
			Doc: apikit.Doc{Summary: "Enable or disable an integration, or flag it for re-authentication ({isEnabled?, reauthRequired?})",
				Request: integrations.StateInput{}, Response: integrationStateBody{}, Errors: writeErrors}},
		{Method: "PUT", Path: base + "/{id}/version", Handler: h.setVersion,
			Access: apikit.Access{Features: []string{FeatureIntegrationsManage}, TenantWide: true},
			Doc: apikit.Doc{Summary: "Pick the API version the tenant uses ({apiVersion})", Request: integrationVersionInput{},
				Response: integrationVersionBody{}, Errors: writeErrors}},
		// NoStore: the answer holds the tenant's non-secret credentials.
		{Method: "GET", Path: base + "/{id}/credentials", Handler: h.credentials, NoStore: true,
			Access: apikit.Access{Features: view},
			Doc: apikit.Doc{Summary: "The credential schema and the tenant's credentials, secrets masked",
				Response: integrationCredentialsBody{}}},
		{Method: "PUT", Path: base + "/{id}/credentials", Handler: h.setCredentials, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureIntegrationsCredentials}, TenantWide: true},
			Doc: apikit.Doc{Summary: "Replace the tenant's credentials ({credentials}), stored encrypted",
				Request: integrationCredentialsInput{}, Response: apikit.OkBody, Errors: writeErrors}},
	}
}

var _ = apikit.DocEnum(integrations.FieldText, integrations.FieldSecret, integrations.FieldSelect, integrations.FieldBoolean, integrations.FieldURL)

type integrationHandlers struct {
	svc *integrations.Service
}

// integrationError makes the state, version and credential refusals 422.
func integrationError(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Err: err}
	}
	return err
}

func (h integrationHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.StrictPage(r, 100, 100)
	if err != nil {
		return err
	}
	f := integrations.ListFilter{Q: q.Get("q"), Category: q.Get("category")}
	if v := q.Get("isEnabled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false" && v != "1" && v != "0") {
			return store.Invalid("isEnabled", "must be true, false, 1 or 0")
		}
		f.IsEnabled = &b
	}
	items, err := h.svc.List(r.Context(), f)
	if err != nil {
		return err
	}
	from := min(p.Offset(), len(items))
	to := min(from+p.PageSize, len(items))
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(items[from:to], len(items), p))
}

func (h integrationHandlers) get(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, d)
}

func (h integrationHandlers) setState(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[integrations.StateInput](r)
	if err != nil {
		return integrationError(err)
	}
	st, err := h.svc.SetState(r.Context(), r.PathValue("id"), in)
	if err != nil {
		return integrationError(err)
	}
	return apikit.Encode(w, http.StatusOK, integrationStateBody{IsEnabled: st.IsEnabled, ReauthRequired: st.ReauthRequired,
		NotifyAdminsOnFailure: st.NotifyAdminsOnFailure, APIVersion: st.APIVersion, UpdatedAt: st.UpdatedAt})
}

// integrationStateBody answers PUT /integrations/{id}/state: the tenant's
// state after the change.
type integrationStateBody struct {
	IsEnabled      bool `json:"isEnabled"`
	ReauthRequired bool `json:"reauthRequired"`
	// NotifyAdminsOnFailure: the tenant's admins hear of the
	// integration's failures.
	NotifyAdminsOnFailure bool       `json:"notifyAdminsOnFailure"`
	APIVersion            *string    `json:"apiVersion"`
	UpdatedAt             *time.Time `json:"updatedAt"`
}

// integrationVersionInput is the body of PUT /integrations/{id}/version.
type integrationVersionInput struct {
	APIVersion string `json:"apiVersion" jsonschema:"required,minLength=1"`
}

// integrationVersionBody answers PUT /integrations/{id}/version: the
// version now in use and the one before (null for none).
type integrationVersionBody struct {
	APIVersion      *string `json:"apiVersion"`
	PreviousVersion *string `json:"previousVersion"`
}

func (h integrationHandlers) setVersion(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[integrationVersionInput](r)
	if err != nil {
		return integrationError(err)
	}
	current, previous, err := h.svc.SetVersion(r.Context(), r.PathValue("id"), in.APIVersion)
	if err != nil {
		return integrationError(err)
	}
	return apikit.Encode(w, http.StatusOK, integrationVersionBody{APIVersion: current, PreviousVersion: previous})
}

func (h integrationHandlers) credentials(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	schema, values, err := h.svc.Credentials(r.Context(), id)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, integrationCredentialsBody{IntegrationID: id, Schema: schema, Credentials: values})
}

// integrationCredentialsBody answers GET /integrations/{id}/credentials:
// the credential fields and the tenant's values by key, secrets masked
// (integrations.Mask).
type integrationCredentialsBody struct {
	IntegrationID string               `json:"integrationId"`
	Schema        []integrations.Field `json:"schema"`
	Credentials   map[string]any       `json:"credentials"`
}

// integrationCredentialsInput is the body of PUT
// /integrations/{id}/credentials: the values by key (a secret sent as
// integrations.Mask keeps the stored one).
type integrationCredentialsInput struct {
	Credentials map[string]any `json:"credentials" jsonschema:"required"`
}

func (h integrationHandlers) setCredentials(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[integrationCredentialsInput](r)
	if err != nil {
		return integrationError(err)
	}
	if in.Credentials == nil {
		return integrationError(store.Invalid("credentials", "is required: an object"))
	}
	if err := h.svc.SetCredentials(r.Context(), r.PathValue("id"), in.Credentials); err != nil {
		return integrationError(err)
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkBody)
}

func (h integrationHandlers) logs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.StrictPage(r, 20, 100)
	if err != nil {
		return err
	}
	items, total, err := h.svc.Logs(r.Context(), integrations.LogFilter{IntegrationID: q.Get("integrationId"), Level: q.Get("level"),
		RunID: q.Get("runId"), EntityType: q.Get("entityType"), EntityID: q.Get("entityId"), Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(items, total, p))
}
