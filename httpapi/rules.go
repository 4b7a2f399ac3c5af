package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the rules routes. Rule-set routes need authentication only
// (spec).
const (
	featureRulesView    = "business_rules.rules.view"
	featureRulesCreate  = "business_rules.rules.create"
	featureRulesEdit    = "business_rules.rules.edit"
	featureRulesDelete  = "business_rules.rules.delete"
	featureRulesExecute = "business_rules.rules.execute"
	featureLogsView     = "business_rules.logs.view"
)

// The rule-set limits, per tenant per minute (spec): reads share one
// bucket, writes (members included) another.
var (
	ruleSetReads  = &rateLimit{Points: 100, Duration: time.Minute, KeyPrefix: "business_rules-sets-read", PerTenant: true}
	ruleSetWrites = &rateLimit{Points: 50, Duration: time.Minute, KeyPrefix: "business_rules-sets-write", PerTenant: true}
	ruleSetRuns   = &rateLimit{Points: 200, Duration: time.Minute, KeyPrefix: "business_rules-sets-execute", PerTenant: true}
)

// ruleRoutes are the business rules, rule sets, execution and execution
// log endpoints.
func (a *api) ruleRoutes() []route {
	h := ruleHandlers{svc: a.kit.Rules}
	const sets, rulesPath = "/business_rules/sets", "/business_rules/rules"
	set := func(method, path, summary string, limit *rateLimit, fn apiFunc) route {
		return route{Method: method, Path: sets + path, Summary: summary, RateLimit: limit, ErrorBody: ruleSetErrorBody, Handler: fn}
	}
	return []route{
		set("GET", "", "List rule sets", ruleSetReads, h.listSets),
		set("POST", "", "Create a rule set", ruleSetWrites, h.createSet),
		set("GET", "/{setId}", "Get a rule set with its members", ruleSetReads, h.getSet),
		set("PATCH", "/{setId}", "Update a rule set", ruleSetWrites, h.updateSet),
		set("DELETE", "/{setId}", "Delete a rule set (force=true detaches its members)", ruleSetWrites, h.deleteSet),
		set("POST", "/{setId}/members", "Add a rule to a set", ruleSetWrites, h.addMember),
		set("PATCH", "/{setId}/members/{ruleId}", "Change a member's sequence or enabled flag", ruleSetWrites, h.updateMember),
		set("DELETE", "/{setId}/members/{ruleId}", "Remove a rule from a set", ruleSetWrites, h.removeMember),
		set("POST", "/{setId}/execute", "Execute a rule set", ruleSetRuns, h.executeSet),

		{Method: "GET", Path: rulesPath, Summary: "List rules", Features: []string{featureRulesView}, Handler: h.listRules},
		{Method: "POST", Path: rulesPath, Summary: "Create a rule", Features: []string{featureRulesCreate}, Handler: h.createRule},
		{Method: "GET", Path: rulesPath + "/{id}", Summary: "Get a rule", Features: []string{featureRulesView}, Handler: h.getRule},
		{Method: "PUT", Path: rulesPath, Summary: "Update a rule (id in the body)", Features: []string{featureRulesEdit}, Handler: h.updateRule},
		{Method: "DELETE", Path: rulesPath, Summary: "Delete a rule (?id=)", Features: []string{featureRulesDelete}, Handler: h.deleteRule},
		{Method: "POST", Path: rulesPath + "/{id}/execute", Summary: "Execute one rule", Features: []string{featureRulesExecute}, Handler: h.executeRule},
		{Method: "POST", Path: "/business_rules/execute", Summary: "Execute the rules of an entity type and event", Features: []string{featureRulesExecute}, Handler: h.execute},
		{Method: "GET", Path: "/business_rules/logs", Summary: "List execution log rows", Features: []string{featureLogsView}, Handler: h.listLogs},
		{Method: "GET", Path: "/business_rules/logs/{id}", Summary: "Get an execution log row", Features: []string{featureLogsView}, Handler: h.getLog},
	}
}

type ruleHandlers struct{ svc *rules.Service }

// ruleSetErrorBody is the rule-set error body {error, code, details?}.
func ruleSetErrorBody(status int, err error, message string, details map[string]string) any {
	body := map[string]any{"error": message}
	var ce *rules.CodedError
	switch {
	case errors.As(err, &ce):
		body["code"] = ce.Code
		if ce.Details != nil {
			body["details"] = ce.Details
		}
	case status == http.StatusBadRequest:
		body["code"] = "VALIDATION_ERROR"
		if len(details) > 0 {
			body["details"] = details
		}
	case status == http.StatusUnauthorized:
		body["code"] = "UNAUTHORIZED"
	case status == http.StatusForbidden:
		body["code"] = "FORBIDDEN"
	case status == http.StatusRequestEntityTooLarge:
		body["code"] = "PAYLOAD_TOO_LARGE"
	default:
		body["code"] = "ERROR"
	}
	return body
}

// setList is the rule-set list body.
type setList struct {
	Data       []*rules.RuleSet `json:"data"`
	Pagination struct {
		Total  int `json:"total"`
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	} `json:"pagination"`
}

func (h ruleHandlers) listSets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	lo, err := parseLimitOffset(q, 50, 100)
	if err != nil {
		return err
	}
	enabled, err := parseBool(q, "enabled")
	if err != nil {
		return err
	}
	items, total, err := h.svc.ListSets(r.Context(), rules.SetFilter{Search: q.Get("search"), Enabled: enabled, Limit: lo.Limit, Offset: lo.Offset})
	if err != nil {
		return err
	}
	out := setList{Data: items}
	if out.Data == nil {
		out.Data = []*rules.RuleSet{}
	}
	out.Pagination.Total, out.Pagination.Limit, out.Pagination.Offset = total, lo.Limit, lo.Offset
	return encode(w, http.StatusOK, out)
}

func (h ruleHandlers) createSet(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[rules.SetInput](r)
	if err != nil {
		return err
	}
	rs, err := h.svc.CreateSet(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusCreated, rs)
}

func (h ruleHandlers) getSet(w http.ResponseWriter, r *http.Request) error {
	rs, err := h.svc.GetSet(r.Context(), r.PathValue("setId"))
	if err != nil {
		return err
	}
	if rs.Members == nil {
		rs.Members = []rules.SetMember{}
	}
	return encode(w, http.StatusOK, struct {
		*rules.RuleSet
		Members []rules.SetMember `json:"members"` // present even when empty
	}{rs, rs.Members})
}

func (h ruleHandlers) updateSet(w http.ResponseWriter, r *http.Request) error {
	p, err := decode[rules.SetPatch](r)
	if err != nil {
		return err
	}
	rs, err := h.svc.UpdateSet(r.Context(), r.PathValue("setId"), p)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, rs)
}

func (h ruleHandlers) deleteSet(w http.ResponseWriter, r *http.Request) error {
	force, err := parseBool(r.URL.Query(), "force")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteSet(r.Context(), r.PathValue("setId"), force != nil && *force); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h ruleHandlers) addMember(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[rules.MemberInput](r)
	if err != nil {
		return err
	}
	m, err := h.svc.AddMember(r.Context(), r.PathValue("setId"), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusCreated, m)
}

func (h ruleHandlers) updateMember(w http.ResponseWriter, r *http.Request) error {
	p, err := decode[rules.MemberPatch](r)
	if err != nil {
		return err
	}
	m, err := h.svc.UpdateMember(r.Context(), r.PathValue("setId"), r.PathValue("ruleId"), p)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, m)
}

func (h ruleHandlers) removeMember(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.RemoveMember(r.Context(), r.PathValue("setId"), r.PathValue("ruleId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// dataPage is the body of the rules and execution log lists: {data,
// pagination: {page, pageSize, total, totalPages}}.
type dataPage[T any] struct {
	Data       []T `json:"data"`
	Pagination struct {
		Page       int `json:"page"`
		PageSize   int `json:"pageSize"`
		Total      int `json:"total"`
		TotalPages int `json:"totalPages"`
	} `json:"pagination"`
}

func newDataPage[T any](items []T, total int, p pageParams) dataPage[T] {
	page := newPage(items, total, p)
	out := dataPage[T]{Data: page.Items}
	out.Pagination.Page, out.Pagination.PageSize, out.Pagination.Total, out.Pagination.TotalPages = page.Page, page.PageSize, page.Total, page.TotalPages
	return out
}

var ruleSortFields = []string{"ruleName", "priority", "createdAt", "updatedAt"}

func (h ruleHandlers) listRules(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := parsePage(q, 20, 100)
	if err != nil {
		return err
	}
	sort, err := parseSort(q, ruleSortFields, "createdAt")
	if err != nil {
		return err
	}
	enabled, err := parseBool(q, "enabled")
	if err != nil {
		return err
	}
	items, total, err := h.svc.ListRules(r.Context(), rules.RuleFilter{
		Search: q.Get("search"), RuleID: q.Get("ruleId"), RuleType: rules.Type(q.Get("ruleType")), EntityType: q.Get("entityType"),
		EventType: q.Get("eventType"), RuleCategory: q.Get("ruleCategory"), Enabled: enabled,
		SortField: sort.Field, SortDesc: sort.Desc, Limit: p.PageSize, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, newDataPage(items, total, p))
}

func (h ruleHandlers) createRule(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[rules.RuleInput](r)
	if err != nil {
		return err
	}
	rule, err := h.svc.CreateRule(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusCreated, rule)
}

func (h ruleHandlers) getRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	rule, err := h.svc.GetRule(r.Context(), id)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, rule)
}

func (h ruleHandlers) updateRule(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[struct {
		ID string `json:"id"`
		rules.RuleInput
	}](r)
	if err != nil {
		return err
	}
	if in.ID == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(in.ID) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	rule, err := h.svc.UpdateRule(r.Context(), in.ID, in.RuleInput)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, rule)
}

func (h ruleHandlers) deleteRule(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	if err := h.svc.DeleteRule(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h ruleHandlers) executeSet(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[rules.Input](r)
	if err != nil {
		return err
	}
	res, err := h.svc.ExecuteSet(r.Context(), r.PathValue("setId"), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, res)
}

func (h ruleHandlers) execute(w http.ResponseWriter, r *http.Request) error {
	in, err := decode[rules.Input](r)
	if err != nil {
		return err
	}
	res, err := h.svc.Execute(r.Context(), in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, res)
}

func (h ruleHandlers) executeRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	in, err := decode[rules.Input](r)
	if err != nil {
		return err
	}
	res, err := h.svc.ExecuteRule(r.Context(), id, in)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, res)
}

func (h ruleHandlers) listLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := parsePage(q, 20, 100)
	if err != nil {
		return err
	}
	f := rules.LogFilter{RuleID: q.Get("ruleId"), EntityType: q.Get("entityType"), EntityID: q.Get("entityId"),
		Result: rules.Status(q.Get("result")), Limit: p.PageSize, Offset: p.Offset()}
	switch f.Result {
	case "", rules.StatusSuccess, rules.StatusFailure, rules.StatusError:
	default:
		return store.Invalid("result", "must be SUCCESS, FAILURE or ERROR")
	}
	if f.From, err = parseInstant(q, "executedAtFrom", false); err != nil {
		return err
	}
	if f.To, err = parseInstant(q, "executedAtTo", true); err != nil {
		return err
	}
	items, total, err := h.svc.ListLogs(r.Context(), f)
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, newDataPage(items, total, p))
}

func (h ruleHandlers) getLog(w http.ResponseWriter, r *http.Request) error {
	l, err := h.svc.GetLog(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return encode(w, http.StatusOK, l)
}

// parseInstant reads an RFC 3339 date-time or a date (the day's start, or
// with endOfDay its last instant) from the query; absent is nil.
func parseInstant(q url.Values, name string, endOfDay bool) (*time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return &t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return nil, store.Invalid(name, "must be an ISO 8601 date (2025-01-31) or date-time")
	}
	if endOfDay {
		t = t.Add(24*time.Hour - time.Microsecond)
	}
	return &t, nil
}
